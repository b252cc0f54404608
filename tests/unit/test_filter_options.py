"""kapp's filter, patch, ignored-change and exit-early flags, from the command line to the deploy and delete
options (the behaviour is tested where it lives: test_change_filter, test_apply_loop_failures, and the compat
tests)."""

from __future__ import annotations

import pytest

from kapply.api import delete_options, deploy_options
from kapply.cli.command import Args, resolve
from kapply.cli.tree import PROGRAM, global_flags, tree
from kapply.delete import DeleteOptions
from kapply.diff.filter import FilterError


def args(*argv: str) -> Args:
    found = resolve(tree(), argv, global_flags(), PROGRAM)
    assert found is not None
    return found


def test_deploy_flags_reach_the_deploy_options():
    parsed = args(
        "deploy", "-a", "x", "-p", "--filter-kind", "ConfigMap", "--diff-filter", '{"ops":["update"]}',
        "--apply-ignored", "--wait-ignored", "--exit-early-on-apply-error=false", "--exit-early-on-wait-error=false",
    )  # fmt: skip
    options = deploy_options(parsed.parsed.flags)
    assert options.patch and options.apply.ignored and options.wait.ignored
    assert not options.apply.exit_early and not options.wait.exit_early
    assert options.resource_filter is not None and options.resource_filter.kinds == ("ConfigMap",)
    assert options.change_filter is not None and options.change_filter.ops == ("update",)


def test_without_the_flags_deploy_keeps_kapps_defaults():
    options = deploy_options(args("deploy", "-a", "x").parsed.flags)
    assert not options.patch and options.resource_filter is None and options.change_filter is None
    assert not options.apply.ignored and not options.wait.ignored
    assert options.apply.exit_early and options.wait.exit_early
    assert deploy_options({}) == options  # as the controller builds them from no rawOptions


def test_bad_filters_are_refused_when_the_options_are_built():
    with pytest.raises(FilterError, match="unexpected end of JSON input"):
        deploy_options(args("deploy", "-a", "x", "--diff-filter", "{").parsed.flags)
    with pytest.raises(FilterError, match="Expected age filter"):
        deploy_options(args("deploy", "-a", "x", "--filter-age", "1d").parsed.flags)


def test_delete_waits_on_ignored_changes_by_default_as_kapp():
    assert DeleteOptions().wait.ignored
    options = delete_options(args("delete", "-a", "x").parsed.flags)
    assert options.wait.ignored and not options.apply.ignored
    assert delete_options({}) == options == DeleteOptions()  # as the controller builds them from no rawOptions


def test_app_group_deploy_has_delete_copies_of_the_apply_and_wait_flags():
    parsed = args(
        "app-group", "deploy", "-g", "g", "--directory", ".", "--delete-apply-ignored", "--delete-wait-ignored=false",
        "--delete-exit-early-on-apply-error=false", "--delete-exit-early-on-wait-error=false",
    )  # fmt: skip
    deleting = delete_options(parsed.parsed.flags, "delete-")
    apply, wait = deleting.apply, deleting.wait
    assert apply.ignored and not apply.exit_early and not wait.exit_early and not wait.ignored
    deploying = deploy_options(parsed.parsed.flags)
    assert deploying.wait.exit_early and not deploying.wait.ignored
