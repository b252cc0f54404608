"""Template steps over untrusted files: every path confined to the fetch directory after following symlinks, every
kustomization kustomize could reach checked for remote and out-of-tree bases and files, and the App's values passed
so that none becomes an option. helm and kustomize are shell scripts here that print what they were given
(tmp_path only)."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest
import yaml

from kapply.controller.spec import TemplateStep, TemplateTool, ValuesSource
from kapply.controller.template import TemplateError, check_kustomization, kbld_args, template
from tests.unit.fake_tools import fake_step_tool, fetch_directory, nothing, tree


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """The fetch directory; a canary kustomization beside it, outside."""
    return fetch_directory(tmp_path, {"kustomization.yaml": "resources: [cm.yaml]\n", "cm.yaml": "kind: ConfigMap\n"})


def kustomization(fields: dict) -> str:
    return yaml.safe_dump(fields)


# --- kustomizations -------------------------------------------------------------------------------------------------

REMOTE = "to be a path (remote bases and files are not allowed)"
OUTSIDE = "to stay within the fetch directory"


@pytest.mark.parametrize(
    ("fields", "where", "entry", "why"),
    [
        ({"resources": ["../outside"]}, "resources[0]", "../outside", OUTSIDE),
        ({"resources": ["cm.yml", "../../root/../outside"]}, "resources[1]", "../../root/../outside", OUTSIDE),
        ({"bases": ["https://github.com/x/y//base?ref=v1"]}, "bases[0]", "https://github.com/x/y//base?ref=v1", REMOTE),
        ({"resources": ["github.com/x/y/base?ref=v1"]}, "resources[0]", "github.com/x/y/base?ref=v1", REMOTE),
        ({"resources": ["GitHub.com:x/y"]}, "resources[0]", "GitHub.com:x/y", REMOTE),
        ({"resources": ["git@github.com:x/y.git"]}, "resources[0]", "git@github.com:x/y.git", REMOTE),
        ({"resources": ["git::https://x.example/y"]}, "resources[0]", "git::https://x.example/y", REMOTE),
        ({"resources": ["ssh://git@x.example/y"]}, "resources[0]", "ssh://git@x.example/y", REMOTE),
        ({"resources": ["file:///srv/repo"]}, "resources[0]", "file:///srv/repo", REMOTE),
        ({"resources": ["http://169.254.169.254/x"]}, "resources[0]", "http://169.254.169.254/x", REMOTE),
        ({"resources": ["deploy@v2/base"]}, "resources[0]", "deploy@v2/base", REMOTE),
        ({"components": ["../outside"]}, "components[0]", "../outside", OUTSIDE),
        ({"resources": ["/etc/kubernetes"]}, "resources[0]", "/etc/kubernetes", "to be a relative path"),
        ({"crds": ["https://x.example/crd.yaml"]}, "crds[0]", "https://x.example/crd.yaml", REMOTE),
        ({"patches": [{"path": "https://x.example/p.yaml"}]}, "patches[0].path[0]", "https://x.example/p.yaml", REMOTE),
        ({"patchesStrategicMerge": ["../outside/cm.yaml"]}, "patchesStrategicMerge[0]", "../outside/cm.yaml", OUTSIDE),
        (
            {"configMapGenerator": [{"name": "c", "files": ["key=../outside/cm.yaml"]}]},
            "configMapGenerator[0].files[0]",
            "../outside/cm.yaml",
            OUTSIDE,
        ),
        (
            {"secretGenerator": [{"name": "s", "envs": ["http://x.example/env"]}]},
            "secretGenerator[0].envs[0]",
            "http://x.example/env",
            REMOTE,
        ),
        ({"openapi": {"path": "../outside/schema.json"}}, "openapi.path[0]", "../outside/schema.json", OUTSIDE),
        (
            {"replacements": [{"path": "https://x.example/r.yaml"}]},
            "replacements[0].path[0]",
            "https://x.example/r.yaml",
            REMOTE,
        ),
        (
            {"transformers": ["kind: PatchTransformer\nmetadata: {name: p}\npath: https://x.example/p.yaml\n"]},
            "path[0]",
            "https://x.example/p.yaml",
            REMOTE,
        ),
        ({"generators": ["../outside"]}, "generators[0]", "../outside", OUTSIDE),
    ],
)
def test_remote_and_out_of_tree_entries_are_refused(root: Path, fields: dict, where: str, entry: str, why: str):
    tree(root, {"kustomization.yaml": kustomization(fields), "cm.yml": "kind: ConfigMap\n"})
    with pytest.raises(TemplateError) as refused:
        check_kustomization(root, root)
    assert str(refused.value) == f"Templating dir: Expected kustomization 'kustomization.yaml' {where} '{entry}' {why}"


def test_every_reachable_kustomization_is_checked(root: Path):
    tree(
        root,
        {
            "overlays/prod/kustomization.yml": kustomization({"resources": ["../../base"], "components": ["../../c"]}),
            "base/Kustomization": kustomization({"resources": ["cm.yaml"]}),
            "base/cm.yaml": "kind: ConfigMap\n",
            "c/kustomization.yaml": kustomization({"transformers": ["t.yaml"]}),
            "c/t.yaml": "kind: PatchTransformer\nmetadata: {name: p}\npath: ../../outside/cm.yaml\n",
        },
    )
    with pytest.raises(TemplateError) as refused:
        check_kustomization(root, root / "overlays" / "prod")
    assert str(refused.value) == (
        f"Templating dir: Expected kustomization 'c/kustomization.yaml' path[0] '../../outside/cm.yaml' {OUTSIDE}"
    )


def test_a_base_through_a_symlink_leaving_the_directory_is_refused(root: Path):
    tree(root, {"kustomization.yaml": kustomization({"resources": ["base"]})}, {"base": "../outside"})
    with pytest.raises(TemplateError, match=f"resources\\[0\\] 'base' {OUTSIDE}"):
        check_kustomization(root, root)


def test_kustomizations_within_pass_with_inline_patches_field_specs_and_urls_as_values(root: Path):
    tree(
        root,
        {
            "overlay/kustomization.yaml": kustomization(
                {
                    "resources": ["../base", "extra.yaml"],
                    "commonAnnotations": {"docs": "https://example.com/runbook"},
                    "labels": [{"pairs": {"a": "b"}, "fields": [{"path": "spec/selector", "kind": "Service"}]}],
                    "patches": [{"path": "patch.yaml"}, {"patch": "- op: add\n  path: /x\n  value: y\n"}],
                    "patchesStrategicMerge": ["kind: ConfigMap\nmetadata: {name: x}\n"],
                    "configMapGenerator": [{"name": "c", "files": ["k=data.txt"], "envs": ["env.txt"]}],
                    "transformers": ["kind: PrefixSuffixTransformer\nmetadata: {name: p}\nprefix: a-\n"],
                    "images": [{"name": "app", "newName": "registry.example.com/app"}],
                }
            ),
            "base/kustomization.yaml": kustomization({"resources": ["cm.yaml"]}),
            "base/cm.yaml": "kind: ConfigMap\n",
        },
    )
    check_kustomization(root, root / "overlay")


def test_cycles_and_missing_kustomizations_end(root: Path):
    tree(
        root,
        {
            "a/kustomization.yaml": kustomization({"resources": ["../b", "../nothing-here"]}),
            "b/kustomization.yaml": kustomization({"resources": ["../a"]}),
        },
    )
    check_kustomization(root, root / "a")


def test_a_kustomization_that_is_not_yaml_or_too_big_is_refused(root: Path, monkeypatch: pytest.MonkeyPatch):
    tree(root, {"kustomization.yaml": "resources: [a\n"})
    with pytest.raises(TemplateError, match="^Templating dir: Expected 'kustomization.yaml' to be YAML: "):
        check_kustomization(root, root)
    tree(root, {"kustomization.yaml": "[" * 100_000})
    with pytest.raises(TemplateError, match="to be YAML"):
        check_kustomization(root, root)
    monkeypatch.setattr("kapply.controller.template.MAX_KUSTOMIZATION", 10)
    tree(root, {"kustomization.yaml": kustomization({"resources": ["a.yaml", "b.yaml"]})})
    with pytest.raises(TemplateError, match="Expected 'kustomization.yaml' to be at most 10 bytes"):
        check_kustomization(root, root)


def test_shared_yaml_nodes_are_checked_once(root: Path):
    bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, "
        f"*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}]\n"
        for i in range(9)
    )
    tree(root, {"kustomization.yaml": bomb})
    check_kustomization(root, root)  # 10^10 paths if walked as a tree


# Every way of writing an entry that kustomize's Go decoder reads as the field: the check sees what kustomize sees.
# (The class of the hole: a check that read one document, one spelling of a key, one type of scalar.)
SPELLINGS = {
    "a second document": "resources: [../outside]\n---\n",
    "an empty first document": "---\n---\nresources: [../outside]\n",
    "a later document only": "resources: [cm.yml]\n---\nresources: [../outside]\n",
    "a key in another case": "Resources: [../outside]\n",
    "a key in upper case": "RESOURCES: [../outside]\n",
    "a duplicate key": "resources: [../outside]\nresources: [cm.yml]\n",
    "a duplicate key in another case": "resources: [cm.yml]\nResources: [../outside]\n",
    "a binary scalar": "resources: [!!binary Li4vb3V0c2lkZQ==]\n",
    "a merge key": "base: &b {resources: [../outside]}\n<<: *b\n",
    "a field key in another case": "patches: [{Path: ../outside/cm.yaml}]\n",
}


@pytest.mark.parametrize("text", SPELLINGS.values(), ids=SPELLINGS.keys())
def test_an_entry_is_checked_however_it_is_written(root: Path, text: str):
    tree(root, {"kustomization.yaml": text, "cm.yml": "kind: ConfigMap\n"})
    with pytest.raises(TemplateError, match=f"'../outside(/cm.yaml)?' {OUTSIDE}$"):
        check_kustomization(root, root)


def test_a_nested_kustomization_with_a_second_document_is_checked(root: Path):
    tree(
        root,
        {
            "overlay/kustomization.yaml": "resources: [../base]\n---\nkind: Ignored\n",
            "base/kustomization.yaml": "resources: [cm.yml, http://127.0.0.1:8080/x]\n---\n",
        },
    )
    with pytest.raises(TemplateError) as refused:
        check_kustomization(root, root / "overlay")
    assert str(refused.value) == (
        "Templating dir: Expected kustomization 'base/kustomization.yaml' resources[1] 'http://127.0.0.1:8080/x' "
        + REMOTE
    )


@pytest.mark.parametrize(
    ("field", "entry", "why"),
    [
        # YAML (a mapping) and a URL at once: kustomize may GET it
        ("patchesStrategicMerge", "http://127.0.0.1:8/x: y", REMOTE),
        ("transformers", "https://127.0.0.1:8/x: y", REMOTE),
        # YAML and a path leaving the fetch directory at once
        ("generators", "a: ../../../outside", OUTSIDE),
    ],
)
def test_an_entry_that_is_both_inline_yaml_and_a_path_is_checked_as_both(root: Path, field: str, entry: str, why: str):
    tree(root, {"kustomization.yaml": kustomization({field: [entry]})})
    with pytest.raises(TemplateError, match=f"{field}\\[0\\] '.*' {re.escape(why)}"):
        check_kustomization(root, root)


# --- the steps, with fake tools -------------------------------------------------------------------------------------


def fake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tool: str) -> None:
    """`tool` prints, as YAML, its arguments, working directory and some of its environment."""
    script = (
        'echo "cwd: $PWD"\n'
        "echo \"path: '$PATH'\"\n"
        "echo \"proxy: '$HTTPS_PROXY'\"\n"
        "echo \"plugins: '$HELM_PLUGINS'\"\n"
        'echo "args:"\n'
        'for a in "$@"; do echo "- \'$a\'"; done\n'
    )
    fake_step_tool(tmp_path, monkeypatch, tool, script)


def run_template(steps: tuple[TemplateStep, ...], root: Path) -> dict:
    return yaml.safe_load(asyncio.run(template(steps, root, nothing, "app", "ns")))


def test_helm_gets_the_release_name_after_double_dash_and_flags_with_their_values(
    tmp_path: Path, root: Path, monkeypatch: pytest.MonkeyPatch
):
    fake(tmp_path, monkeypatch, "helm")
    tree(root, {"chart/Chart.yaml": "name: c\n", "values.yml": "a: b\n"})
    step = TemplateStep(
        TemplateTool.HELM,
        chart_path="chart",
        release_name="--post-renderer=./evil",
        release_namespace="-n",
        values_from=(ValuesSource(path="values.yml"),),
    )
    ran = run_template((step,), root)
    assert ran["args"] == [
        "template",
        "--namespace=-n",
        "--include-crds",
        f"--values={(root / 'values.yml').resolve()}",
        "--",
        "--post-renderer=./evil",
        str((root / "chart").resolve()),
    ]
    assert ran["cwd"] == str(root) and ran["plugins"].endswith("helm-home/plugins")


def test_kustomize_runs_root_only_without_path_or_a_way_out(
    tmp_path: Path, root: Path, monkeypatch: pytest.MonkeyPatch
):
    fake(tmp_path, monkeypatch, "kustomize")
    tree(root, {"app/kustomization.yaml": kustomization({"resources": ["cm.yaml"]})})
    ran = run_template((TemplateStep(TemplateTool.KUSTOMIZE, kustomize_path="app"),), root)
    assert ran["args"] == ["build", "--load-restrictor=LoadRestrictionsRootOnly", "--", str((root / "app").resolve())]
    assert ran["cwd"] == str(root) and ran["path"] == "" and ran["proxy"] == "http://127.0.0.1:0"


def test_a_kustomization_refused_means_kustomize_never_runs(
    tmp_path: Path, root: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("KAPPLY_KUSTOMIZE", str(tmp_path / "not-there"))  # would fail differently if it ran
    tree(root, {"kustomization.yaml": kustomization({"resources": ["../outside"]})})
    with pytest.raises(TemplateError, match=OUTSIDE):
        run_template((TemplateStep(TemplateTool.KUSTOMIZE),), root)


@pytest.mark.parametrize(
    ("step", "message"),
    [
        (TemplateStep(TemplateTool.YTT, paths=("../..",)), "Templating dir: Invalid path: ../.."),
        (
            TemplateStep(TemplateTool.YTT, paths=("link/cm.yaml",)),
            "Templating dir: Invalid path: link/cm.yaml (a symlink on it leads outside the fetch directory)",
        ),
        (TemplateStep(TemplateTool.KUSTOMIZE, kustomize_path="link"), "Templating dir: Invalid path: link ("),
        (TemplateStep(TemplateTool.HELM, chart_path="/../etc"), "Templating helm chart: Invalid path: /../etc"),
        (
            TemplateStep(TemplateTool.HELM, values_from=(ValuesSource(path="link/cm.yaml"),)),
            "Templating helm chart: Invalid path: link/cm.yaml (",
        ),
        (
            TemplateStep(TemplateTool.HELM, values_from=(ValuesSource(path="../outside/cm.yaml"),)),
            "Templating helm chart: Invalid path: ../outside/cm.yaml",
        ),
        (
            TemplateStep(TemplateTool.KBLD, paths=("link/cm.yaml",)),
            "Templating dir: Invalid path: link/cm.yaml (a symlink on it leads outside the fetch directory)",
        ),
        (TemplateStep(TemplateTool.KBLD, paths=("-", "/etc/hosts")), "Templating dir: Expected stdin to be available"),
        (TemplateStep(TemplateTool.KBLD, paths=("/../etc/hosts",)), "Templating dir: Invalid path: /../etc/hosts"),
        (TemplateStep(TemplateTool.YTT, paths=("a/../../x",)), "Templating dir: Invalid path: a/../../x"),
    ],
)
def test_template_paths_are_confined(tmp_path: Path, root: Path, step: TemplateStep, message: str):
    tree(root, {}, {"link": "../outside"})
    with pytest.raises(TemplateError) as refused:
        run_template((step,), root)
    assert str(refused.value).startswith(message)


# --- kbld: its arguments --------------------------------------------------------------------------------------------


def test_kbld_reads_the_fetch_directory_or_the_previous_output_by_default(root: Path):
    assert kbld_args((), root, stdin=False) == ["-f", str(root.resolve()), "--build=false"]
    assert kbld_args((), root, stdin=True) == ["-f", "-", "--build=false"]


def test_kbld_paths_are_absolute_so_none_is_an_option_or_a_url(root: Path):
    tree(root, {"-x.yml": "", "--build=true": "", "https:/x.example/y.yml": "", "config/a.yml": ""})
    paths = ("-", "./-", "-x.yml", "--build=true", "https://x.example/y.yml", "config")
    assert kbld_args(paths, root, stdin=True) == [
        *("-f", "-"),
        *("-f", str(root.resolve() / "-")),
        *("-f", str(root.resolve() / "-x.yml")),
        *("-f", str(root.resolve() / "--build=true")),
        *("-f", str(root.resolve() / "https:/x.example/y.yml")),
        *("-f", str(root.resolve() / "config")),
        "--build=false",
    ]


def test_absolute_paths_are_read_within_the_fetch_directory_as_kapp_controller_reads_them(root: Path):
    """kapp-controller's ScopedPath joins a path to the fetch directory: `/service` is its `service`, never the
    machine's; `a/../b` is `b`."""
    tree(root, {"service/a.yml": "", "b.yml": ""})
    base = root.resolve()
    assert kbld_args(("/service", "/service/a.yml", "a/../b.yml", "/"), root, stdin=False) == [
        *("-f", str(base / "service")),
        *("-f", str(base / "service/a.yml")),
        *("-f", str(base / "b.yml")),
        *("-f", str(base)),
        "--build=false",
    ]
    assert kbld_args(("/etc/hosts",), root, stdin=False)[1] == str(base / "etc/hosts")


def test_kbld_runs_in_the_fetch_directory_with_the_scrubbed_environment(
    tmp_path: Path, root: Path, monkeypatch: pytest.MonkeyPatch
):
    fake(tmp_path, monkeypatch, "kbld")
    monkeypatch.setenv("HTTPS_PROXY", "http://user:secret@proxy.example:3128")
    tree(root, {".imgpkg/images.yml": "kind: ImagesLock\n"})
    ran = run_template((TemplateStep(TemplateTool.KBLD, paths=(".imgpkg/images.yml",)),), root)
    assert ran["args"] == ["-f", str((root / ".imgpkg/images.yml").resolve()), "--build=false"]
    assert ran["cwd"] == str(root) and ran["proxy"] == "http://proxy.example:3128"
