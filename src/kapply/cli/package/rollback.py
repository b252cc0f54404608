"""`kapply package installed history` and `rollback` (kapply's own, as `helm history` and `helm rollback`): the
revisions kapply's controller keeps of an install (kapply.packaging.revisions), and going back to one of them.

A rollback is an `installed update` (install.py's, reused whole: the pause while values change, the values Secret
written as `--values-file` writes it, the wait): the version constraint set to the revision's exact version and the
revision's values written back, with the user's own rights. Going back below the install's last attempted version
is a downgrade, which a PackageInstall refuses without kapp-controller's downgradable annotation: the rollback adds
it, and says so. What changes is shown first (the version, and which top-level values keys differ, never a value),
and asked (`-y`)."""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kapply.cli.command import Args
from kapply.cli.common import confirm, run
from kapply.errors import KapplyError
from kapply.objects import Obj

if TYPE_CHECKING:
    from kapply.packaging.revisions import Revision, ValuesSecret
    from kapply.ui.output import Output
    from kapply.ui.table import Table

DOWNGRADABLE = "packaging.carvel.dev/downgradable"
TO_REVISION = "to-revision"


def history(args: Args, out: Output) -> None:
    run(_history(args, out))


def rollback(args: Args, out: Output) -> None:
    run(_rollback(args, out))


@dataclass(frozen=True, slots=True)
class Plan:
    """What a rollback changes."""

    target: Revision
    version_from: str
    values: bytes | None  # the values file to write back; None: the values stay as they are
    drop_values: bool  # the revision ran without values: the install's are removed (`--values=false`)
    changed_keys: tuple[str, ...] | None  # the top-level values keys that differ; None: not comparable as maps
    downgrade: bool  # the downgradable annotation must be added

    @property
    def values_changed(self) -> bool:
        return self.values is not None or self.drop_values


def history_table(name: str, namespace: str, revisions: list[Revision]) -> Table:
    from kapply.ui.table import Column, Table

    columns = (Column("Revision"), Column("Version"), Column("Created"), Column("Values digest"))
    rows = tuple((str(r.number), r.version, r.created, r.digest) for r in reversed(revisions))
    return Table(f"Revisions of package install '{name}' in namespace '{namespace}'", columns, rows, kctrl=True)


def chosen(revisions: list[Revision], number: int) -> Revision:
    """The revision to go back to: `number`, else (0) the one before the latest."""
    if number:
        found = next((r for r in revisions if r.number == number), None)
        if found is None:
            kept = ", ".join(str(r.number) for r in revisions)
            raise KapplyError(f"Expected revision {number} to be one of the revisions kept ({kept})")
        return found
    if len(revisions) < 2:
        raise KapplyError("Expected an earlier revision to roll back to: the install has only one")
    return revisions[-2]


def values_file(values: tuple[ValuesSecret, ...], number: int) -> bytes | None:
    """The one values file of a revision, as `installed update --values-file` writes it (None: it had no values);
    KapplyError for values `update` cannot write (several Secrets, or keys)."""
    if not values:
        return None
    if len(values) > 1 or len(values[0].data) != 1:
        raise KapplyError(
            f"Expected revision {number} to have one values Secret with one key (as `installed update --values-file` "
            "writes it) to roll back to"
        )
    return base64.b64decode(values[0].data[0][1])


def changed_keys(current: bytes | None, target: bytes | None) -> tuple[str, ...] | None:
    """The top-level keys whose values differ between two values files (ytt's data values, YAML); None when either
    is not a map. Never the values: a parse error is not shown (it may quote them)."""
    from kapply import yamlio

    def keys(content: bytes | None) -> dict[str, object] | None:
        if content is None:
            return {}
        try:
            merged: dict[str, object] = {}
            for doc in yamlio.load_all(content, "values", KapplyError):
                if doc is None:
                    continue
                if not isinstance(doc, dict):
                    return None
                merged.update(doc)
            return merged
        except KapplyError:
            return None

    before, after = keys(current), keys(target)
    if before is None or after is None:
        return None
    return tuple(sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k)))


