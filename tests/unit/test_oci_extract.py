"""Unpacking layers as untrusted input (kapply.oci.extract): what a layer may hold, what it may not, and that nothing
is ever written outside the directory. Layers are made here with tarfile, which writes names and link targets as
given; tests/e2e/test_oci.py pushes hostile layers through a real registry."""

from __future__ import annotations

import gzip
import io
import os
import stat
import tarfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from kapply.oci import ExtractLimits, OciError
from kapply.oci.extract import Extraction


@dataclass(frozen=True)
class Entry:
    name: str
    content: bytes = b""
    type: bytes = tarfile.REGTYPE
    target: str = ""  # a link's
    mode: int = 0o644


def layer(path: Path, *entries: Entry, compress: bool = False) -> Path:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for entry in entries:
            info = tarfile.TarInfo(entry.name)
            info.type = entry.type
            info.mode = entry.mode
            info.linkname = entry.target
            if entry.type == tarfile.REGTYPE:
                info.size = len(entry.content)
            tar.addfile(info, io.BytesIO(entry.content) if entry.type == tarfile.REGTYPE else None)
    data = buffer.getvalue()
    path.write_bytes(gzip.compress(data) if compress else data)
    return path


@pytest.fixture
def place(tmp_path: Path) -> Path:
    """A canary beside the target directory: `out/../canary`."""
    (tmp_path / "canary").write_text("precious")
    (tmp_path / "out").mkdir()
    (tmp_path / "layers").mkdir()
    return tmp_path


def unpack(place: Path, *layers: list[Entry], limits: ExtractLimits | None = None) -> Path:
    extraction = Extraction(place / "out", limits or ExtractLimits())
    for i, entries in enumerate(layers):
        extraction.layer(layer(place / "layers" / f"{i}.tar", *entries), f"layer {i + 1}")
    extraction.finish("the image")
    return place / "out"


def tree(root: Path) -> dict[str, str]:
    """path -> content, `-> target` for symlinks, `/` for directories."""
    found = {}
    for path in sorted(root.rglob("*")):
        name = str(path.relative_to(root))
        if path.is_symlink():
            found[name] = f"-> {os.readlink(path)}"
        elif path.is_dir():
            found[name] = "/"
        else:
            found[name] = path.read_text()
    return found


def refused(place: Path, *layers: list[Entry]) -> str:
    with pytest.raises(OciError) as error:
        unpack(place, *layers)
    assert (place / "canary").read_text() == "precious"
    assert sorted(p.name for p in place.iterdir()) == ["canary", "layers", "out"]
    return str(error.value)


@pytest.mark.parametrize("compress", [False, True])
def test_files_directories_and_inside_symlinks_are_unpacked_gzipped_or_not(place: Path, compress: bool):
    entries = [
        Entry("./", type=tarfile.DIRTYPE),
        Entry("./config/", type=tarfile.DIRTYPE),
        Entry("./config/app.yml", b"a: 1\n"),
        Entry("deep/er/file", b"x"),  # its directories are made
        Entry("run.sh", b"#!/bin/sh\n", mode=0o4755),  # setuid dropped, execute kept
        Entry("config/link.yml", type=tarfile.SYMTYPE, target="app.yml"),
        Entry("up", type=tarfile.SYMTYPE, target="config/../deep"),
    ]
    out = place / "out"
    extraction = Extraction(out)
    extraction.layer(layer(place / "layers" / "l.tar", *entries, compress=compress), "layer 1")
    extraction.finish("the image")
    assert tree(out) == {
        "config": "/",
        "config/app.yml": "a: 1\n",
        "config/link.yml": "-> app.yml",
        "deep": "/",
        "deep/er": "/",
        "deep/er/file": "x",
        "run.sh": "#!/bin/sh\n",
        "up": "-> config/../deep",
    }
    assert stat.S_IMODE((out / "run.sh").stat().st_mode) == 0o755
    assert stat.S_IMODE((out / "config" / "app.yml").stat().st_mode) == 0o644


