"""A PackageRepository's job in the sandbox (kapply.controller.sandbox): its fetch, and the reading of its content into
Packages and PackageMetadatas (ytt over the files, kbld over a bundle's ImagesLock), in the job's own process.

The parent reads the objects back as untrusted input: each goes through `repository_objects` again (only Packages and
PackageMetadatas, their fields checked, the repository's annotations set), in the controller's process.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from kapply.controller import runner, sandbox_app
from kapply.controller.fetch import FetchPolicy, ReadSource
from kapply.controller.sandbox import Sandbox, SandboxFailed, Stage
from kapply.errors import KapplyError
from kapply.objects import Obj
from kapply.packaging.repository_content import (
    ContentError,
    check_layout,
    read_documents,
    repository_objects,
    resolve_images,
)
from kapply.packaging.repository_fetch import fetch_repository
from kapply.packaging.spec import RepositoryFetch, RepositorySource


def request(namespace: str, name: str, source: RepositoryFetch, policy: FetchPolicy, api_version: str) -> Obj:
    return {
        "namespace": namespace,
        "name": name,
        "apiVersion": api_version,  # of the Packages and PackageMetadatas: the data group the controller serves
        "source": source.source.value,
        "config": source.config,
        "policy": sandbox_app.policy_to_json(policy),
    }


async def run(request: Obj, root: Path, read: ReadSource, fetched: Callable[[str], Awaitable[None]]) -> dict[str, Any]:
    source = RepositoryFetch(RepositorySource(request["source"]), request["config"])
    policy = sandbox_app.policy_from_json(request["policy"])
    bundle = source.source is RepositorySource.IMGPKG_BUNDLE
    runner.confine_fetch_stage(["ytt", "kbld"], policy.allow_file_urls)
    try:
        lock = await fetch_repository(source, root, read, policy)
    except KapplyError as e:
        raise SandboxFailed(Stage.FETCH, str(e), getattr(e, "stderr", "")) from None
    await fetched(lock)
    runner.confine_template_stage(["ytt", "kbld"] if bundle else ["ytt"])
    try:
        wanted = repository_objects(
            await read_documents(root, check_layout(root)), request["namespace"], request["name"], request["apiVersion"]
        )
        if bundle:  # its ImagesLock, as kapp-controller's kbld pass
            wanted = await resolve_images(wanted, root)
    except ContentError as e:
        raise SandboxFailed(Stage.TEMPLATE, str(e), e.stderr, e.exit_code) from None
    return {"lock": lock, "objects": wanted}


async def fetch_and_read(
    sandbox: Sandbox,
    namespace: str,
    name: str,
    source: RepositoryFetch,
    policy: FetchPolicy,
    read: ReadSource,
    api_version: str,
    on_fetched: Callable[[str], Awaitable[None]] | None = None,  # told when the fetch stage ended
) -> tuple[str, list[Obj]]:
    """The lock and the objects the repository deploys, under `api_version`; SandboxFailed when a stage failed
    (ContentError for an object the sandbox sent that is not one a repository may bring)."""
    done = await sandbox.run("repository", request(namespace, name, source, policy, api_version), read, on_fetched)
    lock, objects = done.get("lock"), done.get("objects")
    if not isinstance(lock, str) or not isinstance(objects, list):
        raise SandboxFailed(Stage.TEMPLATE, "Sandbox: the sandbox sent a result without a lock and objects")
    try:
        return lock, repository_objects(objects, namespace, name, api_version)
    except ContentError as e:
        raise SandboxFailed(Stage.TEMPLATE, str(e), lock=lock) from None
