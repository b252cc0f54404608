"""A resource another app owns is refused naming that app (or only its label, when no app of the app namespace has
it), and a new app whose namespace does not exist fails before the plan is shown, as kapp's do."""

from __future__ import annotations

import pytest

from tests.compat.harness import Harness

pytestmark = pytest.mark.compat


def config_map(name: str, namespace: str = "") -> str:
    where = f", namespace: {namespace}" if namespace else ""
    return f"---\napiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}{where}}}\ndata: {{k: v}}\n"


def test_a_resource_of_another_app_is_refused_naming_the_app(both: Harness):
    for result in both.run("deploy", "-a", "owner", "-n", "{ns}", "-f", "-", "-y", input=config_map("shared")):
        assert result.code == 0, result.output
    pair = both.run("deploy", "-a", "thief", "-n", "{ns}", "-f", "-", "-y", input=config_map("shared"))
    both.same(pair)
    assert pair.kapply.code == 1
    assert "is already associated with a different app 'owner' namespace: " in pair.kapply.stderr


def test_an_owner_outside_the_app_namespace_is_named_by_its_label(both: Harness):
    both.namespaces.new()
    for result in both.run("deploy", "-a", "owner", "-n", "{ns2}", "-f", "-", "-y", input=config_map("shared")):
        assert result.code == 0, result.output
    pair = both.run("deploy", "-a", "thief", "-n", "{ns}", "-f", "-", "-y", input=config_map("shared", "{ns2}"))
    both.same(pair)
    assert "is already associated with a different label 'kapp.k14s.io/app=" in pair.kapply.stderr


def test_a_missing_app_namespace_fails_before_the_plan(both: Harness):
    pair = both.run("deploy", "-a", "app", "-n", "kapply-no-such-namespace", "-f", "-", "-y", input=config_map("x"))
    both.same(pair)
    assert pair.kapply.code == 1 and "Changes" not in pair.kapply.stdout
    pair = both.run(
        "deploy",
        "-a",
        "app",
        "-n",
        "{ns}",
        "--app-namespace",
        "kapply-no-such-namespace",
        "-f",
        "-",
        "-y",
        input=config_map("x"),
    )
    both.same(pair)


def test_a_diff_run_in_a_missing_namespace_shows_the_plan(both: Harness):
    pair = both.run(
        "deploy", "-a", "app", "-n", "kapply-no-such-namespace", "-f", "-", "--diff-run", input=config_map("x")
    )
    both.same(pair)
    assert pair.kapply.code == 0
