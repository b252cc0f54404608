"""A change as text: masked wherever a Secret's values could show."""

from __future__ import annotations

import base64
import json

from kapply.config.rules import MaskCounter
from kapply.diff.change import calculate
from kapply.diff.render import line_diffs, masked

PASSWORD = "s3cr3t-value"
ENCODED = base64.b64encode(PASSWORD.encode()).decode()


def secret(data: dict) -> dict:
    applied = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "db"}, "data": data}
    annotations = {
        "kubectl.kubernetes.io/last-applied-configuration": json.dumps(applied),
        "kapp.k14s.io/original": json.dumps(applied),
    }
    meta = {"name": "db", "namespace": "ns", "annotations": annotations, "managedFields": [{"f:data": {"f:pw": {}}}]}
    return {**applied, "metadata": meta}


def test_a_secret_shows_no_value_in_its_data_nor_in_the_copies_of_itself_it_carries(config):
    shown = json.dumps(masked(secret({"pw": ENCODED}), config, MaskCounter()))
    assert ENCODED not in shown and PASSWORD not in shown
    assert "<-- value not shown (#" in shown


def test_a_diff_of_an_adopted_secret_hides_every_value(config):
    live = secret({"pw": ENCODED})
    new = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "db", "namespace": "ns"}, "data": {"pw": "eA=="}}
    text = line_diffs([calculate(new, live, config, against_last_applied=False)], config)
    assert "last-applied-configuration" in text and ENCODED not in text and PASSWORD not in text


def test_objects_no_mask_rule_covers_are_shown_as_they_are(config):
    configmap = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"k": "visible"}}
    assert masked(configmap, config, MaskCounter()) is configmap
