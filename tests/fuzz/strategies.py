"""What the fuzz targets are fed: JSON values, resources with a wrong type in any field, kapp's annotations with bad
values, Configs and matchers of the right shape with wrong types and unknown fields inside, and YAML text (well
formed, malformed, nested too deep, aliasing too much, huge, not UTF-8)."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import yaml
from hypothesis import strategies as st

from kapply import objects
from kapply.graph import GraphOp

WORDS = (
    *("", "a", "b", "x", "ns", "other", "v1", "apps/v1", "apps", "ConfigMap", "Deployment", "Secret", "Namespace"),
    *("1", "-1", "0", "5", "1.5", "1" * 5000, "true", "null", "=", "<<", "{", "}", "[1]", '{"a": 1}', "\t", "\n"),
    *("{name}", "{kind}", "{namespace}", "{api-group}", "{crd-kind}", "{crd-group}", "{unknown}", "a/b/c", "-x-"),
    *("upsert after upserting g", "delete before deleting {name}", "upsert after upserting", "upsert soon g x"),
    *("fallback-on-update", "fallback-on-update-or-noop", "fallback-on-replace", "always-replace", "skip", "orphan"),
    *("new", "existing", "copy", "remove", "^a", "(", "a{2}", "(" * 300 + ")" * 300, "a{99999999999}", "[z-a]"),
    *("spec", "data", "metadata", "labels", "annotations", "template", "name", "kind", "apiVersion", "items"),
    *(objects.CONFIG_API_VERSION, "Config", "List", "ConfigMapList", "apiextensions.k8s.io/v1"),
    *("CustomResourceDefinition", "Job", "batch/v1", "a-ver-1", "a-ver-2", "a-ver-x", "CRDUpgradeSafety"),
)
words = st.sampled_from(WORDS)
keys = st.one_of(words, st.text(max_size=6))
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.integers(-(2**63), 2**64 - 1),  # what JSON from the API server or YAML can hold
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=12),
    words,
)
json_values = st.recursive(
    scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(keys, inner, max_size=4), max_leaves=16
)


def mostly(right: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Usually a value of the right shape, sometimes any JSON value at all."""
    return st.one_of(right, right, right, json_values)


def _deep_json(depth: int) -> str:
    return "[" * depth + "]" * depth


_RESOURCE_JSON = json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"k": "v"}})
ANNOTATION_VALUES: dict[str, st.SearchStrategy[str]] = {
    objects.ORIGINAL: st.sampled_from(
        [_RESOURCE_JSON, "{", "[1]", "null", "5", '"s"', _deep_json(300), _deep_json(2000), '{"metadata": 5}']
    )
    | json_values.map(json.dumps),
    objects.ORIGINAL_DIFF_MD5: st.sampled_from(["", "x", hashlib.md5(b"").hexdigest()]) | st.text(max_size=8),
    objects.IDENTITY: st.sampled_from(["v1;ns//ConfigMap/a;v1", "v1;;;", ""]),
    objects.NONCE: st.sampled_from(["", "x", "0"]),
    objects.VERSIONED: st.sampled_from(["", "true"]),
    objects.VERSIONED_KEEP_ORIGINAL: st.just(""),
    objects.NUM_VERSIONS: st.sampled_from(["1", "3", "0", "-1", "x", "1.5", "1" * 5000, " 2", "+2"]),
    objects.VERSIONED_EXPLICIT_REF: st.sampled_from(
        [
            "apiVersion: v1\nkind: ConfigMap\nname: a",
            "apiVersion: v1\nkind: ConfigMap\nname: a-ver-1\nnamespace: ns",
            "apiVersion: v1\nkind: ConfigMap\nname: 5",
            "apiVersion: v1\nkind: ConfigMap\nname: [a]",
            "name: [",
            "[1]",
            "a: .inf",
            "&a [*a]",
            "",
        ]
    ),
    objects.CHANGE_GROUP: words,
    objects.CHANGE_RULE: words,
    objects.CREATE_STRATEGY: words,
    objects.UPDATE_STRATEGY: words,
    objects.DELETE_STRATEGY: words,
    objects.NOOP: st.just(""),
    objects.EXISTS: st.just(""),
    objects.DISABLE_WAIT: st.just(""),
    objects.DISABLE_ORIGINAL: st.just(""),
}
_SUFFIXED = {objects.CHANGE_GROUP, objects.CHANGE_RULE, objects.VERSIONED_EXPLICIT_REF}


