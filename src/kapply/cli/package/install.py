"""`kapply package install` (`installed create`) and `installed update`: kctrl's install and update of a
PackageInstall, with what kctrl creates for it (created.py): the service account and its cluster role, the values
Secret and the ytt overlays Secret.

An update that changes a Secret or an annotation, which do not change the PackageInstall's generation, runs kctrl's
pause, update, resume: pausing (and waiting for the App to see it), changing, resuming, so that the PackageInstall's
status reports a generation after the change, and waiting means waiting for it. kctrl does so only when such a Secret
already existed; kapply does so for every values or overlays change, so that `--wait` never returns before the
change is deployed."""

from __future__ import annotations

import copy
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from kapply.cli.command import Args
from kapply.cli.common import run
from kapply.cli.package.commands import DEFAULT_VERSION
from kapply.cli.package.common import (
    PAUSE,
    UNPAUSE,
    WaitFlags,
    as_go_prints,
    check_shared_namespace,
    connected,
    create_or_update,
    log,
    offline,
    required,
    wait_flags,
)
from kapply.cli.package.created import (
    OVERLAYS_ANNOTATION,
    VALUES_KEY,
    CreatedKind,
    InstallNames,
    overlay_key,
    with_recorded,
    without_recorded,
)
from kapply.controller.vocabulary_choice import install as speaks  # the groups install and installed update speak
from kapply.errors import ClusterError, KapplyError
from kapply.objects import Obj

if TYPE_CHECKING:
    from kapply.api import AsyncClient
    from kapply.controller.vocabulary import Resource, Vocabulary
    from kapply.ui.output import Output

OVERLAY_EXTENSIONS = (".yaml", ".yml")


def create(args: Args, out: Output) -> None:
    run(_create(args, out))


def update(args: Args, out: Output) -> None:
    run(_update(args, out))


@dataclass(frozen=True, slots=True)
class Request:
    """What `install` or `installed update` was asked to do."""

    name: str
    package: str  # "" when not given (update)
    version: str  # "" when not given (update)
    values_file: str
    values: bool
    overlay_files: tuple[str, ...]
    overlays: bool

    @property
    def asks_for_change(self) -> bool:
        """kctrl's test of an update that may change something: a version, values, overlays, or dropping either."""
        return bool(self.version or self.values_file or self.overlay_files) or not self.values or not self.overlays

    def changes_secrets(self, install: Obj) -> bool:
        """Whether the request changes a Secret or an annotation of the install (not its generation)."""
        values = (install.get("spec") or {}).get("values")
        overlays = OVERLAYS_ANNOTATION in ((install.get("metadata") or {}).get("annotations") or {})
        return bool(self.values_file or self.overlay_files or (not self.values and values)) or (
            not self.overlays and overlays
        )


def _request(args: Args) -> Request:
    return Request(
        args["package-install"],
        args["package"],
        args["version"],
        args["values-file"],
        args["values"],
        tuple(args["ytt-overlay-file"]),
        args["ytt-overlays"],
    )


def read_values(path: str) -> bytes:
    """The values file (`-`: stdin)."""
    try:
        return sys.stdin.buffer.read() if path == "-" else Path(path).read_bytes()
    except OSError as e:
        raise KapplyError(f"Reading data values file '{path}': {e.strerror or e}") from None


def read_overlays(paths: tuple[str, ...]) -> dict[str, bytes]:
    """The overlays Secret's data: for each `--ytt-overlay-file` (a `.yml` or `.yaml` file, a directory of them, `-`
    for stdin), its files under kctrl's keys. kctrl skips a file of another extension silently; kapply refuses it."""
    data: dict[str, bytes] = {}
    for index, path in enumerate(paths):
        try:
            if path == "-":
                data[overlay_key(index, "stdin.yaml")] = sys.stdin.buffer.read()
            elif os.path.isdir(path):
                for root, dirs, files in os.walk(path):
                    dirs.sort()
                    for file in sorted(f for f in files if f.endswith(OVERLAY_EXTENSIONS)):
                        full = os.path.join(root, file)
                        data[overlay_key(index, os.path.relpath(full, path))] = Path(full).read_bytes()
            elif not path.endswith(OVERLAY_EXTENSIONS):
                raise KapplyError(f"Expected ytt overlay file '{path}' to be a .yml or .yaml file (or a directory)")
            else:
                data[overlay_key(index, os.path.basename(path))] = Path(path).read_bytes()
        except OSError as e:
            raise KapplyError(f"Reading ytt overlay file '{path}': {e.strerror or e}") from None
    return data


