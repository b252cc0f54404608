"""The deploy pipeline: files -> resources -> changes -> apply -> history.

`plan` reads and prepares the desired resources, finds what the app has on the
cluster and calculates the changes; it writes nothing, so bad input leaves the
cluster untouched. `run` stores the app's record (new apps get one even when
nothing changes, as with kapp), applies the plan and records it as an
app-change. The CLI shows the plan between the two and asks for confirmation.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TextIO

import yaml

from kapply.app import history, record
from kapply.app.meta import APP_LABEL_KEY, AppMeta
from kapply.app.preparation import Placement, prepare
from kapply.apply.execute import ApplyOptions
from kapply.apply.loop import ApplyLoop, ClusterChange, WaitOptions, cluster_changes, order
from kapply.config.config import Config, merge, parse_config
from kapply.config.default import default_config
from kapply.config.rules import MaskCounter
from kapply.diff import server_check, versioned
from kapply.diff.change import EXISTS_ANNOTATION, NOOP_ANNOTATION, calculate
from kapply.errors import ConfigError, KapplyError, ManifestError, OwnershipError
from kapply.graph import ChangeGraph
from kapply.resources import manifests
from kapply.resources.cluster import Cluster, Discovery
from kapply.resources.identity import api_group, describe, key_of
from kapply.resources.labeled import get_each, is_transient, list_labeled, types_in_scope
from kapply.ui.changes import all_line_diffs, description
from kapply.ui.messages import Progress

CONFIG_API_VERSION = "kapp.k14s.io/v1alpha1"
CONFIG_LABEL = "kapp.k14s.io/config"


@dataclass(frozen=True, slots=True)
class DeployOptions:
    app: str
    files: tuple[str, ...]
    app_namespace: str
    placement: Placement
    app_labels: dict[str, str] = field(default_factory=dict)
    against_last_applied: bool = True
    server_side_check: bool = True
    override_ownership: bool = False
    allow_empty: bool = False
    default_label_scoping: bool = True
    app_changes_max_to_keep: int = 200
    apply: ApplyOptions = field(default_factory=ApplyOptions)
    wait: WaitOptions = field(default_factory=WaitOptions)


@dataclass(frozen=True)
class Plan:
    app: record.App
    config: Config
    discovery: Discovery
    changes: tuple[ClusterChange, ...]  # those that apply or wait on something
    graph: ChangeGraph
    namespaces: tuple[str, ...]
    used: frozenset[tuple[str, str, str]]  # (group, version, kind) of new and existing resources
    new_used: frozenset[tuple[str, str, str]]



def _split_configs(docs: Sequence[manifests.Document]) -> tuple[list[manifests.Document], list[Config]]:
    resources, configs = [], []
    for doc in docs:
        if doc.obj.get("apiVersion") == CONFIG_API_VERSION:
            configs.append(parse_config(doc.obj, doc.origin))
            continue
        labels = (doc.obj.get("metadata") or {}).get("labels") or {}
        if doc.obj.get("apiVersion") == "v1" and doc.obj.get("kind") == "ConfigMap" and CONFIG_LABEL in labels:
            text = (doc.obj.get("data") or {}).get("config.yml", "")
            try:
                configs.append(parse_config(yaml.safe_load(text) or {}, f"{doc.origin} data 'config.yml'"))
            except yaml.YAMLError as e:
                raise ConfigError(f"Parsing {doc.origin} data 'config.yml': {e}") from e
        resources.append(doc)
    return resources, configs


def _annotated(res: dict, key: str) -> bool:
    return key in ((res.get("metadata") or {}).get("annotations") or {})


def _check_ownership(found: Sequence[dict], new_by_key: dict, app: record.App) -> None:
    errors = []
    for obj in found:
        labels = (obj.get("metadata") or {}).get("labels") or {}
        owner = labels.get(APP_LABEL_KEY)
        new = new_by_key[key_of(obj)]
        if owner and owner != app.meta.label_value and not (
                _annotated(new, EXISTS_ANNOTATION) or _annotated(new, NOOP_ANNOTATION)):
            errors.append(f"- Resource '{describe(obj)}' is already associated with a different app "
                          f"(label '{APP_LABEL_KEY}={owner}')")
    if errors:
        raise OwnershipError("Ownership errors:\n" + "\n".join(errors) +
                             "\n(hint: --dangerous-override-ownership-of-existing-resources takes them over)")


def _gvk(obj: dict) -> tuple[str, str, str]:
    api_version = obj["apiVersion"]
    return api_group(api_version), api_version.rpartition("/")[2], obj["kind"]


async def plan(cluster: Cluster, options: DeployOptions, stdin: TextIO | None = None) -> Plan:
    docs, user_configs = _split_configs(manifests.read(options.files, stdin))
    config = merge([default_config(), *user_configs])
    app, discovery = await asyncio.gather(record.find_or_new(cluster, options.app_namespace, options.app),
                                          cluster.discovery())
    is_new = not app.stored
    prepared = prepare(docs, discovery, config, options.placement,
                                       {app.meta.label_key: app.meta.label_value},
                                       default_label_scoping=options.default_label_scoping)
    if not prepared and not options.allow_empty:
        raise ManifestError("Trying to apply empty set of resources will result in deletion of resources on cluster. "
                            "Refusing to continue unless --dangerous-allow-empty-list-of-resources is specified.")
    labeled: list[dict] = []
    if not is_new:
        new_gks = {(api_group(p.obj["apiVersion"]), p.obj["kind"]) for p in prepared}
        scope = None if app.meta.used_gks is None else set(app.meta.used_gks) | new_gks
        labeled = await list_labeled(cluster, types_in_scope(discovery, scope), app.meta.label_selector)
    resolved = versioned.resolve(prepared, labeled, config)
    new_by_key = {key_of(d.obj): d.obj for d in resolved.desired}
    origins = {key_of(d.obj): d.origin for d in resolved.desired}

    existing_by_key = {key_of(obj): obj for obj in labeled}
    unlabeled = await get_each(cluster, discovery, [r for k, r in new_by_key.items() if k not in existing_by_key])
    if not options.override_ownership:
        _check_ownership(unlabeled, new_by_key, app)
    existing_by_key.update((key_of(obj), obj) for obj in unlabeled)

    changes = [calculate(new, existing_by_key.get(key), config, origin=origins[key],
                         against_last_applied=options.against_last_applied) for key, new in new_by_key.items()]
    changes = [versioned.against_previous(c, resolved.previous[c.key], config) if c.key in resolved.previous else c
               for c in changes]
    changes += [calculate(None, obj, config) for key, obj in existing_by_key.items()
                if key not in new_by_key and key not in resolved.keep and not is_transient(obj)]
    if options.server_side_check:
        changes = await server_check.check_all(cluster, discovery, changes, config)

    namespaces = sorted({r["metadata"].get("namespace") or "(cluster)" for r in new_by_key.values()})
    new_used = frozenset(_gvk(r) for r in new_by_key.values())
    used = new_used | {_gvk(obj) for obj in existing_by_key.values() if not is_transient(obj)}
    planned = tuple(cluster_changes(changes, config, options.wait.wait))
    return Plan(app, config, discovery, planned, order(planned, config), tuple(namespaces), used, new_used)


def _used_meta(meta: AppMeta, used: frozenset[tuple[str, str, str]]) -> AppMeta:
    return meta.with_used({(g, v) for g, v, _ in used}, {(g, k) for g, _, k in used})


async def run(cluster: Cluster, plan: Plan, options: DeployOptions, progress: Progress) -> int:
    """Apply the plan and record it; returns the number of old app-changes garbage-collected."""
    app = await record.store(cluster, plan.app, options.app_labels)
    if not plan.changes:
        return 0
    app = await record.save_meta(cluster, app, _used_meta(app.meta, plan.used))
    stored_diff = all_line_diffs(plan.changes, plan.config, MaskCounter())
    app, change_name = await history.begin(cluster, app, description(plan.changes), list(plan.namespaces),
                                           stored_diff, record=options.app_changes_max_to_keep > 0)
    try:
        await ApplyLoop(cluster, plan.discovery, plan.config, app.meta.label_selector, options.apply, options.wait,
                        progress).run(plan.changes, plan.graph)
    except (KapplyError, OSError):
        await history.finish(cluster, app, change_name, successful=False)
        raise
    app = await history.finish(cluster, app, change_name, successful=True)
    await record.save_meta(cluster, app, _used_meta(app.meta, plan.new_used))
    if options.app_changes_max_to_keep > 0:
        return await history.gc(cluster, app, options.app_changes_max_to_keep)
    return 0

