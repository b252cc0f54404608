"""The three-way diff: what to patch in `current` so that it holds `modified`, given `original`.

As `kubectl apply` does it: a field of `modified` whose value differs from `current` is patched; a field of
`original` that `modified` no longer has is deleted from `current`; a field in neither (a server default, a
value another controller owns) is left alone. Lists merge item by item on their key where the schema says
so, and the order of their items never matters; items the control plane injects are never a change. A struct
the server replaces whole on a strategic merge patch (a PodDisruptionBudget's selector) is sent whole when it
differs.

Two-way mode drops the last rule for maps and lists: every key and item of a map or list that `modified`
has must be in `current` and nothing else may be, except keys and items the control plane adds by design.
Struct fields `modified` leaves out stay alone in both modes: they cannot be told apart from defaults.

Empty (`None`, `{}`, `[]`, and `""` in a built-in struct field, which the server drops) equals absent.
The result is a strategic merge patch (`strategic`) or a JSON merge patch, `{}` when nothing differs.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Hashable
from typing import Any, NamedTuple

from kapply.matcher.patch import DELETE_FROM_PRIMITIVE_LIST, apply_dict
from kapply.matcher.quantity import parse_quantity
from kapply.matcher.schema import (
    ANY_BUILTIN,
    ANY_BUILTIN_LIST,
    ANY_JSON,
    ANY_JSON_LIST,
    ListKind,
    Node,
    Shape,
)
from kapply.objects import Obj

_SAME: Any = object()  # no change; `None` in a patch means "delete"
_EMPTY = frozenset({dict, list})
_EMPTY_IN_BUILTIN_STRUCT = frozenset({dict, list, str})

# What the control plane adds to objects by design, so two-way mode does not fight it.
_CONTROL_PLANE_DOMAINS = ("kubernetes.io", "k8s.io")
_CONTROL_PLANE_KEYS = frozenset({"deprecated.daemonset.template.generation", "foregroundDeletion", "orphan"})
_SERVICE_ACCOUNT_MOUNT = "/var/run/secrets/kubernetes.io/serviceaccount"
_DEFAULT_TOLERATIONS = frozenset({"node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"})


class _SetPatch(NamedTuple):
    """A strategic merge patch of a set: items to add, and items for `$deleteFromPrimitiveList`."""

    add: list[Any]
    delete: list[Any]


def diff(root: Node, original: Obj | None, modified: Obj, current: Obj, *, two_way: bool, strategic: bool) -> Obj:
    return _diff_dict(root, _unless_equal(original, modified), modified, current, two_way, strategic)


def _control_plane_key(key: str) -> bool:
    """Annotation, label and finalizer keys in the kubernetes.io and k8s.io namespaces belong to the control
    plane (`deployment.kubernetes.io/revision`, `kubernetes.io/pvc-protection`)."""
    domain, slash, _ = key.rpartition("/")
    if slash:
        return domain in _CONTROL_PLANE_DOMAINS or domain.endswith((".kubernetes.io", ".k8s.io"))
    return key in _CONTROL_PLANE_KEYS


def _injected(item: object) -> bool:
    """The service-account token volume and its mounts, and the not-ready/unreachable tolerations, which
    admission adds to every pod."""
    if type(item) is not dict:
        return False
    name = item.get("name")
    if type(name) is str and name.startswith("kube-api-access-") and "projected" in item:
        return True
    if item.get("mountPath") == _SERVICE_ACCOUNT_MOUNT:
        return True
    return (
        item.get("key") in _DEFAULT_TOLERATIONS
        and item.get("effect") == "NoExecute"
        and item.get("operator") == "Exists"
        and item.get("tolerationSeconds") == 300
    )


def _clean(value: Any) -> Any:
    """`value` without its None entries, as a patch sets it."""
    if type(value) is dict:
        return {k: _clean(v) for k, v in value.items() if v is not None}
    if type(value) is list:
        return [_clean(v) for v in value]
    return value


def _diff_dict(node: Node, o: Obj | None, m: Obj, c: Obj, two_way: bool, strategic: bool) -> Obj:
    patch: Obj = {}
    is_map = node.shape is Shape.MAP
    fields = node.fields
    default = node.item
    empty = _EMPTY if is_map or not node.builtin else _EMPTY_IN_BUILTIN_STRUCT
    for k, mv in m.items():
        cv = c.get(k)
        tm = type(mv)
        if tm is type(cv) and mv == cv:  # most values are equal, and the comparison runs in C
            continue
        if mv is None or (not mv and tm in empty):
            continue
        if cv is None:
            patch[k] = _clean(mv)
            continue
        child = default if is_map else fields.get(k, default)
        if child is None:  # a root whose schema was pruned to nothing: any JSON, as patch._child has it
            child = ANY_BUILTIN if node.builtin else ANY_JSON
        # _diff_value, unrolled: this loop is where the time goes.
        if tm is dict:
            if type(cv) is not dict:
                patch[k] = _clean(mv)
                continue
            if child.shape is not Shape.STRUCT and child.shape is not Shape.MAP:
                child = ANY_BUILTIN if child.builtin else ANY_JSON
            ov = o.get(k) if o else None
            d = _diff_dict(child, ov if type(ov) is dict and ov != mv else None, mv, cv, two_way, strategic)
            if d:
                patch[k] = _clean(mv) if strategic and child.replace else d
        elif tm is list:
            if type(cv) is not list:
                patch[k] = _clean(mv)
                continue
            if child.shape is not Shape.LIST:
                child = ANY_BUILTIN_LIST if child.builtin else ANY_JSON_LIST
            ov = o.get(k) if o else None
            d = _diff_list(child, ov if type(ov) is list and ov != mv else None, mv, cv, two_way, strategic)
            if d is not _SAME:
                _put(patch, k, d)
        elif not _same_scalar(child, mv, cv):
            patch[k] = mv
    if o:
        _deletions(node, o, m, c, two_way, strategic, empty, patch)
    if two_way and is_map:
        for k, cv in c.items():
            if cv is None or k in patch:
                continue
            mv = m.get(k)
            if (mv is None or (not mv and type(mv) in empty)) and not _control_plane_key(k):
                patch[k] = None
    if patch and strategic and node.retain_keys:
        patch["$retainKeys"] = sorted(k for k, v in m.items() if v is not None and (v or type(v) not in empty))
    return patch


def _put(patch: Obj, key: str, d: Any) -> None:
    if type(d) is _SetPatch:
        if d.add:
            patch[key] = d.add
        if d.delete:
            patch[DELETE_FROM_PRIMITIVE_LIST + key] = d.delete
    else:
        patch[key] = d


def _deletions(
    node: Node, o: Obj, m: Obj, c: Obj, two_way: bool, strategic: bool, empty: frozenset[type], patch: Obj
) -> None:
    """Fields of original that modified no longer sets, where current still has them."""
    for k, ov in o.items():
        cv = c.get(k)
        if ov is None or cv is None:
            continue
        mv = m.get(k)
        if mv is not None and (mv or type(mv) not in empty):
            continue
        ov_empty = not ov and type(ov) in empty
        cv_empty = not cv and type(cv) in empty
        if mv is None:
            # An empty value in original (`emptyDir: {}`) claims only an empty value in current.
            if not ov_empty or cv_empty:
                patch[k] = None
        elif not ov_empty and not cv_empty:
            # Modified sets the field to empty: delete what original had in it.
            child = node.item if node.shape is Shape.MAP else node.fields.get(k, node.item)
            if type(mv) is type(ov) is type(cv) and type(mv) in _EMPTY:
                if child is None:  # as in _diff_dict: a root pruned to nothing holds any JSON
                    child = ANY_BUILTIN if node.builtin else ANY_JSON
                d = _diff_value(child, ov, type(mv)(), cv, two_way, strategic)
                if d is not _SAME:
                    _put(patch, k, type(mv)() if strategic and child.replace else d)
            else:
                patch[k] = None


def _diff_value(node: Node, o: Any, m: Any, c: Any, two_way: bool, strategic: bool) -> Any:
    tm = type(m)
    if tm is dict:
        if type(c) is not dict:
            return _clean(m)
        if node.shape is not Shape.STRUCT and node.shape is not Shape.MAP:
            node = ANY_BUILTIN if node.builtin else ANY_JSON
        d = _diff_dict(node, o if type(o) is dict else None, m, c, two_way, strategic)
        return d if d else _SAME
    if tm is list:
        if type(c) is not list:
            return _clean(m)
        if node.shape is not Shape.LIST:
            node = ANY_BUILTIN_LIST if node.builtin else ANY_JSON_LIST
        return _diff_list(node, o if type(o) is list else None, m, c, two_way, strategic)
    return _SAME if _same_scalar(node, m, c) else m


def _same_scalar(node: Node, m: Any, c: Any) -> bool:
    tm, tc = type(m), type(c)
    if m == c and (tm is tc or (tm is not bool and tc is not bool)):
        return True
    if node.shape is Shape.QUANTITY:
        q = parse_quantity(m)
        return q is not None and q == parse_quantity(c)
    if node.shape is Shape.INT_OR_STRING:
        return tm is not bool and tc is not bool and str(m) == str(c)
    if node.shape is Shape.BYTES and tm is str and tc is str:
        try:
            return base64.b64decode(m) == base64.b64decode(c)
        except binascii.Error:
            return False
    return False


def _diff_list(node: Node, o: list[Any] | None, m: list[Any], c: list[Any], two_way: bool, strategic: bool) -> Any:
    if node.list_kind is ListKind.KEYED:
        d = _diff_keyed(node, o, m, c, two_way, strategic)
        if d is not None:
            return d
    elif node.list_kind is ListKind.SET:
        d = _diff_set(node, o, m, c, two_way, strategic)
        if d is not None:
            return d
    return _diff_atomic(node, o, m, c, two_way, strategic)


def _diff_atomic(node: Node, o: list[Any] | None, m: list[Any], c: list[Any], two_way: bool, strategic: bool) -> Any:
    """Position by position; an item's own fields compare three-way (the server defaults them too)."""
    items_m, items_c = m, c
    if len(m) != len(c):
        items_m = [x for x in m if not _injected(x)]
        items_c = [x for x in c if not _injected(x)]
        if len(items_m) != len(items_c):
            return _clean(m)
        o = None
    if o is not None and len(o) != len(items_m):
        o = None
    item = node.item
    assert item is not None  # schema.py builds every list node with an item shape
    for i, mv in enumerate(items_m):
        if mv is None:
            if items_c[i] is not None:
                return _clean(m)
        elif _diff_value(item, o[i] if o else None, mv, items_c[i], two_way, strategic) is not _SAME:
            return _clean(m)
    return _SAME


