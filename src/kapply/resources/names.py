"""Names that become part of a URL: validated by Kubernetes' own rules before any request is built from them.

A name is one path segment of a request URL (`/api/v1/namespaces/<namespace>/configmaps/<name>`), so a name such as
`../../other-ns/configmaps/victim` would reach another object. Kubernetes refuses such names on create (and
client-go before sending: "invalid resource name ..."); kapply refuses them where input enters, naming the resource,
and again in the cluster client, which escapes every segment it puts in a URL.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from kapply import objects
from kapply.errors import ManifestError
from kapply.objects import Document, describe

MAX_NAME_LENGTH = 253  # a DNS subdomain, the rule for the names of almost every kind
_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")


def path_segment_problems(value: str) -> list[str]:
    """Kubernetes' IsValidPathSegmentName: why `value` cannot be a segment of a request path (none if it can)."""
    if value in (".", ".."):
        return [f"may not be '{value}'"]
    return [f"may not contain '{c}'" for c in ("/", "%") if c in value]


def name_problems(name: str) -> list[str]:
    if not name:
        return ["may not be empty"]
    problems = path_segment_problems(name)
    if len(name) > MAX_NAME_LENGTH:
        problems.append(f"must be no more than {MAX_NAME_LENGTH} characters")
    return problems


def namespace_problems(namespace: str) -> list[str]:
    if len(namespace) > 63 or not _DNS_LABEL.fullmatch(namespace):
        return [
            "must be a lowercase RFC 1123 label: at most 63 characters, 'a'-'z', '0'-'9' and '-', "
            "starting and ending with a letter or digit"
        ]
    return []


def check_names(docs: Sequence[Document]) -> None:
    """Refuse resources whose name, generateName or namespace could not safely be part of a request path."""
    errors = []
    for doc in docs:
        meta = objects.metadata(doc.obj)
        name = meta.get("name")
        problems = name_problems(name) if isinstance(name, str) and (name or "generateName" not in meta) else []
        generate = meta.get("generateName")
        if isinstance(generate, str) and not name:
            problems += path_segment_problems(generate)
        if problems:
            errors.append(f"- Invalid name on resource '{describe(doc.obj)}': {', '.join(problems)} ({doc.origin})")
        namespace = objects.namespace(doc.obj)
        if namespace and (ns_problems := namespace_problems(namespace)):
            errors.append(
                f"- Invalid namespace '{namespace}' on resource '{describe(doc.obj)}': {', '.join(ns_problems)} "
                f"({doc.origin})"
            )
    if errors:
        raise ManifestError("Validation errors:\n" + "\n".join(errors))
