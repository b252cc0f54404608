"""When a failed request is tried again: as client-go for answers with Retry-After, and for safe methods on 5xx and
lost connections; never forever."""

from __future__ import annotations

import ssl

import aiohttp
import pytest
from aiohttp.client_reqrep import ConnectionKey

from kapply.resources.cluster import MAX_ATTEMPTS, MAX_DELAY, Failure, failure_of, retry_delay

KEY = ConnectionKey("127.0.0.1", 6443, True, True, None, None, None)


@pytest.mark.parametrize("method", ["GET", "POST", "PUT", "PATCH", "DELETE"])
def test_an_answer_with_retry_after_is_retried_for_any_method_after_that_time(method):
    assert retry_delay(method, 1, status=429, retry_after="2") == 2.0
    assert retry_delay(method, 1, status=503, retry_after="1") == 1.0
    assert retry_delay(method, 1, status=429, retry_after="3600") == MAX_DELAY


def test_server_errors_without_retry_after_are_retried_only_for_methods_that_can_repeat():
    assert retry_delay("PUT", 1, status=500) is not None
    assert retry_delay("GET", 2, status=503) is not None
    assert retry_delay("POST", 1, status=500) is None  # a create may have happened


@pytest.mark.parametrize("status", [400, 401, 403, 404, 409, 422])
def test_client_errors_are_never_retried(status):
    assert retry_delay("GET", 1, status=status, retry_after="1") is None


def test_a_connection_that_never_opened_is_retried_for_any_method_but_a_lost_one_only_for_safe_methods():
    assert retry_delay("POST", 1, failure=Failure.NOT_SENT) is not None
    lost = Failure.LOST
    assert retry_delay("GET", 1, failure=lost) is not None and retry_delay("PUT", 1, failure=lost) is not None
    assert retry_delay("POST", 1, failure=lost) is None


def test_an_untrusted_server_is_not_tried_again():
    assert retry_delay("GET", 1, failure=Failure.TLS) is None


@pytest.mark.parametrize(
    ("error", "failure"),
    [
        (aiohttp.ClientConnectorError(KEY, ConnectionRefusedError(111, "Connection refused")), Failure.NOT_SENT),
        (aiohttp.ConnectionTimeoutError("Connection timeout to host"), Failure.NOT_SENT),
        (aiohttp.ServerDisconnectedError(), Failure.LOST),
        (aiohttp.ClientOSError(104, "Connection reset by peer"), Failure.LOST),
        (aiohttp.SocketTimeoutError("Timeout on reading data from socket"), Failure.LOST),
        (TimeoutError(), Failure.LOST),
        (aiohttp.ClientPayloadError("Response payload is not completed"), Failure.LOST),
        (aiohttp.ClientConnectorCertificateError(KEY, ssl.SSLCertVerificationError("unknown CA")), Failure.TLS),
    ],
)
def test_transport_errors_say_whether_the_request_may_have_reached_the_server(error, failure):
    assert failure_of(error) is failure


def test_backoff_grows_to_a_cap_and_retries_end():
    delays = [retry_delay("GET", attempt, status=500) for attempt in range(1, MAX_ATTEMPTS + 1)]
    assert delays[:4] == [0.25, 0.5, 1.0, 2.0]
    assert max(d for d in delays if d is not None) == MAX_DELAY
    assert delays[-1] is None
    assert sum(d for d in delays if d is not None) < 60
