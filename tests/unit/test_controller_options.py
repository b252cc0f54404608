"""An App's `deploy[].kapp` as deploy options: rawOptions restricted as kapp-controller restricts them (its messages
included), over the controller's defaults."""

from __future__ import annotations

from dataclasses import replace

import pytest

from kapply.controller.options import (
    COMMON,
    CONTROLLER_DEFAULTS,
    DELETE,
    DEPLOY,
    DEPLOY_AND_DELETE,
    DEPLOY_ONLY,
    delete_from_spec,
    from_spec,
    parse_raw_options,
)
from kapply.controller.spec import Deploy
from kapply.delete import DeleteOptions
from kapply.errors import KapplyError
from kapply.flags import Flag


def error_of(raw: list[str], allowed: dict[str, Flag] | None = None) -> str:
    with pytest.raises(KapplyError) as e:
        parse_raw_options(raw, allowed if allowed is not None else DEPLOY)
    return str(e.value)


@pytest.mark.parametrize("option", ["--wait", "wait=false", "-wait=false", "--wait false", "", "--"])
def test_an_option_not_in_name_equals_value_form_is_refused_as_kapp_controller_says(option: str) -> None:
    assert error_of([option]) == f"Expected flag '{option}' to be in '--name=val' format"


@pytest.mark.parametrize("name", ["app", "kubeconfig", "namespace", "file", "yes", "no-such-flag", ""])
def test_a_name_outside_the_allow_list_is_refused_as_kapp_controller_says(name: str) -> None:
    assert error_of([f"--{name}=x"]) == f"Unexpected flag '{name}' specified (either forbidden or unknown)"


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("into-ns", "x"),
        ("map-ns", "a=b"),
        ("labels", "a=b"),
        ("patch", "true"),
        ("logs", "false"),
        ("app-changes-max-to-keep", "1"),
    ],
)
def test_deploy_only_flags_are_refused_for_delete(name: str, value: str) -> None:
    assert name in parse_raw_options([f"--{name}={value}"], DEPLOY)
    assert error_of([f"--{name}={value}"], DELETE) == (
        f"Unexpected flag '{name}' specified (either forbidden or unknown)"
    )


def test_the_allow_lists_are_the_union_of_their_parts() -> None:
    assert DEPLOY.keys() == COMMON.keys() | DEPLOY_AND_DELETE.keys() | DEPLOY_ONLY.keys()
    assert DELETE.keys() == COMMON.keys() | DEPLOY_AND_DELETE.keys()
    assert not DELETE.keys() & DEPLOY_ONLY.keys()


def test_values_are_parsed_by_the_flags_type() -> None:
    values = parse_raw_options(
        [
            "--wait=false",
            "--apply-concurrency=0x10",
            "--apply-timeout=1m30s",
            "--kube-api-qps=2.5",
            "--filter-kind=Deployment,Service",
            '--filter={"and":[]}',
            "--diff-context=3",
        ],
        DEPLOY,
    )
    assert values == {
        "wait": False,
        "apply-concurrency": 16,
        "apply-timeout": 90.0,
        "kube-api-qps": 2.5,
        "filter-kind": ["Deployment", "Service"],
        "filter": '{"and":[]}',
        "diff-context": 3,
    }


def test_a_value_after_the_first_equals_sign_is_kept_whole() -> None:
    assert parse_raw_options(["--map-ns=a=b"], DEPLOY) == {"map-ns": ["a=b"]}


@pytest.mark.parametrize(
    ("option", "message"),
    [
        ("--wait=maybe", "Flag 'wait': strconv.ParseBool: parsing \"maybe\": invalid syntax"),
        ("--apply-concurrency=many", "Flag 'apply-concurrency': strconv.ParseInt: parsing \"many\": invalid syntax"),
        ("--apply-timeout=soon", "Flag 'apply-timeout': time: invalid duration \"soon\""),
        ("--kube-api-qps=fast", "Flag 'kube-api-qps': strconv.ParseFloat: parsing \"fast\": invalid syntax"),
    ],
)
def test_a_value_of_the_wrong_type_is_refused_naming_the_flag(option: str, message: str) -> None:
    assert error_of([option]) == message


