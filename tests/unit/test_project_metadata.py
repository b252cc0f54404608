"""What pyproject.toml says of the package is true of it: one source for the version, the licence in a LICENSE
file."""

from __future__ import annotations

import importlib.util
import re
import tomllib
from pathlib import Path

import kapply

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "src" / "kapply"
PROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())


def test_the_version_has_one_source_kapply_version_which_the_wheel_and_the_image_read():
    assert "version" not in PROJECT["project"] and "version" in PROJECT["project"]["dynamic"]
    source = REPO / PROJECT["tool"]["hatch"]["version"]["path"]
    assert source == PACKAGE / "__init__.py"
    # hatchling's default pattern for a version file
    (found,) = re.findall(r"(?im)^__version__ *= *([\'\"])v?(.+?)\1", source.read_text())
    assert found[1] == kapply.__version__
    spec = importlib.util.spec_from_file_location("kapply_image_version", REPO / "hack" / "image.py")
    assert spec and spec.loader
    image = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(image)
    assert image.kapply_version() == kapply.__version__


def test_the_licence_is_apache_2_as_kapps_and_in_a_license_file():
    assert PROJECT["project"]["license"] == "Apache-2.0"
    text = (REPO / "LICENSE").read_text()
    assert "Apache License\n                           Version 2.0, January 2004" in text
    assert "END OF TERMS AND CONDITIONS" in text
