"""kapp's create, update and delete strategies, read from a resource's annotations."""

from __future__ import annotations

from enum import StrEnum

from kapply import objects
from kapply.errors import ManifestError
from kapply.objects import Obj, describe

ALWAYS_ORPHANED_NAMESPACES = frozenset({"default", "kube-system", "kube-public", "kube-node-lease"})


class CreateStrategy(StrEnum):
    PLAIN = ""
    FALLBACK_ON_UPDATE = "fallback-on-update"
    FALLBACK_ON_UPDATE_OR_NOOP = "fallback-on-update-or-noop"


class UpdateStrategy(StrEnum):
    PLAIN = ""
    FALLBACK_ON_REPLACE = "fallback-on-replace"
    ALWAYS_REPLACE = "always-replace"
    SKIP = "skip"


class DeleteStrategy(StrEnum):
    PLAIN = ""
    ORPHAN = "orphan"


def create_strategy(res: Obj) -> CreateStrategy:
    value = objects.annotations(res).get(objects.CREATE_STRATEGY, "")
    try:
        return CreateStrategy(value)
    except ValueError:
        raise ManifestError(f"Unknown create strategy: {value} (resource {describe(res)})") from None


def update_strategy(res: Obj, default: str = "") -> UpdateStrategy:
    value = objects.annotations(res).get(objects.UPDATE_STRATEGY, "") or default
    try:
        return UpdateStrategy(value)
    except ValueError:
        raise ManifestError(f"Unknown update strategy: {value} (resource {describe(res)})") from None


def delete_strategy(res: Obj) -> DeleteStrategy:
    if (
        objects.api_version(res) == "v1"
        and objects.kind(res) == "Namespace"
        and objects.name(res) in ALWAYS_ORPHANED_NAMESPACES
    ):
        return DeleteStrategy.ORPHAN
    value = objects.annotations(res).get(objects.DELETE_STRATEGY, "")
    try:
        return DeleteStrategy(value)
    except ValueError:
        raise ManifestError(f"Unknown delete strategy: {value} (resource {describe(res)})") from None


def label(strategy: CreateStrategy | UpdateStrategy | DeleteStrategy) -> str:
    """The Op st. column: `fallback on replace`, `orphan`, or empty."""
    return strategy.value.replace("-", " ")
