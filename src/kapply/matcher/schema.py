"""What the matcher knows about the shape of an object, from the OpenAPI v3 schemas a cluster publishes.

For each kind it needs: which dicts are structs (fields) and which are maps (keys are data); which lists
merge item by item and on which key (`x-kubernetes-patch-merge-key`, `x-kubernetes-list-map-keys`), which
are sets and which are atomic; which values are quantities or int-or-string; and whether the server accepts
a strategic merge patch for the kind (built-in kinds) or only a JSON merge patch (custom resources).

A `Schema` reads OpenAPI v3 documents as `GET /openapi/v3/apis/<group>/<version>` returns them (or the one
OpenAPI v2 document of `GET /openapi/v2`), and turns a kind's schema into a tree of `Node`s on first use.
`Schema.builtin()` ships the schemas of the common core, apps, batch, networking, autoscaling, policy and rbac
kinds (pruned to what matters here, from Kubernetes 1.34), so the matcher works without a cluster; `fetch.py`
gets the cluster's own, and more of them when it meets a kind it does not know.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache
from importlib.resources import files
from typing import Any

import orjson


class PatchType(enum.StrEnum):
    """The patch format, named by the Content-Type to PATCH it with."""

    STRATEGIC = "application/strategic-merge-patch+json"
    MERGE = "application/merge-patch+json"


class Shape(enum.IntEnum):
    SCALAR = 0
    QUANTITY = 1
    INT_OR_STRING = 2
    STRUCT = 3
    MAP = 4
    LIST = 5
    BYTES = 6  # base64 text


class ListKind(enum.IntEnum):
    ATOMIC = 0  # compared position by position, replaced whole
    KEYED = 1  # items identified by `keys`; order does not matter
    SET = 2  # scalar items; order does not matter


@dataclass(slots=True, eq=False)
class Node:
    """The shape of one value. A struct's unknown fields, a map's values and a list's items have `item`'s
    shape. `builtin` is false inside custom resources, where an empty string is a value like any other.
    Not frozen: a schema that refers to itself gets its node before the node's fields are built."""

    shape: Shape
    builtin: bool = True
    fields: dict[str, Node] = field(default_factory=dict)
    item: Node | None = None
    list_kind: ListKind = ListKind.ATOMIC
    keys: tuple[str, ...] = ()
    merge: bool = False  # a strategic merge patch merges this list item by item (else replaces it whole)
    retain_keys: bool = False  # a strategic merge patch may say which keys of this struct to keep
    replace: bool = False  # a strategic merge patch replaces this struct or map whole (a PDB's selector)


def _any(builtin: bool) -> tuple[Node, Node]:
    struct = Node(Shape.STRUCT, builtin)
    struct.item = struct
    return struct, Node(Shape.LIST, builtin, item=struct)


SCALAR = Node(Shape.SCALAR)
QUANTITY = Node(Shape.QUANTITY)
INT_OR_STRING = Node(Shape.INT_OR_STRING)
BYTES = Node(Shape.BYTES)
ANY_BUILTIN, ANY_BUILTIN_LIST = _any(True)
ANY_JSON, ANY_JSON_LIST = _any(False)

QUANTITY_DEF = "io.k8s.apimachinery.pkg.api.resource.Quantity"
INT_OR_STRING_DEF = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"
OBJECT_META_DEF = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
# Kinds served by Kubernetes' own API servers, which accept strategic merge patches; CRDs do not.
_STRATEGIC_PREFIXES = ("io.k8s.api.", "io.k8s.kube-aggregator.", "io.k8s.apiextensions-apiserver.")
_LIST_EXTENSIONS = (
    "x-kubernetes-list-type",
    "x-kubernetes-list-map-keys",
    "x-kubernetes-patch-merge-key",
    "x-kubernetes-patch-strategy",
)

