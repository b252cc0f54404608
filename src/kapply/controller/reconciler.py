"""Reconciling one App, as kapp-controller's app_reconcile.go: an App being deleted takes its resources with it; a
paused one is left alone; any other goes through the stages fetch, template and deploy (each in its own module), and
its status says how each went.

Everything an App reads or deploys goes through its own service account's token (Secrets and ConfigMaps of
`pathsFrom`/`valuesFrom`/`secretRef` included), never the controller's rights. A sync of an unchanged App writes
nothing: no app-change, no status update, no token request while the cached token lives; and it reads nothing from
the API server: the App comes from the App watch, its objects and record from the watch-fed cache (cache.py), read
through the App's own client, which serves an App only what its account was allowed to read.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial

from kapply.api import AsyncClient, DriftPolicy
from kapply.controller import apps, ghosts, owners, sandbox_app, timing
from kapply.controller import status as app_status
from kapply.controller.cache import Cache, app_client
from kapply.controller.credentials import Tokens
from kapply.controller.delete import delete
from kapply.controller.deploy import Deployed, DeployFailed, DeployRequest, Hooks, deploy, field_key, kapp_app_name
from kapply.controller.downward import ClusterFacts
from kapply.controller.events import Recorder
from kapply.controller.fetch import FetchPolicy, ReadSource
from kapply.controller.inspect import inspect
from kapply.controller.metrics import AppCount, Clock, KindSeries, Timed
from kapply.controller.sandbox import Sandbox, SandboxFailed, Stage, shared
from kapply.controller.settings import Settings
from kapply.controller.spec import AppSpec, parse_spec, parsed
from kapply.errors import ClusterError, KapplyError
from kapply.objects import Obj
from kapply.resources.cluster import Cluster, Connect, ResourceType

_log = logging.getLogger("kapply.controller")
Key = tuple[str, str]
CONFIGMAPS = ResourceType("", "v1", "ConfigMap", "configmaps", True, frozenset({"get"}))
SECRETS = ResourceType("", "v1", "Secret", "secrets", True, frozenset({"get"}))
NAMESPACES = ResourceType("", "v1", "Namespace", "namespaces", False, frozenset({"get"}))
# Told, before an App's deploy applies anything, its label value, the types of its objects, their namespaces, and
# how to connect with the App's service account (see watch.DriftWatches).
Track = Callable[[Key, str, list[ResourceType], tuple[str, ...], Connect], None]
# Told how long each deploy stage took (seconds) and whether it succeeded: the controller's metrics.
ObserveDeploy = Callable[[float, bool], None]


def reader(client: AsyncClient, namespace: str) -> ReadSource:
    """Reads ConfigMaps and Secrets of the App's namespace with the App's service account: an App reads only what its
    account may read."""

    async def read(kind: str, name: str) -> Obj | None:
        return await client.cluster.get(SECRETS if kind == "Secret" else CONFIGMAPS, namespace, name)

    return read


@dataclass(frozen=True, slots=True)
class Failed:
    """A stage that failed: the status's message, its useful error message, and its stages' status entries."""

    message: str
    useful: str
    stages: Obj = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Templated:
    """The fetch and template stages' result: the manifests to deploy, and the stages' status entries."""

    manifests: str
    stages: Obj


@dataclass(frozen=True, slots=True)
class Done:
    """The deploy stage's result, and when it started (its status entry's startedAt)."""

    deployed: Deployed
    started: str


class Reconciler:
    def __init__(
        self,
        api: AsyncClient,
        settings: Settings | None = None,
        track: Track | None = None,
        observe_deploy: ObserveDeploy | None = None,
        *,
        cache: Cache | None = None,
        counts: KindSeries | None = None,
        read_source: Callable[[AsyncClient, str], ReadSource] = reader,
    ) -> None:
        self.api = api
        self.settings = settings or Settings()
        self._apps = self.settings.vocabulary.app.rtype  # the App's type: the controller's vocabulary's
        self.track = track or (lambda app, label, types, namespaces, connect: None)
        self.observe_deploy = observe_deploy or (lambda seconds, ok: None)
        self.cache = cache or Cache()  # without the watches' cache (main.py's), every read goes to the API server
        self.counts = counts or KindSeries()  # kapp-controller's App counters and times (main.py's in /metrics)
        # how the fetch and template stages read Secrets and ConfigMaps, given the App's client and namespace
        # (`kapply dev` serves those of its files first)
        self.read_source = read_source
        self.tokens = Tokens(api, watch=cache is not None)  # with main.py's cache, accounts are watched too
        self.events = Recorder(api.cluster, self.settings.vocabulary.app)
        self.facts = ClusterFacts()  # the cluster's version and APIs, for the template steps that read them
        self.memory: dict[Key, ghosts.Memory] = {}
        self.owners: dict[Key, owners.Owners] = {}  # each App's owned fields (controller/owners.py)
        self._clients: dict[tuple[str, str, str], AsyncClient] = {}
        self._retired: dict[tuple[str, str], list[AsyncClient]] = {}

    def _sandbox(self) -> Sandbox:
        """The sandbox the fetch and template stages run in (one per event loop, shared with the packaging
        controllers)."""
        return shared(self.settings)

    def sync_period(self, spec: AppSpec | None) -> float:
        return timing.sync_period(spec, self.settings)

    async def _write_status(self, app: Obj, status: Obj) -> None:
        """Through the status subresource (kapply.resources.cluster's conflict policy); a status that differs only in
        its times is not written, so that an unchanged App's periodic sync writes nothing."""
        await self.api.cluster.write_status(self._apps, app, status, unchanged=app_status.same_but_times)

    def _parse_spec(self, app: Obj) -> AppSpec:
        return parse_spec(app, self.settings.default_drift_policy)

    async def reconcile(self, namespace: str, name: str) -> float | None:
        """One pass; returns when to come back (seconds), or None when the App is gone. The App is read as the App
        watch last showed it (it asked for this reconcile, or the last pass did); a write to a version that is no
        longer the latest is refused (409) and made again on the App read afresh (Cluster.write_status)."""
        app = self.cache.apps.get((namespace, name)) or await apps.get(
            self.api.cluster, self.settings.vocabulary, namespace, name
        )
        if app is None:
            self.memory.pop((namespace, name), None)
            self.owners.pop((namespace, name), None)
            self.counts.forget(namespace, name)
            return None
        spec, problem = parsed(self._parse_spec, app)
        if app["metadata"].get("deletionTimestamp"):
            return await self._delete(app, spec)
        status = {**(app.get("status") or {}), "observedGeneration": app["metadata"].get("generation", 0)}
        if spec is not None and (spec.paused or spec.canceled):
            self.counts.init(namespace, name)  # kapp-controller's InitMetrics: a paused App's counters are there, at 0
            await self._write_status(app, app_status.paused(status, status["observedGeneration"]))
            return self.sync_period(spec)
        self.counts.count(namespace, name, AppCount.ATTEMPT)
        if spec is None:
            return await self._fail(app, status, spec, Failed(problem, ""))
        try:
            return await self._reconcile(app, spec, status)
        except KapplyError:
            raise  # the worker's to handle: a conflict is retried soon, a status that cannot be written with back-off
        except Exception as e:  # a failure nothing foresaw still ends in the status, never in `Reconciling` forever
            _log.exception("%s/%s: reconcile failed unexpectedly", namespace, name)
            message = f"Reconcile failed: {type(e).__name__}: {e}"
            return await self._fail(app, status, spec, Failed(message, message))

    async def _reconcile(self, app: Obj, spec: AppSpec, status: Obj) -> float:
        """Fetch and template, then deploy: each stage returns what it did or how it failed, and the status is built
        from the status the pass started with and those results."""
        previous: Obj = app.get("status") or {}
        if _starts_anew(previous, status):  # a new spec or a retry says so at once (kubectl wait sees it)
            await self._write_status(app, app_status.reconciling(status))
        clock = self.counts.clock(app["metadata"]["namespace"], app["metadata"]["name"])  # kapp-controller's times
        try:
            client = await self._as_app(app["metadata"]["namespace"], spec.service_account)
        except KapplyError as e:
            clock.stop()
            return await self._fail(app, status, spec, Failed(str(e), str(e)))
        templated = await self._fetch_and_template(app, spec, client, clock)
        if isinstance(templated, Failed):
            clock.stop()
            return await self._fail(app, status, spec, templated)
        status = {**status, **templated.stages}
        deployed = await self._deploy(app, spec, client, templated.manifests, status, clock)
        clock.stop()
        status = await self._inspected(app, spec, client, status, previous, deployed)
        if isinstance(deployed, Failed):
            return await self._fail(app, status, spec, deployed)
        return await self._succeeded(app, spec, status, previous, deployed)

    async def _inspected(
        self, app: Obj, spec: AppSpec, client: AsyncClient, status: Obj, previous: Obj, deployed: Done | Failed
    ) -> Obj:
        """The status with `inspect` (kapp-controller's `kapp inspect` after each pass), or without it when the App
        does not ask for it. A sync that deployed nothing for a spec already reconciled keeps the last one: listing
        the App's resources asks the API server once per type, and an idle sync asks it nothing."""
        if not spec.deploy.inspect:
            return {k: v for k, v in status.items() if k != "inspect"}
        idle = (
            isinstance(deployed, Done)
            and not deployed.deployed.changed
            and previous.get("observedGeneration") == status["observedGeneration"]
            and previous.get("friendlyDescription") == "Reconcile succeeded"
            and "inspect" in previous
        )
        if idle:
            return status
        name, namespace = app["metadata"]["name"], app["metadata"]["namespace"]
        return {
            **status,
            "inspect": await inspect(client, kapp_app_name(name), namespace, spec.deploy.inspect_raw_options),
        }

    async def _fetch_and_template(
        self, app: Obj, spec: AppSpec, client: AsyncClient, clock: Clock
    ) -> Templated | Failed:
        """The fetch and template stages, in the sandbox, reading with the App's own client; `clock` times each."""
        started = app_status.now()
        clock.begin()
        read = self.read_source(client, app["metadata"]["namespace"])
        policy = FetchPolicy.from_settings(self.settings)
        try:
            context = await self.facts.context(app, spec.template, client)
        except KapplyError as e:  # the cluster's version or APIs, which a template step asks for
            clock.end(Timed.TEMPLATE)
            error = f"Templating: Getting the cluster's version and APIs: {e}"
            return Failed(error, str(e), {"template": app_status.Stage(1, error=error).to_status(with_stdout=False)})
        try:
            lock, manifests = sandbox_app.result(
                await self._sandbox().run("app", sandbox_app.request(app, policy, context), read, clock.fetched)
            )
        except SandboxFailed as e:
            clock.end(Timed.FETCH if e.stage is Stage.FETCH else Timed.TEMPLATE)
            if e.stage is Stage.FETCH:
                error = f"Fetching resources: {e}"
                fetch = app_status.Stage(1, stderr=e.stderr, error=error, started_at=started).to_status()
                return Failed(error, e.stderr, {"fetch": fetch})
            fetched = app_status.Stage(0, stdout=e.lock, started_at=started).to_status()
            template = app_status.Stage(1, stderr=e.stderr, error=str(e)).to_status(with_stdout=False)
            return Failed(str(e), e.stderr, {"fetch": fetched, "template": template})
        clock.end(Timed.TEMPLATE)
        fetched = app_status.Stage(0, stdout=lock, started_at=started).to_status()
        return Templated(manifests, {"fetch": fetched, "template": app_status.Stage(0).to_status(with_stdout=False)})

    async def _deploy(
        self, app: Obj, spec: AppSpec, client: AsyncClient, manifests: str, status: Obj, clock: Clock
    ) -> Done | Failed:
        """The deploy stage, with the App's own client; `status` (the fetch and template stages' included) is what
        its progress is reported over while it runs; `clock` times it."""
        namespace, name = app["metadata"]["namespace"], app["metadata"]["name"]
        memory = self._memory(namespace, name, app.get("status") or {})
        started = app_status.now()
        owned = self._owners(namespace, name, app.get("status") or {})
        period = self.sync_period(spec)
        request = DeployRequest(
            self.api, client, name, namespace, spec, manifests, memory.digest, memory.quiet, owned, period
        )
        deploying = time.monotonic()
        clock.begin()
        try:
            deployed = await deploy(request, self._hooks(app, spec, status, started))
        except DeployFailed as e:
            clock.end(Timed.DEPLOY)
            memory.quiet = None
            self.observe_deploy(time.monotonic() - deploying, False)
            error = f"Deploying: {e}"
            stage = app_status.Stage(1, stdout=e.output, stderr=f"kapply: Error: {e}", error=error, started_at=started)
            kept = ((app.get("status") or {}).get("deploy") or {}).get("kapp")  # as kapp-controller keeps it
            return Failed(
                error, str(e), {"deploy": {**stage.to_status(finished=True), **({"kapp": kept} if kept else {})}}
            )
        clock.end(Timed.DEPLOY)
        self.observe_deploy(time.monotonic() - deploying, True)
        return Done(deployed, started)

    def _hooks(self, app: Obj, spec: AppSpec, status: Obj, started: str) -> Hooks:
        """What the deploy stage tells this reconciler: the drift watches to set up (with how to connect as the
        App), that the App owns resources from now on (its finalizer), and its progress (the status)."""
        namespace, name = app["metadata"]["namespace"], app["metadata"]["name"]
        connect = partial(self._cluster_as_app, namespace, spec.service_account)
        return Hooks(
            track=partial(self._track, (namespace, name), connect),
            owns=partial(self.api.cluster.add_finalizer, self._apps, app, self.settings.vocabulary.app_finalizer),
            report=partial(self._progress, app, status, started),
            interval=self.settings.progress_interval,
        )

    def _track(
        self, key: Key, connect: Connect, label: str, types: list[ResourceType], namespaces: tuple[str, ...]
    ) -> None:
        self.track(key, label, types, namespaces, connect)

    async def _cluster_as_app(self, namespace: str, account: str) -> Cluster:
        return (await self._as_app(namespace, account)).cluster

    async def _progress(self, app: Obj, status: Obj, started: str, output: str) -> None:
        running = app_status.Stage(0, stdout=output, started_at=started).to_status(finished=False)
        await self._write_status(app, app_status.reconciling({**status, "deploy": running}))

    async def _succeeded(self, app: Obj, spec: AppSpec, status: Obj, previous: Obj, done: Done) -> float:
        """Report a deploy that went well; `previous` is the status the pass started from."""
        namespace, name = app["metadata"]["namespace"], app["metadata"]["name"]
        deployed = done.deployed
        memory = self._memory(namespace, name, previous)
        if memory.digest == deployed.digest:  # the same desired state as last time: every update was a ghost diff
            found = {field_key(f): (app_status.entry(f), f.obj, f.field) for f in deployed.ghosts}
            memory.ghosts = ghosts.after_sync(
                memory.ghosts, found, app_status.now(), self.settings.ghost_quiet_syncs, deployed.digest
            )
        memory.digest = deployed.digest
        memory.quiet = deployed.quiet
        owned = self._owners(namespace, name, previous)
        set_back = deployed.ghosts if deployed.changed else ()
        owners.after_sync(owned, deployed.digest, deployed.cluster, deployed.held, set_back, time.monotonic())
        reports = {
            "fieldOwners": owners.to_status(deployed.known, owned.held.values()),
            "ghostDiffs": app_status.ghost_diffs(memory.ghosts, previous),
            "drift": app_status.drift(deployed.drift, spec.drift_policy),
        }
        unchanged_spec = previous.get("observedGeneration") == status["observedGeneration"]
        if not deployed.changed and unchanged_spec and previous.get("friendlyDescription") == "Reconcile succeeded":
            # Nothing deployed for a spec already reconciled: the status stays as it is (no write at all) unless what
            # it reports changed. A new spec that deploys nothing (a rebase rule that ends a ghost diff) is still
            # written as reconciled.
            await self._write_status(
                app, app_status.with_reports(app_status.with_associated(previous, deployed.associated), reports)
            )
        else:
            stage = app_status.Stage(0, stdout=deployed.output, started_at=done.started).to_status(finished=True)
            stage = app_status.with_associated({"deploy": stage}, deployed.associated)["deploy"]
            await self._write_status(
                app, app_status.with_reports(app_status.succeeded({**status, "deploy": stage}), reports)
            )
        _log.info(
            "%s/%s: %s%s",
            namespace,
            name,
            f"deployed {deployed.changes} changes" if deployed.changed else "no changes",
            f", {len(deployed.ghosts)} ghost diffs" if deployed.ghosts else "",
        )
        if deployed.changed:
            await self.events.emit(app, "Deployed", f"Applied {deployed.changes} changes")
        for message in ghosts.event_messages(deployed.ghosts, namespace):  # one Event per field, counted (ghosts.py)
            await self.events.emit(app, "GhostDiff", message, warning=True)
        for hold in deployed.held:  # once per hold, its message stable (counted on one Event if ever repeated)
            await self.events.emit(app, "DriftHeld", owners.held_message(hold), warning=True)
        if deployed.drift and spec.drift_policy is DriftPolicy.WARN:  # every sync while it lasts, counted as one Event
            await self.events.emit(
                app, "Drift", app_status.drift_message(deployed.drift, spec.drift_policy), warning=True
            )
        self.counts.count(namespace, name, AppCount.SUCCESS)  # once everything the sync writes is written
        return self.sync_period(spec)

    def _owners(self, namespace: str, name: str, status: Obj) -> owners.Owners:
        """The App's owned fields, read back from its status after a restart."""
        found = self.owners.get((namespace, name))
        if found is None:
            found = self.owners[(namespace, name)] = owners.read_back(status)
        return found

    def _memory(self, namespace: str, name: str, status: Obj) -> ghosts.Memory:
        memory = self.memory.get((namespace, name))
        if memory is None:
            memory = self.memory[(namespace, name)] = ghosts.Memory(ghosts=ghosts.read_back(status))
        return memory

    async def _fail(self, app: Obj, status: Obj, spec: AppSpec | None, failure: Failed) -> float:
        message = failure.message
        failed = app_status.failed(
            {**status, **failure.stages}, app_status.Condition.RECONCILE_FAILED, message, failure.useful
        )
        again = timing.after_failure(failed["consecutiveReconcileFailures"], spec, self.settings)
        _log.warning(
            "%s/%s: %s (retrying in %.0fs)", app["metadata"]["namespace"], app["metadata"]["name"], message, again
        )
        await self._write_status(app, failed)
        await self.events.emit(app, "ReconcileFailed", message, warning=True)
        self.counts.count(app["metadata"]["namespace"], app["metadata"]["name"], AppCount.FAILURE)
        return again

    async def _as_app(self, namespace: str, account: str, *, verify: bool = False) -> AsyncClient:
        """A client with the App's service account, kept while its token is (its connection and discovery too);
        `verify`: read the account even while its token lives (see Tokens.token)."""
        token = await self.tokens.token(namespace, account, verify=verify)
        key = (namespace, account, token)
        client = self._clients.get(key)
        if client is None:
            # A client replaced by a renewed token may still be deploying in another worker: it is closed at the
            # next renewal (half a token lifetime later), when nothing can still use it.
            for old in self._retired.pop(key[:2], []):
                await old.close()
            self._retired[key[:2]] = [self._clients.pop(k) for k in [k for k in self._clients if k[:2] == key[:2]]]
            # (`partial` of the Tokens' method, not a lambda over the reconciler, which holds the client: no cycle
            # for the garbage collector to find and finalise while its connections are open.)
            client = self._clients[key] = app_client(
                self.api, token, namespace, self.cache, partial(self.tokens.forget, namespace, account, token)
            )
        return client

    async def close(self) -> None:
        """Close the connections of the Apps' clients (the process stops working); a later reconcile makes new ones."""
        clients = [*self._clients.values(), *(c for old in self._retired.values() for c in old)]
        self._clients.clear()
        self._retired.clear()
        self.tokens.stop()
        for client in clients:
            await client.close()

    async def _delete(self, app: Obj, spec: AppSpec | None) -> float | None:
        namespace, name = app["metadata"]["namespace"], app["metadata"]["name"]
        # never deployed anything (or already done): nothing to wait for
        if not apps.has_finalizer(app, self.settings.vocabulary):
            self.memory.pop((namespace, name), None)
            self.owners.pop((namespace, name), None)
            self.counts.forget(namespace, name)
            return None
        self.counts.count(namespace, name, AppCount.DELETE_ATTEMPT)
        await self._write_status(
            app, app_status.with_condition(dict(app.get("status") or {}), app_status.Condition.DELETING)
        )
        if spec is not None and not spec.noop_delete:
            try:
                await delete(await self._as_app(namespace, spec.service_account, verify=True), name, namespace, spec)
            except KapplyError as e:
                if await self._namespace_terminating(namespace):
                    await self._skip_delete(app, e)
                else:
                    return await self._delete_failed(app, spec, e)
        await self.api.cluster.remove_finalizer(self._apps, namespace, name, self.settings.vocabulary.app_finalizer)
        self.memory.pop((namespace, name), None)
        self.owners.pop((namespace, name), None)
        self.counts.forget(namespace, name)
        return None

    async def _skip_delete(self, app: Obj, error: KapplyError) -> None:
        """The namespace's deletion took the service account (or forbids its token): there is no identity left to
        delete with, and the namespace takes the App's namespaced resources anyway. Staying would keep the namespace
        Terminating forever (kapp-controller's behaviour); say what is left, in an Event and in the log."""
        namespace, name = app["metadata"]["namespace"], app["metadata"]["name"]
        message = (
            f"Namespace {namespace} is being deleted and the App's resources cannot be deleted as its service account "
            f"({error}); resources of the App outside the namespace are left in place"
        )
        _log.warning("%s/%s: %s", namespace, name, message)
        await self.events.emit(app, "DeleteSkipped", message, warning=True)

    async def _delete_failed(self, app: Obj, spec: AppSpec, error: KapplyError) -> float:
        namespace, name = app["metadata"]["namespace"], app["metadata"]["name"]
        latest = await apps.get(self.api.cluster, self.settings.vocabulary, namespace, name) or app
        failed = app_status.failed(
            dict(latest.get("status") or {}), app_status.Condition.DELETE_FAILED, f"Deleting: {error}", str(error)
        )
        again = timing.after_failure(failed["consecutiveReconcileFailures"], spec, self.settings)
        _log.warning("%s/%s: Deleting: %s (retrying in %.0fs)", namespace, name, error, again)
        await self._write_status(latest, failed)
        await self.events.emit(latest, "DeleteFailed", f"Deleting: {error}", warning=True)
        self.counts.count(namespace, name, AppCount.DELETE_FAILED)
        return again

    async def _namespace_terminating(self, namespace: str) -> bool:
        try:
            ns = await self.api.cluster.get(NAMESPACES, None, namespace)
        except ClusterError:
            return False
        return ns is None or bool(ns["metadata"].get("deletionTimestamp"))


def _starts_anew(previous: Obj, status: Obj) -> bool:
    """A pass for a spec not yet reconciled, or after a failure (not an idle periodic sync, which writes nothing)."""
    return previous.get("observedGeneration") != status["observedGeneration"] or bool(
        previous.get("consecutiveReconcileFailures")
    )
