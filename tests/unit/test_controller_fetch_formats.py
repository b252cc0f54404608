"""Downloads and credentials that used to end a reconcile with an exception instead of a message (kapply.controller
.fetch): archives broken in every format an http source may hold (tar, gzip, bzip2, xz, zip), metadata-header bombs
refused before anything reads them, and Secret values that no tool can carry (not UTF-8, a NUL) for every kind of
credential (git, http, registry). Each ends in a FetchError or OciError (ReconcileFailed with that message) naming
the file or the Secret's field, never its value. Canaries and servers: none needed, nothing leaves tmp_path."""

from __future__ import annotations

import asyncio
import base64
import bz2
import gzip
import io
import json
import lzma
import struct
import tarfile
import zipfile
from pathlib import Path

import pytest

from kapply.controller.fetch import Archive, FetchError, FetchPolicy, Limits, archive_kind, fetch, unpack
from kapply.controller.spec import FetchSource, Git, Http, Image
from kapply.objects import Obj
from kapply.oci import OciError

GIB = 1 << 30
CM = b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\n"


def tar_bytes(**files: bytes) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for name, content in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(content)
            tar.addfile(info, io.BytesIO(content))
    return buffer.getvalue()


def zip_bytes(**files: bytes) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as zipped:
        for name, content in files.items():
            zipped.writestr(name, content)
    return buffer.getvalue()


TAR = tar_bytes(**{"a.yml": CM * 50, "b.yml": CM * 50})
ZIP = zip_bytes(**{"a.yml": CM * 50, "b.yml": CM * 50})


def _flipped(data: bytes, at: int) -> bytes:
    broken = bytearray(data)
    broken[at] ^= 0xFF
    return bytes(broken)


def _bad_crc(data: bytes) -> bytes:
    """The zip with its first entry's CRC-32 wrong, in the local header and the central directory alike."""
    broken = bytearray(data)
    for at in (14, data.find(b"PK\x01\x02") + 16):
        broken[at : at + 4] = b"\xde\xad\xbe\xef"
    return bytes(broken)


def _utf8_flag_on_latin1_name(data: bytes) -> bytes:
    broken = bytearray(data.replace(b"a.yml", b"\xe9.yml"))
    for at in (7, data.find(b"PK\x01\x02") + 9):  # general purpose flags: bit 11, names in UTF-8
        broken[at] |= 0x08
    return bytes(broken)


def _zip64_record_declaring(data: bytes, size: int) -> bytes:
    """A zip64 end record and locator before the end record: zipfile takes its directory size, whatever the end
    record says."""
    end = data.rfind(b"PK\x05\x06")
    record = struct.pack("<4sQ2H2L4Q", b"PK\x06\x06", 44, 45, 45, 0, 0, 2, 2, size, 0)
    locator = struct.pack("<4sLQL", b"PK\x06\x07", 0, end, 1)
    return data[:end] + record + locator + data[end:]


BROKEN = {
    # name: (download, the start of the message after the file's name)
    "truncated tar": (TAR[:700], "not a valid tar archive (ReadError: unexpected end of data)"),
    "truncated tar header": (TAR[: 512 + 3072 + 100], "not a valid tar archive (truncated header"),
    "the first 30 bytes of a tgz": (gzip.compress(TAR)[:30], "not a valid gzip stream (EOFError: "),
    "truncated tgz": (gzip.compress(TAR)[:-100], "not a valid gzip stream (EOFError: "),
    "tgz with a bad CRC": (_flipped(gzip.compress(TAR), -8), "not a valid gzip stream (BadGzipFile: CRC check failed"),
    "corrupt gzip data": (_flipped(gzip.compress(TAR), 40), "not a valid gzip stream ("),
    "truncated bzip2": (bz2.compress(TAR)[:-50], "not a valid bzip2 stream (EOFError: "),
    "truncated xz": (lzma.compress(TAR)[:-50], "not a valid xz stream (EOFError: "),
    "zip with a corrupt central directory": (
        ZIP[: ZIP.find(b"PK\x01\x02")] + b"XX" + ZIP[ZIP.find(b"PK\x01\x02") + 2 :],
        "not a valid zip archive (BadZipFile: ",
    ),
    "truncated zip": (ZIP[:-30], "not a valid zip archive (BadZipFile: "),
    "zip entry with a bad CRC": (_bad_crc(ZIP), "not a valid zip archive (BadZipFile: Bad CRC-32 for file 'a.yml')"),
    "zip name not UTF-8 despite its flag": (_utf8_flag_on_latin1_name(ZIP), "not a valid zip archive (UnicodeDecode"),
}


@pytest.mark.parametrize(("data", "message"), BROKEN.values(), ids=BROKEN.keys())
def test_a_broken_archive_of_any_format_is_refused_naming_the_file(tmp_path: Path, data: bytes, message: str):
    (tmp_path / "download").write_bytes(data)
    (tmp_path / "tree").mkdir()
    with pytest.raises((FetchError, OciError)) as refused:
        unpack(tmp_path / "download", tmp_path / "tree", "app.tgz", Limits())
    assert str(refused.value).startswith(f"app.tgz: {message}"), str(refused.value)


def test_a_zip_whose_zip64_record_declares_a_huge_directory_is_refused_before_zipfile_reads_it(tmp_path: Path):
    (tmp_path / "download").write_bytes(_zip64_record_declaring(ZIP, GIB))
    (tmp_path / "tree").mkdir()
    with pytest.raises(FetchError, match="^Checking size: Expected at most 100000 files"):
        unpack(tmp_path / "download", tmp_path / "tree", "app.zip", Limits())


