"""App records are never taken over (kapp's "disallowed labels" error, before anything is applied; kapp itself
leaves the new app's record behind, kapply creates nothing), and delete's exit statuses are kapp's.

Apps get names of their own per test: a missing app's message names the namespaces where an app of that name exists
(`hint: found app ... in other namespaces`), and the namespaces other tests leave (being deleted) must not show there.
"""

from __future__ import annotations

import uuid

import pytest

from tests.compat.harness import Harness

pytestmark = pytest.mark.compat


def config_map(name: str) -> str:
    return f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}}}\ndata: {{k: v}}\n"


def unique(name: str) -> str:
    """An app name no other test uses."""
    return f"{name}-{uuid.uuid4().hex[:6]}"


def test_a_resource_named_like_the_new_apps_record_is_refused(both: Harness):
    app = unique("app1")
    pair = both.run("deploy", "-a", app, "-n", "{ns}", "-f", "-", "-y", input=config_map(app))
    both.same(pair)
    assert pair.kapply.code == 1 and "has a disallowed label 'kapp.k14s.io/is-app'" in pair.kapply.stderr
    assert both.objects("kapply") == {}


def test_another_apps_record_is_refused(both: Harness):
    first, second = unique("first"), unique("second")
    for result in both.run("deploy", "-a", first, "-n", "{ns}", "-f", "-", "-y", input=config_map("cm")):
        assert result.code == 0, result.output
    pair = both.run("deploy", "-a", second, "-n", "{ns}", "-f", "-", "-y", input=config_map(first))
    both.same(pair)
    assert pair.kapply.code == 1
    record = both.objects("kapply")[f"ConfigMap/{first}"]
    assert "kapp.k14s.io/is-app" in record["metadata"]["labels"]


@pytest.mark.parametrize(
    "flags", [("--diff-run", "--diff-exit-status"), ("-y", "--apply-exit-status"), ("-y", "--diff-exit-status")]
)
def test_delete_exit_statuses_are_kapps(both: Harness, flags: tuple[str, ...]):
    app = unique("app")
    for result in both.run("deploy", "-a", app, "-n", "{ns}", "-f", "-", "-y", input=config_map("cm")):
        assert result.code == 0, result.output
    pair = both.run("delete", "-a", app, "-n", "{ns}", *flags)
    both.same(pair, exact=False)
    again = both.run("delete", "-a", app, "-n", "{ns}", *flags)
    both.same(again, exact=False)
