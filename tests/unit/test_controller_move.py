"""kapply.controller.move: the Packages' group taken by an APIService that does not answer."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from kapply.controller.move import taken_data_group
from kapply.controller.vocabulary import CARVEL, KAPPLY
from kapply.errors import ClusterError


class Answering:
    """A cluster whose every request fails with `status` (0: answers)."""

    def __init__(self, status: int) -> None:
        self.status = status
        self.paths: list[str] = []

    async def group_version(self, group: str, version: str) -> Any:
        self.paths.append(f"/apis/{group}/{version}")
        if self.status:
            raise ClusterError("refused", status=self.status)
        return {"kind": "APIResourceList"}


def taken(status: int, vocabulary: Any = CARVEL) -> tuple[str | None, list[str]]:
    cluster = Answering(status)
    return asyncio.run(taken_data_group(cluster, vocabulary)), cluster.paths  # type: ignore[arg-type]


def test_kapp_controller_s_apiservice_that_does_not_answer_is_named_with_what_to_do() -> None:
    message, paths = taken(503)
    assert paths == ["/apis/data.packaging.carvel.dev/v1alpha1"]
    assert message == (
        "data.packaging.carvel.dev/v1alpha1 is served by APIService v1alpha1.data.packaging.carvel.dev "
        "(kapp-controller's aggregated API, left by its install), which does not answer, not by the Package CRDs: "
        "Packages and PackageMetadatas cannot be read or written until it is deleted "
        "(kubectl delete apiservice v1alpha1.data.packaging.carvel.dev)"
    )


def test_in_kapply_mode_the_message_names_kapply_s_group_and_no_kapp_controller() -> None:
    message, _ = taken(503, KAPPLY)
    assert message is not None
    assert message.startswith("data.packaging.kapply.dev/v1alpha1 is served by APIService v1alpha1.data.packaging")
    assert "kapp-controller" not in message


@pytest.mark.parametrize("status", [0, 404, 403])
def test_a_group_that_answers_or_is_missing_says_nothing(status: int) -> None:
    assert taken(status)[0] is None
