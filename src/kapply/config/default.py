"""kapply's built-in config (`default.yml`): kapp's default rules, parsed like any user config.

The rules are read from `default.json`, the data `default.yml` parses to (written by hack/default_config.py, checked
against the YAML by tests/unit/test_config_default_json.py): loading it takes ~0.3 ms where parsing the YAML took
~7 ms of every deploy's start-up (bench/why.md)."""

from __future__ import annotations

from functools import cache
from importlib.resources import files

import orjson

from kapply.config.config import Config, parse_config


@cache
def default_config_yaml() -> str:
    """The default config as YAML text (what `kapply deploy-config` prints)."""
    return files(__package__).joinpath("default.yml").read_text(encoding="utf-8")


@cache
def default_config() -> Config:
    return parse_config(orjson.loads(files(__package__).joinpath("default.json").read_bytes()), "default config")
