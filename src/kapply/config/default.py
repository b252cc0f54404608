"""kapply's built-in config (`default.yml`): kapp's default rules, parsed like any user config."""

from __future__ import annotations

from functools import cache
from importlib.resources import files

import yaml

from kapply.config.config import Config, parse_config


@cache
def default_config_yaml() -> str:
    """The default config as YAML text (what `kapply deploy-config` prints)."""
    return files(__package__).joinpath("default.yml").read_text(encoding="utf-8")


@cache
def default_config() -> Config:
    return parse_config(yaml.safe_load(default_config_yaml()), "default config")
