"""The controller's Prometheus metrics (`/metrics`), named `kapply_*` (and kapp-controller's per-App reconcile counters,
`kappctrl_app_reconcile_*_total`), with prometheus_client's types and exposition format. docs/reconciler.md
("Metrics") says what each one means.

Counters and histograms are updated as things happen (a reconcile ends, the API server answers, a deploy ends). What
the controller *is* (queue depths, reconciles running, shards held, each App's drift and ghost diffs, cache sizes) is
read at each scrape from a `State` the controller gives, so those numbers are never stale and cost nothing between
scrapes. Each Controller has a registry of its own (the tests make many), holding the process collectors too
(`process_*`, `python_*`: memory, CPU, file descriptors).
"""

from __future__ import annotations

import enum
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
    """kapp-controller's per-App reconcile counters (its pkg/metrics), `kappctrl_app_reconcile_<value>_total`."""

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


class AppCounts(Collector):
    """kapp-controller's per-App reconcile counters, with its names and labels (`controller` is `app`, then the App's
    `name` and `namespace`): kept in memory where the reconciler counts (a sync makes no request for them). An App's
    five series appear at its first count and go when it is gone (kapp-controller's InitMetrics and DeleteMetrics);
    no `_created` series. The e2e tests wait on them: "N syncs of this App ended" instead of a sleep."""

    def __init__(self) -> None:
        self._counts: dict[Key, dict[AppCount, int]] = {}

    def count(self, namespace: str, name: str, count: AppCount) -> None:
        self._counts.setdefault((namespace, name), dict.fromkeys(AppCount, 0))[count] += 1

    def forget(self, namespace: str, name: str) -> None:
        self._counts.pop((namespace, name), None)

    def collect(self) -> Iterable[Metric]:
        apps = sorted(self._counts.items())
        for count in AppCount:
            family = CounterMetricFamily(
                f"kappctrl_app_reconcile_{count.value}",
                _APP_COUNT_HELP[count],
                labels=["controller", "name", "namespace"],
            )
            for (namespace, name), counts in apps:
                family.add_metric(["app", name, namespace], counts[count])
            yield family


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
    """The metrics of one controller."""

    def __init__(self) -> None:
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
        self.apps = AppCounts()  # counted by the App reconciler
        self.registry.register(self.apps)
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