def _diff_set(node: Node, o: list[Any] | None, m: list[Any], c: list[Any], two_way: bool, strategic: bool) -> Any:
    try:
        in_c, in_m = set(c), set(m)
        add = [x for x in dict.fromkeys(m) if x not in in_c]
        delete = [x for x in dict.fromkeys(o) if x not in in_m and x in in_c] if o else []
    except TypeError:  # unhashable items: not a set after all
        return None
    if two_way:
        delete += [x for x in c if x not in in_m and x not in delete and not (type(x) is str and _control_plane_key(x))]
    if not add and not delete:
        return _SAME
    if strategic and node.merge:
        return _SetPatch(add, delete)
    gone = set(delete)
    return [x for x in c if x not in gone] + add


def _diff_keyed(node: Node, o: list[Any] | None, m: list[Any], c: list[Any], two_way: bool, strategic: bool) -> Any:
    """Items matched on their key; None when the items have no keys (then the list is compared as atomic)."""
    by_key_c = _by_key(node.keys, c)
    by_key_m = _by_key(node.keys, m)
    if by_key_c is None or by_key_m is None:
        return None
    if len(by_key_c) != len(c) or len(by_key_m) != len(m):
        return _diff_duplicates(node, o, m, c, two_way, strategic)
    assert node.item is not None  # schema.py builds every list node with an item shape
    item = node.item if node.item.shape is Shape.STRUCT else (ANY_BUILTIN if node.builtin else ANY_JSON)
    by_key_o = (_by_key(node.keys, o) or {}) if o else {}
    changes: dict[Hashable, Obj | None] = {}  # key -> item patch, or None for a new item
    for k, mi in by_key_m.items():
        ci = by_key_c.get(k)
        if ci is None:
            changes[k] = None
        elif mi != ci and (d := _diff_dict(item, _unless_equal(by_key_o.get(k), mi), mi, ci, two_way, strategic)):
            changes[k] = d
    deleted = [k for k in by_key_o if k not in by_key_m and k in by_key_c]
    if two_way:
        deleted += [k for k, ci in by_key_c.items() if k not in by_key_m and k not in by_key_o and not _injected(ci)]
    if not changes and not deleted:
        return _SAME
    single = node.keys[0] if len(node.keys) == 1 else None
    if strategic and node.merge and single is not None:
        out = [_clean(by_key_m[k]) if d is None else {single: k, **d} for k, d in changes.items()]
        out += [{single: k, "$patch": "delete"} for k in deleted]
        return out
    # Replaced whole: current's items in current's order, with the changes made.
    gone = set(deleted)
    out = [
        ci if (change := changes.get(k)) is None else apply_dict(item, ci, change, strategic)
        for k, ci in by_key_c.items()
        if k not in gone
    ]
    return out + [_clean(by_key_m[k]) for k, d in changes.items() if d is None]


