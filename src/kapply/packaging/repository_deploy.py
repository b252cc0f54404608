"""A PackageRepository's deploy stage: its Packages and PackageMetadatas deployed as the kapp app `<name>.pkgr` in its
namespace, with the controller's own identity (as kapp-controller: a repository has no service account), through
kapply's Python API, with kapp-controller's options for repositories. Packages that left the repository are deleted
by the deploy (kapp's pruning); objects another repository brought are decided by the overlap rules (overlap.py).

The controller's own identity reaches far beyond the repository's namespace, and the app's record is an ordinary
ConfigMap there, which the namespace's users may write. So the deploy and the delete are given a client confined to
the namespace's Packages and PackageMetadatas and the app's own record and app-changes (`scope`: every other request
is refused before it is sent), and the record is read as untrusted input (`check_record`): whatever steers what they
list, read or delete must be what the controller itself writes, else they fail naming the record and the field."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace

from kapply import objects
from kapply.api import (
    App,
    AsyncClient,
    DeleteOptions,
    DeployOptions,
    Transcript,
    delete_options,
    deploy_options,
    record_names,
)
from kapply.controller.deploy import legacy_app_name
from kapply.controller.options import DELETE, DEPLOY, parse_raw_options
from kapply.controller.vocabulary import VERSION, Vocabulary
from kapply.errors import KapplyError
from kapply.objects import Obj
from kapply.packaging import names, overlap
from kapply.resources.confined import Allowed, Confined, Scope

# kapp-controller's raw options for a repository's kapp deploy and delete (pkgrepository/app.go), and kapply's
# `--dangerous-allow-empty-list-of-resources`: a repository may bring no package, or lose its last one.
DEPLOY_RAW_OPTIONS = (
    "--logs=false",
    "--app-changes-max-to-keep=5",
    "--dangerous-override-ownership-of-existing-resources=true",
    "--existing-non-labeled-resources-check=false",
    "--kube-api-qps=30",
    "--kube-api-burst=40",
    "--dangerous-scope-to-fallback-allowed-namespaces=true",
    "--wait=false",
    "--dangerous-allow-empty-list-of-resources=true",
)
DELETE_RAW_OPTIONS = ("--wait=false", "--dangerous-scope-to-fallback-allowed-namespaces=true")


class RepositoryDeployFailed(KapplyError):
    """The deploy failed; `output` is what it printed until then."""

    def __init__(self, message: str, output: str) -> None:
        super().__init__(message)
        self.output = output


@dataclass(frozen=True, slots=True)
class RepositoryDeployed:
    changed: bool  # something was applied or deleted
    output: str  # the changes table and progress lines
    left: tuple[str, ...]  # `Kind/name` of the objects left to another repository


def repository_deploy_options() -> DeployOptions:
    return deploy_options(parse_raw_options(DEPLOY_RAW_OPTIONS, DEPLOY))


def repository_delete_options() -> DeleteOptions:
    """kapp-controller's delete options for a repository: no waiting for the Packages to go; only the kinds the
    record names (checked by `check_record`) are listed, as for an App's delete."""
    return replace(delete_options(parse_raw_options(DELETE_RAW_OPTIONS, DELETE)), used_kinds_only=True)


def app_names(name: str) -> tuple[str, str]:
    """The repository's kapp app (`<name>.pkgr`), and the one an older kapp-controller deployed it as (`<name>-ctrl`):
    kapp-controller 0.53 deploys and deletes with `--prev-app <name>-ctrl`, as for an App (docs/reconciler.md,
    "Moving from kapp-controller"), so kapply does too: a record of that name is renamed, with its history."""
    return names.repository_app_name(name), legacy_app_name(name)


def scope(vocabulary: Vocabulary, name: str, namespace: str) -> Scope:
    """What a repository's deploy and delete may reach: the Packages and PackageMetadatas (of the controller's
    vocabulary) of its namespace, and there the ConfigMaps of its app under either of its names (`app_names`): the
    record, under either of kapp's names, and the app-changes."""
    apps = app_names(name)
    return Scope(
        namespace,
        (
            Allowed(vocabulary.package.group, vocabulary.package.plural),
            Allowed(vocabulary.package_metadata.group, vocabulary.package_metadata.plural),
            Allowed("", "configmaps", frozenset().union(*map(record_names, apps)), tuple(map(change_prefix, apps))),
        ),
    )


def change_prefix(app: str) -> str:
    """The app-changes' names start so (kapp's generateName)."""
    return f"{app}-change-"


def confined(api: AsyncClient, vocabulary: Vocabulary, name: str, namespace: str) -> AsyncClient:
    """`api` confined to the repository's `scope`."""
    return api.through(Confined(api.cluster, scope(vocabulary, name, namespace)))


