"""What the dependency graph orders: one node per change, with its graph op."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from kapply import objects


class GraphOp(StrEnum):
    """How a change takes part in ordering: add, update and exists are upserts."""

    UPSERT = "upsert"
    DELETE = "delete"
    NOOP = "noop"  # gets no rules and matches none


@dataclass(frozen=True, slots=True)
class Node:
    op: GraphOp
    resource: dict[str, Any]  # the new resource for upserts, the live one for deletes
    description: str  # e.g. `deployment/web (apps/v1) namespace: ns`, used in error messages


def annotation_values(resource: dict[str, Any], key: str) -> list[str]:
    """Values of the annotation `key` and of every `key.<suffix>`, in the resource's order (string values only: the
    API server refuses any other)."""
    return [
        value
        for name, value in objects.annotations(resource).items()
        if (name == key or name.startswith(key + ".")) and isinstance(value, str)
    ]
