"""kapply.matcher on plain dicts, offline, with the shipped schema of built-in kinds."""

from __future__ import annotations

import base64
import copy
from collections.abc import Callable

import orjson
import pytest

from kapply.matcher import (
    LAST_APPLIED_ANNOTATION,
    LastAppliedError,
    Matcher,
    Mode,
    PatchType,
    annotate,
    apply_patch,
    calculate,
    to_dict,
)

TOKEN_VOLUME = {
    "name": "kube-api-access-7x2b",
    "projected": {
        "defaultMode": 420,
        "sources": [{"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}}],
    },
}
TOKEN_MOUNT = {
    "name": "kube-api-access-7x2b",
    "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
    "readOnly": True,
}


def deployment() -> dict:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "ns", "labels": {"app": "web"}},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {
                    "containers": [
                        {
                            "name": "app",
                            "image": "registry.invalid/app:1",
                            "args": ["--serve"],
                            "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
                            "ports": [{"containerPort": 8080, "name": "http"}],
                            "resources": {"limits": {"cpu": "1000m", "memory": "1024Mi"}},
                            "volumeMounts": [{"name": "cache", "mountPath": "/cache"}],
                        }
                    ],
                    "volumes": [{"name": "cache", "emptyDir": {}}],
                },
            },
        },
    }


