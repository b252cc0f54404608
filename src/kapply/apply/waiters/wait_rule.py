"""A Config's waitRules (kapp's CustomWaitingResource): condition matchers, or a ytt `is_done` function."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kapply.apply.waiters.reading import as_int, conditions, generation, observed, text
from kapply.apply.waiters.state import State, failed, ok, ongoing
from kapply.errors import ConfigError

if TYPE_CHECKING:
    from kapply.config.config import ConditionMatcher, WaitRule


def check(resource: dict[str, Any], rule: WaitRule) -> State:
    """Failure conditions first, then success ones, then those that unblock changes."""
    supports_observed = rule.supports_observed_generation
    if supports_observed and (waiting := observed(resource)) is not None:
        return waiting
    if rule.ytt_resource_star is not None:
        return _ytt(resource, rule.ytt_resource_star)
    latest = generation(resource)
    matches = [
        (matcher, cond)
        for matcher in rule.condition_matchers
        for cond in conditions(resource)
        if text(cond, "type") == matcher.type and text(cond, "status") == matcher.status
    ]

    def seen(matcher: ConditionMatcher, cond: dict[str, Any]) -> bool:
        return not matcher.supports_observed_generation or as_int(cond.get("observedGeneration")) == latest

    def described(cond: dict[str, Any], matcher: ConditionMatcher) -> str:
        return f"{text(cond, 'type')} == {matcher.status}: {text(cond, 'reason')}"

    for matcher, cond in matches:
        if matcher.failure and seen(matcher, cond):
            return failed(
                f"Encountered failure condition {described(cond, matcher)} (message: {text(cond, 'message')})"
            )
    unblock_message = ""
    for matcher, cond in matches:
        if not seen(matcher, cond):
            continue
        if matcher.success:
            return ok(f"Encountered successful condition {described(cond, matcher)} (message: {text(cond, 'message')})")
        if matcher.unblock_changes:
            unblock_message = f"Allowing blocked changes to proceed: Encountered condition {described(cond, matcher)}"
    if any(not seen(matcher, cond) for matcher, cond in matches):
        return ongoing(f"Waiting for generation {latest} to be observed by status condition(s)")
    if unblock_message:
        return ongoing(unblock_message, unblock=True)
    return ongoing("No failing or successful conditions found")


def _ytt(resource: dict[str, Any], resource_star: str) -> State:
    """kapp's ytt wait rule: the verdict of `is_done(data.values)`."""
    from kapply.config.ytt import is_done

    try:
        verdict = is_done(resource_star, resource)
    except ConfigError as e:
        return failed(f"Error: Applying ytt wait rule: {e}")
    message = str(verdict.get("message") or "")
    if verdict.get("done"):
        return ok(message) if verdict.get("successful") else failed(message)
    if verdict.get("unblockChanges"):
        return ongoing(f"Allowing blocked changes to proceed: {message}", unblock=True)
    return ongoing(message)
