"""A manifest directory with an entry that cannot be read stops the deploy with one error naming the entry, before
anything is applied or deleted. Skipping it instead would delete everything it held from the cluster, as no longer
part of the app.

Tests run as root, for whom `chmod 000` changes nothing, so each way of breaking a file is one that fails for root
too: a dangling symlink, a symlink loop, a FIFO (kapp would block on it forever), bytes that are not UTF-8, and, for
`permission denied`, a `chmod 000` file read by kapply run in a user namespace (`unshare -U`), where root keeps no
override over the host's files.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from lightkube import Client
from lightkube.resources.core_v1 import ConfigMap

from tests.e2e.harness import WAIT_INTERVAL, KapplyRunner

pytestmark = pytest.mark.e2e

NAMES = ("first", "second", "third")
MANIFEST = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata:\n  k: v\n"


def _dangling_symlink(path: Path) -> None:
    path.unlink()
    path.symlink_to(path.with_name("moved-away.yml"))


def _symlink_loop(path: Path) -> None:
    path.unlink()
    path.symlink_to(path)


def _fifo(path: Path) -> None:
    path.unlink()
    os.mkfifo(path)


def _invalid_utf8(path: Path) -> None:
    path.write_bytes(MANIFEST.format(name="second").encode() + b"  note: caf\xe9\n")  # Latin-1, not UTF-8


def _unreadable(path: Path) -> None:
    path.chmod(0)


# How a file is broken, and what the error says about it.
BREAKS: dict[str, tuple[Callable[[Path], None], str]] = {
    "dangling-symlink": (_dangling_symlink, "Reading file '{path}': it is a symlink to '{path_dir}/moved-away.yml'"),
    "symlink-loop": (_symlink_loop, "Reading file '{path}': too many levels of symbolic links"),
    "fifo": (_fifo, "Reading file '{path}': it is a FIFO, not a regular file"),
    "invalid-utf8": (_invalid_utf8, "Parsing file '{path}': incomplete UTF-8 octet sequence at byte 80"),
    "permission-denied": (_unreadable, "Reading file '{path}': permission denied"),
}


def _user_namespaces() -> bool:
    unshare = shutil.which("unshare")
    return unshare is not None and subprocess.run([unshare, "-U", "true"], capture_output=True).returncode == 0


def _deploy(kapply: KapplyRunner, namespace: str, directory: Path, *, as_non_root: bool = False):
    args = ("deploy", "-a", "unreadable", "-n", namespace, "-f", str(directory), "-y", WAIT_INTERVAL)
    if not as_non_root:
        return kapply(*args)
    env = {**os.environ, "KUBECONFIG": str(kapply.kubeconfig)}
    command = ["unshare", "-U", sys.executable, "-m", "kapply", *args]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)


def _app_configmaps(kube: Client, namespace: str) -> list[str]:
    return sorted(
        cm.metadata.name for cm in kube.list(ConfigMap, namespace=namespace, labels={"kapp.k14s.io/app": None})
    )


@pytest.mark.parametrize("breakage", sorted(BREAKS))
def test_an_unreadable_file_stops_the_redeploy_and_every_resource_stays(breakage, kapply, kube, namespace, tmp_path):
    as_non_root = breakage == "permission-denied" and os.geteuid() == 0
    if as_non_root and not _user_namespaces():
        pytest.skip("running as root and `unshare -U` is not available: chmod 000 would not stop a read")
    app = tmp_path / "app"
    app.mkdir()
    for name in NAMES:
        (app / f"{name}.yml").write_text(MANIFEST.format(name=name))
    first = _deploy(kapply, namespace, app)
    assert first.returncode == 0, first.stdout + first.stderr
    assert _app_configmaps(kube, namespace) == sorted(NAMES)

    broken = app / "second.yml"
    breaks, message = BREAKS[breakage]
    breaks(broken)
    result = _deploy(kapply, namespace, app, as_non_root=as_non_root)

    assert result.returncode == 1, result.stdout + result.stderr
    assert result.stderr.startswith("kapply: Error: "), result.stderr
    assert "Traceback" not in result.stderr
    assert message.format(path=broken, path_dir=app) in result.stderr, result.stderr
    assert "delete" not in result.stdout  # not even planned: nothing was shown, let alone applied
    assert _app_configmaps(kube, namespace) == sorted(NAMES)  # all three still there
