"""Resource matchers: which resources a config rule applies to.

Every rule carries a list of matchers and applies to a resource if any of them matches
(`matches_any`). Resources are plain dicts; a cluster-scoped resource has no `metadata.namespace`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from kapply import objects
from kapply.config.decode import Decoder
from kapply.config.paths import Path, is_empty_at, parse_path
from kapply.objects import group_of

# API groups served by Kubernetes itself; any other group is a custom resource.
BUILTIN_API_GROUPS = frozenset(
    {
        "",
        "admissionregistration.k8s.io",
        "apiextensions.k8s.io",
        "apiregistration.k8s.io",
        "apps",
        "authentication.k8s.io",
        "authorization.k8s.io",
        "autoscaling",
        "batch",
        "certificates.k8s.io",
        "coordination.k8s.io",
        "discovery.k8s.io",
        "events.k8s.io",
        "extensions",
        "flowcontrol.apiserver.k8s.io",
        "internal.apiserver.k8s.io",
        "metrics.k8s.io",
        "migration.k8s.io",
        "networking.k8s.io",
        "node.k8s.io",
        "policy",
        "rbac.authorization.k8s.io",
        "scheduling.k8s.io",
        "storage.k8s.io",
    }
)


@dataclass(frozen=True, slots=True)
class AllMatcher:
    def matches(self, res: dict[str, Any]) -> bool:
        return True


@dataclass(frozen=True, slots=True)
class AnyMatcher:
    matchers: tuple[Matcher, ...]

    def matches(self, res: dict[str, Any]) -> bool:
        return any(m.matches(res) for m in self.matchers)


@dataclass(frozen=True, slots=True)
class AndMatcher:
    matchers: tuple[Matcher, ...]

    def matches(self, res: dict[str, Any]) -> bool:
        return all(m.matches(res) for m in self.matchers)


@dataclass(frozen=True, slots=True)
class NotMatcher:
    matcher: Matcher

    def matches(self, res: dict[str, Any]) -> bool:
        return not self.matcher.matches(res)


@dataclass(frozen=True, slots=True)
class ApiGroupKindMatcher:
    api_group: str
    kind: str

    def matches(self, res: dict[str, Any]) -> bool:
        return group_of(res) == self.api_group and objects.kind(res) == self.kind


@dataclass(frozen=True, slots=True)
class ApiVersionKindMatcher:
    api_version: str
    kind: str

    def matches(self, res: dict[str, Any]) -> bool:
        return self.api_version == objects.api_version(res) and self.kind == objects.kind(res)


@dataclass(frozen=True, slots=True)
class KindNamespaceNameMatcher:
    kind: str
    namespace: str
    name: str

    def matches(self, res: dict[str, Any]) -> bool:
        name = objects.metadata(res).get("name")
        return (
            objects.kind(res) == self.kind
            and objects.namespace(res) == self.namespace
            and (name if isinstance(name, str) else "") == self.name
        )


@dataclass(frozen=True, slots=True)
class HasAnnotationMatcher:
    """Every key is present (with any value)."""

    keys: tuple[str, ...]

    def matches(self, res: dict[str, Any]) -> bool:
        annotations = objects.annotations(res)
        return all(key in annotations for key in self.keys)


@dataclass(frozen=True, slots=True)
class HasNamespaceMatcher:
    """Namespaced resources, in one of `names` if any are given."""

    names: tuple[str, ...]

    def matches(self, res: dict[str, Any]) -> bool:
        namespace = objects.namespace(res)
        if not namespace:
            return False
        return not self.names or namespace in self.names


@dataclass(frozen=True, slots=True)
class CustomResourceMatcher:
    def matches(self, res: dict[str, Any]) -> bool:
        return group_of(res) not in BUILTIN_API_GROUPS


@dataclass(frozen=True, slots=True)
class EmptyFieldMatcher:
    """The value at the path is missing, null, `{}` or `[]`."""

    path: Path

    def matches(self, res: dict[str, Any]) -> bool:
        return is_empty_at(res, self.path)


Matcher = (
    AllMatcher
    | AnyMatcher
    | AndMatcher
    | NotMatcher
    | ApiGroupKindMatcher
    | ApiVersionKindMatcher
    | KindNamespaceNameMatcher
    | HasAnnotationMatcher
    | HasNamespaceMatcher
    | CustomResourceMatcher
    | EmptyFieldMatcher
)


def matches_any(matchers: Sequence[Matcher], res: dict[str, Any]) -> bool:
    return any(m.matches(res) for m in matchers)


def kinds_matched(matcher: Matcher) -> frozenset[str] | None:
    """The kinds of the resources `matcher` can match; None when it is not limited to some kinds."""
    match matcher:
        case ApiVersionKindMatcher() | ApiGroupKindMatcher() | KindNamespaceNameMatcher():
            return frozenset({matcher.kind})
        case AnyMatcher():
            parts = [kinds_matched(m) for m in matcher.matchers]
            return None if any(p is None for p in parts) else frozenset().union(*parts)  # type: ignore[arg-type]
        case AndMatcher():
            limited = [p for p in (kinds_matched(m) for m in matcher.matchers) if p is not None]
            return frozenset.intersection(*limited) if limited else None
        case _:
            return None


class Rule(Protocol):
    @property
    def resource_matchers(self) -> tuple[Matcher, ...]: ...


R = TypeVar("R", bound=Rule)

# (id of a rule sequence, kind) -> (that sequence, its rules that can match the kind). The sequence is held so that
# its id is not reused while cached; configs are few and long-lived, so the cache stays small.
_BY_KIND: dict[tuple[int, str], tuple[Sequence[Any], tuple[Any, ...]]] = {}
_BY_KIND_SIZE = 1024


def rules_for_kind(rules: Sequence[R], kind: str) -> tuple[R, ...]:
    """The rules that can match a resource of `kind`, in order: rules whose matchers name other kinds only are left
    out, so that a deploy of thousands of resources does not try every rule's matchers on every one of them."""
    key = (id(rules), kind)
    hit = _BY_KIND.get(key)
    if hit is not None and hit[0] is rules:
        return hit[1]
    kept = tuple(rule for rule in rules if _may_match(rule.resource_matchers, kind))
    if len(_BY_KIND) >= _BY_KIND_SIZE:
        _BY_KIND.clear()
    _BY_KIND[key] = (rules, kept)
    return kept


