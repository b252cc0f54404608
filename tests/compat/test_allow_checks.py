"""Client-side allowing (`--allow-check`, `--allow-ns`, `--allow-all-ns`, `--allow-cluster`): kapp shows the plan, then
refuses resources outside the allowed namespaces or at cluster level, before anything is applied."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.compat.harness import DEPLOY_STDIN, Harness

pytestmark = pytest.mark.compat


def config_map(name: str, namespace: str = "") -> str:
    where = f", namespace: {namespace}" if namespace else ""
    return f"---\napiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}{where}}}\ndata: {{k: v}}\n"


NAMESPACE = "---\napiVersion: v1\nkind: Namespace\nmetadata: {name: kapply-allow-never-created}\n"


@pytest.fixture
def other(both: Harness) -> str:
    both.namespaces.new()
    return "{ns2}"


def test_resources_outside_the_allowed_namespaces_are_refused_after_the_plan(both: Harness, other: str):
    config = config_map("here") + config_map("there", other) + NAMESPACE
    pair = both.run(*DEPLOY_STDIN, "-y", "--allow-check", input=config)
    both.same(pair)
    assert pair.kapply.code == 1 and "is outside of allowed namespaces" in pair.kapply.stderr
    assert (
        "Cluster level resource 'namespace/kapply-allow-never-created (v1) cluster' is not allowed"
        in pair.kapply.stderr
    )
    assert both.objects("kapply") == {}  # kapp leaves the new app's record behind: kapply writes nothing


@pytest.mark.parametrize(
    "flags",
    [
        ("--allow-ns", "{ns2}"),
        ("--allow-all-ns",),
        ("--allow-ns", "{ns2}", "--allow-all-ns"),  # kapp: --allow-all-ns counts only without --allow-ns
        ("--allow-ns", "elsewhere", "--allow-all-ns"),
        ("--into-ns", "{ns2}"),
        ("--map-ns", "{ns}={ns2}", "--map-ns", "{ns2}={ns2}"),
    ],
)
def test_what_each_flag_allows(both: Harness, other: str, flags: tuple[str, ...]):
    config = config_map("here") + config_map("there", other)
    pair = both.run(*DEPLOY_STDIN, "--diff-run", "--allow-check", *flags, input=config)
    both.same(pair)


def test_cluster_level_resources_with_allow_cluster(both: Harness):
    pair = both.run(
        *DEPLOY_STDIN, "--diff-run", "--allow-check", "--allow-cluster", input=config_map("here") + NAMESPACE
    )
    both.same(pair)
    assert pair.kapply.code == 0


def test_without_allow_check_the_flags_do_nothing(both: Harness, other: str):
    pair = both.run(
        *DEPLOY_STDIN, "-y", "--allow-ns", "elsewhere", input=config_map("here") + config_map("there", other)
    )
    both.same(pair, exact=False)
    assert pair.kapply.code == 0
    both.same_objects()


def test_app_group_deploy_checks_each_app(both: Harness, tmp_path: Path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "cm.yml").write_text(config_map("in-a") + config_map("out", "kapply-allow-elsewhere"))
    pair = both.run("app-group", "deploy", "-g", "grp", "-d", str(tmp_path), "-n", "{ns}", "-y", "--allow-check")
    both.same(pair)
    assert pair.kapply.code == 1 and "is outside of allowed namespaces" in pair.kapply.stderr