def record_problems(app: App, vocabulary: Vocabulary, name: str, namespace: str) -> list[str]:
    """What in the repository's app record the controller cannot have written (reading it has already refused a
    label key or value that is not one). The fields that steer what the deploy and the delete reach: the label (the
    selector of every LIST), usedGKs and usedGVs (the kinds listed, and the APIs required), lastChange.namespaces (the
    namespaces listed in) and lastChangeName (the change it points at). The others (lastChange's times, description
    and outcome) are only shown, and the next change rewrites them."""
    meta = app.meta
    data = vocabulary.package.group
    kinds_deployed = {(data, vocabulary.package.kind), (data, vocabulary.package_metadata.kind)}
    problems = []
    if meta.label_key != objects.APP_LABEL:
        problems.append(f"'labelKey' is {meta.label_key!r}, not {objects.APP_LABEL!r}")
    if meta.used_gks is None:
        problems.append("'usedGKs' is null (the controller always records the kinds it deployed)")
    else:
        kinds = sorted(f"{k}.{g}" if g else k for g, k in set(meta.used_gks) - kinds_deployed)
        if kinds:
            problems.append(f"'usedGKs' names {', '.join(kinds)} (a repository deploys Packages and PackageMetadatas)")
    versions = sorted(f"{g}/{v}" if g else v for g, v in set(meta.used_gvs) - {(data, VERSION)})
    if versions:
        deployed = vocabulary.package.api_version
        problems.append(f"'usedGVs' names {', '.join(versions)} (a repository deploys {deployed} only)")
    elsewhere = sorted(set(meta.last_change.namespaces) - {namespace})
    if elsewhere:
        problems.append(f"'lastChange.namespaces' names {', '.join(elsewhere)} (a repository deploys to {namespace})")
    changes = tuple(map(change_prefix, app_names(name)))  # a renamed record names its old change until a new one
    if meta.last_change_name and not meta.last_change_name.startswith(changes):
        problems.append(f"'lastChangeName' is {meta.last_change_name!r}, not one of the app's changes")
    return problems


async def check_record(client: AsyncClient, vocabulary: Vocabulary, name: str, namespace: str) -> None:
    """Refuse the record the deploy or delete would use (the repository's app's, else the one an older
    kapp-controller wrote, which they rename) that the controller cannot have written, naming it and its fields
    (`record_problems`); its ConfigMap deleted, the next deploy writes it anew (and takes the repository's Packages
    back by their names)."""
    current, legacy = app_names(name)
    app = await client.find_app(current, namespace=namespace) or await client.find_app(legacy, namespace=namespace)
    problems = [] if app is None else record_problems(app, vocabulary, name, namespace)
    if app is not None and problems:
        raise KapplyError(
            f"App record ConfigMap '{app.configmap_name}' (namespace: {namespace}) was not written by the controller: "
            f"{'; '.join(problems)} (hint: ConfigMap was overriden by another user? Deleting it lets the next deploy "
            "write it anew)"
        )


async def _existing(api: AsyncClient, vocabulary: Vocabulary, namespace: str) -> dict[tuple[str, str], Obj]:
    found = {}
    for rtype in (vocabulary.package.rtype, vocabulary.package_metadata.rtype):
        for obj in await api.cluster.list(rtype, namespace=namespace):
            found[(rtype.kind, obj["metadata"]["name"])] = obj
    return found


async def deploy(
    api: AsyncClient,
    vocabulary: Vocabulary,
    name: str,
    namespace: str,
    wanted: Sequence[Obj],
    owns: Callable[[], Awaitable[None]],
) -> RepositoryDeployed:
    """Deploy the repository's objects (`owns` runs before anything is applied: the repository's finalizer)."""
    out = Transcript()
    api = confined(api, vocabulary, name, namespace)
    try:
        await check_record(api, vocabulary, name, namespace)
        existing = await _existing(api, vocabulary, namespace)
        kept, left = [], []
        for obj in wanted:
            if (
                overlap.decide(existing.get((obj["kind"], obj["metadata"].get("name", ""))), obj)
                is overlap.Overlap.LEAVE
            ):
                left.append(f"{obj['kind']}/{obj['metadata'].get('name', '')}")
            else:
                kept.append(obj)
        out.line(await api.target())
        plan = await api.plan_deploy(
            names.repository_app_name(name),
            resources=kept,
            namespace=namespace,
            app_namespace=namespace,
            options=replace(repository_deploy_options(), prev_app=legacy_app_name(name)),
        )
        out.plan(plan)
        changed = bool(plan.pending)
        await owns()
        if changed:
            await api.run_deploy(plan, progress=out.progress())
        elif plan.renamed_from is not None:
            await api.run_deploy(plan)  # as kapp does first: an older kapp-controller's record renamed, nothing else
        out.finish()
    except KapplyError as e:
        raise RepositoryDeployFailed(str(e), out.text) from e
    return RepositoryDeployed(changed, out.text, tuple(left))


async def delete(api: AsyncClient, vocabulary: Vocabulary, name: str, namespace: str) -> None:
    """Delete the repository's kapp app and with it its Packages and PackageMetadatas; KapplyError when that fails."""
    api = confined(api, vocabulary, name, namespace)
    await check_record(api, vocabulary, name, namespace)
    options = replace(repository_delete_options(), prev_app=legacy_app_name(name))
    await api.delete(names.repository_app_name(name), namespace=namespace, options=options)
