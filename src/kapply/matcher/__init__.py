"""Skip needless updates: a three-way merge matcher for operator authors (see docs/matcher.md).

    desired = matcher.annotate(desired)            # before create
    result = matcher.calculate(current, desired)   # on every loop
    if not result.is_empty:
        PATCH result.patch with Content-Type result.patch_type (pass record=True to update the annotation)

Works on plain dicts and on objects of the official `kubernetes` client and of lightkube; fetches the cluster's
schemas through kapply's own client, the official one, or any client that can GET a path.
"""

from kapply.matcher.fetch import Getter, SchemaSource, fetch_schema, fetch_schema_sync, schema_from_kubeconfig
from kapply.matcher.matcher import Matcher, Mode, PatchResult, apply_patch, calculate
from kapply.matcher.objects import LAST_APPLIED_ANNOTATION, FieldPath, LastAppliedError, annotate, to_dict
from kapply.matcher.quantity import parse_quantity
from kapply.matcher.schema import BUILTIN_KINDS, PatchType, Schema

__all__ = [
    "BUILTIN_KINDS",
    "LAST_APPLIED_ANNOTATION",
    "FieldPath",
    "Getter",
    "LastAppliedError",
    "Matcher",
    "Mode",
    "PatchResult",
    "PatchType",
    "Schema",
    "SchemaSource",
    "annotate",
    "apply_patch",
    "calculate",
    "fetch_schema",
    "fetch_schema_sync",
    "parse_quantity",
    "schema_from_kubeconfig",
    "to_dict",
]
