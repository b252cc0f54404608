"""Rolling a PackageInstall back to one of its revisions (kapply.packaging.revisions), shared by `kapply package
installed rollback` and the dashboard's "Roll back to this revision", both with the user's own rights.

The plan says what changes: the version (from, to), which top-level values keys differ (never a value), and whether
it is a downgrade (a version below the install's last attempted one, which a PackageInstall refuses without
kapp-controller's downgradable annotation). Running it annotates the install downgradable when needed, pauses it
while its values change (as `installed update` does, so that no reconcile reads half a change), sets its version
constraint to the revision's exact version, writes the revision's values back into the install's values Secret (or
removes the install's values when the revision had none), and resumes it. Only values `installed update` can write
are rolled back: one values Secret with one key."""

from __future__ import annotations

import base64
import copy
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from kapply.errors import KapplyError
from kapply.objects import Obj
from kapply.packaging.install_update import update_install
from kapply.packaging.revisions import (
    INSTALL_UID_LABEL,
    SECRETS,
    Revision,
    ValuesSecret,
    head,
    number_of,
    parse,
    secret_name,
    values_digest,
    values_of,
)
from kapply.packaging.spec import parse_package_install
from kapply.resources.cluster import Cluster, ResourceType

DOWNGRADABLE = "packaging.carvel.dev/downgradable"
KAPPLY_DOWNGRADABLE = "packaging.kapply.dev/downgradable"
PAUSE = [{"op": "add", "path": "/spec/paused", "value": True}]
UNPAUSE = [{"op": "remove", "path": "/spec/paused"}]
MERGE = "application/merge-patch+json"
# A LIST's objects as their metadata only (PartialObjectMetadataList): a revision's values are not read to list it


@dataclass(frozen=True, slots=True)
class Plan:
    """What a rollback changes."""

    target: Revision
    version_from: str
    values: bytes | None  # the values file to write back; None: the values stay as they are
    drop_values: bool  # the revision ran without values: the install's are removed
    changed_keys: tuple[str, ...] | None  # the top-level values keys that differ; None: not comparable as maps
    downgrade: bool  # the downgradable annotation must be added

    @property
    def values_changed(self) -> bool:
        return self.values is not None or self.drop_values


@dataclass(frozen=True, slots=True)
class Summary:
    """A revision as its Secret's metadata says it (what `history` and the dashboard show: never its values)."""

    number: int
    version: str
    digest: str
    created: str


def summary(meta: Obj) -> Summary:
    """A revision from its Secret's metadata (checked: kapply.packaging.revisions.head)."""
    number, version, digest = head(meta)
    return Summary(number, version, digest, str(meta.get("creationTimestamp") or ""))


async def summaries(cluster: Cluster, install: Obj) -> list[Summary]:
    """The install's revisions, newest first, from one LIST of their Secrets' metadata (no value is read): those that
    are its revisions by name, label and owner (`number_of`), whatever else carries its label."""
    meta = install["metadata"]
    selector = f"{INSTALL_UID_LABEL}={meta.get('uid', '')}"
    found = await cluster.list_metadata(SECRETS, namespace=meta["namespace"], label_selector=selector)
    made = (summary(item) for item in found if number_of(item, install) is not None)
    return sorted(made, key=lambda s: s.number, reverse=True)


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


async def revision(cluster: Cluster, install: Obj, number: int) -> Revision:
    """Revision `number` of the install (one GET of its Secret, which must be the install's: `number_of`)."""
    meta = install["metadata"]
    name = secret_name(meta["name"], number)
    found = await cluster.get(SECRETS, meta["namespace"], name)
    if found is None or number_of(found.get("metadata") or {}, install) != number:
        raise KapplyError(
            f"Expected revision {number} of package install '{meta['name']}' in namespace '{meta['namespace']}' "
            f"(Secret '{name}') to be kept"
        )
    return parse(found)


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


def same_package(install: Obj, target: Revision) -> None:
    """KapplyError unless `target` ran the package the install selects now (spec.packageRef.refName): a rollback sets
    the install's version and values, never its package, so a revision of another package (the install's refName
    edited since) would make its version a constraint on this one, and its values this one's."""
    meta = install["metadata"]
    package = str(((install.get("spec") or {}).get("packageRef") or {}).get("refName") or "")
    if target.package != package:
        raise KapplyError(
            f"Expected revision {target.number} of package install '{meta['name']}' in namespace "
            f"'{meta['namespace']}' (Secret '{secret_name(meta['name'], target.number)}') to be of the package the "
            f"install selects, '{package}', not '{target.package}': a rollback does not change an install's package"
        )


