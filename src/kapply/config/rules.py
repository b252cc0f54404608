"""Applying config rules to resources.

Each function returns a new resource and leaves its inputs alone. Results share untouched
subtrees with the inputs (see `kapply.config.paths`): copy before mutating any of them.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, TypeVar

from kapply.config.config import LabelScopingRule, PathRule, RebaseRule, RebaseType, Source, YttRebaseRule
from kapply.config.matchers import matches_any, rules_for_kind
from kapply.config.paths import (
    KeyRegex,
    Path,
    append_string_map,
    copy_from_sources,
    format_path,
    remove_at,
    replace_maps_at,
)
from kapply.errors import ConfigError
from kapply.objects import describe


def rebase(
    new: dict[str, Any], existing: dict[str, Any], rules: Sequence[RebaseRule | YttRebaseRule]
) -> dict[str, Any]:
    """`new` with the rebase rules applied in order, each to the result of the previous ones.

    A rule applies if it matches that current result. Copy rules read the `new` source from the
    resource as given (so rules can restore what earlier rules replaced) and `existing` from the
    live resource.

    Only the rules that can match the resource's kind are tried, unless a rule may change the kind itself (a ytt
    overlay or a path at `kind`)."""
    result = new
    for rule in _candidates(rules, new):
        try:
            if isinstance(rule, YttRebaseRule):
                if matches_any(rule.resource_matchers, result):
                    result = rule.overlay.apply(result, new, existing)
                continue
            for path in rule.paths:
                # kapp makes one modification per path, each matched against the current result.
                if not matches_any(rule.resource_matchers, result):
                    continue
                try:
                    if rule.type is RebaseType.COPY:
                        sources = [new if source is Source.NEW else existing for source in rule.sources]
                        result = copy_from_sources(result, path, sources)
                    else:
                        result = remove_at(result, path)
                except ConfigError as e:
                    raise _naming(e, path) from e
        except ConfigError as e:
            raise ConfigError(f"Applying rebase rule to {describe(new)}: {e}") from e
    return result


AnyRule = TypeVar("AnyRule", RebaseRule | YttRebaseRule, PathRule, LabelScopingRule)

# id of a rule sequence -> (that sequence, whether one of its rules may change a resource's kind); see rules_for_kind
_CHANGES_KIND: dict[int, tuple[Sequence[Any], bool]] = {}


def _candidates(rules: Sequence[AnyRule], res: dict[str, Any]) -> Sequence[AnyRule]:
    """The rules worth trying on `res`: those that can match its kind, unless a rule may change the kind itself (a
    ytt overlay run by ytt, or a path at `kind`), which would make a rule skipped by kind match after it."""
    kind = res.get("kind")
    if not isinstance(kind, str):
        return rules
    hit = _CHANGES_KIND.get(id(rules))
    if hit is None or hit[0] is not rules:
        if len(_CHANGES_KIND) >= 1024:
            _CHANGES_KIND.clear()
        hit = _CHANGES_KIND[id(rules)] = (rules, any(_changes_kind(rule) for rule in rules))
    return rules if hit[1] else rules_for_kind(rules, kind)


def _changes_kind(rule: RebaseRule | YttRebaseRule | PathRule | LabelScopingRule) -> bool:
    if isinstance(rule, YttRebaseRule):
        return rule.overlay.native is None  # the overlays kapply knows natively keep the kind
    paths = rule.paths if isinstance(rule, RebaseRule) else (rule.path,)
    return any(
        not path or path[0] == "kind" or (isinstance(path[0], KeyRegex) and path[0].regex.search("kind"))
        for path in paths
    )


def add_ownership_labels(resource: dict[str, Any], labels: dict[str, str], rules: Sequence[PathRule]) -> dict[str, Any]:
    """`resource` with `labels` added at every matching rule's path, creating the map if missing
    (unless the path goes through lists)."""
    for rule in _candidates(rules, resource):
        if matches_any(rule.resource_matchers, resource):
            try:
                resource = append_string_map(resource, rule.path, labels, create_missing=True)
            except ConfigError as e:
                raise _naming(e, rule.path, resource) from e
    return resource


def add_label_scoping(
    resource: dict[str, Any],
    labels: dict[str, str],
    rules: Sequence[LabelScopingRule],
    include_default: bool = True,
) -> dict[str, Any]:
    """`resource` with `labels` added to the maps (selectors) at matching rules' paths that exist.

    `include_default=False` skips the rules marked isDefault."""
    for rule in _candidates(rules, resource):
        if (include_default or not rule.is_default) and matches_any(rule.resource_matchers, resource):
            try:
                resource = append_string_map(resource, rule.path, labels, create_missing=False)
            except ConfigError as e:
                raise _naming(e, rule.path, resource) from e
    return resource


def remove_fields(resource: dict[str, Any], rules: Sequence[PathRule]) -> dict[str, Any]:
    """`resource` without the paths of the matching field exclusion rules."""
    for rule in _candidates(rules, resource):
        if matches_any(rule.resource_matchers, resource):
            try:
                resource = remove_at(resource, rule.path)
            except ConfigError as e:
                raise _naming(e, rule.path, resource) from e
    return resource


class MaskCounter:
    """Numbers masked values: equal values get the same number for the counter's lifetime.

    kapp keeps one per process, so a value shows the same `#N` on both sides of every diff."""

    def __init__(self) -> None:
        self._numbers: dict[str, int] = {}
        self._last = 0

    def number(self, value: Any) -> int:
        try:
            key = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        except (TypeError, ValueError):
            # Not JSON: number it on its own, so that a change still shows as one.
            self._last += 1
            return self._last
        number = self._numbers.get(key)
        if number is None:
            self._last += 1
            number = self._numbers[key] = self._last
        return number

    def copy(self) -> MaskCounter:
        """A counter that goes on from this one's numbers without changing them."""
        other = MaskCounter()
        other._numbers, other._last = dict(self._numbers), self._last
        return other

    def mask_map(self, values: dict[str, Any]) -> dict[str, Any]:
        """Each value replaced by its mask; numbers are given in sorted key order."""
        numbers = {key: self.number(values[key]) for key in sorted(values)}
        return {key: f"<-- value not shown (#{numbers[key]})" for key in values}


def mask(resource: dict[str, Any], rules: Sequence[PathRule], counter: MaskCounter) -> dict[str, Any]:
    """`resource` with every value of the maps at matching diff mask rules' paths masked."""
    for rule in rules:
        if matches_any(rule.resource_matchers, resource):
            try:
                resource = replace_maps_at(resource, rule.path, counter.mask_map)
            except ConfigError as e:
                raise _naming(e, rule.path, resource) from e
    return resource


def _naming(error: ConfigError, path: Path, resource: dict[str, Any] | None = None) -> ConfigError:
    """A failing path operation's error naming the path (and the resource, if given). Not a context manager: the rules
    run per resource and path, thousands of times a deploy, and entering one costs more than the operation."""
    subject = f" on resource '{describe(resource)}'" if resource is not None else ""
    return ConfigError(f"Path '{format_path(path)}'{subject}: {error}")
