"""Reading an App's spec: a full valid spec read into values, and the SpecError message of every way it can be wrong
(the reconcile reports that message as ReconcileFailed)."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from kapply.controller.spec import (
    AppSpec,
    Deploy,
    FetchSource,
    Git,
    Inline,
    SourceRef,
    SpecError,
    TemplateStep,
    TemplateTool,
    ValuesSource,
    parse_spec,
    parsed,
)
from kapply.diff.drift import DriftPolicy
from kapply.objects import Obj

NAME_RULE = "to be a lowercase RFC 1123 subdomain ('a'-'z', '0'-'9', '-' and '.', at most 253 characters), got"


def minimal() -> Obj:
    return {
        "metadata": {"name": "app", "namespace": "ns"},
        "spec": {
            "serviceAccountName": "deployer",
            "fetch": [{"inline": {"paths": {"a.yml": "kind: ConfigMap"}}}],
            "template": [{"ytt": {}}],
            "deploy": [{"kapp": {}}],
        },
    }


def with_spec(change: Callable[[Obj], None]) -> Obj:
    app = minimal()
    change(app["spec"])
    return app


def error_of(app: Obj) -> str:
    with pytest.raises(SpecError) as e:
        parse_spec(app)
    return str(e.value)


def test_a_full_spec_is_read_into_values() -> None:
    app = {
        "metadata": {"name": "app", "namespace": "ns"},
        "spec": {
            "serviceAccountName": "deployer.v1",
            "syncPeriod": "1m30s",
            "paused": True,
            "canceled": False,
            "noopDelete": True,
            "defaultNamespace": "elsewhere",
            "driftPolicy": "warn",
            "fetch": [
                {
                    "path": "config",
                    "inline": {
                        "paths": {"b.yml": "b", "a.yml": "a"},
                        "pathsFrom": [
                            {"secretRef": {"name": "files", "directoryPath": "secret-dir"}},
                            {"configMapRef": {"name": "more-files"}},
                        ],
                    },
                },
                {"git": {"url": "https://example.com/repo.git", "ref": "origin/main", "subPath": "deploy"}},
                {"git": {"url": "ssh://git@example.com/repo.git", "secretRef": {"name": "ssh-key"}}},
            ],
            "template": [
                {
                    "ytt": {
                        "paths": ["config", "1/deploy"],
                        "inline": {"paths": {"overlay.yml": "#@ load('@ytt:overlay', 'overlay')"}},
                        "valuesFrom": [
                            {"secretRef": {"name": "secret-values"}},
                            {"configMapRef": {"name": "cm-values"}},
                            {"path": "values.yml"},
                        ],
                    }
                },
                {"kustomize": {"path": "overlays/prod"}},
                {
                    "helmTemplate": {
                        "path": "chart",
                        "name": "release",
                        "namespace": "release-ns",
                        "valuesFrom": [{"path": "helm-values.yml"}],
                    }
                },
            ],
            "deploy": [
                {
                    "kapp": {
                        "intoNs": "target",
                        "mapNs": ["a=b"],
                        "rawOptions": ["--wait=false"],
                        "delete": {"rawOptions": ["--apply-ignored=true"]},
                        "inspect": {"rawOptions": ["--tree=false"]},
                    }
                }
            ],
        },
    }
    assert parse_spec(app) == AppSpec(
        service_account="deployer.v1",
        fetch=(
            FetchSource(
                "config",
                inline=Inline(
                    paths=(("a.yml", "a"), ("b.yml", "b")),  # sorted by file name
                    paths_from=(SourceRef("Secret", "files", "secret-dir"), SourceRef("ConfigMap", "more-files")),
                ),
            ),
            FetchSource("1", git=Git("https://example.com/repo.git", "origin/main", "deploy")),
            FetchSource("2", git=Git("ssh://git@example.com/repo.git", secret="ssh-key")),
        ),
        template=(
            TemplateStep(
                TemplateTool.YTT,
                paths=("config", "1/deploy"),
                inline=Inline(paths=(("overlay.yml", "#@ load('@ytt:overlay', 'overlay')"),)),
                values_from=(
                    ValuesSource(secret="secret-values"),
                    ValuesSource(config_map="cm-values"),
                    ValuesSource(path="values.yml"),
                ),
            ),
            TemplateStep(TemplateTool.KUSTOMIZE, kustomize_path="overlays/prod"),
            TemplateStep(
                TemplateTool.HELM,
                values_from=(ValuesSource(path="helm-values.yml"),),
                chart_path="chart",
                release_name="release",
                release_namespace="release-ns",
            ),
        ),
        deploy=Deploy(
            into_ns="target",
            map_ns=("a=b",),
            raw_options=("--wait=false",),
            delete_raw_options=("--apply-ignored=true",),
            inspect=True,
            inspect_raw_options=("--tree=false",),
        ),
        sync_period=90.0,
        paused=True,
        canceled=False,
        noop_delete=True,
        default_namespace="elsewhere",
        drift_policy=DriftPolicy.WARN,
    )


def test_a_minimal_spec_takes_the_defaults() -> None:
    spec = parse_spec(minimal())
    assert spec.sync_period is None
    assert spec.drift_policy is DriftPolicy.ENFORCE
    assert (spec.paused, spec.canceled, spec.noop_delete) == (False, False, False)
    assert spec.default_namespace == ""
    assert spec.deploy == Deploy()
    assert spec.fetch == (FetchSource("", inline=Inline(paths=(("a.yml", "kind: ConfigMap"),))),)
    assert spec.template == (TemplateStep(TemplateTool.YTT),)


def test_a_single_fetch_source_is_the_root_and_several_are_numbered_unless_named() -> None:
    one = parse_spec(minimal())
    assert one.fetch[0].path == ""
    many = parse_spec(
        with_spec(lambda s: s.update(fetch=[{"inline": {}}, {"path": "named", "inline": {}}, {"inline": {}}]))
    )
    assert [f.path for f in many.fetch] == ["0", "named", "2"]


@pytest.mark.parametrize(("inspect", "expected"), [({}, True), ({"rawOptions": []}, True), (None, False)])
def test_inspect_is_on_when_present(inspect: Any, expected: bool) -> None:
    app = with_spec(lambda s: s["deploy"][0]["kapp"].update(inspect=inspect))
    assert parse_spec(app).deploy.inspect is expected


@pytest.mark.parametrize(
    ("text", "seconds"), [("30s", 30.0), ("1h", 3600.0), ("1m30s", 90.0), ("500ms", 0.5), ("0", 0.0)]
)
def test_sync_period_is_a_go_duration(text: str, seconds: float) -> None:
    assert parse_spec(with_spec(lambda s: s.update(syncPeriod=text))).sync_period == seconds


@pytest.mark.parametrize("policy", list(DriftPolicy))
def test_every_drift_policy_is_accepted(policy: DriftPolicy) -> None:
    assert parse_spec(with_spec(lambda s: s.update(driftPolicy=policy.value))).drift_policy is policy


def test_an_app_without_a_drift_policy_has_the_controllers_default() -> None:
    """`--default-drift-policy`: the reconciler passes the controller's default."""
    assert parse_spec(minimal(), DriftPolicy.WARN).drift_policy is DriftPolicy.WARN
    written = with_spec(lambda s: s.update(driftPolicy="enforce"))
    assert parse_spec(written, DriftPolicy.WARN).drift_policy is DriftPolicy.ENFORCE
    assert parse_spec(minimal()).drift_policy is DriftPolicy.ENFORCE, "enforce unless told otherwise"


