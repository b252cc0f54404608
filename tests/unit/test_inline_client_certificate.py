"""A client certificate and key given inline in a kubeconfig (`client-certificate-data`, `client-key-data`, as kind's
and hack/cluster.py's kubeconfigs give them) reach `ssl` through files in memory where Linux has them (never written
to a disk, and tempfile not imported: ~4 ms of a command's start, issue 33), else through a private temporary file
removed at once; either way the server sees the certificate's user."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import tempfile
from pathlib import Path
from typing import Any

import pytest

from kapply.errors import KapplyError
from kapply.resources.auth import ssl_context
from kapply.resources.cluster import Cluster
from kapply.resources.kubeconfig import KubeconfigFlags, load
from tests.unit.test_tls_resumption import kubeconfig, serving


def user_seen(pki: Path, tmp_path: Path) -> list[tuple[bool, str | None]]:
    seen: list[tuple[bool, str | None]] = []

    async def main() -> None:
        async with serving(pki, seen) as port:
            path = kubeconfig(tmp_path / "config", port, pki)
            async with Cluster(load(KubeconfigFlags(path=str(path)))) as cluster:
                await cluster.request("GET", "/x")

    asyncio.run(main())
    return seen


@pytest.mark.skipif(not hasattr(os, "memfd_create"), reason="files in memory are Linux's")
def test_inline_data_goes_through_memory_and_the_server_sees_its_user(
    pki: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_disk(*args: object, **kwargs: object) -> None:
        raise AssertionError("a temporary directory was made")

    monkeypatch.setattr(tempfile, "TemporaryDirectory", no_disk)
    assert user_seen(pki, tmp_path) == [(False, "kapply-admin")]


def test_without_files_in_memory_a_private_file_is_used_and_removed(
    pki: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    made: list[str] = []
    directory = tempfile.TemporaryDirectory

    def recorded(*args: Any, **kwargs: Any) -> tempfile.TemporaryDirectory[str]:
        made.append(kwargs.get("prefix", ""))
        return directory(*args, **kwargs, dir=scratch)

    monkeypatch.setattr(tempfile, "TemporaryDirectory", recorded)
    monkeypatch.delattr(os, "memfd_create", raising=False)
    assert user_seen(pki, tmp_path) == [(False, "kapply-admin")]
    assert made == ["kapply-tls-", "kapply-tls-"]  # the certificate's and the key's
    assert list(scratch.iterdir()) == []


@pytest.mark.parametrize("memory", [True, False])
def test_data_ssl_refuses_is_an_error_naming_the_context(
    pki: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, memory: bool
) -> None:
    if not memory:
        monkeypatch.delattr(os, "memfd_create", raising=False)
    path = kubeconfig(tmp_path / "config", 1, pki)
    doc = json.loads(path.read_text())
    doc["users"][0]["user"]["client-key-data"] = base64.b64encode(b"not a key").decode()
    path.write_text(json.dumps(doc))
    with pytest.raises(KapplyError, match="context 'x': the client certificate cannot be used"):
        ssl_context(load(KubeconfigFlags(path=str(path))))
