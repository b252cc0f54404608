"""Change groups: the names that change rules refer to, and the placeholders they may hold."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from kapply import objects
from kapply.config.config import ChangeGroupBinding
from kapply.config.matchers import matches_any
from kapply.errors import GraphError
from kapply.graph.change import annotation_values
from kapply.graph.matching import MatchFunction
from kapply.objects import group_of

_PLACEHOLDER = re.compile(r"\{.+?\}")

_QUALIFIED_NAME_FORMAT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_QUALIFIED_NAME = re.compile(_QUALIFIED_NAME_FORMAT)
_QUALIFIED_NAME_MESSAGE = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
)
_DNS_LABEL_FORMAT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS_SUBDOMAIN_FORMAT = _DNS_LABEL_FORMAT + "(\\." + _DNS_LABEL_FORMAT + ")*"
_DNS_SUBDOMAIN = re.compile(_DNS_SUBDOMAIN_FORMAT)
_DNS_SUBDOMAIN_MESSAGE = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
    "and must start and end with an alphanumeric character"
)
_DNS_SUBDOMAIN_MAX_LENGTH = 253


def groups_of(
    resource: dict[str, Any], bindings: Sequence[ChangeGroupBinding], matches: MatchFunction = matches_any
) -> list[str]:
    """The change groups of a resource: its change-group annotations, then every binding that matches it."""
    groups = [
        checked_group_name(expand_placeholders(value, resource))
        for value in annotation_values(resource, objects.CHANGE_GROUP)
    ]
    groups.extend(
        checked_group_name(expand_placeholders(binding.name, resource))
        for binding in bindings
        if matches(binding.resource_matchers, resource)
    )
    return groups


def expand_placeholders(text: str, resource: dict[str, Any]) -> str:
    """`text` with `{name}`, `{kind}`, ... replaced by the resource's values.

    Like kapp, every placeholder is replaced (an unknown one by nothing) and the last one
    without a value is reported; an unknown placeholder has no value either, so kapp's
    `Expected placeholder to be one of these` message is never the one users see."""
    if "{" not in text:
        return text
    values = _placeholder_values(resource)
    missing = ""

    def value_of(match: re.Match[str]) -> str:
        nonlocal missing
        value = values.get(match.group(), "")
        if not value:
            missing = match.group()
        return value

    expanded = _PLACEHOLDER.sub(value_of, text)
    if missing:
        raise GraphError(
            f"Placeholder {missing} does not have a value for target resource "
            "(hint: placeholders with the 'crd-' prefix can only be used with CRDs)"
        )
    return expanded


@lru_cache(maxsize=4096)
def checked_group_name(name: str) -> str:
    """`name` if it is a Kubernetes qualified name; unlike label keys, the name part may be longer than 63."""
    if not name:
        raise GraphError("Expected non-empty group name")
    problems = _qualified_name_problems(name)
    if problems:
        quoted = json.dumps(name, ensure_ascii=False)  # as Go's %q quotes it, but for control characters
        raise GraphError(f"Expected change group name {quoted} to be a qualified name: " + "; ".join(problems))
    return name


def _qualified_name_problems(value: str) -> list[str]:
    """Kubernetes' IsQualifiedName messages, without the one about the name part's length."""
    parts = value.split("/")
    if len(parts) > 2:
        return [
            "a qualified name "
            + _regex_error(_QUALIFIED_NAME_MESSAGE, _QUALIFIED_NAME_FORMAT, "MyName", "my.name", "123-abc")
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    problems = []
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            problems.append("prefix part must be non-empty")
        else:
            if len(prefix.encode()) > _DNS_SUBDOMAIN_MAX_LENGTH:
                problems.append(f"prefix part must be no more than {_DNS_SUBDOMAIN_MAX_LENGTH} characters")
            if not _DNS_SUBDOMAIN.fullmatch(prefix):
                problems.append(
                    "prefix part " + _regex_error(_DNS_SUBDOMAIN_MESSAGE, _DNS_SUBDOMAIN_FORMAT, "example.com")
                )
    name = parts[-1]
    if not name:
        problems.append("name part must be non-empty")
    if not _QUALIFIED_NAME.fullmatch(name):
        problems.append(
            "name part " + _regex_error(_QUALIFIED_NAME_MESSAGE, _QUALIFIED_NAME_FORMAT, "MyName", "my.name", "123-abc")
        )
    return problems


def _regex_error(message: str, regex: str, *examples: str) -> str:
    # The doubled space before "or" is Kubernetes' own.
    shown = " or ".join(f"'{example}', " for example in examples)
    return f"{message} (e.g. {shown}regex used for validation is '{regex}')"


def _placeholder_values(resource: dict[str, Any]) -> dict[str, str]:
    metadata = objects.metadata(resource)
    crd_kind = crd_group = ""
    if group_of(resource) == "apiextensions.k8s.io" and resource.get("kind") == "CustomResourceDefinition":
        spec = resource.get("spec")
        spec = spec if isinstance(spec, dict) else {}
        names = spec.get("names")
        crd_group = _string(spec.get("group"))
        crd_kind = _string(names.get("kind") if isinstance(names, dict) else None)
    return {
        "{api-group}": group_of(resource),
        "{kind}": _string(resource.get("kind")),
        "{name}": _string(metadata.get("name")),
        "{namespace}": _string(metadata.get("namespace")),
        "{crd-kind}": crd_kind,
        "{crd-group}": crd_group,
    }


def _string(value: Any) -> str:
    return value if isinstance(value, str) else ""
