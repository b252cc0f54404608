"""Kubernetes objects as plain dicts: kapp's vocabulary of keys, the small accessors every stage uses, and a
resource's identity.

This is the bottom layer: it imports nothing else of kapply, so every stage can use it. Accessors never
fail on a malformed object (a missing or non-map `metadata` reads as empty): validation happens where
input enters, and everything else can read objects without repeating defensive chains.
"""

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

Obj = dict[str, Any]
"""A Kubernetes object (or a part of one) as the API speaks it: JSON types in a dict."""

# Labels kapp writes on an app's resources.
APP_LABEL = "kapp.k14s.io/app"
ASSOCIATION_LABEL = "kapp.k14s.io/association"
ORPHANED_LABEL = "kapp.k14s.io/orphaned"

# Annotations kapp writes on an app's resources.
IDENTITY = "kapp.k14s.io/identity"
ORIGINAL = "kapp.k14s.io/original"
ORIGINAL_DIFF_MD5 = "kapp.k14s.io/original-diff-md5"
ORIGINAL_DIFF = "kapp.k14s.io/original-diff"  # never written; stripped from diffs like kapp does
ORIGINAL_DIFF_FULL = "kapp.k14s.io/original-diff-full"  # same
NONCE = "kapp.k14s.io/nonce"
LAST_RENEWED_TIME = "kapp.k14s.io/last-renewed-time"

# Annotations kapp reads from the user's resources.
DISABLE_ORIGINAL = "kapp.k14s.io/disable-original"
EXISTS = "kapp.k14s.io/exists"
NOOP = "kapp.k14s.io/noop"
DISABLE_WAIT = "kapp.k14s.io/disable-wait"
DISABLE_ASSOCIATED_RESOURCES_WAIT = "kapp.k14s.io/disable-associated-resources-wait"
CREATE_STRATEGY = "kapp.k14s.io/create-strategy"
UPDATE_STRATEGY = "kapp.k14s.io/update-strategy"
DELETE_STRATEGY = "kapp.k14s.io/delete-strategy"
CHANGE_GROUP = "kapp.k14s.io/change-group"
CHANGE_RULE = "kapp.k14s.io/change-rule"
VERSIONED = "kapp.k14s.io/versioned"
VERSIONED_KEEP_ORIGINAL = "kapp.k14s.io/versioned-keep-original"
NUM_VERSIONS = "kapp.k14s.io/num-versions"
VERSIONED_EXPLICIT_REF = "kapp.k14s.io/versioned-explicit-ref"
OWNED_FOR_DELETION = "kapp.k14s.io/owned-for-deletion"
DEPLOY_LOGS = "kapp.k14s.io/deploy-logs"
DEPLOY_LOGS_CONTAINER_NAMES = "kapp.k14s.io/deploy-logs-container-names"
DEPLOYMENT_MINIMUM_REPLICAS = "kapp.k14s.io/apps-v1-deployment-wait-minimum-replicas-available"
RENEW_DURATION = "kapp.k14s.io/renew-duration"
CONFIG_LABEL = "kapp.k14s.io/config"  # on a ConfigMap whose data["config.yml"] is a kapp Config

# The app record (a ConfigMap) and its change records.
IS_APP_LABEL = "kapp.k14s.io/is-app"
APP_GROUP_LABEL = "kapp.k14s.io/app-group"
APP_CHANGES_USE_APP_LABEL = "kapp.k14s.io/app-changes-use-app-label"
IS_CONFIGMAP_MIGRATED = "kapp.k14s.io/is-configmap-migrated"
IS_APP_CHANGE_LABEL = "kapp.k14s.io/is-app-change"
APP_CHANGE_APP_LABEL = "kapp.k14s.io/app-change-app-label"
APP_CHANGE_APP_NAME_LABEL = "kapp.k14s.io/app-change-app"

CONFIG_API_VERSION = "kapp.k14s.io/v1alpha1"

# kapply's own keys (kapp neither writes nor reads them).
DEPLOY_LOCK = "kapply.dev/deploy-lock"  # on the app record while a deploy or delete runs (kapply.app.lock)
# On an object, next to the last-applied copy: the desired values of the fields a preserve or warn deploy left
# drifted (kapply.diff.drift.kept_drift). Never part of a diff; kapp drops it when it updates the object.
DRIFT_KEPT = "kapply.dev/drift-kept"

