"""`kapply controller manifests`: the install manifests as one stream, from config/ (the one source) or the wheel's
copies of it; its flags; and `kapply controller` still running the controller now that it has a subcommand. The
wheel and the cluster are tests/e2e/test_controller_manifests.py's."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml

from kapply import __version__
from kapply.cli.command import resolve
from kapply.cli.controller_manifests import MANIFESTS, manifest_directory, stream
from kapply.cli.main import run
from kapply.cli.pflag import UsageError
from kapply.cli.tree import PROGRAM, global_flags, tree

REPO = Path(__file__).resolve().parents[2]
NAMESPACED = {"ServiceAccount", "Role", "RoleBinding", "Deployment"}


def documents(text: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(text) if d]


def test_the_stream_is_the_config_files_verbatim_in_install_order() -> None:
    assert manifest_directory() == REPO / "config"  # a source checkout reads config/ itself
    text = stream()
    assert text.startswith(f"# kapply {__version__}: ")
    for folder, name in MANIFESTS:
        assert (REPO / "config" / folder / name).read_text() in text  # comments and all
    kinds = [d["kind"] for d in documents(text)]
    assert kinds == ["CustomResourceDefinition"] * 5 + [
        "ServiceAccount",
        "ClusterRole",
        "ClusterRoleBinding",
        "Role",
        "RoleBinding",
        "Deployment",
    ]


def test_the_wheel_carries_exactly_these_files_from_config() -> None:
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())
    included = pyproject["tool"]["hatch"]["build"]["targets"]["wheel"]["force-include"]
    assert included == {f"config/{d}/{f}": f"kapply/manifests/{d}/{f}" for d, f in MANIFESTS}


def test_the_deployment_names_the_image_the_build_tags_for_this_version() -> None:
    (deployment,) = [d for d in documents(stream()) if d["kind"] == "Deployment"]
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    assert container["image"] == f"ghcr.io/kapply/kapply:{__version__}"
    assert re.search(r'^IMAGE_NAME = "ghcr.io/kapply/kapply"$', (REPO / "hack" / "image.py").read_text(), re.M)


def test_image_and_namespace_flags_change_every_place_they_appear() -> None:
    text = stream(image="registry.example/kapply:1", namespace="ops")
    assert "kapply-system" not in text
    docs = documents(text)
    assert {d["metadata"].get("namespace") for d in docs if d["kind"] in NAMESPACED} == {"ops"}
    assert all(d["metadata"].get("namespace") is None for d in docs if d["kind"] not in NAMESPACED)
    subjects = [s for d in docs for s in d.get("subjects") or []]
    assert subjects and {s["namespace"] for s in subjects} == {"ops"}
    (deployment,) = [d for d in docs if d["kind"] == "Deployment"]
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    assert container["image"] == "registry.example/kapply:1"
    assert "--lease-namespace=ops" in container["args"]
    # the objects are otherwise the files' own
    assert [d["metadata"]["name"] for d in docs] == [d["metadata"]["name"] for d in documents(stream())]


def test_the_command_prints_the_stream(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["controller", "manifests"]) == 0
    assert capsys.readouterr().out == stream()
    assert run(["controller", "manifests", "--image", "r.example/k:2", "-n", "ops"]) == 0
    assert capsys.readouterr().out == stream("r.example/k:2", "ops")
    assert run(["controller", "manifests", "-n", "Not_A_Namespace"]) == 1
    assert "is not a namespace name" in capsys.readouterr().err


def test_the_controller_command_still_runs_with_a_subcommand_beside_it() -> None:
    args = resolve(tree(), ["controller", "--in-cluster", "--leader-elect=false"], global_flags(), PROGRAM)
    assert args is not None and args.path == ("controller",) and args["in-cluster"]
    args = resolve(tree(), ["controller", "manifests", "-n", "x"], global_flags(), PROGRAM)
    assert args is not None and args.path == ("controller", "manifests") and args["namespace"] == "x"
    with pytest.raises(UsageError):
        resolve(tree(), ["controller", "bogus"], global_flags(), PROGRAM)


def test_crds_only_prints_the_app_and_packaging_crds_verbatim(capsys: pytest.CaptureFixture[str]) -> None:
    text = stream(crds_only=True)
    assert [d["kind"] for d in documents(text)] == ["CustomResourceDefinition"] * 5
    for path in ("controller/crd.yml", "packaging/crds.yml"):
        assert (REPO / "config" / path).read_text() in text
    assert run(["controller", "manifests", "--crds-only"]) == 0
    assert capsys.readouterr().out == text
    assert run(["controller", "manifests", "--crds-only", "--image", "r.example/k:2"]) == 1
    assert "--crds-only prints the CRDs alone" in capsys.readouterr().err


def test_the_image_flags_help_says_the_default_image_must_be_built_and_pushed() -> None:
    (manifests,) = [c for c in tree().children if c.name == "controller"][0].children
    (image,) = [f for f in manifests.flags if f.name == "image"]
    assert "`make image`" in image.help and "published nowhere" in image.help
