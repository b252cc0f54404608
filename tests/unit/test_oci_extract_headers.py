"""Layers whose headers are the attack (kapply.oci.extract): tarfile reads a metadata header's data (PAX `x`/`g`, GNU
long names `L`/`K`, Solaris `X`) whole, into memory, before the member it describes, and believes any size a header
declares; Extraction bounds each header type before tarfile reads it and counts every byte a header declares against
the limits. And archives that are broken, in the tar or in its compression: each one an error naming what is wrong
(tarfile alone takes a broken header for the end of the archive, and never checks a gzip stream's CRC).

Each bomb here declares far more than it holds: a refusal that came after tarfile had read the declared data would
be a read error instead of the message naming the limit."""

from __future__ import annotations

import bz2
import gzip
import lzma
import tarfile
from collections.abc import Callable
from pathlib import Path

import pytest

from kapply.oci import ExtractLimits, OciError
from kapply.oci.extract import MAX_HEADER_BYTES, MAX_HEADER_CHAIN, METADATA, Extraction, is_tar

GIB = 1 << 30


def header(name: str, type_: bytes, size: int) -> bytes:
    """One raw tar header block declaring `size` bytes of data."""
    info = tarfile.TarInfo(name)
    info.type = type_
    info.size = size
    return info.tobuf(format=tarfile.GNU_FORMAT)


def padded(data: bytes) -> bytes:
    return data + b"\0" * (-len(data) % tarfile.BLOCKSIZE)


def pax(records: dict[str, str], type_: bytes = tarfile.XHDTYPE) -> bytes:
    """A PAX header holding `records`, with its data."""
    data = b""
    for key, value in records.items():
        record = f" {key}={value}\n".encode()
        length = len(record) + len(str(len(record)))
        length = len(record) + len(str(length))
        data += str(length).encode() + record
    return header("././@PaxHeader", type_, len(data)) + padded(data)


def member(name: str, content: bytes = b"x") -> bytes:
    return header(name, tarfile.REGTYPE, len(content)) + padded(content)


END = b"\0" * 1024


def unpack(tmp_path: Path, data: bytes, limits: ExtractLimits | None = None) -> Path:
    (tmp_path / "out").mkdir(exist_ok=True)
    (tmp_path / "layer").write_bytes(data)
    extraction = Extraction(tmp_path / "out", limits or ExtractLimits())
    extraction.layer(tmp_path / "layer", "layer 1")
    extraction.finish("the image")
    return tmp_path / "out"


def refused(tmp_path: Path, data: bytes, limits: ExtractLimits | None = None) -> str:
    with pytest.raises(OciError) as error:
        unpack(tmp_path, data, limits)
    return str(error.value)


# --- metadata headers -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("type_", METADATA, ids=[t.decode() for t in METADATA])
@pytest.mark.parametrize("compress", [False, True], ids=["tar", "tgz"])
def test_a_metadata_header_declaring_more_than_the_bound_is_refused_before_it_is_read(
    tmp_path: Path, type_: bytes, compress: bool
):
    data = header("././@LongLink", type_, GIB) + b"\0" * 4096  # declares 1 GiB, holds 4 KiB
    message = refused(tmp_path, gzip.compress(data) if compress else data)
    assert message == (
        f"layer 1: has a {METADATA[type_]} of {GIB} bytes (at most {MAX_HEADER_BYTES} are allowed); refusing the layer"
    )


@pytest.mark.parametrize("type_", METADATA, ids=[t.decode() for t in METADATA])
def test_a_metadata_header_within_the_bound_is_read(tmp_path: Path, type_: bytes):
    long = "d/" + "n" * 200
    if type_ == tarfile.GNUTYPE_LONGNAME:
        data = header("././@LongLink", type_, len(long) + 1) + padded(long.encode() + b"\0") + member("short")
    elif type_ == tarfile.GNUTYPE_LONGLINK:
        data = header("././@LongLink", type_, len(long) + 1) + padded(long.encode() + b"\0") + symlink("short")
    else:
        data = pax({"path": long}, type_) + member("short")
    out = unpack(tmp_path, data + END)
    if type_ == tarfile.GNUTYPE_LONGLINK:
        assert (out / "short").readlink() == Path(long)
    else:
        assert (out / long).read_bytes() == b"x"


def symlink(name: str) -> bytes:
    info = tarfile.TarInfo(name)
    info.type = tarfile.SYMTYPE
    info.linkname = "short-target"
    return info.tobuf(format=tarfile.GNU_FORMAT)


def test_a_chain_of_metadata_headers_before_one_member_is_bounded(tmp_path: Path):
    fine = b"".join(pax({"comment": str(i)}) for i in range(MAX_HEADER_CHAIN - 1)) + member("a")
    assert (unpack(tmp_path, fine + END) / "a").read_bytes() == b"x"
    chain = b"".join(pax({"comment": str(i)}) for i in range(MAX_HEADER_CHAIN + 1)) + member("b")
    assert f"has more than {MAX_HEADER_CHAIN} metadata headers before one member" in refused(tmp_path, chain + END)


def test_global_headers_are_bounded_together(tmp_path: Path):
    # each within the bound, but tarfile keeps what global headers say for the rest of the archive
    half = MAX_HEADER_BYTES // 2 + 1024
    data = b"".join(pax({f"k{i}": "v" * half}, tarfile.XGLTYPE) + member(f"m{i}") for i in range(3))
    assert f"has PAX global headers of more than {MAX_HEADER_BYTES} bytes together" in refused(tmp_path, data + END)


