"""`kapply dev` (kctrl dev): reconcile an App or a PackageInstall read from files, without a controller and without
creating it on the cluster, and say how it went as kctrl does.

The App (or PackageInstall, with the Packages of the files) is kept in memory (kapply.controller.local), where the
controller's own reconcilers work on it as on any object: the PackageInstall's selects its Package among those of the
files and makes its App there; the App's fetches and templates in the sandbox (its Secrets and ConfigMaps read from
the files first, then from the cluster with the App's service account) and deploys with the App's service account,
as the kapp app `<name>.app` of the App's namespace: the deployed resources and their record are on the cluster, the
App is not. With `--delete`, the App is reconciled as being deleted: its resources and record are deleted. With
`--local`, the fetch steps the `kctrl.carvel.dev/local-fetch-<i>` annotations name take the files of those local
directories instead (dev_config.with_local_sources).

What is printed is kctrl's: the App (or PackageInstall) as read, `Reconciling in-memory app/<name> (namespace: <ns>)
...`, then the App's stages as its status changes (kctrl's tail: `Fetch started`, `Template succeeded`,
`Deploying` and the deploy's output, `Deploy succeeded`, ...). A reconcile that fails fails the command.
"""

from __future__ import annotations

import base64
import copy
import logging
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from kapply import flags
from kapply.cli.command import Args, Command, FlagSection
from kapply.errors import KapplyError
from kapply.flags import DEBUG, NAMESPACE, Flag, Kind
from kapply.flags import tty as tty_flag
from kapply.objects import Obj

if TYPE_CHECKING:
    from kapply.api import AsyncClient
    from kapply.cli.dev_config import Documents
    from kapply.controller.fetch import ReadSource
    from kapply.controller.local import LocalCluster
    from kapply.controller.reconciler import Reconciler
    from kapply.resources.cluster import ResourceType
    from kapply.ui.output import Output

FILE = replace(flags.FILE, help="Set file name (required)")  # kctrl dev's words
LOCAL = Flag("local", Kind.BOOL, False, "Use local fetch source", short="l")
KBLD_BUILD = Flag("kbld-build", Kind.BOOL, False, "Allow kbld build", short="b", supported=False)
DELETE = Flag("delete", Kind.BOOL, False, "Delete deployed app")


def dev_command(section: str) -> Command:
    return Command(
        "dev",
        "Deploy App CRs and packaging CRs, as kctrl dev does, without a controller (kapply)",
        "kapply.cli.dev:dev",
        section=section,
        flag_sections=(FlagSection("Flags", (DELETE, FILE, KBLD_BUILD, LOCAL, NAMESPACE, tty_flag(False))),),
    )


def dev(args: Args, out: Output) -> None:
    from kapply.cli.common import run

    run(_dev(args, out))


async def _dev(args: Args, out: Output) -> None:
    from kapply.cli import dev_config
    from kapply.cli.common import client

    documents = dev_config.read(args[FILE], sys.stdin.buffer.read)
    if not args[DEBUG]:  # the reconcilers' log lines, as kctrl's, only with --debug
        controller_log = logging.getLogger("kapply.controller")
        controller_log.addHandler(logging.NullHandler())
        controller_log.propagate = False
    async with client(args, args[NAMESPACE], out) as api:
        documents = dev_config.with_namespace(documents, api.namespace())
        out.line(await api.target())
        await reconcile(api, documents, out, delete=args[DELETE], cwd=Path.cwd() if args[LOCAL] else None)
    out.finish()


def _status(obj: Obj | None) -> Obj:
    found = (obj or {}).get("status")
    return found if isinstance(found, dict) else {}


class Tail:
    """kctrl's tail of the App's status: the lines for each change of it, as the reconcilers write it."""

    def __init__(self, out: Output, app: ResourceType, namespace: str, name: str) -> None:
        self.out, self.app, self.key = out, app, (namespace, name)
        self.previous: Obj = {}
        self.deploy_output = ""
        self.failure = ""  # the stage that failed, once one did: kctrl's tail stops there

    def __call__(self, rtype: ResourceType, obj: Obj) -> None:
        from kapply.cli.package.tailing import progress
        from kapply.ui.packages import status_line

        meta = obj["metadata"]
        if (rtype.group, rtype.plural) != (self.app.group, self.app.plural) or self.failure:
            return
        if (meta.get("namespace"), meta["name"]) != self.key:
            return
        status = _status(obj)
        found = progress(self.previous, status, self.deploy_output)
        for line in found.lines:
            status_line(self.out, line.message, line.at, line.block)
            if line.message.endswith(" failed") or line.message.startswith(("ReconcileFailed", "DeleteFailed")):
                self.failure = line.message
        self.previous, self.deploy_output = status, found.deploy_output


