"""Matching many resources against the same bindings, remembering answers that many resources share."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from kapply import objects
from kapply.config.matchers import (
    AllMatcher,
    AndMatcher,
    AnyMatcher,
    ApiGroupKindMatcher,
    ApiVersionKindMatcher,
    CustomResourceMatcher,
    HasAnnotationMatcher,
    HasNamespaceMatcher,
    Matcher,
    NotMatcher,
    matches_any,
)

# How a resource is matched against a binding's matchers: `matches_any`, or a SharedMatching.
MatchFunction = Callable[[Sequence[Matcher], dict[str, Any]], bool]


class SharedMatching:
    """`matches_any`, answering once per binding for all resources that look the same to its matchers.

    Most bindings look at no more than a resource's apiVersion, kind, namespace (often only whether
    it has one) and annotation keys, which thousands of resources share. Bindings are told apart by
    identity, so keep the config alive while using one of these."""

    __slots__ = ("_views", "_answers", "_resource", "_summaries")

    def __init__(self) -> None:
        self._views: dict[int, int] = {}
        self._answers: dict[tuple[Any, ...], bool] = {}
        self._resource: dict[str, Any] | None = None
        self._summaries: tuple[Any, ...] = ()

    def __call__(self, matchers: Sequence[Matcher], resource: dict[str, Any]) -> bool:
        view = self._views.get(id(matchers))
        if view is None:
            view = self._views[id(matchers)] = min(map(_view_of, matchers), default=_COARSE)
        if view == _WHOLE:
            return matches_any(matchers, resource)
        if resource is not self._resource:  # a resource is matched against every binding in turn
            self._resource, self._summaries = resource, _summaries(resource)
        key = (id(matchers), self._summaries[view])
        answer = self._answers.get(key)
        if answer is None:
            answer = self._answers[key] = matches_any(matchers, resource)
        return answer


# What of a resource a matcher looks at, from most to least: its whole self; apiVersion, kind,
# namespace and annotation keys; or only whether it has a namespace instead of which one.
_WHOLE, _FINE, _COARSE = 0, 1, 2


def _view_of(matcher: Matcher) -> int:
    match matcher:
        case AnyMatcher() | AndMatcher():
            return min(map(_view_of, matcher.matchers), default=_COARSE)
        case NotMatcher():
            return _view_of(matcher.matcher)
        case HasNamespaceMatcher():
            return _FINE if matcher.names else _COARSE
        case (
            AllMatcher()
            | ApiGroupKindMatcher()
            | ApiVersionKindMatcher()
            | CustomResourceMatcher()
            | HasAnnotationMatcher()
        ):
            return _COARSE
        case _:
            return _WHOLE


def _summaries(resource: dict[str, Any]) -> tuple[Any, ...]:
    """The resource as seen by each view but the whole one."""
    namespace = objects.namespace(resource)
    shared = (objects.api_version(resource), objects.kind(resource), tuple(objects.annotations(resource)))
    return (None, (*shared, namespace), (*shared, bool(namespace)))