def served(desired: dict, change: Callable[[dict], None] = lambda obj: None) -> dict:
    """The live copy of an object created from `annotate(desired)`: server metadata, defaults, canonical
    quantities, status; then `change` (another writer) applied to it."""
    obj = copy.deepcopy(annotate(desired))
    obj["metadata"].update(
        uid="3f1c",
        resourceVersion="1234",
        generation=1,
        creationTimestamp="2026-01-01T00:00:00Z",
        managedFields=[{"manager": "kapply", "operation": "Update"}],
    )
    obj["status"] = {"replicas": 2, "observedGeneration": 1}
    if obj["kind"] == "Deployment":
        spec = obj["spec"]
        spec.update(
            revisionHistoryLimit=10,
            progressDeadlineSeconds=600,
            strategy={"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}},
        )
        pod = spec["template"]["spec"]
        pod.update(
            dnsPolicy="ClusterFirst", restartPolicy="Always", schedulerName="default-scheduler", securityContext={}
        )
        for c in pod["containers"]:
            c.update(terminationMessagePath="/dev/termination-log", imagePullPolicy="IfNotPresent")
            for p in c.get("ports", []):
                p["protocol"] = "TCP"
            if limits := c.get("resources", {}).get("limits"):
                limits.update(cpu="1", memory="1Gi")
    change(obj)
    return obj


def pod_spec(obj: dict) -> dict:
    return obj["spec"]["template"]["spec"]


def container(obj: dict) -> dict:
    return pod_spec(obj)["containers"][0]


def edited(obj: dict, change: Callable[[dict], None]) -> dict:
    obj = copy.deepcopy(obj)
    change(obj)
    return obj


# Three-way semantics


def test_object_as_the_server_returns_it_matches_its_desired_state() -> None:
    desired = deployment()
    result = calculate(served(desired), desired)
    assert result.is_empty
    assert result.patch == {}
    assert result.patch_type is PatchType.STRATEGIC


def test_server_metadata_and_status_are_never_compared() -> None:
    desired = deployment()
    desired["metadata"].update(resourceVersion="1", uid="other", generation=7, creationTimestamp="1999-01-01T00:00:00Z")
    desired["status"] = {"replicas": 99}
    assert calculate(served(deployment()), desired).is_empty


def test_changed_image_patches_only_that_field_of_that_container() -> None:
    desired = edited(deployment(), lambda d: container(d).update(image="registry.invalid/app:2"))
    result = calculate(served(deployment()), desired)
    assert result.patch == {
        "spec": {"template": {"spec": {"containers": [{"name": "app", "image": "registry.invalid/app:2"}]}}}
    }


def test_new_field_and_new_list_item_are_added() -> None:
    def change(d: dict) -> None:
        container(d)["env"].append({"name": "C", "value": "3"})
        pod_spec(d)["priorityClassName"] = "high"

    result = calculate(served(deployment()), edited(deployment(), change))
    assert result.patch == {
        "spec": {
            "template": {
                "spec": {
                    "containers": [{"name": "app", "env": [{"name": "C", "value": "3"}]}],
                    "priorityClassName": "high",
                }
            }
        }
    }


def test_field_and_list_item_deleted_from_desired_are_deleted() -> None:
    def change(d: dict) -> None:
        del container(d)["env"][0]
        del d["spec"]["replicas"]

    result = calculate(served(deployment()), edited(deployment(), change))
    assert result.patch == {
        "spec": {
            "replicas": None,
            "template": {"spec": {"containers": [{"name": "app", "env": [{"name": "A", "$patch": "delete"}]}]}},
        }
    }


def test_remote_change_to_a_field_desired_sets_is_reverted() -> None:
    live = served(deployment(), lambda o: (o["spec"].update(replicas=5), container(o).update(image="other:9")))
    result = calculate(live, deployment())
    assert result.patch == {
        "spec": {
            "replicas": 2,
            "template": {"spec": {"containers": [{"name": "app", "image": "registry.invalid/app:1"}]}},
        }
    }


def test_remote_change_to_a_field_that_desired_dropped_is_still_deleted() -> None:
    live = served(deployment(), lambda o: o["spec"].update(replicas=5))
    result = calculate(live, edited(deployment(), lambda d: d["spec"].pop("replicas")))
    assert result.patch == {"spec": {"replicas": None}}


def test_changes_to_fields_neither_desired_nor_original_has_are_ignored() -> None:
    def other_writer(o: dict) -> None:
        o["metadata"]["labels"]["team"] = "blue"
        o["metadata"]["annotations"]["note"] = "hand-edited"
        o["spec"]["minReadySeconds"] = 30
        o["spec"]["revisionHistoryLimit"] = 3
        container(o)["env"].append({"name": "INJECTED", "value": "x"})
        pod_spec(o)["volumes"].append({"name": "extra", "emptyDir": {}})
        del o["spec"]["progressDeadlineSeconds"]

    assert calculate(served(deployment(), other_writer), deployment()).is_empty


def test_without_last_applied_annotation_desired_fields_are_compared_and_nothing_is_deleted() -> None:
    live = served(deployment(), lambda o: o["metadata"]["annotations"].clear())
    assert calculate(live, edited(deployment(), lambda d: container(d)["env"].pop())).is_empty
    result = calculate(live, edited(deployment(), lambda d: d["spec"].update(replicas=3)))
    assert result.original is None
    assert result.patch == {"spec": {"replicas": 3}}


# Lists


def test_reordered_list_items_are_not_a_change() -> None:
    def reorder(o: dict) -> None:
        container(o)["env"].reverse()
        o["metadata"]["finalizers"] = ["b.example.com/x", "a.example.com/y"]

    desired = edited(deployment(), lambda d: d["metadata"].update(finalizers=["a.example.com/y", "b.example.com/x"]))
    assert calculate(served(desired, reorder), desired).is_empty


def test_service_account_token_volume_and_mount_are_never_a_change() -> None:
    desired = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "labels": {"app": "p"}},
        "spec": {
            "containers": [{"name": "app", "image": "i", "volumeMounts": [{"name": "data", "mountPath": "/data"}]}],
            "volumes": [{"name": "data", "emptyDir": {}}],
        },
    }

    def inject(o: dict) -> None:
        o["spec"]["volumes"].append(TOKEN_VOLUME)
        o["spec"]["containers"][0]["volumeMounts"].append(TOKEN_MOUNT)

    live = served(desired, inject)
    assert calculate(live, desired).is_empty
    assert calculate(live, desired, mode=Mode.TWO_WAY).is_empty