def plan(install: Obj, target: Revision, current: tuple[ValuesSecret, ...]) -> Plan:
    """The rollback of `install` (its values Secrets now: `current`) to `target`."""
    from kapply.packaging.revisions import values_digest
    from kapply.versions import downgrade_refusal

    status = install.get("status") or {}
    annotations = (install.get("metadata") or {}).get("annotations") or {}
    last = str(status.get("lastAttemptedVersion") or "")
    downgrade = DOWNGRADABLE not in annotations and "packaging.kapply.dev/downgradable" not in annotations
    same_values = values_digest(current) == target.digest
    wanted = values_file(target.values, target.number)
    now = None if not current or len(current) > 1 or len(current[0].data) != 1 else current[0].data[0][1]
    return Plan(
        target,
        str(status.get("version") or ""),
        None if same_values or wanted is None else wanted,
        not same_values and wanted is None,
        () if same_values else changed_keys(None if now is None else base64.b64decode(now), wanted),
        downgrade and downgrade_refusal(target.version, last) is not None,
    )


def described(plan: Plan, name: str, namespace: str) -> list[str]:
    """The lines that say what the rollback changes."""
    lines = [f"Rolling back package install '{name}' in namespace '{namespace}' to revision {plan.target.number}"]
    if plan.version_from == plan.target.version:
        lines.append(f"  version: {plan.target.version} (unchanged)")
    else:
        lines.append(f"  version: {plan.version_from or '(none)'} -> {plan.target.version}")
    if not plan.values_changed:
        lines.append("  values: unchanged")
    elif plan.drop_values:
        lines.append("  values: changed (the revision had none: the install's values are removed)")
    elif plan.changed_keys is None:
        lines.append("  values: changed")
    else:
        lines.append(f"  values: changed (keys: {', '.join(plan.changed_keys) or '(formatting only)'})")
    if plan.downgrade:
        lines.append(f"  a downgrade: the install is annotated {DOWNGRADABLE} to allow it")
    return lines


async def _history(args: Args, out: Output) -> None:
    from kapply.cli.package.common import connected
    from kapply.cli.package.install import speaks
    from kapply.cli.package.installed import _existing, _name
    from kapply.packaging.revisions import listed

    name = _name(args)
    async with connected(args, out, speaks) as (api, namespace, vocabulary):
        install = await _existing(api, vocabulary, namespace, name)
        out.table(history_table(name, namespace, await listed(api.cluster, namespace, install)))
        out.finish()


async def _rollback(args: Args, out: Output) -> None:
    from kapply.cli.package.common import connected, log, wait_flags
    from kapply.cli.package.created import InstallNames
    from kapply.cli.package.install import Files, Request, _apply_update, speaks
    from kapply.cli.package.installed import _existing, _name
    from kapply.packaging.revisions import listed, values_of
    from kapply.packaging.spec import parse_package_install

    name = _name(args)
    async with connected(args, out, speaks) as (api, namespace, vocabulary):
        install = await _existing(api, vocabulary, namespace, name)
        revisions = await listed(api.cluster, namespace, install)
        if not revisions:
            raise KapplyError(
                f"Package install '{name}' in namespace '{namespace}' has no revisions (kapply's controller keeps "
                "them, with the install's service account)"
            )
        target = chosen(revisions, args[TO_REVISION])
        current = await values_of(api.cluster, namespace, parse_package_install(install))
        planned = plan(install, target, current)
        out.line("\n".join(described(planned, name, namespace)))
        confirm(args, out)
        if planned.downgrade:
            log(out, f"Annotating package install '{name}' with {DOWNGRADABLE}")
            patch = {"metadata": {"annotations": {DOWNGRADABLE: ""}}}
            merge = "application/merge-patch+json"
            install = await api.cluster.patch(vocabulary.install.rtype, namespace, name, patch, merge)
        # (the values come from the revision, not a file: `values_file` only names them, as `update` tests it)
        values_from = f"revision {target.number}" if planned.values is not None else ""
        request = Request(name, "", target.version, values_from, not planned.drop_values, (), True)
        files = Files(planned.values, None)
        await _apply_update(
            api, vocabulary, install, request, files, InstallNames(name, namespace), out, wait_flags(args)
        )
        out.finish()