def test_later_layers_replace_and_whiteouts_remove_what_earlier_ones_unpacked(place: Path):
    out = unpack(
        place,
        [Entry("a", b"1"), Entry("b", b"1"), Entry("d/x", b"1"), Entry("d/y", b"1"), Entry("e/z", b"1")],
        [
            Entry("a", b"2"),  # replaced
            Entry(".wh.b"),  # removed
            Entry("d/.wh..wh..opq"),  # d emptied of what earlier layers put there
            Entry("d/new", b"2"),
            Entry("e", b"now a file"),  # a directory replaced by a file
            Entry("missing/.wh.thing"),  # nothing to remove, and no directory made for it
        ],
        [Entry("c", b"3"), Entry(".wh.c")],  # a whiteout hides lower layers only, not its own
    )
    assert tree(out) == {"a": "2", "c": "3", "d": "/", "d/new": "2", "e": "now a file"}


def test_a_hard_link_to_an_unpacked_file_becomes_a_copy(place: Path):
    out = unpack(
        place, [Entry("dir/original", b"content")], [Entry("copy", type=tarfile.LNKTYPE, target="dir/original")]
    )
    assert tree(out)["copy"] == "content"
    assert (out / "copy").stat().st_nlink == 1 and (out / "dir/original").stat().st_nlink == 1


@pytest.mark.parametrize(
    ("entries", "why"),
    [
        ([Entry("../canary", b"pwned")], "entry '../canary' leaves the directory (..)"),
        ([Entry("a/../../canary", b"pwned")], "entry 'a/../../canary' leaves the directory (..)"),
        ([Entry("/etc/kapply-test-pwned", b"pwned")], "entry '/etc/kapply-test-pwned' is an absolute path"),
        ([Entry("x", type=tarfile.SYMTYPE, target="/etc")], "entry 'x' is a symlink to an absolute path"),
        ([Entry("x", type=tarfile.SYMTYPE, target="../canary")], "entry 'x' is a symlink that resolves outside"),
        ([Entry("a/x", type=tarfile.SYMTYPE, target="../../canary")], "entry 'a/x' is a symlink that resolves outside"),
        ([Entry("x", type=tarfile.SYMTYPE, target="")], "entry 'x' is a symlink with no target"),
        (
            [Entry("d", type=tarfile.SYMTYPE, target="."), Entry("d/f", b"pwned")],
            "entry 'd/f' goes through the symlink 'd'",
        ),
        ([Entry("f", b"1"), Entry("f/g", b"2")], "entry 'f/g' is under 'f', which is not a directory"),
        (
            [Entry("h", type=tarfile.LNKTYPE, target="/etc/passwd")],
            "entry 'h' is a hard link whose target is an absolute",
        ),
        ([Entry("h", type=tarfile.LNKTYPE, target="../canary")], "entry 'h' is a hard link whose target leaves"),
        (
            [Entry("h", type=tarfile.LNKTYPE, target="nothing")],
            "entry 'h' is a hard link to something that is not a file",
        ),
        (
            [Entry("d/", type=tarfile.DIRTYPE), Entry("h", type=tarfile.LNKTYPE, target="d")],
            "entry 'h' is a hard link to something that is not a file",
        ),
        (
            [
                Entry("l", type=tarfile.SYMTYPE, target="f"),
                Entry("f", b"1"),
                Entry("h", type=tarfile.LNKTYPE, target="l"),
            ],
            "entry 'h' is a hard link to something that is not a file",
        ),
        ([Entry("null", type=tarfile.CHRTYPE)], "entry 'null' is a device, FIFO or other special file"),
        ([Entry("disk", type=tarfile.BLKTYPE)], "entry 'disk' is a device, FIFO or other special file"),
        ([Entry("pipe", type=tarfile.FIFOTYPE)], "entry 'pipe' is a device, FIFO or other special file"),
        ([Entry(".wh..")], "entry '.wh..' is a whiteout of nothing"),
        ([Entry("file\x1b[2J", b"1"), Entry("../x")], "entry '../x' leaves"),
    ],
)
def test_a_hostile_entry_is_refused_naming_it_and_nothing_outside_is_touched(place: Path, entries, why):
    message = refused(place, entries)
    assert message.startswith("layer 1: ")
    assert why in message
    assert message.endswith("; refusing the layer")


