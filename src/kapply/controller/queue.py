"""The work queue: objects waiting to be reconciled, each at most once, never by two workers at once, and served
fairly across namespaces.

`add(key, delay)` asks for a reconcile no later than `delay` seconds from now: an earlier request wins, so a burst of
events about one App (drift on several of its objects, debounced by a small delay) is one reconcile. A key added
while it is being reconciled runs again right after (kapp-controller's unique reconciler does the same).

Keys are (namespace, name). A key that comes due joins its namespace's line, behind that namespace's keys that came
due before it; a worker takes the first key of the namespace whose turn it is, and that namespace goes to the back
(round-robin). So a namespace with a hundred due keys gets one turn in each round, as one with a single key does, and
a new App of another namespace waits for at most one key of each namespace, not for all of them. And no namespace has
more than `per_namespace` keys running at once: its other keys wait while other namespaces' keys are served, so a
tenant whose sources are slow holds at most that many workers, never all of them (`namespace_share`).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import heapq
import time
from typing import Generic, TypeVar

K = TypeVar("K", bound=tuple[str, str])


def namespace_share(workers: int, per_namespace: int) -> int:
    """The most keys of one namespace run at once by `workers` workers: `per_namespace` when it is set (above 0),
    else half the workers, at least one, so that one namespace never holds them all when there are two or more."""
    return min(per_namespace, workers) if per_namespace > 0 else max(1, workers // 2)


class WorkQueue(Generic[K]):
    def __init__(self, per_namespace: int | None = None) -> None:
        """`per_namespace`: the most keys of one namespace handed out and not done yet (None: no limit)."""
        self.per_namespace = per_namespace
        self._due: dict[K, float] = {}  # every waiting key (due now or later) -> the monotonic time it is due
        self._heap: list[tuple[float, int, K]] = []  # waiting keys by due time (entries superseded stay until popped)
        # namespace -> its due keys, in the order they came due; the namespaces in the order of their turns
        self._lines: dict[str, dict[K, None]] = {}
        self._running: set[K] = set()
        self._busy: collections.Counter[str] = collections.Counter()  # running keys by namespace
        self._again: dict[K, float] = {}  # keys added while running -> when
        self._changed = asyncio.Event()
        self._order = 0

    def add(self, key: K, delay: float = 0.0) -> None:
        due = time.monotonic() + max(0.0, delay)
        if key in self._running:
            self._again[key] = min(due, self._again.get(key, due))
            return
        if key in self._due and self._due[key] <= due:  # a key in its namespace's line is due already
            return
        self._due[key] = due
        self._order += 1
        heapq.heappush(self._heap, (due, self._order, key))
        self._changed.set()

    def forget(self, key: K) -> None:
        self._due.pop(key, None)
        self._again.pop(key, None)
        line = self._lines.get(key[0])
        if line is not None:
            line.pop(key, None)
            if not line:
                del self._lines[key[0]]

    async def get(self) -> K:
        """The next due key, by namespace in turn (waiting until one may be handed out); it counts as running until
        `done`."""
        while True:
            now = time.monotonic()
            self._line_up(now)
            key = self._take()
            if key is not None:
                return key
            self._changed.clear()
            timeout = self._heap[0][0] - now if self._heap else None
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), timeout)

    def _line_up(self, now: float) -> None:
        """Keys that came due join the back of their namespace's line (a namespace new to the lines gets the last
        turn); superseded heap entries (an earlier request, or a forgotten key) are dropped."""
        while self._heap:
            due, _, key = self._heap[0]
            line = self._lines.get(key[0])
            if self._due.get(key) != due or (line is not None and key in line):
                heapq.heappop(self._heap)
                continue
            if due > now:
                return
            heapq.heappop(self._heap)
            self._lines.setdefault(key[0], {})[key] = None

    def _take(self) -> K | None:
        """The first key of the first namespace in turn that is below its share; that namespace's turn goes to the
        back."""
        for namespace, line in self._lines.items():
            if self.per_namespace is not None and self._busy[namespace] >= self.per_namespace:
                continue
            key = next(iter(line))
            del line[key], self._due[key], self._lines[namespace]
            if line:
                self._lines[namespace] = line
            self._running.add(key)
            self._busy[namespace] += 1
            return key
        return None

    def done(self, key: K, requeue_after: float | None) -> None:
        """The reconcile of key ended; come back after `requeue_after` seconds (None: only on the next event)."""
        if key in self._running:
            self._running.discard(key)
            self._busy[key[0]] -= 1
            if self._busy[key[0]] <= 0:
                del self._busy[key[0]]
            self._changed.set()  # a namespace at its share may have a key to hand out now
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
