"""What a no-change redeploy imports stays cut (bench/why.md, issue 33): the modules that only run when a deploy or
delete applies something (the app's hold, renames, the apply loop and what only it uses, the progress of an API
caller that gives none), the delete pipeline, and the `--allow-check` rules are imported where they run, not when
the command's modules are; the built-in config is read without importlib.resources."""

import os
import subprocess
import sys

import pytest

from tests.unit.test_tls_resumption import kubeconfig

# What `kapply deploy` imports before it plans: the CLI, the deploy command, the public API and the deploy pipeline.
COMMAND_MODULES = ("kapply.cli.main", "kapply.cli.deploy", "kapply.api", "kapply.deploy")

LAZY = (
    "kapply.app.lock",
    "kapply.app.rename",
    "kapply.apply.loop",
    "kapply.apply.execute",
    "kapply.apply.observe",
    "kapply.apply.verdict",
    "kapply.apply.progress",
    "kapply.delete",
    "kapply.resources.allow",
)


def imported_after(modules: tuple[str, ...]) -> set[str]:
    """The modules a fresh interpreter has imported after importing `modules` (this process has imported more)."""
    code = "import sys\n" + "".join(f"import {m}\n" for m in modules) + "print('\\n'.join(sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    return set(out.split())


def test_a_deploys_modules_leave_the_apply_path_unimported():
    imported = imported_after(COMMAND_MODULES)
    assert "kapply.deploy" in imported
    assert sorted(imported & set(LAZY)) == []


# What a client imports only where a call uses it: `kapply inspect`, `ls`, `delete` and `app-change ls` import the API
# but plan no deploy.
PLANNING = (
    "kapply.deploy",
    "kapply.delete",
    "kapply.app.history",
    "kapply.diff.change",
    "kapply.diff.ghost",
    "kapply.diff.attribution",
    "kapply.config.config",
    "kapply.graph",
    "kapply.apply.planning",
)


def test_the_api_imports_no_planning_code():
    imported = imported_after(("kapply.api",))
    assert sorted(imported & set(PLANNING)) == []


# What `inspect`, `ls` and `app-change ls` import to show resources, apps and their ages: no planning code (the history
# of app changes, one module, is what `app-change ls` lists), not the Changes table that brings the planning code back,
# and the Config's matchers and ytt only where a wait rule uses them.
SHOWING = (
    "kapply.cli.main",
    "kapply.cli.inspect",
    "kapply.cli.list_apps",
    "kapply.cli.app_change",
    "kapply.ui.resources",
    "kapply.ui.apps",
    "kapply.ui.app_status",
)


def test_showing_resources_and_apps_imports_no_planning_code():
    imported = imported_after(SHOWING)
    assert "kapply.apply.waiters.registry" in imported  # the resources' states are shown with the waiters
    unwanted = {*PLANNING, "kapply.ui.changes", "kapply.config.matchers", "kapply.config.ytt"} - {"kapply.app.history"}
    assert sorted(imported & unwanted) == []


def test_the_built_in_config_loads_without_importlib_resources():
    imported = imported_after(("kapply.config.default; kapply.config.default.default_config()",))
    assert sorted(imported & {"importlib.resources", "zipfile"}) == []


def test_the_lazy_modules_import_on_their_own():
    assert set(LAZY) <= imported_after(LAZY)


def test_deploy_options_without_allow_check_leave_its_rules_unimported():
    imported = imported_after(("kapply.api; kapply.api.deploy_options({})",))
    assert "kapply.resources.allow" not in imported


def test_the_api_exports_what_it_imports_when_asked():
    import kapply.api
    import kapply.delete
    import kapply.deploy
    import kapply.diff.drift
    import kapply.diff.fields

    assert kapply.api.DeleteOptions is kapply.delete.DeleteOptions
    assert (kapply.api.DeployOptions, kapply.api.Plan) == (kapply.deploy.DeployOptions, kapply.deploy.Plan)
    assert (kapply.api.DriftPolicy, kapply.api.FieldPath) == (
        kapply.diff.drift.DriftPolicy,
        kapply.diff.fields.FieldPath,
    )
    with pytest.raises(AttributeError, match="no attribute 'DeletePipeline'"):
        kapply.api.DeletePipeline  # noqa: B018


# The standard library's HTTP client (urllib.request, and the http.client and email it imports: ~17 ms) is imported
# by a deploy only where a manifest is read from a URL (kapply.resources.remote.fetch).
URL_CLIENT = ("urllib.request", "urllib.error", "http.client", "email.parser")


def test_a_deploy_imports_no_url_client_until_it_reads_a_url():
    imported = imported_after((*COMMAND_MODULES, "kapply.ui.changes", "kapply.resources.manifests"))
    assert sorted(imported & set(URL_CLIENT)) == []


# tempfile (with shutil, random, bz2 and lzma: ~4 ms) is imported where a kubeconfig's client certificate is given
# inline and there are no files in memory (kapply.resources.auth: not Linux), random where a request is retried
# (kapply.resources.cluster.jittered).
ONLY_WHEN_NEEDED = ("tempfile", "shutil", "random")


def test_a_deploy_imports_no_tempfile_or_random_until_it_needs_them():
    imported = imported_after((*COMMAND_MODULES, "kapply.ui.changes", "kapply.resources.auth"))
    assert sorted(imported & set(ONLY_WHEN_NEEDED)) == []


# The line diff (kapply.diff.text_diff, difflib: ~2.7 ms) is imported where a diff is shown
# (kapply.diff.render.hunk): a redeploy with nothing to change shows none.
LINE_DIFF = ("kapply.diff.text_diff", "difflib")


def test_a_deploy_imports_no_line_diff_until_it_shows_one():
    imported = imported_after((*COMMAND_MODULES, "kapply.ui.changes"))
    assert sorted(imported & set(LINE_DIFF)) == []


@pytest.mark.skipif(not hasattr(os, "memfd_create"), reason="files in memory are Linux's")
def test_a_client_certificate_given_inline_imports_no_tempfile(pki, tmp_path):
    path = kubeconfig(tmp_path / "config", 1, pki)
    load = f"kapply.resources.auth.ssl_context(k.load(k.KubeconfigFlags(path={str(path)!r})))"
    imported = imported_after((f"kapply.resources.auth, kapply.resources.kubeconfig as k; {load}",))
    assert sorted(imported & set(ONLY_WHEN_NEEDED)) == []
