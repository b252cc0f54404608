"""The dashboard's web server (kapply.dashboard.security says whom it answers): the two pages, their script and style
(files shipped in the package: static/), the list as JSON and as server-sent events (from the Board's one watch per
kind), one App's page data, and its actions (sync now, pause, resume, and roll back to a change, previewed first)
done with the user's own credentials: the API server's refusal is the answer when RBAC forbids one. A
PackageInstall's page lists its revisions (from their Secrets' metadata) and rolls it back to one as `kapply package
installed rollback` does (kapply.packaging.rollback), previewed first: the values are read to be written back, and
only the names of the keys that change reach the page."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Awaitable, Callable
from contextlib import suppress
from importlib import resources

import orjson
from aiohttp import web

from kapply.api import AsyncClient, Plan, Transcript
from kapply.app.history import KEPT_LABEL, KEPT_TYPE, SECRETS
from kapply.controller.rollback import roll_back
from kapply.controller.vocabulary import CARVEL, KAPPLY, Resource
from kapply.controller.vocabulary_choice import install, package, repository, served
from kapply.dashboard import pages, security, view
from kapply.dashboard.board import Board, follow, served_kinds
from kapply.errors import ClusterError, KapplyError
from kapply.objects import Obj
from kapply.packaging import rollback as install_rollback
from kapply.resources.cluster import ResourceType

EVENT = ResourceType("", "v1", "Event", "events", True, frozenset({"list"}))
KEEPALIVE = 15.0  # seconds between the comments that keep an idle event stream open
PAUSE = [{"op": "add", "path": "/spec/paused", "value": True}]
UNPAUSE = [{"op": "remove", "path": "/spec/paused"}]
# What each action sends, as `kapply app kick` (pause, then unpause: the controller reconciles now) and `app pause`.
ACTIONS = {"kick": (PAUSE, UNPAUSE), "pause": (PAUSE,), "resume": (UNPAUSE,)}
PAGES = {"": pages.list_page, "app": pages.app_page, "packages": pages.packages_page}
# A LIST's objects as their metadata only (PartialObjectMetadataList), without their data
STATIC = {"dashboard.js": "application/javascript", "dashboard.css": "text/css"}
_RESOURCES = {f"{r.kind}.{r.group}": r for v in (KAPPLY, CARVEL) for r in (v.app, v.install)}


def parse_key(key: str) -> tuple[Resource, str, str] | None:
    """`App.kapply.dev/<namespace>/<name>` as its resource, namespace and name; None for anything else."""
    kind, _, rest = key.partition("/")
    namespace, _, name = rest.partition("/")
    resource = _RESOURCES.get(kind)
    if resource is None or not namespace or not name or "/" in name:
        return None
    return resource, namespace, name


def _json(data: object, status: int = 200) -> web.Response:
    return web.Response(
        status=status, body=orjson.dumps(data), content_type="application/json", headers=security.HEADERS
    )


def _plain(status: int, text: str) -> web.Response:
    return web.Response(status=status, text=text + "\n", headers=security.HEADERS)


def _refused_status(error: ClusterError) -> int:
    return 403 if error.forbidden else 404 if error.not_found else 409


class Dashboard:
    def __init__(self, api: AsyncClient, board: Board, token: str = "", csrf: str = "") -> None:
        self.api = api
        self.board = board
        self.token = token or secrets.token_urlsafe(32)
        self.csrf = csrf or secrets.token_urlsafe(32)
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://{security.HOST}:{self.port}/{self.token}/"

    async def handle(self, request: web.Request) -> web.StreamResponse:
        why = security.refusal(request.method, request.headers, request.path, self.port, self.token, self.csrf)
        if why:
            return _plain(403, f"Forbidden: {why}")
        rest = security.split_path(request.path)[1]
        if request.method == "POST":
            if rest != "api/action":
                return _plain(404, "Not Found")
            return await self._action(request)
        if request.method not in ("GET", "HEAD"):
            return _plain(405, "Method Not Allowed")
        if rest in PAGES:
            text = PAGES[rest](self.token, self.csrf)
            return web.Response(text=text, content_type="text/html", charset="utf-8", headers=security.HEADERS)
        if rest.startswith("static/") and rest[7:] in STATIC:
            body = resources.files("kapply.dashboard").joinpath("static", rest[7:]).read_bytes()
            return web.Response(body=body, content_type=STATIC[rest[7:]], headers=security.HEADERS)
        if rest == "api/apps":
            return _json(self._snapshot(view.Filters.of(request.query)))
        if rest == "api/packages":
            return _json(await self._packages())
        if rest == "api/app":
            return await self._app(request.query.get("key", ""))
        if rest == "api/rollback":
            return await self._rollback_preview(request.query.get("key", ""), request.query.get("change", ""))
        if rest == "api/install-rollback":
            return await self._install_rollback_preview(request.query.get("key", ""), request.query.get("revision", ""))
        if rest == "events":
            return await self._events(request)
        return _plain(404, "Not Found")

    def _rows(self, filters: view.Filters, key: str = "") -> list[Obj]:
        rows = [view.row(obj) for k, obj in sorted(self.board.objects.items()) if not key or k == key]
        return [r.to_json() for r in rows if filters.match(r)]

    def _snapshot(self, filters: view.Filters, key: str = "") -> Obj:
        return {"rows": self._rows(filters, key), "hidden": sorted(self.board.hidden.values())}

    async def _events(self, request: web.Request) -> web.StreamResponse:
        """The list (or with `key`, one App's row) as server-sent events: a `snapshot` first, then `row` (an object
        that matches the filters, changed), `gone` (one that left or no longer matches) and `hidden`."""
        filters, only = view.Filters.of(request.query), request.query.get("key", "")
        response = web.StreamResponse(headers={**security.HEADERS, "Content-Type": "text/event-stream"})
        await response.prepare(request)
        queue = self.board.subscribe()
        try:
            await response.write(_sse("snapshot", self._snapshot(filters, only)))
            while True:
                try:
                    key = await asyncio.wait_for(queue.get(), KEEPALIVE)
                except TimeoutError:
                    await response.write(b": keepalive\n\n")
                    continue
                if key == "":
                    await response.write(_sse("hidden", sorted(self.board.hidden.values())))
                elif not only or key == only:
                    rows = self._rows(filters, key)
                    await response.write(_sse("row", rows[0]) if rows else _sse("gone", {"key": key}))
        except ConnectionResetError:  # the page went away
            pass
        finally:
            self.board.unsubscribe(queue)
        return response

    async def _packages(self) -> Obj:
        """The packages page: repositories, available packages and installs of the groups the cluster serves (one
        LIST each, when the page loads), and the kinds the user may not list, with the API server's message."""
        discovery = await self.api.cluster.discovery()
        out: Obj = {"repositories": [], "packages": [], "installs": [], "hidden": []}
        shown = {"repositories": view.repository_json, "packages": view.package_json, "installs": view.install_json}
        wanted = [
            (part, needed(vocabulary))
            for part, needed in (("repositories", repository), ("packages", package), ("installs", install))
            for vocabulary in served(discovery, needed)
        ]
        listed = await asyncio.gather(
            *(self.api.cluster.list(resource.rtype) for _, resource in wanted), return_exceptions=True
        )
        for (part, resource), found in zip(wanted, listed, strict=True):
            if isinstance(found, ClusterError):
                out["hidden"].append(f"{resource.plural}.{resource.group} are hidden: {found}")
            elif isinstance(found, BaseException):
                raise found
            else:
                out[part].extend(shown[part](obj) for obj in found)
        return out

    async def _object(self, resource: Resource, namespace: str, name: str) -> Obj | None:
        found = self.board.objects.get(f"{resource.kind}.{resource.group}/{namespace}/{name}")
        return found if found is not None else await self.api.cluster.get(resource.rtype, namespace, name)

    async def _app(self, key: str) -> web.Response:
        parsed = parse_key(key)
        if parsed is None:
            return _plain(400, f"Bad Request: no App or PackageInstall is named {key!r}")
        resource, namespace, name = parsed
        try:
            obj = await self._object(resource, namespace, name)
        except ClusterError as e:
            return _json({"error": str(e)}, _refused_status(e))
        if obj is None:
            return _json({"error": f"{resource.kind} {namespace}/{name} not found"}, 404)
        out = view.detail(obj) | {"key": key}
        out["tree"], out["events"], out["history"] = await asyncio.gather(
            _part(self._tree(namespace, name)),
            _part(self._app_events(resource, namespace, name)),
            _part(self._history(namespace, name)),
        )
        if resource.kind == "PackageInstall":
            out["revisions"] = await _part(self._revisions(obj))
        return _json(out)

    async def _revisions(self, install: Obj) -> object:
        """The install's revisions, newest first: number, version, when, values digest (their Secrets' metadata)."""
        return [
            {"revision": r.number, "version": r.version, "created": r.created, "digest": r.digest}
            for r in await install_rollback.summaries(self.api.cluster, install)
        ]

    async def _tree(self, namespace: str, name: str) -> object:
        """kapp's `inspect --tree` of the kapp app the App deploys as (`<name>.app`)."""
        app = f"{name}.app"
        transcript = Transcript()
        transcript.resources(app, await self.api.inspect(app, namespace=namespace), tree=True)
        transcript.finish()
        return transcript.text

    async def _app_events(self, resource: Resource, namespace: str, name: str) -> object:
        selector = f"involvedObject.kind={resource.kind},involvedObject.name={name}"
        events, _ = await self.api.cluster.list_with_version(EVENT, namespace=namespace, field_selector=selector)
        return view.sorted_events(events)

    async def _history(self, namespace: str, name: str) -> object:
        changes = await self.api.app_changes(f"{name}.app", namespace=namespace)
        kept = await self._kept(namespace)
        return [
            {
                "name": c.name,
                "startedAt": c.meta.started_at,
                "finishedAt": c.meta.finished_at,
                "successful": c.meta.successful,
                "description": c.meta.description,
                "diff": c.diff,  # masked with the diffMaskRules before it was stored (Secret values never reach it)
                "kept": None if kept is None else c.name in kept,  # what it applied is kept: it may be rolled back to
            }
            for c in reversed(changes)
        ]

    async def _kept(self, namespace: str) -> set[str] | None:
        """The names of the app-changes in `namespace` whose applied documents are kept (a rollback may go back to
        them); None when the user may not list Secrets there (the rollback's preview then says why). One LIST a
        view, of the kept changes' Secrets only (the API server selects them by label and type) and of their
        metadata only: no Secret's data reaches this process."""
        try:
            listed = await self.api.cluster.list_metadata(
                SECRETS, namespace=namespace, label_selector=KEPT_LABEL, field_selector=f"type={KEPT_TYPE}"
            )
        except ClusterError:
            return None
        return {str(meta.get("name")) for meta in listed}

    async def _plan_rollback(self, key: str, change: str) -> Plan | web.Response:
        """The rollback of the App `key`'s kapp app (`<name>.app`) to `change`, or the answer saying why there is
        none (the API server's refusal when RBAC forbids reading what it needs)."""
        parsed = parse_key(key)
        if parsed is None or not change:
            return _plain(400, "Bad Request: a rollback needs an App's key and the app change to roll back to")
        _, namespace, name = parsed
        try:
            return await self.api.plan_rollback(f"{name}.app", change, namespace=namespace)
        except ClusterError as e:
            return _json({"ok": False, "message": str(e)}, _refused_status(e))
        except KapplyError as e:
            return _json({"ok": False, "message": str(e)}, 409)

    async def _rollback_preview(self, key: str, change: str) -> web.Response:
        """What rolling back to `change` would change, as `app-change rollback` shows it: its diff from the live
        state (Secret values masked) and the changes table."""
        plan = await self._plan_rollback(key, change)
        if isinstance(plan, web.Response):
            return plan
        transcript = Transcript()
        transcript.plan(plan, hunks=True)
        transcript.finish()
        return _json({"ok": True, "diff": transcript.text, "pending": plan.pending})

    async def _rollback(self, key: str, change: str) -> web.Response:
        """Roll back as `kapply app-change rollback` does (kapply.controller.rollback: the controller's App and its
        PackageInstall paused first, saying so), with the plan made again now (the live state may have moved since
        the preview)."""
        plan = await self._plan_rollback(key, change)
        if isinstance(plan, web.Response):
            return plan
        said: list[str] = []
        try:
            await self.api.check_deploy(plan)
            await roll_back(self.api, plan, said.append)
        except ClusterError as e:
            return _json({"ok": False, "message": "\n".join([*said, str(e)])}, _refused_status(e))
        except KapplyError as e:
            return _json({"ok": False, "message": "\n".join([*said, str(e)])}, 409)
        return _json({"ok": True, "message": "\n".join(said)})

    async def _plan_install_rollback(
        self, key: str, number: str
    ) -> tuple[Resource, Obj, install_rollback.Plan] | web.Response:
        """The rollback of the PackageInstall `key` to its revision `number` (read now), or the answer saying why
        there is none (the API server's refusal when RBAC forbids reading the install, its revision or values)."""
        parsed = parse_key(key)
        if parsed is None or parsed[0].kind != "PackageInstall" or not number.isdigit():
            return _plain(400, "Bad Request: a rollback needs a PackageInstall's key and the revision to roll back to")
        resource, namespace, name = parsed
        try:
            install = await self.api.cluster.get(resource.rtype, namespace, name)
            if install is None:
                return _json({"ok": False, "message": f"PackageInstall {namespace}/{name} not found"}, 404)
            target = await install_rollback.revision(self.api.cluster, install, int(number))
            return resource, install, await install_rollback.planned(self.api.cluster, install, target)
        except ClusterError as e:
            return _json({"ok": False, "message": str(e)}, _refused_status(e))
        except KapplyError as e:
            return _json({"ok": False, "message": str(e)}, 409)

    async def _install_rollback_preview(self, key: str, number: str) -> web.Response:
        """What rolling the install back to revision `number` changes, as `installed rollback` says it: the version
        from and to, which values keys differ (never a value), and whether it is a downgrade."""
        planned = await self._plan_install_rollback(key, number)
        if isinstance(planned, web.Response):
            return planned
        _, install, plan = planned
        meta = install["metadata"]
        return _json(
            {
                "ok": True,
                "revision": plan.target.number,
                "versionFrom": plan.version_from,
                "versionTo": plan.target.version,
                "valuesChanged": plan.values_changed,
                "changedKeys": None if plan.changed_keys is None else list(plan.changed_keys),
                "downgrade": plan.downgrade,
                "text": "\n".join(install_rollback.described(plan, meta["name"], meta["namespace"])),
            }
        )

    async def _install_rollback(self, key: str, number: str) -> web.Response:
        """Roll the install back as `kapply package installed rollback` does (kapply.packaging.rollback), planned
        again now; it does not wait for the reconcile (the page shows it live)."""
        planned = await self._plan_install_rollback(key, number)
        if isinstance(planned, web.Response):
            return planned
        resource, install, plan = planned
        said: list[str] = []
        try:
            await install_rollback.roll_back(self.api.cluster, resource.rtype, install, plan, said.append)
        except ClusterError as e:
            return _json({"ok": False, "message": "\n".join([*said, str(e)])}, _refused_status(e))
        except KapplyError as e:
            return _json({"ok": False, "message": "\n".join([*said, str(e)])}, 409)
        return _json({"ok": True, "message": "\n".join([*said, f"Rolled back to revision {plan.target.number}"])})

    async def _action(self, request: web.Request) -> web.Response:
        key, action = request.query.get("key", ""), request.query.get("action", "")
        if action == "rollback":
            return await self._rollback(key, request.query.get("change", ""))
        if action == "install-rollback":
            return await self._install_rollback(key, request.query.get("revision", ""))
        parsed = parse_key(key)
        if parsed is None or action not in ACTIONS:
            return _plain(400, "Bad Request: an action needs an App's key and kick, pause, resume or rollback")
        resource, namespace, name = parsed
        try:
            for patch in ACTIONS[action]:
                await self.api.cluster.patch(resource.rtype, namespace, name, patch)
        except ClusterError as e:
            return _json({"ok": False, "message": str(e)}, _refused_status(e))
        done = {"kick": "Reconciliation triggered", "pause": "Paused", "resume": "Resumed"}[action]
        return _json({"ok": True, "message": f"{done}: {resource.kind} {namespace}/{name}"})


