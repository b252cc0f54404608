"""`label` and `rename`, compared with the real kapp: what they print, the confirmation, where the record ends up."""

from __future__ import annotations

import json

import pytest

from tests.compat.harness import TOOLS, Harness

pytestmark = pytest.mark.compat

CONFIG = """
apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
data: {greeting: hello}
"""


def deploy(both: Harness, *extra: str, env: dict[str, str] | None = None) -> None:
    for result in both.run("deploy", "-a", "app", "-n", "{ns}", "-f", "-", "-y", *extra, input=CONFIG, env=env):
        assert result.code == 0, result.output


def same_objects_in(both: Harness, pair: int) -> None:
    seen = [json.dumps(both.objects(tool, pair=pair), indent=1, sort_keys=True) for tool in TOOLS]
    assert seen[0] == seen[1]


@pytest.mark.parametrize("mode", [(), ("--tty",), ("--json",)])
def test_label_prints_the_apps_label_selector(both: Harness, mode: tuple[str, ...]):
    deploy(both)
    pair = both.run("label", "-a", "app", "-n", "{ns}", *mode)
    if "--json" in mode:
        both.same_json(pair)
    else:
        both.same(pair)
    assert pair.kapply.stdout.rstrip("\n").endswith(("Succeeded", "")) and "kapp.k14s.io/app=" in pair.kapply.stdout


def test_label_of_a_missing_app_fails_alike(both: Harness):
    both.same(both.run("label", "-a", "nope", "-n", "{ns}", "--tty"))


def test_rename_needs_a_new_name_or_namespace(both: Harness):
    deploy(both)
    both.same(both.run("rename", "-a", "app", "-n", "{ns}", "--tty"))


def test_rename_of_a_missing_app_fails_alike(both: Harness):
    both.same(both.run("rename", "-a", "nope", "-n", "{ns}", "--new-name", "x", "--tty"))


def test_rename_asks_first_and_stops_on_no(both: Harness):
    deploy(both)
    pair = both.run("rename", "-a", "app", "-n", "{ns}", "--new-name", "renamed", "--tty", input="n\n")
    both.same(pair, stdout=False)  # kapp echoes the answer it read after the question; kapply does not (confirm())
    assert all("Continue? [yN]: " in result.stdout for result in pair)
    both.same_objects()


@pytest.mark.parametrize("tty", ["--tty", "--tty=false"])
def test_rename_moves_the_record_and_keeps_the_resources(both: Harness, tty: str):
    deploy(both)
    both.same(both.run("rename", "-a", "app", "-n", "{ns}", "--new-name", "renamed", tty, "-y"))
    both.same_objects()
    both.same(both.run("inspect", "-a", "renamed", "-n", "{ns}", "--tty"), exact=False)
    both.same(both.run("ls", "-n", "{ns}", "--tty"), exact=False)


def test_rename_into_another_namespace(both: Harness):
    both.namespaces.new()
    deploy(both)
    both.same(both.run("rename", "-a", "app", "-n", "{ns}", "--new-namespace", "{ns2}", "-y", "--tty"))
    both.same_objects()
    same_objects_in(both, 1)
    both.same(both.run("ls", "-n", "{ns2}", "--tty"), exact=False)


def test_rename_of_a_fully_qualified_record_keeps_it_qualified(both: Harness):
    deploy(both, env={"KAPP_FQ_CONFIGMAP_NAMES": "true"})
    both.same(both.run("rename", "-a", "app", "-n", "{ns}", "--new-name", "renamed", "-y"))
    both.same_objects()


def test_rename_with_fq_names_turned_on_qualifies_the_record(both: Harness):
    deploy(both)
    pair = both.run(
        "rename", "-a", "app", "-n", "{ns}", "--new-name", "renamed", "-y", env={"KAPP_FQ_CONFIGMAP_NAMES": "TRUE"}
    )
    both.same(pair)
    both.same_objects()


def test_rename_moves_a_record_from_its_app_namespace_to_the_namespace_flags(both: Harness):
    """kapp's quirk: without --new-namespace the record goes to -n's namespace, not back to --app-namespace's."""
    both.namespaces.new()
    deploy(both, "--app-namespace", "{ns2}")
    pair = both.run(
        "rename", "-a", "app", "-n", "{ns}", "--app-namespace", "{ns2}", "--new-name", "moved", "-y", "--tty"
    )
    both.same(pair)
    both.same_objects()
    same_objects_in(both, 1)


def test_rename_onto_an_existing_app_fails_and_keeps_both(both: Harness):
    deploy(both)
    for result in both.run(
        "deploy", "-a", "other", "-n", "{ns}", "-f", "-", "-y", input=CONFIG.replace("settings", "x")
    ):
        assert result.code == 0, result.output
    pair = both.run("rename", "-a", "app", "-n", "{ns}", "--new-name", "other", "-y")
    assert pair.kapp.code == pair.kapply.code == 1
    assert pair.kapp.stderr.startswith("kapp: Error: Creating app:")
    assert pair.kapply.stderr.startswith("kapply: Error: Creating app:")
    both.same_objects()
