"""Reconciling one App: fetch, template, deploy with the App's service account, inspect, and report in its status,
as kapp-controller does; deleting its resources when the App goes (unless `noopDelete`).

Everything goes through kapply's Python API in this process: the deploy is `AsyncClient.plan_deploy` and
`run_deploy`, so the controller gets what a CLI user gets (one deploy of an app at a time, retries, masking).
A sync of an unchanged App writes nothing: no app-change, no status update (kapp-controller bumps its counters and
times on every sync; kapply only when something changed), no token request while the cached token lives.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import logging
import tempfile
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from kapply.api import AsyncClient
from kapply.controller import status as st
from kapply.controller.credentials import Tokens
from kapply.controller.fetch import FetchError, fetch
from kapply.controller.options import DELETE, from_spec, parse_raw_options
from kapply.controller.spec import API_VERSION, FINALIZER, KIND, PLURAL, AppSpec, SpecError, parse_spec
from kapply.controller.template import TemplateError, template
from kapply.controller.tools import ToolError
from kapply.delete import DeleteOptions
from kapply.deploy import OutsideField, Plan
from kapply.diff.change import Change, Op
from kapply.diff.drift import DriftPolicy
from kapply.diff.ghost import FieldDrift, explain
from kapply.errors import ClusterError, KapplyError
from kapply.objects import Obj
from kapply.resources.cluster import ResourceType

_log = logging.getLogger("kapply.controller")
APPS = ResourceType("kapply.dev", "v1alpha1", KIND, PLURAL, True, frozenset({"get", "list", "watch", "update"}))
CONFIGMAPS = ResourceType("", "v1", "ConfigMap", "configmaps", True, frozenset({"get"}))
SECRETS = ResourceType("", "v1", "Secret", "secrets", True, frozenset({"get"}))
NAMESPACES = ResourceType("", "v1", "Namespace", "namespaces", False, frozenset({"get"}))
EVENTS = ResourceType("", "v1", "Event", "events", True, frozenset({"create"}))


@dataclass(frozen=True, slots=True)
class Settings:
    default_sync_period: float = 30.0
    min_sync_period: float = 30.0  # kapp-controller's appMinimumSyncPeriod; lower it for tests


@dataclass
class Memory:
    """What the controller remembers of an App between syncs (not in its status: that would be a write per sync)."""

    digest: str = ""  # of the desired state last deployed
    ghosts: dict[tuple[str, str], int] = field(default_factory=dict)  # (resource, field) -> consecutive recurrences
    reported_drift: frozenset[tuple[str, ...]] = frozenset()  # drift already told in an Event (warn, preserve)


def ghost_diffs(plan: Plan) -> list[tuple[Change, tuple[FieldDrift, ...]]]:
    """The fields each update of the plan changes, for a plan whose desired state is the one deployed last time:
    every one of them was changed on the cluster since (a ghost diff)."""
    found = []
    for change in (c.change for c in plan.changes if c.change.op is Op.UPDATE):
        if change.left is not None and change.right is not None and change.existing is not None:
            found.append((change, tuple(explain(change.left, change.right, change.existing, change.new))))
    return found


def _field_key(item: OutsideField) -> tuple[str, str]:
    return item.change.describe(), str(item.field.path)


@dataclass(frozen=True, slots=True)
class Record:
    """What the drift watches need of an App's kapp app: its label value and the types of its objects."""

    label_value: str
    types: list[ResourceType]


def kapp_app_name(name: str) -> str:
    """The kapp app an App deploys as: `<name>.app`, as kapp-controller names it (so records carry over)."""
    return f"{name}.app"


