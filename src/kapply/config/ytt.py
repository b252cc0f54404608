"""ytt overlays in rebase rules (`ytt.overlayContractV1`).

kapply does not embed ytt. The overlays it knows, those of its default config, are recognised by
their exact text and run as Python; any other overlay is kept, and applying it is an error.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kapply import objects
from kapply.errors import ConfigError

# Runs an overlay: (current result, new resource, existing resource) -> new result.
NativeOverlay = Callable[[dict[str, Any], dict[str, Any], dict[str, Any]], dict[str, Any]]


@dataclass(frozen=True, slots=True)
class YttOverlay:
    text: str
    native: NativeOverlay | None

    def apply(self, current: dict[str, Any], new: dict[str, Any], existing: dict[str, Any]) -> dict[str, Any]:
        if self.native is None:
            raise ConfigError(
                "Rebase rule with a ytt overlay requires ytt, which kapply does not embed "
                "(only the overlays of the default config are built in)"
            )
        return self.native(current, new, existing)


def recognise_overlay(text: str) -> YttOverlay:
    return YttOverlay(text=text, native=_NATIVE_OVERLAYS.get(_normalise(text)))


def _normalise(text: str) -> str:
    return "\n".join(line.rstrip() for line in text.strip().splitlines())


# The ServiceAccount controller appends a `<name>-token-<rand>` secret after the SA is saved, and
# OpenShift a `<name>-dockercfg-<rand>` secret and image pull secret. Keep them on redeploy.
SERVICE_ACCOUNT_SECRETS_OVERLAY = """\
#@ load("@ytt:data", "data")
#@ load("@ytt:overlay", "overlay")

#@ def last_named(refs, prefix):
#@   found = None
#@   for ref in refs or []:
#@     if ref.name.startswith(prefix):
#@       found = ref.name
#@     end
#@   end
#@   return found
#@ end

#@ live = data.values.existing
#@ prefix = live.metadata.name
#@ live_secrets = live.secrets if hasattr(live, "secrets") else []
#@ live_pull_secrets = live.imagePullSecrets if hasattr(live, "imagePullSecrets") else []
#@ token = last_named(live_secrets, prefix + "-token-")
#@ dockercfg = last_named(live_secrets, prefix + "-dockercfg-")
#@ pull_dockercfg = last_named(live_pull_secrets, prefix + "-dockercfg-")

#! Each reference is appended only if the new ServiceAccount lacks it; with none found nothing changes.

#@ if/end pull_dockercfg:
#@overlay/match by=overlay.all
---
#@overlay/match missing_ok=True
imagePullSecrets:
#@overlay/match by=overlay.subset({"name": pull_dockercfg}), when=0
- name: #@ pull_dockercfg

#@ if/end token:
#@overlay/match by=overlay.all
---
#@overlay/match missing_ok=True
secrets:
#@overlay/match by=overlay.subset({"name": token}), when=0
- name: #@ token

#@ if/end dockercfg:
#@overlay/match by=overlay.all
---
#@overlay/match missing_ok=True
secrets:
#@overlay/match by=overlay.subset({"name": dockercfg}), when=0
- name: #@ dockercfg
"""


def _keep_service_account_secrets(
    current: dict[str, Any], new: dict[str, Any], existing: dict[str, Any]
) -> dict[str, Any]:
    prefix = objects.name(existing)
    live_secrets = existing.get("secrets") or []
    appends = (
        ("imagePullSecrets", _last_named(existing.get("imagePullSecrets") or [], f"{prefix}-dockercfg-")),
        ("secrets", _last_named(live_secrets, f"{prefix}-token-")),
        ("secrets", _last_named(live_secrets, f"{prefix}-dockercfg-")),
    )
    result = current
    for key, name in appends:
        if name is None:
            continue
        refs = result.get(key) or []
        if not any(isinstance(ref, dict) and ref.get("name") == name for ref in refs):
            result = {**result, key: [*refs, {"name": name}]}
    return result


def _last_named(refs: list[Any], prefix: str) -> str | None:
    found = None
    for ref in refs:
        name = ref.get("name") if isinstance(ref, dict) else None
        if isinstance(name, str) and name.startswith(prefix):
            found = name
    return found


_NATIVE_OVERLAYS: dict[str, NativeOverlay] = {
    _normalise(SERVICE_ACCOUNT_SECRETS_OVERLAY): _keep_service_account_secrets,
}
