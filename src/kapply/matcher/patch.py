"""Applying a patch locally, as the API server would: a JSON merge patch (RFC 7386), or the part of the
strategic merge patch format the diff produces (lists merged on their key, `$patch: delete` and
`$patch: replace` items, `$deleteFromPrimitiveList/<field>`, `$retainKeys`, and structs the schema says are
replaced whole)."""

from __future__ import annotations

from typing import Any

from kapply.matcher.schema import ANY_BUILTIN, ANY_JSON, ListKind, Node, Shape
from kapply.objects import Obj

DELETE_FROM_PRIMITIVE_LIST = "$deleteFromPrimitiveList/"


def apply_dict(node: Node, target: Obj, patch: Obj, strategic: bool) -> Obj:
    result = dict(target)
    retain: list[str] | None = None
    deletions: list[tuple[str, list[Any]]] = []
    for k, pv in patch.items():
        if strategic and k.startswith("$"):
            if k == "$retainKeys":
                retain = pv
            elif k.startswith(DELETE_FROM_PRIMITIVE_LIST):
                deletions.append((k[len(DELETE_FROM_PRIMITIVE_LIST) :], pv))
            continue
        if pv is None:
            result.pop(k, None)
            continue
        tv = result.get(k)
        child = _child(node, k)
        if type(pv) is dict and type(tv) is dict:
            if strategic and (pv.get("$patch") == "replace" or child.replace):
                result[k] = _value(pv, strategic)
            else:
                result[k] = apply_dict(
                    child if child.shape in (Shape.STRUCT, Shape.MAP) else _any(node), tv, pv, strategic
                )
        elif strategic and type(pv) is list and type(tv) is list and child.shape is Shape.LIST and child.merge:
            result[k] = _merge_list(child, tv, pv)
        else:
            result[k] = _value(pv, strategic)
    for k, gone in deletions:
        if type(result.get(k)) is list:
            result[k] = [x for x in result[k] if x not in gone]
    if retain is not None:
        result = {k: v for k, v in result.items() if k in retain}
    return result


def _child(node: Node, key: str) -> Node:
    if node.shape is Shape.MAP:
        return node.item or _any(node)
    return node.fields.get(key) or node.item or _any(node)


def _any(node: Node) -> Node:
    return ANY_BUILTIN if node.builtin else ANY_JSON


def _value(value: Any, strategic: bool) -> Any:
    """A patch value that replaces whatever was there: without nulls, or directives."""
    if type(value) is dict:
        return {
            k: _value(v, strategic) for k, v in value.items() if v is not None and not (strategic and k.startswith("$"))
        }
    if type(value) is list:
        return [_value(v, strategic) for v in value]
    return value


def _merge_list(node: Node, target: list[Any], patch: list[Any]) -> list[Any]:
    if node.list_kind is not ListKind.KEYED:
        return target + [x for x in dict.fromkeys(patch) if x not in target]
    if any(type(p) is dict and p.get("$patch") == "replace" for p in patch):
        return [_value(p, True) for p in patch if not (type(p) is dict and "$patch" in p)]
    key = node.keys[0]
    assert node.item is not None  # schema.py builds every list node with an item shape
    item = node.item if node.item.shape is Shape.STRUCT else _any(node)
    out = list(target)
    for p in patch:
        k = p.get(key)
        if p.get("$patch") == "delete":
            out = [t for t in out if not (type(t) is dict and t.get(key) == k)]
            continue
        for i, t in enumerate(out):
            if type(t) is dict and t.get(key) == k:
                out[i] = apply_dict(item, t, p, True)
                break
        else:
            out.append(_value(p, True))
    return out
