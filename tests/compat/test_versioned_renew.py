"""`kapp.k14s.io/renew-duration` on a versioned resource: once the duration has passed, the renewal is a change like
any other of a versioned resource, so it creates the next version (`-ver-2`), stamped with
`kapp.k14s.io/last-renewed-time`, and leaves `-ver-1` as it was (kapp's `RenewableResources` runs before versioning)."""

from __future__ import annotations

import time

import pytest

from tests.compat.harness import Harness

pytestmark = pytest.mark.compat

RENEWED = """apiVersion: v1
kind: ConfigMap
metadata:
  name: simple-cm2
  annotations:
    kapp.k14s.io/versioned: ""
    kapp.k14s.io/renew-duration: 4s
data:
  hello_msg: carvel
"""


def test_a_renewal_of_a_versioned_resource_creates_the_next_version(both: Harness):
    deploy = ("deploy", "-a", "renew", "-n", "{ns}", "-f", "-")
    for result in both.run(*deploy, "-y", input=RENEWED):
        assert result.code == 0, result.output
    created = time.monotonic()  # by then, by both tools
    early = both.run(*deploy, "--diff-run", "--diff-exit-status", input=RENEWED)
    both.same(early, exact=False)
    assert early.kapply.code == 2, early.kapply.output
    time.sleep(max(0.0, created + 4.5 - time.monotonic()))  # the 4 s duration passed, whatever the early diff took
    due = both.run(*deploy, "--diff-run", "--diff-exit-status", "-c", input=RENEWED)
    both.same(due, exact=False)
    assert due.kapply.code == 3, due.kapply.output
    assert "@@ create configmap/simple-cm2-ver-2 (v1)" in due.kapply.stdout
    assert "Op:      1 create, 0 delete, 0 update, 0 noop, 0 exists" in due.kapply.stdout
    applied = both.run(*deploy, "-y", input=RENEWED)
    both.same(applied, exact=False)
    objs = both.objects("kapply")
    assert "kapp.k14s.io/last-renewed-time" in objs["ConfigMap/simple-cm2-ver-2"]["metadata"]["annotations"]
    assert "kapp.k14s.io/last-renewed-time" not in objs["ConfigMap/simple-cm2-ver-1"]["metadata"]["annotations"]
    again = both.run(*deploy, "--diff-run", "--diff-exit-status", input=RENEWED)
    both.same(again, exact=False)
    assert again.kapply.code == 2, again.kapply.output
    both.same_objects()
