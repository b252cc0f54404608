"""`app-group deploy|delete`, compared with the real kapp where kapp does what its help says.

kapp (at the commit docs/compatibility.md names) deletes the apps `app-group deploy` has just deployed (it inverts
the "no longer in the directory" test); kapply deletes only the group's apps whose subdirectory is gone, which the
kapply-only test below checks."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.compat.harness import Harness

pytestmark = pytest.mark.compat


def config_map(name: str) -> str:
    return f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}}}\ndata: {{k: v}}\n"


@pytest.fixture
def directory(tmp_path: Path) -> Path:
    for sub in ("b", "a"):
        (tmp_path / sub).mkdir()
        (tmp_path / sub / "cm.yml").write_text(config_map(f"cm-{sub}"))
    (tmp_path / "not-a-directory.yml").write_text(config_map("ignored"))
    return tmp_path


def test_diff_run_shows_each_app_in_directory_order_and_the_highest_exit_status(both: Harness, directory: Path):
    pair = both.run(
        "app-group", "deploy", "-g", "grp", "-d", str(directory), "-n", "{ns}", "--diff-run", "--diff-exit-status"
    )
    both.same(pair)
    assert pair.kapply.code == 3
    assert pair.kapply.stdout.index("app 'grp-a'") < pair.kapply.stdout.index("app 'grp-b'")


def test_delete_deletes_every_app_of_the_group_and_nothing_else(both: Harness):
    for name, extra in (("grp-a", ("--labels", "kapp.k14s.io/app-group=grp")), ("other", ())):
        for result in both.run(
            "deploy", "-a", name, "-n", "{ns}", "-f", "-", "-y", *extra, input=config_map(f"cm-{name}")
        ):
            assert result.code == 0, result.output
    pair = both.run("app-group", "delete", "-g", "grp", "-n", "{ns}", "-y")
    both.same(pair, exact=False)  # kapp ran first: its objects are older
    assert pair.kapply.code == 0
    both.same_objects()
    left = both.objects("kapply")
    assert "ConfigMap/other" in left and "ConfigMap/grp-a" not in left


def test_missing_group_or_directory_fails_alike(both: Harness, directory: Path):
    both.same(both.run("app-group", "deploy", "-d", str(directory), "-n", "{ns}"))
    both.same(both.run("app-group", "deploy", "-g", "grp", "-d", str(directory / "missing"), "-n", "{ns}"))


def test_deploy_labels_each_app_and_deletes_only_apps_whose_directory_is_gone(both: Harness, directory: Path):
    deploy = ("app-group", "deploy", "-g", "grp", "-d", str(directory), "-n", "{ns}", "-y")
    first = both.run_one("kapply", deploy)
    assert first.code == 0, first.output
    records = both.objects("kapply")
    for app in ("grp-a", "grp-b"):
        assert records[f"ConfigMap/{app}"]["metadata"]["labels"]["kapp.k14s.io/app-group"] == "grp"
    assert {"ConfigMap/cm-a", "ConfigMap/cm-b"} <= set(records)

    (directory / "b" / "cm.yml").unlink()
    (directory / "b").rmdir()
    second = both.run_one("kapply", deploy)
    assert second.code == 0, second.output
    assert "--- deleting app 'grp-b'" in second.stdout
    left = both.objects("kapply")
    assert "ConfigMap/cm-a" in left and "ConfigMap/grp-a" in left
    assert "ConfigMap/cm-b" not in left and "ConfigMap/grp-b" not in left
