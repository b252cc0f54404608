"""The delete stage: an App that goes takes its kapp app with it (kapply's delete, with the App's service account and
`deploy[].kapp.delete.rawOptions`), unless `noopDelete`.

The delete looks for the App's objects in the kinds its record names (as every deploy of it does), not in every
type the cluster serves as `kapp delete` does, and plans from the watch-fed cache (cache.py): the record and the
objects as the watches last saw them, each type and namespace read from memory only where the App's account was
allowed to list it. The run goes to the API server (a delete of an object already gone counts as done), and it checks
that nothing is left with a LIST of those kinds, so a cache that lagged fails the delete, which is tried again."""

from __future__ import annotations

from dataclasses import replace

from kapply.api import AsyncClient
from kapply.controller.cache import cached_reads
from kapply.controller.deploy import kapp_app_name, legacy_app_name
from kapply.controller.options import delete_from_spec
from kapply.controller.spec import AppSpec


async def delete(client: AsyncClient, name: str, namespace: str, spec: AppSpec) -> None:
    """Delete the App's kapp app; KapplyError when that fails."""
    options = replace(delete_from_spec(spec.deploy), used_kinds_only=True, prev_app=legacy_app_name(name))
    with cached_reads():
        plan = await client.plan_delete(kapp_app_name(name), namespace=namespace, options=options)
    if plan is not None:
        await client.run_delete(plan)
