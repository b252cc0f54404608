"""Cluster.read_ahead and record.read_ahead: a GET sent before its caller's code is ready, whose answer the next `get`
of that object takes once (the CLI's app record while the planning code imports, issue 33)."""

from __future__ import annotations

import asyncio

from kapply.app import record
from kapply.errors import ClusterError
from kapply.objects import Obj
from kapply.resources.cluster import Cluster

from .cluster_fakes import OFFLINE


class Counted(Cluster):
    """Answers every GET from `answers` by path (a missing path is a 404), counting the requests sent, each held
    until `sent` lets it through."""

    def __init__(self, answers: dict[str, Obj | ClusterError]) -> None:
        super().__init__(OFFLINE)
        self.answers = answers
        self.sent: list[str] = []

    async def _object(self, method: str, path: str, body: object = None, **_kw: object) -> Obj:
        assert method == "GET"
        self.sent.append(path)
        await asyncio.sleep(0)
        answer = self.answers.get(path)
        if answer is None:
            raise ClusterError(f"Request GET {path}: not found", status=404)
        if isinstance(answer, ClusterError):
            raise answer
        return answer


CM = "/api/v1/namespaces/ns/configmaps/"


def record_cm(name: str) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "ns", "resourceVersion": "7", "labels": {"kapp.k14s.io/app": "5"}},
        "data": {"spec": '{"labelKey":"kapp.k14s.io/app","labelValue":"5"}'},
    }


def test_a_find_after_the_read_ahead_takes_its_answers_and_sends_nothing_more() -> None:
    async def run() -> tuple[list[str], list[str], record.App | None, list[str]]:
        cluster = Counted({CM + "web": record_cm("web")})
        record.read_ahead(cluster, "ns", "web")
        sent_ahead = list(cluster.sent)  # sent only when the loop runs them
        await asyncio.sleep(0)
        found = await record.find(cluster, "ns", "web")
        after_find = list(cluster.sent)
        await record.find(cluster, "ns", "web")  # taken once: a second find asks again
        await cluster.close()
        return sent_ahead, after_find, found, cluster.sent

    sent_ahead, after_find, found, sent = asyncio.run(run())
    assert sent_ahead == []
    assert after_find == [CM + "web.apps.k14s.io", CM + "web"]
    assert found is not None and found.name == "web" and found.meta.label_value == "5"
    assert sent == after_find * 2


def test_an_error_read_ahead_is_the_finds_and_one_never_taken_is_dropped_at_close() -> None:
    refused = ClusterError("Request GET: forbidden", status=403)

    async def run() -> tuple[str, list[str]]:
        cluster = Counted({CM + "web.apps.k14s.io": refused})
        record.read_ahead(cluster, "ns", "web")
        try:
            await record.find(cluster, "ns", "web")
        except ClusterError as e:
            error = str(e)
        other = Counted({CM + "db": refused})
        record.read_ahead(other, "ns", "db")
        await asyncio.sleep(0.01)  # both answered (one with an error), nobody takes them
        await other.close()
        await cluster.close()
        return error, other.sent

    error, other_sent = asyncio.run(run())
    assert error == "Request GET: forbidden"
    assert other_sent == [CM + "db.apps.k14s.io", CM + "db"]


def test_a_labeled_app_or_a_name_that_is_no_path_sends_nothing() -> None:
    async def run() -> list[str]:
        cluster = Counted({})
        record.read_ahead(cluster, "ns", "label:tier=web")
        record.read_ahead(cluster, "ns", "a/b")
        await asyncio.sleep(0.01)
        await cluster.close()
        return cluster.sent

    assert asyncio.run(run()) == []
