"""The built-in config kapply loads (default.json) is default.yml's data (hack/default_config.py writes it)."""

import importlib.util
from importlib.resources import files
from pathlib import Path

from kapply.config.config import parse_config
from kapply.config.default import default_config

HACK = Path(__file__).resolve().parents[2] / "hack" / "default_config.py"


def _generator():
    spec = importlib.util.spec_from_file_location("default_config_generator", HACK)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_default_json_is_default_yml_parsed():
    generator = _generator()
    shipped = files("kapply.config").joinpath("default.json").read_bytes()
    assert shipped == generator.as_json(generator.parsed_yaml()), "default.yml changed: run hack/default_config.py"


def test_default_config_is_the_yaml_parsed():
    assert default_config() == parse_config(_generator().parsed_yaml(), "default config")
