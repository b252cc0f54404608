"""`kapply package init` from a Helm chart in a Helm repository (kapply.cli.package.authoring_vendir), and kctrl's
values schema of a chart's values.yaml (kapply.cli.package.authoring_helm_schema). tests/compat/test_kctrl_authoring.py
compares both with the real kctrl, vendir and helm."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, cast

import pytest

from kapply.cli.package import authoring as files
from kapply.cli.package import authoring_vendir as vendir
from kapply.cli.package.authoring_helm_schema import schema_of_text, values_schema
from kapply.cli.package.release import _helm_template
from kapply.cli.package.release import values_schema as release_values_schema
from kapply.errors import KapplyError
from tests.unit.authoring_fakes import answering
from tests.unit.fake_tools import fake_tool

# kctrl 0.53's vendir.yml after the answers below
VENDIR = """apiVersion: vendir.k14s.io/v1alpha1
directories:
- contents:
  - helmChart:
      name: hello
      repository:
        url: http://127.0.0.1:1
      version: 0.1.0
    path: .
  path: upstream
kind: Config
minimumRequiredVersion: ""
"""
OUTPUT = """> Enter the package reference name (samplepackage.corp.com): a.b.c

1: Local Directory
2: Github Release
3: Helm Chart from Helm Repository
4: Git Repository
5: Helm Chart from Git Repository
> Enter source (1): 3

> Enter helm chart repository URL (): http://127.0.0.1:1
> Enter helm chart name (): hello
> Enter helm chart version (): 0.1.0

\t    | apiVersion: vendir.k14s.io/v1alpha1
\t    | directories:
\t    | - contents:
\t    |   - helmChart:
\t    |       name: hello
\t    |       repository:
\t    |         url: http://127.0.0.1:1
\t    |       version: 0.1.0
\t    |     path: .
\t    |   path: upstream
\t    | kind: Config
\t    | minimumRequiredVersion: ""
"""
ANSWERS = "a.b.c\n3\nhttp://127.0.0.1:1\nhello\n0.1.0\n"


kapply = answering("package")


@pytest.fixture
def fake_vendir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A vendir that records its arguments and $VENDIR_HELM_BINARY and writes a chart into upstream/; it fails when
    vendir.yml asks for version 9.9.9."""
    script = fake_tool(
        monkeypatch,
        tmp_path / "vendir",
        "KAPPLY_VENDIR",
        'echo "$@ $VENDIR_HELM_BINARY" > vendir.args\n'
        "if grep -q 9.9.9 vendir.yml; then printf 'vendir: Error: Syncing directory '\"'upstream'\"':\\n"
        "  Fetching helm chart: not found\\n' >&2; exit 1; fi\n"
        "mkdir -p upstream && echo 'replicas: 1' > upstream/values.yaml && echo 'kind: LockConfig' > vendir.lock.yml\n",
    )
    monkeypatch.setenv("KAPPLY_HELM", "/helm/from/kapply")
    monkeypatch.delenv("VENDIR_HELM_BINARY", raising=False)
    return script