class Reconciler:
    def __init__(
        self,
        api: AsyncClient,
        settings: Settings = Settings(),
        track: Callable[[tuple[str, str], Record], None] = lambda app, record: None,
    ) -> None:
        """`track` is told which objects an App's deploy covers before it applies anything, so that a change made to
        them right after the deploy is seen as drift."""
        self.api = api
        self.settings = settings
        self.track = track
        self.tokens = Tokens(api)
        self.memory: dict[tuple[str, str], Memory] = {}
        self._clients: dict[tuple[str, str, str], AsyncClient] = {}
        self._retired: dict[tuple[str, str], list[AsyncClient]] = {}

    def sync_period(self, spec: AppSpec | None) -> float:
        period = spec.sync_period if spec and spec.sync_period is not None else self.settings.default_sync_period
        return max(period, self.settings.min_sync_period)

    async def reconcile(self, namespace: str, name: str) -> float | None:
        """One pass; returns when to come back (seconds), or None when the App is gone."""
        app = await self.api.cluster.get(APPS, namespace, name)
        if app is None:
            self.memory.pop((namespace, name), None)
            return None
        try:
            spec: AppSpec | None = parse_spec(app)
        except SpecError as e:
            spec = None
            spec_error: SpecError | None = e
        else:
            spec_error = None
        if app["metadata"].get("deletionTimestamp"):
            return await self._delete(app, spec)
        if spec is None:
            assert spec_error is not None
            await self._report_failure(app, st.Condition.RECONCILE_FAILED, str(spec_error), "")
            return self._backoff(app, spec)
        if spec.paused or spec.canceled:
            await self._write_status(app, st.paused(app.get("status") or {}, app["metadata"].get("generation", 0)))
            return self.sync_period(spec)
        return await self._deploy(app, spec)

    def _backoff(self, app: Obj, spec: AppSpec | None) -> float:
        """After a failure: 2^F seconds (F consecutive failures), capped at the sync period, as kapp-controller."""
        failures = int((app.get("status") or {}).get("consecutiveReconcileFailures") or 0) + 1
        return float(min(2 ** min(failures, 29), self.sync_period(spec)))

    async def _read(self, namespace: str) -> Callable[[str, str], Awaitable[Obj | None]]:
        async def read(kind: str, name: str) -> Obj | None:
            return await self.api.cluster.get(SECRETS if kind == "Secret" else CONFIGMAPS, namespace, name)

        return read

    async def _as_app(self, namespace: str, account: str) -> AsyncClient:
        """A client with the App's service account, kept while its token is (its connection and discovery too)."""
        token = await self.tokens.token(namespace, account)
        key = (namespace, account, token)
        client = self._clients.get(key)
        if client is None:
            # A client replaced by a renewed token may still be deploying in another worker: it is closed at the
            # next renewal (half a token lifetime later), when nothing can still use it.
            for old in self._retired.pop(key[:2], []):
                await old.close()
            self._retired[key[:2]] = [self._clients.pop(k) for k in [k for k in self._clients if k[:2] == key[:2]]]
            client = self._clients[key] = self.api.with_token(token, namespace)
        return client

    async def _deploy(self, app: Obj, spec: AppSpec) -> float:
        namespace, name = app["metadata"]["namespace"], app["metadata"]["name"]
        status: Obj = dict(app.get("status") or {})
        status["observedGeneration"] = app["metadata"].get("generation", 0)
        started = st.now()
        read = await self._read(namespace)
        with tempfile.TemporaryDirectory(prefix="kapply-app-") as work:
            root = Path(work)
            try:
                lock = await fetch(spec.fetch, root, read)
            except (FetchError, ToolError) as e:
                error = f"Fetching resources: {e}"
                stderr = getattr(e, "stderr", "")
                status["fetch"] = st.Stage(1, stderr=stderr, error=error, started_at=started).to_status()
                return await self._fail(app, status, spec, error, stderr)
            status["fetch"] = st.Stage(0, stdout=lock, started_at=started).to_status()
            try:
                manifests = await template(spec.template, root, read, name, namespace)
            except (TemplateError, FetchError) as e:
                stderr = getattr(e, "stderr", "")
                status["template"] = st.Stage(1, stderr=stderr, error=str(e)).to_status(with_stdout=False)
                return await self._fail(app, status, spec, str(e), stderr)
            status["template"] = st.Stage(0).to_status(with_stdout=False)
            await self._ensure_finalizer(app)
            return await self._apply(app, spec, status, manifests, root)

    async def _apply(self, app: Obj, spec: AppSpec, status: Obj, manifests: str, root: Path) -> float:
        from kapply.ui.changes import changes_table, show_hunks
        from kapply.ui.messages import ProgressLines
        from kapply.ui.output import Output

        namespace, name = app["metadata"]["namespace"], app["metadata"]["name"]
        memory = self.memory.setdefault((namespace, name), Memory())
        previous: Obj = app.get("status") or {}
        started = st.now()
        text = io.StringIO()
        out = Output(tty=True, out=text)
        try:
            options, raw = from_spec(spec.deploy)
            options = replace(options, drift_policy=spec.drift_policy)
            client = await self._as_app(namespace, spec.service_account)
            out.line(await client.target())
            path = root / ".kapply-deploy.yml"
            path.write_text(manifests)
            plan = await client.plan_deploy(
                kapp_app_name(name),
                files=[str(path)],
                namespace=spec.default_namespace or namespace,
                app_namespace=namespace,
                options=options,
            )
            self.track(
                (namespace, name),
                Record(
                    plan.app.meta.label_value,
                    [t for g, v, k in plan.used if (t := plan.discovery.find(f"{g}/{v}" if g else v, k)) is not None],
                ),
            )
            if raw.get("diff-changes"):
                show_hunks(out, plan.hunks())
            out.table(changes_table(plan.changes))
            digest = hashlib.sha256(
                manifests.encode() + repr(sorted(raw.items())).encode() + spec.drift_policy.encode()
            ).hexdigest()
            ghosts = ghost_diffs(plan) if memory.digest == digest else []
            kept = await self.api.outside_changes(plan) if spec.drift_policy is not DriftPolicy.ENFORCE else []
            ghost_fields = await self.api.outside_changes(plan, ghosts)
            changed = bool(plan.pending and not raw.get("diff-run"))
            if changed:
                await client.run_deploy(plan, progress=ProgressLines(out))
            out.finish()
        except KapplyError as e:
            status["deploy"] = st.Stage(
                1, stdout=text.getvalue(), stderr=f"kapply: Error: {e}", error=f"Deploying: {e}", started_at=started
            ).to_status(finished=True)
            return await self._fail(app, status, spec, f"Deploying: {e}", str(e))
        memory.digest = digest
        memory.ghosts = {_field_key(f): memory.ghosts.get(_field_key(f), 0) + 1 for f in ghost_fields}
        reports = {
            "ghostDiffs": st.ghost_diffs(ghost_fields, memory.ghosts, plan.config),
            "drift": st.drift(kept, spec.drift_policy, plan.config),
        }
        unchanged_spec = previous.get("observedGeneration") == status["observedGeneration"]
        if not changed and unchanged_spec and previous.get("friendlyDescription") == "Reconcile succeeded":
            # Nothing deployed for a spec already reconciled: the status stays as it is (no write at all) unless what
            # it reports changed. A new spec that deploys nothing (a rebase rule that ends a ghost diff) is still
            # written as reconciled.
            await self._write_status(app, st.with_reports(previous, reports))
        else:
            status["deploy"] = st.Stage(0, stdout=text.getvalue(), started_at=started).to_status(finished=True)
            await self._write_status(app, st.with_reports(st.succeeded(status), reports))
        _log.info(
            "%s/%s: %s%s",
            namespace,
            name,
            f"deployed {len(plan.changes)} changes" if changed else "no changes",
            f", {len(ghost_fields)} ghost diffs" if ghost_fields else "",
        )
        if changed:
            await self._event(app, "Deployed", f"Applied {len(plan.changes)} changes")
        if ghost_fields:
            await self._event(app, "GhostDiff", st.ghost_message(ghost_fields, memory.ghosts), warning=True)
        drifted = frozenset(_field_key(f) + (repr(f.field.live),) for f in kept)
        if drifted and drifted != memory.reported_drift:
            await self._event(app, "Drift", st.drift_message(kept, spec.drift_policy), warning=True)
        memory.reported_drift = drifted
        return self.sync_period(spec)

    async def _fail(self, app: Obj, status: Obj, spec: AppSpec | None, message: str, useful: str) -> float:
        _log.warning("%s/%s: %s", app["metadata"]["namespace"], app["metadata"]["name"], message)
        await self._write_status(app, st.failed(status, st.Condition.RECONCILE_FAILED, message, useful))
        await self._event(app, "ReconcileFailed", message, warning=True)
        return self._backoff(app, spec)

    async def _report_failure(self, app: Obj, condition: st.Condition, message: str, useful: str) -> None:
        status: Obj = dict(app.get("status") or {})
        status["observedGeneration"] = app["metadata"].get("generation", 0)
        await self._write_status(app, st.failed(status, condition, message, useful))

    async def _delete(self, app: Obj, spec: AppSpec | None) -> float | None:
        namespace, name = app["metadata"]["namespace"], app["metadata"]["name"]
        if FINALIZER not in (app["metadata"].get("finalizers") or []):
            return None
        status = st.with_condition(dict(app.get("status") or {}), st.Condition.DELETING)
        await self._write_status(app, status)
        if spec is not None and not spec.noop_delete:
            try:
                values = parse_raw_options(spec.deploy.delete_raw_options, DELETE)
                client = await self._as_app(namespace, spec.service_account)
                options = DeleteOptions()
                if "wait" in values or "wait-timeout" in values:
                    from kapply.api import deploy_options

                    built = deploy_options(values)
                    options = DeleteOptions(built.apply, built.wait)
                await client.delete(kapp_app_name(name), namespace=namespace, options=options)
            except KapplyError as e:
                if await self._namespace_terminating(namespace):
                    # The namespace's deletion took the service account (or forbids its token): there is no identity
                    # left to delete with, and the namespace takes the App's namespaced resources anyway. Staying
                    # would keep the namespace Terminating forever (kapp-controller's behaviour); say what is left.
                    await self._event(
                        app,
                        "DeleteSkipped",
                        f"Namespace {namespace} is being deleted and the App's resources cannot be deleted as its "
                        f"service account ({e}); resources of the App outside the namespace are left in place",
                        warning=True,
                    )
                    await self._remove_finalizer(namespace, name)
                    self.memory.pop((namespace, name), None)
                    return None
                latest = await self.api.cluster.get(APPS, namespace, name) or app
                await self._write_status(
                    latest,
                    st.failed(dict(latest.get("status") or {}), st.Condition.DELETE_FAILED, f"Deleting: {e}", str(e)),
                )
                return self._backoff(latest, spec)
        await self._remove_finalizer(namespace, name)
        self.memory.pop((namespace, name), None)
        return None

    async def _namespace_terminating(self, namespace: str) -> bool:
        try:
            ns = await self.api.cluster.get(NAMESPACES, None, namespace)
        except ClusterError:
            return False
        return ns is None or bool(ns["metadata"].get("deletionTimestamp"))

    async def _ensure_finalizer(self, app: Obj) -> None:
        finalizers = app["metadata"].get("finalizers") or []
        if FINALIZER in finalizers:
            return
        app["metadata"]["finalizers"] = [*finalizers, FINALIZER]
        saved = await self.api.cluster.update(APPS, app)
        app["metadata"]["resourceVersion"] = saved["metadata"]["resourceVersion"]

    async def _remove_finalizer(self, namespace: str, name: str) -> None:
        for _ in range(5):
            app = await self.api.cluster.get(APPS, namespace, name)
            if app is None:
                return
            app["metadata"]["finalizers"] = [f for f in app["metadata"].get("finalizers") or [] if f != FINALIZER]
            try:
                await self.api.cluster.update(APPS, app)
                return
            except ClusterError as e:
                if e.status != 409:
                    raise

    async def _write_status(self, app: Obj, status: Obj) -> None:
        """PUT the status (GET again on a conflict, up to 5 times), unless only times would change."""
        current = app
        for _ in range(5):
            if st.same_but_times(current.get("status") or {}, status):
                return
            body = {**current, "status": status}
            path = APPS.path(current["metadata"]["namespace"], current["metadata"]["name"]) + "/status"
            try:
                saved = await self.api.cluster.request("PUT", path, body=body)
                app["metadata"]["resourceVersion"] = saved["metadata"]["resourceVersion"]
                app["status"] = saved.get("status")
                return
            except ClusterError as e:
                if e.status != 409:
                    raise
            latest = await self.api.cluster.get(APPS, current["metadata"]["namespace"], current["metadata"]["name"])
            if latest is None:
                return
            current = latest

    async def _event(self, app: Obj, reason: str, message: str, *, warning: bool = False) -> None:
        """A Kubernetes Event on the App; failing to write one never fails the reconcile."""
        meta = app["metadata"]
        event = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"generateName": f"{meta['name']}.", "namespace": meta["namespace"]},
            "involvedObject": {
                "apiVersion": API_VERSION,
                "kind": KIND,
                "name": meta["name"],
                "namespace": meta["namespace"],
                "uid": meta.get("uid", ""),
            },
            "reason": reason,
            "message": message[:1024],
            "type": "Warning" if warning else "Normal",
            "source": {"component": "kapply-controller"},
            "firstTimestamp": st.now(),
            "lastTimestamp": st.now(),
            "count": 1,
        }
        with contextlib.suppress(ClusterError):
            await self.api.cluster.create(EVENTS, event)
