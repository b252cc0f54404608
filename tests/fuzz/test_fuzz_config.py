"""Fuzz: kapp Configs and resource matchers. Any Config document parses to a Config or fails with one ConfigError
naming where; any matcher matches any resource without failing, and the shared matching of the change graph gives
the same answers."""

from __future__ import annotations

from hypothesis import example, given
from hypothesis import strategies as st

from kapply.config.config import Config, parse_config
from kapply.config.decode import Decoder
from kapply.config.inputs import split_configs
from kapply.config.matchers import matches_any, parse_matcher
from kapply.errors import ConfigError, KapplyError
from kapply.graph.matching import SharedMatching
from kapply.objects import CONFIG_API_VERSION, Document
from tests.fuzz.profiles import fuzz_settings
from tests.fuzz.strategies import configs, json_values, live_resources, matchers, resources, yaml_texts

CONFIG = {"apiVersion": CONFIG_API_VERSION, "kind": "Config"}


def _regex_rule(regex: str) -> dict[str, object]:
    return {**CONFIG, "rebaseRules": [{"type": "copy", "sources": ["new"], "path": ["data", {"regex": regex}]}]}


@fuzz_settings
@given(configs)
@example({**CONFIG, "minimumRequiredVersion": "1" * 5000})  # ValueError: int() of more than 4,300 digits
@example(_regex_rule("(" * 1000 + ")" * 1000))  # RecursionError in the regex parser
@example(_regex_rule("a{99999999999}"))  # OverflowError from the regex parser
@example({**CONFIG, "rebaseRules": [{"path": "spec", "type": 5}]})
def test_any_config_parses_or_fails_with_one_config_error(doc):
    try:
        config = parse_config(doc, "doc 1") if isinstance(doc, dict) else None
    except ConfigError as e:
        assert "doc 1" in str(e), e  # names the document
        return
    assert config is None or isinstance(config, Config)


@fuzz_settings
@given(yaml_texts)
@example("rebaseRules: [\n")
@example("- a\n")
def test_a_config_inside_a_configmap_parses_or_fails_with_one_kapply_error(text):
    configmap = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "c", "labels": {"kapp.k14s.io/config": ""}},
        "data": {"config.yml": f"apiVersion: {CONFIG_API_VERSION}\nkind: Config\n{text}"},
    }
    try:
        resources_, configs_ = split_configs([Document(configmap, "doc 1")])
    except KapplyError as e:
        assert "doc 1 data 'config.yml'" in str(e), e
        return
    assert resources_ == [Document(configmap, "doc 1")] and len(configs_) == 1


@fuzz_settings
@given(
    matchers, st.lists(resources() | live_resources() | st.dictionaries(st.text(max_size=4), json_values), max_size=4)
)
@example({"emptyFieldMatcher": {"path": ["metadata", {"allIndexes": True}]}}, [{"metadata": ["a", {}]}])
@example({"kindNamespaceNameMatcher": {"kind": "a"}}, [{"kind": "a", "metadata": {"namespace": {"x": 1}}}])
@example({"hasAnnotationMatcher": {"keys": ["k"]}}, [{"metadata": {"annotations": 5}}])  # TypeError in _summaries
def test_any_matcher_matches_any_resource_and_shared_matching_agrees(matcher, given_resources):
    try:
        parsed = (parse_matcher(matcher, Decoder("doc 1"), "resourceMatchers[0]"),)
    except ConfigError:
        return
    shared = SharedMatching()
    for resource in given_resources:
        assert shared(parsed, resource) == matches_any(parsed, resource)
