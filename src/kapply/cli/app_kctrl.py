"""`kapply app list|get|pause|kick|delete`: kctrl's app commands (`status` is app_status.py), for the App resources of
the groups the cluster serves (kapply.controller.vocabulary_choice): kctrl's tables, lines, questions, patches and
errors.

`pause` sets `spec.paused`; `kick` sets it and removes it at once (kctrl's two JSON patches: the App's generation
moves on, so the controller reconciles it now), then follows the App's stages (app_tail.py) unless `--wait=false`;
`delete` deletes the App (with `--noop`, after setting `spec.noopDelete`, so the controller leaves what it deployed)
and follows its deletion (app_tail.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from kapply.cli.command import Args
from kapply.cli.common import client, confirm, run
from kapply.cli.package.common import PAUSE, UNPAUSE, log, wait_flags
from kapply.errors import KapplyError
from kapply.flags import APP, NAMESPACE
from kapply.objects import Obj
from kapply.ui.table import Column, Table

if TYPE_CHECKING:
    from kapply.api import AsyncClient
    from kapply.controller.vocabulary import Vocabulary
    from kapply.resources.cluster import ResourceType
    from kapply.ui.output import Output

NOOP_DELETE = [{"op": "add", "path": "/spec/noopDelete", "value": True}]


def list_apps(args: Args, out: Output) -> None:
    run(_list(args, out))


def get(args: Args, out: Output) -> None:
    run(_get(args, out))


def pause(args: Args, out: Output) -> None:
    run(_pause(args, out))


def kick(args: Args, out: Output) -> None:
    run(_kick(args, out))


def delete(args: Args, out: Output) -> None:
    run(_delete(args, out))


def app_name(args: Args) -> str:
    """`-a`, checked before connecting, as kctrl checks it."""
    name: str = args[APP]
    if not name:
        raise KapplyError("Expected app name to be non empty")
    return name


@dataclass(frozen=True, slots=True)
class Connected:
    api: AsyncClient
    namespace: str
    vocabulary: Vocabulary

    @property
    def rtype(self) -> ResourceType:
        return self.vocabulary.app.rtype


@asynccontextmanager
async def connected_apps(args: Args, out: Output) -> AsyncIterator[Connected]:
    """A client, after kctrl's `Target cluster` line; the namespace to work in (`-n`, else its defaults); the App
    group to speak (`--api-groups`, else the one the cluster serves)."""
    from kapply.cli.app_commands import API_GROUPS
    from kapply.cli.controller_flags import choice
    from kapply.controller.vocabulary import VOCABULARIES, ApiGroups
    from kapply.controller.vocabulary_choice import served_vocabulary

    explicit = VOCABULARIES[choice(ApiGroups, API_GROUPS, args[API_GROUPS])] if args[API_GROUPS] else None
    async with client(args, args[NAMESPACE], out) as api:
        namespace = api.namespace()
        out.line(await api.target())
        yield Connected(api, namespace, explicit or await served_vocabulary(api.cluster))


async def existing(on: Connected, name: str) -> Obj:
    """The App, or kctrl's error when it does not exist."""
    found = await on.api.cluster.get(on.rtype, on.namespace, name)
    if found is None:
        raise KapplyError(f"App '{name}' does not exist in namespace '{on.namespace}'")
    return found


def not_found(on: Connected, name: str) -> KapplyError:
    """The API server's error for a missing App, as kctrl passes it on (`app status`)."""
    return KapplyError(f'{on.vocabulary.app.plural}.{on.vocabulary.app.group} "{name}" not found')


# --- what kctrl shows of an App --------------------------------------------------------------------------------------


def _part(obj: Obj, key: str) -> Obj:
    found = obj.get(key)
    return found if isinstance(found, dict) else {}


def owner(app: Obj) -> str:
    """`<Kind>/<name>` of the App's first owner ("" when none)."""
    references = _part(app, "metadata").get("ownerReferences") or []
    return f"{references[0].get('kind', '')}/{references[0].get('name', '')}" if references else ""


def owned_by_install(app: Obj, vocabulary: Vocabulary) -> bool:
    """An App a PackageInstall made (an owner in the packaging group): kctrl says so before changing it."""
    references = _part(app, "metadata").get("ownerReferences") or []
    return any(r.get("apiVersion") == vocabulary.install.api_version for r in references)


def failing_stage(status: Obj) -> str:
    """The first stage whose exit code is not 0 (kctrl's `Failing Stage`)."""
    for stage in ("fetch", "template", "deploy"):
        if _part(status, stage).get("exitCode", 0) != 0:
            return stage
    return ""


def _age(timestamp: str, now: datetime) -> str:
    from kapply.ui.packages import short_duration

    if not timestamp:
        return ""
    return short_duration(int((now - datetime.fromisoformat(timestamp.replace("Z", "+00:00"))).total_seconds()))


def apps_table(apps: Sequence[Obj], title: str, *, show_namespace: bool, now: datetime | None = None) -> Table:
    """`app list`: Namespace (hidden unless `-A`), Name, Status, Since Deploy (since the deploy stage's last update),
    Owner, Age; by namespace and name."""
    from kapply.ui.packages import install_status

    now = now or datetime.now(UTC)
    ordered = sorted(apps, key=lambda a: (_part(a, "metadata").get("namespace", ""), _part(a, "metadata")["name"]))
    rows = tuple(
        (
            str(_part(a, "metadata").get("namespace", "")),
            str(_part(a, "metadata")["name"]),
            install_status(a) if _part(a, "status").get("conditions") else "",
            _age(str(_part(_part(a, "status"), "deploy").get("updatedAt") or ""), now),
            owner(a),
            _age(str(_part(a, "metadata").get("creationTimestamp") or ""), now),
        )
        for a in ordered
    )
    titles = ("Namespace", "Name", "Status", "Since Deploy", "Owner", "Age")
    columns = tuple(Column(t, hidden=t == "Namespace" and not show_namespace) for t in titles)
    return Table(title, columns, rows, kctrl=True)


