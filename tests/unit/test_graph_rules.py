import pytest

from kapply.config import default_config
from kapply.graph import ChangeRule, GraphError, GraphOp, RuleOrder, build_graph, groups_of, parse_rule, rules_of
from tests.unit.test_graph import DELETE, NOOP, UPSERT, change, crd

FORMAT_ERROR = (
    "Expected change rule annotation value to have format "
    "'(upsert|delete) (before|after) (upserting|deleting) (change-group)', but was '{}'"
)
NO_VALUE_ERROR = (
    "Placeholder {} does not have a value for target resource "
    "(hint: placeholders with the 'crd-' prefix can only be used with CRDs)"
)
QUALIFIED_NAME = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric "
    "character (e.g. 'MyName',  or 'my.name',  or '123-abc', "
    "regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)


def groups(node):
    return groups_of(node.resource, default_config().change_group_bindings)


# Groups


def test_groups_come_from_annotations_then_matching_bindings():
    node = change(UPSERT, "v1", "Namespace", "app", annotations={"kapp.k14s.io/change-group.extra": "example.com/ns"})
    assert groups(node) == [
        "example.com/ns",
        "change-groups.kapp.k14s.io/namespaces",
        "change-groups.kapp.k14s.io/namespaces-app",
    ]


def test_group_placeholders_take_the_resources_values():
    annotations = {"kapp.k14s.io/change-group": "example.com/{api-group}.{kind}.{namespace}.{name}"}
    node = change(UPSERT, "apps/v1", "Deployment", "web", "prod", annotations)
    assert groups(node)[0] == "example.com/apps.Deployment.prod.web"


def test_crd_placeholders_take_the_crds_group_and_kind():
    assert groups(crd(UPSERT, "example.com", "Widget")) == [
        "change-groups.kapp.k14s.io/crds",
        "change-groups.kapp.k14s.io/crds-example.com-Widget",
    ]


def test_crd_placeholder_on_another_resource_has_no_value():
    node = change(UPSERT, "v1", "ConfigMap", "c", "ns", {"kapp.k14s.io/change-group": "example.com/{crd-kind}"})
    with pytest.raises(GraphError) as error:
        groups(node)
    assert str(error.value) == NO_VALUE_ERROR.format("{crd-kind}")


def test_unknown_placeholder_is_reported_as_having_no_value_like_kapp():
    node = change(UPSERT, "v1", "ConfigMap", "c", "ns", {"kapp.k14s.io/change-group": "example.com/{colour}"})
    with pytest.raises(GraphError) as error:
        groups(node)
    assert str(error.value) == NO_VALUE_ERROR.format("{colour}")


def test_last_placeholder_without_value_is_the_one_reported():
    node = change(
        UPSERT, "v1", "ConfigMap", "c", annotations={"kapp.k14s.io/change-group": "a.io/{namespace}-{crd-group}"}
    )
    with pytest.raises(GraphError) as error:
        groups(node)
    assert str(error.value) == NO_VALUE_ERROR.format("{crd-group}")


def test_group_names_may_be_longer_than_63_characters():
    name = "example.com/" + "a" * 1000
    node = change(UPSERT, "v1", "ConfigMap", "c", "ns", {"kapp.k14s.io/change-group": name})
    assert groups(node)[0] == name


@pytest.mark.parametrize("name", ["_", "invalid/_", "/_", "Upper.com/x", "a/b/c"])
def test_group_names_must_be_qualified_names(name):
    node = change(UPSERT, "v1", "ConfigMap", "c", "ns", {"kapp.k14s.io/change-group": name})
    with pytest.raises(GraphError, match=f'^Expected change group name "{name}" to be a qualified name: '):
        groups(node)


def test_group_name_errors_are_kubernetes_messages():
    node = change(UPSERT, "v1", "ConfigMap", "c", "ns", {"kapp.k14s.io/change-group": "invalid/"})
    with pytest.raises(GraphError) as error:
        groups(node)
    assert str(error.value) == (
        'Expected change group name "invalid/" to be a qualified name: '
        f"name part must be non-empty; name part {QUALIFIED_NAME}"
    )


def test_empty_group_annotation_is_an_error():
    node = change(UPSERT, "v1", "ConfigMap", "c", "ns", {"kapp.k14s.io/change-group": ""})
    with pytest.raises(GraphError, match="^Expected non-empty group name$"):
        groups(node)


