import pytest

from kapply.config import default_config, parse_config
from kapply.graph import ChangeGraph, GraphError, GraphOp, Node, build_graph

UPSERT, DELETE, NOOP = GraphOp.UPSERT, GraphOp.DELETE, GraphOp.NOOP


def change(op, api_version, kind, name, namespace=None, annotations=None, **fields):
    metadata = {"name": name}
    if namespace:
        metadata["namespace"] = namespace
    if annotations:
        metadata["annotations"] = annotations
    resource = {"apiVersion": api_version, "kind": kind, "metadata": metadata, **fields}
    where = f"namespace: {namespace}" if namespace else "cluster"
    return Node(op, resource, f"{kind.lower()}/{name} ({api_version}) {where}")


def crd(op, group, kind, name=None):
    name = name or f"{kind.lower()}s.{group}"
    return change(
        op, "apiextensions.k8s.io/v1", "CustomResourceDefinition", name, spec={"group": group, "names": {"kind": kind}}
    )


def waits(graph: ChangeGraph, nodes):
    """Each node's description with the descriptions of what it waits for."""
    return {
        node.description: [nodes[dependency].description for dependency in graph.waiting_for[index]]
        for index, node in enumerate(nodes)
    }


def build(nodes, config=None):
    return build_graph(nodes, config or default_config())


def job(name, annotations):
    return change(UPSERT, "batch/v1", "Job", name, "ns", annotations)


# Default config ordering: upserts


def test_crd_upsert_comes_before_its_custom_resources_only():
    nodes = [
        change(UPSERT, "example.com/v1", "Widget", "w", "ns"),
        crd(UPSERT, "example.com", "Widget"),
        crd(UPSERT, "example.com", "Gadget"),
        change(UPSERT, "other.io/v1", "Widget", "other", "ns"),
    ]
    graph = build(nodes)
    assert graph.waiting_for[0] == (1,)
    assert graph.waiting_for[1] == graph.waiting_for[2] == graph.waiting_for[3] == ()


def test_namespace_upsert_comes_before_resources_in_it_and_no_others():
    nodes = [
        change(UPSERT, "v1", "Namespace", "app"),
        change(UPSERT, "v1", "Namespace", "other"),
        change(UPSERT, "v1", "Service", "web", "app"),
        change(UPSERT, "v1", "Service", "web", "default"),
    ]
    graph = build(nodes)
    assert graph.waiting_for == ((), (), (0,), ())


def test_pod_related_storage_and_rbac_come_before_a_deployment():
    first = [
        change(UPSERT, "v1", "ConfigMap", "config", "app"),
        change(UPSERT, "v1", "Secret", "creds", "app"),
        change(UPSERT, "v1", "ServiceAccount", "runner", "app"),
        change(UPSERT, "rbac.authorization.k8s.io/v1", "Role", "reader", "app"),
        change(UPSERT, "rbac.authorization.k8s.io/v1", "RoleBinding", "reader", "app"),
        change(UPSERT, "v1", "PersistentVolumeClaim", "data", "app"),
    ]
    deployment = change(UPSERT, "apps/v1", "Deployment", "web", "app")
    graph = build([deployment, *first])
    assert sorted(graph.waiting_for[0]) == [1, 2, 3, 4, 5, 6]
    assert graph.order[-1] == 0


