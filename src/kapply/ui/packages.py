"""The tables and lines of `kapply package` (kctrl's): repositories, available packages and their versions, values
schemas, installed packages, and the status lines printed while waiting. Column titles are kctrl's, so `--json` rows
have kctrl's keys (`package_name`, `useful_error_message`); a column kctrl hides (Namespace without `-A`) is hidden,
shown when `--column` names it, and `--column` is checked as kctrl checks it (`Table.only`). Values kctrl shows as Go
values are written as it writes them: a list or a map as YAML (a condition's fields in kctrl's order, empty ones
kept), an unset release time as `-`, a long description wrapped at 80 characters."""

from __future__ import annotations

import textwrap
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import Any

import orjson

from kapply.diff.yaml_text import to_yaml
from kapply.objects import Obj
from kapply.ui.app_status import ghost_live
from kapply.ui.output import Output
from kapply.ui.table import Column, Table
from kapply.versions import SemverError, parse_relaxed

STATUS_WIDTH, SOURCE_WIDTH, MESSAGE_WIDTH = 40, 60, 50  # kctrl's truncations
WRAP = 80
_CONDITION_STATUS = {
    "ReconcileFailed": "Reconcile failed",
    "ReconcileSucceeded": "Reconcile succeeded",
    "DeleteFailed": "Deletion failed",
    "Reconciling": "Reconciling",
    "Deleting": "Deleting",
}


def truncated(text: str, width: int) -> str:
    """kctrl's truncated value: the first `width` characters and `...`."""
    return text[:width] + "..." if len(text) > width else text


def _spec(obj: Obj) -> Obj:
    found = obj.get("spec")
    return found if isinstance(found, dict) else {}


def _status(obj: Obj) -> Obj:
    found = obj.get("status")
    return found if isinstance(found, dict) else {}


def _meta(obj: Obj) -> Obj:
    found = obj.get("metadata")
    return found if isinstance(found, dict) else {}


def _yaml(value: Any) -> str:
    """A list or map as kctrl shows one (YAML), "" when empty."""
    return to_yaml(value).rstrip("\n") if value else ""


def _wrapped(text: str) -> str:
    return "\n".join(
        textwrap.fill(line, WRAP, break_long_words=False, break_on_hyphens=False) for line in text.split("\n")
    )


def _listing(
    title: str,
    titles: Sequence[str],
    rows: Iterable[Sequence[str]],
    *,
    show_namespace: bool,
    hidden: Sequence[str] = (),
) -> Table:
    """A kctrl list, its columns hidden as kctrl hides them: Namespace unless listing all namespaces, and `hidden`."""
    hide = {*hidden, *(() if show_namespace else ("Namespace",))}
    columns = tuple(Column(t, hidden=t in hide) for t in titles)
    return Table(title, columns, tuple(tuple(row) for row in rows), kctrl=True)


_CONDITION_FIELDS = ("type", "status", "reason", "message")  # kapp-controller's AppCondition, in its field order


def conditions_text(conditions: Any) -> str:
    """A status's conditions as kctrl shows them (go-cli-ui's YAML of its Go structs): each condition's fields in
    the struct's order, an empty one kept as `""`, other fields left out; "" when there are none."""
    items = [c for c in conditions if isinstance(c, dict)] if isinstance(conditions, list) else []
    lines = []
    for item in items:
        fields = "".join(to_yaml({key: str(item.get(key) or "")}) for key in _CONDITION_FIELDS)
        lines += [("- " if i == 0 else "  ") + line for i, line in enumerate(fields.rstrip("\n").split("\n"))]
    return "\n".join(lines)


# --- repositories ----------------------------------------------------------------------------------------------------

KCTRL_REPOSITORY_VERSION = "kctrl.carvel.dev/repository-version"