def plan(install: Obj, target: Revision, current: tuple[ValuesSecret, ...]) -> Plan:
    """The rollback of `install` (its values Secrets now: `current`) to `target`, a revision of its package."""
    from kapply.versions import downgrade_refusal

    same_package(install, target)
    status = install.get("status") or {}
    annotations = (install.get("metadata") or {}).get("annotations") or {}
    last = str(status.get("lastAttemptedVersion") or "")
    downgrade = DOWNGRADABLE not in annotations and KAPPLY_DOWNGRADABLE not in annotations
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


async def planned(cluster: Cluster, install: Obj, target: Revision) -> Plan:
    """The rollback of `install` to `target`, its values now read with `cluster`'s rights."""
    current = await values_of(cluster, install["metadata"]["namespace"], parse_package_install(install))
    return plan(install, target, current)


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


async def roll_back(
    cluster: Cluster,
    rtype: ResourceType,
    install: Obj,
    plan: Plan,
    say: Callable[[str], None],
    paused: Callable[[], Awaitable[None]] | None = None,
) -> None:
    """Run the rollback `plan` of `install` (a PackageInstall of `rtype`), saying each step; `paused`: waits until
    its App has seen the pause (the CLI's `--wait`). Resumed even when a step fails; a refusal is the API server's
    ClusterError."""
    meta = install["metadata"]
    namespace, name = meta["namespace"], meta["name"]
    where = f"package install '{name}' in namespace '{namespace}'"
    selection = ((install.get("spec") or {}).get("packageRef") or {}).get("versionSelection")
    if not isinstance(selection, dict):
        raise KapplyError(f"Expected {where} to select its package's version (spec.packageRef.versionSelection)")
    if plan.downgrade:
        say(f"Annotating {where} with {DOWNGRADABLE}")
        install = await cluster.patch(rtype, namespace, name, {"metadata": {"annotations": {DOWNGRADABLE: ""}}}, MERGE)
    if plan.values_changed:
        say(f"Pausing reconciliation for {where}")
        await cluster.patch(rtype, namespace, name, PAUSE)
    try:
        if plan.values_changed:
            if paused is not None:
                await paused()
            install = await cluster.get(rtype, namespace, name) or install
        updated = copy.deepcopy(install)
        updated["spec"]["packageRef"]["versionSelection"]["constraints"] = plan.target.version
        await _write_values(cluster, updated, plan, say)
        if updated != install:
            say(f"Updating {where}")
            await update_install(cluster, rtype, install, updated)
        else:
            say(f"No changes to {where}")
    finally:
        if plan.values_changed:
            say(f"Resuming reconciliation for {where}")
            await cluster.patch(rtype, namespace, name, UNPAUSE)


async def _write_values(cluster: Cluster, install: Obj, plan: Plan, say: Callable[[str], None]) -> None:
    """The revision's values written back (`install`'s spec changed to match): into the install's one values Secret
    under its one key, as `installed update --values-file` writes it, or, when the install names none (or it is
    gone), into a new Secret of the revision's name owned by the install; or the install's values removed."""
    spec, meta = install["spec"], install["metadata"]
    namespace, refs = meta["namespace"], spec.get("values") or []
    if plan.drop_values:
        say(f"Removing the values of package install '{meta['name']}' (revision {plan.target.number} had none)")
        spec.pop("values", None)
        return
    if plan.values is None:
        return
    if len(refs) > 1:
        raise KapplyError(
            f"Expected package install '{meta['name']}' in namespace '{namespace}' to have one or no values Secret to "
            "write revision's values back to"
        )
    content = base64.b64encode(plan.values).decode()
    kept = plan.target.values[0]
    named = str((refs[0].get("secretRef") or {}).get("name") or "") if refs else ""
    found = await cluster.get(SECRETS, namespace, named) if named else None
    if found is not None:
        data = found.get("data") or {}
        if len(data) > 1:
            raise KapplyError(
                f"Could not safely update values Secret '{named}' in namespace '{namespace}' as it has more than one "
                "data keys"
            )
        say(f"Updating secret '{named}'")
        await cluster.update(SECRETS, {**found, "data": {next(iter(data), kept.data[0][0]): content}})
        return
    secret = named or kept.name
    say(f"Creating secret '{secret}'")
    owner = {"apiVersion": install["apiVersion"], "kind": install["kind"], "name": meta["name"], "uid": meta["uid"]}
    body = {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "Opaque",
        "metadata": {"name": secret, "namespace": namespace, "ownerReferences": [owner]},
        "data": {kept.data[0][0]: content},
    }
    await cluster.create(SECRETS, body)
    spec["values"] = [{"secretRef": {"name": secret}}]
