"""The controller's work queue: each App at most once, at the earliest time asked, never by two workers at once.

Timings are tens of milliseconds; each test runs its own event loop with `asyncio.run`."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

import pytest

from kapply.controller.queue import WorkQueue

T = TypeVar("T")
A = ("ns", "a")
B = ("ns", "b")


def run(test: Callable[[], Awaitable[T]]) -> T:
    return asyncio.run(test())  # type: ignore[arg-type]


async def next_key(queue: WorkQueue[tuple[str, str]], timeout: float = 1.0) -> tuple[tuple[str, str], float]:
    """The next key and how long it took to come."""
    start = time.monotonic()
    key = await asyncio.wait_for(queue.get(), timeout)
    return key, time.monotonic() - start


async def nothing_due(queue: WorkQueue[tuple[str, str]], within: float = 0.05) -> bool:
    try:
        await asyncio.wait_for(queue.get(), within)
    except TimeoutError:
        return True
    return False


def test_a_burst_of_adds_is_one_reconcile_at_the_earliest_time() -> None:
    async def test() -> None:
        queue: WorkQueue[tuple[str, str]] = WorkQueue()
        queue.add(A, 0.08)
        queue.add(A, 0.02)
        queue.add(A, 0.05)
        assert len(queue) == 1
        key, waited = await next_key(queue)
        assert key == A
        assert 0.015 <= waited < 0.045
        queue.done(A, None)
        assert await nothing_due(queue, 0.1)  # the superseded later requests are not reconciles of their own

    run(test)


def test_a_later_request_does_not_postpone_an_earlier_one() -> None:
    async def test() -> None:
        queue: WorkQueue[tuple[str, str]] = WorkQueue()
        queue.add(A, 0.0)
        queue.add(A, 5.0)
        key, waited = await next_key(queue)
        assert key == A
        assert waited < 0.5

    run(test)


def test_keys_come_out_in_the_order_they_are_due() -> None:
    async def test() -> None:
        queue: WorkQueue[tuple[str, str]] = WorkQueue()
        queue.add(A, 0.03)
        queue.add(B, 0.0)
        assert len(queue) == 2
        assert (await next_key(queue))[0] == B
        key, waited = await next_key(queue)
        assert key == A
        assert waited > 0.01

    run(test)


def test_a_key_is_not_handed_out_before_it_is_due() -> None:
    async def test() -> None:
        queue: WorkQueue[tuple[str, str]] = WorkQueue()
        queue.add(A, 0.2)
        assert await nothing_due(queue, 0.05)
        assert len(queue) == 1

    run(test)


def test_a_waiting_worker_wakes_when_a_key_is_added() -> None:
    async def test() -> None:
        queue: WorkQueue[tuple[str, str]] = WorkQueue()
        waiter = asyncio.create_task(next_key(queue))
        await asyncio.sleep(0.02)
        assert not waiter.done()
        queue.add(A)
        key, _ = await waiter
        assert key == A

    run(test)


def test_a_worker_waiting_for_a_later_key_takes_an_earlier_one_added_meanwhile() -> None:
    async def test() -> None:
        queue: WorkQueue[tuple[str, str]] = WorkQueue()
        queue.add(A, 5.0)
        waiter = asyncio.create_task(next_key(queue))
        await asyncio.sleep(0.02)
        queue.add(B, 0.0)
        key, waited = await waiter
        assert key == B
        assert waited < 0.5

    run(test)


def test_a_running_key_is_never_handed_to_a_second_worker() -> None:
    async def test() -> None:
        queue: WorkQueue[tuple[str, str]] = WorkQueue()
        queue.add(A)
        assert (await next_key(queue))[0] == A
        queue.add(A)  # an event while it runs
        assert len(queue) == 0
        assert await nothing_due(queue)

    run(test)


def test_a_key_added_while_running_runs_again_right_after_done() -> None:
    async def test() -> None:
        queue: WorkQueue[tuple[str, str]] = WorkQueue()
        queue.add(A)
        await next_key(queue)
        queue.add(A)
        queue.done(A, None)  # no requeue asked: the event during the run still counts
        key, waited = await next_key(queue)
        assert key == A
        assert waited < 0.5

    run(test)


def test_a_delayed_add_while_running_keeps_its_due_time_after_done() -> None:
    async def test() -> None:
        queue: WorkQueue[tuple[str, str]] = WorkQueue()
        queue.add(A)
        await next_key(queue)
        queue.add(A, 0.06)
        await asyncio.sleep(0.03)
        queue.done(A, None)
        key, waited = await next_key(queue)
        assert key == A
        assert 0.01 <= waited < 0.055  # the rest of the 60 ms, not 60 ms from done

    run(test)


def test_done_with_a_requeue_brings_the_key_back_after_that_delay() -> None:
    async def test() -> None:
        queue: WorkQueue[tuple[str, str]] = WorkQueue()
        queue.add(A)
        await next_key(queue)
        queue.done(A, 0.03)
        assert len(queue) == 1
        key, waited = await next_key(queue)
        assert key == A
        assert waited >= 0.025

    run(test)


def test_done_without_a_requeue_waits_for_the_next_event() -> None:
    async def test() -> None:
        queue: WorkQueue[tuple[str, str]] = WorkQueue()
        queue.add(A)
        await next_key(queue)
        queue.done(A, None)
        assert len(queue) == 0
        assert await nothing_due(queue)

    run(test)


def test_an_event_during_the_run_comes_before_a_later_requeue() -> None:
    async def test() -> None:
        queue: WorkQueue[tuple[str, str]] = WorkQueue()
        queue.add(A)
        await next_key(queue)
        queue.add(A)
        queue.done(A, 30.0)
        assert len(queue) == 1
        key, waited = await next_key(queue)
        assert key == A
        assert waited < 0.5

    run(test)


def test_forget_drops_a_pending_key() -> None:
    async def test() -> None:
        queue: WorkQueue[tuple[str, str]] = WorkQueue()
        queue.add(A, 0.01)
        queue.add(B, 0.02)
        queue.forget(A)
        assert len(queue) == 1
        assert (await next_key(queue))[0] == B
        assert await nothing_due(queue)

    run(test)


def test_forget_drops_the_request_made_while_running() -> None:
    async def test() -> None:
        queue: WorkQueue[tuple[str, str]] = WorkQueue()
        queue.add(A)
        await next_key(queue)
        queue.add(A)
        queue.forget(A)  # the App was deleted meanwhile
        queue.done(A, None)
        assert await nothing_due(queue)

    run(test)


def test_a_forgotten_key_added_again_is_due_at_its_new_time() -> None:
    async def test() -> None:
        queue: WorkQueue[tuple[str, str]] = WorkQueue()
        queue.add(A, 0.0)
        queue.forget(A)
        queue.add(A, 0.04)  # the stale heap entry of the first add must not hand it out early
        key, waited = await next_key(queue)
        assert key == A
        assert waited >= 0.03

    run(test)


def test_negative_delays_count_as_now() -> None:
    async def test() -> None:
        queue: WorkQueue[tuple[str, str]] = WorkQueue()
        queue.add(A, -10.0)
        queue.add(B, 0.0)
        assert (await next_key(queue))[0] == A  # due now, added first
        assert (await next_key(queue))[0] == B

    run(test)


@pytest.mark.parametrize("workers", [2, 4])
def test_several_workers_share_keys_without_running_one_twice(workers: int) -> None:
    async def test() -> None:
        queue: WorkQueue[tuple[str, str]] = WorkQueue()
        running: set[tuple[str, str]] = set()
        overlaps: list[tuple[str, str]] = []
        handled: list[tuple[str, str]] = []

        async def worker() -> None:
            while True:
                key = await queue.get()
                if key in running:
                    overlaps.append(key)
                running.add(key)
                await asyncio.sleep(0.005)
                handled.append(key)
                running.discard(key)
                queue.done(key, None)

        tasks = [asyncio.create_task(worker()) for _ in range(workers)]
        for _ in range(3):
            for i in range(5):
                queue.add(("ns", f"app-{i}"))
            await asyncio.sleep(0.002)  # some arrive while their key runs
        await asyncio.sleep(0.08)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        assert overlaps == []
        assert set(handled) == {("ns", f"app-{i}") for i in range(5)}
        assert len(queue) == 0

    run(test)
