"""Property: whatever the last-applied state, the live object (with server defaults, normalised values,
injected items, reordered lists and other writers' changes) and the new desired state, applying the patch
to the live object gives an object that holds every field of desired, has lost what desired dropped, and
matches desired."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from kapply.matcher import Mode, annotate, apply_patch, calculate, parse_quantity

NAMES = ("a", "b", "c")
CPU = {"100m": "100m", "0.1": "100m", "1000m": "1", "1": "1", "1.5": "1500m", "2000m": "2"}
MEMORY = {"1024Mi": "1Gi", "1Gi": "1Gi", "64Mi": "64Mi", "65536Ki": "64Mi", "0.5Gi": "512Mi"}
TOKEN_VOLUME = {"name": "kube-api-access-x1", "projected": {"sources": [{"serviceAccountToken": {"path": "token"}}]}}
TOKEN_MOUNT = {"name": "kube-api-access-x1", "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}

texts = st.sampled_from(["", "x", "y", "long value"])
small_maps = st.dictionaries(st.sampled_from(["app", "tier", "team"]), texts, max_size=3)


def keyed(item: st.SearchStrategy, key: str, keys: tuple, min_size: int = 0) -> st.SearchStrategy:
    """Lists of dicts with unique values of `key`."""
    return st.lists(
        st.tuples(st.sampled_from(keys), item), unique_by=lambda pair: pair[0], min_size=min_size, max_size=len(keys)
    ).map(lambda pairs: [{key: k, **v} for k, v in pairs])


env = keyed(st.fixed_dictionaries({}, optional={"value": texts}), "name", ("X", "Y", "Z"))
ports = keyed(
    st.fixed_dictionaries({}, optional={"name": st.sampled_from(["http", "metrics"])}), "containerPort", (80, 443, 8080)
)
resources = st.fixed_dictionaries(
    {},
    optional={
        "limits": st.fixed_dictionaries(
            {}, optional={"cpu": st.sampled_from(sorted(CPU)), "memory": st.sampled_from(sorted(MEMORY))}
        ),
        "requests": st.fixed_dictionaries({}, optional={"cpu": st.sampled_from(sorted(CPU))}),
    },
)
container = st.fixed_dictionaries(
    {"image": st.sampled_from(["registry.invalid/app:1", "registry.invalid/app:2"])},
    optional={
        "env": env,
        "ports": ports,
        "resources": resources,
        "args": st.lists(st.sampled_from(["-v", "--serve", "x"]), max_size=3),
    },
)
volume = st.one_of(st.just({"emptyDir": {}}), st.builds(lambda n: {"configMap": {"name": n}}, st.sampled_from(NAMES)))
deployment = st.builds(
    lambda labels, annotations, finalizers, spec: {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": "web",
            "namespace": "ns",
            "labels": labels,
            "annotations": annotations,
            "finalizers": finalizers,
        },
        "spec": spec,
    },
    small_maps,
    small_maps,
    st.lists(st.sampled_from(["example.com/a", "example.com/b"]), unique=True),
    st.fixed_dictionaries(
        {
            "template": st.fixed_dictionaries(
                {
                    "spec": st.fixed_dictionaries(
                        {"containers": keyed(container, "name", NAMES, min_size=1)},
                        optional={"volumes": keyed(volume, "name", ("v1", "v2"))},
                    )
                }
            )
        },
        optional={
            "replicas": st.integers(0, 3),
            "strategy": st.sampled_from(
                [{"type": "Recreate"}, {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}}]
            ),
        },
    ),
)


def served(obj: dict, draw: Any) -> dict:
    """What the API server and other writers make of `obj`: defaults, canonical quantities, empty values
    dropped, server metadata and status, injected items, reordered lists and unrelated changes."""
    live = annotate(obj)
    meta = live["metadata"]
    meta.update(uid="u-1", resourceVersion="42", generation=3, creationTimestamp="2026-01-01T00:00:00Z")
    meta["labels"] = {**meta["labels"], **draw(st.dictionaries(st.just("other"), texts, max_size=1))}
    meta["annotations"] = {**meta["annotations"], "deployment.kubernetes.io/revision": "3"}
    live["status"] = {"replicas": 1}
    spec = live["spec"] = copy.deepcopy(live["spec"])
    spec.setdefault("replicas", 1)
    spec.setdefault(
        "strategy", {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}}
    )
    spec["revisionHistoryLimit"] = 10
    pod = spec["template"]["spec"]
    pod["dnsPolicy"] = "ClusterFirst"
    for c in pod["containers"]:
        c.setdefault("terminationMessagePath", "/dev/termination-log")
        for e in c.get("env", []):
            if e.get("value") == "":
                del e["value"]
        for p in c.get("ports", []):
            p["protocol"] = "TCP"
        for limits in (c.get("resources") or {}).values():
            for k, v in limits.items():
                limits[k] = {**CPU, **MEMORY}[v]
        c["env"] = draw(st.permutations(c.get("env", []) + draw(st.sampled_from([[], [{"name": "REMOTE"}]]))))
        c["volumeMounts"] = [TOKEN_MOUNT]
        for k in [k for k, v in c.items() if v in ([], {})]:
            del c[k]
    pod["containers"] = draw(st.permutations(pod["containers"]))
    pod["volumes"] = draw(st.permutations(pod.get("volumes", []) + [TOKEN_VOLUME]))
    return live


def holds(live: Any, desired: Any) -> bool:
    """Every non-empty field of desired is in live, with the same meaning; items of lists of named things
    are found by name, whatever their order."""
    if isinstance(desired, dict):
        return isinstance(live, dict) and all(
            holds(live.get(k), v) for k, v in desired.items() if v not in (None, "", [], {})
        )
    if isinstance(desired, list):
        if not isinstance(live, list):
            return False
        key = next((k for k in ("containerPort", "name") if isinstance(desired[0], dict) and k in desired[0]), None)
        if key is None:
            return live == desired
        by_key = {item.get(key): item for item in live}
        return all(holds(by_key.get(item[key]), item) for item in desired)
    if desired == live:
        return True
    q = parse_quantity(desired)
    return q is not None and q == parse_quantity(live)


def names(obj: dict, *path: str) -> set:
    for p in path:
        obj = obj.get(p) or {}
    return set(obj) if isinstance(obj, dict) else {i.get("name", i) if isinstance(i, dict) else i for i in obj}


@settings(max_examples=200, deadline=None)
@given(original=deployment, desired=deployment, data=st.data())
def test_applying_the_patch_gives_an_object_that_matches_desired(original: dict, desired: dict, data: Any) -> None:
    live = served(original, data.draw)
    for mode in Mode:
        result = calculate(live, desired, mode=mode)
        after = apply_patch(live, result.patch, result.patch_type)

        assert calculate(after, desired, mode=mode).is_empty, (result.patch, after)
        assert holds(after["spec"], desired["spec"])
        assert holds(after["metadata"], {k: v for k, v in desired["metadata"].items() if k != "finalizers"})
        assert names(desired, "metadata", "finalizers") <= names(after, "metadata", "finalizers")
        for path in (
            ("metadata", "labels"),
            ("metadata", "annotations"),
            ("metadata", "finalizers"),
            ("spec", "template", "spec", "volumes"),
        ):
            dropped = names(original, *path) - names(desired, *path)
            assert not dropped & names(after, *path), (path, result.patch)
        if mode is Mode.TWO_WAY and desired["metadata"]["labels"]:
            assert names(after, "metadata", "labels") == names(desired, "metadata", "labels")