@dataclass(frozen=True, slots=True)
class Files:
    """The files a request names, read before anything is written (a file that cannot be read changes nothing)."""

    values: bytes | None  # the values file's content; None without one (or with --values=false)
    overlays: (
        dict[str, bytes] | None
    )  # the overlays Secret's data; None without overlay files (or --ytt-overlays=false)


def read_files(request: Request) -> Files:
    return Files(
        read_values(request.values_file) if request.values_file and request.values else None,
        read_overlays(request.overlay_files) if request.overlay_files and request.overlays else None,
    )


def dry_run_documents(
    resource: Resource, request: Request, files: Files, names: InstallNames, service_account: str
) -> list[Obj]:
    """What `install` would create, in order (kctrl's `--dry-run`; kapply adds the overlays Secret), as kctrl prints
    them (`as_go_prints`); `resource`: the groups' PackageInstall."""
    return [as_go_prints(obj) for _, obj in _to_create(resource, request, files, names, service_account, as_text=True)]


def _to_create(
    resource: Resource, request: Request, files: Files, names: InstallNames, service_account: str, *, as_text: bool
) -> list[tuple[str, Obj]]:
    """What `install` creates, in order, each with the line it logs before creating it: without `service_account`,
    one of its own with a cluster-admin binding; the values and overlays Secrets (`as_text`: as `stringData`); last,
    the PackageInstall, annotated with what was created for it."""
    from kapply.cli.package import created

    made: list[tuple[str, Obj]] = []
    kinds: list[CreatedKind] = []
    if not service_account:
        made += [
            (f"Creating service account '{names.service_account}'", created.service_account(names)),
            (f"Creating cluster admin role '{names.cluster_role}'", created.cluster_role(names)),
            (f"Creating cluster role binding '{names.cluster_role_binding}'", created.cluster_role_binding(names)),
        ]
        kinds += [CreatedKind.CLUSTER_ROLE, CreatedKind.CLUSTER_ROLE_BINDING, CreatedKind.SERVICE_ACCOUNT]
    values_secret = overlays_secret = ""
    if files.values is not None:
        values_secret = names.values_secret
        values = created.secret(values_secret, names, {VALUES_KEY: files.values}, as_text=as_text)
        made.append((f"Creating secret '{values_secret}'", values))
        kinds.append(CreatedKind.SECRET)
    if files.overlays is not None:
        overlays_secret = names.overlays_secret
        overlays = created.secret(overlays_secret, names, files.overlays, as_text=as_text)
        made.append(("Creating overlay secrets", overlays))
    install = created.package_install(
        resource,
        names,
        request.package,
        request.version,
        service_account or names.service_account,
        values_secret,
        overlays_secret,
        kinds,
    )
    return [*made, ("Creating package install resource", install)]


async def _create(args: Args, out: Output) -> None:
    from kapply.cli.package import created
    from kapply.cli.package.common import dry_run_vocabulary
    from kapply.cli.package.kinds import CLUSTER_ROLE_BINDINGS, CLUSTER_ROLES, SECRETS, SERVICE_ACCOUNTS
    from kapply.cli.package.waiting import wait_for_install
    from kapply.diff.yaml_text import to_yaml

    request = _request(args)
    required(request.name, "Expected package install name to be non empty")
    required(request.package, "Expected package name to be non empty")
    service_account = args["service-account-name"]
    files = read_files(request)
    if args["dry-run"]:
        async with offline(args) as api:
            namespace = api.namespace()
            check_shared_namespace(args, namespace)
            speaking = await dry_run_vocabulary(args, api, speaks)
        names = InstallNames(request.name, namespace)
        documents = dry_run_documents(speaking.install, request, files, names, service_account)
        out.block("".join(f"---\n{to_yaml(d)}" for d in documents))
        out.finish()
        return
    async with connected(args, out, speaks) as (api, namespace, vocabulary):
        check_shared_namespace(args, namespace)
        names, cluster, wait = InstallNames(request.name, namespace), api.cluster, wait_flags(args)
        if request.version == DEFAULT_VERSION:
            log(
                out,
                f"Version constraint defaulted to '{DEFAULT_VERSION}'. Use the '--version' flag to lock to a version.",
            )
        existing = await cluster.get(vocabulary.install.rtype, namespace, request.name)
        if existing is not None:  # as kctrl: installing an existing install updates it
            await _apply_update(api, vocabulary, existing, request, files, names, out, wait)
            out.finish()
            return
        if service_account:
            found = await cluster.get(SERVICE_ACCOUNTS, namespace, service_account)
            if found is None:
                raise KapplyError(f"Finding service account '{service_account}' in namespace '{namespace}': not found")
            annotations = (found.get("metadata") or {}).get("annotations") or {}
            owners = {annotations[key] for key in created.OWNER_ANNOTATIONS if key in annotations}
            if owners and names.owner not in owners:
                raise KapplyError(
                    f"Provided service account '{service_account}' is already used by another package in namespace "
                    f"'{namespace}'"
                )
        *first, (saying, install) = _to_create(
            vocabulary.install, request, files, names, service_account, as_text=False
        )
        types = {rtype.kind: rtype for rtype in (SERVICE_ACCOUNTS, CLUSTER_ROLES, CLUSTER_ROLE_BINDINGS, SECRETS)}
        for said, obj in first:
            log(out, said)
            await create_or_update(cluster, types[obj["kind"]], obj)
        log(out, saying)
        try:
            await cluster.create(vocabulary.install.rtype, install)
        except ClusterError as e:
            raise KapplyError(f"Creating PackageInstall resource: {e}") from None
        if wait.enabled:
            await wait_for_install(cluster, vocabulary, namespace, request.name, out, wait)
        out.finish()


