"""Image references as docker's reference grammar (github.com/distribution/reference) parses them, with Docker Hub's
defaults, and the sha256-only rule kapply adds."""

from __future__ import annotations

import pytest

from kapply.oci import OciError, parse_reference
from kapply.oci.reference import Reference

DIGEST = "sha256:" + "0123456789abcdef" * 4


@pytest.mark.parametrize(
    ("text", "registry", "repository", "tag", "digest"),
    [
        # Docker Hub: the default registry, library/ for one component, latest by default
        ("nginx", "docker.io", "library/nginx", "latest", None),
        ("ubuntu:22.04", "docker.io", "library/ubuntu", "22.04", None),
        ("bitnami/redis:7.2", "docker.io", "bitnami/redis", "7.2", None),
        ("docker.io/nginx", "docker.io", "library/nginx", "latest", None),
        ("index.docker.io/library/nginx:1", "docker.io", "library/nginx", "1", None),
        # a first component is a host when it has '.' or ':', is localhost, or has an upper-case letter
        ("ghcr.io/carvel-dev/kapp-controller:v0.50.0", "ghcr.io", "carvel-dev/kapp-controller", "v0.50.0", None),
        ("localhost/app", "localhost", "app", "latest", None),
        ("localhost:5000/team/app:v1", "localhost:5000", "team/app", "v1", None),
        ("127.0.0.1:5000/a/b/c", "127.0.0.1:5000", "a/b/c", "latest", None),
        ("[::1]:5000/app:v1", "[::1]:5000", "app", "v1", None),
        ("Registry/app", "Registry", "app", "latest", None),
        ("team/app", "docker.io", "team/app", "latest", None),
        # a port-like suffix without a host before a '/' is a tag
        ("app:5000", "docker.io", "library/app", "5000", None),
        # digests, with or without a tag (the tag is kept, the digest decides)
        (f"gcr.io/p/app@{DIGEST}", "gcr.io", "p/app", None, DIGEST),
        (f"gcr.io/p/app:v1@{DIGEST}", "gcr.io", "p/app", "v1", DIGEST),
        # separators within components
        ("a.b/x_y/z__w/p-q--r/s.t:T_1.2-3", "a.b", "x_y/z__w/p-q--r/s.t", "T_1.2-3", None),
    ],
)
def test_references_parse_as_docker_parses_them(text, registry, repository, tag, digest):
    assert parse_reference(text) == Reference(registry, repository, tag, digest)


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("", "it is empty"),
        (":v1", "the repository name must be components"),
        ("app:", "the tag must be 1-128"),
        ("app:-v1", "the tag must be 1-128"),
        ("app:" + "v" * 129, "the tag must be 1-128"),
        ("team/App", "must be lower case"),
        ("a//b", "must be components"),
        ("a/b/", "must be components"),
        ("-a/b", "must be components"),
        ("a/_b", "must be components"),
        ("host:port/app", "the registry host is not host[:port]"),
        ("ho_st.io/app", "the registry host is not host[:port]"),
        ("app@sha256:abc", "the digest is not <algorithm>:<hex>"),
        ("app@sha256", "the digest is not <algorithm>:<hex>"),
        ("app@sha512:" + "ab" * 64, "only sha256 digests"),
        ("app@sha256:" + "AB" * 32, "only sha256 digests"),
        ("0123456789abcdef" * 4, "64 hex digits are an image ID"),
        ("r.io/" + "a" * 251, "longer than 255 characters"),
    ],
)
def test_what_is_not_a_reference_is_refused_naming_it(text, why):
    with pytest.raises(OciError) as error:
        parse_reference(text)
    assert str(error.value).startswith(f"Invalid image reference {text[:50]!r}"[:-1])
    assert why in str(error.value)


def test_a_long_or_hostile_reference_is_quoted_and_shortened_in_the_message():
    with pytest.raises(OciError) as error:
        parse_reference("\x1b[31mred/" + "x" * 300)
    message = str(error.value)
    assert message.startswith("Invalid image reference '\\x1b[31mred/xxx")
    assert "\x1b" not in message and len(message) < 250


def test_a_reference_prints_as_written_normalized_and_names_its_api_host():
    ref = parse_reference("nginx")
    assert str(ref) == "docker.io/library/nginx:latest"
    assert (ref.name, ref.api_host, ref.identifier) == ("docker.io/library/nginx", "registry-1.docker.io", "latest")
    assert parse_reference(str(ref)) == ref

    local = parse_reference(f"127.0.0.1:5000/app:v1@{DIGEST}")
    assert str(local) == f"127.0.0.1:5000/app:v1@{DIGEST}"
    assert (local.api_host, local.identifier) == ("127.0.0.1:5000", DIGEST)
    assert str(local.pinned(DIGEST)) == f"127.0.0.1:5000/app@{DIGEST}"


@pytest.mark.parametrize(
    ("text", "loopback"),
    [
        ("localhost/a", True),
        ("localhost:5000/a", True),
        ("127.0.0.1:5000/a", True),
        ("[::1]:5000/a", True),
        ("127.0.0.2:5000/a", False),
        ("localhost.example/a", False),
        ("a", False),
    ],
)
def test_only_registries_on_this_machine_are_loopback(text, loopback):
    assert parse_reference(text).is_loopback is loopback
