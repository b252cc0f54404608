"""`--prev-app`: a deploy under a new name takes over the record of the app's previous name (kapp renames it), and a
delete falls back to the previous name; compared with the real kapp.

Deliberate difference (not compared here): kapp renames the record before it asks to go on, so a deploy the user
declines has renamed it anyway; kapply renames when the deploy runs, so a declined deploy writes nothing."""

from __future__ import annotations

import pytest

from tests.compat.harness import Harness, Pair

pytestmark = pytest.mark.compat

CONFIG = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {greeting: hello}\n"
CHANGED = CONFIG.replace("hello", "hi")


def succeeded(pair: Pair) -> None:
    for result in pair:
        assert result.code == 0, result.output


def deploy(both: Harness, app: str, *flags: str, config: str = CONFIG) -> Pair:
    return both.run("deploy", "-a", app, "-n", "{ns}", "-f", "-", "-y", *flags, input=config)


def test_a_deploy_takes_over_the_previous_apps_record_and_resources(both: Harness):
    succeeded(deploy(both, "prev-one"))
    pair = deploy(both, "next-one", "--prev-app", "prev-one")
    both.same(pair, exact=False)
    succeeded(pair)
    both.same_objects()
    names = set(both.objects("kapply"))
    assert "ConfigMap/next-one" in names and "ConfigMap/prev-one" not in names
    changed = deploy(both, "next-one", "--prev-app", "prev-one", "-c", config=CHANGED)
    both.same(changed, exact=False)
    both.same_objects()


def test_a_missing_previous_app_makes_a_new_app(both: Harness):
    pair = deploy(both, "fresh-app", "--prev-app", "never-was")
    both.same(pair)
    succeeded(pair)
    both.same_objects()


def test_when_both_exist_the_new_name_wins_and_the_previous_app_stays(both: Harness):
    succeeded(deploy(both, "prev-two", config=CONFIG.replace("settings", "other")))
    succeeded(deploy(both, "next-two"))
    pair = deploy(both, "next-two", "--prev-app", "prev-two", config=CHANGED)
    both.same(pair, exact=False)
    both.same_objects()
    assert {"ConfigMap/prev-two", "ConfigMap/next-two"} <= set(both.objects("kapply"))


def test_a_diff_run_that_would_rename_fails_as_kapps_does(both: Harness):
    succeeded(deploy(both, "prev-three"))
    pair = both.run(
        "deploy", "-a", "next-three", "--prev-app", "prev-three", "-n", "{ns}", "-f", "-", "--diff-run", input=CONFIG
    )
    both.same(pair)
    assert pair.kapply.code == 1
    both.same_objects()


def test_delete_falls_back_to_the_previous_app(both: Harness):
    succeeded(deploy(both, "prev-four"))
    pair = both.run("delete", "-a", "next-four", "--prev-app", "prev-four", "-n", "{ns}", "-y")
    both.same(pair, exact=False)
    succeeded(pair)
    both.same_objects()
    assert both.objects("kapply") == {}


def test_delete_of_two_missing_apps_names_both(both: Harness):
    pair = both.run("delete", "-a", "gone-five", "--prev-app", "gone-six", "-n", "{ns}", "-y")
    both.same(pair)
    assert pair.kapply.code == 0
