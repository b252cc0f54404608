"""`--app-metadata-file-output`: the file holds the app's metadata as kapp writes it (the compact JSON of the record's
`data.spec`, byte for byte once label values, times and names are normalised), in each case kapp writes it: a
first deploy, a deploy with nothing to do, a diff run of a new app, a deploy whose apply fails; and none when the
deploy is declined."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.compat.harness import DEPLOY_STDIN, TOOLS, Harness, Pair

pytestmark = pytest.mark.compat

CONFIG = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {greeting: hello}\n"
SECRET = "---\napiVersion: v1\nkind: Secret\nmetadata: {name: creds}\nstringData: {password: x}\n"
BROKEN = "---\napiVersion: v1\nkind: Service\nmetadata: {name: svc}\nspec: {ports: []}\n"


def deploy(both: Harness, tmp_path: Path, config: str, *flags: str, app: str = "app") -> tuple[Pair, dict[str, str]]:
    pair = Pair(
        *(
            both.run_one(
                tool,
                [
                    "deploy",
                    "-a",
                    app,
                    "-n",
                    "{ns}",
                    "-f",
                    "-",
                    "--app-metadata-file-output",
                    str(tmp_path / tool),
                    *flags,
                ],
                input=config,
            )
            for tool in TOOLS
        )
    )
    files = {tool: both.normalize((tmp_path / tool).read_text(), tool) for tool in TOOLS if (tmp_path / tool).exists()}
    for tool in TOOLS:
        (tmp_path / tool).unlink(missing_ok=True)
    return pair, files


def same_files(files: dict[str, str]) -> None:
    assert set(files) == set(TOOLS)
    assert files["kapp"] == files["kapply"]


def test_the_file_after_deploys_with_and_without_changes(both: Harness, tmp_path: Path):
    pair, files = deploy(both, tmp_path, CONFIG + SECRET, "-y")
    both.same(pair, exact=False)
    same_files(files)
    assert '"successful"' not in files["kapply"]  # kapp writes the change as it began, not as it finished
    pair, files = deploy(both, tmp_path, CONFIG, "-y")  # the Secret goes: usedGKs are the new resources' only
    both.same(pair, exact=False)
    same_files(files)
    assert "Secret" not in files["kapply"]
    pair, files = deploy(both, tmp_path, CONFIG, "-y")  # nothing to do: the record as it is
    both.same(pair, exact=False)
    same_files(files)
    assert '"successful":true' in files["kapply"]


def test_the_file_of_a_diff_run_of_a_new_app(both: Harness, tmp_path: Path):
    pair, files = deploy(both, tmp_path, CONFIG, "--diff-run")
    both.same(pair)
    same_files(files)
    assert files["kapply"].endswith('"usedGKs":[]}')


def test_the_file_after_a_failed_apply(both: Harness, tmp_path: Path):
    pair, files = deploy(both, tmp_path, CONFIG + BROKEN, "-y")
    assert pair.kapp.code == pair.kapply.code == 1
    same_files(files)
    assert "Service" in files["kapply"]


def test_no_file_when_the_deploy_is_declined(both: Harness, tmp_path: Path):
    pair = Pair(
        *(
            both.run_one(
                tool,
                [*DEPLOY_STDIN, "--app-metadata-file-output", str(tmp_path / tool)],
                input=CONFIG,
            )
            for tool in TOOLS
        )
    )
    assert pair.kapp.code == pair.kapply.code == 1
    assert not any((tmp_path / tool).exists() for tool in TOOLS)


def test_a_file_that_cannot_be_written_is_skipped_silently(both: Harness, tmp_path: Path):
    pair = both.run(
        *DEPLOY_STDIN, "-y", "--app-metadata-file-output", str(tmp_path / "missing" / "dir" / "meta.yml"), input=CONFIG
    )
    both.same(pair)
    assert pair.kapply.code == 0
