"""The app ConfigMap: `<app>` (or `<app>.apps.k14s.io`) in the app namespace, labeled
`kapp.k14s.io/is-app`, holding AppMeta in `data.spec`."""

from __future__ import annotations

import asyncio
import copy
import os
import re
import time
import weakref
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, replace

from kapply import objects
from kapply.app.meta import AppMeta
from kapply.errors import AppNotFoundError, ClusterError, KapplyError
from kapply.objects import Obj
from kapply.resources.api_services import check_required, group_version
from kapply.resources.cluster import Cluster, ResourceType
from kapply.resources.filters import FilterError, Operator, parse_selector
from kapply.resources.labeled import (
    at_written_versions,
    equality_selector,
    is_label_key,
    is_label_value,
    list_labeled,
    types_in_scope,
)

CONFIGMAPS = ResourceType(
    "",
    "v1",
    "ConfigMap",
    "configmaps",
    True,
    frozenset({"create", "delete", "get", "list", "patch", "update", "watch"}),
)
FQ_SUFFIX = ".apps.k14s.io"


@dataclass(frozen=True, slots=True)
class App:
    name: str
    namespace: str
    configmap_name: str
    meta: AppMeta
    uses_app_label_for_changes: bool = True
    stored: bool = True  # False for a new app until its first deploy applies something
    selector: str | None = None  # a labeled app's label selector (kapp's `-a label:...`): it has no record
    holder: str = ""  # the hold this process has on the record while it runs (kapply.app.lock), else ""

    @property
    def labeled(self) -> bool:
        """A labeled app (`-a label:tier=web`): the resources a label selector finds, with no record or history."""
        return self.selector is not None

    @property
    def label_selector(self) -> str:
        """What finds the app's resources: its label (`kapp.k14s.io/app=<value>`), or a labeled app's selector."""
        return equality_selector(self.meta.label_key, self.meta.label_value) if self.selector is None else self.selector

    def describe(self) -> str:
        if self.labeled:
            return f"labeled app '{self.name}'"
        return f"App '{self.name}' (namespace: {self.namespace})"


_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


def validate_name(name: str) -> None:
    """An app's name names its ConfigMap, so it must be a DNS subdomain."""
    plain = plain_name(name)
    if not plain or len(plain + FQ_SUFFIX) > 253 or not _DNS_SUBDOMAIN.match(plain):
        raise KapplyError(
            f"App name '{name}' is not valid: it must consist of lower case alphanumeric characters, "
            "'-' or '.', and must start and end with an alphanumeric character"
        )


def fq_names() -> bool:
    """kapp's KAPP_FQ_CONFIGMAP_NAMES: new app records are named `<app>.apps.k14s.io` (any case of `true`)."""
    return os.environ.get("KAPP_FQ_CONFIGMAP_NAMES", "").lower() == "true"


def plain_name(name: str) -> str:
    return name.removesuffix(FQ_SUFFIX)


def _from_configmap(name: str, cm: Obj) -> App:
    meta = cm["metadata"]
    try:
        app_meta = AppMeta.from_json((cm.get("data") or {})["spec"])
        _check_label(app_meta)
    except (KeyError, ValueError, TypeError) as e:
        raise KapplyError(
            f"App '{name}' (namespace: {meta['namespace']}) backed by ConfigMap '{meta['name']}' did "
            f"not contain parseable app metadata: {e} "
            "(hint: ConfigMap was overriden by another user?)"
        ) from e
    annotations = meta.get("annotations") or {}
    return App(name, meta["namespace"], meta["name"], app_meta, objects.APP_CHANGES_USE_APP_LABEL in annotations)


def _check_label(meta: AppMeta) -> None:
    """The record's label must be one label requirement: its key and value go into every label selector of the app
    (a key `app!` would turn `app!=x` into the selector of everything else)."""
    if not is_label_key(meta.label_key):
        raise ValueError(f"'labelKey' {meta.label_key!r} is not a label key")
    if not is_label_value(meta.label_value):
        raise ValueError(f"'labelValue' {meta.label_value!r} is not a label value")


LABEL_PREFIX = "label:"