BUILTIN_KINDS = (
    ("v1", "ConfigMap"),
    ("v1", "Secret"),
    ("v1", "Service"),
    ("v1", "ServiceAccount"),
    ("v1", "Pod"),
    ("v1", "PersistentVolumeClaim"),
    ("v1", "Namespace"),
    ("v1", "ResourceQuota"),
    ("v1", "LimitRange"),
    ("apps/v1", "Deployment"),
    ("apps/v1", "StatefulSet"),
    ("apps/v1", "DaemonSet"),
    ("apps/v1", "ReplicaSet"),
    ("batch/v1", "Job"),
    ("batch/v1", "CronJob"),
    ("networking.k8s.io/v1", "Ingress"),
    ("networking.k8s.io/v1", "NetworkPolicy"),
    ("autoscaling/v2", "HorizontalPodAutoscaler"),
    ("policy/v1", "PodDisruptionBudget"),
    ("rbac.authorization.k8s.io/v1", "Role"),
    ("rbac.authorization.k8s.io/v1", "RoleBinding"),
    ("rbac.authorization.k8s.io/v1", "ClusterRole"),
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"),
)


def _ref(schema: dict[str, Any]) -> str | None:
    ref = schema.get("$ref")
    if ref is None and (all_of := schema.get("allOf")) and len(all_of) == 1:
        ref = all_of[0].get("$ref")
    return ref.rpartition("/")[2] if ref else None


def _is_int_or_string(schema: dict[str, Any]) -> bool:
    return schema.get("format") == "int-or-string" or bool(schema.get("x-kubernetes-int-or-string"))


def _strategies(schema: dict[str, Any]) -> set[str]:
    return set(schema.get("x-kubernetes-patch-strategy", "").split(","))


def _read(documents: Iterable[Mapping[str, Any]]) -> tuple[dict[str, dict[str, Any]], dict[tuple[str, str], str]]:
    """The definitions of OpenAPI v3 (`components.schemas`) or v2 (`definitions`) documents, and the kinds they are."""
    definitions: dict[str, dict[str, Any]] = {}
    kinds: dict[tuple[str, str], str] = {}
    for document in documents:
        schemas = {**(document.get("definitions") or {}), **((document.get("components") or {}).get("schemas") or {})}
        for name, schema in schemas.items():
            definitions[name] = schema
            for gvk in schema.get("x-kubernetes-group-version-kind") or ():
                group, version = gvk.get("group", ""), gvk["version"]
                kinds.setdefault((f"{group}/{version}" if group else version, gvk["kind"]), name)
    return definitions, kinds


Refresh = Callable[["Schema"], object]


