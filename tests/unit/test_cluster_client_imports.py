"""The CLI's short commands talk to the cluster without importing aiohttp (~90 ms of a ~0.35 s no-change redeploy:
bench/why.md, "Start-up: the HTTP transport"): the cluster client's HTTP is kapply.transport (h11). aiohttp stays
for the registry and HTTP-fetch clients and the servers, which import it themselves."""

from tests.unit.test_startup_imports import imported_after

# `kapply deploy` (and `--diff-run`), `delete` and `inspect`: the CLI, the commands, the pipelines, what they import
# where they apply or delete, and the cluster client
PATH_MODULES = (
    "kapply.cli.main",
    "kapply.cli.deploy",
    "kapply.cli.delete",
    "kapply.cli.inspect",
    "kapply.api",
    "kapply.deploy",
    "kapply.delete",
    "kapply.app.lock",
    "kapply.app.rename",
    "kapply.apply.loop",
    "kapply.apply.execute",
    "kapply.apply.observe",
    "kapply.apply.verdict",
    "kapply.apply.progress",
    "kapply.resources.allow",
    "kapply.resources.cluster",
    "kapply.resources.confined",
)


def test_the_cli_path_to_the_cluster_leaves_aiohttp_unimported() -> None:
    imported = imported_after(PATH_MODULES)
    assert {"kapply.transport", "h11"} <= imported
    assert sorted(m for m in imported if m.split(".")[0] in {"aiohttp", "yarl", "multidict"}) == []
    assert "kapply.http" not in imported