def test_role_upsert_comes_before_role_binding():
    nodes = [
        change(UPSERT, "rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "admin"),
        change(UPSERT, "rbac.authorization.k8s.io/v1", "ClusterRole", "admin"),
    ]
    assert build(nodes).waiting_for == ((1,), ())


def test_waiting_for_keeps_kapps_order_heaviest_rule_first():
    nodes = [
        crd(UPSERT, "app-group", "app-kind"),
        change(UPSERT, "v1", "Namespace", "app1"),
        change(UPSERT, "v1", "ConfigMap", "app-config", "app1"),
        change(UPSERT, "apps/v1", "Deployment", "app", "app1", {"kapp.k14s.io/change-group": "apps.big.co/deployment"}),
        change(
            UPSERT,
            "batch/v1",
            "Job",
            "app-health-check",
            "app1",
            {"kapp.k14s.io/change-rule": "upsert after upserting apps.big.co/deployment"},
        ),
    ]
    graph = build(nodes)
    # Required rules first (the namespace's weighs more than the annotation's), then optional ones.
    assert graph.waiting_for == ((), (), (1,), (1, 2), (1, 3, 2))


def test_disabling_default_rules_leaves_a_custom_resource_unordered():
    nodes = [
        change(
            UPSERT,
            "example.com/v1",
            "Widget",
            "w",
            annotations={"kapp.k14s.io/disable-default-change-group-and-rules": ""},
        ),
        crd(UPSERT, "example.com", "Widget"),
    ]
    assert build(nodes).waiting_for == ((), ())


# Default config ordering: deletes


def test_custom_resources_are_deleted_before_their_crd_and_the_crd_before_the_rest():
    nodes = [
        crd(DELETE, "example.com", "Widget"),
        change(DELETE, "example.com/v1", "Widget", "w", "ns"),
        change(DELETE, "v1", "ConfigMap", "config", "ns"),
    ]
    graph = build(nodes)
    assert graph.waiting_for == ((1,), (), (0,))
    assert graph.order == (1, 0, 2)


def test_what_lives_in_a_namespace_is_deleted_before_it():
    nodes = [
        change(DELETE, "v1", "Namespace", "app"),
        change(DELETE, "v1", "ServiceAccount", "runner", "app"),
        change(DELETE, "v1", "ConfigMap", "config", "app"),
        change(DELETE, "v1", "ConfigMap", "elsewhere", "other"),
    ]
    assert build(nodes).waiting_for == ((1, 2), (), (), ())


def test_upsert_rules_do_not_order_deletes():
    nodes = [
        change(DELETE, "v1", "Namespace", "app"),
        change(UPSERT, "v1", "ConfigMap", "config", "app"),
        change(DELETE, "v1", "ConfigMap", "old", "other"),
    ]
    assert build(nodes).waiting_for == ((), (), ())


def test_noop_changes_are_never_ordered():
    nodes = [
        change(NOOP, "v1", "Namespace", "app"),
        change(UPSERT, "v1", "ConfigMap", "config", "app"),
        change(NOOP, "apps/v1", "Deployment", "web", "app"),
    ]
    assert build(nodes).waiting_for == ((), (), ())


# Annotation rules


def test_upsert_after_upserting_a_group_waits_for_its_upserts():
    nodes = [
        job("import", {"kapp.k14s.io/change-group": "apps.big.co/import"}),
        job("migrate", {"kapp.k14s.io/change-rule": "upsert after upserting apps.big.co/import"}),
    ]
    assert build(nodes).waiting_for == ((), (0,))


def test_upsert_before_upserting_a_group_makes_its_upserts_wait():
    nodes = [
        job("after-1", {"kapp.k14s.io/change-group.a": "apps.big.co/after-1"}),
        job("after-2", {"kapp.k14s.io/change-group.b": "apps.big.co/after-2"}),
        job(
            "migrate",
            {
                "kapp.k14s.io/change-rule.1": "upsert before upserting apps.big.co/after-1",
                "kapp.k14s.io/change-rule.2": "upsert before upserting apps.big.co/after-2",
            },
        ),
    ]
    assert build(nodes).waiting_for == ((2,), (2,), ())


def test_delete_before_deleting_a_group_makes_its_deletes_wait():
    group = {"kapp.k14s.io/change-group": "apps.big.co/app"}
    rule = {"kapp.k14s.io/change-rule": "delete before deleting apps.big.co/app"}
    nodes = [
        change(DELETE, "v1", "Service", "web", "ns", group),
        change(DELETE, "apps/v1", "Deployment", "web", "ns", group),
        change(UPSERT, "v1", "Service", "new", "ns", group),
        change(DELETE, "batch/v1", "Job", "check", "ns", rule),
    ]
    assert build(nodes).waiting_for == ((3,), (3,), (), ())


def test_rule_for_another_op_is_ignored():
    nodes = [
        job("import", {"kapp.k14s.io/change-group": "apps.big.co/import"}),
        change(
            DELETE,
            "batch/v1",
            "Job",
            "old",
            "ns",
            {"kapp.k14s.io/change-rule": "upsert after upserting apps.big.co/import"},
        ),
    ]
    assert build(nodes).waiting_for == ((), ())


def test_rule_on_a_group_without_changes_orders_nothing():
    nodes = [job("import", {"kapp.k14s.io/change-rule": "upsert before deleting apps.big.co/etcd"})]
    assert build(nodes).waiting_for == ((),)


# Cycles


def grouped_job(name, rule):
    """A Job in group apps.big.co/<name> with one change rule."""
    return job(name, {"kapp.k14s.io/change-group": f"apps.big.co/{name}", "kapp.k14s.io/change-rule": rule})


def test_required_rules_in_a_cycle_are_an_error_naming_the_resources():
    nodes = [
        grouped_job("one", "upsert after upserting apps.big.co/three"),
        grouped_job("two", "upsert after upserting apps.big.co/one"),
        grouped_job("three", "upsert after upserting apps.big.co/two"),
    ]
    with pytest.raises(GraphError) as error:
        build(nodes)
    one, two, three = (f"job/{name} (batch/v1) namespace: ns" for name in ("one", "two", "three"))
    assert str(error.value) == (
        f"Detected cycle while ordering changes: [{one}] -> [{three}] -> [{two}] -> [{one}] (found repeated: {one})"
    )


def test_cycle_reached_through_another_change_names_the_path_from_it():
    nodes = [
        job("first", {"kapp.k14s.io/change-rule": "upsert after upserting apps.big.co/one"}),
        grouped_job("one", "upsert after upserting apps.big.co/two"),
        grouped_job("two", "upsert after upserting apps.big.co/one"),
    ]
    with pytest.raises(GraphError) as error:
        build(nodes)
    first, one, two = (f"job/{name} (batch/v1) namespace: ns" for name in ("first", "one", "two"))
    assert str(error.value) == (
        f"Detected cycle while ordering changes: [{first}] -> [{one}] -> [{two}] -> [{one}] (found repeated: {one})"
    )


def test_change_ordered_before_its_own_group_is_a_cycle():
    with pytest.raises(GraphError) as error:
        build([grouped_job("one", "upsert before upserting apps.big.co/one")])
    one = "job/one (batch/v1) namespace: ns"
    assert str(error.value) == f"Detected cycle while ordering changes: [{one}] -> [{one}] (found repeated: {one})"


def test_optional_rule_that_would_close_a_cycle_is_left_out():
    config = parse_config(
        {
            "apiVersion": "kapp.k14s.io/v1alpha1",
            "kind": "Config",
            "changeGroupBindings": [
                {
                    "name": f"test.io/{kind.lower()}",
                    "resourceMatchers": [{"apiVersionKindMatcher": {"apiVersion": "v1", "kind": kind}}],
                }
                for kind in ("Namespace", "ConfigMap", "Secret")
            ],
            "changeRuleBindings": [
                {
                    "rules": ["upsert after upserting test.io/configmap"],
                    "ignoreIfCyclical": True,
                    "resourceMatchers": [{"apiVersionKindMatcher": {"apiVersion": "v1", "kind": "Secret"}}],
                },
                {
                    "rules": ["upsert after upserting test.io/secret"],
                    "ignoreIfCyclical": True,
                    "resourceMatchers": [{"apiVersionKindMatcher": {"apiVersion": "v1", "kind": "Namespace"}}],
                },
                {
                    "rules": ["upsert after upserting test.io/namespace"],
                    "resourceMatchers": [{"apiVersionKindMatcher": {"apiVersion": "v1", "kind": "ConfigMap"}}],
                },
            ],
        },
        "test",
    )
    nodes = [
        change(UPSERT, "v1", "Namespace", "app1"),
        change(UPSERT, "v1", "ConfigMap", "config", "app1"),
        change(UPSERT, "v1", "Secret", "config", "app1"),
    ]
    # The heavier optional rule (namespace after secret) wins; secret after configmap would close a cycle.
    assert build(nodes, config).waiting_for == ((2,), (0,), ())


# Running the graph


def test_ready_lists_changes_whose_dependencies_are_done():
    nodes = [
        change(UPSERT, "example.com/v1", "Widget", "w", "app"),
        crd(UPSERT, "example.com", "Widget"),
        change(UPSERT, "v1", "Namespace", "app"),
    ]
    graph = build(nodes)
    assert graph.ready(set()) == [1, 2]
    assert graph.ready({1}) == [2]
    assert graph.ready({1, 2}) == [0]
    assert graph.ready({0, 1, 2}) == []


def test_blocked_changes_are_listed_with_what_they_wait_for():
    nodes = [
        change(UPSERT, "example.com/v1", "Widget", "w", "app"),
        crd(UPSERT, "example.com", "Widget"),
        change(UPSERT, "v1", "Namespace", "app"),
    ]
    graph = build(nodes)
    assert graph.blocked({2}) == [0]
    assert graph.why_blocked({2}) == (
        "widget/w (example.com/v1) namespace: app\n"
        "  [blocked] customresourcedefinition/widgets.example.com (apiextensions.k8s.io/v1) cluster\n"
    )
    assert graph.why_blocked({1, 2}) == ""


def test_a_workload_waits_for_its_namespace_and_configuration():
    nodes = [
        change(UPSERT, "apps/v1", "Deployment", "web", "app"),
        change(UPSERT, "v1", "ConfigMap", "config", "app"),
        change(UPSERT, "v1", "Namespace", "app"),
        change(UPSERT, "storage.k8s.io/v1", "StorageClass", "fast"),
    ]
    graph = build(nodes)
    assert graph.waiting_for == ((2, 1), (2,), (), ())


# Size


def large_app():
    """25 teams, each with its RBAC, configuration and 190 workloads, Services and custom resources."""
    nodes = [crd(UPSERT, "example.com", f"Kind{i}") for i in range(20)]
    for team in range(25):
        namespace = f"team-{team}"
        nodes.append(change(UPSERT, "v1", "Namespace", namespace))
        nodes.append(change(UPSERT, "v1", "ServiceAccount", "runner", namespace))
        nodes.append(change(UPSERT, "rbac.authorization.k8s.io/v1", "Role", "runner", namespace))
        nodes.append(change(UPSERT, "rbac.authorization.k8s.io/v1", "RoleBinding", "runner", namespace))
        nodes.extend(change(UPSERT, "v1", "ConfigMap", f"config-{i}", namespace) for i in range(4))
        nodes.extend(change(UPSERT, "v1", "Secret", f"secret-{i}", namespace) for i in range(2))
        nodes.extend(change(UPSERT, "apps/v1", "Deployment", f"web-{i}", namespace) for i in range(60))
        nodes.extend(change(UPSERT, "v1", "Service", f"web-{i}", namespace) for i in range(60))
        nodes.extend(change(UPSERT, "example.com/v1", f"Kind{i % 20}", f"cr-{i}", namespace) for i in range(70))
    return nodes


@pytest.mark.parametrize("op", [UPSERT, DELETE])
def test_five_thousand_changes_are_ordered_with_every_dependency_first(op):
    """How long this takes is measured by bench/graph_bench.py."""
    nodes = [Node(op, node.resource, node.description) for node in large_app()]
    assert len(nodes) == 5020
    graph = build(nodes)
    position = {node: index for index, node in enumerate(graph.order)}
    assert all(position[dep] < position[node] for node, deps in enumerate(graph.waiting_for) for dep in deps)