def test_a_symlink_that_a_later_one_turns_outside_is_refused_once_all_layers_are_in(place: Path):
    # each symlink resolves inside when it is made; together, `sub/e` ends up at root/.. = outside
    message = refused(
        place,
        [Entry("sub/", type=tarfile.DIRTYPE), Entry("sub/e", type=tarfile.SYMTYPE, target="r/..")],
        [Entry("sub/r", type=tarfile.SYMTYPE, target="..")],
    )
    assert message == "the image: symlink 'sub/e' resolves outside the directory; refusing it"


def test_names_are_quoted_so_a_terminal_escape_is_never_printed(place: Path):
    message = refused(place, [Entry("\x1b[2J../../x\n", b"1")])
    assert "\x1b" not in message and "\n" not in message
    assert "'\\x1b[2J../../x\\n'" in message


@pytest.mark.parametrize(
    ("limits", "layers", "why"),
    [
        (ExtractLimits(max_bytes=10), [[Entry("a", b"123456")], [Entry("b", b"123456")]], "past 10 bytes"),
        (
            ExtractLimits(max_bytes=10),
            [[Entry("a", b"123456"), Entry("h", type=tarfile.LNKTYPE, target="a")]],
            "past 10",
        ),
        (ExtractLimits(max_files=2), [[Entry("a", b"1"), Entry("b", b"1")], [Entry("c", b"1")]], "more than 2 entries"),
        (ExtractLimits(max_files=3), [[Entry("a/b/c", b"1")]], None),  # a, a/b and a/b/c
        (ExtractLimits(max_files=3), [[Entry("a/b/c/d", b"1")]], "more than 3 entries"),  # implied directories count
        (ExtractLimits(max_depth=2), [[Entry("a/b/c", b"1")]], None),
        (ExtractLimits(max_depth=2), [[Entry("a/b/c/d", b"1")]], "nested more than 2 directories deep"),
        (ExtractLimits(max_depth=2), [[Entry("a/b/c/", type=tarfile.DIRTYPE)]], "nested more than 2 directories deep"),
    ],
)
def test_all_layers_together_are_bounded_in_bytes_entries_and_depth(place: Path, limits, layers, why):
    if why is None:
        unpack(place, *layers, limits=limits)
        return
    with pytest.raises(OciError, match=why):
        unpack(place, *layers, limits=limits)


def test_zstd_and_broken_archives_are_refused(place: Path):
    extraction = Extraction(place / "out")
    zstd = place / "layers" / "zstd"
    zstd.write_bytes(b"\x28\xb5\x2f\xfd" + b"\0" * 100)
    with pytest.raises(OciError, match=r"^layer 1: zstd-compressed layers are not supported$"):
        extraction.layer(zstd, "layer 1")
    garbage = place / "layers" / "garbage"
    garbage.write_bytes(b"\x1f\x8b" + os.urandom(600))
    with pytest.raises(OciError, match=r"^layer 2: not a valid gzip stream \(BadGzipFile: "):
        extraction.layer(garbage, "layer 2")
    truncated = place / "layers" / "truncated"
    truncated.write_bytes(layer(place / "layers" / "whole", Entry("a", b"x" * 5000)).read_bytes()[:1000])
    with pytest.raises(OciError, match=r"^layer 3: not a valid tar archive \("):
        extraction.layer(truncated, "layer 3")
