"""The App a PackageInstall runs (kapp-controller's packageinstall/app.go, NewApp): same name and namespace, controlled
by the PackageInstall, its spec the selected Package's `template.spec` with the PackageInstall's overrides, its values
and extension Secrets handed to the first templating steps.

- spec: the Package's `template.spec` replaced whole, then `serviceAccountName`, `syncPeriod` (the PackageInstall's,
  else the controller's default: a Package's own is ignored, kapp-controller#710), `noopDelete`, `paused`, `canceled`,
  `cluster` and `defaultNamespace` from the PackageInstall, whatever the Package says (`cluster` is copied, and the
  App controller refuses it, as it refuses it on any App); kapply's `driftPolicy`: the PackageInstall's (the package
  consumer's choice), else the Package's own, else none (the controller's `--default-drift-policy`);
- `ext.packaging.carvel.dev/fetch-<i>-secret-name`: the Secret of fetch step i (not of an inline step);
- the first helmTemplate step gets the helm-template name, namespace and values-from Secrets, and the first of the
  helmTemplate and ytt steps gets `spec.values` (helm: values files; ytt: data values files, or with
  `ytt-data-values-overlays` ytt files); the first ytt step gets the `ytt-paths-from-secret-name` Secrets as ytt files;
- annotations `packaging.carvel.dev/package-ref-name` and `package-version`; other labels, annotations and finalizers
  of an existing App are kept; an App marked `ext.packaging.carvel.dev/manually-controlled` is left as it is.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

from kapply import objects
from kapply.controller.vocabulary import Vocabulary
from kapply.errors import KapplyError
from kapply.objects import Obj
from kapply.packaging import names
from kapply.packaging.spec import PackageInstallSpec, PackageSpec

_FETCH_WITH_SECRET = ("image", "http", "git", "imgpkgBundle")


class OwnedByOtherError(KapplyError):
    """The App of the PackageInstall's name is controlled by another object."""


def go_duration(seconds: float) -> str:
    """A duration as Go prints it (metav1.Duration): `10m0s`, `30s`, `1h0m0s`, `1m30.5s`."""
    whole, fraction = divmod(seconds, 1)
    hours, rest = divmod(int(whole), 3600)
    minutes, secs = divmod(rest, 60)
    text = f"{secs + fraction:g}s" if fraction else f"{secs}s"
    if hours:
        return f"{hours}h{minutes}m{text}"
    return f"{minutes}m{text}" if minutes else text


def manually_controlled(app: Obj | None) -> bool:
    return app is not None and any(
        key in objects.annotations(app) for key in names.extension_keys(names.Extension.MANUALLY_CONTROLLED)
    )


def owner_reference(install: Obj) -> Obj:
    meta = install["metadata"]
    return {
        "apiVersion": install["apiVersion"],  # the PackageInstall's group: the controller's vocabulary's
        "kind": install["kind"],
        "name": meta["name"],
        "uid": meta.get("uid", ""),
        "controller": True,
        "blockOwnerDeletion": True,
    }


def controller_of(obj: Obj) -> Obj | None:
    return next((r for r in objects.metadata(obj).get("ownerReferences") or [] if r.get("controller")), None)


def owned_by(app: Obj, install: Obj) -> bool:
    owner = controller_of(app)
    return owner is not None and owner.get("uid") == install["metadata"].get("uid")


def _refers_to(reference: Obj) -> tuple[str, str, str]:
    """The object an owner reference names, as controller-runtime compares them: group, kind and name (not the uid: a
    PackageInstall deleted and made again takes its App back)."""
    return (
        objects.api_group(str(reference.get("apiVersion", ""))),
        str(reference.get("kind")),
        str(reference.get("name")),
    )


def _controlled(references: list[Obj], install: Obj, app: Obj) -> list[Obj]:
    """controller-runtime's SetControllerReference: the PackageInstall's reference added or updated; another
    controller is an error."""
    mine = owner_reference(install)
    current = controller_of(app)
    if current is not None and _refers_to(current) != _refers_to(mine):
        meta = app["metadata"]
        raise OwnedByOtherError(
            f"Object {meta['namespace']}/{meta['name']} is already owned by another {current.get('kind')} controller "
            f"{current.get('name')}"
        )
    same = [i for i, r in enumerate(references) if _refers_to(r) == _refers_to(mine)]
    if same:
        return [mine if i == same[0] else r for i, r in enumerate(references)]
    return [*references, mine]


def _append(step: Obj, key: str, secrets: Sequence[str]) -> None:
    """Append a `secretRef` per Secret to a step's list (left absent when there is nothing to add)."""
    if secrets:
        step[key] = [*(step.get(key) or []), *({"secretRef": {"name": s}} for s in secrets)]


