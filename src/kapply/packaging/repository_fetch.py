"""A PackageRepository's fetch stage: its source as the one App fetch step kapp-controller makes of it, fetched by the
App controller's fetch (kapply.controller.fetch), with the controller's own identity (a repository has no service
account) into the content's root. The Secrets and ConfigMaps its source names are read through a client confined to
the repository's namespace and those two resources."""

from __future__ import annotations

from pathlib import Path

from kapply.api import AsyncClient
from kapply.controller.fetch import FetchPolicy, ReadSource, fetch
from kapply.controller.reconciler import reader
from kapply.controller.spec import FetchSource, SpecError, parse_spec
from kapply.errors import KapplyError
from kapply.packaging.spec import RepositoryFetch
from kapply.resources.confined import Allowed, Confined, Scope

_APP_WHERE = "spec.fetch[0]."
_REPOSITORY_WHERE = "spec.fetch."


class RepositoryFetchError(KapplyError):
    """Fetching failed; `stderr` is what a tool said (git), if anything."""

    def __init__(self, message: str, stderr: str = "") -> None:
        super().__init__(message)
        self.stderr = stderr


def repository_message(message: str) -> str:
    """An App fetch message with its fields named as the repository's (`spec.fetch.git.url`, not
    `spec.fetch[0].git.url`)."""
    return message.replace(_APP_WHERE, _REPOSITORY_WHERE)


def fetch_sources(source: RepositoryFetch) -> tuple[FetchSource, ...]:
    """The App fetch step of a repository's source, read by the App's own parser, so that every source the App
    controller fetches is a repository's too, with the same checks and messages."""
    app = {
        "spec": {
            "serviceAccountName": "unused",
            "fetch": [{source.source.value: source.config}],
            "template": [{"ytt": {}}],
            "deploy": [{"kapp": {}}],
        }
    }
    try:
        return parse_spec(app).fetch
    except SpecError as e:
        raise RepositoryFetchError(repository_message(str(e))) from None


def source_reader(api: AsyncClient, namespace: str) -> ReadSource:
    """Reads of the Secrets and ConfigMaps a repository's source names: with the controller's identity, through a
    client confined to the repository's namespace and those two resources."""
    confined = api.through(Confined(api.cluster, Scope(namespace, (Allowed("", "secrets"), Allowed("", "configmaps")))))
    return reader(confined, namespace)


async def fetch_repository(source: RepositoryFetch, root: Path, read: ReadSource, policy: FetchPolicy) -> str:
    """Fetch the repository's content into `root` (in the sandbox: kapply.packaging.sandbox_repository); the lock
    text for status.fetch.stdout."""
    sources = fetch_sources(source)
    try:
        return await fetch(sources, root, read, policy)
    except KapplyError as e:
        raise RepositoryFetchError(repository_message(str(e)), getattr(e, "stderr", "")) from e