def test_metadata_headers_count_against_the_byte_limit(tmp_path: Path):
    data = b"".join(pax({"comment": "c" * 3000}) + member(f"m{i}") for i in range(3))
    message = refused(tmp_path, data + END, ExtractLimits(max_bytes=5000))
    assert message == "layer 1: a metadata header takes the image past 5000 bytes; refusing the layer"


@pytest.mark.parametrize(
    "type_",
    [tarfile.REGTYPE, tarfile.SYMTYPE, tarfile.LNKTYPE, tarfile.DIRTYPE, tarfile.CHRTYPE, tarfile.FIFOTYPE, b"Z"],
    ids=["file", "symlink", "hard link", "directory", "device", "fifo", "unknown"],
)
def test_every_member_type_declaring_more_than_the_limit_is_refused_before_its_data_is_read(
    tmp_path: Path, type_: bytes
):
    data = header("big", type_, GIB + 1) + b"\0" * 4096
    assert refused(tmp_path, gzip.compress(data)) == (
        f"layer 1: entry 'big' takes the image past {GIB} bytes; refusing the layer"
    )


def test_a_pax_size_record_counts_as_the_members_size(tmp_path: Path):
    data = pax({"size": str(GIB + 1)}) + header("big", tarfile.REGTYPE, 1) + b"\0" * 4096
    assert "entry 'big' takes the image past" in refused(tmp_path, data)


@pytest.mark.parametrize(
    "data",
    [
        header("sparse", tarfile.GNUTYPE_SPARSE, 10) + b"\0" * 1024,
        pax({"GNU.sparse.major": "1", "GNU.sparse.minor": "0", "GNU.sparse.realsize": "10"})
        + member("sparse", b"1\n" * 2000),
        pax({"GNU.sparse.map": "0,1", "GNU.sparse.size": "1"}) + member("sparse"),
    ],
    ids=["GNU", "PAX 1.0", "PAX 0.1"],
)
def test_sparse_members_are_refused(tmp_path: Path, data: bytes):
    assert "sparse file" in refused(tmp_path, data + END)


def test_members_are_not_kept_while_a_layer_is_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    kept: list[int] = []
    original = Extraction._entry

    def entry(self: Extraction, tar: tarfile.TarFile, *args: object) -> None:
        kept.append(len(tar.members))  # type: ignore[attr-defined]
        original(self, tar, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(Extraction, "_entry", entry)
    unpack(tmp_path, b"".join(member(f"m{i}") for i in range(50)) + END)
    assert max(kept) == 0


# --- broken archives --------------------------------------------------------------------------------------------------

TAR = member("a.yml", b"a" * 3000) + member("b.yml", b"b" * 3000) + END
COMPRESSORS: dict[str, Callable[[bytes], bytes]] = {"gzip": gzip.compress, "bzip2": bz2.compress, "xz": lzma.compress}


def _bad_checksum(data: bytes, at: int) -> bytes:
    broken = bytearray(data)
    broken[at + 148 : at + 156] = b"0000000\0"
    return bytes(broken)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (TAR[:700], "not a valid tar archive (ReadError: unexpected end of data)"),  # within a file's data
        (TAR[: 512 + 3072 + 100], "not a valid tar archive (truncated header: "),  # within the second header
        (_bad_checksum(TAR, 512 + 3072), "not a valid tar archive (corrupt header: "),  # the second header
        (_bad_checksum(TAR, 0), "not a valid tar archive (corrupt header: "),  # the first
    ],
    ids=["truncated in data", "truncated in a header", "a later header's checksum", "the first header's checksum"],
)
def test_a_broken_tar_is_refused(tmp_path: Path, data: bytes, message: str):
    assert refused(tmp_path, data).startswith(f"layer 1: {message}")


@pytest.mark.parametrize("compression", COMPRESSORS)
def test_a_truncated_compressed_stream_is_refused_naming_the_compression(tmp_path: Path, compression: str):
    whole = COMPRESSORS[compression](TAR)
    for cut in (30, len(whole) // 2, len(whole) - 4):
        assert refused(tmp_path, whole[:cut]).startswith(f"layer 1: not a valid {compression} stream ("), cut


def test_a_gzip_stream_with_a_bad_crc_is_refused(tmp_path: Path):
    data = bytearray(gzip.compress(TAR))
    data[-8] ^= 0xFF  # the CRC-32 of the trailer: every member reads well, the stream does not
    assert refused(tmp_path, bytes(data)).startswith("layer 1: not a valid gzip stream (BadGzipFile: CRC check failed")


def test_what_follows_the_end_of_the_archive_counts_against_the_byte_limit(tmp_path: Path):
    data = gzip.compress(member("a") + END + b"\0" * 20_000)
    assert "what follows the archive's end takes the image past 10000 bytes" in refused(
        tmp_path, data, ExtractLimits(max_bytes=10_000)
    )


# --- is_tar ---------------------------------------------------------------------------------------------------------


def test_is_tar_reads_the_first_block_only(tmp_path: Path):
    bomb = tmp_path / "bomb"
    bomb.write_bytes(gzip.compress(header("././@PaxHeader", tarfile.XHDTYPE, GIB) + b"\0" * 4096))
    assert is_tar(bomb, "bomb")  # tarfile.is_tarfile would read the 1 GiB header
    for data, expected in ((TAR, True), (gzip.compress(b"kind: ConfigMap\n"), False), (b"", False)):
        (tmp_path / "f").write_bytes(data)
        assert is_tar(tmp_path / "f", "f") is expected
    (tmp_path / "f").write_bytes(gzip.compress(TAR)[:30])
    with pytest.raises(OciError, match=r"^f: not a valid gzip stream \(EOFError: "):
        is_tar(tmp_path / "f", "f")