@pytest.mark.parametrize("name", ["a", "deployer", "my-sa.v2", "0abc", "a" * 253, "a-b.c-d"])
def test_valid_names_are_accepted(name: str) -> None:
    assert parse_spec(with_spec(lambda s: s.update(serviceAccountName=name))).service_account == name


# Errors of the spec as a whole.


def test_a_missing_spec_is_refused() -> None:
    assert error_of({"metadata": {"name": "app"}}) == "Expected spec to be present"
    assert error_of({"metadata": {"name": "app"}, "spec": {}}) == "Expected spec to be present"


def test_a_spec_that_is_not_a_map_is_refused() -> None:
    assert error_of({"spec": ["x"]}) == "Expected spec to be a map, got list"


def test_spec_cluster_is_refused() -> None:
    app = with_spec(lambda s: s.update(cluster={"namespace": "x", "kubeconfigSecretRef": {"name": "k"}}))
    assert error_of(app) == (
        "spec.cluster is not supported: kapply deploys to the App's own cluster (docs/reconciler.md)"
    )


@pytest.mark.parametrize("account", [None, "", False, []])
def test_a_missing_service_account_says_so_as_kapp_controller(account: Any) -> None:
    def change(spec: Obj) -> None:
        if account is None:
            del spec["serviceAccountName"]
        else:
            spec["serviceAccountName"] = account

    assert error_of(with_spec(change)) == "Preparing kapp: Expected service account or cluster specified"


