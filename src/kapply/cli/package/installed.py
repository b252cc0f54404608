"""`kapply package installed list|get|delete|pause|kick|status`: kctrl's commands for PackageInstalls (`create` and
`update` are in install.py). `get` also shows kapply's ghost diffs of the install (docs/packages.md, "Ghost diffs at
the package level") and the ytt overlay that ends them, ready to give to `installed update --ytt-overlay-file`."""

from __future__ import annotations

import asyncio
import base64
from typing import TYPE_CHECKING

from kapply.cli.command import Args
from kapply.cli.common import confirm, run
from kapply.cli.package.common import PAUSE, UNPAUSE, connected, log, offline, required, wait_flags, write_file
from kapply.controller.vocabulary_choice import install as speaks  # the groups the install commands speak
from kapply.errors import KapplyError
from kapply.objects import Obj

if TYPE_CHECKING:
    from kapply.api import AsyncClient
    from kapply.cli.package.created import InstallNames
    from kapply.controller.vocabulary import Vocabulary
    from kapply.ui.output import Output

STATUS_INTERVAL = 1.0  # seconds between looks at the App while `status` tails it


def list_installed(args: Args, out: Output) -> None:
    run(_list(args, out))


def get(args: Args, out: Output) -> None:
    run(_get(args, out))


def delete(args: Args, out: Output) -> None:
    run(_delete(args, out))


def pause(args: Args, out: Output) -> None:
    run(_pause(args, out))


def kick(args: Args, out: Output) -> None:
    run(_kick(args, out))


def status(args: Args, out: Output) -> None:
    run(_status(args, out))


def _name(args: Args) -> str:
    return required(args["package-install"], "Expected package install name to be non-empty")


async def _existing(api: AsyncClient, vocabulary: Vocabulary, namespace: str, name: str) -> Obj:
    found = await api.cluster.get(vocabulary.install.rtype, namespace, name)
    if found is None:
        raise KapplyError(f"Package install '{name}' does not exist in namespace '{namespace}'")
    return found


async def _list(args: Args, out: Output) -> None:
    from kapply.ui.packages import installs_table

    every = args["all-namespaces"]
    async with connected(args, out, speaks) as (api, namespace, vocabulary):
        found = await api.cluster.list(vocabulary.install.rtype, namespace=None if every else namespace)
        title = "Installed packages in all namespaces" if every else f"Installed packages in namespace '{namespace}'"
        out.table(installs_table(found, title, show_namespace=every, wide=args["wide"]))
        out.finish()


def overlay_secrets(install: Obj) -> list[str]:
    """The Secrets of ytt files the install's annotations add to its package (kctrl's overlays, and any other)."""
    from kapply.packaging.names import Extension, extension_keys

    prefixes = extension_keys(Extension.YTT_PATHS_FROM_SECRET_NAME)
    annotations = (install.get("metadata") or {}).get("annotations") or {}
    return [value for key, value in sorted(annotations.items()) if key.startswith(prefixes)]


async def _values(api: AsyncClient, install: Obj, namespace: str, name: str) -> bytes:
    """The content of the install's one values Secret (kctrl's `get --values`)."""
    from kapply.cli.package.kinds import SECRETS

    refs = (install.get("spec") or {}).get("values") or []
    if not refs:
        raise KapplyError(f"No values have been supplied to package installation '{name}' in namespace '{namespace}'")
    if len(refs) != 1:
        raise KapplyError(f"Expected 1 values reference, found {len(refs)}")
    secret_name = (refs[0].get("secretRef") or {}).get("name", "")
    secret = await api.cluster.get(SECRETS, namespace, secret_name)
    if secret is None:
        raise KapplyError(f"Values secret '{secret_name}' not found in namespace '{namespace}'")
    data = secret.get("data") or {}
    if len(data) != 1:
        raise KapplyError("Manually created values Secret has multiple keys" if data else "Values secret is empty")
    return base64.b64decode(next(iter(data.values())))