def _annotation(key: str) -> st.SearchStrategy[tuple[str, str]]:
    names = st.sampled_from([key, key + ".1", key + ".x"]) if key in _SUFFIXED else st.just(key)
    return st.tuples(names, ANNOTATION_VALUES[key] | st.text(max_size=8))


kapp_annotations = st.lists(st.sampled_from(sorted(ANNOTATION_VALUES)).flatmap(_annotation), max_size=5).map(dict)
string_maps = st.dictionaries(keys, words | st.text(max_size=8), max_size=3)
names = st.sampled_from(["a", "b", "a-ver-1", "a-ver-2", "c"])
# Kinds of the unit tests' discovery (tests/unit/conftest.py), and a few it does not know.
TYPES = (
    ("v1", "ConfigMap"),
    ("v1", "Secret"),
    ("v1", "Namespace"),
    ("apps/v1", "Deployment"),
    ("batch/v1", "Job"),
    ("apiextensions.k8s.io/v1", "CustomResourceDefinition"),
    ("example.com/v1", "Widget"),
    (objects.CONFIG_API_VERSION, "Config"),
    ("v1", "List"),
)
types = st.sampled_from(TYPES)
_BODY = {k: json_values for k in ("spec", "data", "status", "items", "secrets", "imagePullSecrets", "stringData")}


@st.composite
def resources(draw: st.DrawFn) -> dict[str, Any]:
    """A resource as a user may write it: any field may hold the wrong type."""
    api_version, kind = draw(types)
    metadata = draw(
        mostly(
            st.fixed_dictionaries(
                {"name": mostly(names)},
                optional={
                    "namespace": mostly(st.sampled_from(["ns", "other", ""])),
                    "generateName": mostly(st.just("gen-")),
                    "annotations": mostly(kapp_annotations),
                    "labels": mostly(string_maps | st.just({objects.CONFIG_LABEL: ""})),
                    "managedFields": json_values,
                },
            )
        )
    )
    body = draw(st.fixed_dictionaries({}, optional=_BODY))
    return {
        "apiVersion": draw(mostly(st.just(api_version))),
        "kind": draw(mostly(st.just(kind))),
        "metadata": metadata,
        **body,
    }


@st.composite
def live_resources(draw: st.DrawFn) -> dict[str, Any]:
    """A resource as the API server returns it: well-formed identity and metadata, anything in the rest."""
    api_version, kind = draw(types)
    metadata = {
        "name": draw(names),
        "namespace": draw(st.sampled_from(["ns", "other"])),
        "annotations": draw(kapp_annotations),
        "labels": draw(st.dictionaries(words, words, max_size=2)),
        **draw(st.fixed_dictionaries({}, optional={"managedFields": json_values, "uid": st.just("u-1")})),
    }
    body = draw(st.fixed_dictionaries({}, optional=_BODY))
    return {"apiVersion": api_version, "kind": kind, "metadata": metadata, **body}


graph_ops = st.sampled_from(list(GraphOp))

# --- Configs -------------------------------------------------------------------------------------------------------

unknown_fields = st.dictionaries(st.text(max_size=6), json_values, max_size=1)


def fields(required: dict[str, Any], optional: dict[str, Any]) -> st.SearchStrategy[Any]:
    """A map of known fields, now and then with an unknown one; sometimes not a map at all."""
    known = st.fixed_dictionaries(required, optional=optional)
    return mostly(st.one_of(known, known, known, st.tuples(known, unknown_fields).map(lambda p: {**p[1], **p[0]})))


