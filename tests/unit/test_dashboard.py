"""kapply.dashboard's pure parts: the list's rows and filters, one App's page data (Secrets masked), the pages' shells,
and the server's checks (Host, token, Origin, CSRF)."""

from __future__ import annotations

import pytest

from kapply.controller.vocabulary import CARVEL, KAPPLY
from kapply.dashboard import pages, security, view
from kapply.dashboard.board import Board, Kind, object_key
from kapply.dashboard.server import parse_key


def app(name: str = "web", namespace: str = "prod", **extra: object) -> dict[str, object]:
    obj: dict[str, object] = {
        "apiVersion": "kapply.dev/v1alpha1",
        "kind": "App",
        "metadata": {"name": name, "namespace": namespace, "creationTimestamp": "2026-12-05T05:00:00Z"},
        "spec": {"driftPolicy": "warn"},
        "status": {
            "conditions": [{"type": "ReconcileSucceeded", "status": "True"}],
            "friendlyDescription": "Reconcile succeeded",
            "deploy": {"startedAt": "2026-12-05T06:59:30Z", "stdout": "Changes", "exitCode": 0},
            "drift": {"policy": "warn", "fields": [{"resource": "configmap/c (v1) namespace: prod", "path": "data.a"}]},
            "ghostDiffs": {
                "diffs": [
                    {"resource": "secret/s (v1) namespace: prod", "path": "data.p", "desired": "hunter2", "live": "x"}
                ],
                "suggestedConfig": "rebaseRules: []\n",
            },
        },
    }
    obj.update(extra)
    return obj


def test_a_row_has_the_state_times_policy_and_counts():
    row = view.row(app()).to_json()
    assert row["key"] == "App.kapply.dev/prod/web"
    assert (row["state"], row["lastDeploy"], row["created"], row["driftPolicy"]) == (
        "ReconcileSucceeded",
        "2026-12-05T06:59:30Z",
        "2026-12-05T05:00:00Z",
        "warn",
    )
    assert (row["drifted"], row["ghostDiffs"], row["paused"]) == (1, 1, False)


@pytest.mark.parametrize(
    ("spec", "status", "state"),
    [
        ({"paused": True}, {}, "Paused"),
        ({"canceled": True, "paused": True}, {}, "Canceled"),
        ({}, {}, "Unknown"),
        ({}, {"conditions": [{"type": "ReconcileFailed", "status": "True"}]}, "ReconcileFailed"),
        ({}, {"conditions": "garbage"}, "Unknown"),
    ],
)
def test_the_state(spec: dict[str, object], status: dict[str, object], state: str):
    assert view.state({"spec": spec, "status": status}) == state


def test_a_package_install_has_no_default_drift_policy_and_a_malformed_object_still_makes_a_row():
    row = view.row({"apiVersion": "packaging.carvel.dev/v1alpha1", "kind": "PackageInstall", "status": "x"})
    assert (row.drift_policy, row.group, row.last_deploy, row.state) == ("", "packaging.carvel.dev", "", "Unknown")


@pytest.mark.parametrize(
    ("query", "matches"),
    [
        ({}, True),
        ({"namespace": "prod"}, True),
        ({"namespace": "dev"}, False),
        ({"state": "ReconcileSucceeded"}, True),
        ({"state": "Paused"}, False),
        ({"label": "tier"}, True),
        ({"label": "tier=front"}, True),
        ({"label": "tier=back"}, False),
        ({"label": "team"}, False),
    ],
)
def test_filters(query: dict[str, str], matches: bool):
    obj = app()
    obj["metadata"] = {**obj["metadata"], "labels": {"tier": "front"}}  # type: ignore[dict-item]
    assert view.Filters.of(query).match(view.row(obj)) is matches


def test_the_detail_masks_a_secret_value_whatever_the_status_says():
    detail = view.detail(app())
    assert detail["ghostDiffs"][0]["desired"] == view.MASKED and detail["ghostDiffs"][0]["live"] == view.MASKED
    assert "hunter2" not in str(detail)
    assert detail["stages"]["deploy"]["stdout"] == "Changes"
    assert detail["suggestedConfig"] == "rebaseRules: []\n"


def test_events_newest_first():
    events = [
        {"reason": "A", "lastTimestamp": "2026-12-05T06:00:00Z"},
        {"reason": "B", "metadata": {"creationTimestamp": "2026-12-05T06:30:00Z"}},
    ]
    assert [e["reason"] for e in view.sorted_events(events)] == ["B", "A"]


def test_the_pages_load_only_their_own_script_and_carry_the_csrf_token():
    for page in (pages.list_page("tok", "c<s>rf"), pages.app_page("tok", "c<s>rf")):
        assert 'src="/tok/static/dashboard.js"' in page and "c&lt;s&gt;rf" in page
        assert "<script>" not in page and "style=" not in page and "http" not in page


