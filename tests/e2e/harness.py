"""Helpers for e2e tests: the cluster under test, a client for it, and polling."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from lightkube import Client, KubeConfig


@dataclass(frozen=True)
class Cluster:
    kubeconfig: Path
    restricted_kubeconfig: Path | None
    restricted_namespace: str | None


def client_for(kubeconfig: Path, namespace: str | None = None) -> Client:
    return Client(KubeConfig.from_file(kubeconfig), namespace=namespace, field_manager="kapply-tests")


def eventually(check: Callable[[], object], timeout: float = 60, interval: float = 0.5,
               what: str = "condition") -> object:
    """Poll `check` until it returns something truthy; fail with `what` after `timeout`."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(interval)
    pytest.fail(f"timed out after {timeout}s waiting for {what} (last: {last!r})")
