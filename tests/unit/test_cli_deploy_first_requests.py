"""A deploy's first requests (the cluster's nodes, discovery, the app's record) leave before the planning code is
imported, which imports on a thread meanwhile (issue 33, bench/why.md "Start-up, third pass"), and its failures stay
as they were: a bad --preflight fails before anything is sent, the plan's error is reported after the cluster's name,
and an early request's failure is retrieved, never left to asyncio's "Task exception was never retrieved".

Each case runs in a fresh interpreter: what is imported when is the point, and an exception never retrieved is only
reported when its task is collected, at the latest when the interpreter exits."""

from __future__ import annotations

import json
import subprocess
import sys

# `deploy_app` with a client that notes each request as it starts, and whether the planning code was imported then;
# discovery fails as a cluster that refuses connections does, and the plan fails with the error given in argv.
DEPLOY = """
import asyncio, json, sys
import kapply.cli.main
from kapply.cli.deploy import deploy_app
from kapply.errors import ClusterError, KapplyError

PLANNING = ("kapply.deploy", "kapply.ui.changes")
started = []

class Cluster:
    async def discovery(self):
        started.append(("discovery", [m for m in PLANNING if m in sys.modules]))
        raise ClusterError("Request GET /api failed: connection refused")

    def unnamed_target(self):
        return "Target cluster 'https://x'"

class Client:
    cluster = Cluster()

    async def target(self):
        started.append(("target", [m for m in PLANNING if m in sys.modules]))
        return "Target cluster 'https://x' (nodes: n)"

    async def prefetch_app(self, app, *, app_namespace=None):
        started.append(("record", [m for m in PLANNING if m in sys.modules]))

    async def plan_deploy(self, *args, **kwargs):
        started.append(("plan", [m for m in PLANNING if m in sys.modules]))
        await asyncio.sleep(0.01)  # the early discovery has failed by now; nothing here asks for its answer
        raise KapplyError("Parsing file 'a.yml': bad")

class Out:
    def line(self, text):
        print(text)

try:
    asyncio.run(deploy_app(Client(), None, Out(), "app", ["a.yml"], None, json.loads(sys.argv[1]), show_target=True))
except KapplyError as e:
    print(f"Error: {e}")
print(json.dumps(started))
"""


def deploy(flags: dict[str, str]) -> tuple[list[str], list[list[object]], str]:
    """What the deploy printed, the requests it started in order (with the planning modules imported by then), and
    what the interpreter wrote on stderr."""
    done = subprocess.run(
        [sys.executable, "-c", DEPLOY, json.dumps(flags)], capture_output=True, text=True, check=True, timeout=60
    )
    *lines, started = done.stdout.splitlines()
    return lines, json.loads(started), done.stderr


def test_the_first_requests_start_before_the_planning_code_is_imported_and_their_failure_is_retrieved() -> None:
    lines, started, stderr = deploy({})
    assert started == [
        ["record", []],
        ["target", []],
        ["discovery", []],
        ["plan", ["kapply.deploy", "kapply.ui.changes"]],
    ]
    assert lines == ["Target cluster 'https://x' (nodes: n)", "Error: Parsing file 'a.yml': bad"]
    assert stderr == ""  # no "Task exception was never retrieved" for the failed discovery


def test_a_preflight_kapp_refuses_fails_before_anything_is_sent() -> None:
    lines, started, stderr = deploy({"preflight": "Nope"})
    assert started == []
    assert lines == ['Error: invalid argument "Nope" for "--preflight" flag: unknown preflight check "Nope" specified']
    assert stderr == ""
