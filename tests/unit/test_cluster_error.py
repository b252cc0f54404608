"""ClusterError's predicates: the one place that says which HTTP status is which answer of the API server."""

from __future__ import annotations

import pytest

from kapply.errors import ClusterError

PREDICATES = {
    "unauthorized": 401,
    "forbidden": 403,
    "not_found": 404,
    "conflict": 409,
    "gone": 410,
    "invalid": 422,
}


@pytest.mark.parametrize("status", [0, 400, *PREDICATES.values(), 429, 500, 503])
def test_each_predicate_holds_for_its_status_alone(status: int) -> None:
    error = ClusterError("API server says: no", status=status)
    assert {name for name in PREDICATES if getattr(error, name)} == {
        name for name, code in PREDICATES.items() if code == status
    }


def test_an_error_without_an_answer_is_none_of_them() -> None:
    error = ClusterError("GET /api/v1/pods failed: connection refused")
    assert not any(getattr(error, name) for name in PREDICATES)


def test_again_is_the_same_answer_as_a_new_error() -> None:
    try:
        raise ClusterError("API server says: forbidden", status=403, reason="Forbidden", detail="forbidden")
    except ClusterError as e:
        refused = e
    again = refused.again()
    assert again is not refused and again.__traceback__ is None and type(again) is ClusterError
    assert (str(again), again.reason, again.detail, again.forbidden) == (str(refused), "Forbidden", "forbidden", True)