@pytest.mark.parametrize(
    ("method", "headers", "path", "why"),
    [
        ("GET", {"Host": "127.0.0.1:8000"}, "/tok/", ""),
        ("GET", {"Host": "localhost:8000"}, "/tok/app", ""),
        ("GET", {"Host": "evil.example:8000"}, "/tok/", "wrong Host"),
        ("GET", {}, "/tok/", "wrong Host"),
        ("GET", {"Host": "127.0.0.1:8000"}, "/", "this page needs the URL kapply printed"),
        ("GET", {"Host": "127.0.0.1:8000"}, "/tok2/", "this page needs the URL kapply printed"),
        ("POST", {"Host": "127.0.0.1:8000", "Origin": "http://127.0.0.1:8000", "X-Kapply-CSRF": "c"}, "/tok/a", ""),
        ("POST", {"Host": "127.0.0.1:8000", "X-Kapply-CSRF": "c"}, "/tok/a", "not posted by this page"),
        (
            "POST",
            {"Host": "127.0.0.1:8000", "Origin": "null", "X-Kapply-CSRF": "c"},
            "/tok/a",
            "not posted by this page",
        ),
        (
            "POST",
            {
                "Host": "127.0.0.1:8000",
                "Origin": "http://127.0.0.1:8000",
                "X-Kapply-CSRF": "c",
                "Sec-Fetch-Site": "cross-site",
            },
            "/tok/a",
            "not posted by this page",
        ),
        (
            "POST",
            {"Host": "127.0.0.1:8000", "Origin": "http://127.0.0.1:8000"},
            "/tok/a",
            "missing or wrong CSRF token",
        ),
        (
            "POST",
            {"Host": "127.0.0.1:8000", "Origin": "http://127.0.0.1:8000", "X-Kapply-CSRF": "d"},
            "/tok/a",
            "missing or wrong CSRF token",
        ),
    ],
)
def test_the_server_checks(method: str, headers: dict[str, str], path: str, why: str):
    assert security.refusal(method, headers, path, 8000, "tok", "c") == why


def test_keys():
    assert parse_key("App.kapply.dev/prod/web") == (KAPPLY.app, "prod", "web")
    assert parse_key("PackageInstall.packaging.carvel.dev/ns/p") == (CARVEL.install, "ns", "p")
    for bad in ("App.example.com/prod/web", "App.kapply.dev/prod", "App.kapply.dev//web", "App.kapply.dev/a/b/c", ""):
        assert parse_key(bad) is None


def test_the_board_tells_its_pages_and_forgets_what_a_list_no_longer_has():
    board = Board()
    queue = board.subscribe()
    kind = Kind(KAPPLY.app)
    board.event("ADDED", app("a"))
    board.event("ADDED", app("b", namespace="dev"))
    board.relisted(kind, "prod", [])  # a namespace's list: only that namespace's objects go
    assert list(board.objects) == [object_key(app("b", namespace="dev"))]
    board.event("DELETED", app("b", namespace="dev"))
    board.hide(kind, "apps.kapply.dev outside namespace x are hidden")
    board.hide(kind, "apps.kapply.dev outside namespace x are hidden")  # the same: not told again
    told = [queue.get_nowait() for _ in range(queue.qsize())]
    assert told == [
        "App.kapply.dev/prod/a",
        "App.kapply.dev/dev/b",
        "App.kapply.dev/prod/a",
        "App.kapply.dev/dev/b",
        "",
    ]
    board.unsubscribe(queue)
    board.event("ADDED", app("c"))
    assert queue.empty()


def test_the_packages_pages_rows():
    repository = {
        "metadata": {"namespace": "ns", "name": "repo"},
        "spec": {"fetch": {"imgpkgBundle": {"image": "registry.example/repo:1"}}},
        "status": {"conditions": [{"type": "ReconcileSucceeded", "status": "True"}], "friendlyDescription": "ok"},
    }
    assert view.repository_json(repository) == {
        "namespace": "ns",
        "name": "repo",
        "source": "registry.example/repo:1",
        "state": "ReconcileSucceeded",
        "description": "ok",
    }
    assert view.repository_json({"spec": {"fetch": {"inline": {}}}})["source"] == "inline"
    assert view.package_json(
        {"metadata": {"namespace": "ns"}, "spec": {"refName": "a.example", "version": "1.0.0"}}
    ) == {
        "namespace": "ns",
        "refName": "a.example",
        "version": "1.0.0",
    }
    install = {
        "apiVersion": "packaging.kapply.dev/v1alpha1",
        "kind": "PackageInstall",
        "metadata": {"namespace": "ns", "name": "a"},
        "spec": {"paused": True, "packageRef": {"refName": "a.example", "versionSelection": {"constraints": ">=1"}}},
        "status": {"version": "1.0.0", "lastAttemptedVersion": "1.1.0"},
    }
    assert view.install_json(install) == {
        "key": "PackageInstall.packaging.kapply.dev/ns/a",
        "namespace": "ns",
        "name": "a",
        "package": "a.example",
        "constraints": ">=1",
        "version": "1.0.0",
        "lastAttemptedVersion": "1.1.0",
        "state": "Paused",
    }
