"""Registry credentials: given as a username and password or a token, read from a `.dockerconfigjson`, or from the
Secret an App's or PackageRepository's `secretRef` names, as vendir (which kapp-controller runs) reads it:

- a Secret holding `.dockerconfigjson` (type kubernetes.io/dockerconfigjson): credentials per registry host;
- otherwise the keys `username`, `password` and `token` (a registry token, sent as `Authorization: Bearer`), for the
  registry named by `hostname` or, without one, for any registry; any other key is refused as vendir refuses it.

Values never appear in messages or in a repr.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kapply.objects import Obj
from kapply.oci.errors import OciError, shown
from kapply.oci.reference import DOCKER_HUB

DOCKER_CONFIG_KEY = ".dockerconfigjson"
SECRET_KEYS = frozenset({"hostname", "username", "password", "token"})
_DOCKER_HUB_ALIASES = frozenset({"index.docker.io", "registry-1.docker.io", DOCKER_HUB})


@dataclass(frozen=True, slots=True)
class Credentials:
    """Basic credentials, or a registry token (then username and password are unused)."""

    username: str = ""
    password: str = field(default="", repr=False)
    token: str = field(default="", repr=False)


@dataclass(frozen=True, slots=True)
class RegistryAuth:
    """Credentials by registry host (host[:port], docker.io for Docker Hub), and those for any other registry."""

    hosts: Mapping[str, Credentials] = field(default_factory=dict)
    fallback: Credentials | None = None

    def for_registry(self, registry: str) -> Credentials | None:
        return self.hosts.get(registry_key(registry), self.fallback)


ANONYMOUS = RegistryAuth()


def registry_key(server: str) -> str:
    """A docker config's server key as a registry host: `https://index.docker.io/v1/` is docker.io."""
    host = server.split("://", 1)[-1].split("/", 1)[0]
    return DOCKER_HUB if host in _DOCKER_HUB_ALIASES else host


def from_docker_config(data: str | bytes, source: str) -> RegistryAuth:
    """The credentials of a `.dockerconfigjson` (`{"auths": {server: {auth | username, password | registrytoken}}}`).
    `source` names where it came from in messages."""
    try:
        config = json.loads(data)
    except (ValueError, UnicodeDecodeError):
        raise OciError(f"Reading registry credentials from {source}: {DOCKER_CONFIG_KEY} is not JSON") from None
    auths = config.get("auths") if isinstance(config, dict) else None
    if not isinstance(auths, dict):
        raise OciError(f"Reading registry credentials from {source}: expected an object `auths`")
    return RegistryAuth({registry_key(server): _entry(server, entry, source) for server, entry in auths.items()})


def _entry(server: str, entry: Any, source: str) -> Credentials:
    def bad(why: str) -> OciError:
        return OciError(f"Reading registry credentials from {source} for {shown(server)}: {why}")

    if not isinstance(entry, dict) or not all(isinstance(v, str) for v in entry.values()):
        raise bad("expected an object of strings")
    if entry.get("identitytoken"):
        raise bad("identity tokens (OAuth2 refresh tokens) are not supported; give a username and password")
    if entry.get("registrytoken"):
        return Credentials(token=entry["registrytoken"])
    if entry.get("auth"):
        try:
            decoded = base64.b64decode(entry["auth"], validate=True).decode()
        except (binascii.Error, UnicodeDecodeError):
            raise bad("`auth` is not base64 of username:password") from None
        username, colon, password = decoded.partition(":")
        if not colon:
            raise bad("`auth` is not base64 of username:password")
        return Credentials(username, password)
    return Credentials(entry.get("username", ""), entry.get("password", ""))


def from_secret(secret: Obj) -> RegistryAuth:
    """The credentials in a Secret as the API returns it (values in `data`, base64)."""
    name = (secret.get("metadata") or {}).get("name", "")
    source = f"secret '{name}'"
    data = secret.get("data") or {}
    values: dict[str, str] = {}
    for key, value in data.items():
        try:
            values[key] = base64.b64decode(value, validate=True).decode()
        except (binascii.Error, UnicodeDecodeError, TypeError):
            raise OciError(f"Reading registry credentials from {source}: {shown(key)} is not base64 text") from None
    if DOCKER_CONFIG_KEY in values:
        return from_docker_config(values[DOCKER_CONFIG_KEY], source)
    for key in values:
        if key not in SECRET_KEYS:
            raise OciError(f"Unknown secret field {shown(key)} in {source}")
    credentials = Credentials(values.get("username", ""), values.get("password", ""), values.get("token", ""))
    if values.get("hostname"):
        return RegistryAuth({registry_key(values["hostname"]): credentials})
    return RegistryAuth(fallback=credentials)
