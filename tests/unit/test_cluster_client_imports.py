"""The CLI's short commands talk to the cluster without importing aiohttp (~90 ms of a ~0.35 s no-change redeploy:
bench/why.md, "Start-up: the HTTP transport"): the cluster client's HTTP is kapply.transport (h11). aiohttp stays
for the registry and HTTP-fetch clients and the servers, which import it themselves."""

import subprocess
import sys

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


def _imported_after(modules: tuple[str, ...]) -> set[str]:
    code = "import sys\n" + "".join(f"import {m}\n" for m in modules) + "print('\\n'.join(sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    return set(out.split())


def test_the_cli_path_to_the_cluster_leaves_aiohttp_unimported() -> None:
    imported = _imported_after(PATH_MODULES)
    assert {"kapply.transport", "h11"} <= imported
    assert sorted(m for m in imported if m.split(".")[0] in {"aiohttp", "yarl", "multidict"}) == []
    assert "kapply.http" not in imported
