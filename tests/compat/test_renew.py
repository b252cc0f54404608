"""`kapp.k14s.io/renew-duration`: nothing changes before the duration has passed; after it, the deploy stamps
`kapp.k14s.io/last-renewed-time` (an update), and the stamp is then carried over until the next renewal."""

from __future__ import annotations

import time

import pytest

from tests.compat.harness import Harness

pytestmark = pytest.mark.compat

RENEWED = """apiVersion: v1
kind: ConfigMap
metadata:
  name: r
  annotations: {kapp.k14s.io/renew-duration: "3s"}
data: {k: v}
"""


def test_a_renewable_resource_is_updated_once_its_duration_has_passed(both: Harness):
    deploy = ("deploy", "-a", "app", "-n", "{ns}", "-f", "-", "-y")
    for result in both.run(*deploy, input=RENEWED):
        assert result.code == 0, result.output
    created = time.monotonic()  # by then, by both tools
    both.same(both.run(*deploy, "--diff-run", "--diff-exit-status", input=RENEWED), exact=False)
    time.sleep(max(0.0, created + 3.5 - time.monotonic()))  # the 3 s duration passed, whatever the diff run took
    pair = both.run(*deploy, "-c", input=RENEWED)
    both.same(pair, exact=False)
    assert "kapp.k14s.io/last-renewed-time" in pair.kapply.stdout
    stamped = both.objects("kapply")["ConfigMap/r"]["metadata"]["annotations"]
    assert "kapp.k14s.io/last-renewed-time" in stamped
    again = both.run(*deploy, "--diff-run", "--diff-exit-status", input=RENEWED)
    both.same(again, exact=False)
    assert again.kapply.code == 2, again.kapply.output
    both.same_objects()
