"""When a failed request is tried again: only as client-go's rest.Request does (an answer with Retry-After, a GET whose
connection was reset), never forever; and which failure a transport error is, in Go's words where kapp has them."""

from __future__ import annotations

import asyncio
import socket
import ssl
from collections.abc import Awaitable, Callable

import pytest

from kapply.errors import ClusterError
from kapply.resources.cluster import MAX_ATTEMPTS, MAX_DELAY, RESET_DELAY, once_answered, retry_delay
from kapply.transport import (
    ConnectError,
    Disconnected,
    Failure,
    ProtocolError,
    ProxyError,
    ReadTimeout,
    failure_of,
    in_words,
)

METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"]


def _unknown_ca() -> ssl.SSLCertVerificationError:
    error = ssl.SSLCertVerificationError(1, "certificate verify failed: unable to get local issuer certificate")
    error.verify_code, error.verify_message = 20, "unable to get local issuer certificate"
    return error


def connect_error(cause: BaseException) -> ConnectError:
    return ConnectError("127.0.0.1", 6443, cause)


REFUSED = connect_error(ConnectionRefusedError(111, "Connect call failed ('127.0.0.1', 6443)"))
UNKNOWN_HOST = ConnectError("nowhere.invalid", 6443, socket.gaierror(socket.EAI_NONAME, "Name or service not known"))
UNTRUSTED = connect_error(_unknown_ca())


@pytest.mark.parametrize(
    ("error", "failure"),
    [
        (REFUSED, Failure.REFUSED),
        (UNKNOWN_HOST, Failure.UNKNOWN_HOST),
        (UNTRUSTED, Failure.TLS),
        (connect_error(ssl.SSLError(1, "wrong version number")), Failure.TLS),
        (connect_error(TimeoutError()), Failure.TIMEOUT),
        (ReadTimeout(), Failure.TIMEOUT),
        (TimeoutError(), Failure.TIMEOUT),
        (Disconnected(), Failure.RESET),
        (Disconnected("Connection lost: [Errno 104] Connection reset by peer"), Failure.RESET),
        (connect_error(ConnectionResetError()), Failure.RESET),  # closed in the handshake
        (connect_error(OSError(101, "Network is unreachable")), Failure.OTHER),
        (ProxyError("the proxy answered 403 to CONNECT api:6443"), Failure.OTHER),
        (ProtocolError("an answer that is not HTTP"), Failure.OTHER),
    ],
)
def test_transport_errors_are_classified(error: BaseException, failure: Failure) -> None:
    assert failure_of(error) is failure


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize(
    "failure", [Failure.REFUSED, Failure.UNKNOWN_HOST, Failure.TLS, Failure.TIMEOUT, Failure.OTHER]
)
def test_nothing_that_waiting_cannot_mend_is_retried(method: str, failure: Failure) -> None:
    assert retry_delay(method, 1, failure=failure) is None


def test_a_reset_connection_is_retried_after_a_second_for_a_get_only() -> None:
    """client-go's isErrRetryableFunc: writes are not repeated (a create may have happened)."""
    assert retry_delay("GET", 1, failure=Failure.RESET) == RESET_DELAY == 1.0
    assert [retry_delay(m, 1, failure=Failure.RESET) for m in METHODS[1:]] == [None] * 4


@pytest.mark.parametrize("method", METHODS)
def test_a_429_or_5xx_with_retry_after_is_retried_for_any_method_after_that_time(method: str) -> None:
    assert retry_delay(method, 1, status=429, retry_after="2") == 2.0
    assert retry_delay(method, 1, status=503, retry_after="1") == 1.0
    assert retry_delay(method, 1, status=500, retry_after=" 0 ") == 0.0
    assert retry_delay(method, 1, status=429, retry_after="3600") == MAX_DELAY


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("retry_after", [None, "soon", "1.5", "Wed, 21 Oct 2015 07:28:00 GMT"])
def test_a_429_or_5xx_without_whole_seconds_of_retry_after_is_not_retried(method: str, retry_after: str | None) -> None:
    for status in (429, 500, 502, 503, 504):
        assert retry_delay(method, 1, status=status, retry_after=retry_after) is None


@pytest.mark.parametrize("status", [400, 401, 403, 404, 409, 422])
def test_client_errors_are_never_retried(status: int) -> None:
    assert retry_delay("GET", 1, status=status, retry_after="1") is None


def test_retries_end() -> None:
    assert retry_delay("GET", MAX_ATTEMPTS - 1, failure=Failure.RESET) is not None
    assert retry_delay("GET", MAX_ATTEMPTS, failure=Failure.RESET) is None
    assert retry_delay("GET", MAX_ATTEMPTS, status=429, retry_after="1") is None
    assert MAX_ATTEMPTS <= 11  # client-go: 10 retries after the first attempt


@pytest.mark.parametrize(
    ("error", "words"),
    [
        (REFUSED, "dial tcp 127.0.0.1:6443: connect: connection refused"),
        (UNKNOWN_HOST, "dial tcp: lookup nowhere.invalid: no such host"),
        (UNTRUSTED, "tls: failed to verify certificate: x509: certificate signed by unknown authority"),
        (ConnectError("10.0.0.1", 443, TimeoutError()), "dial tcp 10.0.0.1:443: i/o timeout"),
        (ReadTimeout(), "ReadTimeout (no answer from the server)"),
        (Disconnected(), "Disconnected: Server disconnected"),
    ],
)
def test_failures_in_the_words_kapp_uses(error: BaseException, words: str) -> None:
    assert in_words(error, "10.0.0.1", 443) == words


def answered_after(failures: list[ClusterError]) -> tuple[Callable[[], Awaitable[str]], list[int]]:
    calls: list[int] = []

    async def write() -> str:
        calls.append(1)
        if failures:
            raise failures.pop(0)
        return "done"

    return write, calls


def test_a_closing_write_is_made_once_the_api_server_answers_again() -> None:
    """once_answered: what closes a failed run (its app-change, its hold) waits out a restart, within its grace."""
    write, calls = answered_after([ClusterError("connection refused"), ClusterError("connection reset")])
    assert asyncio.run(once_answered(write, grace=5, interval=0.01)) == "done"
    assert len(calls) == 3


def test_a_closing_write_the_server_refuses_or_that_outlasts_its_grace_fails() -> None:
    write, calls = answered_after([ClusterError("forbidden", status=403)])
    with pytest.raises(ClusterError):
        asyncio.run(once_answered(write, grace=5, interval=0.01))
    assert len(calls) == 1
    write, calls = answered_after([ClusterError("connection refused")] * 1000)
    with pytest.raises(ClusterError):
        asyncio.run(once_answered(write, grace=0.05, interval=0.01))
    assert 1 < len(calls) < 100
