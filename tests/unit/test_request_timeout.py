"""$KAPPLY_KUBE_API_TIMEOUT: how long the CLI's requests wait on a server that does not answer."""

from __future__ import annotations

import pytest

from kapply.cli.common import DEFAULT_REQUEST_TIMEOUT, request_timeout
from kapply.errors import KapplyError


def test_unset_or_empty_is_the_default_minute() -> None:
    assert request_timeout({}) == request_timeout({"KAPPLY_KUBE_API_TIMEOUT": ""}) == DEFAULT_REQUEST_TIMEOUT == 60


@pytest.mark.parametrize(("text", "seconds"), [("10", 10.0), ("0.5", 0.5), ("120", 120.0)])
def test_a_positive_number_of_seconds_is_taken(text: str, seconds: float) -> None:
    assert request_timeout({"KAPPLY_KUBE_API_TIMEOUT": text}) == seconds


@pytest.mark.parametrize("text", ["0", "-1", "10s", "nan", "inf", "x"])
def test_anything_else_is_refused_naming_the_variable(text: str) -> None:
    with pytest.raises(KapplyError) as refused:
        request_timeout({"KAPPLY_KUBE_API_TIMEOUT": text})
    assert str(refused.value) == f"Expected $KAPPLY_KUBE_API_TIMEOUT to be a positive number of seconds, got '{text}'"