class Schema:
    """Object shapes by (apiVersion, kind). Kinds it does not know are compared as JSON, with standard metadata.

    `refresh` is called with the schema when it is asked for a kind it does not know, before it falls back to
    JSON; it may `update` the schema with the kind's document (`fetch_schema` passes one that asks the cluster)."""

    def __init__(
        self,
        definitions: dict[str, dict[str, Any]],
        kinds: dict[tuple[str, str], str],
        *,
        refresh: Refresh | None = None,
    ) -> None:
        self._definitions = definitions
        self._kinds = kinds
        self._refresh = refresh
        self._nodes: dict[str, Node] = {}
        self._roots: dict[tuple[str, str], tuple[Node, PatchType]] = {}

    @classmethod
    def from_openapi(cls, documents: Iterable[Mapping[str, Any]], *, refresh: Refresh | None = None) -> Schema:
        """From OpenAPI v3 documents (each with `components.schemas`) as the cluster serves them, or the OpenAPI
        v2 document (`definitions`)."""
        return cls(*_read(documents), refresh=refresh)

    @classmethod
    def from_json(cls, data: bytes, *, refresh: Refresh | None = None) -> Schema:
        """The inverse of `to_json`."""
        return cls.from_openapi([orjson.loads(data)], refresh=refresh)

    def update(self, documents: Iterable[Mapping[str, Any]]) -> None:
        """Adds the kinds of more OpenAPI documents, or replaces them (a CRD created or changed since).

        New dicts replace the old ones whole, so that a comparison running on another thread meanwhile still
        reads a consistent (old or new) schema."""
        definitions, kinds = _read(documents)
        self._definitions = {**self._definitions, **definitions}
        self._kinds = {**self._kinds, **kinds}
        self._nodes = {}
        self._roots = {}

    @staticmethod
    def builtin() -> Schema:
        """The shipped schemas of common built-in kinds (`BUILTIN_KINDS`)."""
        return _builtin()

    def kinds(self) -> list[tuple[str, str]]:
        return sorted(self._kinds)

    def to_json(self, kinds: Iterable[tuple[str, str]] | None = None) -> bytes:
        """An OpenAPI v3 document holding only what the matcher reads, for `kinds` (default: all): a few
        percent of the original's size, for a file cache or a shipped schema."""
        roots: dict[str, list[dict[str, str]]] = {}
        for api_version, kind in self._kinds if kinds is None else kinds:
            group, _, version = api_version.rpartition("/")
            roots.setdefault(self._kinds[api_version, kind], []).append(
                {"group": group, "version": version, "kind": kind}
            )
        return orjson.dumps(
            {"openapi": "3.0.0", "components": {"schemas": _Pruner(self._definitions).run(roots)}},
            option=orjson.OPT_SORT_KEYS,
        )

    def root(self, api_version: str, kind: str) -> tuple[Node, PatchType]:
        """The shape of a whole object of this kind, and the patch type its API server accepts."""
        key = (api_version, kind)
        found = self._roots.get(key)
        if found is None:
            name = self._kinds.get(key)
            if name is None and self._refresh is not None:
                self._refresh(self)
                name = self._kinds.get(key)
            if name is None:
                found = (Node(Shape.STRUCT, False, {"metadata": self._object_meta()}, ANY_JSON), PatchType.MERGE)
                if self._refresh is not None:
                    return found  # not kept: a later refresh may find the kind
            else:
                found = (
                    self._named(name),
                    PatchType.STRATEGIC if name.startswith(_STRATEGIC_PREFIXES) else PatchType.MERGE,
                )
            self._roots[key] = found
        return found

    def _object_meta(self) -> Node:
        if OBJECT_META_DEF in self._definitions:
            return self._named(OBJECT_META_DEF)
        return _builtin()._named(OBJECT_META_DEF)

    def _named(self, name: str) -> Node:
        node = self._nodes.get(name)
        if node is not None:
            return node
        if name == QUANTITY_DEF:
            return QUANTITY
        if name == INT_OR_STRING_DEF:
            return INT_OR_STRING
        builtin = name.startswith("io.k8s.")
        schema = self._definitions.get(name)
        if schema is None:
            return ANY_BUILTIN if builtin else ANY_JSON
        if schema.get("properties"):
            # Registered before its fields are built: schemas refer to themselves (JSONSchemaProps).
            node = self._nodes[name] = Node(Shape.STRUCT, builtin, item=ANY_BUILTIN if builtin else ANY_JSON)
            self._fill_struct(node, schema["properties"])
            return node
        node = self._nodes[name] = self._node(schema, builtin)
        return node

    def _fill_struct(self, node: Node, properties: dict[str, dict[str, Any]]) -> None:
        for key, prop in properties.items():
            child = self._node(prop, node.builtin)
            strategies = _strategies(prop)
            if child.shape is Shape.STRUCT and "retainKeys" in strategies:
                child = dataclasses.replace(child, retain_keys=True)
            if child.shape in (Shape.STRUCT, Shape.MAP) and "replace" in strategies:
                child = dataclasses.replace(child, replace=True)
            node.fields[key] = child

    def _node(self, schema: dict[str, Any], builtin: bool) -> Node:
        if (name := _ref(schema)) is not None:
            return self._named(name)
        if _is_int_or_string(schema):
            return INT_OR_STRING
        if schema.get("format") == "byte":
            return BYTES
        if schema.get("type") == "array" or "items" in schema:
            return self._list(schema, builtin)
        if properties := schema.get("properties"):
            node = Node(Shape.STRUCT, builtin, item=ANY_BUILTIN if builtin else ANY_JSON)
            self._fill_struct(node, properties)
            return node
        if isinstance(values := schema.get("additionalProperties"), dict):
            return Node(Shape.MAP, builtin, item=self._node(values, builtin))
        if schema.get("type") == "object" or schema.get("x-kubernetes-preserve-unknown-fields"):
            return ANY_BUILTIN if builtin else ANY_JSON
        return SCALAR

    def _list(self, schema: dict[str, Any], builtin: bool) -> Node:
        item = self._node(schema.get("items") or {}, builtin)
        strategies = _strategies(schema)
        if "retainKeys" in strategies and item.shape is Shape.STRUCT:
            item = dataclasses.replace(item, retain_keys=True)
        merge = "merge" in strategies
        merge_key = schema.get("x-kubernetes-patch-merge-key")
        map_keys = tuple(schema.get("x-kubernetes-list-map-keys") or ())
        list_type = schema.get("x-kubernetes-list-type")
        if merge_key:
            return Node(Shape.LIST, builtin, item=item, list_kind=ListKind.KEYED, keys=(merge_key,), merge=merge)
        if list_type == "map" and map_keys:
            return Node(Shape.LIST, builtin, item=item, list_kind=ListKind.KEYED, keys=map_keys)
        if list_type == "set" or (merge and item.shape < Shape.STRUCT):
            return Node(Shape.LIST, builtin, item=item, list_kind=ListKind.SET, merge=merge)
        return Node(Shape.LIST, builtin, item=item)