path_parts = mostly(
    words | fields({}, {"allIndexes": mostly(st.just(True)), "index": mostly(st.integers(-1, 3)), "regex": words})
)
paths = mostly(st.lists(path_parts, max_size=4))
matchers: st.SearchStrategy[Any] = st.deferred(
    lambda: st.one_of(
        fields({"allMatcher": mostly(st.just({}))}, {}),
        fields({"anyMatcher": fields({}, {"matchers": mostly(st.lists(matchers, max_size=2))})}, {}),
        fields({"andMatcher": fields({}, {"matchers": mostly(st.lists(matchers, max_size=2))})}, {}),
        fields({"notMatcher": fields({"matcher": matchers}, {})}, {}),
        fields({"apiGroupKindMatcher": fields({}, {"apiGroup": mostly(words), "kind": mostly(words)})}, {}),
        fields({"apiVersionKindMatcher": fields({}, {"apiVersion": mostly(words), "kind": mostly(words)})}, {}),
        fields({"kindNamespaceNameMatcher": fields({}, {k: mostly(words) for k in ("kind", "namespace", "name")})}, {}),
        fields({"hasAnnotationMatcher": fields({}, {"keys": mostly(st.lists(words, max_size=2))})}, {}),
        fields({"hasNamespaceMatcher": fields({}, {"names": mostly(st.lists(words, max_size=2))})}, {}),
        fields({"customResourceMatcher": mostly(st.just({}))}, {}),
        fields({"emptyFieldMatcher": fields({"path": paths}, {})}, {}),
    )
)
resource_matchers = mostly(st.lists(matchers, max_size=3))
_RULE_FIELDS: dict[str, st.SearchStrategy[Any]] = {
    "path": paths,
    "paths": mostly(st.lists(paths, max_size=2)),
    "type": mostly(words),
    "sources": mostly(st.lists(mostly(words), max_size=2)),
    "resourceMatchers": resource_matchers,
    "isDefault": mostly(st.booleans()),
    "name": mostly(words),
    "rules": mostly(st.lists(mostly(words), max_size=2)),
    "ignoreIfCyclical": mostly(st.booleans()),
    "supportsObservedGeneration": mostly(st.booleans()),
    "conditionMatchers": mostly(
        st.lists(
            fields(
                {},
                {"type": mostly(words), "status": mostly(words)}
                | {k: mostly(st.booleans()) for k in ("failure", "success", "unblockChanges")},
            ),
            max_size=2,
        )
    ),
    "affectedResources": fields(
        {},
        {
            "objectReferences": mostly(
                st.lists(
                    fields({}, {"path": paths, "resourceMatchers": resource_matchers, "nameKey": words}), max_size=2
                )
            )
        },
    ),
    "ytt": fields({}, {"overlayContractV1": fields({}, {"overlay.yml": mostly(words)})}),
    "config": json_values,
}


def rules(*names: str) -> st.SearchStrategy[Any]:
    return mostly(st.lists(fields({}, {name: _RULE_FIELDS[name] for name in names}), max_size=3))


configs = fields(
    {"apiVersion": mostly(st.just(objects.CONFIG_API_VERSION)), "kind": mostly(st.just("Config"))},
    {
        "minimumRequiredVersion": mostly(st.sampled_from(["0.1.0", "v1", "1" * 5000, "0.64.2-rc.1", "99", "a.b"])),
        "rebaseRules": rules("path", "paths", "type", "sources", "resourceMatchers", "ytt"),
        "ownershipLabelRules": rules("path", "resourceMatchers"),
        "labelScopingRules": rules("path", "isDefault", "resourceMatchers"),
        "templateRules": rules("resourceMatchers", "affectedResources"),
        "diffAgainstLastAppliedFieldExclusionRules": rules("path", "resourceMatchers"),
        "diffAgainstExistingFieldExclusionRules": rules("path", "resourceMatchers"),
        "diffMaskRules": rules("path", "resourceMatchers"),
        "waitRules": rules("supportsObservedGeneration", "conditionMatchers", "resourceMatchers", "ytt"),
        "changeGroupBindings": rules("name", "resourceMatchers"),
        "changeRuleBindings": rules("rules", "ignoreIfCyclical", "resourceMatchers"),
        "additionalLabels": mostly(string_maps),
        "preflightRules": rules("name", "config"),
    },
)

# --- YAML text -----------------------------------------------------------------------------------------------------

