"""The work queue: Apps waiting to be reconciled, each at most once, never by two workers at once.

`add(key, delay)` asks for a reconcile no later than `delay` seconds from now: an earlier request wins, so a burst of
events about one App (drift on several of its objects, debounced by a small delay) is one reconcile. A key added
while it is being reconciled runs again right after (kapp-controller's unique reconciler does the same).
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import time
from typing import Generic, TypeVar

K = TypeVar("K")


class WorkQueue(Generic[K]):
    def __init__(self) -> None:
        self._due: dict[K, float] = {}  # key -> monotonic time it is due
        self._heap: list[tuple[float, int, K]] = []
        self._running: set[K] = set()
        self._again: dict[K, float] = {}  # keys added while running -> when
        self._changed = asyncio.Event()
        self._order = 0

    def add(self, key: K, delay: float = 0.0) -> None:
        due = time.monotonic() + max(0.0, delay)
        if key in self._running:
            self._again[key] = min(due, self._again.get(key, due))
            return
        if key in self._due and self._due[key] <= due:
            return
        self._due[key] = due
        self._order += 1
        heapq.heappush(self._heap, (due, self._order, key))
        self._changed.set()

    def forget(self, key: K) -> None:
        self._due.pop(key, None)
        self._again.pop(key, None)

    async def get(self) -> K:
        """The next due key (waiting until one is); it counts as running until `done`."""
        while True:
            now = time.monotonic()
            while self._heap:
                due, _, key = self._heap[0]
                if self._due.get(key) != due:  # superseded by an earlier request, or forgotten
                    heapq.heappop(self._heap)
                    continue
                if due > now:
                    break
                heapq.heappop(self._heap)
                del self._due[key]
                self._running.add(key)
                return key
            self._changed.clear()
            timeout = self._heap[0][0] - now if self._heap else None
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), timeout)

    def done(self, key: K, requeue_after: float | None) -> None:
        """The reconcile of key ended; come back after `requeue_after` seconds (None: only on the next event)."""
        self._running.discard(key)
        again = self._again.pop(key, None)
        if again is not None:
            self.add(key, max(0.0, again - time.monotonic()))
        if requeue_after is not None:
            self.add(key, requeue_after)

    def ready(self) -> int:
        """Keys due now, waiting for a worker (`len` counts the keys scheduled later too)."""
        now = time.monotonic()
        return sum(1 for due in self._due.values() if due <= now)

    def __len__(self) -> int:
        return len(self._due)
