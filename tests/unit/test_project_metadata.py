"""What pyproject.toml says of the package is true of it: one source for the version, the licence in a LICENSE file,
and every third-party module the package imports declared as a dependency."""

from __future__ import annotations

import ast
import importlib.metadata
import importlib.util
import re
import sys
import tomllib
from pathlib import Path

import kapply

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "src" / "kapply"
PROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())

# Imported only inside a function that a user's own object of that library reaches: declared in an extra, never
# imported when the module is.
OPTIONAL = {"kubernetes": "kapply.matcher takes the official client's objects (docs/matcher.md)"}


def normalized(distribution: str) -> str:
    """A distribution's name as PEP 503 compares names."""
    return re.sub(r"[-_.]+", "-", distribution).lower()


def declared(requirements: list[str]) -> set[str]:
    return {normalized(re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", r)[0]) for r in requirements}  # type: ignore[index]


def third_party_imports() -> dict[str, dict[Path, bool]]:
    """Each top-level third-party module src/kapply imports: the files that import it, and whether one of them
    imports it when the module itself is imported (at its top level, not inside a function)."""
    found: dict[str, dict[Path, bool]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        in_functions = {
            id(inner)
            for function in ast.walk(tree)
            if isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef)
            for inner in ast.walk(function)
        }
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                module = name.partition(".")[0]
                if module != "kapply" and module not in sys.stdlib_module_names:
                    files = found.setdefault(module, {})
                    files[path] = files.get(path, False) or id(node) not in in_functions
    return found


def test_every_third_party_module_imported_is_a_declared_dependency():
    distributions = importlib.metadata.packages_distributions()
    required = declared(PROJECT["project"]["dependencies"])
    extras = set().union(*(declared(r) for r in PROJECT["project"]["optional-dependencies"].values()))
    imports = third_party_imports()
    assert {"aiohttp", "yaml", "orjson", "yarl"} <= imports.keys()  # the walk finds imports at all
    for module, files in imports.items():
        names = {normalized(d) for d in distributions.get(module, [])}
        assert names, f"{module} (imported by {', '.join(map(str, files))}) is in no installed distribution"
        if module in OPTIONAL:
            assert names & extras, f"{module} ({OPTIONAL[module]}) is in no extra of pyproject.toml"
            eager = [str(path.relative_to(REPO)) for path, at_import in files.items() if at_import]
            assert not eager, f"{module} is optional, but {', '.join(eager)} import it at module level"
        else:
            shown = ", ".join(str(path.relative_to(REPO)) for path in files)
            assert names & required, f"{module} (imported by {shown}) is not in pyproject.toml's dependencies"


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
