"""Registry credentials from a `.dockerconfigjson` or from the Secret a `secretRef` names, as vendir reads them for
kapp-controller's `image` and `imgpkgBundle` fetches; values never show in a repr or a message."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from kapply.oci import Credentials, OciError, RegistryAuth, from_docker_config, from_secret


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def secret(data: dict[str, str], kind: str = "Opaque") -> dict[str, Any]:
    return {"kind": "Secret", "type": kind, "metadata": {"name": "creds"}, "data": {k: b64(v) for k, v in data.items()}}


def test_a_docker_config_gives_credentials_per_registry_host():
    config = {
        "auths": {
            "https://index.docker.io/v1/": {"auth": b64("hub-user:hub:pass")},  # a password may hold ':'
            "ghcr.io": {"username": "gh", "password": "gh-pass"},
            "http://127.0.0.1:5000": {"registrytoken": "tok"},
        }
    }
    auth = from_docker_config(json.dumps(config), "test")
    assert auth.for_registry("docker.io") == Credentials("hub-user", "hub:pass")
    assert auth.for_registry("ghcr.io") == Credentials("gh", "gh-pass")
    assert auth.for_registry("127.0.0.1:5000") == Credentials(token="tok")
    assert auth.for_registry("quay.io") is None
    assert auth.for_registry("127.0.0.1:5001") is None


def test_a_dockerconfigjson_secret_is_read_as_a_docker_config():
    config = json.dumps({"auths": {"registry.example:8443": {"auth": b64("u:p")}}})
    auth = from_secret(secret({".dockerconfigjson": config}, "kubernetes.io/dockerconfigjson"))
    assert auth == RegistryAuth({"registry.example:8443": Credentials("u", "p")})


def test_username_password_and_token_keys_are_for_any_registry_or_the_one_hostname_names():
    anywhere = from_secret(secret({"username": "u", "password": "p"}))
    assert anywhere.for_registry("a.example") == anywhere.for_registry("b.example") == Credentials("u", "p")
    assert from_secret(secret({"token": "t"})).for_registry("x") == Credentials(token="t")

    one = from_secret(secret({"hostname": "https://index.docker.io/v1/", "username": "u", "password": "p"}))
    assert one.for_registry("docker.io") == Credentials("u", "p")
    assert one.for_registry("ghcr.io") is None


@pytest.mark.parametrize(
    ("the_secret", "message"),
    [
        (secret({"username": "u", "ssh-privatekey": "k"}), "Unknown secret field 'ssh-privatekey' in secret 'creds'"),
        (
            {"metadata": {"name": "creds"}, "data": {"username": "%%%"}},
            "secret 'creds': 'username' is not base64 text",
        ),
        (secret({".dockerconfigjson": "{not json"}), "secret 'creds': .dockerconfigjson is not JSON"),
        (secret({".dockerconfigjson": "[]"}), "secret 'creds': expected an object `auths`"),
        (
            secret({".dockerconfigjson": json.dumps({"auths": {"r.io": {"auth": "bm9jb2xvbg=="}}})}),
            "secret 'creds' for 'r.io': `auth` is not base64 of username:password",
        ),
        (
            secret({".dockerconfigjson": json.dumps({"auths": {"r.io": {"identitytoken": "s3cr3t-refresh-value"}}})}),
            "for 'r.io': identity tokens (OAuth2 refresh tokens) are not supported",
        ),
        (
            secret({".dockerconfigjson": json.dumps({"auths": {"r.io": {"username": 1}}})}),
            "for 'r.io': expected an object of strings",
        ),
    ],
)
def test_a_secret_that_is_not_registry_credentials_is_refused_without_showing_values(the_secret, message):
    with pytest.raises(OciError) as error:
        from_secret(the_secret)
    assert message in str(error.value)
    assert "s3cr3t" not in str(error.value) and "nocolon" not in str(error.value)


def test_credentials_never_show_their_secrets_in_a_repr():
    shown = repr(RegistryAuth({"r.io": Credentials("user", "hunter2", "tok3n")}, Credentials("u", "pw-fallback")))
    assert "user" in shown
    assert not any(value in shown for value in ("hunter2", "tok3n", "pw-fallback"))
