"""kapply's built-in config (`default.yml`): kapp's default rules, parsed like any user config."""

from __future__ import annotations

from functools import cache
from importlib.resources import files

from kapply import yamlio
from kapply.config.config import Config, parse_config
from kapply.errors import ConfigError


@cache
def default_config_yaml() -> str:
    """The default config as YAML text (what `kapply deploy-config` prints)."""
    return files(__package__).joinpath("default.yml").read_text(encoding="utf-8")


@cache
def default_config() -> Config:
    return parse_config(yamlio.load_mapping(default_config_yaml(), "default config", ConfigError), "default config")
