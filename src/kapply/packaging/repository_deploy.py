"""A PackageRepository's deploy stage: its Packages and PackageMetadatas deployed as the kapp app `<name>.pkgr` in its
namespace, with the controller's own identity (as kapp-controller: a repository has no service account), through
kapply's Python API, with kapp-controller's options for repositories. Packages that left the repository are deleted
by the deploy (kapp's pruning); objects another repository brought are decided by the overlap rules (overlap.py)."""

from __future__ import annotations

import io
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from kapply.api import AsyncClient, delete_options, deploy_options
from kapply.controller.options import DELETE, DEPLOY, parse_raw_options
from kapply.delete import DeleteOptions
from kapply.deploy import DeployOptions
from kapply.errors import KapplyError
from kapply.objects import Obj
from kapply.packaging import names, overlap, store

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
    """kapp-controller's delete options for a repository: no waiting for the Packages to go."""
    return delete_options(parse_raw_options(DELETE_RAW_OPTIONS, DELETE))


async def _existing(api: AsyncClient, namespace: str) -> dict[tuple[str, str], Obj]:
    found = {}
    for rtype in (store.PACKAGES, store.PACKAGE_METADATAS):
        for obj in await api.cluster.list(rtype, namespace=namespace):
            found[(rtype.kind, obj["metadata"]["name"])] = obj
    return found


async def deploy(
    api: AsyncClient,
    name: str,
    namespace: str,
    wanted: Sequence[Obj],
    owns: Callable[[], Awaitable[None]],
) -> RepositoryDeployed:
    """Deploy the repository's objects (`owns` runs before anything is applied: the repository's finalizer)."""
    from kapply.ui.changes import changes_table
    from kapply.ui.messages import ProgressLines
    from kapply.ui.output import Output

    text = io.StringIO()
    out = Output(tty=True, out=text)
    try:
        existing = await _existing(api, namespace)
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
            options=repository_deploy_options(),
        )
        out.table(changes_table(plan.changes))
        changed = bool(plan.pending)
        await owns()
        if changed:
            await api.run_deploy(plan, progress=ProgressLines(out))
        out.finish()
    except KapplyError as e:
        raise RepositoryDeployFailed(str(e), text.getvalue()) from e
    return RepositoryDeployed(changed, text.getvalue(), tuple(left))


async def delete(api: AsyncClient, name: str, namespace: str) -> None:
    """Delete the repository's kapp app and with it its Packages and PackageMetadatas; KapplyError when that fails."""
    await api.delete(names.repository_app_name(name), namespace=namespace, options=repository_delete_options())