def _fetch_secrets(fetch: list[Any], secrets: tuple[tuple[int, str], ...]) -> None:
    for index, secret in secrets:
        if index >= len(fetch) or not isinstance(fetch[index], dict):
            continue
        step = fetch[index]
        kind = next((k for k in (*_FETCH_WITH_SECRET, "helmChart", "inline") if isinstance(step.get(k), dict)), None)
        if kind in _FETCH_WITH_SECRET:
            step[kind]["secretRef"] = {"name": secret}
        elif kind == "helmChart" and isinstance(step["helmChart"].get("repository"), dict):
            step["helmChart"]["repository"]["secretRef"] = {"name": secret}


def _templates(templates: list[Any], install: PackageInstallSpec) -> None:
    extensions = install.extensions
    values = [v.secret_name for v in install.values if v.secret_name]
    values_given = helm_given = ytt_given = False
    for step in templates:
        if not isinstance(step, dict):
            continue
        helm = step.get("helmTemplate")
        if isinstance(helm, dict):
            if not helm_given:
                helm_given = True
                if extensions.helm_template_name is not None:
                    helm["name"] = extensions.helm_template_name
                if extensions.helm_template_namespace is not None:
                    helm["namespace"] = extensions.helm_template_namespace
                _append(helm, "valuesFrom", extensions.helm_values_from_secrets)
            if not values_given:
                values_given = True
                _append(helm, "valuesFrom", values)
        ytt = step.get("ytt")
        if isinstance(ytt, dict):
            if not ytt_given:
                ytt_given = True
                if extensions.ytt_paths_from_secrets:
                    _append(ytt.setdefault("inline", {}), "pathsFrom", extensions.ytt_paths_from_secrets)
            if not values_given:
                values_given = True
                if extensions.ytt_data_values_overlays and values:
                    _append(ytt.setdefault("inline", {}), "pathsFrom", values)
                else:
                    _append(ytt, "valuesFrom", values)


def _set(body: Obj, key: str, value: Any) -> None:
    """Set a field, or remove it for an empty value (Go's omitempty)."""
    if value:
        body[key] = value
    else:
        body.pop(key, None)


def desired_app(
    existing: Obj | None,
    install: Obj,
    install_spec: PackageInstallSpec,
    package: PackageSpec,
    default_sync_period: float,
    vocabulary: Vocabulary,
) -> Obj:
    """The App as the PackageInstall wants it (`existing`, when there is one, is not changed), in the controller's
    vocabulary."""
    if existing is not None and manually_controlled(existing):
        return existing
    meta = install["metadata"]
    app: Obj = copy.deepcopy(existing) if existing is not None else {}
    app["apiVersion"] = vocabulary.app.api_version
    app["kind"] = vocabulary.app.kind
    app_meta = app.setdefault("metadata", {})
    app_meta["name"], app_meta["namespace"] = meta["name"], meta["namespace"]
    app_meta["annotations"] = {
        **(app_meta.get("annotations") or {}),
        names.PACKAGE_REF_NAME_ANNOTATION: package.ref_name,
        names.PACKAGE_VERSION_ANNOTATION: package.version,
    }
    app_meta["ownerReferences"] = _controlled(list(app_meta.get("ownerReferences") or []), install, app)
    body = copy.deepcopy(package.template)
    _set(body, "serviceAccountName", install_spec.service_account)
    body["syncPeriod"] = install_spec.sync_period or go_duration(default_sync_period)
    _set(body, "noopDelete", install_spec.noop_delete)
    _set(body, "paused", install_spec.paused)
    _set(body, "canceled", install_spec.canceled)
    _set(body, "cluster", (install.get("spec") or {}).get("cluster"))
    _set(body, "defaultNamespace", install_spec.default_namespace)
    if install_spec.drift_policy is not None:
        body["driftPolicy"] = install_spec.drift_policy.value
    if isinstance(body.get("fetch"), list):
        _fetch_secrets(body["fetch"], install_spec.extensions.fetch_secrets)
    if isinstance(body.get("template"), list):
        _templates(body["template"], install_spec)
    app["spec"] = body
    return app


def deleting_app(app: Obj, install: Obj, install_spec: PackageInstallSpec) -> Obj:
    """The App with the PackageInstall's settings that decide how it is deleted (service account, cluster,
    `noopDelete`, `paused`, `canceled`), as kapp-controller sets them before deleting it."""
    out = copy.deepcopy(app)
    body = out.setdefault("spec", {})
    _set(body, "serviceAccountName", install_spec.service_account)
    _set(body, "cluster", (install.get("spec") or {}).get("cluster"))
    _set(body, "noopDelete", install_spec.noop_delete)
    _set(body, "paused", install_spec.paused)
    _set(body, "canceled", install_spec.canceled)
    return out