def test_tolerations_added_by_admission_are_not_a_change() -> None:
    desired = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p"},
        "spec": {
            "containers": [{"name": "app", "image": "i"}],
            "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "batch", "effect": "NoSchedule"}],
        },
    }

    def admit(o: dict) -> None:
        o["spec"]["tolerations"] += [
            {"key": f"node.kubernetes.io/{k}", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}
            for k in ("not-ready", "unreachable")
        ]

    assert calculate(served(desired, admit), desired).is_empty
    changed = edited(desired, lambda d: d["spec"]["tolerations"][0].update(value="web"))
    assert calculate(served(desired, admit), changed).patch == {"spec": {"tolerations": changed["spec"]["tolerations"]}}


def test_atomic_list_is_replaced_whole_when_an_item_changes() -> None:
    desired = edited(deployment(), lambda d: container(d).update(args=["--serve", "--verbose"]))
    result = calculate(served(deployment()), desired)
    assert result.patch == {
        "spec": {"template": {"spec": {"containers": [{"name": "app", "args": ["--serve", "--verbose"]}]}}}
    }


def test_server_defaults_inside_atomic_list_items_are_not_a_change() -> None:
    desired = {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": "db"},
        "spec": {
            "serviceName": "db",
            "selector": {"matchLabels": {"app": "db"}},
            "template": {"metadata": {"labels": {"app": "db"}}, "spec": {"containers": [{"name": "db", "image": "i"}]}},
            "volumeClaimTemplates": [
                {
                    "metadata": {"name": "data"},
                    "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1024Mi"}}},
                }
            ],
        },
    }

    def server(o: dict) -> None:
        template = o["spec"]["volumeClaimTemplates"][0]
        template.update(apiVersion="v1", kind="PersistentVolumeClaim", status={"phase": "Pending"})
        template["spec"].update(volumeMode="Filesystem", resources={"requests": {"storage": "1Gi"}})

    assert calculate(served(desired, server), desired).is_empty


def test_list_items_with_repeated_keys_are_matched_one_to_one_and_replaced_together() -> None:
    desired = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "dns"},
        "spec": {
            "ports": [
                {"name": "dns-tcp", "port": 53, "protocol": "TCP"},
                {"name": "dns-udp", "port": 53, "protocol": "UDP"},
            ]
        },
    }
    live = served(desired, lambda o: o["spec"]["ports"].reverse())
    assert calculate(live, desired).is_empty
    changed = edited(desired, lambda d: d["spec"]["ports"][1].update(name="dns"))
    result = calculate(live, changed)
    assert result.patch == {"spec": {"ports": [{"$patch": "replace"}, *changed["spec"]["ports"]]}}
    assert calculate(apply_patch(live, result.patch, result.patch_type), changed).is_empty


def test_set_items_dropped_from_desired_are_deleted_with_a_directive() -> None:
    desired = edited(deployment(), lambda d: d["metadata"].update(finalizers=["example.com/a", "example.com/b"]))
    live = served(desired, lambda o: o["metadata"]["finalizers"].append("kubernetes.io/other"))
    result = calculate(live, edited(desired, lambda d: d["metadata"]["finalizers"].pop(0)))
    assert result.patch == {"metadata": {"$deleteFromPrimitiveList/finalizers": ["example.com/a"]}}
    assert apply_patch(live, result.patch, result.patch_type)["metadata"]["finalizers"] == [
        "example.com/b",
        "kubernetes.io/other",
    ]


# Values the server normalises


def test_quantities_compare_by_amount() -> None:
    desired = edited(deployment(), lambda d: container(d)["resources"].update(requests={"cpu": 0.5, "memory": "0.5Gi"}))
    live = served(desired, lambda o: container(o)["resources"].update(requests={"cpu": "500m", "memory": "512Mi"}))
    assert calculate(live, desired).is_empty
    bigger = edited(desired, lambda d: container(d)["resources"]["limits"].update(cpu="1500m"))
    assert calculate(live, bigger).patch == {
        "spec": {"template": {"spec": {"containers": [{"name": "app", "resources": {"limits": {"cpu": "1500m"}}}]}}}
    }


def test_int_or_string_values_compare_by_meaning() -> None:
    desired = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "web"},
        "spec": {"ports": [{"port": 80, "targetPort": "8080"}]},
    }
    live = served(desired, lambda o: o["spec"]["ports"][0].update(targetPort=8080, protocol="TCP"))
    assert calculate(live, desired).is_empty
    assert not calculate(live, edited(desired, lambda d: d["spec"]["ports"][0].update(targetPort="http"))).is_empty


