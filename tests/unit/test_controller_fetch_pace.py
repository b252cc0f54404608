"""A slow source is bounded: the minimum transfer rate (kapply.oci.transfer) over bodies that trickle, stall or come
fast, then stall; an http source and a registry that trickle, stopped by the rate or by the fetch deadline, each
naming what stopped it; git given the same rate as its own; the controller's flags carried into the policy.

Windows are tenths of a second; each test runs its own event loop."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from kapply.controller.fetch import FetchError, FetchPolicy, Limits, _git_options, fetch
from kapply.controller.settings import Settings
from kapply.controller.spec import FetchSource, Http, Image
from kapply.oci import Limits as RegistryLimits
from kapply.oci import OciError
from kapply.oci.transfer import MinRate, TooSlow, paced
from tests.unit import test_oci_registry as registry
from tests.unit.test_controller_fetch_sources import Server, fetch_error

# --- the minimum rate -----------------------------------------------------------------------------------------------


class Trickle:
    """A body: `pieces` each after its delay (seconds); after the last, the end of the body, or nothing ever."""

    def __init__(self, pieces: list[tuple[float, bytes]], *, ends: bool = True) -> None:
        self.pieces = list(pieces)
        self.ends = ends

    async def read(self, n: int = -1) -> bytes:
        if not self.pieces:
            if not self.ends:
                await asyncio.Event().wait()  # a server that stays silent
            return b""
        delay, data = self.pieces[0]
        await asyncio.sleep(delay)
        self.pieces.pop(0)  # once slept through: a read cancelled meanwhile loses nothing, as aiohttp's
        return data


def read_all(body: Any, rate: MinRate) -> tuple[bytes, float]:
    """What `paced` yields and how long it took (raising what it raises)."""

    async def go() -> bytes:
        return b"".join([piece async for piece in paced(body, rate, 1 << 16)])

    start = time.monotonic()
    data = asyncio.run(go())
    return data, time.monotonic() - start


def stopped(body: Any, rate: MinRate) -> tuple[str, float]:
    start = time.monotonic()
    with pytest.raises(TooSlow) as e:
        read_all(body, rate)
    return str(e.value), time.monotonic() - start


RATE = MinRate(100, 0.2)  # 20 bytes in each 0.2 s


def test_a_body_fast_enough_is_read_whole() -> None:
    body = Trickle([(0.05, b"x" * 10)] * 8)  # 200 bytes/s, 0.4 s
    data, _ = read_all(body, RATE)
    assert data == b"x" * 80


def test_a_small_body_that_ends_within_the_first_window_is_never_too_slow() -> None:
    data, took = read_all(Trickle([(0.0, b"tiny")]), RATE)
    assert data == b"tiny" and took < 0.1


def test_a_trickle_slower_than_the_rate_is_stopped_at_the_end_of_its_window() -> None:
    message, took = stopped(Trickle([(0.03, b"x")] * 100), RATE)
    assert message.startswith("slower than the minimum rate of 100 bytes/s over 0.2 s (")
    assert 0.19 <= took < 0.35  # one window, not the hundred pieces' 3 s


def test_a_server_that_sends_nothing_at_all_is_stopped_too() -> None:
    message, took = stopped(Trickle([], ends=False), RATE)
    assert message == "slower than the minimum rate of 100 bytes/s over 0.2 s (0 bytes in the last 0.2 s)"
    assert took < 0.35


def test_a_fast_start_does_not_pay_for_a_stall_later() -> None:
    body = Trickle([(0.0, b"x" * 10_000), (0.25, b"x")], ends=False)
    message, took = stopped(body, RATE)
    assert "(1 bytes in the last 0.2 s)" in message or "(0 bytes in the last 0.2 s)" in message
    assert took < 0.6


def test_no_minimum_reads_any_trickle_whole() -> None:
    data, took = read_all(Trickle([(0.03, b"x")] * 10), MinRate(0, 0.05))
    assert data == b"x" * 10 and took >= 0.25


def test_the_connections_own_read_timeout_is_not_taken_for_slowness() -> None:
    class TimesOut:
        async def read(self, n: int = -1) -> bytes:
            raise TimeoutError("the socket's read timeout")

    with pytest.raises(TimeoutError, match="socket"):
        read_all(TimesOut(), RATE)


# --- http sources -----------------------------------------------------------------------------------------------------


def trickling(interval: float, count: int = 1000) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
    """A byte every `interval` seconds, `count` of them promised."""

    async def handler(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Length": str(count)})
        await response.prepare(request)
        for _ in range(count):
            await asyncio.sleep(interval)
            await response.write(b"x")
        return response

    return handler


def test_an_http_source_slower_than_the_rate_fails_naming_the_minimum_rate(tmp_path: Path) -> None:
    server = Server({"/slow": trickling(0.05)})
    policy = FetchPolicy(limits=Limits(), timeout=10, min_rate=MinRate(100, 0.2))
    start = time.monotonic()
    message = fetch_error((server,), lambda: (FetchSource("", http=Http(server.url("/slow"))),), tmp_path, policy)
    assert message.startswith(f"Fetching http {server.url('/slow')}: Downloading URL: slower than the minimum rate")
    assert message.endswith("; stopped (the controller's --fetch-min-rate and --fetch-min-rate-window)")
    assert time.monotonic() - start < 2


def test_an_http_source_fast_enough_but_too_long_fails_at_the_fetch_deadline(tmp_path: Path) -> None:
    server = Server({"/long": trickling(0.01)})
    policy = FetchPolicy(limits=Limits(), timeout=0.5, min_rate=MinRate(1, 0.2))
    start = time.monotonic()
    message = fetch_error((server,), lambda: (FetchSource("", http=Http(server.url("/long"))),), tmp_path, policy)
    assert message == (
        f"Fetching http {server.url('/long')}: Downloading URL: not done within 0.5 s "
        "(the fetch deadline: the controller's --fetch-timeout)"
    )
    assert time.monotonic() - start < 2


# --- registries -------------------------------------------------------------------------------------------------------


def test_a_registry_trickling_a_manifest_or_a_layer_is_stopped_at_the_minimum_rate(tmp_path: Path) -> None:
    async def go(routes: dict[str, registry.Handler]) -> str:
        async with registry.serving(registry.Fake(routes)) as host:
            limits = RegistryLimits(min_rate=MinRate(100, 0.2))
            with pytest.raises(OciError) as e:
                await registry.pull_all(host, tmp_path, limits=limits)
            return str(e.value)

    slow_manifest = {**registry.image_routes(), "/v2/app/manifests/v1": trickling(0.05)}
    message = asyncio.run(go(slow_manifest))
    assert message.startswith("127.0.0.1:") and ": the manifest: slower than the minimum rate of 100 bytes/s" in message
    digest = registry.digest_of(registry.LAYER)
    slow_layer = {**registry.image_routes(), f"/v2/app/blobs/{digest}": trickling(0.05, len(registry.LAYER))}
    message = asyncio.run(go(slow_layer))
    assert f"blob {digest}: slower than the minimum rate of 100 bytes/s over 0.2 s" in message
    assert not (tmp_path / "layer").exists()


def test_an_image_pull_that_takes_too_long_fails_at_the_fetch_deadline(tmp_path: Path) -> None:
    async def go() -> str:
        routes = {**registry.image_routes(), "/v2/app/manifests/v1": trickling(0.01)}
        async with registry.serving(registry.Fake(routes)) as host:
            policy = FetchPolicy(limits=Limits(), allow_plain_http_registries=True, timeout=0.3, min_rate=MinRate(1, 1))
            with pytest.raises(FetchError) as e:
                await fetch((FetchSource("", image=Image(f"{host}/app:v1")),), tmp_path, _nothing, policy)
            return str(e.value)

    assert asyncio.run(go()).endswith(
        "/app:v1: not pulled within 0.3 s (the fetch deadline: the controller's --fetch-timeout)"
    )


async def _nothing(kind: str, name: str) -> None:
    return None


def test_a_registry_keeps_the_default_minimum_rate_without_limits_given() -> None:
    assert RegistryLimits().min_rate == MinRate()


# --- git, and the controller's flags ----------------------------------------------------------------------------------


def test_git_gets_the_minimum_rate_as_its_own_low_speed_limit() -> None:
    options = _git_options(FetchPolicy(limits=Limits(), min_rate=MinRate(2048, 12.4)))
    assert options[-4:] == ("-c", "http.lowSpeedLimit=2048", "-c", "http.lowSpeedTime=12")
    assert _git_options(FetchPolicy(limits=Limits(), min_rate=MinRate(1, 0.2)))[-1] == "http.lowSpeedTime=1"
    no_minimum = _git_options(FetchPolicy(limits=Limits(), min_rate=MinRate(0, 30)))
    assert not any("lowSpeed" in option for option in no_minimum)


def test_the_policy_carries_the_controllers_deadline_and_rate() -> None:
    policy = FetchPolicy.from_settings(Settings(fetch_timeout=7, fetch_min_rate=3, fetch_min_rate_window=2))
    assert (policy.timeout, policy.min_rate) == (7, MinRate(3, 2))
    default = FetchPolicy.from_settings(Settings())
    assert (default.timeout, default.min_rate) == (120, MinRate(1024, 30))


@pytest.mark.parametrize(
    ("flag", "message"),
    [
        ("--namespace-concurrency=-1", "--namespace-concurrency=-1: expected 0 or more"),
        ("--fetch-min-rate=-5", "--fetch-min-rate=-5: expected 0 or more"),
        ("--concurrency=0", "--concurrency=0: expected more than 0"),
        ("--fetch-timeout=0s", "--fetch-timeout=0.0: expected more than 0"),
        ("--fetch-min-rate-window=0s", "--fetch-min-rate-window=0.0: expected more than 0"),
    ],
)
def test_bad_fairness_flags_are_usage_errors(flag: str, message: str, capsys: pytest.CaptureFixture[str]) -> None:
    from kapply.cli.main import run

    assert run(["controller", flag]) == 1
    assert message in capsys.readouterr().err
