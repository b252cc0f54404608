"""The controller's Prometheus metrics (`/metrics`), named `kapply_*`, and kapp-controller's own (its pkg/metrics: the
reconcile counters `kappctrl_app_reconcile_*_total` and the reconcile time gauges `kappctrl_reconcile_*time_seconds`
of each App and PackageRepository), with prometheus_client's types and exposition format. docs/reconciler.md
("Metrics") says what each one means.

Counters and histograms are updated as things happen (a reconcile ends, the API server answers, a deploy ends). What
the controller *is* (queue depths, reconciles running, shards held, each App's drift and ghost diffs, cache sizes) is
read at each scrape from a `State` the controller gives, so those numbers are never stale and cost nothing between
scrapes. Each Controller has a registry of its own (the tests make many), holding the process collectors too
(`process_*`, `python_*`: memory, CPU, file descriptors).
"""

from __future__ import annotations

import enum
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.gc_collector import GCCollector
from prometheus_client.platform_collector import PlatformCollector
from prometheus_client.process_collector import ProcessCollector
from prometheus_client.registry import Collector

Key = tuple[str, str]
# Seconds: an idle sync takes tens of milliseconds, a deploy that waits on Deployments minutes (kapp's default
# --wait-timeout is 15 minutes).
BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0, 900.0)


class Result(enum.StrEnum):
    """How a reconcile ended (the `result` label of kapply_reconcile_total)."""

    SUCCESS = "success"  # it ran to its end and the object was not left failed
    FAILURE = "failure"  # an App left ReconcileFailed or DeleteFailed (its status says why)
    ERROR = "error"  # it raised: its status could not be written, or a bug (retried with backoff)
    CONFLICT = "conflict"  # another deploy of the same app was running (retried after 2 s)
    CANCELED = "canceled"  # stopped half-way: its shard was given up or lost, or the controller stopped


class AppCount(enum.StrEnum):
    """kapp-controller's reconcile counters (its reconcile_count_metrics.go), `kappctrl_app_reconcile_<value>_total`,
    of Apps and (attempts only, as kapp-controller counts them) PackageRepositories."""

    ATTEMPT = "attempt"  # a reconcile (fetch, template, deploy) started: not a paused or canceled App's pass
    SUCCESS = "success"  # it ended ReconcileSucceeded, its status written (an idle sync too: it writes nothing)
    FAILURE = "failure"  # it ended ReconcileFailed, its status written
    DELETE_ATTEMPT = "delete_attempt"  # a delete of the App's resources started
    DELETE_FAILED = "delete_failed"  # it ended DeleteFailed


_APP_COUNT_HELP = {
    AppCount.ATTEMPT: "Total number of attempted reconciles",
    AppCount.SUCCESS: "Total number of succeeded reconciles",
    AppCount.FAILURE: "Total number of failed reconciles",
    AppCount.DELETE_ATTEMPT: "Total number of attempted reconcile deletion",
    AppCount.DELETE_FAILED: "Total number of failed reconcile deletion",
}


class Timed(enum.StrEnum):
    """kapp-controller's reconcile time gauges (its reconcile_time_metrics.go), `kappctrl_<value>_time_seconds`: how
    long the last pass (or stage) of an object took."""

    RECONCILE = "reconcile"  # fetch, template and deploy, from the fetch's start to the deploy's end (or a failure)
    FETCH = "reconcile_fetch"
    TEMPLATE = "reconcile_template"
    DEPLOY = "reconcile_deploy"


_TIMED_HELP = {
    Timed.RECONCILE: "Overall time taken to reconcile a CR",
    Timed.FETCH: "Time taken to perform a fetch for a CR",
    Timed.TEMPLATE: "Time taken to perform a templating for a CR",
    Timed.DEPLOY: "Time taken to perform a deploy for a CR",
}
APP = "App"  # the `controller` label of an App's series (kapp-controller's App.Kind())
PACKAGE_REPOSITORY = "PackageRepository"  # and of a PackageRepository's (its pkgrepository App.Kind())
Object = tuple[str, str, str]  # the `controller` label (the object's kind), the object's namespace and name


