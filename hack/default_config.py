#!/usr/bin/env python3
"""Write src/kapply/config/default.json, kapply's built-in config (src/kapply/config/default.yml) as the data it
parses to, which kapply loads instead of parsing the YAML on every run (~7 ms of each command's start-up, bench/why.md).
default.yml stays the one source: run this after editing it (tests/unit/test_config_default_json.py checks the two
agree).

Usage: .venv/bin/python hack/default_config.py
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from kapply import yamlio
from kapply.errors import ConfigError

CONFIG_DIR = Path(__file__).resolve().parents[1] / "src" / "kapply" / "config"


def parsed_yaml() -> dict[str, Any]:
    """default.yml as kapply reads a Config: its YAML loader, kapp's (Go) YAML rules."""
    return yamlio.load_mapping((CONFIG_DIR / "default.yml").read_text(encoding="utf-8"), "default config", ConfigError)


def as_json(mapping: dict[str, Any]) -> bytes:
    return orjson.dumps(mapping, option=orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE)


def main() -> None:
    (CONFIG_DIR / "default.json").write_bytes(as_json(parsed_yaml()))


if __name__ == "__main__":
    main()
