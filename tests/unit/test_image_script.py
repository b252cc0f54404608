"""The pure parts of hack/image.py, which builds the controller image (the build itself, which needs root, the Debian
mirror and minutes, is tests/e2e/test_controller_image.py's): the layers' tarballs, the lock file, the cache key."""

from __future__ import annotations

import importlib.util
import os
import re
import stat
import subprocess
import sys
import tarfile
import tomllib
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "hack" / "image.py"


@pytest.fixture(scope="module")
def image() -> ModuleType:
    spec = importlib.util.spec_from_file_location("kapply_image", SCRIPT)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def tree(root: Path) -> Path:
    """A small root file system with what a Debian one has: directories, files, relative and absolute symlinks, a
    hard link, a setuid program, /dev nodes (a FIFO stands in for a device), the venv and a tool."""
    for directory in ("etc/alternatives", "usr/bin", "usr/local/bin", "opt/kapply/bin", "dev", "tmp"):
        (root / directory).mkdir(parents=True, exist_ok=True)
    (root / "usr/bin/mawk").write_text("awk")
    (root / "usr/bin/mawk").chmod(0o755)
    os.symlink("/usr/bin/mawk", root / "etc/alternatives/awk")
    os.symlink("/etc/alternatives/awk", root / "usr/bin/awk")
    os.symlink("usr/bin", root / "bin")
    (root / "usr/bin/perl").write_text("perl")
    os.link(root / "usr/bin/perl", root / "usr/bin/perl5.36.0")
    (root / "usr/bin/su").write_text("su")
    (root / "usr/bin/su").chmod(0o4755)
    (root / "tmp").chmod(0o1777)
    os.mkfifo(root / "dev/null")
    os.symlink("/proc/self/fd", root / "dev/fd")
    (root / "opt/kapply/bin/kapply").write_text("#!/opt/kapply/bin/python")
    os.symlink("/usr/bin/python3", root / "opt/kapply/bin/python3")
    (root / "usr/local/bin/helm").write_bytes(b"\x7fELF")
    return root


def members(path: Path) -> list[tarfile.TarInfo]:
    with tarfile.open(path) as tar:
        return tar.getmembers()


def whole_layers(image: ModuleType, tmp_path: Path, prefix: str = "") -> dict[str, Path]:
    return {name: tmp_path / f"{prefix}{name}.tar.gz" for name in image.LAYERS}


def by_path(relative: str) -> str:
    """The split a whole build makes: the tools, what installing the wheel added, and Debian's stage."""
    if relative.startswith("usr/local/bin/"):
        return "tools"
    return "kapply" if relative.startswith("opt/kapply/bin/kapply") else "debian"


def test_layers_are_deterministic_sorted_and_split_as_asked(image: ModuleType, tmp_path: Path) -> None:
    root = tree(tmp_path / "root")
    first = whole_layers(image, tmp_path, "a-")
    image.write_layers(root, first, tmp_path / "a.tar", by_path)
    os.utime(root / "usr/bin/mawk", (1, 1))  # times on disk do not matter
    second = whole_layers(image, tmp_path, "b-")
    image.write_layers(root, second, tmp_path / "b.tar", by_path)
    for name in image.LAYERS:
        assert first[name].read_bytes() == second[name].read_bytes(), name
    assert (tmp_path / "a.tar").read_bytes() == (tmp_path / "b.tar").read_bytes()

    names = {layer: [m.name for m in members(first[layer])] for layer in image.LAYERS}
    assert names["kapply"] == ["opt/kapply/bin/kapply"]
    assert names["tools"] == ["usr/local/bin/helm"]
    assert "opt/kapply/bin/python3" in names["debian"] and "usr/local/bin" in names["debian"]
    whole = [m.name for m in members(tmp_path / "a.tar")]
    assert whole == sorted(whole, key=lambda n: n.split("/"))  # a directory, then what it holds, names sorted
    assert set(whole) == {n for layer in names.values() for n in layer}

    # a layer alone (a cached stage's), without the whole tarball, is the same bytes
    image.write_layers(root, {"tools": tmp_path / "tools-alone.tar.gz"}, None, by_path)
    assert (tmp_path / "tools-alone.tar.gz").read_bytes() == first["tools"].read_bytes()


def test_the_kapply_layer_holds_what_the_wheel_added_and_the_directories_above(
    image: ModuleType, tmp_path: Path
) -> None:
    base = tree(tmp_path / "base")
    root = tmp_path / "root"
    subprocess.run(["cp", "-a", base, root], check=True)  # as the build copies: a FIFO, links and modes kept
    site = root / "opt/kapply/lib/python3.11/site-packages/kapply"
    site.mkdir(parents=True)
    (site / "__init__.py").write_text("")
    (root / "opt/kapply/bin/kapply-new").write_text("#!/opt/kapply/bin/python")
    (root / "usr/local/bin/ytt").write_bytes(b"\x7fELF")  # a tool: its own layer
    layer_of = image.kapply_layer_of(base, root, {"ytt"})
    layers = whole_layers(image, tmp_path)
    image.write_layers(root, {"kapply": layers["kapply"]}, tmp_path / "rootfs.tar", layer_of)
    assert [m.name for m in members(layers["kapply"])] == [
        "opt",
        "opt/kapply",
        "opt/kapply/bin",
        "opt/kapply/bin/kapply-new",
        "opt/kapply/lib",
        "opt/kapply/lib/python3.11",
        "opt/kapply/lib/python3.11/site-packages",
        "opt/kapply/lib/python3.11/site-packages/kapply",
        "opt/kapply/lib/python3.11/site-packages/kapply/__init__.py",
    ]
    whole = {m.name for m in members(tmp_path / "rootfs.tar")}
    assert {"usr/local/bin/ytt", "usr/bin/mawk", "opt/kapply/bin/kapply-new"} <= whole


