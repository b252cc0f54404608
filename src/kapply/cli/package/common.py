"""What the package commands share: connecting (and the namespace they work in), kctrl's shared-namespace guard, its
wait flags, its timestamped progress lines, and the writes the groups share (the pause patches, create-or-update,
saving a file)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kapply.cli.command import Args
from kapply.cli.common import client
from kapply.cli.package.commands import API_GROUPS, WAIT, WAIT_CHECK_INTERVAL, WAIT_TIMEOUT
from kapply.errors import ClusterError, KapplyError
from kapply.flags import NAMESPACE
from kapply.objects import Obj

if TYPE_CHECKING:
    from kapply.api import AsyncClient
    from kapply.controller.vocabulary import Vocabulary
    from kapply.controller.vocabulary_choice import Needed
    from kapply.resources.cluster import Cluster, ResourceType
    from kapply.ui.output import Output

# kctrl refuses to create packaging resources (and the cluster-admin account of an install) in these, which every
# user of the cluster can usually read or write.
SHARED_NAMESPACES = ("default", "kube-public")
# kctrl's JSON patches that pause and resume a PackageRepository or PackageInstall (each bumps its generation)
PAUSE = [{"op": "add", "path": "/spec/paused", "value": True}]
UNPAUSE = [{"op": "remove", "path": "/spec/paused"}]


@dataclass(frozen=True, slots=True)
class WaitFlags:
    enabled: bool
    interval: float  # seconds between checks
    timeout: float  # seconds


def wait_flags(args: Args) -> WaitFlags:
    """kctrl's wait flags; a command without `--wait` (installed delete) always waits."""
    return WaitFlags(args.parsed.flags.get(WAIT.name, WAIT.default), args[WAIT_CHECK_INTERVAL], args[WAIT_TIMEOUT])


def check_shared_namespace(args: Args, namespace: str) -> None:
    """kctrl's guard against `default` and `kube-public`, with its message, unless
    `--dangerous-allow-use-of-shared-namespace`."""
    if namespace in SHARED_NAMESPACES and not args["dangerous-allow-use-of-shared-namespace"]:
        raise KapplyError(
            f"Creating sensitive resources in a shared namespace ({namespace}) (hint: Specify a namespace using the "
            "'-n' flag or use kubeconfig to change default namespace 'kubectl config set-context --current "
            "--namespace=private-namespace'. Or use '--dangerous-allow-use-of-shared-namespace' to allow use of "
            "shared namespace)"
        )


def required(value: str, message: str) -> str:
    if not value:
        raise KapplyError(message)
    return value


def write_file(path: str, content: bytes | str, what: str) -> None:
    """Save `what` (the values, default values, an overlay) to the file a flag names."""
    from pathlib import Path

    try:
        Path(path).write_bytes(content.encode() if isinstance(content, str) else content)
    except OSError as e:
        raise KapplyError(f"Writing {what} to '{path}': {e.strerror or e}") from None


def as_go_prints(obj: Obj) -> Obj:
    """The object as kctrl's `--dry-run` prints it: with the empty fields Go's YAML encoder writes of its typed objects
    (`creationTimestamp: null`; a PackageRepository's or PackageInstall's empty status)."""
    shown = {**obj, "metadata": {**obj["metadata"], "creationTimestamp": None}}
    if obj["kind"] in ("PackageRepository", "PackageInstall"):
        shown["status"] = {"conditions": None, "friendlyDescription": "", "observedGeneration": 0}
    return shown


def offline(args: Args) -> AsyncClient:
    """A client whose only use is the namespace (`-n`, else $KAPP_NAMESPACE, else the kubeconfig context's): for
    `--dry-run`, which never talks to the cluster."""
    return client(args, args[NAMESPACE])


def explicit_vocabulary(args: Args) -> Vocabulary | None:
    """The groups `--api-groups` names; None when not given."""
    from kapply.cli.controller_flags import choice
    from kapply.controller.vocabulary import VOCABULARIES, ApiGroups

    text = args[API_GROUPS]
    return VOCABULARIES[choice(ApiGroups, API_GROUPS, text)] if text else None


async def vocabulary(args: Args, cluster: Cluster, needed: Needed) -> Vocabulary:
    """The groups to speak: `--api-groups`, else those the cluster serves `needed` under (kapply's first)."""
    from kapply.controller.vocabulary_choice import served_vocabulary

    return explicit_vocabulary(args) or await served_vocabulary(cluster, needed)


async def dry_run_vocabulary(args: Args, api: AsyncClient, needed: Needed) -> Vocabulary:
    """A dry run's groups: `--api-groups`, else those the cluster serves if it answers, else kapply's (a dry run
    needs no cluster, as kctrl's)."""
    from kapply.controller.vocabulary import KAPPLY

    try:
        return await vocabulary(args, api.cluster, needed)
    except ClusterError:
        return KAPPLY


@asynccontextmanager
async def connected(args: Args, out: Output, needed: Needed) -> AsyncIterator[tuple[AsyncClient, str, Vocabulary]]:
    """A client, after saying which cluster (kctrl's `Target cluster ...` line), the namespace to work in, and the
    groups to speak (`vocabulary`, for the `needed` resource)."""
    async with client(args, args[NAMESPACE], out) as api:
        namespace = api.namespace()
        out.line(await api.target())
        yield api, namespace, await vocabulary(args, api.cluster, needed)


def log(out: Output, message: str) -> None:
    """kctrl's status message: a progress line stamped with the time (`3:04:05PM: ...`)."""
    from kapply.ui.messages import timestamp

    out.begin_line(f"{timestamp()}: {message}\n")


async def create_or_update(cluster: Cluster, rtype: ResourceType, obj: Obj) -> Obj:
    """Create, or replace the existing object's content (kctrl's create-or-update of what `install` makes), keeping
    what the server keeps (its resourceVersion read first, so the update is not unconditional)."""
    try:
        return await cluster.create(rtype, obj)
    except ClusterError as e:
        if not e.conflict:
            raise
    meta = obj["metadata"]
    existing = await cluster.get(rtype, meta.get("namespace"), meta["name"])
    if existing is None:
        return await cluster.create(rtype, obj)
    body: dict[str, Any] = {**obj, "metadata": {**meta, "resourceVersion": existing["metadata"]["resourceVersion"]}}
    return await cluster.update(rtype, body)