def test_a_zips_central_directory_counts_against_the_byte_limit(tmp_path: Path):
    comment = b"c" * 60_000  # entries' comments live in the central directory
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zipped:
        for i in range(4):
            info = zipfile.ZipInfo(f"f{i}")
            info.comment = comment
            zipped.writestr(info, b"x")
    (tmp_path / "download").write_bytes(buffer.getvalue())
    (tmp_path / "tree").mkdir()
    with pytest.raises(FetchError, match="^Checking size: Expected at most 100000 bytes"):
        unpack(tmp_path / "download", tmp_path / "tree", "app.zip", Limits(max_bytes=100_000))


@pytest.mark.parametrize(
    "type_", [tarfile.XHDTYPE, tarfile.XGLTYPE, tarfile.GNUTYPE_LONGNAME, tarfile.GNUTYPE_LONGLINK], ids="xgLK"
)
def test_a_download_with_a_metadata_header_bomb_is_told_a_tar_and_refused_unread(tmp_path: Path, type_: bytes):
    info = tarfile.TarInfo("././@LongLink")
    info.type = type_
    info.size = GIB
    (tmp_path / "download").write_bytes(gzip.compress(info.tobuf(format=tarfile.GNU_FORMAT) + b"\0" * 4096))
    (tmp_path / "tree").mkdir()
    assert archive_kind(tmp_path / "download", "bomb.tgz") is Archive.TAR
    with pytest.raises(OciError, match=f"^bomb.tgz: has a .* of {GIB} bytes \\(at most 1048576 are allowed\\)"):
        unpack(tmp_path / "download", tmp_path / "tree", "bomb.tgz", Limits())


# --- credentials ----------------------------------------------------------------------------------------------------

NOT_UTF8 = b"\xff\xfe"
WITH_NUL = b"s3cr\0t"


def secret(data: dict[str, bytes]) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "creds"},
        "data": {k: base64.b64encode(v).decode() for k, v in data.items()},
    }


def fetched(tmp_path: Path, source: FetchSource, data: dict[str, bytes]) -> str:
    async def read(kind: str, name: str) -> Obj | None:
        return secret(data) if (kind, name) == ("Secret", "creds") else None

    (tmp_path / "root").mkdir(exist_ok=True)
    with pytest.raises(FetchError) as refused:
        asyncio.run(fetch((source,), tmp_path / "root", read, FetchPolicy(limits=Limits())))
    assert not any(shown in str(refused.value) for shown in ("\xff", "xff", "s3cr")), "a value is shown"
    return str(refused.value)


GIT = FetchSource("", git=Git("https://127.0.0.1:1/repo.git", "main", secret="creds"))
HTTP = FetchSource("", http=Http("https://127.0.0.1:1/app.tgz", secret="creds"))
IMAGE = FetchSource("", image=Image("127.0.0.1:1/app:v1", secret="creds"))


@pytest.mark.parametrize(
    ("source", "data", "field"),
    [
        (GIT, {"username": NOT_UTF8, "password": b"p"}, "username"),
        (GIT, {"username": b"u", "password": NOT_UTF8}, "password"),
        (GIT, {"ssh-privatekey": NOT_UTF8}, "ssh-privatekey"),
        (GIT, {"ssh-privatekey": b"key", "ssh-knownhosts": NOT_UTF8}, "ssh-knownhosts"),
        (HTTP, {"username": NOT_UTF8, "password": b"p"}, "username"),
        (HTTP, {"username": b"u", "password": NOT_UTF8}, "password"),
    ],
)
@pytest.mark.parametrize("bad", [NOT_UTF8, WITH_NUL], ids=["not UTF-8", "a NUL"])
def test_a_git_or_http_credential_no_tool_can_carry_is_refused_naming_the_field(
    tmp_path: Path, source: FetchSource, data: dict[str, bytes], field: str, bad: bytes
):
    message = fetched(tmp_path, source, {**data, field: bad})
    why = "to be UTF-8 text" if bad == NOT_UTF8 else "to have no NUL character"
    assert message == f"Expected field '{field}' of secret 'creds' {why}"


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"username": NOT_UTF8, "password": b"p"}, "Reading registry credentials from secret 'creds': 'username' is"),
        ({"username": b"u", "password": NOT_UTF8}, "Reading registry credentials from secret 'creds': 'password' is"),
        ({"token": NOT_UTF8}, "Reading registry credentials from secret 'creds': 'token' is"),
        ({".dockerconfigjson": NOT_UTF8}, "Reading registry credentials from secret 'creds': '.dockerconfigjson' is"),
        (
            {".dockerconfigjson": json.dumps({"auths": {"r": {"auth": base64.b64encode(NOT_UTF8).decode()}}}).encode()},
            "Reading registry credentials from secret 'creds' for 'r': `auth` is not base64 of username:password",
        ),
        ({"token": b"a\nb"}, "Expected the registry token of secret 'creds' to have no control characters"),
    ],
    ids=["username", "password", "token", "docker config", "docker config auth", "token with a newline"],
)
def test_a_registry_credential_no_tool_can_carry_is_refused_naming_the_field(
    tmp_path: Path, data: dict[str, bytes], message: str
):
    assert message in fetched(tmp_path, IMAGE, data)