class Kappctrl(Collector):
    """kapp-controller's metrics, with its names, types, help texts and labels: five reconcile counters per object
    (`controller`: its kind, `App` or `PackageRepository`; then its `name` and `namespace`) and four time gauges (the
    same labels and `firstReconcile`, `true` for the pass that was the object's first attempt since the process
    started). Kept in memory where the reconcilers count and time (a sync makes no request for them); an object's
    series go when it is gone (kapp-controller's DeleteMetrics drops an App's counters only, and no PackageRepository
    series: kapply drops them all, so that the series of deleted objects do not pile up). No `_created` series. The
    e2e tests wait on the counters: "N syncs of this App ended" instead of a sleep."""

    def __init__(self) -> None:
        self._counts: dict[Object, dict[AppCount, int]] = {}
        self._times: dict[tuple[Object, bool], dict[Timed, float]] = {}

    def of(self, controller: str) -> KindSeries:
        return KindSeries(self, controller)

    def init(self, obj: Object) -> None:
        """The object's five counters at 0 if it has none (kapp-controller's InitMetrics, at each reconcile)."""
        self._counts.setdefault(obj, dict.fromkeys(AppCount, 0))

    def count(self, obj: Object, count: AppCount) -> None:
        self.init(obj)
        self._counts[obj][count] += 1

    def attempts(self, obj: Object) -> int:
        return self._counts.get(obj, {}).get(AppCount.ATTEMPT, 0)

    def time(self, obj: Object, first: bool, timed: Timed, seconds: float) -> None:
        self._times.setdefault((obj, first), {})[timed] = seconds

    def forget(self, obj: Object) -> None:
        self._counts.pop(obj, None)
        for first in (True, False):
            self._times.pop((obj, first), None)

    def collect(self) -> Iterable[Metric]:
        counts = sorted(self._counts.items())
        for count in AppCount:
            counter = CounterMetricFamily(
                f"kappctrl_app_reconcile_{count.value}",
                _APP_COUNT_HELP[count],
                labels=["controller", "name", "namespace"],
            )
            for (controller, namespace, name), values in counts:
                counter.add_metric([controller, name, namespace], values[count])
            yield counter
        times = sorted(self._times.items())
        for timed in Timed:
            gauge = GaugeMetricFamily(
                f"kappctrl_{timed.value}_time_seconds",
                _TIMED_HELP[timed],
                labels=["controller", "name", "namespace", "firstReconcile"],
            )
            for ((controller, namespace, name), first), seconds in times:
                if timed in seconds:
                    gauge.add_metric([controller, name, namespace, "true" if first else "false"], seconds[timed])
            yield gauge


@dataclass(frozen=True, slots=True)
class KindSeries:
    """The kapp-controller series of one kind's objects (`controller` label), as its reconciler counts and times them;
    the default is a standalone collector's App series (a reconciler made without a controller's metrics)."""

    metrics: Kappctrl = field(default_factory=Kappctrl)
    controller: str = APP

    def init(self, namespace: str, name: str) -> None:
        self.metrics.init((self.controller, namespace, name))

    def count(self, namespace: str, name: str, count: AppCount) -> None:
        self.metrics.count((self.controller, namespace, name), count)

    def forget(self, namespace: str, name: str) -> None:
        self.metrics.forget((self.controller, namespace, name))

    def clock(self, namespace: str, name: str) -> Clock:
        """A clock for the pass that has just counted its attempt; `firstReconcile` is whether that was the object's
        first (kapp-controller: its attempt counter is 1)."""
        obj = (self.controller, namespace, name)
        return Clock(self.metrics, obj, self.metrics.attempts(obj) == 1)


@dataclass(slots=True)
class Clock:
    """One pass's times, set in kapp-controller's gauges as each is known, as kapp-controller sets them: a stage's
    time when it ends (failed or not; a stage not reached leaves its gauge at the last pass's value), the overall
    time when the deploy ended or a stage failed."""

    metrics: Kappctrl
    obj: Object
    first: bool
    started: float = field(default_factory=time.monotonic)
    lap: float = field(default_factory=time.monotonic)  # when the stage running now started
    now: Callable[[], float] = time.monotonic

    def begin(self) -> None:
        """A stage starts now."""
        self.lap = self.now()

    def end(self, timed: Timed) -> None:
        """The stage that started last (at `begin`, or when the one before it ended) ends now."""
        now = self.now()
        self.metrics.time(self.obj, self.first, timed, now - self.lap)
        self.lap = now

    async def fetched(self, lock: str) -> None:
        """The sandbox's `on_fetched`: the fetch stage ended (the template stage starts)."""
        self.end(Timed.FETCH)

    def stop(self) -> None:
        self.metrics.time(self.obj, self.first, Timed.RECONCILE, self.now() - self.started)


@dataclass(frozen=True, slots=True)
class State:
    """What the controller is at the moment of a scrape. Per kind (`App`, `PackageInstall`, ...): the keys due and
    waiting for a worker, the keys with a reconcile scheduled (due or later), reconciles running, objects known; the
    shards configured and held; drift and ghost-diff counts of the Apps this replica reconciles (those with any)."""

    depth: Mapping[str, int] = field(default_factory=dict)
    scheduled: Mapping[str, int] = field(default_factory=dict)
    running: Mapping[str, int] = field(default_factory=dict)
    objects: Mapping[str, int] = field(default_factory=dict)
    shards: int = 1
    shards_held: int = 0
    drift: Mapping[Key, int] = field(default_factory=dict)
    ghost_diffs: Mapping[Key, int] = field(default_factory=dict)
    drift_watches: int = 0
    sandbox: Mapping[str, int] = field(default_factory=dict)  # each protection of the sandbox: 1 on, 0 off