def test_empty_maps_lists_and_struct_strings_equal_absent_but_empty_map_values_do_not() -> None:
    def empty(d: dict) -> None:
        d["metadata"]["annotations"] = {}
        container(d).update(command=[], securityContext={}, workingDir="")
        container(d)["env"][0]["value"] = ""

    desired = edited(deployment(), empty)
    live = served(deployment(), lambda o: container(o)["env"][0].pop("value"))
    assert calculate(live, desired).patch == {}
    with_empty_label = edited(desired, lambda d: d["metadata"]["labels"].update(tier=""))
    assert calculate(live, with_empty_label).patch == {"metadata": {"labels": {"tier": ""}}}


def test_secret_string_data_compares_with_the_data_the_server_stores() -> None:
    desired = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "s"},
        "type": "Opaque",
        "data": {"user": "YWRtaW4="},
        "stringData": {"password": "hunter2"},
    }

    def server(o: dict) -> None:
        o["data"]["password"] = base64.b64encode(b"hunter2").decode()
        del o["stringData"]

    live = served(desired, server)
    assert calculate(live, desired).is_empty
    result = calculate(live, edited(desired, lambda d: d["stringData"].update(password="hunter3")))
    assert result.patch == {"data": {"password": base64.b64encode(b"hunter3").decode()}}


def test_secret_data_compares_by_the_bytes_it_encodes() -> None:
    desired = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "data": {"user": "YWRt\naW4="}}
    live = served(desired, lambda o: o["data"].update(user="YWRtaW4="))
    assert calculate(live, desired).is_empty
    assert calculate(live, edited(desired, lambda d: d["data"].update(user="cm9vdA=="))).patch == {
        "data": {"user": "cm9vdA=="}
    }


# Directives the server needs


def test_switching_a_volume_source_deletes_the_old_source() -> None:
    desired = edited(deployment(), lambda d: pod_spec(d)["volumes"][0].update(emptyDir=None, configMap={"name": "c"}))
    live = served(deployment())
    result = calculate(live, desired)
    assert result.patch == {
        "spec": {
            "template": {
                "spec": {
                    "volumes": [
                        {
                            "name": "cache",
                            "configMap": {"name": "c"},
                            "emptyDir": None,
                            "$retainKeys": ["configMap", "name"],
                        }
                    ]
                }
            }
        }
    }
    assert pod_spec(apply_patch(live, result.patch, result.patch_type))["volumes"] == [
        {"name": "cache", "configMap": {"name": "c"}}
    ]


def test_switching_deployment_strategy_drops_the_defaulted_rolling_update() -> None:
    desired = edited(deployment(), lambda d: d["spec"].update(strategy={"type": "Recreate"}))
    live = served(deployment())
    result = calculate(live, desired)
    assert result.patch == {"spec": {"strategy": {"type": "Recreate", "$retainKeys": ["type"]}}}
    assert apply_patch(live, result.patch, result.patch_type)["spec"]["strategy"] == {"type": "Recreate"}


# Custom resources and unknown kinds


def widget() -> dict:
    return {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": "w", "labels": {"app": "w"}},
        "spec": {"size": 1, "color": "", "parts": [{"name": "cog"}, {"name": "axle"}]},
    }


def test_unknown_kind_gets_a_json_merge_patch_with_whole_lists() -> None:
    live = served(widget(), lambda o: o["spec"].update(defaulted=True))
    assert calculate(live, widget()).is_empty
    result = calculate(live, edited(widget(), lambda d: d["spec"]["parts"].append({"name": "gear"})))
    assert result.patch_type is PatchType.MERGE
    assert result.patch == {"spec": {"parts": [{"name": "cog"}, {"name": "axle"}, {"name": "gear"}]}}


def test_empty_string_is_a_value_in_custom_resources() -> None:
    live = served(widget(), lambda o: o["spec"].update(color="red"))
    assert calculate(live, widget()).patch == {"spec": {"color": ""}}


