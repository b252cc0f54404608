"""Masked values (`<-- value not shown (#N)`) keep their numbers for a whole deploy, as kapp's process-wide numbering:
the plan shown again, and the diff recalculated when an update meets a conflict, number a value as first shown, and a
value not shown before gets a number of its own."""

from __future__ import annotations

import asyncio
import re

import pytest

from kapply.apply.execute import Applier
from kapply.apply.options import ApplyOptions
from kapply.apply.planning import cluster_changes
from kapply.apply.progress import LoggedProgress
from kapply.apply.view import change_set_text
from kapply.config.config import Config
from kapply.config.rules import MaskCounter
from kapply.diff.change import calculate
from kapply.errors import ApplyError
from kapply.resources.cluster import Discovery
from tests.unit.conftest import BUILTIN_TYPES
from tests.unit.fake_cluster import FakeCluster

DISCOVERY = Discovery(BUILTIN_TYPES)


def secret(value: str, name: str = "s") -> dict:
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": "ns"}, "data": {"k": value}}


def numbers(text: str) -> list[str]:
    return re.findall(r"#\d+", text)


def test_a_copy_goes_on_from_the_numbers_given_without_changing_them():
    counter = MaskCounter()
    assert counter.number("a") == 1
    copy = counter.copy()
    assert copy.number("a") == 1 and copy.number("b") == 2
    assert counter.number("c") == 2  # the original did not see "b"


def test_one_counter_numbers_a_plan_alike_however_often_it_is_shown(config: Config):
    planned = cluster_changes([calculate(secret("djI="), secret("djE="), config)], config, True)
    counter = MaskCounter()
    first = "".join(str(h) for h in change_set_text(planned, config, counter=counter).hunks)
    again = "".join(str(h) for h in change_set_text(planned, config, counter=counter).hunks)
    assert numbers(first) == numbers(again) == ["#1", "#2"]
    recalculated = calculate(secret("djI="), secret("djM="), config)  # someone else wrote v3 meanwhile
    text = "".join(
        str(h) for h in change_set_text(cluster_changes([recalculated], config, True), config, counter=counter).hunks
    )
    assert numbers(text) == ["#3", "#2"]  # v3 was never shown: a number of its own; v2 keeps the plan's


def test_the_diff_of_a_conflict_numbers_values_as_the_plan_did(config: Config):
    fake = FakeCluster(DISCOVERY)
    secrets = DISCOVERY.find("v1", "Secret")
    assert secrets is not None
    live = asyncio.run(fake.create(secrets, secret("djE=")))
    change = calculate(secret("djI="), live, config)
    counter = MaskCounter()
    shown = "".join(
        str(h) for h in change_set_text(cluster_changes([change], config, True), config, counter=counter).hunks
    )
    assert numbers(shown) == ["#1", "#2"]
    asyncio.run(fake.update(secrets, {**live, "data": {"k": "djM="}}))  # someone else, after the plan
    applier = Applier(fake, DISCOVERY, config, ApplyOptions(), LoggedProgress(), counter)  # type: ignore[arg-type]
    with pytest.raises(ApplyError, match="approved diff no longer matches") as failed:
        asyncio.run(applier.apply_one(change))
    recalculated = str(failed.value).split("Recalculated diff:")[1]
    assert numbers(recalculated) == ["#3", "#2"]
