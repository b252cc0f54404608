"""A stand-in for vendir, for kctrl dev in tests/compat/test_kctrl_dev.py: kctrl runs `vendir sync -f -
--lock-file /dev/null` for an App's fetch stage, and vendir is not among the tools this project can get (it is
neither in a package registry reached here nor in ../shared/tools). This does what that command does for the two
sources the test uses, `inline` (`paths`, and `pathsFrom` of the Secrets and ConfigMaps kctrl sends before the
Config) and `directory` (what kctrl's `--local` makes of a fetch step), and refuses anything else. Only the fetch
is stood in for: kctrl's reconcile, its ytt and kapp runs and its output are the real ones, and the test compares no
fetch output.

Usage (as kctrl runs it): python vendir_standin.py sync -f - --lock-file /dev/null"""

from __future__ import annotations

import base64
import shutil
import sys
from pathlib import Path
from typing import Any

import yaml


def _write(root: Path, files: dict[str, str | bytes]) -> None:
    for name, content in files.items():
        target = (root / name).resolve()
        if not target.is_relative_to(root.resolve()):
            raise SystemExit(f"vendir stand-in: path '{name}' leaves the directory")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content if isinstance(content, bytes) else content.encode())


def _inline(root: Path, inline: dict[str, Any], refs: dict[tuple[str, str], dict[str, Any]]) -> None:
    _write(root, dict(inline.get("paths") or {}))
    for source in inline.get("pathsFrom") or []:
        kind, ref = ("Secret", source["secretRef"]) if "secretRef" in source else ("ConfigMap", source["configMapRef"])
        obj = refs[(kind, ref["name"])]
        data = obj.get("data") or {}
        files = {k: base64.b64decode(v) for k, v in data.items()} if kind == "Secret" else dict(data)
        _write(root / ref.get("directoryPath", ""), files)


def main(argv: list[str]) -> int:
    if argv[:3] != ["sync", "-f", "-"]:
        print(f"vendir stand-in: unexpected arguments {argv}", file=sys.stderr)
        return 1
    refs: dict[tuple[str, str], dict[str, Any]] = {}
    config: dict[str, Any] = {}
    for doc in yaml.safe_load_all(sys.stdin):
        if not doc:
            continue
        if doc.get("kind") in ("Secret", "ConfigMap"):
            refs[(doc["kind"], doc["metadata"]["name"])] = doc
        else:
            config = doc
    for directory in config.get("directories") or []:
        for contents in directory.get("contents") or []:
            root = Path(directory["path"]) / contents.get("path", ".")
            if "inline" in contents:
                _inline(root, contents["inline"], refs)
            elif "directory" in contents:
                shutil.copytree(contents["directory"]["path"], root, dirs_exist_ok=True)
            else:
                print(f"vendir stand-in: only inline and directory sources, not {sorted(contents)}", file=sys.stderr)
                return 1
            print(f"Fetching: {directory['path']} + {contents.get('path', '.')}")
    print("Succeeded")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
