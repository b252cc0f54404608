"""ytt in Config rules: rebase rules' `ytt.overlayContractV1` and wait rules' `ytt.funcContractV1`.

kapp embeds ytt; kapply runs a ytt binary ($KAPPLY_YTT, else PATH), as kapp does in-process: an overlay gets
`resource.yml` (the rebased resource so far) and data values `new`, `existing` and `_current`; a wait rule's
`is_done(data.values)` gets the resource as data values. The overlay of kapply's default config (the ServiceAccount
one) also runs natively, so that a machine without ytt deploys ServiceAccounts.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kapply import objects, programs
from kapply.errors import ConfigError
from kapply.yamlio import load_all

# Runs an overlay: (current result, new resource, existing resource) -> new result.
NativeOverlay = Callable[[dict[str, Any], dict[str, Any], dict[str, Any]], dict[str, Any]]


@dataclass(frozen=True, slots=True)
class YttOverlay:
    text: str
    native: NativeOverlay | None

    def apply(self, current: dict[str, Any], new: dict[str, Any], existing: dict[str, Any]) -> dict[str, Any]:
        if self.native is not None:
            return self.native(current, new, existing)
        # As kapp gives them: each map's keys sorted (kapp marshals through JSON), the live object as kapp reads
        # objects, without its identity annotation.
        values = {
            "new": new,
            "existing": objects.without_annotations(existing, (objects.IDENTITY,)),
            "_current": current,
        }
        resource = json.dumps(current, sort_keys=True)
        out = run_ytt({"resource.yml": resource, "overlay.yml": self.text, "values.yml": _values(values)})
        docs = [doc for doc in load_all(out, "ytt's output", ConfigError) if doc is not None]
        if len(docs) != 1 or not isinstance(docs[0], dict):
            raise ConfigError(f"Expected ytt overlay to produce exactly one resource, but it produced {len(docs)}")
        result: dict[str, Any] = docs[0]
        return result


YTT_TIMEOUT = 60.0  # seconds for one ytt run


def _values(values: Any) -> str:
    """A ytt data values document (JSON is YAML), keys sorted as kapp writes them."""
    return "#@data/values\n---\n" + json.dumps(values, sort_keys=True) + "\n"


def run_ytt(files: dict[str, str]) -> str:
    """ytt's output for these files (name -> text); ConfigError naming what ytt said when it fails or is missing."""
    try:
        ytt = programs.find("ytt")
    except programs.ProgramNotFound as e:
        raise ConfigError(f"A ytt rule needs ytt: {e}") from None
    import tempfile  # here: only a ytt rule needs it (with shutil and random, ~4 ms of every command's start)

    with tempfile.TemporaryDirectory(prefix="kapply-ytt-") as work:
        for name, text in files.items():
            Path(work, name).write_text(text)
        try:
            done = subprocess.run([ytt, "-f", work], capture_output=True, text=True, timeout=YTT_TIMEOUT, check=False)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise ConfigError(f"Running ytt: {e}") from None
    if done.returncode != 0:
        raise ConfigError(f"ytt failed: {done.stderr.strip()}")
    return done.stdout


def is_done(resource_star: str, resource: dict[str, Any]) -> dict[str, Any]:
    """A wait rule's verdict on `resource`: the dict `is_done(data.values)` returns (`done`, `successful`,
    `message`, `unblockChanges`)."""
    main = '#@ load("@ytt:data", "data")\n#@ load("resource.star", "is_done")\n--- #@ is_done(data.values)\n'
    out = run_ytt({"resource.star": resource_star, "values.yml": _values(resource), "main.yml": main})
    docs = [doc for doc in load_all(out, "ytt's output", ConfigError) if doc is not None]
    if len(docs) != 1 or not isinstance(docs[0], dict):
        raise ConfigError("Expected is_done() of a ytt wait rule to return a dict")
    verdict: dict[str, Any] = docs[0]
    return verdict


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