@pytest.mark.usefixtures("fake_vendir")
def test_init_from_a_helm_repository_writes_vendir_yml_and_runs_vendir_sync(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    code, out, err = kapply(monkeypatch, capsys, ANSWERS, "init")
    assert (code, out, err) == (0, OUTPUT, "")
    assert (work / vendir.VENDIR_FILE).read_text() == VENDIR
    assert (work / "vendir.args").read_text() == "sync -f vendir.yml /helm/from/kapply\n"
    assert (work / "upstream" / "values.yaml").exists()
    build = files.load_mapping((work / files.BUILD_FILE).read_text(), "b")
    assert build["spec"]["template"]["spec"] == {
        "app": {
            "spec": {
                "deploy": [{"kapp": {}}],
                "template": [{"helmTemplate": {"path": "upstream"}}, {"ytt": {"paths": ["-"]}}, {"kbld": {}}],
            }
        },
        "export": [{"includePaths": ["upstream"]}],
    }
    package = files.only(files.read_resources(required=True), "Package")
    assert package is not None
    assert package["spec"]["template"]["spec"]["template"][0] == {"helmTemplate": {"path": "upstream"}}


@pytest.mark.usefixtures("fake_vendir")
def test_init_again_offers_the_last_chart_and_fails_with_vendirs_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert kapply(monkeypatch, capsys, ANSWERS, "init")[0] == 0
    code, out, err = kapply(monkeypatch, capsys, "\n\n\n\n9.9.9\n", "init", "--tty")
    assert code == 1
    assert "> Enter source (3): \n" in out
    assert "> Enter helm chart version (0.1.0): 9.9.9\n" in out
    assert "Running vendir sync\n\t    | $ vendir sync -f vendir.yml\n" in out
    assert err.startswith("kapply: Error: Running vendir sync: vendir:\n")
    assert "version: 9.9.9" in (tmp_path / vendir.VENDIR_FILE).read_text(), "saved before the sync"


def test_vendir_yml_of_more_than_one_directory_or_content_is_refused_and_the_last_source() -> None:
    two = {"directories": [{"path": "a"}, {"path": "b"}]}
    with pytest.raises(KapplyError, match="More than 1 directory config found in the vendir file"):
        vendir.content(two)
    contents = {"directories": [{"path": "a", "contents": [{"path": "."}, {"path": "x"}]}]}
    with pytest.raises(KapplyError, match="More than 1 content config found"):
        vendir.content(contents)
    git = {"directories": [{"contents": [{"path": ".", "git": {}}]}]}
    assert (vendir.source_index(git, False), vendir.source_index(git, True)) == (3, 4)
    release = {"directories": [{"contents": [{"path": ".", "githubRelease": {}}]}]}
    assert vendir.source_index(release, False) == 1
    assert vendir.source_index({"directories": [{"contents": [{"path": "."}]}]}, False) is None
    assert vendir.source_index({}, False) is None
    assert vendir.source_index(None, False) is None


# --- the values schema ------------------------------------------------------------------------------------------------


def test_values_schema_types_defaults_and_descriptions() -> None:
    text = """# A document's comment

# replicas The number of replicas
# over two lines
replicas: 2
## Double hashed
## and again
double: x
# -- helm-docs style
docs: y
# separated by a blank line

separated: z
answers:
  yes: yes
  quoted: "1"
  tilde: ~
  nothing:
  nulled: null
  exp: 1e3
  enabled: True
  inf: -.inf
# the servers
servers:
  # the first server
  - name: a # not a description
empty: {}
none: []
base: &base
  k: v
derived: *base
"""
    schema = schema_of_text(text)
    assert schema is not None
    properties: dict[str, Any] = schema["properties"]
    assert properties["replicas"] == {
        "description": "The number of replicas over two lines",
        "type": "integer",
        "default": 2,
    }
    assert properties["double"]["description"] == "Double hashed and again"
    assert properties["docs"]["description"] == "helm-docs style"
    assert "description" not in properties["separated"]
    answers = properties["answers"]["properties"]
    assert answers["yes"] == {"type": "string", "default": "yes"}
    assert answers["quoted"] == {"type": "string", "default": "1"}
    assert answers["tilde"] == {"type": "string", "default": "~"}
    assert answers["nothing"] == {"type": "string", "default": ""}
    assert answers["nulled"] == {"type": "null", "default": "null"}
    assert answers["exp"] == {"type": "number", "default": 1000.0, "format": "float"}
    assert answers["enabled"] == {"type": "boolean", "default": True}
    assert answers["inf"]["default"] == -math.inf
    assert properties["servers"] == {
        "description": "the servers",
        "type": "array",
        "default": [],
        "items": {
            "type": "object",
            "properties": {"name": {"description": "the first server", "type": "string", "default": "a"}},
        },
    }
    assert properties["empty"] == {"type": "object", "default": {}}
    assert properties["none"] == {"type": "array", "default": [], "items": {}}
    assert properties["derived"] == properties["base"]


def test_values_schema_of_a_chart_without_values_and_errors(tmp_path: Path) -> None:
    assert values_schema(str(tmp_path)) is None
    (tmp_path / "values.yaml").write_text("# only a comment\n")
    assert values_schema(str(tmp_path)) is None
    (tmp_path / "values.yaml").write_text("- a list\n")
    with pytest.raises(KapplyError, match="values file must resolve to a map"):
        values_schema(str(tmp_path))
    (tmp_path / "values.yaml").write_text("a: [\n")
    with pytest.raises(KapplyError, match="Reading values.yaml"):
        values_schema(str(tmp_path))
    (tmp_path / "values.yaml").write_text("n: 0x1F\n")
    with pytest.raises(KapplyError, match='parsing "0x1F"'):
        values_schema(str(tmp_path))
    with pytest.raises(KapplyError, match="expected .*values.yaml to be directory"):
        values_schema(str(tmp_path / "values.yaml"))
    with pytest.raises(KapplyError, match="no such file or directory"):
        values_schema(str(tmp_path / "missing"))


def test_release_takes_the_schema_of_the_first_template_step(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "upstream").mkdir()
    (tmp_path / "upstream" / "values.yaml").write_text("# how many\nreplicas: 1\n")
    spec = {"template": [{"helmTemplate": {"path": "upstream"}}, {"ytt": {"paths": ["-"]}}]}
    found = release_values_schema(cast(Any, {"openapi-schema": True}), spec)
    assert found == {
        "type": "object",
        "properties": {"replicas": {"description": "how many", "type": "integer", "default": 1}},
    }
    assert release_values_schema(cast(Any, {"openapi-schema": False}), spec) is None


def test_helm_template_runs_as_kapp_controller_runs_it_for_kctrl(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = 'echo "$@"\nif [ "$3" = broken ]; then echo "Error: no chart" >&2; exit 1; fi\n'
    fake_tool(monkeypatch, tmp_path / "helm", "KAPPLY_HELM", script)
    printed = _helm_template({"path": "upstream", "valuesFrom": [{"path": "v.yml"}, {"secretRef": {"name": "s"}}]})
    assert printed == "template kctrl-builder upstream --namespace in-memory --include-crds --values v.yml\n"
    with pytest.raises(KapplyError, match="Templating helm chart: Error: no chart"):
        _helm_template({"path": "broken"})


# --- a Git repository -------------------------------------------------------------------------------------------------


@pytest.mark.usefixtures("fake_vendir")
def test_init_from_a_git_repository_writes_its_url_reference_and_paths(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    code, out, err = kapply(monkeypatch, capsys, "a.b.c\n4\nfile:///repo.git\n", "init")
    assert (code, err) == (1, "kapply: Error: Asking for text:\n  EOF\n")
    assert out.endswith("> Enter Git URL (): file:///repo.git\n> Enter Git Reference (origin/main): \n")
    assert "spec:\n  template:\n    spec: {}\n" in (tmp_path / files.BUILD_FILE).read_text(), "saved after the source"
    resources = (tmp_path / files.RESOURCES_FILE).read_text()
    assert "  template:\n    spec: null\n" in resources and "version" not in resources.split("---")[0]
    code, out, err = kapply(monkeypatch, capsys, "\n\n\nv1\n\n", "init")
    assert (code, err) == (0, "")
    assert "> Enter the paths which contain Kubernetes manifests (*): \n" in out
    assert vendir.content(vendir.read_config()) == {
        "git": {"url": "file:///repo.git", "ref": "v1"},
        "includePaths": ["*"],
        "path": ".",
    }
    build = files.load_mapping((tmp_path / files.BUILD_FILE).read_text(), "b")
    assert build["spec"]["template"]["spec"]["app"]["spec"]["template"] == [
        {"ytt": {"paths": ["upstream"]}},
        {"kbld": {}},
    ]
    code, out, _ = kapply(monkeypatch, capsys, "\n\n\n\nconfig/*, more/* \n", "init")
    assert code == 0 and "(v1): \n" in out
    assert vendir.content(vendir.read_config())["includePaths"] == ["config/*", "more/*"]
