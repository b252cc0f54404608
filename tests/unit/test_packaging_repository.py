"""A PackageRepository's reconcile, its pure parts: its source as an App fetch step (messages naming the repository's
fields), kapp-controller's stage error texts, paused, the failure backoff, the options of its kapp deploy."""

from __future__ import annotations

import pytest

from kapply.packaging.repository import paused, tool_failure
from kapply.packaging.repository_deploy import repository_delete_options, repository_deploy_options
from kapply.packaging.repository_fetch import RepositoryFetchError, fetch_sources, repository_message
from kapply.packaging.spec import RepositoryFetch, parse_package_repository
from kapply.packaging.timing import retry_delay

SEE = "Error (see .status.usefulErrorMessage for details)"


def source(fetch: dict[str, object]) -> RepositoryFetch:
    return parse_package_repository({"spec": {"fetch": fetch}}).fetch


def test_an_inline_source_is_one_fetch_step_into_the_root() -> None:
    (step,) = fetch_sources(
        source(
            {
                "inline": {
                    "paths": {"packages/a.yml": "x"},
                    "pathsFrom": [{"secretRef": {"name": "s", "directoryPath": "packages"}}],
                }
            }
        )
    )
    assert step.path == "" and step.inline is not None
    assert step.inline.paths == (("packages/a.yml", "x"),)
    assert [(r.kind, r.name, r.directory) for r in step.inline.paths_from] == [("Secret", "s", "packages")]


def test_a_git_source_keeps_its_url_ref_sub_path_and_secret() -> None:
    (step,) = fetch_sources(
        source({"git": {"url": "https://x/r", "ref": "origin/main", "subPath": "sub", "secretRef": {"name": "c"}}})
    )
    assert step.git is not None
    assert (step.git.url, step.git.ref, step.git.sub_path, step.git.secret) == (
        "https://x/r",
        "origin/main",
        "sub",
        "c",
    )


def test_messages_name_the_repositorys_fields() -> None:
    with pytest.raises(RepositoryFetchError) as e:
        fetch_sources(source({"git": {"url": ""}}))
    assert str(e.value) == "Expected spec.fetch.git.url to be non-empty"
    with pytest.raises(RepositoryFetchError, match=r"spec\.fetch\.inline\.pathsFrom\[0\]\.secretRef\.name"):
        fetch_sources(source({"inline": {"pathsFrom": [{"secretRef": {"name": "../x"}}]}}))
    assert repository_message("Expected spec.fetch[0].git.url not to start with '-'") == (
        "Expected spec.fetch.git.url not to start with '-'"
    )


def test_a_tool_that_said_why_points_at_the_useful_error_message() -> None:
    assert tool_failure("Fetching resources: ", "git failed", "fatal: no such repository") == (
        f"Fetching resources: {SEE}",
        "fatal: no such repository",
    )
    assert tool_failure("Fetching resources: ", "Invalid path: ../x", "") == (
        "Fetching resources: Invalid path: ../x",
        "Fetching resources: Invalid path: ../x",
    )


def test_a_paused_repository_says_paused_and_keeps_its_condition() -> None:
    condition = [{"type": "ReconcileSucceeded", "status": "True"}]
    assert paused({"conditions": condition, "observedGeneration": 1}, 2) == {
        "conditions": condition,
        "observedGeneration": 2,
        "friendlyDescription": "Paused",
    }


def test_failures_back_off_two_to_the_failures_up_to_the_sync_period() -> None:
    assert [retry_delay(f, 600.0) for f in (1, 2, 3, 9, 10, 40)] == [2.0, 4.0, 8.0, 512.0, 600.0, 600.0]
    assert retry_delay(5, 30.0) == 30.0


def test_the_deploy_uses_kapp_controllers_options_for_repositories() -> None:
    options = repository_deploy_options()
    assert options.override_ownership and options.allow_empty and options.scope_to_fallback_namespaces
    assert options.app_changes_max_to_keep == 5 and not options.wait.wait and not options.logs
    deleting = repository_delete_options()
    assert not deleting.wait.wait and deleting.scope_to_fallback_namespaces