async def _update(args: Args, out: Output) -> None:
    request = _request(args)
    required(request.name, "Expected package install to be non-empty")
    if not request.asks_for_change:
        raise KapplyError("Expected either package version, values file or overlays to update the package")
    async with connected(args, out, speaks) as (api, namespace, vocabulary):
        check_shared_namespace(args, namespace)
        existing = await api.cluster.get(vocabulary.install.rtype, namespace, request.name)
        if existing is None:
            raise KapplyError(f"Package install '{request.name}' does not exist in namespace '{namespace}'")
        names = InstallNames(request.name, namespace)
        await _apply_update(api, vocabulary, existing, request, read_files(request), names, out, wait_flags(args))
        out.finish()


def _selection(install: Obj, request: Request) -> Obj:
    """The install's version selection, after checking the package is the one asked for."""
    ref = (install.get("spec") or {}).get("packageRef") or {}
    selection = ref.get("versionSelection")
    if not isinstance(selection, dict):
        raise KapplyError(
            f"Failed to update package '{request.name}' as no existing package reference/version was found in the "
            "package install"
        )
    if request.package and ref.get("refName") != request.package:
        raise KapplyError(
            f"Installed package '{request.name}' is already associated with package '{ref.get('refName')}'"
        )
    return selection


async def _apply_update(
    api: AsyncClient,
    vocabulary: Vocabulary,
    install: Obj,
    request: Request,
    files: Files,
    names: InstallNames,
    out: Output,
    wait: WaitFlags,
) -> None:
    """Update the install (kctrl's update), paused while what it reads changes; resumed even when a change fails."""
    from kapply.cli.package.waiting import wait_for_app_paused, wait_for_install
    from kapply.packaging.install_update import update_install

    cluster, namespace, installs = api.cluster, names.namespace, vocabulary.install.rtype
    selection = _selection(install, request)
    version_changed = bool(request.version) and request.version != selection.get("constraints")
    paused = request.changes_secrets(install)
    if not (version_changed or paused):
        if request.values:
            log(out, f"No changes to package install '{request.name}' in namespace '{namespace}'")
        else:
            log(out, f"No values have been supplied to installation '{request.name}' in namespace '{namespace}'")
        return
    if paused:
        log(out, f"Pausing reconciliation for package installation '{request.name}' in namespace '{namespace}'")
        await cluster.patch(installs, namespace, request.name, PAUSE)
    try:
        if paused:
            if wait.enabled:
                await wait_for_app_paused(cluster, vocabulary, namespace, request.name, wait)
            install = await cluster.get(installs, namespace, request.name) or install
        updated = copy.deepcopy(install)
        spec = updated.setdefault("spec", {})
        if version_changed:
            spec["packageRef"]["versionSelection"]["constraints"] = request.version
        await _update_values(api, updated, request, files, names, out)
        await _update_overlays(api, updated, request, files, names, out)
        if updated != install:
            log(out, f"Updating package install for '{request.name}' in namespace '{namespace}'")
            try:
                await update_install(cluster, installs, install, updated)
            except ClusterError as e:
                raise KapplyError(f"Updating package '{request.name}': {e}") from None
    finally:
        if paused:
            log(out, f"Resuming reconciliation for package installation '{request.name}' in namespace '{namespace}'")
            await cluster.patch(installs, namespace, request.name, UNPAUSE)
    if wait.enabled:
        await wait_for_install(cluster, vocabulary, namespace, request.name, out, wait)