def test_list_valued_flags_accumulate_across_occurrences() -> None:
    values = parse_raw_options(["--labels=a=1", "--labels=b=2,c=3", "--filter-ns=x"], DEPLOY)
    assert values == {"labels": ["a=1", "b=2", "c=3"], "filter-ns": ["x"]}


def test_a_repeated_single_valued_flag_keeps_the_last_value() -> None:
    assert parse_raw_options(["--wait=false", "--wait=true"], DEPLOY) == {"wait": True}
    assert parse_raw_options(["--filter=a", "--filter=b"], DEPLOY) == {"filter": "b"}


def test_list_values_split_as_pflag_splits_them() -> None:
    assert parse_raw_options(["--filter-kind=,Deployment,"], DEPLOY) == {"filter-kind": ["", "Deployment", ""]}
    assert parse_raw_options(['--labels="a=b,c",d=e'], DEPLOY) == {"labels": ["a=b,c", "d=e"]}
    assert parse_raw_options(["--filter-kind="], DEPLOY) == {"filter-kind": []}


def test_the_first_bad_option_is_the_one_reported() -> None:
    assert error_of(["--wait=false", "--app=x", "bad"]) == (
        "Unexpected flag 'app' specified (either forbidden or unknown)"
    )


def test_without_options_the_controller_defaults_apply() -> None:
    options, raw = from_spec(Deploy())
    assert raw == CONTROLLER_DEFAULTS == {"app-changes-max-to-keep": 5, "apply-timeout": 300.0}
    assert options.app_changes_max_to_keep == 5
    assert options.apply.timeout == 300.0
    assert options.into_namespace == ""


def test_raw_options_win_over_the_controller_defaults() -> None:
    options, raw = from_spec(Deploy(raw_options=("--app-changes-max-to-keep=20", "--apply-timeout=10m")))
    assert (raw["app-changes-max-to-keep"], raw["apply-timeout"]) == (20, 600.0)
    assert options.app_changes_max_to_keep == 20
    assert options.apply.timeout == 600.0
    assert CONTROLLER_DEFAULTS == {"app-changes-max-to-keep": 5, "apply-timeout": 300.0}  # not changed in place


def test_into_ns_and_map_ns_become_deploy_options() -> None:
    options, raw = from_spec(Deploy(into_ns="target", map_ns=("a=b", "c=d")))
    assert options.into_namespace == "target"
    assert dict(options.namespace_map) == {"a": "b", "c": "d"}
    assert raw["into-ns"] == "target"
    assert raw["map-ns"] == ["a=b", "c=d"]


def test_an_into_ns_raw_option_wins_over_the_spec_field() -> None:
    options, _ = from_spec(Deploy(into_ns="from-field", raw_options=("--into-ns=from-option",)))
    assert options.into_namespace == "from-option"


def test_output_flags_are_returned_as_raw_values() -> None:
    options, raw = from_spec(Deploy(raw_options=("--diff-changes=true", "--diff-run=true")))
    assert raw["diff-changes"] is True
    assert raw["diff-run"] is True
    assert options.diff.run


def test_the_allow_lists_take_each_flags_declaration() -> None:
    assert DEPLOY["wait-timeout"].default == 900.0
    assert parse_raw_options(["--wait-timeout=1m"], DELETE) == {"wait-timeout": 60.0}


def test_delete_raw_options_over_kapps_delete_defaults() -> None:
    defaults = DeleteOptions()
    # the controller's waits look every interval, without the CLI's wake watches
    assert delete_from_spec(Deploy()) == replace(defaults, wait=replace(defaults.wait, wake_on_watch=False))
    assert defaults.wait.wake_on_watch and not from_spec(Deploy())[0].wait.wake_on_watch
    options = delete_from_spec(Deploy(delete_raw_options=("--wait=false", "--apply-ignored=true", "--filter-kind=Pod")))
    assert not options.wait.wait and options.wait.ignored  # kapp's delete waits for ignored changes by default
    assert options.apply.ignored
    assert options.resource_filter is not None and options.resource_filter.kinds == ("Pod",)


def test_a_bad_raw_option_fails_from_spec() -> None:
    with pytest.raises(KapplyError, match="Unexpected flag 'kubeconfig'"):
        from_spec(Deploy(raw_options=("--kubeconfig=/etc/kubeconfig",)))
