"""The controller process: watch Apps, reconcile each on its sync period and on drift, with N workers, as the leader.

An asyncio loop of kapply's own on its async client rather than kopf: kopf records its progress in annotations of
every object it handles (a write per handling, where an unchanged App must cost none), elects its leader with its own
peering resources rather than a Lease, and runs a watch per handled resource kind and handler; docs/design.md has the
comparison.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

from kapply.api import AsyncClient
from kapply.controller.leader import Election, identity
from kapply.controller.queue import WorkQueue
from kapply.controller.reconciler import APPS, Reconciler, Settings
from kapply.controller.watch import DriftWatches
from kapply.errors import ClusterError, ConcurrencyError, KapplyError
from kapply.objects import Obj

_log = logging.getLogger("kapply.controller")
Key = tuple[str, str]
DEBOUNCE = 1.0  # seconds: a burst of drift events about one App is one reconcile


@dataclass(frozen=True, slots=True)
class ControllerOptions:
    settings: Settings = Settings()
    namespace: str | None = None  # watch Apps of one namespace only
    workers: int = 4
    leader_election: bool = True
    lease_namespace: str = "default"
    lease_name: str = "kapply-controller"


class Controller:
    def __init__(self, api: AsyncClient, options: ControllerOptions) -> None:
        self.api = api
        self.options = options
        self.queue: WorkQueue[Key] = WorkQueue()
        self.drift = DriftWatches(api.cluster, lambda app: self.queue.add(app, DEBOUNCE))
        self.reconciler = Reconciler(
            api, options.settings, lambda app, record: self.drift.track(app, record.label_value, record.types)
        )
        self._generations: dict[Key, int] = {}

    async def run(self) -> None:
        if not self.options.leader_election:
            await self._work()
            return
        election = Election(self.api.cluster, self.options.lease_namespace, self.options.lease_name, identity())
        await election.lead(self._work)

    async def _work(self) -> None:
        tasks = [asyncio.create_task(self._watch_apps())]
        tasks += [asyncio.create_task(self._worker()) for _ in range(self.options.workers)]
        try:
            await asyncio.gather(*tasks)
        finally:
            for task in tasks:
                task.cancel()
            self.drift.stop()

    def _app_event(self, kind: str, app: Obj) -> None:
        meta = app["metadata"]
        key = (meta["namespace"], meta["name"])
        if kind == "DELETED":
            self._generations.pop(key, None)
            self.queue.forget(key)
            self.drift.untrack(key)
            return
        generation = int(meta.get("generation") or 0)
        # A status write (ours) does not change the generation: only new Apps, spec changes and deletions reconcile now.
        if self._generations.get(key) != generation or meta.get("deletionTimestamp"):
            self._generations[key] = generation
            self.queue.add(key)

    async def _watch_apps(self) -> None:
        version = ""
        while True:
            try:
                if not version:
                    page = await self.api.cluster.request(
                        "GET", APPS.path(self.options.namespace), params={"limit": "1"}
                    )
                    version = str((page.get("metadata") or {}).get("resourceVersion", ""))
                    for app in await self.api.cluster.list(APPS, namespace=self.options.namespace):
                        self._app_event("ADDED", app)
                async for kind, app in self.api.cluster.watch(
                    APPS, namespace=self.options.namespace, resource_version=version
                ):
                    version = str((app.get("metadata") or {}).get("resourceVersion", version))
                    if kind != "BOOKMARK":
                        self._app_event(kind, app)
            except ClusterError as e:
                if e.status == 410:
                    version = ""
                    continue
                _log.warning("watching apps: %s", e)
                await asyncio.sleep(2)

    async def _worker(self) -> None:
        while True:
            key = await self.queue.get()
            again: float | None = None
            try:
                again = await self.reconciler.reconcile(*key)
            except ConcurrencyError as e:  # another deploy of the app is running: soon again, not a failure
                _log.info("%s/%s: %s", *key, e)
                again = 2.0
            except KapplyError as e:
                _log.warning("%s/%s: %s", *key, e)
                again = 5.0
            except Exception:
                _log.exception("%s/%s: reconcile crashed", *key)
                again = 30.0
            finally:
                self.queue.done(key, again)


async def run(api: AsyncClient, options: ControllerOptions) -> None:
    """Run the controller until cancelled."""
    await Controller(api, options).run()