async def _update_values(
    api: AsyncClient, install: Obj, request: Request, files: Files, names: InstallNames, out: Output
) -> None:
    """kctrl's values update: a new values file goes to the one values Secret the install names (its single key
    kept), else to a new `<i>-<ns>-values`; `--values=false` deletes the Secret `install` made and its reference."""
    from kapply.cli.package import created
    from kapply.cli.package.kinds import SECRETS

    spec, meta = install["spec"], install["metadata"]
    refs = spec.get("values") or []
    namespace = names.namespace
    if files.values is not None:
        if len(refs) > 1:
            raise KapplyError(
                "Expected package install to have one or no value references while updating. Please delete and "
                "install the package install with appropriate values."
            )
        content = files.values
        named = refs[0].get("secretRef", {}).get("name", "") if refs else ""
        if named:
            log(out, f"Updating secret '{named}'")
            found = await api.cluster.get(SECRETS, namespace, named)
            if found is None:
                raise KapplyError(f"Could not find manually referenced secret '{named}' in namespace '{namespace}'")
            data = found.get("data") or {}
            if len(data) > 1:
                raise KapplyError(
                    f"Could not safely update manually referenced secret '{named}' in namespace '{namespace}' as it "
                    "has more than one data keys"
                )
            key = next(iter(data), VALUES_KEY)
            body = created.secret(named, names, {key: content})
            await api.cluster.update(SECRETS, {**found, "data": body["data"]})
            return
        log(out, f"Creating secret '{names.values_secret}'")
        await create_or_update(api.cluster, SECRETS, created.secret(names.values_secret, names, {VALUES_KEY: content}))
        spec["values"] = [{"secretRef": {"name": names.values_secret}}]
        _set_annotations(meta, with_recorded(meta.get("annotations") or {}, [CreatedKind.SECRET], names))
    elif not request.values:
        if not refs:
            log(out, f"No values have been supplied to installation '{request.name}' in namespace '{namespace}'")
            return
        secret = await api.cluster.get(SECRETS, namespace, names.values_secret)
        if secret is None:
            log(out, f"Values secret '{names.values_secret}' not found in namespace '{namespace}'")
        elif not created.owned_by(secret, names):
            raise KapplyError("Deleting values secret: Secret was not created by kctrl")
        else:
            log(out, f"Deleting values secret '{names.values_secret}'")
            await api.cluster.delete(SECRETS, namespace, names.values_secret)
        log(out, f"Removing values secret reference from package install '{request.name}' in namespace '{namespace}'")
        spec["values"] = [r for r in refs if (r.get("secretRef") or {}).get("name") != names.values_secret]
        if not spec["values"]:
            del spec["values"]
        _set_annotations(meta, without_recorded(meta.get("annotations") or {}, CreatedKind.SECRET))


async def _update_overlays(
    api: AsyncClient, install: Obj, request: Request, files: Files, names: InstallNames, out: Output
) -> None:
    """kctrl's overlays update: new files replace the overlays Secret (refused when the install has overlays of
    its own, named by other `ytt-paths-from-secret-name` annotations); `--ytt-overlays=false` deletes it."""
    from kapply.cli.package import created
    from kapply.cli.package.kinds import SECRETS
    from kapply.packaging.names import Extension, extension_keys

    meta = install["metadata"]
    annotations = dict(meta.get("annotations") or {})
    prefixes = extension_keys(Extension.YTT_PATHS_FROM_SECRET_NAME)
    if files.overlays is not None:
        if any(k.startswith(prefixes) and k != OVERLAYS_ANNOTATION for k in annotations):
            raise KapplyError("Package install has manually supplied overlays")
        log(out, "Creating overlay secrets")
        await create_or_update(api.cluster, SECRETS, created.secret(names.overlays_secret, names, files.overlays))
        annotations[OVERLAYS_ANNOTATION] = names.overlays_secret
    elif not request.overlays and OVERLAYS_ANNOTATION in annotations:
        log(out, "Dropping overlay secrets")
        name = annotations.pop(OVERLAYS_ANNOTATION)
        secret = await api.cluster.get(SECRETS, names.namespace, name)
        if secret is None:
            log(out, f"Overlay secret '{name}' not found in namespace '{names.namespace}'")
        elif not created.owned_by(secret, names):
            raise KapplyError("Overlay secret was not created by kctrl")
        else:
            await api.cluster.delete(SECRETS, names.namespace, name)
    _set_annotations(meta, annotations)


def _set_annotations(meta: Obj, annotations: dict[str, str]) -> None:
    if annotations:
        meta["annotations"] = annotations
    else:
        meta.pop("annotations", None)