_TOKENS = (
    *("\n", "  ", " ", "- ", ": ", "? ", "[", "]", "{", "}", ", ", "&a ", "&b ", "*a", "*b", "<<: ", "|", ">", "|-"),
    *("!!int ", "!!str ", "!!binary ", "!!float ", "!!bool ", "!!null ", "!!timestamp ", "!!map ", "!!seq ", "!x "),
    *("! ", "'", '"', "#", "---\n", "...\n", "%YAML 1.1\n", "%TAG ! tag:x,2000:\n", "\t", "\\", "\x00", "\ufeff"),
    *("apiVersion: v1\n", "kind: ConfigMap\n", "kind: List\n", "items:\n", "metadata:\n  name: a\n", "data:\n"),
    *("  k: v\n", "on", "y", "=", "~", "null", "1e3", "0x1F", "0o17", "12:30", "2024-01-01", ".inf", ".nan", "-.inf"),
    *("1.5", "true", "aGVsbG8=", "\u2028", "é", "\U0001f600", "x", "0b-1", "1" * 400),
)
token_soup = st.lists(st.sampled_from(_TOKENS), max_size=40).map("".join)


def _dump(docs: list[Any], flow: bool) -> str:
    return yaml.safe_dump_all(docs, default_flow_style=flow, allow_unicode=True)


manifests_yaml = st.tuples(st.lists(resources(), min_size=1, max_size=4), st.booleans()).map(lambda p: _dump(*p))


@st.composite
def deep_nesting(draw: st.DrawFn) -> str:
    """Collections nested around the limit, or far beyond it, in flow or block style, maybe through an alias."""
    depth = draw(st.one_of(st.integers(95, 105), st.sampled_from([1_000, 100_000])))
    style = draw(st.sampled_from(["flow", "block", "alias"]))
    if style == "flow":
        return "a: " + "[" * depth + "]" * depth + "\n"
    if style == "block":
        return "".join(" " * i + "k:\n" for i in range(min(depth, 2_000))) + " " * min(depth, 2_000) + "v\n"
    half = depth // 2
    return f"a: &a {'[' * half}{']' * half}\nb: {'[' * half}*a{']' * half}\n"


@st.composite
def aliasing(draw: st.DrawFn) -> str:
    """A billion-laughs document: levels of anchors, each a list of aliases to the one before, with padding."""
    levels, fan_out, padding = draw(st.integers(1, 9)), draw(st.integers(1, 10)), draw(st.integers(0, 2_000))
    lines = [f"l0: &l0 [{','.join(['x'] * max(fan_out, 1))}]", f"pad: [{','.join(['p'] * padding)}]"]
    for level in range(1, levels + 1):
        lines.append(f"l{level}: &l{level} [{','.join([f'*l{level - 1}'] * fan_out)}]")
    return "\n".join(lines) + "\n"


huge = st.integers(1, 20_000).map(
    lambda n: (
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: huge}\ndata:\n"
        + "".join(f"  k{i}: v{i}\n" for i in range(n))
    )
)


@st.composite
def mutated(draw: st.DrawFn, base: st.SearchStrategy[str]) -> str:
    """A text with a few tokens inserted and a few characters deleted."""
    text = draw(base)
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(text)))
        if draw(st.booleans()):
            text = text[:at] + draw(st.sampled_from(_TOKENS)) + text[at:]
        else:
            text = text[:at] + text[at + draw(st.integers(1, 3)) :]
    return text


yaml_texts = st.one_of(
    token_soup, manifests_yaml, mutated(manifests_yaml), deep_nesting(), aliasing(), huge, mutated(token_soup)
)


@st.composite
def not_utf8(draw: st.DrawFn) -> bytes:
    """Encoded text with a few bytes that are not (valid) UTF-8."""
    data = draw(st.one_of(manifests_yaml, token_soup)).encode()
    for _ in range(draw(st.integers(1, 3))):
        at = draw(st.integers(0, len(data)))
        data = data[:at] + draw(st.binary(min_size=1, max_size=3)) + data[at:]
    return data


yaml_inputs: st.SearchStrategy[str | bytes] = st.one_of(yaml_texts, not_utf8(), st.binary(max_size=64))