# What kapp writes to remember what it applied: never part of a diff.
HISTORY_ANNOTATIONS = (ORIGINAL, ORIGINAL_DIFF_MD5, ORIGINAL_DIFF, ORIGINAL_DIFF_FULL)


def metadata(obj: Mapping[str, Any]) -> Obj:
    value = obj.get("metadata")
    return value if isinstance(value, dict) else {}


def annotations(obj: Mapping[str, Any]) -> dict[str, str]:
    value = metadata(obj).get("annotations")
    return value if isinstance(value, dict) else {}


def labels(obj: Mapping[str, Any]) -> dict[str, str]:
    value = metadata(obj).get("labels")
    return value if isinstance(value, dict) else {}


def has_annotation(obj: Mapping[str, Any], key: str) -> bool:
    return key in annotations(obj)


def has_finalizer(obj: Mapping[str, Any], finalizer: str) -> bool:
    return finalizer in (metadata(obj).get("finalizers") or [])


def name(obj: Mapping[str, Any]) -> str:
    """The name, or `<generateName>*` for an object the server is still to name (as kapp shows it)."""
    meta = metadata(obj)
    value = meta.get("name")
    if isinstance(value, str) and value:
        return value
    generate = meta.get("generateName")
    return f"{generate}*" if isinstance(generate, str) else "*"


def namespace(obj: Mapping[str, Any]) -> str:
    """The namespace, or "" for a cluster-scoped (or not yet placed) object."""
    value = metadata(obj).get("namespace")
    return value if isinstance(value, str) else ""


def uid(obj: Mapping[str, Any]) -> str:
    value = metadata(obj).get("uid")
    return value if isinstance(value, str) else ""


def api_version(obj: Mapping[str, Any]) -> str:
    value = obj.get("apiVersion")
    return value if isinstance(value, str) else ""


def kind(obj: Mapping[str, Any]) -> str:
    value = obj.get("kind")
    return value if isinstance(value, str) else ""


def api_group(version: str) -> str:
    """The group of an apiVersion (`apps/v1` -> `apps`, `v1` -> ``)."""
    return version.rpartition("/")[0]


def group_of(obj: Mapping[str, Any]) -> str:
    return api_group(api_version(obj))


def with_metadata(obj: Obj, **fields: Any) -> Obj:
    """A shallow copy of obj whose metadata has `fields` set (the input is not modified)."""
    return {**obj, "metadata": {**metadata(obj), **fields}}


def with_annotations(obj: Obj, values: Mapping[str, str]) -> Obj:
    """A shallow copy of obj with the annotations added or replaced."""
    return with_metadata(obj, annotations={**annotations(obj), **values})


def without_annotations(obj: Obj, keys: tuple[str, ...]) -> Obj:
    """A shallow copy of obj without the given annotations (obj itself when it has none of them)."""
    current = annotations(obj)
    if not any(k in current for k in keys):
        return obj
    kept = {k: v for k, v in current.items() if k not in keys}
    meta = {**metadata(obj), "annotations": kept}
    if not kept:
        del meta["annotations"]
    return {**obj, "metadata": meta}


@dataclass(frozen=True, slots=True, order=True)
class ResourceKey:
    """kapp's unique key, `<ns>/<group>/<kind>/<name>`: the API version is not part of it."""

    namespace: str
    group: str
    kind: str
    name: str

    def __str__(self) -> str:
        return f"{self.namespace}/{self.group}/{self.kind}/{self.name}"


def key_of(obj: Mapping[str, Any]) -> ResourceKey:
    return ResourceKey(namespace(obj), group_of(obj), kind(obj), name(obj))


def describe(obj: Mapping[str, Any]) -> str:
    """`deployment/web (apps/v1) namespace: ns`, or `... cluster` for cluster-scoped resources."""
    ns = namespace(obj)
    where = f"namespace: {ns}" if ns else "cluster"
    return f"{kind(obj).lower()}/{name(obj)} ({api_version(obj)}) {where}"


def association_value(obj: Mapping[str, Any]) -> str:
    """The `kapp.k14s.io/association` label value: `v1.<md5 of the unique key>`."""
    return "v1." + hashlib.md5(str(key_of(obj)).encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class Document:
    """One resource as read, and where it came from (`file 'x.yml' doc 2`, `resource 3`)."""

    obj: Obj
    origin: str