class _Pruner:
    """Keeps of each schema only lists, maps, quantities, int-or-strings, base64 strings and the structs that lead
    to them: a
    struct field the pruned schema leaves out is compared as a plain value, which is what it was."""

    def __init__(self, definitions: dict[str, dict[str, Any]]) -> None:
        self._definitions = definitions
        self._kept: dict[str, bool] = {}
        self._pruned: dict[str, dict[str, Any]] = {}

    def run(self, roots: dict[str, list[dict[str, str]]]) -> dict[str, dict[str, Any]]:
        """The pruned schemas of `roots` (definition names, with the kinds they are) and what they refer to."""
        for name, kinds in roots.items():
            self._definition(name)
            self._pruned[name] = {**self._pruned.get(name, {}), "x-kubernetes-group-version-kind": kinds}
        return {name: schema for name, schema in self._pruned.items() if schema}

    def _definition(self, name: str) -> bool:
        if name in (QUANTITY_DEF, INT_OR_STRING_DEF):
            return True
        if name not in self._kept:
            self._kept[name] = True  # a schema that refers to itself is kept while it is being pruned
            pruned = self._schema(self._definitions.get(name) or {})
            self._pruned[name] = pruned or {}
            self._kept[name] = pruned is not None
        return self._kept[name]

    def _schema(self, schema: dict[str, Any]) -> dict[str, Any] | None:
        if (name := _ref(schema)) is not None:
            return {"$ref": f"#/components/schemas/{name}"} if self._definition(name) else None
        if _is_int_or_string(schema):
            return {"x-kubernetes-int-or-string": True}
        if schema.get("format") == "byte":
            return {"format": "byte"}
        if schema.get("type") == "array" or "items" in schema:
            out: dict[str, Any] = {"type": "array", **{k: schema[k] for k in _LIST_EXTENSIONS if k in schema}}
            if (items := self._schema(schema.get("items") or {})) is not None:
                out["items"] = items
            return out
        if isinstance(values := schema.get("additionalProperties"), dict):
            return {"additionalProperties": self._schema(values) or {}}
        properties = {}
        for key, prop in (schema.get("properties") or {}).items():
            if (pruned := self._schema(prop)) is not None:
                if "x-kubernetes-patch-strategy" in prop:
                    pruned["x-kubernetes-patch-strategy"] = prop["x-kubernetes-patch-strategy"]
                properties[key] = pruned
        if properties:
            return {"properties": properties}
        if schema.get("x-kubernetes-preserve-unknown-fields"):
            return {"x-kubernetes-preserve-unknown-fields": True}
        return None


@cache
def _builtin() -> Schema:
    return Schema.from_json(files("kapply.matcher").joinpath("builtin_schema.json").read_bytes())