def app_table(app: Obj) -> Table:
    """`app get`: the App as kctrl shows it, transposed; the failing stage and the error hidden when there is no
    error."""
    from kapply.ui.packages import conditions_text, install_status

    meta, spec, status = _part(app, "metadata"), _part(app, "spec"), _part(app, "status")
    error = str(status.get("usefulErrorMessage") or "")
    references = [
        f"{r.get('apiVersion', '')}/{r.get('kind', '')}/{r.get('name', '')}" for r in meta.get("ownerReferences") or []
    ]
    cells = [
        (Column("Namespace"), str(meta.get("namespace", ""))),
        (Column("Name"), str(meta.get("name", ""))),
        (Column("Service Account"), str(spec.get("serviceAccountName", ""))),
        (Column("Status"), install_status(app) if status.get("conditions") else ""),
        (Column("Owner References"), "\n".join(f"- {r}" for r in references)),
        (Column("Conditions"), conditions_text(status.get("conditions"))),
        (Column("Failing Stage", hidden=not error), failing_stage(status)),
        (Column("Useful Error Message", hidden=not error), error),
    ]
    return Table("", tuple(c for c, _ in cells), (tuple(v for _, v in cells),), transpose=True, kctrl=True)


# --- the commands ----------------------------------------------------------------------------------------------------


async def _list(args: Args, out: Output) -> None:
    every = args["all-namespaces"]
    async with connected_apps(args, out) as on:
        found = await on.api.cluster.list(on.rtype, namespace=None if every else on.namespace)
        title = "Available apps in all namespaces" if every else f"Available apps in namespace '{on.namespace}'"
        out.table(apps_table(found, title, show_namespace=every))
        out.finish()


async def _get(args: Args, out: Output) -> None:
    name = app_name(args)
    async with connected_apps(args, out) as on:
        app = await on.api.cluster.get(on.rtype, on.namespace, name)
        if app is None:
            raise not_found(on, name)
        out.table(app_table(app))
        out.finish()


def _ask(args: Args, out: Output, app: Obj, on: Connected, question: str, consequence: str) -> None:
    """kctrl's question before changing an App (after a note when a PackageInstall made it: `consequence`, what the
    install will do, if said), its lines begun but not ended (go-cli-ui's BeginLinef): with `-y` the next line is
    glued to it, as kctrl prints it."""
    if owned_by_install(app, on.vocabulary):
        out.begin_line(f"App '{app['metadata']['name']}' is owned by '{owner(app)}'\n")
        if consequence:
            out.begin_line(f"{consequence}\n")
    out.begin_line(question)
    confirm(args, out)


async def _pause(args: Args, out: Output) -> None:
    name = app_name(args)
    async with connected_apps(args, out) as on:
        app = await existing(on, name)
        if _part(app, "spec").get("paused"):
            out.line(f"App '{name}' in namespace '{on.namespace}' is already paused")
            out.finish()
            return
        question = f"Pausing reconciliation for App '{name}' in namespace '{on.namespace}'"
        _ask(args, out, app, on, question, "(The App will be unpaused when the package installation reconciles)")
        out.line(f"Pausing reconciliation for App '{name}' in namespace '{on.namespace}'")
        await on.api.cluster.patch(on.rtype, on.namespace, name, PAUSE)
        out.finish()


async def _kick(args: Args, out: Output) -> None:
    name, wait = app_name(args), wait_flags(args)
    async with connected_apps(args, out) as on:
        app = await existing(on, name)
        _ask(args, out, app, on, f"Triggering reconciliation for app '{name}' in namespace '{on.namespace}'", "")
        log(out, f"Triggering reconciliation for app '{name}' in namespace '{on.namespace}'")
        await on.api.cluster.patch(on.rtype, on.namespace, name, PAUSE)
        await on.api.cluster.patch(on.rtype, on.namespace, name, UNPAUSE)
        if wait.enabled:
            log(out, f"Waiting for app reconciliation for '{name}'")
            await _follow(on, name, out, args)
        out.finish()


async def _delete(args: Args, out: Output) -> None:
    name, wait = app_name(args), wait_flags(args)
    async with connected_apps(args, out) as on:
        app = await existing(on, name)
        again = "(The app will be created again when the package installation reconciles)"
        _ask(args, out, app, on, f"Deleting app '{name}' in namespace '{on.namespace}'", again)
        if args["noop"]:
            log(out, f"Ignoring associated resources for app '{name}' in namespace '{on.namespace}'")
            await on.api.cluster.patch(on.rtype, on.namespace, name, NOOP_DELETE)
        await on.api.cluster.delete(on.rtype, on.namespace, name)
        if wait.enabled:
            log(out, f"Waiting for app deletion for '{name}'")
            await _follow(on, name, out, args)
        out.finish()


async def _follow(on: Connected, name: str, out: Output, args: Args) -> None:
    """The App's changes from now on, until its reconcile ends (or it is gone), within `--wait-timeout`."""
    from kapply.cli.app_tail import follow

    await follow(on.api.cluster, on.rtype, on.namespace, name, out, wait_flags(args).timeout)