@pytest.mark.parametrize(
    ("name", "shown"),
    [
        ("../x", '"../x"'),
        ("A", '"A"'),
        ("a/b", '"a/b"'),
        ("-a", '"-a"'),
        ("a-", '"a-"'),
        ("a..b", '"a..b"'),
        ("a_b", '"a_b"'),
        ("a b", '"a b"'),
        ("a" * 254, '"' + "a" * 80 + '..."'),
    ],
)
def test_a_service_account_that_is_not_a_dns_subdomain_is_refused(name: str, shown: str) -> None:
    app = with_spec(lambda s: s.update(serviceAccountName=name))
    assert error_of(app) == f"Expected spec.serviceAccountName {NAME_RULE} {shown}"


def test_a_service_account_that_is_not_a_string_is_refused() -> None:
    app = with_spec(lambda s: s.update(serviceAccountName=5))
    assert error_of(app) == "Expected spec.serviceAccountName to be a string, got int"


def test_a_sync_period_that_is_not_a_duration_is_refused() -> None:
    app = with_spec(lambda s: s.update(syncPeriod="soon"))
    assert error_of(app) == 'Expected spec.syncPeriod to be a duration: time: invalid duration "soon"'


def test_a_sync_period_that_is_a_number_is_refused() -> None:
    assert error_of(with_spec(lambda s: s.update(syncPeriod=30))) == "Expected spec.syncPeriod to be a string, got int"


@pytest.mark.parametrize("policy", ["ignore", "Enforce", "WARN"])
def test_an_unknown_drift_policy_is_refused(policy: str) -> None:
    app = with_spec(lambda s: s.update(driftPolicy=policy))
    assert error_of(app) == f"Expected spec.driftPolicy to be one of enforce, preserve, warn, got '{policy}'"


@pytest.mark.parametrize("field", ["paused", "canceled", "noopDelete"])
def test_flags_must_be_booleans(field: str) -> None:
    app = with_spec(lambda s: s.update({field: "true"}))
    assert error_of(app) == f"Expected spec.{field} to be a boolean, got str"


def test_default_namespace_must_be_a_string() -> None:
    app = with_spec(lambda s: s.update(defaultNamespace=["ns"]))
    assert error_of(app) == "Expected spec.defaultNamespace to be a string, got list"


# Fetch.


@pytest.mark.parametrize("fetch", [None, []])
def test_no_fetch_option_is_refused(fetch: Any) -> None:
    assert error_of(with_spec(lambda s: s.update(fetch=fetch))) == "Expected at least one fetch option"


def test_fetch_must_be_a_list() -> None:
    app = with_spec(lambda s: s.update(fetch={"inline": {}}))
    assert error_of(app) == "Expected spec.fetch to be a list, got dict"


def test_a_fetch_entry_must_be_a_map() -> None:
    assert error_of(with_spec(lambda s: s.update(fetch=["inline"]))) == "Expected spec.fetch[0] to be a map, got str"


@pytest.mark.parametrize("stage", ["fetch", "template"])
def test_each_stage_has_a_list_of_at_least_one_option_each_a_map(stage: str) -> None:
    """The fetch and template stages read their options by the same rules (_options, _option)."""
    assert error_of(with_spec(lambda s: s.update({stage: []}))) == f"Expected at least one {stage} option"
    assert error_of(with_spec(lambda s: s.update({stage: {}}))) == f"Expected spec.{stage} to be a list, got dict"
    assert error_of(with_spec(lambda s: s.update({stage: [3]}))) == f"Expected spec.{stage}[0] to be a map, got int"


@pytest.mark.parametrize(
    ("entry", "known"),
    [
        ({"svn": {"url": "x"}}, "svn"),
        ({"svn": {}, "path": "x"}, "svn"),
        ({"svn": {}, "sops": {}}, "svn, sops"),
        ({}, "nothing"),
        ({"path": "only-a-path"}, "nothing"),
    ],
)
def test_an_unsupported_fetch_kind_is_refused_naming_what_it_is(entry: Obj, known: str) -> None:
    app = with_spec(lambda s: s.update(fetch=[{"inline": {}}, entry]))
    assert error_of(app) == (
        f"Fetching (1): Unsupported way to fetch templates ({known}; kapply fetches inline, image, http, git, "
        "helmChart, imgpkgBundle)"
    )