def test_custom_resource_metadata_is_standard_object_metadata() -> None:
    live = served(widget(), lambda o: o["metadata"]["labels"].update(team="blue"))
    assert calculate(live, widget()).is_empty
    assert calculate(live, widget(), mode=Mode.TWO_WAY).patch == {"metadata": {"labels": {"team": None}}}


# Two-way mode


def test_two_way_mode_reverts_keys_and_items_added_to_what_desired_sets() -> None:
    def other_writer(o: dict) -> None:
        o["metadata"]["labels"]["team"] = "blue"
        container(o)["env"].append({"name": "DEBUG", "value": "1"})

    result = calculate(served(deployment(), other_writer), deployment(), mode=Mode.TWO_WAY)
    assert result.patch == {
        "metadata": {"labels": {"team": None}},
        "spec": {
            "template": {"spec": {"containers": [{"name": "app", "env": [{"name": "DEBUG", "$patch": "delete"}]}]}}
        },
    }


def test_two_way_mode_leaves_server_defaults_and_control_plane_keys_alone() -> None:
    def control_plane(o: dict) -> None:
        o["metadata"]["annotations"]["deployment.kubernetes.io/revision"] = "4"
        o["metadata"]["labels"]["kubernetes.io/managed"] = "x"

    live = served(deployment(), control_plane)
    assert calculate(live, deployment(), mode=Mode.TWO_WAY).is_empty


def test_two_way_mode_ignores_maps_desired_does_not_set() -> None:
    desired = edited(deployment(), lambda d: d["metadata"].pop("labels"))
    live = served(desired, lambda o: o["metadata"].update(labels={"team": "blue"}))
    assert calculate(live, desired, mode=Mode.TWO_WAY).is_empty


# The annotation


def test_annotate_stores_desired_without_server_fields_nulls_and_empty_lists() -> None:
    desired = edited(
        deployment(),
        lambda d: (
            d["metadata"].update(uid="x", resourceVersion="9", annotations={"note": "kept"}),
            d.update(status={"replicas": 1}),
            container(d).update(command=[], workingDir=None),
        ),
    )
    annotated = annotate(desired)
    stored = orjson.loads(annotated["metadata"]["annotations"][LAST_APPLIED_ANNOTATION])
    assert annotated["metadata"]["annotations"]["note"] == "kept"
    assert stored["metadata"] == {
        "name": "web",
        "namespace": "ns",
        "labels": {"app": "web"},
        "annotations": {"note": "kept"},
    }
    assert "status" not in stored
    assert "command" not in container(stored) and "workingDir" not in container(stored)
    assert pod_spec(stored)["volumes"] == [{"name": "cache", "emptyDir": {}}]
    assert "annotations" not in desired["metadata"] or LAST_APPLIED_ANNOTATION not in desired["metadata"]["annotations"]


def test_annotating_again_replaces_the_stored_state() -> None:
    once = annotate(deployment())
    twice = annotate(edited(once, lambda d: d["spec"].update(replicas=9)))
    stored = orjson.loads(twice["metadata"]["annotations"][LAST_APPLIED_ANNOTATION])
    assert stored["spec"]["replicas"] == 9
    assert "annotations" not in stored["metadata"]


def test_annotation_name_is_configurable() -> None:
    matcher = Matcher(annotation="example.com/last-applied")
    live = served(
        deployment(),
        lambda o: o["metadata"].update(annotations=matcher.annotate(deployment())["metadata"]["annotations"]),
    )
    result = matcher.calculate(live, edited(deployment(), lambda d: container(d)["env"].pop()))
    assert result.patch == {
        "spec": {"template": {"spec": {"containers": [{"name": "app", "env": [{"name": "B", "$patch": "delete"}]}]}}}
    }


def test_record_writes_the_new_last_applied_state_into_a_non_empty_patch() -> None:
    desired = edited(deployment(), lambda d: d["spec"].update(replicas=3))
    live = served(deployment())
    assert calculate(live, deployment(), record=True).patch == {}
    result = calculate(live, desired, record=True)
    assert result.patch["spec"] == {"replicas": 3}
    assert result.patch["metadata"]["annotations"] == annotate(desired)["metadata"]["annotations"]
    assert calculate(apply_patch(live, result.patch, result.patch_type), desired).original == result.modified