# Rules


def test_rule_text_is_parsed():
    assert parse_rule("delete before upserting example.com/db") == ChangeRule(
        action=GraphOp.DELETE, order=RuleOrder.BEFORE, target_op=GraphOp.UPSERT, target_group="example.com/db"
    )


@pytest.mark.parametrize("text", ["upsert after example.com/db", "upsert  after upserting example.com/db", ""])
def test_rule_without_four_words_is_an_error(text):
    with pytest.raises(GraphError) as error:
        parse_rule(text)
    assert str(error.value) == FORMAT_ERROR.format(text)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("create after upserting example.com/db", "Unknown change rule Action"),
        ("upsert during upserting example.com/db", "Unknown change rule Order"),
        ("upsert after updating example.com/db", "Unknown change rule TargetAction"),
        (
            "upsert after upserting _",
            'Expected change group name "_" to be a qualified name: name part ' + QUALIFIED_NAME,
        ),
    ],
)
def test_rule_with_unknown_words_is_an_error(text, message):
    with pytest.raises(GraphError) as error:
        parse_rule(text)
    assert str(error.value) == message


def test_rules_come_from_annotations_then_bindings_weighted_by_binding_position():
    node = change(
        UPSERT, "v1", "ConfigMap", "c", "app", {"kapp.k14s.io/change-rule.db": "upsert after upserting example.com/db"}
    )
    rules = rules_of(node.resource, node.description, default_config().change_rule_bindings)
    assert [(rule.target_group, rule.weight, rule.ignore_if_cyclical) for rule in rules] == [
        ("example.com/db", 0, False),
        ("change-groups.kapp.k14s.io/crds", 102, True),
        ("change-groups.kapp.k14s.io/namespaces-app", 103, False),
        ("change-groups.kapp.k14s.io/namespaces-app", 104, True),  # delete before its namespace (kapply)
    ]


def test_rule_placeholders_take_the_resources_values():
    node = change(
        UPSERT, "v1", "ConfigMap", "c", "prod", {"kapp.k14s.io/change-rule": "upsert after upserting db.io/{namespace}"}
    )
    [rule] = rules_of(node.resource, node.description, ())
    assert rule.target_group == "db.io/prod"


# Errors while building


def test_malformed_rule_annotation_error_names_the_resource():
    node = change(UPSERT, "batch/v1", "Job", "migrate", "ns", {"kapp.k14s.io/change-rule": "upsert after db"})
    with pytest.raises(GraphError) as error:
        build_graph([node], default_config())
    assert str(error.value) == (
        "Change graph: Calculating required deps: Resource job/migrate (batch/v1) namespace: ns: "
        + FORMAT_ERROR.format("upsert after db")
    )


def test_malformed_rule_of_a_noop_change_is_still_an_error():
    node = change(NOOP, "batch/v1", "Job", "migrate", "ns", {"kapp.k14s.io/change-rule": "later"})
    with pytest.raises(GraphError, match="^Change graph: Calculating required deps: Resource job/migrate"):
        build_graph([node], default_config())


def test_placeholder_error_in_a_rule_does_not_name_the_resource():
    node = change(
        DELETE, "v1", "ConfigMap", "c", annotations={"kapp.k14s.io/change-rule": "delete after deleting a/{namespace}"}
    )
    with pytest.raises(GraphError) as error:
        build_graph([node], default_config())
    assert str(error.value) == "Change graph: Calculating required deps: " + NO_VALUE_ERROR.format("{namespace}")


def test_bad_group_is_reported_only_once_some_rule_needs_groups():
    bad = change(UPSERT, "v1", "Namespace", "app", annotations={"kapp.k14s.io/change-group": "_"})
    assert build_graph([bad], default_config()).waiting_for == ((),)

    with pytest.raises(GraphError, match=r"^Change graph: Calculating required deps: Expected change group name"):
        build_graph([bad, change(UPSERT, "v1", "ConfigMap", "c", "app")], default_config())

    binding = change(UPSERT, "rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "admin")
    with pytest.raises(GraphError, match=r"^Change graph: Calculating optional deps: Expected change group name"):
        build_graph([bad, binding], default_config())