def labeled(name: str) -> App | None:
    """The labeled app `-a label:<selector>` names (kapp's LabeledApp), or None for an app name. Its name is the
    selector as Kubernetes prints it (requirements sorted by key; `?` when empty)."""
    if not name.startswith(LABEL_PREFIX):
        return None
    text = name[len(LABEL_PREFIX) :]
    try:
        selector = parse_selector(text)
    except FilterError as e:
        detail = str(e).removeprefix(f"Parsing label selector '{text}': ")
        raise KapplyError(f"Parsing app name (or label selector): {detail}") from None
    canonical = selector.canonical()
    key, value = "", ""
    if len(selector.requirements) == 1 and selector.requirements[0].operator is Operator.EQUALS:
        key, value = selector.requirements[0].key, selector.requirements[0].values[0]
    return App(canonical or "?", "", "", AppMeta(key, value, used_gks=None), selector=canonical)


def ownership_label(app: App) -> tuple[str, str]:
    """The label a deploy puts on the app's resources, (key, value); for a labeled app its selector's one `k=v`
    (kapp's errors otherwise)."""
    if app.labeled:
        requirements = parse_selector(app.label_selector).requirements
        if len(requirements) != 1:
            raise KapplyError("Expected label selector to have one label KV")
        if requirements[0].operator is not Operator.EQUALS:
            raise KapplyError("Expected label selector to check for equality")
    return app.meta.label_key, app.meta.label_value


def read_ahead(cluster: Cluster, namespace: str, name: str) -> None:
    """Sends `find`'s reads of the app's record now; a `find` soon after takes their answers (`Cluster.read_ahead`).
    A labeled app has no record to read."""
    if labeled(name) is None:
        for cm_name in _names(plain_name(name)):
            cluster.read_ahead(CONFIGMAPS, namespace, cm_name)


def _names(name: str) -> tuple[str, str]:
    """The names the record of app `name` may have, in the order kapp looks them up: the migrated one first."""
    return (name + FQ_SUFFIX, name)


async def find(cluster: Cluster, namespace: str, name: str) -> App | None:
    """The app's record (`<name>.apps.k14s.io` first, then `<name>`), None when there is none; a labeled app
    (`label:<selector>`) always exists."""
    found = labeled(name)
    if found is not None:
        return found
    name = plain_name(name)
    # Both names asked at once (one round trip, issue 33), then taken in kapp's order: the migrated name first, an
    # error of a name only when every name before it was absent.
    answers = await asyncio.gather(
        *(cluster.get(CONFIGMAPS, namespace, cm_name) for cm_name in _names(name)),
        return_exceptions=True,
    )
    for answer in answers:
        if isinstance(answer, BaseException):
            raise answer
        if answer is not None:
            found = _from_configmap(name, answer)
            remember_written(cluster, answer)  # a deploy's or delete's first write of it starts from this read
            return found
    return None


async def require(cluster: Cluster, namespace: str, name: str) -> App:
    found = await find(cluster, namespace, name)
    if found is None:
        raise AppNotFoundError(f"{missing(namespace, name)}: {await elsewhere(cluster, name)}")
    return found


def missing(namespace: str, name: str) -> str:
    return f"App '{plain_name(name)}' (namespace: {namespace}) does not exist"


def partly(namespace: str, name: str) -> str:
    """kapp's note when delete filters leave some of an app's resources out (the app is kept)."""
    return (
        f"App '{plain_name(name)}' (namespace: {namespace}) will not be fully deleted because some resources are "
        "excluded by filters"
    )


async def elsewhere(cluster: Cluster, name: str) -> str:
    """kapp's hint when an app is not found: ` (hint: found app 'x' in other namespaces: a, b, c, ...)`, or "" (also
    when the user may not list apps in all namespaces)."""
    try:
        apps = await list_apps(cluster, None)
    except ClusterError:
        return ""
    namespaces = [app.namespace for app in apps if app.name == plain_name(name)]
    if not namespaces:
        return ""
    more = ", ..." if len(namespaces) > 3 else ""
    return f" (hint: found app '{plain_name(name)}' in other namespaces: {', '.join(namespaces[:3])}{more})"


async def find_or_new(cluster: Cluster, namespace: str, name: str) -> App:
    """The app's record, or a new one held in memory (stored=False) until `store` writes it."""
    app, _ = await find_or_rename(cluster, namespace, name)
    return app