def test_record_keeps_the_last_applied_annotation_when_desired_drops_all_others() -> None:
    with_note = edited(deployment(), lambda d: d["metadata"].update(annotations={"note": "x"}))
    live = served(with_note)
    result = calculate(live, deployment(), record=True)
    after = apply_patch(live, result.patch, result.patch_type)
    assert list(after["metadata"]["annotations"]) == [LAST_APPLIED_ANNOTATION]
    assert calculate(after, deployment()).original == result.modified


def test_corrupt_last_applied_annotation_is_an_error_that_names_the_object() -> None:
    live = served(deployment(), lambda o: o["metadata"]["annotations"].update({LAST_APPLIED_ANNOTATION: "[1"}))
    with pytest.raises(LastAppliedError, match="Deployment ns/web"):
        calculate(live, deployment())


def test_patch_result_holds_the_compared_documents() -> None:
    result = calculate(served(deployment()), deployment())
    assert result.original == result.modified
    assert "status" not in result.current and "uid" not in result.current["metadata"]
    assert LAST_APPLIED_ANNOTATION not in result.current["metadata"].get("annotations", {})
    assert result.current["spec"]["revisionHistoryLimit"] == 10


# Objects of client libraries


def test_lightkube_objects_are_compared_like_dicts() -> None:
    from lightkube.resources.apps_v1 import Deployment

    live = Deployment.from_dict(served(deployment()))
    assert calculate(live, Deployment.from_dict(deployment())).is_empty
    assert to_dict(live)["metadata"]["name"] == "web"


def test_official_kubernetes_client_objects_are_compared_like_dicts() -> None:
    kubernetes = pytest.importorskip("kubernetes")
    live = kubernetes.client.ApiClient().deserialize(
        orjson.dumps(served(deployment())).decode(), "V1Deployment", "application/json"
    )
    assert isinstance(live, kubernetes.client.V1Deployment)
    assert calculate(live, deployment()).is_empty


def test_kubernetes_dynamic_client_resources_are_compared_like_dicts() -> None:
    pytest.importorskip("kubernetes")
    from kubernetes.dynamic.resource import ResourceInstance

    live = ResourceInstance(None, served(deployment()))
    assert calculate(live, ResourceInstance(None, deployment())).is_empty


def test_objects_that_are_not_kubernetes_objects_are_refused() -> None:
    with pytest.raises(TypeError, match="Not a Kubernetes object"):
        to_dict(["not", "an", "object"])


# Applying patches locally


def test_applying_a_strategic_merge_patch_merges_keyed_lists_and_honours_directives() -> None:
    live = served(deployment())
    patch = {
        "spec": {
            "template": {
                "spec": {
                    "containers": [
                        {"name": "app", "env": [{"name": "A", "$patch": "delete"}, {"name": "C", "value": "3"}]},
                        {"name": "sidecar", "image": "s"},
                    ]
                }
            }
        }
    }
    after = apply_patch(live, patch, PatchType.STRATEGIC)
    assert [c["name"] for c in pod_spec(after)["containers"]] == ["app", "sidecar"]
    assert container(after)["env"] == [{"name": "B", "value": "2"}, {"name": "C", "value": "3"}]
    assert container(after)["image"] == "registry.invalid/app:1"


def test_applying_a_json_merge_patch_replaces_lists_and_deletes_nulls() -> None:
    live = served(widget())
    after = apply_patch(live, {"spec": {"parts": [{"name": "gear"}], "color": None}}, PatchType.MERGE)
    assert after["spec"] == {"size": 1, "parts": [{"name": "gear"}]}


# Ignored fields: k8s-objectmatcher's CalculateOptions, ported