@pytest.mark.parametrize("git", [{}, {"url": ""}, {"ref": "main"}])
def test_a_git_fetch_without_url_is_refused(git: Obj) -> None:
    app = with_spec(lambda s: s.update(fetch=[{"git": git}]))
    assert error_of(app) == "Expected spec.fetch[0].git.url to be non-empty"


def test_a_git_secret_name_must_be_a_valid_name() -> None:
    app = with_spec(lambda s: s.update(fetch=[{"git": {"url": "https://x", "secretRef": {"name": "../x"}}}]))
    assert error_of(app) == f'Expected spec.fetch[0].git.secretRef.name {NAME_RULE} "../x"'


def test_a_git_secret_ref_without_a_name_is_refused() -> None:
    app = with_spec(lambda s: s.update(fetch=[{"git": {"url": "https://x", "secretRef": {"key": "x"}}}]))
    assert error_of(app) == "Expected spec.fetch[0].git.secretRef.name to be non-empty"


def test_git_fields_must_be_strings() -> None:
    app = with_spec(lambda s: s.update(fetch=[{"git": {"url": "https://x", "ref": 1}}]))
    assert error_of(app) == "Expected spec.fetch[0].git.ref to be a string, got int"


def test_a_fetch_path_must_be_a_string() -> None:
    app = with_spec(lambda s: s.update(fetch=[{"path": 1, "inline": {}}]))
    assert error_of(app) == "Expected spec.fetch[0].path to be a string, got int"


def test_inline_paths_must_be_a_map_of_strings() -> None:
    not_a_map = with_spec(lambda s: s.update(fetch=[{"inline": {"paths": ["a.yml"]}}]))
    assert error_of(not_a_map) == "Expected spec.fetch[0].inline.paths to be a map, got list"
    not_text = with_spec(lambda s: s.update(fetch=[{"inline": {"paths": {"a.yml": 1}}}]))
    assert error_of(not_text) == "Expected spec.fetch[0].inline.paths[a.yml] to be a string, got int"


def test_inline_paths_from_needs_a_secret_or_config_map() -> None:
    app = with_spec(lambda s: s.update(fetch=[{"inline": {"pathsFrom": [{"name": "x"}]}}]))
    assert error_of(app) == "Expected spec.fetch[0].inline.pathsFrom[0] to have secretRef or configMapRef"


@pytest.mark.parametrize(("ref", "name"), [("secretRef", "A"), ("configMapRef", "a/b"), ("secretRef", "..")])
def test_inline_paths_from_names_must_be_valid_names(ref: str, name: str) -> None:
    app = with_spec(lambda s: s.update(fetch=[{"inline": {"pathsFrom": [{ref: {"name": name}}]}}]))
    assert error_of(app) == f'Expected spec.fetch[0].inline.pathsFrom[0].{ref}.name {NAME_RULE} "{name}"'


def test_inline_paths_from_must_be_a_list() -> None:
    app = with_spec(lambda s: s.update(fetch=[{"inline": {"pathsFrom": {"secretRef": {"name": "x"}}}}]))
    assert error_of(app) == "Expected spec.fetch[0].inline.pathsFrom to be a list, got dict"


# Template.


@pytest.mark.parametrize("template", [None, []])
def test_no_template_option_is_refused(template: Any) -> None:
    assert error_of(with_spec(lambda s: s.update(template=template))) == "Expected at least one template option"


@pytest.mark.parametrize(
    ("entry", "known"), [({"jsonnet": {}}, "jsonnet"), ({"jsonnet": {}, "helm": {}}, "jsonnet, helm"), ({}, "nothing")]
)
def test_an_unsupported_template_kind_is_refused_naming_what_it_is(entry: Obj, known: str) -> None:
    app = with_spec(lambda s: s.update(template=[{"ytt": {}}, entry]))
    assert error_of(app) == (
        f"Templating (1): Unsupported way to template ({known}; "
        "kapply templates with ytt, kustomize, helmTemplate, kbld, sops, cue)"
    )


