"""The pure parts of bench/dashboard_bench.py: the API server's open watches per resource, what the dashboard added,
the Apps' reconciled status, and the results' rendering. No cluster."""

from __future__ import annotations

from bench import dashboard_bench
from bench.dashboard_bench import added, reconciled_status, render, spread, watches

METRICS = """\
# TYPE apiserver_longrunning_requests gauge
apiserver_longrunning_requests{component="apiserver",group="kapply.dev",resource="apps",scope="cluster",\
subresource="",verb="WATCH",version="v1alpha1"} 2
apiserver_longrunning_requests{component="apiserver",group="",resource="pods",scope="namespace",subresource="log",\
verb="CONNECT",version="v1"} 1
apiserver_longrunning_requests{component="apiserver",group="",resource="configmaps",scope="cluster",subresource="",\
verb="WATCH",version="v1"} 3
apiserver_longrunning_requests{component="apiserver",group="",resource="configmaps",scope="namespace",subresource="",\
verb="WATCH",version="v1"} 1
apiserver_request_total{code="200",verb="LIST"} 9
"""


def test_watches_per_resource_and_what_the_dashboard_added() -> None:
    found = watches(METRICS)
    assert found == {"apps.kapply.dev": 2.0, "configmaps": 4.0}
    assert added({"apps.kapply.dev": 1.0, "configmaps": 4.0}, found) == {"apps.kapply.dev": 1.0}
    assert added(found, found) == {}


def test_a_reconciled_status_is_what_the_list_shows_as_succeeded() -> None:
    status = reconciled_status("a001", 3, "2026-12-05T07:00:00Z")
    assert status["conditions"][0]["type"] == "ReconcileSucceeded" and status["observedGeneration"] == 1
    assert status["deploy"]["stdout"].count("create configmap/a001-r") == 3


def test_render_says_whether_the_goal_is_met() -> None:
    timing = spread([0.4, 0.5, 0.9])
    assert timing == {"median": 0.5, "max": 0.9, "min": 0.4, "n": 3}
    results = {
        "url_s": 1.0,
        "complete_s": 1.5,
        "api_apps": timing,
        "api_apps_bytes": 100,
        "snapshot": timing,
        "page": None,
        "live": timing,
        "kinds": ["apps.kapply.dev"],
        "watches_added": {"apps.kapply.dev": 1.0},
        "watches_left": {},
    }
    doc = {"date": "d", "apps": 1000, "pages": 3, "machine": {"cores": 2, "cpu": "x"}, "results": results}
    text = render(doc)
    assert "**met** (slowest load 0.900 s)" in text and "| `apps.kapply.dev` | +1 |" in text
    assert "none (all were its own)" in text
    slow = {**doc, "results": {**results, "page": spread([2.5])}}
    assert "**NOT met**" in render(slow)
    assert dashboard_bench.GOAL_S == 2.0