def _sse(event: str, data: object) -> bytes:
    return b"event: " + event.encode() + b"\ndata: " + orjson.dumps(data) + b"\n\n"


async def _part(work: Awaitable[object]) -> object:
    """One part of an App's page, or `{"error": ...}` when the user may not read it (the page shows the others)."""
    try:
        return await work
    except KapplyError as e:
        return {"error": str(e)}


async def serve(api: AsyncClient, port: int, started: Callable[[str], None]) -> None:
    """Run the dashboard until cancelled: `started` gets its URL once it listens."""
    board = Board()
    kinds = await served_kinds(api)
    if not kinds:
        board.hidden["none"] = "the cluster serves no App or PackageInstall (kapply's or kapp-controller's CRDs)"
    dashboard = Dashboard(api, board)
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", dashboard.handle)
    runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0)
    await runner.setup()
    watches = [asyncio.create_task(follow(api, board, kind)) for kind in kinds]
    try:
        site = web.TCPSite(runner, security.HOST, port)
        await site.start()
        dashboard.port = runner.addresses[0][1]
        started(dashboard.url)
        await asyncio.Event().wait()
    finally:
        for watch in watches:
            watch.cancel()
        for watch in watches:
            with suppress(asyncio.CancelledError):
                await watch
        await runner.cleanup()