def test_ignored_top_level_field_is_never_changed_as_objectmatchers_ignore_field_does() -> None:
    desired = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "c", "namespace": "ns"},
        "data": {"a": "1"},
    }
    live = served(desired, lambda o: o["data"].update(a="written by the app", b="2"))
    assert calculate(live, desired).patch == {"data": {"a": "1"}}
    assert calculate(live, desired, ignore_fields=["data"]).is_empty
    assert calculate(live, edited(desired, lambda d: d.pop("data")), ignore_fields=["data"]).is_empty


def test_ignored_nested_field_is_not_added_changed_or_deleted_and_its_siblings_still_are() -> None:
    scaled = served(deployment(), lambda o: o["spec"].update(replicas=7))  # an autoscaler's write
    assert calculate(scaled, deployment()).patch == {"spec": {"replicas": 2}}
    matcher = Matcher(ignore_fields=("spec.replicas",))
    assert matcher.calculate(scaled, deployment()).is_empty
    assert matcher.calculate(scaled, edited(deployment(), lambda d: d["spec"].pop("replicas"))).is_empty
    changed = edited(deployment(), lambda d: d["spec"].update(replicas=5, minReadySeconds=3))
    result = matcher.calculate(scaled, changed)
    assert result.patch == {"spec": {"minReadySeconds": 3}}
    assert "replicas" not in result.current["spec"] and "replicas" not in result.modified["spec"]


def test_ignored_map_key_with_dots_is_named_by_a_tuple_of_keys() -> None:
    owner = ("metadata", "annotations", "example.com/owner")
    desired = edited(deployment(), lambda d: d["metadata"].update(annotations={"example.com/owner": "me"}))
    live = served(desired, lambda o: o["metadata"]["annotations"].update({"example.com/owner": "someone else"}))
    assert calculate(live, desired, ignore_fields=["metadata.annotations.example.com/owner"]).patch != {}
    assert calculate(live, desired, ignore_fields=[owner]).is_empty
    assert calculate(live, edited(desired, lambda d: d["metadata"].pop("annotations")), ignore_fields=[owner]).is_empty


def test_ignoring_fields_leaves_the_callers_objects_and_the_recorded_state_whole() -> None:
    desired = edited(deployment(), lambda d: d["spec"].update(paused=True))
    live = served(deployment(), lambda o: o["spec"].update(replicas=7))
    before = copy.deepcopy((desired, live))
    result = calculate(live, desired, ignore_fields=["spec.replicas"], record=True)
    assert (desired, live) == before
    assert result.patch["spec"] == {"paused": True}
    assert result.patch["metadata"]["annotations"] == annotate(desired)["metadata"]["annotations"]


def test_a_lone_ignored_path_is_one_path_not_its_letters() -> None:
    scaled = served(deployment(), lambda o: o["spec"].update(replicas=7))
    assert calculate(scaled, deployment(), ignore_fields="spec.replicas").is_empty


def test_an_empty_ignored_path_is_refused() -> None:
    with pytest.raises(ValueError, match="whole object"):
        calculate(served(deployment()), deployment(), ignore_fields=[()])


def test_pod_matches_when_an_ignored_field_differs_locally_and_remotely() -> None:
    # objectmatcher's "pod matchs when an ignored field has different values locally and remotely", which it
    # ran with IgnoreField("annotations"): both sides replace the annotations, the last-applied one included.
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "test-1", "namespace": "ns"},
        "spec": {"containers": [{"name": "test-container", "image": "test-image"}]},
    }
    live = served(pod, lambda o: o["metadata"].update(annotations={"key1": "remote"}))
    local = edited(pod, lambda d: d["metadata"].update(annotations={"key1": "local"}))
    assert calculate(live, local).patch == {"metadata": {"annotations": {"key1": "local"}}}
    assert calculate(live, local, ignore_fields=["metadata.annotations"]).is_empty


def pdb(**selector: object) -> dict:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "test-1", "namespace": "ns"},
        "spec": {"minAvailable": 1, "selector": selector or {"matchLabels": {"app": "example"}}},
    }


def test_pdb_matches_without_an_option_to_ignore_its_selector() -> None:
    # objectmatcher's "pdb match", which needed IgnorePDBSelector: its strategic merge of the `replace` selector
    # always differed. Equal selectors are no difference here.
    assert calculate(served(pdb()), pdb()).is_empty


