import pytest

from kapply.config.decode import Decoder
from kapply.config.matchers import matches_any, parse_matcher, parse_matchers
from kapply.errors import ConfigError


def matcher(doc):
    return parse_matcher(doc, Decoder("test"), "m")


def res(api_version="v1", kind="ConfigMap", name="x", namespace=None, annotations=None, **fields):
    metadata = {"name": name}
    if namespace is not None:
        metadata["namespace"] = namespace
    if annotations is not None:
        metadata["annotations"] = annotations
    return {"apiVersion": api_version, "kind": kind, "metadata": metadata, **fields}


def test_api_version_kind_matcher_needs_exact_api_version_and_kind():
    m = matcher({"apiVersionKindMatcher": {"apiVersion": "apps/v1", "kind": "Deployment"}})
    assert m.matches(res("apps/v1", "Deployment"))
    assert not m.matches(res("apps/v1beta1", "Deployment"))
    assert not m.matches(res("apps/v1", "StatefulSet"))


def test_matcher_keys_are_case_insensitive_like_go_json():
    m = matcher({"APIVersionKindMatcher": {"APIVERSION": "v1", "Kind": "Service"}})
    assert m.matches(res("v1", "Service"))


def test_unknown_matcher_key_is_an_error_naming_it():
    with pytest.raises(ConfigError, match="unknown field 'allResourceMatcher'"):
        matcher({"allResourceMatcher": {}})


def test_unknown_field_inside_a_matcher_is_an_error():
    with pytest.raises(ConfigError, match="unknown field 'group'.*apiGroupKindMatcher"):
        matcher({"apiGroupKindMatcher": {"group": "apps", "kind": "Deployment"}})


def test_a_matcher_item_must_hold_exactly_one_matcher():
    with pytest.raises(ConfigError, match="exactly one matcher"):
        matcher({"allMatcher": {}, "customResourceMatcher": {}})


def test_api_group_kind_matcher_uses_the_group_of_the_api_version():
    core_ns = matcher({"apiGroupKindMatcher": {"apiGroup": "", "kind": "Namespace"}})
    crd = matcher({"apiGroupKindMatcher": {"apiGroup": "apiextensions.k8s.io", "kind": "CustomResourceDefinition"}})
    assert core_ns.matches(res("v1", "Namespace"))
    assert crd.matches(res("apiextensions.k8s.io/v1beta1", "CustomResourceDefinition"))
    assert not crd.matches(res("v1", "CustomResourceDefinition"))


def test_logical_matchers_combine():
    m = matcher(
        {
            "andMatcher": {
                "matchers": [
                    {"anyMatcher": {"matchers": [{"apiVersionKindMatcher": {"apiVersion": "v1", "kind": "Secret"}}]}},
                    {"notMatcher": {"matcher": {"hasAnnotationMatcher": {"keys": ["skip"]}}}},
                ]
            }
        }
    )
    assert m.matches(res(kind="Secret"))
    assert not m.matches(res(kind="Secret", annotations={"skip": ""}))
    assert not m.matches(res(kind="ConfigMap"))


def test_has_annotation_matcher_needs_every_key_whatever_the_value():
    m = matcher({"hasAnnotationMatcher": {"keys": ["a", "b"]}})
    assert m.matches(res(annotations={"a": "", "b": "false"}))
    assert not m.matches(res(annotations={"a": ""}))
    assert not m.matches(res())


def test_has_namespace_matcher_matches_namespaced_resources_optionally_by_name():
    any_ns = matcher({"hasNamespaceMatcher": {}})
    named = matcher({"hasNamespaceMatcher": {"names": ["prod"]}})
    assert any_ns.matches(res(namespace="dev"))
    assert not any_ns.matches(res(kind="Namespace"))
    assert named.matches(res(namespace="prod"))
    assert not named.matches(res(namespace="dev"))


def test_kind_namespace_name_matcher_compares_all_three():
    m = matcher({"kindNamespaceNameMatcher": {"kind": "Secret", "namespace": "ns", "name": "s"}})
    assert m.matches(res(kind="Secret", namespace="ns", name="s"))
    assert not m.matches(res(kind="Secret", namespace="other", name="s"))


def test_custom_resource_matcher_excludes_builtin_groups():
    m = matcher({"customResourceMatcher": {}})
    assert m.matches(res("example.com/v1", "Widget"))
    assert m.matches(res("kappctrl.k14s.io/v1alpha1", "App"))
    assert not m.matches(res("apps/v1", "Deployment"))
    assert not m.matches(res("v1", "Pod"))
    assert not m.matches(res("storage.k8s.io/v1", "StorageClass"))


@pytest.mark.parametrize(
    ("fields", "empty"),
    [
        ({}, True),
        ({"aggregationRule": None}, True),
        ({"aggregationRule": {}}, True),
        ({"aggregationRule": []}, True),
        ({"aggregationRule": {"clusterRoleSelectors": []}}, False),
        ({"aggregationRule": "x"}, False),
    ],
)
def test_empty_field_matcher(fields, empty):
    m = matcher({"emptyFieldMatcher": {"path": ["aggregationRule"]}})
    assert m.matches(res("rbac.authorization.k8s.io/v1", "ClusterRole", **fields)) is empty


def test_empty_field_matcher_over_list_elements_needs_all_empty():
    m = matcher({"emptyFieldMatcher": {"path": ["items", {"allIndexes": True}, "value"]}})
    assert m.matches(res(items=[{}, {"value": None}, {"value": []}]))
    assert not m.matches(res(items=[{}, {"value": "x"}]))


def test_a_list_of_matchers_matches_if_any_does():
    matchers = parse_matchers(
        [
            {"apiVersionKindMatcher": {"apiVersion": "v1", "kind": "Secret"}},
            {"apiVersionKindMatcher": {"apiVersion": "v1", "kind": "ConfigMap"}},
        ],
        Decoder("test"),
        "resourceMatchers",
    )
    assert matches_any(matchers, res(kind="ConfigMap"))
    assert not matches_any(matchers, res(kind="Pod"))
    assert not matches_any((), res())
