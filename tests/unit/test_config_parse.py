import pytest

from kapply.config import (
    KAPP_COMPAT_VERSION,
    Config,
    PreflightCheck,
    RebaseRule,
    RebaseType,
    Source,
    YttRebaseRule,
    merge,
    parse_config,
)
from kapply.config.matchers import AllMatcher, ApiVersionKindMatcher
from kapply.config.paths import AllIndexes
from kapply.errors import ConfigError

ALL = [{"allMatcher": {}}]


def config(**fields):
    return {"apiVersion": "kapp.k14s.io/v1alpha1", "kind": "Config", **fields}


def test_parses_every_rule_kind():
    parsed = parse_config(
        config(
            metadata={"name": "ignored"},
            minimumRequiredVersion="0.8.0",
            rebaseRules=[
                {
                    "path": ["spec", "x"],
                    "type": "copy",
                    "sources": ["new", "existing"],
                    "resourceMatchers": ALL,
                }
            ],
            ownershipLabelRules=[{"path": ["metadata", "labels"], "resourceMatchers": ALL}],
            labelScopingRules=[{"path": ["spec", "selector"], "isDefault": True, "resourceMatchers": ALL}],
            templateRules=[
                {
                    "resourceMatchers": ALL,
                    "affectedResources": {
                        "objectReferences": [
                            {
                                "path": ["spec", "volumes", {"allIndexes": True}, "secret"],
                                "nameKey": "secretName",
                            },
                            {"path": ["spec", "ref"], "resourceMatchers": ALL},
                        ]
                    },
                }
            ],
            diffAgainstLastAppliedFieldExclusionRules=[{"path": ["a"], "resourceMatchers": ALL}],
            diffAgainstExistingFieldExclusionRules=[{"path": ["status"], "resourceMatchers": ALL}],
            diffMaskRules=[{"path": ["data"], "resourceMatchers": ALL}],
            waitRules=[
                {
                    "supportsObservedGeneration": True,
                    "conditionMatchers": [
                        {"type": "Ready", "status": "True", "success": True},
                        {"type": "Failed", "status": "True", "failure": True, "unblockChanges": True},
                    ],
                    "resourceMatchers": ALL,
                },
                {
                    "ytt": {"funcContractV1": {"resource.star": "def is_done(): pass"}},
                    "resourceMatchers": ALL,
                },
            ],
            changeGroupBindings=[{"name": "g-{name}", "resourceMatchers": ALL}],
            changeRuleBindings=[
                {"rules": ["upsert after upserting g"], "ignoreIfCyclical": True, "resourceMatchers": ALL}
            ],
            additionalLabels={"team": "a"},
            preflightRules=[{"name": "PermissionValidation", "config": {"x": 1}}],
        ),
        "test.yml",
    )
    assert parsed.rebase_rules == (
        RebaseRule(RebaseType.COPY, (("spec", "x"),), (Source.NEW, Source.EXISTING), (AllMatcher(),)),
    )
    assert parsed.label_scoping_rules[0].is_default
    refs = parsed.template_rules[0].object_references
    assert refs[0].path[2] == AllIndexes() and refs[0].name_key == "secretName"
    assert refs[1].name_key == "name"
    assert parsed.wait_rules[0].condition_matchers[1].unblock_changes
    assert parsed.wait_rules[1].ytt_resource_star == "def is_done(): pass"
    assert parsed.change_rule_bindings[0].ignore_if_cyclical
    assert parsed.additional_labels == {"team": "a"}
    assert parsed.preflight_rules[0].name is PreflightCheck.PERMISSION_VALIDATION


def test_field_names_are_case_insensitive():
    parsed = parse_config(
        config(RebaseRules=[{"PATH": ["spec"], "Type": "remove", "resourcematchers": ALL}]), "test.yml"
    )
    assert parsed.rebase_rules[0].type is RebaseType.REMOVE


def test_the_later_of_two_spellings_of_a_field_wins_whichever_is_exact():
    def rule_type(*spellings: tuple[str, str]) -> RebaseType:
        rule = {"path": ["spec"], "resourceMatchers": ALL} | dict(spellings)
        return parse_config(config(rebaseRules=[rule]), "test.yml").rebase_rules[0].type

    assert rule_type(("type", "copy"), ("TYPE", "remove")) is RebaseType.REMOVE
    assert rule_type(("TYPE", "remove"), ("type", "copy")) is RebaseType.COPY


def test_kind_must_be_config():
    with pytest.raises(ConfigError, match="Expected kapp config to have kind 'Config', but was 'Other'"):
        parse_config(config(kind="Other"), "test.yml")


def test_api_version_must_be_kapps():
    with pytest.raises(ConfigError, match="apiVersion 'kapp.k14s.io/v1alpha1', but was 'v1'"):
        parse_config(config(apiVersion="v1"), "test.yml")


def test_unknown_top_level_field_is_an_error_naming_field_and_origin():
    with pytest.raises(ConfigError, match=r"config app/config\.yml: unknown field 'rebaseRulez'"):
        parse_config(config(rebaseRulez=[]), "app/config.yml")


def test_unknown_nested_field_is_an_error_naming_where_it_is():
    doc = config(waitRules=[{"conditionMatchers": [{"type": "Ready", "stat": "True"}], "resourceMatchers": ALL}])
    with pytest.raises(ConfigError, match=r"unknown field 'stat' \(in waitRules\[0\]\.conditionMatchers\[0\]\)"):
        parse_config(doc, "test.yml")


