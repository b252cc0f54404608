"""Fixtures shared by every kind of test: the cluster script, and the cluster the e2e and compat tests use.

One cluster per test run (session fixture). The cluster is the one `hack/cluster.py` builds and starts, or whatever
`$KUBECONFIG` names (then `$KAPPLY_RESTRICTED_KUBECONFIG` may name the restricted user's kubeconfig).
"""

import importlib.util
import json
import os
import random
import sys
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import ModuleType

import pytest
from lightkube import Client

from tests.e2e.harness import Cluster, client_for

REPO = Path(__file__).resolve().parents[1]
# `KAPPLY_TEST_FILE_ORDER=random` (or `random:<seed>`) runs the test files in a shuffled order, each file's tests in
# their own order: a test that passes only after another file's left something on the cluster fails then.
FILE_ORDER = "KAPPLY_TEST_FILE_ORDER"
_SEED = pytest.StashKey[int]()  # the order's seed, said at the end of the run
# `KAPPLY_DURATIONS=<file>` (`make test` sets it): every test's time (setup, call and teardown) written to the file as
# JSON, slowest first, and the 25 slowest printed at the end, so that a run's time can be compared with another's.
DURATIONS = "KAPPLY_DURATIONS"
SLOWEST = 25


def shuffled_by_file(items: list[pytest.Item], seed: int) -> list[pytest.Item]:
    """The items grouped by file, the files in an order drawn from `seed`."""
    files: dict[str, list[pytest.Item]] = {}
    for item in items:
        files.setdefault(str(item.path), []).append(item)
    order = sorted(files)
    random.Random(seed).shuffle(order)
    return [item for path in order for item in files[path]]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    wanted = os.environ.get(FILE_ORDER, "")
    if not wanted:
        return
    kind, _, seed_text = wanted.partition(":")
    if kind != "random" or (seed_text and not seed_text.isdigit()):
        raise pytest.UsageError(f"${FILE_ORDER}: {wanted!r} is not 'random' or 'random:<seed>'")
    seed = int(seed_text) if seed_text else random.SystemRandom().randrange(10**6)
    items[:] = shuffled_by_file(items, seed)
    config.stash[_SEED] = seed


def slowest(durations: Mapping[str, float]) -> list[tuple[str, float]]:
    """The tests by time, slowest first (ties by name)."""
    return sorted(durations.items(), key=lambda item: (-item[1], item[0]))


def durations_document(durations: Mapping[str, float], wall: float) -> dict[str, object]:
    """What the durations file holds: the run's wall time, the sum of the tests' times, each file's sum, and every
    test's time, slowest first (seconds, to the millisecond)."""
    files: dict[str, float] = {}
    for test, seconds in durations.items():
        files[test.split("::", 1)[0]] = files.get(test.split("::", 1)[0], 0.0) + seconds
    return {
        "wall_seconds": round(wall, 3),
        "tests_seconds": round(sum(durations.values()), 3),
        "files": {name: round(seconds, 3) for name, seconds in slowest(files)},
        "tests": {name: round(seconds, 3) for name, seconds in slowest(durations)},
    }


class Durations:
    """A plugin keeping each test's time (its setup, call and teardown summed) and when the run started."""

    def __init__(self) -> None:
        self.tests: dict[str, float] = {}
        self.started = time.monotonic()

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.tests[report.nodeid] = self.tests.get(report.nodeid, 0.0) + report.duration


_DURATIONS = pytest.StashKey[Durations]()


def pytest_configure(config: pytest.Config) -> None:
    if os.environ.get(DURATIONS):
        config.stash[_DURATIONS] = Durations()
        config.pluginmanager.register(config.stash[_DURATIONS], "kapply-durations")


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    seed = config.stash.get(_SEED, None)
    if seed is not None:
        terminalreporter.write_line(f"test files ran in random order; again: {FILE_ORDER}=random:{seed}")
    durations = config.stash.get(_DURATIONS, None)
    if durations is not None and durations.tests:
        path = os.environ[DURATIONS]
        document = durations_document(durations.tests, time.monotonic() - durations.started)
        Path(path).write_text(json.dumps(document, indent=1) + "\n")
        terminalreporter.write_sep("=", f"{SLOWEST} slowest tests (setup, call and teardown; every test's in {path})")
        for name, seconds in slowest(durations.tests)[:SLOWEST]:
            terminalreporter.write_line(f"{seconds:8.2f}s {name}")


@pytest.fixture(scope="session")
def cluster_script() -> ModuleType:
    """hack/cluster.py, which builds and runs the local control plane (not part of the package)."""
    spec = importlib.util.spec_from_file_location("kapply_cluster", REPO / "hack" / "cluster.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up here
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def cluster(cluster_script: ModuleType) -> Iterator[Cluster]:
    if os.environ.get("KUBECONFIG"):
        restricted = os.environ.get("KAPPLY_RESTRICTED_KUBECONFIG")
        yield Cluster(
            Path(os.environ["KUBECONFIG"]),
            Path(restricted) if restricted else None,
            os.environ.get("KAPPLY_RESTRICTED_NAMESPACE"),
        )
        return
    script = cluster_script
    already_running = (state := script.read_state()) is not None and script.healthy(state)
    script.up()
    try:
        yield Cluster(
            script.DATA_DIR / "kubeconfig", script.DATA_DIR / "restricted.kubeconfig", script.RESTRICTED_NAMESPACE
        )
    finally:
        if not already_running:
            script.down()


@pytest.fixture(scope="session")
def kube(cluster: Cluster) -> Client:
    """An admin client, for setting up and reading back objects."""
    return client_for(cluster.kubeconfig)
