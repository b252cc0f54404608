"""`--diff-anchored` (`--anchored` for `tools diff`): the anchored line diff kapp uses for a resource over 500 lines,
compared with the real kapp byte for byte (offline with `tools diff`, then on the cluster with deploy and delete)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from tests.compat.harness import Harness

pytestmark = pytest.mark.compat


def config_map(name: str, lines: list[str], namespace: str = "default") -> str:
    body = "".join(f"    {line}\n" for line in lines)
    return (
        f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: {namespace}\ndata:\n  big: |\n{body}"
    )


def edited(lines: list[str], seed: int) -> list[str]:
    """lines with a block moved, a line changed, lines removed, repeated lines and a copy of an old line added."""
    rng = random.Random(seed)
    new = list(lines)
    start = rng.randrange(len(new) - 40)
    block = new[start : start + 20]
    del new[start : start + 20]
    at = rng.randrange(len(new))
    new[at:at] = block
    new[rng.randrange(len(new))] = "changed"
    at = rng.randrange(len(new))
    new[at:at] = ["repeated"] * 4 + [lines[10]]
    at = rng.randrange(len(new) - 10)
    del new[at : at + 5]
    return new


OLD = [f"line {i}" for i in range(700)]
BRACES = ["{", "}", "", "key: value"] * 150 + [f"unique {i}" for i in range(100)]


@pytest.fixture
def files(tmp_path: Path) -> Path:
    (tmp_path / "old.yml").write_text(config_map("big", OLD))
    (tmp_path / "new.yml").write_text(config_map("big", edited(OLD, 1)))
    shuffled = list(BRACES)
    random.Random(2).shuffle(shuffled)
    (tmp_path / "old-braces.yml").write_text(config_map("braces", shuffled))
    (tmp_path / "new-braces.yml").write_text(config_map("braces", edited(shuffled, 3)))
    (tmp_path / "small-old.yml").write_text(config_map("small", OLD[:100]))
    (tmp_path / "small-new.yml").write_text(config_map("small", edited(OLD[:100], 4)))
    return tmp_path


@pytest.mark.parametrize(
    "extra", [(), ("--context=5",), ("--context=-1",), ("--context=0",), ("--line-numbers=false",)]
)
@pytest.mark.parametrize("name", ["", "-braces"])
def test_tools_diff_anchored_shows_what_kapp_does(both: Harness, files: Path, name: str, extra: tuple[str, ...]):
    new, old = files / f"new{name}.yml", files / f"old{name}.yml"
    both.same(both.run("tools", "diff", "-f", str(new), "--file2", str(old), "--anchored", "-c", *extra))


def test_tools_diff_anchored_on_a_created_and_a_deleted_resource(both: Harness, files: Path):
    new, old = files / "new.yml", files / "old-braces.yml"
    both.same(both.run("tools", "diff", "-f", str(new), "--file2", str(old), "--anchored", "-c"))


def test_tools_diff_anchored_leaves_a_resource_of_500_lines_or_fewer_to_the_ordinary_diff(both: Harness, files: Path):
    new, old = files / "small-new.yml", files / "small-old.yml"
    pair = both.run("tools", "diff", "-f", str(new), "--file2", str(old), "--anchored", "-c", "--context=-1")
    both.same(pair)
    plain = both.run("tools", "diff", "-f", str(new), "--file2", str(old), "-c", "--context=-1")
    assert plain.kapply.stdout == pair.kapply.stdout


def test_deploy_and_delete_with_diff_anchored_show_what_kapp_does(both: Harness):
    for result in both.run(
        "deploy", "-a", "anchored", "-n", "{ns}", "-f", "-", "-y", input=config_map("big", OLD, "{ns}")
    ):
        assert result.code == 0, result.output
    new = config_map("big", edited(OLD, 5), "{ns}")
    pair = both.run("deploy", "-a", "anchored", "-n", "{ns}", "-f", "-", "-y", "-c", "--diff-anchored", input=new)
    both.same(pair, exact=False)  # kapp ran first: its objects are older
    assert pair.kapply.code == 0
    assert "  ...\n" in pair.kapply.stdout
    both.same_objects()
    # a deleted resource's lines are all removed either way (and delete -c shows the live object, where kapply's
    # differs from kapp's: its field manager); the flag is accepted alike
    pair = both.run("delete", "-a", "anchored", "-n", "{ns}", "--diff-anchored", "-y")
    both.same(pair, exact=False)
    assert pair.kapply.code == 0


def test_app_group_deploy_with_diff_anchored_shows_what_kapp_does(both: Harness, tmp_path: Path):
    (tmp_path / "big").mkdir()
    manifest = tmp_path / "big" / "cm.yml"
    group = ("app-group", "deploy", "-g", "grp", "-d", str(tmp_path), "-n", "{ns}")
    for tool in ("kapp", "kapply"):  # each tool's namespace in the manifest
        manifest.write_text(both.fill(config_map("big", OLD, "{ns}"), tool))
        # deployed as the group's app (kapp's app-group deploy would delete the app it has just deployed)
        deploy = ["deploy", "-a", "grp-big", "-n", "{ns}", "-f", str(manifest), "-y"]
        assert both.run_one(tool, [*deploy, "--labels", "kapp.k14s.io/app-group=grp"]).code == 0
    outputs = []
    for tool in ("kapp", "kapply"):
        manifest.write_text(both.fill(config_map("big", edited(OLD, 6), "{ns}"), tool))
        outputs.append(both.run_one(tool, [*group, "-c", "--diff-anchored", "--diff-run"]))
    # kapp then also deletes the app it has just deployed (see test_app_group): compare the update's diff
    updates = [both.normalize(r.stdout, r.tool) for r in outputs]
    updates = [text[text.index("@@ update") :] for text in updates]
    updates = [text[: text.index("\nChanges\n")] for text in updates]
    assert updates[0] == updates[1]
    assert outputs[1].code == 0 and "  ...\n" in updates[1]