async def _get(args: Args, out: Output) -> None:
    from kapply.ui.app_status import show_owned
    from kapply.ui.packages import ghost_diffs_table, install_table

    name, values_file, overlay_file = _name(args), args["values-file-output"], args["ghost-diffs-overlay-output"]
    async with connected(args, out, speaks) as (api, namespace, vocabulary):
        install = await _existing(api, vocabulary, namespace, name)
        if args["values"] or values_file:
            content = await _values(api, install, namespace, name)
            if values_file:
                write_file(values_file, content, "values")
            else:
                out.block(content.decode(errors="replace"))
            out.finish()
            return
        ghosts = (install.get("status") or {}).get("ghostDiffs") or {}
        if overlay_file and not ghosts.get("suggestedOverlay"):
            raise KapplyError(f"Package install '{name}' has no ghost diffs with a suggested overlay")
        out.table(install_table(install, overlay_secrets(install)))
        if ghosts.get("diffs"):
            out.table(ghost_diffs_table(ghosts["diffs"]))
            _show_overlay(out, ghosts, name, namespace, overlay_file)
        show_owned(out, (install.get("status") or {}).get("fieldOwners") or {}, "the package's templated output")
        out.finish()


def _show_overlay(out: Output, ghosts: Obj, name: str, namespace: str, file: str) -> None:
    """The suggested overlay: saved to `file`, or printed to be saved; with the command that adds it."""
    overlay, config = str(ghosts.get("suggestedOverlay") or ""), str(ghosts.get("suggestedConfig") or "")
    add = f"kapply package installed update -i {name} -n {namespace} --ytt-overlay-file {file or '<file>.yml'}"
    if file:
        write_file(file, overlay, "the overlay")
        out.line(f"Saved the ytt overlay that ends the ghost diffs to {file}; add it with: {add}")
    elif overlay:
        out.line(f"The ytt overlay that ends the ghost diffs (save it as a .yml file and add it with: {add}):")
        out.block(overlay)
    elif config:
        out.line(
            "Rebase rules that end them (the package has no ytt step to add them to: add this kapp Config "
            "where the package reads its files):"
        )
        out.block(config)


async def _delete(args: Args, out: Output) -> None:
    from kapply.cli.package.created import InstallNames
    from kapply.cli.package.waiting import wait_for_install_deletion

    name = _name(args)
    async with offline(args) as unconnected:  # kctrl asks before it connects (and says the target cluster)
        out.line(f"Delete package install '{name}' from namespace '{unconnected.namespace()}'")
    confirm(args, out)
    async with connected(args, out, speaks) as (api, namespace, vocabulary):
        installs = vocabulary.install.rtype
        install = await api.cluster.get(installs, namespace, name)
        made = InstallNames(name, namespace)
        if install is None:
            out.line(
                f"Could not find package install '{name}' in namespace '{namespace}'. Cleaning up created resources."
            )
            await _delete_created(api, made, None, out)
            out.finish()
            return
        if args["noop"]:
            log(out, f"Setting noopDelete on package install '{name}': the resources it deployed are kept")
            await api.cluster.patch(
                installs, namespace, name, [{"op": "add", "path": "/spec/noopDelete", "value": True}]
            )
        log(out, f"Deleting package install '{name}' from namespace '{namespace}'")
        await api.cluster.delete(installs, namespace, name)
        log(out, f"Waiting for deletion of package install '{name}' from namespace '{namespace}'")
        await wait_for_install_deletion(api.cluster, vocabulary, namespace, name, out, wait_flags(args))
        await _delete_created(api, made, install, out)
        out.finish()


