"""`kapply package repository add|update|list|get|delete|kick`: kctrl's commands for PackageRepositories."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kapply.cli.command import Args
from kapply.cli.common import confirm, run
from kapply.cli.package.common import (
    PAUSE,
    UNPAUSE,
    as_go_prints,
    check_shared_namespace,
    connected,
    log,
    offline,
    required,
    wait_flags,
)
from kapply.controller.vocabulary_choice import repository as speaks  # the groups the repository commands speak
from kapply.errors import KapplyError
from kapply.objects import Obj

if TYPE_CHECKING:
    from kapply.api import AsyncClient
    from kapply.controller.vocabulary import Vocabulary
    from kapply.ui.output import Output


def add(args: Args, out: Output) -> None:
    run(_add_or_update(args, out, create=True))


def update(args: Args, out: Output) -> None:
    run(_add_or_update(args, out, create=False))


def list_repositories(args: Args, out: Output) -> None:
    run(_list(args, out))


def get(args: Args, out: Output) -> None:
    run(_get(args, out))


def delete(args: Args, out: Output) -> None:
    run(_delete(args, out))


def kick(args: Args, out: Output) -> None:
    run(_kick(args, out))


def new_repository(vocabulary: Vocabulary, name: str, namespace: str, fetch: Obj) -> Obj:
    return {
        "apiVersion": vocabulary.repository.api_version,
        "kind": vocabulary.repository.kind,
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"fetch": fetch},
    }


def _repository_name(args: Args) -> str:
    return required(args["repository"], "Expected package repository name to be non-empty")


async def _existing(api: AsyncClient, vocabulary: Vocabulary, namespace: str, name: str) -> Obj:
    found = await api.cluster.get(vocabulary.repository.rtype, namespace, name)
    if found is None:
        raise KapplyError(f"Repository '{name}' does not exist in namespace '{namespace}'")
    return found


async def _add_or_update(args: Args, out: Output, *, create: bool) -> None:
    from kapply.cli.package.common import dry_run_vocabulary
    from kapply.cli.package.kinds import NAMESPACES
    from kapply.cli.package.sources import repository_fetch, updated_fetch
    from kapply.cli.package.waiting import wait_for_repository
    from kapply.diff.yaml_text import to_yaml

    name = _repository_name(args)
    url = required(args["url"], "Expected package repository url to be non-empty")
    constraints, secret = args["semver-tag-constraints"], args["secret-ref"]
    try:
        fetch = repository_fetch(url, constraints, secret)
    except KapplyError as e:
        if create and args["dry-run"]:  # kctrl's words: its dry run fails making the YAML
            raise KapplyError(f"Generating resource YAML: {e}") from None
        raise
    if create and args["dry-run"]:
        async with offline(args) as api:
            namespace = api.namespace()
            check_shared_namespace(args, namespace)
            speaking = await dry_run_vocabulary(args, api, speaks)
        out.block(to_yaml(as_go_prints(new_repository(speaking, name, namespace, fetch))))
        out.finish()
        return
    async with connected(args, out, speaks) as (api, namespace, vocabulary):
        check_shared_namespace(args, namespace)
        cluster, repositories = api.cluster, vocabulary.repository.rtype
        if create and args["create-namespace"] and await cluster.get(NAMESPACES, None, namespace) is None:
            log(out, f"Creating namespace '{namespace}'")
            await cluster.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
        existing = await cluster.get(repositories, namespace, name)
        if existing is None:
            if not create:
                raise KapplyError(f"Repository '{name}' does not exist in namespace '{namespace}'")
            log(out, f"Creating package repository resource '{name}' in namespace '{namespace}'")
            await cluster.create(repositories, new_repository(vocabulary, name, namespace, fetch))
            waiting = "Waiting for package repository to be added"
            created, unchanged, before = True, False, None
        else:
            spec = existing.get("spec") or {}
            wanted = updated_fetch(spec.get("fetch") or {}, url, constraints, secret)
            if wanted != spec.get("fetch"):
                log(out, f"Updating package repository resource '{name}' in namespace '{namespace}'")
                await cluster.update(repositories, {**existing, "spec": {**spec, "fetch": wanted}})
            waiting, created = "", False  # (kctrl 0.53 says nothing more before waiting for an update)
            unchanged, before = wanted == spec.get("fetch"), existing
        wait = wait_flags(args)
        if wait.enabled:
            if waiting:
                out.line(waiting)
            await wait_for_repository(
                cluster, vocabulary, namespace, name, out, wait, created=created, unchanged=unchanged, before=before
            )
        out.finish()


async def _list(args: Args, out: Output) -> None:
    from kapply.ui.packages import repositories_table

    every = args["all-namespaces"]
    async with connected(args, out, speaks) as (api, namespace, vocabulary):
        found = await api.cluster.list(vocabulary.repository.rtype, namespace=None if every else namespace)
        title = "Repositories in all namespaces" if every else f"Repositories in namespace '{namespace}'"
        out.table(repositories_table(found, title, show_namespace=every))
        out.finish()


async def _get(args: Args, out: Output) -> None:
    from kapply.ui.packages import repository_table

    name = _repository_name(args)
    async with connected(args, out, speaks) as (api, namespace, vocabulary):
        out.table(repository_table(await _existing(api, vocabulary, namespace, name)))
        out.finish()


async def _delete(args: Args, out: Output) -> None:
    from kapply.cli.package.waiting import wait_for_repository_deletion

    name = _repository_name(args)
    async with connected(args, out, speaks) as (api, namespace, vocabulary):
        await _existing(api, vocabulary, namespace, name)
        out.line(f"Deleting package repository '{name}' in namespace '{namespace}'")
        confirm(args, out)
        await api.cluster.delete(vocabulary.repository.rtype, namespace, name)
        wait = wait_flags(args)
        if wait.enabled:
            log(out, f"Waiting for package repository reconciliation for '{name}'")
            await wait_for_repository_deletion(api.cluster, vocabulary, namespace, name, out, wait)
        out.finish()


async def _kick(args: Args, out: Output) -> None:
    from kapply.cli.package.waiting import tail_repository

    name = required(args["repository"], "Expected repository name to be non empty")
    async with connected(args, out, speaks) as (api, namespace, vocabulary):
        await _existing(api, vocabulary, namespace, name)
        repositories = vocabulary.repository.rtype
        triggering = f"Triggering reconciliation for package repository '{name}' in namespace '{namespace}'"
        out.begin_line(triggering)  # kctrl's BeginLinef: the question, or the next line, follows on the same line
        confirm(args, out)
        log(out, triggering)
        # pausing and resuming bumps the generation twice: the controller reconciles the latest
        await api.cluster.patch(repositories, namespace, name, PAUSE)
        await api.cluster.patch(repositories, namespace, name, UNPAUSE)
        wait = wait_flags(args)
        if wait.enabled:
            await tail_repository(api.cluster, vocabulary, namespace, name, out, wait)
        out.finish()
