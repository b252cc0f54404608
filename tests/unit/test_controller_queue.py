"""The controller's work queue: each App at most once, at the earliest time asked, never by two workers at once;
namespaces served in turn, none running more than its share.

Timings are tens of milliseconds; each test runs its own event loop with `asyncio.run`."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

import pytest

from kapply.controller.queue import WorkQueue, namespace_share

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


# --- fairness across namespaces ---------------------------------------------------------------------------------------


async def taken(queue: WorkQueue[tuple[str, str]], count: int) -> list[tuple[str, str]]:
    return [(await next_key(queue))[0] for _ in range(count)]


def test_namespaces_take_turns_whatever_the_length_of_their_lines() -> None:
    async def test() -> None:
        queue: WorkQueue[tuple[str, str]] = WorkQueue()
        for i in range(5):
            queue.add(("hog", f"a{i}"))
        queue.add(("other", "b"))  # came due last: served second, not sixth
        assert await taken(queue, 6) == [("hog", "a0"), ("other", "b"), *[("hog", f"a{i}") for i in range(1, 5)]]

    run(test)


def test_round_robin_over_three_namespaces_keeps_each_ones_order() -> None:
    async def test() -> None:
        queue: WorkQueue[tuple[str, str]] = WorkQueue()
        for ns, count in (("a", 3), ("b", 3), ("c", 1)):
            for i in range(count):
                queue.add((ns, str(i)))
        order = await taken(queue, 7)
        assert order == [("a", "0"), ("b", "0"), ("c", "0"), ("a", "1"), ("b", "1"), ("a", "2"), ("b", "2")]

    run(test)


def test_a_namespace_coming_due_later_takes_its_turn_at_the_back() -> None:
    async def test() -> None:
        queue: WorkQueue[tuple[str, str]] = WorkQueue()
        queue.add(("a", "0"))
        queue.add(("a", "1"))
        queue.add(("b", "0"), 0.03)
        assert await taken(queue, 1) == [("a", "0")]
        await asyncio.sleep(0.04)
        assert await taken(queue, 2) == [("a", "1"), ("b", "0")]  # behind the one key of each namespace in line

    run(test)


def test_a_namespace_runs_at_most_its_share_while_others_are_served() -> None:
    async def test() -> None:
        queue: WorkQueue[tuple[str, str]] = WorkQueue(per_namespace=2)
        for i in range(4):
            queue.add(("hog", str(i)))
        queue.add(("other", "x"))
        assert await taken(queue, 3) == [("hog", "0"), ("other", "x"), ("hog", "1")]
        assert await nothing_due(queue)  # hog's other keys wait: two of its keys run
        assert queue.ready() == 2
        queue.done(("other", "x"), None)
        assert await nothing_due(queue)  # another namespace's key ending frees none of hog's share
        queue.done(("hog", "0"), None)
        assert await taken(queue, 1) == [("hog", "2")]

    run(test)


def test_a_worker_waiting_on_a_full_share_wakes_when_a_key_of_it_is_done() -> None:
    async def test() -> None:
        queue: WorkQueue[tuple[str, str]] = WorkQueue(per_namespace=1)
        queue.add(("hog", "0"))
        queue.add(("hog", "1"))
        await next_key(queue)
        waiter = asyncio.create_task(next_key(queue))
        await asyncio.sleep(0.02)
        assert not waiter.done()
        queue.done(("hog", "0"), None)
        key, waited = await waiter
        assert key == ("hog", "1")
        assert waited < 0.5

    run(test)


def test_forget_drops_a_key_waiting_in_its_namespace_line() -> None:
    async def test() -> None:
        queue: WorkQueue[tuple[str, str]] = WorkQueue(per_namespace=1)
        queue.add(("hog", "0"))
        queue.add(("hog", "1"))
        await next_key(queue)
        assert await nothing_due(queue)  # hog/1 is in its line now, held back by the share
        queue.forget(("hog", "1"))
        queue.done(("hog", "0"), None)
        assert await nothing_due(queue)
        assert len(queue) == 0
        queue.add(("hog", "1"))  # added again: once, not twice
        assert await taken(queue, 1) == [("hog", "1")]
        queue.done(("hog", "1"), None)
        assert await nothing_due(queue)

    run(test)


def test_slow_keys_of_one_namespace_never_hold_every_worker() -> None:
    """Four workers, a share of two: eight keys of one namespace that never finish hold two workers, and the keys of
    other namespaces, added afterwards, are each reconciled at once."""

    async def test() -> None:
        queue: WorkQueue[tuple[str, str]] = WorkQueue(per_namespace=namespace_share(4, 0))
        handled: dict[tuple[str, str], float] = {}
        start = time.monotonic()

        async def worker() -> None:
            while True:
                key = await queue.get()
                handled[key] = time.monotonic() - start
                await asyncio.sleep(10 if key[0] == "hog" else 0.01)
                queue.done(key, None)

        tasks = [asyncio.create_task(worker()) for _ in range(4)]
        for i in range(8):
            queue.add(("hog", str(i)))
        await asyncio.sleep(0.02)
        for ns in ("a", "b", "c"):
            queue.add((ns, "app"))
            queue.add((ns, "other"), 0.02)
        await asyncio.sleep(0.1)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        assert sorted(k for k in handled if k[0] == "hog") == [("hog", "0"), ("hog", "1")]
        assert all((ns, name) in handled for ns in "abc" for name in ("app", "other"))
        assert max(t for k, t in handled.items() if k[0] != "hog") < 0.09

    run(test)


@pytest.mark.parametrize(
    ("workers", "per_namespace", "share"), [(4, 0, 2), (1, 0, 1), (2, 0, 1), (3, 0, 1), (8, 0, 4), (4, 3, 3), (4, 9, 4)]
)
def test_a_namespace_share_is_half_the_workers_unless_set(workers: int, per_namespace: int, share: int) -> None:
    assert namespace_share(workers, per_namespace) == share
