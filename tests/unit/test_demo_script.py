"""The pure parts of hack/demo.py (`make demo`; run end to end by hand against the local cluster): which template
tools the controller gets and what it says of the missing ones, the Apps it deploys, and the Makefile building the
tools first."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def demo() -> ModuleType:
    spec = importlib.util.spec_from_file_location("kapply_demo", REPO / "hack" / "demo.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_template_tools_are_found_and_the_missing_ones_named(
    demo: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    built = tmp_path / "helm"
    built.write_text("")
    monkeypatch.setattr(demo.tools, "binary", lambda tool: tmp_path / tool.name)  # only helm is built
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setenv("KAPPLY_YTT", "/opt/ytt")  # a variable set wins
    for name in ("KAPPLY_HELM", "KAPPLY_KUSTOMIZE", "KAPPLY_KBLD"):
        monkeypatch.delenv(name, raising=False)
    assert demo.template_tools() == {"KAPPLY_HELM": str(built), "KAPPLY_YTT": "/opt/ytt"}
    out = capsys.readouterr().out
    assert f"helm       {built}" in out and "ytt        /opt/ytt" in out
    for name in ("kustomize", "kbld"):
        assert f"{name:<10} missing: Apps that template with {name} fail (`make tools-build` builds it)" in out


def test_the_apps_template_with_their_tool_from_inline_files(demo: ModuleType) -> None:
    for tool, text in demo.APPS.items():
        app = yaml.safe_load(text)
        assert app["kind"] == "App" and app["metadata"] == {"name": f"hello-{tool}", "namespace": demo.NAMESPACE}
        (step,) = app["spec"]["template"]
        assert list(step) == [{"helm": "helmTemplate"}.get(tool, tool)]
        assert list(app["spec"]["fetch"][0]) == ["inline"]
    helm = yaml.safe_load(demo.APPS["helm"])["spec"]["fetch"][0]["inline"]["paths"]
    assert '"{{ .Release.Name }}-greeting"' in helm["chart/templates/configmap.yaml"]


def test_make_demo_builds_the_template_tools_first() -> None:
    makefile = (REPO / "Makefile").read_text()
    recipe = makefile.split("\ndemo:", 1)[1].split("\n\n", 1)[0]
    assert recipe.splitlines()[1:] == ["\t$(TOOLS) build helm kustomize kbld", "\t$(BIN)/python hack/demo.py"]
