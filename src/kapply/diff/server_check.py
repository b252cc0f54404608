"""Asking the API server whether an update found against the live object is real.

Diffing against the live object (no valid last-applied copy) reports every field the
server defaulted as a difference. A server-side dry run of the update returns the
object the server would store, defaults and admission mutations included; if it equals
the live object, nothing would change and the update is dropped. If it differs, the
diff shown is live vs. dry-run result: exactly what the update would change.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import replace

from kapply import objects
from kapply.config.config import Config
from kapply.config.rules import remove_fields
from kapply.diff.change import Change, Op
from kapply.diff.historyless import historyless
from kapply.errors import ClusterError
from kapply.objects import Obj
from kapply.resources.cluster import Cluster, Discovery
from kapply.resources.labeled import with_identity

# Written by the server on every write, dry run or not: never a difference the user made.
VOLATILE_METADATA = ("managedFields", "resourceVersion", "generation")


def _comparable(obj: Obj, config: Config) -> Obj:
    obj = remove_fields(historyless(obj), config.diff_against_existing_field_exclusion_rules)
    meta = {k: v for k, v in objects.metadata(obj).items() if k not in VOLATILE_METADATA}
    return {**obj, "metadata": meta}


async def check(cluster: Cluster, discovery: Discovery, change: Change, config: Config) -> Change:
    assert change.to_apply is not None and change.existing is not None
    rtype = discovery.find(change.to_apply["apiVersion"], change.to_apply["kind"])
    if rtype is None:
        return change
    try:
        dry = await cluster.update(rtype, with_identity(change.to_apply), dry_run=True)
    except ClusterError:
        return change  # the real update will report the error
    dry["apiVersion"], dry["kind"] = rtype.api_version, rtype.kind
    left, right = _comparable(change.existing, config), _comparable(dry, config)
    if left == right:
        return replace(change, op=Op.KEEP, left=left, right=right)
    return replace(change, left=left, right=right)


async def check_all(cluster: Cluster, discovery: Discovery, changes: Sequence[Change], config: Config) -> list[Change]:
    """The changes, with each update diffed against the live object confirmed or dropped by the server."""

    async def one(change: Change) -> Change:
        return await check(cluster, discovery, change, config) if change.needs_server_check else change

    return list(await asyncio.gather(*(one(c) for c in changes)))
