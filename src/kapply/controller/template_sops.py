"""The sops template step: files of the fetched content encrypted with sops (`*.sops.yml`, `*.sops.yaml`) decrypted in
place, as kapp-controller does, with the age or PGP private keys of a Secret of the App's namespace.

The keys are read with the App's own account (the sandbox's reads), written only into a directory of the step's own
(mode 0700, inside the job's directory) and removed with it as soon as the step ends; they reach sops through
SOPS_AGE_KEY_FILE or GNUPGHOME, never an argument, and no message says more of them than the Secret's name. sops
reads nothing else of the user's: an empty configuration (`--config`), an empty HOME, no PATH (so neither a `gpg`
nor an age plugin program is run) and proxies that refuse every connection; with the key types tried age first,
then pgp, a file that also names a KMS or Vault key does not make sops ask that service while a key of the
Secret's opens it. Like the template tools that need no network, sops runs without one where the kernel allows it
(runner.OFFLINE).

A file decrypted is replaced by its plain form without the `.sops` (`secret.sops.yaml` becomes `secret.yaml`, mode
0600); with `paths`, only those files and the files within those directories are. Every path is read within the
fetch directory as kapp-controller's ScopedPath reads it, symlinks followed (template_cue.scoped).
"""

from __future__ import annotations

import base64
import binascii
import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

from kapply.controller.fetch import FetchError, ReadSource, confined, source_data
from kapply.controller.runner import ToolError, run
from kapply.controller.spec import SopsKeys, SopsKind, SourceRef, TemplateStep
from kapply.controller.template_cue import scoped
from kapply.errors import KapplyError

SUFFIXES = {".sops.yml": ".yml", ".sops.yaml": ".yaml"}
# Where a network request of sops's would go, should one be made: nowhere (Go skips proxies for loopback only).
SOPS_ENV = {
    "PATH": "",
    **dict.fromkeys(("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"), "http://127.0.0.1:0"),
    **dict.fromkeys(("NO_PROXY", "no_proxy"), ""),
    "SOPS_DECRYPTION_ORDER": "age,pgp",
}
_ARMOR = re.compile(
    r"-----BEGIN PGP PRIVATE KEY BLOCK-----\r?\n(?P<body>.*?)-----END PGP PRIVATE KEY BLOCK-----", re.DOTALL
)


class SopsError(KapplyError):
    """The step's keys could not be prepared (kapp-controller's `Building config: ...`)."""


def decrypted_name(name: str) -> str | None:
    """The name a sops file's plain form gets, or None for a file that is not one."""
    for suffix, plain in SUFFIXES.items():
        if name.endswith(suffix):
            return name[: -len(suffix)] + plain
    return None


def dearmor(text: str, secret: str) -> bytes:
    """The binary key ring (OpenPGP packets, as GnuPG's secring.gpg holds them) of every armored PGP private key
    block in `text`; SopsError naming the Secret, never its content, when there is none or one is not base64."""
    rings = []
    for block in _ARMOR.finditer(text.replace("\r\n", "\n")):
        lines = block.group("body").split("\n")
        if "" in lines and all(":" in line for line in lines[: lines.index("")]):
            lines = lines[lines.index("") + 1 :]  # armor headers (`Version: ...`), which end with an empty line
        data = "".join(line.strip() for line in lines if not line.startswith("="))  # "=XXXX": the checksum
        try:
            rings.append(base64.b64decode(data, validate=True))
        except (binascii.Error, ValueError):
            raise SopsError(
                f"Building config: Generating secring.gpg: Expected secret '{secret}' to hold armored PGP private "
                "keys: a block is not base64"
            ) from None
    if not rings:
        raise SopsError(
            f"Building config: Generating secring.gpg: Expected to find at least one private key in secret '{secret}' "
            "(an armored PGP PRIVATE KEY BLOCK)"
        )
    return b"".join(rings)


async def write_keys(keys: SopsKeys, home: Path, read: ReadSource) -> dict[str, str]:
    """Write the Secret's keys into `home` (made here, mode 0700) and say how sops finds them (its environment).
    As kapp-controller: every value of the Secret, in key order, one after the other, each ended by a newline."""
    try:
        data = await source_data(SourceRef("Secret", keys.secret), read)
    except KapplyError as e:
        raise SopsError(f"Building config: Getting private keys secret: {e}") from None
    contents = b"".join(value + b"\n" for _, value in data)
    home.mkdir(mode=0o700)
    home.chmod(0o700)  # sops refuses a GNUPGHOME that others may read
    (home / ".sops.yml").write_text("{}")
    if keys.kind is SopsKind.AGE:
        _private(home / "key.txt", contents)
        return {"SOPS_AGE_KEY_FILE": str(home / "key.txt")}
    _private(home / "secring.gpg", dearmor(contents.decode("utf-8", "replace"), keys.secret))
    return {"GNUPGHOME": str(home)}


def _private(path: Path, content: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(content)


def sops_files(paths: tuple[str, ...], root: Path) -> Iterator[tuple[Path, Path, str]]:
    """Each sops file to decrypt: (the file to read, symlinks resolved; where it is, which is replaced; how it is
    shown, relative to the fetch directory). Without `paths`, every one under the fetch directory; with them, each
    path that is a sops file and every one under each path that is a directory. Symlinked directories are not walked
    into (as kapp-controller's filepath.Walk), symlinked files are read where they lead, within the fetch
    directory."""
    base = Path(os.path.realpath(root))
    for path in paths or (".",):
        target = scoped(root, path)
        if target.is_dir():
            yield from _walk(target, base)
            continue
        pure = PurePosixPath(path)
        if not target.exists():
            raise FetchError(f"Checking path: '{path}' does not exist")
        if decrypted_name(pure.name) is not None:
            place = scoped(root, str(pure.parent)) / pure.name
            yield target, place, path


def _walk(directory: Path, base: Path) -> Iterator[tuple[Path, Path, str]]:
    for current, dirs, files in os.walk(directory):
        dirs.sort()
        for name in sorted(files):
            if decrypted_name(name) is None:
                continue
            place = Path(current, name)
            shown = str(place.relative_to(base))
            yield confined(base, shown), place, shown


async def decrypt(source: Path, place: Path, shown: str, home: Path, env: dict[str, str]) -> None:
    """`sops --decrypt` of one file; its plain form replaces it (ToolError naming the file when sops fails)."""
    plain_name = decrypted_name(place.name)
    assert plain_name is not None
    try:
        ran = await run(
            "sops", f"--config={home / '.sops.yml'}", "--decrypt", str(source), cwd=home, env=SOPS_ENV | env
        )
    except ToolError as e:
        raise ToolError(f"Decrypting file '{shown}': {e}", e.stderr, e.exit_code) from None
    place.unlink()
    plain = place.with_name(plain_name)
    if plain.is_symlink():
        plain.unlink()  # replaced, never written through
    fd = os.open(plain, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(ran.stdout)


async def sops(step: TemplateStep, root: Path, stdin: str | None, scratch: Path, read: ReadSource) -> None:
    """Decrypt the step's sops files in the fetch directory `root`: the next step reads the directory again."""
    if stdin is not None:
        raise SopsError("Templating data is not supported by sops: put it before the steps that print YAML")
    assert step.sops_keys is not None
    files = list(sops_files(step.paths, root))  # every path checked before any key is read
    home = scratch / "sops-keys"
    try:
        env = await write_keys(step.sops_keys, home, read)
        for source, place, shown in files:
            await decrypt(source, place, shown, home, env)
    finally:
        shutil.rmtree(home, ignore_errors=True)
