"""kapply's built-in config (`default.yml`): kapp's default rules, parsed like any user config.

The rules are read from `default.json`, the data `default.yml` parses to (written by hack/default_config.py, checked
against the YAML by tests/unit/test_config_default_json.py): loading it takes ~0.6 ms where parsing the YAML took
~7 ms of every deploy's start-up (bench/why.md). Both are read by path, beside this module: importlib.resources
would add ~4 ms of imports (its readers, zipfile) to that start-up."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import orjson

from kapply.config.config import Config, parse_config

_HERE = Path(__file__).parent


@cache
def default_config_yaml() -> str:
    """The default config as YAML text (what `kapply deploy-config` prints)."""
    return (_HERE / "default.yml").read_text(encoding="utf-8")


@cache
def default_config() -> Config:
    return parse_config(orjson.loads((_HERE / "default.json").read_bytes()), "default config")