def repository_source(repository: Obj) -> str:
    """kctrl's summary of `spec.fetch`: `(imgpkg) <image>`, with the tag constraints or the version kctrl recorded;
    kapply also names its other sources (kctrl shows `(unknown)`)."""
    fetch = _spec(repository).get("fetch") or {}
    bundle = fetch.get("imgpkgBundle")
    if isinstance(bundle, dict):
        version = _meta(repository).get("annotations", {}).get(KCTRL_REPOSITORY_VERSION)
        if version:
            return f"(imgpkg) ({version}) {bundle.get('image', '')}"
        semver = (bundle.get("tagSelection") or {}).get("semver")
        constraints = f" ({semver.get('constraints', '')})" if isinstance(semver, dict) else ""
        return f"(imgpkg) {bundle.get('image', '')}{constraints}"
    for kind in ("image", "git", "http"):
        source = fetch.get(kind)
        if isinstance(source, dict):
            where = source.get("url", "")
            ref = f" ({source['ref']})" if kind == "git" and source.get("ref") else ""
            return f"({kind}) {where}{ref}"
    return "(inline)" if isinstance(fetch.get("inline"), dict) else "(unknown)"


def repositories_table(repositories: Sequence[Obj], title: str, *, show_namespace: bool) -> Table:
    ordered = sorted(repositories, key=lambda r: (_meta(r).get("namespace", ""), _meta(r).get("name", "")))
    rows = [
        (
            str(_meta(r).get("namespace", "")),
            str(_meta(r).get("name", "")),
            truncated(repository_source(r), SOURCE_WIDTH),
            truncated(str(_status(r).get("friendlyDescription", "")), STATUS_WIDTH),
        )
        for r in ordered
    ]
    return _listing(title, ("Namespace", "Name", "Source", "Status"), rows, show_namespace=show_namespace)


def repository_table(repository: Obj) -> Table:
    status = _status(repository)
    row = (
        str(_meta(repository).get("namespace", "")),
        str(_meta(repository).get("name", "")),
        repository_source(repository),
        str(status.get("friendlyDescription", "")),
        conditions_text(status.get("conditions")),
        str(status.get("usefulErrorMessage", "")),
    )
    titles = ("Namespace", "Name", "Source", "Status", "Conditions", "Useful error message")
    return Table("", tuple(Column(t) for t in titles), (row,), transpose=True, kctrl=True)


# --- available packages ----------------------------------------------------------------------------------------------


def released_at(text: str) -> str:
    """A Package's `releasedAt` as kctrl shows it (Go's time format: `2021-10-05 00:00:00 +0000 UTC`), `-` unset
    (the cell's text, in `--json` too)."""
    if not text:
        return "-"
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return text
    zone = "+0000 UTC" if when.utcoffset() in (None, UTC.utcoffset(None)) else f"{when:%z} {when:%z}"
    return f"{when:%Y-%m-%d %H:%M:%S} {zone}"


def version_key(version: str) -> tuple[int, Any]:
    """Semver order (kctrl sorts versions so); a version that does not parse after those that do, by its text."""
    try:
        return (0, parse_relaxed(version).sort_key)
    except SemverError:
        return (1, version)


def package_metadatas_table(metadatas: Sequence[Obj], title: str, *, show_namespace: bool, wide: bool) -> Table:
    ordered = sorted(metadatas, key=lambda m: (_meta(m).get("namespace", ""), _meta(m).get("name", "")))
    rows = [
        (
            str(_meta(m).get("namespace", "")),
            str(_meta(m).get("name", "")),
            str(_spec(m).get("displayName", "")),
            str(_spec(m).get("shortDescription", "")),
        )
        for m in ordered
    ]
    titles = ("Namespace", "Name", "Display name", "Short description")
    hidden = () if wide else ("Short description",)
    return _listing(title, titles, rows, show_namespace=show_namespace, hidden=hidden)


def packages_table(packages: Sequence[Obj], title: str, *, show_namespace: bool) -> Table:
    ordered = sorted(
        packages,
        key=lambda p: (
            _meta(p).get("namespace", ""),
            _spec(p).get("refName", ""),
            version_key(str(_spec(p).get("version", ""))),
        ),
    )
    rows = [
        (
            str(_meta(p).get("namespace", "")),
            str(_spec(p).get("refName", "")),
            str(_spec(p).get("version", "")),
            released_at(str(_spec(p).get("releasedAt") or "")),
        )
        for p in ordered
    ]
    return _listing(title, ("Namespace", "Name", "Version", "Released at"), rows, show_namespace=show_namespace)