def test_wrong_value_types_are_errors():
    with pytest.raises(ConfigError, match=r"expected a boolean.*labelScopingRules\[0\]\.isDefault"):
        parse_config(config(labelScopingRules=[{"path": ["a"], "isDefault": "yes"}]), "test.yml")


def test_rebase_rule_needs_exactly_one_of_path_and_paths():
    with pytest.raises(ConfigError, match="Validating rebase rule 0: Expected only one of path or paths"):
        parse_config(config(rebaseRules=[{"path": ["a"], "paths": [["b"]], "type": "remove"}]), "t")
    with pytest.raises(ConfigError, match="Validating rebase rule 0: Expected either path or paths"):
        parse_config(config(rebaseRules=[{"type": "remove"}]), "t")


def test_rebase_rule_type_must_be_copy_or_remove():
    with pytest.raises(ConfigError, match="Unknown rebase rule type: move"):
        parse_config(config(rebaseRules=[{"path": ["a"], "type": "move"}]), "t")


def test_rebase_rule_sources_must_be_new_or_existing():
    with pytest.raises(ConfigError, match="unknown source 'old'"):
        parse_config(config(rebaseRules=[{"path": ["a"], "type": "copy", "sources": ["old"]}]), "t")


def test_regex_parts_only_in_rebase_rules_and_diff_field_exclusion_rules():
    regex_path = ["metadata", "annotations", {"regex": "^a"}]
    copy_rule = {"path": regex_path, "type": "copy", "sources": ["existing"]}
    assert parse_config(config(rebaseRules=[copy_rule]), "t").rebase_rules
    assert parse_config(config(rebaseRules=[{"paths": [regex_path], "type": "remove"}]), "t").rebase_rules
    exclusion = [{"path": regex_path}]
    parsed = parse_config(
        config(diffAgainstLastAppliedFieldExclusionRules=exclusion, diffAgainstExistingFieldExclusionRules=exclusion),
        "t",
    )
    assert parsed.diff_against_last_applied_field_exclusion_rules and parsed.diff_against_existing_field_exclusion_rules
    for key in ("diffMaskRules", "ownershipLabelRules", "labelScopingRules"):
        with pytest.raises(ConfigError, match=rf"only supported by rebase rules and diff field exclusion rules.*{key}"):
            parse_config(config(**{key: [{"path": regex_path}]}), "t")


def test_ytt_rebase_rule_allows_only_resource_matchers_alongside():
    ytt = {"overlayContractV1": {"overlay.yml": "#@ load('@ytt:overlay', 'overlay')"}}
    parsed = parse_config(config(rebaseRules=[{"ytt": ytt, "resourceMatchers": ALL}]), "t")
    assert isinstance(parsed.rebase_rules[0], YttRebaseRule)
    with pytest.raises(ConfigError, match="Expected only resourceMatchers specified with ytt configuration"):
        parse_config(config(rebaseRules=[{"ytt": ytt, "type": "copy"}]), "t")


def test_minimum_required_version_is_checked_against_kapp_compat_version():
    assert parse_config(config(minimumRequiredVersion=KAPP_COMPAT_VERSION), "t")
    assert parse_config(config(minimumRequiredVersion="0.64"), "t")
    assert parse_config(config(minimumRequiredVersion=f"{KAPP_COMPAT_VERSION}-rc.1"), "t")
    with pytest.raises(ConfigError, match="does not meet the minimum required version '0.65.0'"):
        parse_config(config(minimumRequiredVersion="0.65.0"), "t")
    with pytest.raises(ConfigError, match="Must not have prefix 'v'"):
        parse_config(config(minimumRequiredVersion="v0.8.0"), "t")
    with pytest.raises(ConfigError, match="Malformed constraint"):
        parse_config(config(minimumRequiredVersion="latest"), "t")


def test_preflight_rule_names_must_be_known_and_unique():
    with pytest.raises(ConfigError, match="unknown preflight check 'Nope'"):
        parse_config(config(preflightRules=[{"name": "Nope"}]), "t")
    twice = [{"name": "CRDUpgradeSafety"}, {"name": "CRDUpgradeSafety"}]
    with pytest.raises(ConfigError, match="more than once"):
        parse_config(config(preflightRules=twice), "t")


def test_merge_concatenates_rules_in_order_and_later_additional_labels_win():
    first = parse_config(
        config(
            diffMaskRules=[{"path": ["a"], "resourceMatchers": ALL}],
            additionalLabels={"team": "a", "tier": "web"},
        ),
        "first",
    )
    second = parse_config(
        config(
            diffMaskRules=[
                {
                    "path": ["b"],
                    "resourceMatchers": [{"apiVersionKindMatcher": {"apiVersion": "v1", "kind": "Secret"}}],
                }
            ],
            additionalLabels={"team": "b"},
        ),
        "second",
    )
    merged = merge([first, second])
    assert [rule.path for rule in merged.diff_mask_rules] == [("a",), ("b",)]
    assert merged.diff_mask_rules[1].resource_matchers == (ApiVersionKindMatcher("v1", "Secret"),)
    assert merged.additional_labels == {"team": "b", "tier": "web"}
    assert merge([]) == Config()


def test_rule_paths_must_not_be_empty():
    with pytest.raises(ConfigError, match=r"expected a non-empty path \(in ownershipLabelRules\[0\]\.path\)"):
        parse_config(config(ownershipLabelRules=[{"path": [], "resourceMatchers": ALL}]), "t")
    with pytest.raises(ConfigError, match=r"non-empty path \(in rebaseRules\[0\]\.paths\[1\]\)"):
        parse_config(config(rebaseRules=[{"paths": [["a"], []], "type": "remove"}]), "t")