def test_pdb_matches_even_though_status_changes_without_an_option_to_ignore_status() -> None:
    # objectmatcher's "pdb match even though status changes" (IgnoreStatusFields): status is never compared.
    status = {"currentHealthy": 1, "desiredHealthy": 1, "expectedPods": 1, "observedGeneration": 1}
    assert calculate(served(pdb(), lambda o: o.update(status=status)), pdb()).is_empty


def test_pdb_selector_changed_remotely_is_patched_back_whole() -> None:
    # objectmatcher's "pdb diff on matchlabels". The server replaces a PDB's selector whole on a strategic merge
    # patch, so the patch carries all of it, not just the label that differs.
    desired = pdb(matchLabels={"app": "example", "tier": "web"})
    live = served(desired, lambda o: o["spec"]["selector"]["matchLabels"].update(app="example2"))
    result = calculate(live, desired)
    assert result.patch == {"spec": {"selector": {"matchLabels": {"app": "example", "tier": "web"}}}}
    assert apply_patch(live, result.patch, result.patch_type)["spec"]["selector"] == desired["spec"]["selector"]


def test_pdb_selector_emptied_in_desired_is_patched_to_empty() -> None:
    every_pod = edited(pdb(), lambda d: d["spec"].update(selector={}))
    result = calculate(served(pdb()), every_pod)
    assert result.patch == {"spec": {"selector": {}}}
    assert apply_patch(served(pdb()), result.patch, result.patch_type)["spec"]["selector"] == {}


def statefulset() -> dict:
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": "test-1", "namespace": "default"},
        "spec": {
            "replicas": 0,
            "selector": {"matchLabels": {"a": "b"}},
            "template": {"metadata": {"labels": {"a": "b"}}, "spec": {}},
            "volumeClaimTemplates": [
                {
                    "metadata": {"name": "vault-raft"},
                    "spec": {
                        "accessModes": ["ReadWriteOnce"],
                        "resources": {"requests": {"storage": "2G"}},
                        "volumeMode": "Filesystem",
                    },
                    "status": {"phase": "Pending"},
                }
            ],
        },
    }


def test_statefulset_claim_templates_match_without_an_option_to_ignore_their_type_meta_and_status() -> None:
    # objectmatcher's "statefulset match for volumeclaimtemplates", which needed
    # IgnoreVolumeClaimTemplateTypeMetaAndStatus: the server adds apiVersion and kind to each template and
    # defaults its status, and a strategic merge replaces the atomic list. Items compare three-way here.
    def server(o: dict) -> None:
        for template in o["spec"]["volumeClaimTemplates"]:
            template.update(apiVersion="v1", kind="PersistentVolumeClaim", status={"phase": "Pending"})

    assert calculate(served(statefulset(), server), statefulset()).is_empty
    without_status = edited(statefulset(), lambda d: d["spec"]["volumeClaimTemplates"][0].pop("status"))
    assert calculate(served(without_status, server), without_status).is_empty


def test_statefulset_template_labels_changed_locally_differ() -> None:
    # objectmatcher's "statefulset diff for template".
    changed = edited(statefulset(), lambda d: d["spec"]["template"]["metadata"].update(labels={"c": "d"}))
    assert calculate(served(statefulset()), changed).patch == {
        "spec": {"template": {"metadata": {"labels": {"a": None, "c": "d"}}}}
    }


# What annotate saw is the baseline


def test_namespace_annotated_but_left_out_of_desired_is_not_deleted() -> None:
    unnamespaced = edited(deployment(), lambda d: d["metadata"].pop("namespace"))
    live = served(deployment())  # annotated with the namespace it was created in
    assert calculate(live, unnamespaced).is_empty
    assert calculate(live, edited(unnamespaced, lambda d: d["metadata"].pop("labels"))).patch == {
        "metadata": {"labels": None}
    }


def test_other_fields_annotated_but_left_out_of_desired_are_deleted() -> None:
    live = served(edited(deployment(), lambda d: d["spec"].update(minReadySeconds=5)))
    assert calculate(live, deployment()).patch == {"spec": {"minReadySeconds": None}}