def package_table(name: str, metadata: Obj | None, package: Obj | None) -> Table:
    """`available get`: the package's metadata (when it has a PackageMetadata) and, for `name/version`, the
    version's details, in one transposed table."""
    cells: list[tuple[str, str]] = [("Name", name)]
    if metadata is not None:
        spec = _spec(metadata)
        maintainers = [{"name": m.get("name", "")} for m in spec.get("maintainers") or [] if isinstance(m, dict)]
        cells += [
            ("Display name", str(spec.get("displayName", ""))),
            ("Categories", _yaml(spec.get("categories"))),
            ("Short description", _wrapped(str(spec.get("shortDescription", "")))),
            ("Long description", _wrapped(str(spec.get("longDescription", "")))),
            ("Provider", str(spec.get("providerName", ""))),
            ("Maintainers", _yaml(maintainers)),
            ("Support description", _wrapped(str(spec.get("supportDescription", "")))),
        ]
    if package is not None:
        spec = _spec(package)
        cells += [
            ("Version", str(spec.get("version", ""))),
            ("Released at", released_at(str(spec.get("releasedAt") or ""))),
            ("Min capacity requirements", _wrapped(str(spec.get("capacityRequirementsDescription", "")))),
            ("Release notes", _wrapped(str(spec.get("releaseNotes", "")))),
            ("Licenses", ", ".join(str(x) for x in spec.get("licenses") or [])),
        ]
    columns = tuple(Column(title) for title, _ in cells)
    return Table("", columns, (tuple(v for _, v in cells),), transpose=True, kctrl=True)


def versions_table(packages: Sequence[Obj]) -> Table:
    ordered = sorted(packages, key=lambda p: version_key(str(_spec(p).get("version", ""))))
    rows = tuple(
        (str(_spec(p).get("version", "")), released_at(str(_spec(p).get("releasedAt") or ""))) for p in ordered
    )
    return Table("", (Column("Version"), Column("Released at")), rows, kctrl=True)


