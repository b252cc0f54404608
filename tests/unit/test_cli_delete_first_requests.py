"""A delete's first requests (the cluster's nodes, discovery, the app's record) leave before its planning code
(kapply.delete) is imported, which imports on a thread meanwhile, as a deploy's do (issue 33,
tests/unit/test_cli_deploy_first_requests.py), and its failures stay as they were: a bad flag is refused (now after the
cluster was named, as a deploy's), and an early request's failure is retrieved, never left to asyncio's "Task
exception was never retrieved". Each case runs in a fresh interpreter: what is imported when is the point."""

from __future__ import annotations

import json
import subprocess
import sys

# `delete_app` with the command line in argv and a client that notes each request as it starts, and whether
# kapply.delete was imported then; discovery fails as a cluster that refuses connections does, and so does the plan.
DELETE = """
import asyncio, json, sys
from kapply.cli.command import resolve
from kapply.cli.delete import delete_app
from kapply.cli.tree import global_flags, tree
from kapply.errors import ClusterError, KapplyError

started = []

def note(what):
    started.append((what, "kapply.delete" in sys.modules))

class Cluster:
    async def discovery(self):
        note("discovery")
        raise ClusterError("Request GET /api failed: connection refused")

    def unnamed_target(self):
        return "Target cluster 'https://x'"

class Client:
    cluster = Cluster()

    async def target(self):
        note("target")
        return "Target cluster 'https://x' (nodes: n)"

    async def prefetch_app(self, app, *, app_namespace=None):
        note(f"record {app_namespace}/{app}")

    async def plan_delete(self, app, *, namespace, options):
        note("plan")
        await asyncio.sleep(0.01)  # the early discovery has failed by now; nothing here asks for its answer
        raise KapplyError("Listing: refused")

class Out:
    def line(self, text):
        print(text)

args = resolve(tree(), ["delete", "-a", "app", *sys.argv[1:]], global_flags(), "kapply")
try:
    asyncio.run(delete_app(Client(), args, Out(), "app", "ns", show_target=True))
except KapplyError as e:
    print(f"Error: {e}")
print(json.dumps(started))
"""


def delete(*argv: str) -> tuple[list[str], list[list[object]], str]:
    """What the delete printed, the requests it started in order (with whether kapply.delete was imported by then),
    and what the interpreter wrote on stderr."""
    done = subprocess.run([sys.executable, "-c", DELETE, *argv], capture_output=True, text=True, check=True, timeout=60)
    *lines, started = done.stdout.splitlines()
    return lines, json.loads(started), done.stderr


def test_the_first_requests_start_before_the_planning_code_is_imported_and_their_failure_is_retrieved() -> None:
    lines, started, stderr = delete()
    assert started == [["record ns/app", False], ["target", False], ["discovery", False], ["plan", True]]
    assert lines == ["Target cluster 'https://x' (nodes: n)", "Error: Listing: refused"]
    assert stderr == ""  # no "Task exception was never retrieved" for the failed discovery


def test_a_bad_filter_is_refused_before_the_plan_after_the_cluster_was_named() -> None:
    lines, started, stderr = delete("--filter-age", "1d")
    assert [what for what, _ in started] == ["record ns/app", "target", "discovery"]
    assert lines[0] == "Target cluster 'https://x' (nodes: n)"
    assert lines[1].startswith("Error: Expected age filter")
    assert stderr == ""