def _state(name: str, text: str, labels: tuple[str, ...], values: Iterable[tuple[Sequence[str], float]]) -> Metric:
    family = GaugeMetricFamily(name, text, labels=list(labels))
    for label_values, value in sorted(values):
        family.add_metric(list(label_values), value)
    return family


def _per_kind(values: Mapping[str, int]) -> Iterable[tuple[Sequence[str], float]]:
    return (((kind,), n) for kind, n in values.items())


class _StateCollector(Collector):
    def __init__(self, read: Callable[[], State], caches: Mapping[str, Callable[[], int]]) -> None:
        self.read = read
        self.caches = caches

    def collect(self) -> Iterable[Metric]:
        state = self.read()
        kind = ("kind",)
        yield _state(
            "kapply_queue_depth", "Objects due for a reconcile, waiting for a worker", kind, _per_kind(state.depth)
        )
        yield _state(
            "kapply_queue_scheduled",
            "Objects with a reconcile scheduled (due now or later: the next sync)",
            kind,
            _per_kind(state.scheduled),
        )
        yield _state("kapply_reconciles_running", "Reconciles running", kind, _per_kind(state.running))
        yield _state(
            "kapply_objects", "Objects the controller's watches know (all shards')", kind, _per_kind(state.objects)
        )
        yield _state("kapply_shards", "Shards the objects are divided into (--shards)", (), [((), state.shards)])
        yield _state("kapply_shards_held", "Shards this replica holds and reconciles", (), [((), state.shards_held)])
        yield _state(
            "kapply_app_drift_fields",
            "Fields of an App's resources left drifted (status.drift), for Apps with any, of this replica's shards",
            ("namespace", "name"),
            state.drift.items(),
        )
        yield _state(
            "kapply_app_ghost_diffs",
            "Ghost diffs listed in an App's status.ghostDiffs, for Apps with any, of this replica's shards",
            ("namespace", "name"),
            state.ghost_diffs.items(),
        )
        yield _state("kapply_drift_watches", "Watches of resource types for drift", (), [((), state.drift_watches)])
        yield _state(
            "kapply_sandbox_protection",
            "Protections of the sandbox Apps are fetched and templated in: 1 active, 0 not (none before its first use)",
            ("protection",),
            (((name,), on) for name, on in state.sandbox.items()),
        )
        yield _state(
            "kapply_cache_objects",
            "Objects held by each of the controller's caches",
            ("cache",),
            [((name,), size()) for name, size in self.caches.items()],
        )


class Metrics:
    """The metrics of one controller; `kappctrl`: kapp-controller's series, when the controller's packaging reconcilers
    (made before it) time into them too."""

    def __init__(self, kappctrl: Kappctrl | None = None) -> None:
        self.registry = CollectorRegistry()
        for collector in (ProcessCollector, PlatformCollector, GCCollector):
            collector(registry=self.registry)
        self.reconciles = Counter(
            "kapply_reconcile",
            "Reconciles by kind (App, PackageRepository, PackageInstall) and result",
            ["kind", "result"],
            registry=self.registry,
        )
        self.reconcile_seconds = Histogram(
            "kapply_reconcile_duration_seconds",
            "How long a reconcile took, by kind",
            ["kind"],
            buckets=BUCKETS,
            registry=self.registry,
        )
        self.deploy_seconds = Histogram(
            "kapply_deploy_duration_seconds",
            "How long an App's deploy stage took (plan, apply, wait), by whether it succeeded",
            ["result"],
            buckets=BUCKETS,
            registry=self.registry,
        )
        self.requests = Counter(
            "kapply_api_requests",
            "Answers of the API server, by client (the controller's own identity, or an App's service account), HTTP "
            "method (WATCH: a watch started) and status code",
            ["client", "method", "code"],
            registry=self.registry,
        )
        self.shard_changes = Counter(
            "kapply_shard_changes",
            "Shards this replica took (taken) and stopped working on (stopped: given back, or lost)",
            ["change"],
            registry=self.registry,
        )
        self.kappctrl = kappctrl or Kappctrl()  # counted and timed by the App and PackageRepository reconcilers
        self.registry.register(self.kappctrl)
        self._caches: dict[str, Callable[[], int]] = {}
        self.read: Callable[[], State] = State  # the controller's state at a scrape (set by the controller)
        self.registry.register(_StateCollector(lambda: self.read(), self._caches))

    def cache(self, name: str, size: Callable[[], int]) -> None:
        """Report a cache's size (objects) as kapply_cache_objects{cache=name}, read at every scrape. For the
        controller's caches: register each where the controller makes it (main.Controller)."""
        self._caches[name] = size

    def reconciled(self, kind: str, result: Result, seconds: float) -> None:
        self.reconciles.labels(kind, result.value).inc()
        self.reconcile_seconds.labels(kind).observe(seconds)

    def deployed(self, seconds: float, ok: bool) -> None:
        self.deploy_seconds.labels("success" if ok else "failure").observe(seconds)

    def request(self, client: str, method: str, code: int) -> None:
        self.requests.labels(client, method, str(code)).inc()