def _may_match(matchers: Sequence[Matcher], kind: str) -> bool:
    for matcher in matchers:
        kinds = kinds_matched(matcher)
        if kinds is None or kind in kinds:
            return True
    return False


_MATCHER_KINDS = (
    "allMatcher",
    "anyMatcher",
    "andMatcher",
    "notMatcher",
    "apiGroupKindMatcher",
    "apiVersionKindMatcher",
    "kindNamespaceNameMatcher",
    "hasAnnotationMatcher",
    "hasNamespaceMatcher",
    "customResourceMatcher",
    "emptyFieldMatcher",
)


def parse_matchers(value: Any, decoder: Decoder, where: str) -> tuple[Matcher, ...]:
    return tuple(parse_matcher(item, decoder, f"{where}[{i}]") for i, item in enumerate(decoder.items(value, where)))


def parse_matcher(value: Any, decoder: Decoder, where: str) -> Matcher:
    entries = decoder.fields(value, where, _MATCHER_KINDS)
    if len(entries) != 1:
        decoder.fail(where, f"expected exactly one matcher, but found {len(entries)}")
    ((kind, body),) = entries.items()
    where = f"{where}.{kind}"
    match kind:
        case "allMatcher":
            decoder.fields(body, where, ())
            return AllMatcher()
        case "anyMatcher":
            fields = decoder.fields(body, where, ("matchers",))
            return AnyMatcher(parse_matchers(fields.get("matchers"), decoder, f"{where}.matchers"))
        case "andMatcher":
            fields = decoder.fields(body, where, ("matchers",))
            return AndMatcher(parse_matchers(fields.get("matchers"), decoder, f"{where}.matchers"))
        case "notMatcher":
            fields = decoder.fields(body, where, ("matcher",))
            return NotMatcher(parse_matcher(fields.get("matcher"), decoder, f"{where}.matcher"))
        case "apiGroupKindMatcher":
            fields = decoder.fields(body, where, ("apiGroup", "kind"))
            return ApiGroupKindMatcher(
                api_group=decoder.string(fields.get("apiGroup"), f"{where}.apiGroup"),
                kind=decoder.string(fields.get("kind"), f"{where}.kind"),
            )
        case "apiVersionKindMatcher":
            fields = decoder.fields(body, where, ("apiVersion", "kind"))
            return ApiVersionKindMatcher(
                api_version=decoder.string(fields.get("apiVersion"), f"{where}.apiVersion"),
                kind=decoder.string(fields.get("kind"), f"{where}.kind"),
            )
        case "kindNamespaceNameMatcher":
            fields = decoder.fields(body, where, ("kind", "namespace", "name"))
            return KindNamespaceNameMatcher(
                kind=decoder.string(fields.get("kind"), f"{where}.kind"),
                namespace=decoder.string(fields.get("namespace"), f"{where}.namespace"),
                name=decoder.string(fields.get("name"), f"{where}.name"),
            )
        case "hasAnnotationMatcher":
            fields = decoder.fields(body, where, ("keys",))
            return HasAnnotationMatcher(decoder.strings(fields.get("keys"), f"{where}.keys"))
        case "hasNamespaceMatcher":
            fields = decoder.fields(body, where, ("names",))
            return HasNamespaceMatcher(decoder.strings(fields.get("names"), f"{where}.names"))
        case "customResourceMatcher":
            decoder.fields(body, where, ())
            return CustomResourceMatcher()
        case _:
            fields = decoder.fields(body, where, ("path",))
            return EmptyFieldMatcher(parse_path(fields.get("path"), decoder, f"{where}.path"))