def _unless_equal(original: Obj | None, modified: Obj) -> Obj | None:
    """Original, unless it equals modified: then nothing was deleted below, and the walk can skip it."""
    return None if original == modified else original


def _by_key(keys: tuple[str, ...], items: list[Any]) -> dict[Hashable, Obj] | None:
    """Items by their key (a later item with the same key wins); None if an item has no key."""
    out: dict[Hashable, Obj] = {}
    if len(keys) == 1:
        key = keys[0]
        for item in items:
            if type(item) is not dict or (k := item.get(key)) is None:
                return None
            out[k] = item
    else:
        for item in items:
            if type(item) is not dict or None in (k := tuple(map(item.get, keys))):
                return None
            out[k] = item
    return out


def _diff_duplicates(
    node: Node, o: list[Any] | None, m: list[Any], c: list[Any], two_way: bool, strategic: bool
) -> Any:
    """Keys that repeat (port 53 over TCP and over UDP) cannot be merged on: every item of modified must
    match its own item of current, and the patch replaces the list."""
    item = node.item
    assert item is not None  # schema.py builds every list node with an item shape
    unmatched = list(c)
    changed = False
    for mi in m:
        for j, ci in enumerate(unmatched):
            if _diff_value(item, None, mi, ci, two_way, strategic) is _SAME:
                del unmatched[j]
                break
        else:
            changed = True
            break
    if not changed and unmatched:
        if two_way:
            changed = any(not _injected(ci) for ci in unmatched)
        elif o:
            dropped = [
                oi
                for oi in o
                if not any(_diff_value(item, None, oi, mi, False, strategic) is _SAME for mi in m if type(mi) is dict)
            ]
            changed = any(
                _diff_value(item, None, oi, ci, False, strategic) is _SAME
                for oi in dropped
                if type(oi) is dict
                for ci in unmatched
            )
    if not changed:
        return _SAME
    if strategic and node.merge:
        return [{"$patch": "replace"}, *_clean(m)]
    return _clean(m)
