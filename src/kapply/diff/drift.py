"""Drift policies: what a deploy does with fields someone else changed on the cluster.

`enforce` is kapp's (and Flux kustomize-controller's) behaviour: every field of the desired state is sent, so outside
changes to those fields are reverted at the next deploy. `preserve` is Helm's three-way behaviour (seed 004): only what
changed in the desired state since the last applied copy is sent, so an outside change survives until the desired
value of that field changes. `warn` deploys like `enforce` would but reverts nothing: drift is only reported (Flux
helm-controller's `driftDetection.mode: warn`).
"""

from __future__ import annotations

import base64
from enum import StrEnum

from kapply.diff.fields import ABSENT, FieldPath, changed_paths, json_equal, value_at
from kapply.objects import Obj


class DriftPolicy(StrEnum):
    ENFORCE = "enforce"
    PRESERVE = "preserve"
    WARN = "warn"


def preserve(new: Obj, last_applied: Obj | None, live: Obj) -> Obj:
    """The object to apply under `preserve`: `live`, with exactly what changed from `last_applied` to `new` applied.

    Changed and added fields take `new`'s value, fields `new` no longer has are removed, and every other field keeps
    its live value, whoever set it: a replica count an HPA or `kubectl scale` chose stays until the desired replica
    count changes. This is applying the JSON merge patch (RFC 7386) from `last_applied` to `new` onto `live`, except
    that a null in `new` is kept as a value rather than read as "delete".

    Lists are values: a list whose desired value changed is replaced whole, elements someone else added to it (an
    injected sidecar container) included; an unchanged list keeps its live value. That is what Helm's three-way merge
    does for unstructured objects and `kubectl apply` for custom resources: without the kind's schema nothing says
    which lists merge by which key. kapply.matcher is not used for this: its three-way mode follows `kubectl apply`,
    which also patches back outside changes to fields the desired state sets (closer to `enforce`), its strategic
    merge needs the cluster's schema for custom resources, and the layer contract keeps the diff stage below it.

    Without a last-applied copy there is nothing to tell outside changes from desired ones: the result is `new`, and
    the deploy behaves like `enforce`."""
    if last_applied is None:
        return new
    return _three_way(last_applied, new, live)


def _three_way(last: Obj, new: Obj, live: Obj) -> Obj:
    result = dict(live)
    for key in last.keys() - new.keys():
        result.pop(key, None)
    for key, value in new.items():
        before = last.get(key, ABSENT)
        if json_equal(before, value):
            continue
        if isinstance(value, dict):
            # Merge patch semantics: a changed or added map is merged key by key into the live map (or into nothing).
            result[key] = _three_way(
                before if isinstance(before, dict) else {},
                value,
                live_value if isinstance(live_value := live.get(key), dict) else {},
            )
        else:
            result[key] = value
    return result


def as_stored(obj: Obj) -> Obj:
    """`obj` as the server stores it where that is known offline: a Secret's `stringData` is written into `data`,
    base64-encoded, and never returned; compared as given it would read as a field the cluster removed."""
    string_data = obj.get("stringData")
    if obj.get("kind") != "Secret" or obj.get("apiVersion") != "v1" or not isinstance(string_data, dict):
        return obj
    data = obj.get("data")
    data = data if isinstance(data, dict) else {}
    encoded = {k: base64.b64encode(str(v).encode()).decode() for k, v in string_data.items()}
    return {k: v for k, v in obj.items() if k != "stringData"} | {"data": {**data, **encoded}}


def drifted_paths(new: Obj, last_applied: Obj | None, live: Obj) -> list[FieldPath]:
    """The fields where `live` differs from what was last applied: outside changes, for `warn` and status reports.

    Only fields the last-applied copy sets count (changed or removed on the cluster): fields it never set are server
    defaults, metadata and status as much as anyone's additions, and cannot be told apart offline. Values compare as
    JSON, so a value the server normalises (`cpu: 1000m` stored as `1`) reads as drift. Without a last-applied copy,
    `new` stands in for it: every desired field the cluster holds differently. A Secret's `stringData` compares as the
    `data` the server makes of it."""
    applied = as_stored(last_applied if last_applied is not None else new)
    return [path for path in changed_paths(applied, live) if value_at(applied, path) is not ABSENT]
