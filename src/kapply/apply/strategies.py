"""kapp's create, update and delete strategies, read from a resource's annotations."""

from __future__ import annotations

from enum import StrEnum

from kapply.errors import ManifestError
from kapply.resources.identity import describe

CREATE_STRATEGY = "kapp.k14s.io/create-strategy"
UPDATE_STRATEGY = "kapp.k14s.io/update-strategy"
DELETE_STRATEGY = "kapp.k14s.io/delete-strategy"
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


def _annotation(res: dict, key: str) -> str:
    return ((res.get("metadata") or {}).get("annotations") or {}).get(key, "")


def create_strategy(res: dict) -> CreateStrategy:
    value = _annotation(res, CREATE_STRATEGY)
    try:
        return CreateStrategy(value)
    except ValueError:
        raise ManifestError(f"Unknown create strategy: {value} (resource {describe(res)})") from None


def update_strategy(res: dict, default: str = "") -> UpdateStrategy:
    value = _annotation(res, UPDATE_STRATEGY) or default
    try:
        return UpdateStrategy(value)
    except ValueError:
        raise ManifestError(f"Unknown update strategy: {value} (resource {describe(res)})") from None


def delete_strategy(res: dict) -> DeleteStrategy:
    if res.get("apiVersion") == "v1" and res.get("kind") == "Namespace" and \
            (res.get("metadata") or {}).get("name") in ALWAYS_ORPHANED_NAMESPACES:
        return DeleteStrategy.ORPHAN
    value = _annotation(res, DELETE_STRATEGY)
    try:
        return DeleteStrategy(value)
    except ValueError:
        raise ManifestError(f"Unknown delete strategy: {value} (resource {describe(res)})") from None


def label(strategy: CreateStrategy | UpdateStrategy | DeleteStrategy) -> str:
    """The Op st. column: `fallback on replace`, `orphan`, or empty."""
    return strategy.value.replace("-", " ")