def shown_default(value: Any) -> str:
    """A schema default as kctrl prints it: text as it is, `true`/`false`, numbers, lists and maps as JSON."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return orjson.dumps(value).decode()


def values_schema_table(title: str, properties: Sequence[tuple[str, Any, str, str]]) -> Table:
    """Key, Default, Type, Description of each (key, default, type, description)."""
    rows = tuple((key, shown_default(default), kind, description) for key, default, kind, description in properties)
    columns = (Column("Key"), Column("Default"), Column("Type"), Column("Description"))
    return Table(title, columns, rows, kctrl=True)


# --- installed packages ----------------------------------------------------------------------------------------------


def install_status(install: Obj) -> str:
    """kctrl's status of a PackageInstall: `Canceled` or `Paused` from its spec, else its condition in words, else its
    friendlyDescription."""
    spec, status = _spec(install), _status(install)
    if spec.get("canceled"):
        return "Canceled"
    if spec.get("paused"):
        return "Paused"
    for item in status.get("conditions") or []:
        if isinstance(item, dict) and item.get("type") in _CONDITION_STATUS:
            return _CONDITION_STATUS[item["type"]]
    return str(status.get("friendlyDescription", ""))


def _condition_message(install: Obj) -> str:
    conditions = [c for c in _status(install).get("conditions") or [] if isinstance(c, dict)]
    return truncated(str(conditions[-1].get("message", "")), MESSAGE_WIDTH) if conditions else ""


def installs_table(installs: Sequence[Obj], title: str, *, show_namespace: bool, wide: bool) -> Table:
    ordered = sorted(installs, key=lambda i: (_meta(i).get("namespace", ""), _meta(i).get("name", "")))
    rows = [
        (
            str(_meta(i).get("namespace", "")),
            str(_meta(i).get("name", "")),
            str((_spec(i).get("packageRef") or {}).get("refName", "")),
            str(_status(i).get("version", "")),
            install_status(i),
            _condition_message(i),
        )
        for i in ordered
    ]
    titles = ("Namespace", "Name", "Package Name", "Package Version", "Status", "Message")
    return _listing(title, titles, rows, show_namespace=show_namespace, hidden=() if wide else ("Message",))


def install_table(install: Obj, overlay_secrets: Sequence[str]) -> Table:
    """`installed get`: the install as kctrl shows it, the overlay Secrets (a YAML list) and the error hidden when
    there are none."""
    status = _status(install)
    error = str(status.get("usefulErrorMessage") or "")
    cells = [
        (Column("Namespace"), str(_meta(install).get("namespace", ""))),
        (Column("Name"), str(_meta(install).get("name", ""))),
        (Column("Package name"), str((_spec(install).get("packageRef") or {}).get("refName", ""))),
        (Column("Package version"), str(status.get("version", ""))),
        (Column("Status"), install_status(install)),
        (Column("Overlay secrets", hidden=not overlay_secrets), _yaml(list(overlay_secrets))),
        (Column("Conditions"), conditions_text(status.get("conditions"))),
        (Column("Useful Error Message", hidden=not error), error),
    ]
    return Table("", tuple(c for c, _ in cells), (tuple(v for _, v in cells),), transpose=True, kctrl=True)


def _ago(timestamp: str, now: datetime) -> str:
    if not timestamp:
        return ""
    seconds = int((now - datetime.fromisoformat(timestamp.replace("Z", "+00:00"))).total_seconds())
    return short_duration(seconds)


def ghost_diffs_table(diffs: Sequence[Obj], now: datetime | None = None) -> Table:
    """kapply's: the ghost diffs the install's App reports (docs/reconciler.md, "Ghost diffs")."""
    now = now or datetime.now(UTC)
    rows = tuple(
        (
            str(d.get("resource", "")),
            str(d.get("path", "")),
            str(d.get("desired", "")),
            ghost_live(d),
            str(d.get("writtenBy", "")),
            str(d.get("recurrences", "")),
            _ago(str(d.get("firstSeen") or ""), now),
            _ago(str(d.get("lastSeen") or ""), now),
        )
        for d in diffs
    )
    titles = ("Resource", "Field", "Desired", "Live", "Written by", "Syncs", "First seen", "Last seen")
    notes = (
        "Fields set back although the package's desired state did not change: something on the cluster keeps "
        "changing them (ages are how long ago; one not seen at the last sync is resolved)",
    )
    columns = tuple(Column(t) for t in titles)
    return Table("Ghost diffs", columns, rows, notes=notes, content="ghost diffs", kctrl=True)


def app_table(app: Obj) -> Table:
    """`installed status`: the install's App (kctrl's Name, Namespace, Status, Metrics)."""
    status = _status(app)
    failures = int(status.get("consecutiveReconcileFailures") or 0)
    successes = int(status.get("consecutiveReconcileSuccesses") or 0)
    if failures:
        metrics = f"{failures} consecutive failures"
    elif successes:
        metrics = f"{successes} consecutive successes"
    else:
        metrics = "0 consecutive failures | 0 consecutive successes"
    shown = install_status(app) if status.get("conditions") else ""
    row = (str(_meta(app).get("name", "")), str(_meta(app).get("namespace", "")), shown, metrics)
    columns = (Column("Name"), Column("Namespace"), Column("Status"), Column("Metrics"))
    return Table("", columns, (row,), transpose=True, kctrl=True)


# --- status lines ----------------------------------------------------------------------------------------------------


def short_duration(seconds: int) -> str:
    """Kubernetes' ShortHumanDuration: `45s`, `12m`, `5h`, `3d`, `2y`."""
    for unit, size, limit in (("s", 1, 60), ("m", 60, 60), ("h", 3600, 24), ("d", 86400, 365)):
        if seconds < size * limit:
            return f"{max(seconds, 0) // size}{unit}"
    return f"{seconds // (86400 * 365)}y"


def clock(when: datetime) -> str:
    """Go's `3:04:05PM`, in local time."""
    local = when.astimezone()
    return f"{local.hour % 12 or 12}:{local:%M:%S}{'AM' if local.hour < 12 else 'PM'}"


def status_line(out: Output, message: str, at: str, block: str = "", now: datetime | None = None) -> None:
    """kctrl's status log line: the time of the status entry `at` (now when "") with how long ago it was when over a
    second, the message, and the block under it, each of its lines as `\\t    | line`."""
    now = now or datetime.now(UTC)
    when = datetime.fromisoformat(at.replace("Z", "+00:00")) if at else now
    seconds = int((now - when).total_seconds())
    age = f" ({short_duration(seconds)} ago)" if seconds > 1 else ""
    if message:
        out.begin_line(f"{clock(when)}: {message}{age}\n")
    if block:
        # kctrl's PrintBlock: shown without a TTY too, and among a JSON document's Blocks
        out.block("".join(f"\t    | {line}\n" for line in block.rstrip("\n").split("\n")))