async def _delete_created(api: AsyncClient, names: InstallNames, install: Obj | None, out: Output) -> None:
    """Delete what `install` created for the install: the resources its annotations record (`Deleting '<Kind>':
    <name>`), and its overlays Secret (quietly); without the install, those of kctrl's names that carry its owner
    annotation (a plain line naming the resource type, kctrl's `Deleting 'secrets': <name>`)."""
    from kapply.cli.package import created
    from kapply.cli.package.kinds import CLUSTER_ROLE_BINDINGS, CLUSTER_ROLES, SECRETS, SERVICE_ACCOUNTS

    types = {
        created.CreatedKind.SERVICE_ACCOUNT: SERVICE_ACCOUNTS,
        created.CreatedKind.CLUSTER_ROLE: CLUSTER_ROLES,
        created.CreatedKind.CLUSTER_ROLE_BINDING: CLUSTER_ROLE_BINDINGS,
        created.CreatedKind.SECRET: SECRETS,
    }
    annotations = ((install or {}).get("metadata") or {}).get("annotations") or {}
    recorded = created.recorded(annotations) if install is not None else []
    checked = [] if install is not None else [(kind, names.name_of(kind)) for kind in created.CreatedKind]
    overlays = annotations.get(created.OVERLAYS_ANNOTATION) if install is not None else names.overlays_secret
    if overlays:
        checked.append((created.CreatedKind.SECRET, overlays))
    for kind, resource in recorded + checked:
        rtype, namespace = types[kind], names.namespace if kind.namespaced else None
        if (kind, resource) in checked:
            found = await api.cluster.get(rtype, namespace, resource)
            if found is None or not created.owned_by(found, names):
                continue
        if install is None:
            out.line(f"Deleting '{rtype.plural}': {resource}")
        elif (kind, resource) not in checked:
            log(out, f"Deleting '{kind}': {resource}")
        await api.cluster.delete(rtype, namespace, resource)


async def _pause(args: Args, out: Output) -> None:
    name = _name(args)
    async with connected(args, out, speaks) as (api, namespace, vocabulary):
        await _existing(api, vocabulary, namespace, name)
        out.line(f"Pausing reconciliation for package install '{name}' in namespace '{namespace}'")
        confirm(args, out)
        _pausing(out, name, namespace)
        await api.cluster.patch(vocabulary.install.rtype, namespace, name, PAUSE)
        out.finish()


def _pausing(out: Output, name: str, namespace: str) -> None:
    """kctrl's line as `installed pause` and `kick` pause the install (`installation`, where the question said
    `install`)."""
    log(out, f"Pausing reconciliation for package installation '{name}' in namespace '{namespace}'")


async def _kick(args: Args, out: Output) -> None:
    from kapply.cli.package.waiting import KICK_TAIL_ERROR, wait_for_app_paused, wait_for_install

    name, wait = _name(args), wait_flags(args)
    async with connected(args, out, speaks) as (api, namespace, vocabulary):
        await _existing(api, vocabulary, namespace, name)
        installs = vocabulary.install.rtype
        out.line(f"Triggering reconciliation for package install '{name}' in namespace '{namespace}'")
        confirm(args, out)
        _pausing(out, name, namespace)
        await api.cluster.patch(installs, namespace, name, PAUSE)
        try:
            if wait.enabled:
                await wait_for_app_paused(api.cluster, vocabulary, namespace, name, wait)
        finally:  # resumed even when the App was not seen paused in time
            log(out, f"Starting reconciliation for package install '{name}' in namespace '{namespace}'")
            await api.cluster.patch(installs, namespace, name, UNPAUSE)
        if wait.enabled:
            await wait_for_install(api.cluster, vocabulary, namespace, name, out, wait, tail_error=KICK_TAIL_ERROR)
        out.finish()


async def _status(args: Args, out: Output) -> None:
    from kapply.cli.package.tailing import condition
    from kapply.cli.package.waiting import Tail
    from kapply.ui.packages import app_table, status_line

    name = _name(args)
    async with connected(args, out, speaks) as (api, namespace, vocabulary):
        apps = vocabulary.app.rtype
        app = await api.cluster.get(apps, namespace, name)
        owners = ((app or {}).get("metadata") or {}).get("ownerReferences") or [{}]
        if app is None or (owners[0].get("kind"), owners[0].get("name")) != (vocabulary.install.kind, name):
            raise KapplyError(f"Could not find app associated with package install '{name}' in namespace '{namespace}'")
        out.table(app_table(app))
        tail = Tail(out, {})
        while True:
            tail.update(app)
            found = condition(app.get("status") or {})
            if found == "ReconcileSucceeded" and not app["metadata"].get("deletionTimestamp"):
                break
            if found in ("ReconcileFailed", "DeleteFailed"):
                useful = (app.get("status") or {}).get("usefulErrorMessage", "")
                raise KapplyError(f"Reconciling app: {found}: {useful}")
            await asyncio.sleep(STATUS_INTERVAL)
            latest = await api.cluster.get(apps, namespace, name)
            if latest is None:
                status_line(out, f"App '{name}' in namespace '{namespace}' deleted", "")
                break
            app = latest
        out.finish()
