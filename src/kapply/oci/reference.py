"""Image references, parsed as docker's reference grammar (github.com/distribution/reference) reads them:
`[host[:port]/]path[:tag][@digest]`, with docker's defaults (`nginx` is `docker.io/library/nginx:latest`).

Rules kept from the grammar: a first path component is a registry host only when it holds a `.` or a `:`, is
`localhost`, or has an upper-case letter (which a repository may not); `index.docker.io` is `docker.io`; a docker.io
repository of one component is under `library/`; the repository is lower case, at most 255 characters with its host;
a tag is at most 128 of `[A-Za-z0-9_.-]`, not starting with `.` or `-`. kapply pulls by sha256 only, so a digest other
than `sha256:` and 64 lower-case hex digits is refused here rather than when it cannot be checked.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from kapply.oci.errors import OciError, shown

DOCKER_HUB = "docker.io"
DOCKER_HUB_API = "registry-1.docker.io"  # where docker.io's registry API answers
DEFAULT_TAG = "latest"
NAME_MAX = 255

_PATH_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_DOMAIN_COMPONENT = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_HOST = rf"(?:{_DOMAIN_COMPONENT}(?:\.{_DOMAIN_COMPONENT})*|\[[a-fA-F0-9:]+\])"
_DOMAIN = re.compile(rf"{_HOST}(?::[0-9]+)?")
_PATH = re.compile(rf"{_PATH_COMPONENT}(?:/{_PATH_COMPONENT})*")
_TAG = re.compile(r"[\w][\w.-]{0,127}", re.ASCII)
_ANY_DIGEST = re.compile(r"[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}")
SHA256_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")
_IMAGE_ID = re.compile(r"[a-f0-9]{64}")
LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "[::1]"})


@dataclass(frozen=True, slots=True)
class Reference:
    """A parsed image reference. `tag` is None only when a digest pins the image."""

    registry: str  # host[:port] as written, docker.io for Docker Hub
    repository: str  # path within the registry, e.g. library/nginx
    tag: str | None = None
    digest: str | None = None  # sha256:<64 hex>

    @property
    def name(self) -> str:
        """registry/repository: where the image lives, without tag or digest."""
        return f"{self.registry}/{self.repository}"

    @property
    def api_host(self) -> str:
        """The host[:port] that serves the registry API (docker.io's is registry-1.docker.io)."""
        return DOCKER_HUB_API if self.registry == DOCKER_HUB else self.registry

    @property
    def is_loopback(self) -> bool:
        """The registry is on this machine (localhost, 127.0.0.1 or [::1], any port)."""
        return host_of(self.registry) in LOOPBACK_HOSTS

    @property
    def identifier(self) -> str:
        """What the manifest URL names: the digest when there is one, else the tag."""
        return self.digest or self.tag or DEFAULT_TAG

    def pinned(self, digest: str) -> Reference:
        """The same repository at `digest` (tag dropped): what was pulled, whatever tag named it."""
        return replace(self, tag=None, digest=digest)

    def __str__(self) -> str:
        text = self.name
        if self.tag is not None:
            text += f":{self.tag}"
        if self.digest is not None:
            text += f"@{self.digest}"
        return text


def host_of(registry: str) -> str:
    """host[:port] without the port; an IPv6 host keeps its brackets."""
    if registry.startswith("["):
        return registry[: registry.index("]") + 1]
    return registry.split(":", 1)[0]


def parse_reference(text: str) -> Reference:
    """Parse an image reference; OciError naming it when it is not one."""

    def bad(why: str) -> OciError:
        return OciError(f"Invalid image reference {shown(text)}: {why}")

    if not text:
        raise bad("it is empty")
    if _IMAGE_ID.fullmatch(text):
        raise bad("64 hex digits are an image ID, not a repository name")
    rest, at, digest = text.partition("@")
    if at:
        if not _ANY_DIGEST.fullmatch(digest):
            raise bad("the digest is not <algorithm>:<hex>")
        if not SHA256_DIGEST.fullmatch(digest):
            raise bad("only sha256 digests (64 lower-case hex digits) are supported")
    # A tag follows the last ':' unless that ':' is part of the host's port (then a '/' comes after it).
    colon = rest.rfind(":")
    tag: str | None = None
    if colon != -1 and "/" not in rest[colon + 1 :]:
        rest, tag = rest[:colon], rest[colon + 1 :]
        if not _TAG.fullmatch(tag):
            raise bad("the tag must be 1-128 of [A-Za-z0-9_.-], not starting with '.' or '-'")

    first, slash, remainder = rest.partition("/")
    if not slash or (not any(c in first for c in ".:") and first != "localhost" and first.lower() == first):
        registry, path = DOCKER_HUB, rest
    else:
        registry, path = first, remainder
        if not _DOMAIN.fullmatch(registry):
            raise bad("the registry host is not host[:port]")
    if registry == "index.docker.io":
        registry = DOCKER_HUB
    if registry == DOCKER_HUB and "/" not in path:
        path = f"library/{path}"
    if path.lower() != path:
        raise bad("the repository name must be lower case")
    if not _PATH.fullmatch(path):
        raise bad("the repository name must be components of [a-z0-9] joined by '/', with '.', '_', '__' or '-'")
    if len(f"{registry}/{path}") > NAME_MAX:
        raise bad(f"the repository name is longer than {NAME_MAX} characters")
    if tag is None and not at:
        tag = DEFAULT_TAG
    return Reference(registry, path, tag, digest if at else None)