async def find_or_rename(cluster: Cluster, namespace: str, name: str, previous: str = "") -> tuple[App, App | None]:
    """The app's record; else, when `previous` names an app of the namespace (kapp's `--prev-app`), that app under
    the new name, and its record (second), which the deploy renames when it runs; else a new app held in memory
    (stored=False) until the deploy writes it. A labeled app is itself."""
    found = labeled(name)
    if found is not None:
        return found, None
    validate_name(name)
    name = plain_name(name)
    existing = await find(cluster, namespace, name)
    if existing is not None:
        return existing, None
    if previous:
        prior = await find(cluster, namespace, previous)
        if prior is not None and not prior.labeled:
            fully_qualified = prior.configmap_name.endswith(FQ_SUFFIX) or fq_names()
            cm_name = name + FQ_SUFFIX if fully_qualified else name
            return replace(prior, name=name, configmap_name=cm_name), prior
    cm_name = name + FQ_SUFFIX if fq_names() else name
    return App(name, namespace, cm_name, AppMeta(objects.APP_LABEL, str(time.time_ns())), stored=False), None


async def check_creatable(cluster: Cluster, app: App, labels: Mapping[str, str]) -> None:
    """Fail now, as kapp does before it plans, when the record of a new app could not be created (its namespace does
    not exist, say): a dry run of the create, with the server's own message."""
    try:
        await cluster.create(CONFIGMAPS, new_record(app, labels, {}), dry_run=True)
    except ClusterError as e:
        if not e.conflict:  # created meanwhile: taking the hold will say so
            raise KapplyError(e.detail) from e


def new_record(app: App, labels: Mapping[str, str], annotations: Mapping[str, str]) -> Obj:
    """The ConfigMap that records a new app, as kapp writes it."""
    all_annotations = {objects.APP_CHANGES_USE_APP_LABEL: "", **annotations}
    if app.configmap_name.endswith(FQ_SUFFIX):
        all_annotations[objects.IS_CONFIGMAP_MIGRATED] = ""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": app.configmap_name,
            "namespace": app.namespace,
            "labels": {objects.IS_APP_LABEL: "", **labels},
            "annotations": all_annotations,
        },
        "data": {"spec": app.meta.to_json().decode()},
    }


def merge_labels(cm: Obj, labels: Mapping[str, str]) -> None:
    """Add `--labels` to the record; a label may not change value (kapp's rule)."""
    current = cm["metadata"].setdefault("labels", {})
    for key, value in labels.items():
        if key in current and current[key] != value:
            raise KapplyError(f"Expected label '{key}' value to remain same")
    current.update(labels)


# Per connection (so per event loop: an asyncio.Lock must not outlive its loop, and a connection's id may be reused
# by a later one), per record.
_writers: weakref.WeakKeyDictionary[Cluster, dict[tuple[str, str], asyncio.Lock]] = weakref.WeakKeyDictionary()


# Per connection, per record: the record as this process last wrote (or created) it, which the next update starts
# from instead of reading it again (issue 33: one round trip less per write); its resourceVersion makes the write
# fail with a conflict if anyone wrote in between, and the update then reads the record and changes it again.
_written: weakref.WeakKeyDictionary[Cluster, dict[tuple[str, str], Obj]] = weakref.WeakKeyDictionary()


# The record deleted by this process (in `_written`): nothing is left to update.
_DELETED: Obj = {}


def remember_written(cluster: Cluster, cm: Obj) -> None:
    """Keep the record as the server answered a write (or a read) of it (see `_written`)."""
    meta = cm["metadata"]
    _written.setdefault(cluster, {})[(meta["namespace"], meta["name"])] = copy.deepcopy(cm)


def last_written(cluster: Cluster, app: App) -> Obj | None:
    """The record as this process last wrote it, `{}` when this process deleted it, None when it does not know."""
    return _written.get(cluster, {}).get((app.namespace, app.configmap_name))


async def update_record(cluster: Cluster, app: App, change: Callable[[Obj], None]) -> Obj:
    """Read the app ConfigMap (or take it as this process last wrote it), `change` it and write it back with its
    resourceVersion; on a conflict (another writer in between), read and change it again. Writes of one process to
    one record are serialised, so that a lock's heartbeat and the deploy's own updates do not conflict with each
    other."""
    key = (app.namespace, app.configmap_name)
    writer = _writers.setdefault(cluster, {}).setdefault(key, asyncio.Lock())
    async with writer:
        last = _written.get(cluster, {}).pop(key, None) or None  # deleted here (`_DELETED`): read it again
        for _ in range(10):
            remembered = last is not None
            cm = copy.deepcopy(last) if last is not None else await cluster.get(CONFIGMAPS, *key)
            last = None
            if cm is None:
                raise AppNotFoundError(f"{app.describe()} does not exist")
            change(cm)
            try:
                written = await cluster.update(CONFIGMAPS, cm)
            except ClusterError as e:
                if not (e.conflict or (remembered and e.not_found)):  # not found: deleted since, as a read says
                    raise
                continue
            remember_written(cluster, written)
            return written
        raise KapplyError(f"Updating the record of {app.describe()}: it kept changing (tried 10 times)")