@pytest.mark.parametrize("change", ["added elsewhere", "removed", "changed", "chmod"])
def test_a_wheel_install_that_touches_the_debian_stage_is_refused(
    image: ModuleType, tmp_path: Path, change: str
) -> None:
    base = tree(tmp_path / "base")
    root = tmp_path / "root"
    subprocess.run(["cp", "-a", base, root], check=True)  # as the build copies: a FIFO, links and modes kept
    if change == "added elsewhere":
        (root / "etc/kapply").write_text("")
    elif change == "removed":
        (root / "usr/bin/su").unlink()
    elif change == "changed":
        (root / "opt/kapply/bin/kapply").write_text("#!/bin/sh -- longer")
    else:
        (root / "usr/bin/mawk").chmod(0o700)
    with pytest.raises(SystemExit, match="installing the wheel changed what the Debian stage holds"):
        image.kapply_layer_of(base, root, set())


def test_the_tools_stage_holds_each_binary_executable(image: ModuleType, tmp_path: Path) -> None:
    sources = tmp_path / "built"
    sources.mkdir()
    for name in ("helm", "cue"):
        (sources / name).write_bytes(b"\x7fELF " + name.encode())
        (sources / name).chmod(0o700)
    stage = tmp_path / "stage"
    stage.mkdir()
    image.build_tools({name: sources / name for name in ("helm", "cue")}, stage)
    found = {m.name: m for m in members(stage / "tools.tar.gz")}
    assert list(found) == ["usr/local/bin/cue", "usr/local/bin/helm"]
    assert {stat.S_IMODE(m.mode) for m in found.values()} == {0o755}
    assert (stage / "root/usr/local/bin/helm").read_bytes() == b"\x7fELF helm"


def test_entries_are_normalized(image: ModuleType, tmp_path: Path) -> None:
    root = tree(tmp_path / "root")
    layers = {name: tmp_path / f"{name}.tar.gz" for name in image.LAYERS}
    image.write_layers(root, layers, tmp_path / "rootfs.tar", by_path)
    entries = {m.name: m for m in members(tmp_path / "rootfs.tar")}
    assert {(m.mtime, m.uname, m.gname) for m in entries.values()} == {(image.SOURCE_DATE_EPOCH, "", "")}
    assert {(m.uid, m.gid) for m in entries.values()} == {(os.getuid(), os.getgid())}  # numeric, as on disk
    # absolute symlinks become relative ones that mean the same under the image's root
    assert entries["etc/alternatives/awk"].linkname == "../../usr/bin/mawk"
    assert entries["usr/bin/awk"].linkname == "../../etc/alternatives/awk"
    assert entries["opt/kapply/bin/python3"].linkname == "../../../usr/bin/python3"
    assert entries["bin"].linkname == "usr/bin"
    # /dev's nodes are the runtime's; setuid bits go; /tmp keeps its sticky bit
    assert entries["dev"].isdir() and not [n for n in entries if n.startswith("dev/")]
    assert stat.S_IMODE(entries["usr/bin/su"].mode) == 0o755
    assert stat.S_IMODE(entries["tmp"].mode) == 0o1777
    # a hard link stays one within its layer
    assert entries["usr/bin/perl5.36.0"].islnk() and entries["usr/bin/perl5.36.0"].linkname == "usr/bin/perl"
    # gzip without a name or a timestamp
    header = layers["debian"].read_bytes()[:10]
    assert header[:3] == b"\x1f\x8b\x08" and header[3] == 0 and header[4:8] == b"\0\0\0\0"


def test_a_device_outside_dev_is_refused(image: ModuleType, tmp_path: Path) -> None:
    root = tree(tmp_path / "root")
    os.mkfifo(root / "tmp" / "pipe")
    with pytest.raises(SystemExit, match="tmp/pipe: a device, FIFO or socket outside /dev"):
        image.write_layers(root, whole_layers(image, tmp_path), tmp_path / "rootfs.tar", by_path)


def test_the_lock_pins_every_dependency_by_version_and_hash(image: ModuleType) -> None:
    entries = image.read_lock()
    pinned = {}
    for entry in entries:
        found = re.fullmatch(r"([A-Za-z0-9_.-]+)==(\S+) --hash=sha256:[0-9a-f]{64}", entry)
        assert found, entry
        pinned[found.group(1).lower().replace("_", "-")] = found.group(2)
    assert "pip" in pinned  # the installer
    dependencies = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    names = {re.split(r"[<>=!~\[; ]", d, maxsplit=1)[0].lower().replace("_", "-") for d in dependencies}
    missing = names - set(pinned)
    assert not missing, f"{sorted(missing)} not in {image.LOCK.name}: run `python3 hack/image.py lock`"


def test_the_cache_key_follows_the_inputs(image: ModuleType) -> None:
    inputs = {"recipe": "a", "lock": "b", "wheel": {"name": "w", "sha256": "c"}, "tools": {"helm": "d"}}
    assert image.cache_key(inputs) == image.cache_key(dict(reversed(list(inputs.items()))))
    assert image.cache_key(inputs) != image.cache_key({**inputs, "tools": {"helm": "d", "ytt": "e"}})
    assert re.fullmatch(r"[0-9a-f]{16}", image.cache_key(inputs))


def test_mounts_under_reads_mountinfo(image: ModuleType, tmp_path: Path) -> None:
    assert image.mounts_under(tmp_path) == []
    assert "/" in image.mounts_under(Path("/"))


def test_the_help_names_the_commands(image: ModuleType, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        image.main(["--help"])
    out = capsys.readouterr().out
    assert all(command in out for command in ("build", "push", "lock"))