async def reconcile(api: AsyncClient, documents: Documents, out: Output, *, delete: bool, cwd: Path | None) -> None:
    """Reconcile the App or PackageInstall of `documents` in memory (see the module's docstring), with the local
    directories of `cwd` when given (`--local`). A failed App is said as kctrl says it (`App tailing error: ...`,
    and the command succeeds, as kctrl's); a PackageInstall that fails before it makes its App is a KapplyError."""
    from kapply.cli.dev_config import with_local_sources
    from kapply.controller.events import EVENTS
    from kapply.controller.local import LocalCluster
    from kapply.controller.reconciler import Reconciler
    from kapply.controller.settings import Settings
    from kapply.controller.status import now
    from kapply.diff.yaml_text import to_yaml

    shown = documents.primary
    if cwd is not None:
        documents = with_local_sources(documents, cwd)
    vocabulary, primary = documents.vocabulary, documents.primary
    namespace, name = primary["metadata"]["namespace"], primary["metadata"]["name"]
    deleted_at = now() if delete else None
    tail = Tail(out, vocabulary.app.rtype, namespace, name)
    kept = (vocabulary.app, vocabulary.install, vocabulary.package, vocabulary.package_metadata)
    local = LocalCluster(api.cluster.context, [*(r.rtype for r in kept), EVENTS], on_write=tail)
    local.on_warning = api.cluster.on_warning
    here = api.through(local)
    apps = Reconciler(here, Settings(vocabulary=vocabulary), read_source=read_source(documents))
    try:
        for package in documents.packages:
            local.add(vocabulary.package.rtype, package)
        for metadata in documents.metadatas:
            local.add(vocabulary.package_metadata.rtype, metadata)
        if documents.apps:
            local.add(vocabulary.app.rtype, _deleting(primary, vocabulary.app_finalizer, deleted_at))
        else:
            local.add(vocabulary.install.rtype, primary)
        out.block(to_yaml(go_printed(shown, deleted_at)))
        out.line(f"Reconciling in-memory app/{name} (namespace: {namespace}) ...")
        if documents.installs:
            await _install(here, local, apps, documents, deleted_at)
        else:
            await apps.reconcile(namespace, name)
    finally:
        await apps.close()
        await local.close()
    if tail.failure:
        out.line(f"App tailing error: Reconciling app: {tail.failure}")


async def _install(
    api: AsyncClient, local: LocalCluster, apps: Reconciler, documents: Documents, deleted_at: str | None
) -> None:
    """The PackageInstall's reconcile, as kctrl runs it: the PackageInstall's (which selects the Package and makes
    the App), the App's, the PackageInstall's again (which reports the App's outcome). Being deleted, the
    PackageInstall is reconciled as a controller would after its App deployed: its App (with the finalizer the
    deploy added) is deleted, then the PackageInstall goes."""
    from kapply.packaging.install import InstallReconciler
    from kapply.packaging.settings import PackagingSettings

    vocabulary = documents.vocabulary
    namespace, name = documents.primary["metadata"]["namespace"], documents.primary["metadata"]["name"]
    installs = InstallReconciler(api, PackagingSettings(global_namespace=vocabulary.global_namespace), vocabulary)
    await installs.reconcile(namespace, name)
    if deleted_at is not None:
        app = await local.get(vocabulary.app.rtype, namespace, name)
        if app is not None:
            await local.add_finalizer(vocabulary.app.rtype, app, vocabulary.app_finalizer)
        await local.delete(vocabulary.install.rtype, namespace, name)
        await installs.reconcile(namespace, name)
    await apps.reconcile(namespace, name)
    await installs.reconcile(namespace, name)
    install = await local.get(vocabulary.install.rtype, namespace, name)
    if install is None or await local.get(vocabulary.app.rtype, namespace, name) is not None:
        return  # gone (deleted), or it made its App, whose outcome the tail told
    failed = next((c for c in _status(install).get("conditions") or [] if c.get("type") == "ReconcileFailed"), None)
    if failed is not None:
        raise KapplyError(str(failed.get("message", "")))


def go_printed(obj: Obj, deleted_at: str | None) -> Obj:
    """The App or PackageInstall as kctrl prints it, from Go's struct: `creationTimestamp: null` and the zero
    status fields when absent; being deleted, with its deletionTimestamp."""
    out = copy.deepcopy(obj)
    meta = out.setdefault("metadata", {})
    meta.setdefault("creationTimestamp", None)
    if deleted_at is not None:
        meta["deletionTimestamp"] = deleted_at
    out["status"] = {"conditions": None, "friendlyDescription": "", "observedGeneration": 0, **_status(obj)}
    return out


def _deleting(obj: Obj, finalizer: str, deleted_at: str | None) -> Obj:
    """The App as being deleted (when `deleted_at`), with the finalizer its reconciler added when it deployed."""
    if deleted_at is None:
        return obj
    meta = dict(obj["metadata"])
    meta["finalizers"] = [*(meta.get("finalizers") or []), finalizer]
    meta["deletionTimestamp"] = deleted_at
    return {**obj, "metadata": meta}


def secret_with_data(secret: Obj) -> Obj:
    """A Secret as the API server keeps it: `stringData` written into `data`, base64-encoded, over what it has."""
    string_data = secret.get("stringData")
    if not isinstance(string_data, dict) or not string_data:
        return secret
    encoded = {k: base64.b64encode(str(v).encode()).decode() for k, v in string_data.items()}
    body = {k: v for k, v in secret.items() if k != "stringData"}
    return {**body, "data": {**(secret.get("data") or {}), **encoded}}


def read_source(documents: Documents) -> Callable[[AsyncClient, str], ReadSource]:
    """How the fetch and template stages read Secrets and ConfigMaps: those of the files first, as kctrl's, then the
    cluster's with the App's service account (the controller's reader)."""
    from kapply.controller.reconciler import reader

    files: dict[tuple[str, str, str], Obj] = {}
    for kind, docs in (("Secret", documents.secrets), ("ConfigMap", documents.config_maps)):
        for doc in docs:
            meta = doc.get("metadata") or {}
            files[(kind, str(meta.get("namespace", "")), str(meta.get("name", "")))] = (
                secret_with_data(doc) if kind == "Secret" else doc
            )

    def source(client: AsyncClient, namespace: str) -> ReadSource:
        cluster = reader(client, namespace)

        async def read(kind: str, name: str) -> Obj | None:
            found = files.get((kind, namespace, name))
            return copy.deepcopy(found) if found is not None else await cluster(kind, name)

        return read

    return source