async def save_meta(cluster: Cluster, app: App, meta: AppMeta, also: Callable[[Obj], None] | None = None) -> App:
    """Write meta into the app ConfigMap (GET then PUT, as kapp does; the GET only when this process does not know
    the record as last written), with `also`'s change of it in the same write (the hold's release)."""
    app = replace(app, meta=meta)
    if app.stored:

        def write(cm: Obj) -> None:
            cm.setdefault("data", {})["spec"] = meta.to_json().decode()
            if also is not None:
                also(cm)

        await update_record(cluster, app, write)
    return app


async def list_apps(cluster: Cluster, namespace: str | None, labels: Mapping[str, str] | None = None) -> list[App]:
    """The apps of `namespace` (None: all), only those whose record carries `labels` when given."""
    selector = ",".join([objects.IS_APP_LABEL, *(f"{k}={v}" for k, v in (labels or {}).items())])
    cms = await cluster.list(CONFIGMAPS, label_selector=selector, namespace=namespace)
    return [_from_configmap(plain_name(cm["metadata"]["name"]), cm) for cm in cms]


async def owners(cluster: Cluster, namespace: str, label_key: str, values: Collection[str]) -> dict[str, str]:
    """The apps of `namespace` whose label is `label_key=<one of values>`, as kapp names them in ownership errors
    (`app 'web' namespace: prod`), by label value. Records that cannot be listed or read are skipped, as kapp does."""
    if not values:
        return {}
    try:
        cms = await cluster.list(CONFIGMAPS, label_selector=objects.IS_APP_LABEL, namespace=namespace)
    except ClusterError:
        return {}
    out: dict[str, str] = {}
    for cm in cms:
        name = plain_name(cm["metadata"]["name"])
        try:
            meta = _from_configmap(name, cm).meta
        except KapplyError:
            continue
        if meta.label_key == label_key and meta.label_value in values:
            out.setdefault(meta.label_value, f"app '{name}' namespace: {cm['metadata']['namespace']}")
    return out


async def delete(cluster: Cluster, app: App) -> None:
    written = _written.setdefault(cluster, {})
    key = (app.namespace, app.configmap_name)
    written.pop(key, None)
    await cluster.delete(CONFIGMAPS, app.namespace, app.configmap_name)
    written[key] = _DELETED  # the hold's end has nothing to release (kapply.app.lock)


async def list_resources(cluster: Cluster, app: App, *, scope_to_fallback: bool = False) -> list[Obj]:
    """Everything labeled for the app, of every listable type (not only the kinds the app recorded), controller-made
    (transient) objects included; with `scope_to_fallback`, namespaced ones only in the app's namespaces (see
    `list_labeled`)."""
    discovery = await cluster.discovery()
    found = await list_labeled(
        cluster,
        types_in_scope(discovery, None),
        app.label_selector,
        fallback_namespaces(app),
        scope_to_fallback=scope_to_fallback,
    )
    return await at_written_versions(cluster, discovery, found)


async def inspect_resources(
    cluster: Cluster, app: App, *, ignore_failing_api_services: bool = False, scope_to_fallback: bool = False
) -> list[Obj]:
    """What `inspect` shows: `list_resources`, after refusing (as kapp does) when an API the app uses is unavailable,
    unless `ignore_failing_api_services`."""
    used = {group_version(g, v) for g, v in app.meta.used_gvs}
    check_required(await cluster.discovery(), used, ignore=ignore_failing_api_services)
    return await list_resources(cluster, app, scope_to_fallback=scope_to_fallback)


def fallback_namespaces(app: App, *more: str) -> set[str]:
    """The namespaces to list in when cluster-wide listing is forbidden (kapp's fallback allowed namespaces): the
    app's own, those its last change touched, and `more`."""
    return {app.namespace, *app.meta.last_change.namespaces, *more}
