"""Reading the API server's request counters from its `/metrics` text, and the difference a step made (pure).

Two counters are read (labels as served by kube-apiserver v1.34; see `identity` for why two):

- `apiserver_request_total{verb, dry_run, group, version, resource, subresource, scope, component, code}`: every
  request the server handled, from any client. `verb` is the server's: GET, LIST, WATCH, POST, PUT, PATCH, APPLY
  (server-side apply), DELETE, DELETECOLLECTION, CONNECT; `dry_run` is `All` for dry-run requests, empty otherwise.
  Only the measured tools send dry-run requests here, so the dry-run counts are theirs even from this shared counter.
- `apiserver_flowcontrol_dispatched_requests_total{flow_schema, priority_level}`: with the bench flow schemas, every
  request of the measured tool and no other, by verb.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

REQUESTS = "apiserver_request_total"
DISPATCHED = "apiserver_flowcontrol_dispatched_requests_total"

Labels = tuple[tuple[str, str], ...]  # sorted (name, value) pairs
Series = tuple[str, Labels]

_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')
_UNESCAPE = {"\\\\": "\\", '\\"': '"', "\\n": "\n"}


def _unescape(value: str) -> str:
    return re.sub(r"\\[\\\"n]", lambda m: _UNESCAPE[m.group(0)], value) if "\\" in value else value


def parse(text: str, names: Iterable[str] = (REQUESTS, DISPATCHED)) -> dict[Series, float]:
    """The samples of the named metrics in Prometheus text format: {(name, labels): value}. Other metrics, comments
    and malformed lines are skipped."""
    wanted = tuple(f"{name}{{" for name in names) + tuple(f"{name} " for name in names)
    samples: dict[Series, float] = {}
    for line in text.splitlines():
        if not line.startswith(wanted):
            continue
        if "{" in line:
            name, rest = line.split("{", 1)
            label_text, _, value_text = rest.rpartition("}")
            labels = tuple(sorted((k, _unescape(v)) for k, v in _LABEL.findall(label_text)))
        else:
            name, _, value_text = line.partition(" ")
            labels = ()
        try:
            value = float(value_text.split()[0])
        except (IndexError, ValueError):
            continue
        samples[(name, labels)] = value
    return samples


def delta(before: Mapping[Series, float], after: Mapping[Series, float]) -> dict[Series, float]:
    """What each counter grew by, non-zero ones only. A counter lower than before was reset (the API server
    restarted): its whole value is the growth since."""
    out: dict[Series, float] = {}
    for series, value in after.items():
        grew = value - before.get(series, 0.0)
        if grew < 0:
            grew = value
        if grew:
            out[series] = grew
    return out


# Flow-schema suffix (the RBAC verb) -> the verb as the API server's request counter names it. SSA patches are
# APPLY in apiserver_request_total but `patch` for flow schemas, so both show as PATCH here.
CLIENT_VERBS = {
    "list": "LIST",
    "get": "GET",
    "watch": "WATCH",
    "create": "POST",
    "update": "PUT",
    "patch": "PATCH",
    "delete": "DELETE",
    "deletecollection": "DELETECOLLECTION",
    "nonresource": "DISCOVERY",  # non-resource GETs: /api, /apis, /apis/GROUP/VERSION, /version, /openapi
    "other": "OTHER",
}
VERB_ORDER = ("DISCOVERY", "LIST", "GET", "WATCH", "POST", "PUT", "PATCH", "APPLY", "DELETE", "DELETECOLLECTION")

# The harness's own scrape of /metrics, which falls between the two samples of every step.
_OWN_PATHS = {"/metrics"}


def client_requests(step_delta: Mapping[Series, float], prefix: str) -> dict[str, int]:
    """The measured tool's requests by verb: the dispatch counts of the flow schemas named `prefix<verb>`."""
    out: dict[str, int] = {}
    for (name, labels), value in step_delta.items():
        schema = dict(labels).get("flow_schema", "")
        if name == DISPATCHED and schema.startswith(prefix):
            verb = CLIENT_VERBS.get(schema[len(prefix) :], schema[len(prefix) :].upper())
            out[verb] = out.get(verb, 0) + int(value)
    return out


def server_requests(step_delta: Mapping[Series, float], *, dry_run: bool | None = None) -> dict[str, int]:
    """All clients' requests by the server's verb (the harness's scrape excluded); `dry_run` True keeps dry-run
    requests only, False the others, None both."""
    out: dict[str, int] = {}
    for (name, labels), value in step_delta.items():
        if name != REQUESTS:
            continue
        label = dict(labels)
        if label.get("subresource") in _OWN_PATHS and not label.get("resource"):
            continue
        if dry_run is not None and bool(label.get("dry_run")) != dry_run:
            continue
        verb = label.get("verb", "?")
        out[verb] = out.get(verb, 0) + int(value)
    return out


@dataclass(frozen=True)
class SeriesDelta:
    """Requests of one kind that `apiserver_request_total` counted during a step, all clients (kept in results.json
    for drilling down; the `version` and `component` labels are summed over)."""

    verb: str
    group: str
    resource: str
    subresource: str
    scope: str
    code: str
    dry_run: str
    count: int


def server_detail(step_delta: Mapping[Series, float]) -> list[SeriesDelta]:
    sums: dict[tuple[str, str, str, str, str, str, str], float] = {}
    for (name, labels), value in step_delta.items():
        if name != REQUESTS:
            continue
        label = dict(labels)
        if label.get("subresource") in _OWN_PATHS and not label.get("resource"):
            continue
        key = (
            label.get("verb", ""),
            label.get("group", ""),
            label.get("resource", ""),
            label.get("subresource", ""),
            label.get("scope", ""),
            label.get("code", ""),
            label.get("dry_run", ""),
        )
        sums[key] = sums.get(key, 0.0) + value
    rows = [SeriesDelta(*key, int(value)) for key, value in sums.items()]
    return sorted(rows, key=lambda r: (-r.count, r.verb, r.group, r.resource, r.subresource, r.code))


@dataclass(frozen=True)
class StepRequests:
    """The requests of one step: the tool's by verb, dry-run ones (server-wide, only the tools send them), and what
    the whole server handled meanwhile."""

    client: dict[str, int] = field(default_factory=dict)
    dry_run: dict[str, int] = field(default_factory=dict)
    server: dict[str, int] = field(default_factory=dict)
    detail: list[SeriesDelta] = field(default_factory=list)


def step_requests(before: Mapping[Series, float], after: Mapping[Series, float], prefix: str) -> StepRequests:
    moved = delta(before, after)
    return StepRequests(
        client=client_requests(moved, prefix),
        dry_run=server_requests(moved, dry_run=True),
        server=server_requests(moved),
        detail=server_detail(moved),
    )


def ordered_verbs(counts: Iterable[str]) -> list[str]:
    """Verbs in a stable reading order: discovery, reads, writes, then anything unexpected alphabetically."""
    seen = set(counts)
    return [v for v in VERB_ORDER if v in seen] + sorted(seen - set(VERB_ORDER))