def test_ytt_paths_must_be_a_list_of_strings() -> None:
    not_a_list = with_spec(lambda s: s.update(template=[{"ytt": {"paths": "config"}}]))
    assert error_of(not_a_list) == "Expected spec.template[0].ytt.paths to be a list, got str"
    not_text = with_spec(lambda s: s.update(template=[{"ytt": {"paths": ["config", 1]}}]))
    assert error_of(not_text) == "Expected spec.template[0].ytt.paths[1] to be a string, got int"


def test_a_template_step_must_be_a_map() -> None:
    app = with_spec(lambda s: s.update(template=[{"ytt": "yes"}]))
    assert error_of(app) == "Expected spec.template[0].ytt to be a map, got str"


def test_values_from_needs_a_secret_config_map_path_or_downward_api() -> None:
    app = with_spec(lambda s: s.update(template=[{"ytt": {"valuesFrom": [{"fieldRef": {}}]}}]))
    assert error_of(app) == (
        "Expected spec.template[0].ytt.valuesFrom[0] to have secretRef, configMapRef, path or downwardAPI"
    )


def test_values_from_names_must_be_valid_names() -> None:
    app = with_spec(lambda s: s.update(template=[{"helmTemplate": {"valuesFrom": [{"configMapRef": {"name": "A"}}]}}]))
    assert error_of(app) == f'Expected spec.template[0].helmTemplate.valuesFrom[0].configMapRef.name {NAME_RULE} "A"'


def test_helm_template_fields_must_be_strings() -> None:
    app = with_spec(lambda s: s.update(template=[{"helmTemplate": {"name": 3}}]))
    assert error_of(app) == "Expected spec.template[0].helmTemplate.name to be a string, got int"


# Deploy.


@pytest.mark.parametrize("deploy", [None, [], [{"kapp": {}}, {"kapp": {}}]])
def test_exactly_one_deploy_option_is_required(deploy: Any) -> None:
    assert error_of(with_spec(lambda s: s.update(deploy=deploy))) == "Expected exactly one deploy option"


def test_deploying_other_than_with_kapp_is_refused() -> None:
    app = with_spec(lambda s: s.update(deploy=[{"helm": {}}]))
    assert error_of(app) == "Deploying: Unsupported way to deploy (kapply deploys with kapp)"


@pytest.mark.parametrize(
    ("kapp", "message"),
    [
        ({"rawOptions": "--wait=false"}, "Expected spec.deploy[0].kapp.rawOptions to be a list, got str"),
        ({"rawOptions": [True]}, "Expected spec.deploy[0].kapp.rawOptions[0] to be a string, got bool"),
        ({"mapNs": "a=b"}, "Expected spec.deploy[0].kapp.mapNs to be a list, got str"),
        ({"intoNs": 1}, "Expected spec.deploy[0].kapp.intoNs to be a string, got int"),
        ({"delete": []}, "Expected spec.deploy[0].kapp.delete to be a map, got list"),
        ({"delete": {"rawOptions": "x"}}, "Expected spec.deploy[0].kapp.delete.rawOptions to be a list, got str"),
        ({"inspect": "yes"}, "Expected spec.deploy[0].kapp.inspect to be a map, got str"),
    ],
)
def test_kapp_deploy_fields_are_checked(kapp: Obj, message: str) -> None:
    assert error_of(with_spec(lambda s: s.update(deploy=[{"kapp": kapp}]))) == message


def test_inspect_raw_options_errors_name_the_full_field() -> None:
    app = with_spec(lambda s: s.update(deploy=[{"kapp": {"inspect": {"rawOptions": "--tree=false"}}}]))
    assert error_of(app) == "Expected spec.deploy[0].kapp.inspect.rawOptions to be a list, got str"


def test_the_spec_is_not_changed_by_reading_it() -> None:
    app = minimal()
    before = copy.deepcopy(app)
    parse_spec(app)
    assert app == before


def test_parsed_is_the_spec_or_what_is_wrong_with_it() -> None:
    app = with_spec(lambda s: None)
    assert parsed(parse_spec, app) == (parse_spec(app), "")
    assert parsed(parse_spec, with_spec(lambda s: s.update(fetch=[]))) == (None, "Expected at least one fetch option")


def test_parsed_lets_any_other_error_through() -> None:
    def broken(obj: object) -> None:
        raise KeyError("metadata")

    with pytest.raises(KeyError):
        parsed(broken, {})
