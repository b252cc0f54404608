"""`kapply app-group deploy|delete`: one app per subdirectory of a directory, named `<group>-<subdirectory>`, its
record labeled `kapp.k14s.io/app-group=<group>`.

`deploy` then deletes the group's apps whose subdirectory is gone. kapp (at the commit docs/compatibility.md names)
inverts that comparison and deletes the apps it has just deployed; kapply does what kapp's help and later kapp do.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from kapply.cli.command import Args
from kapply.cli.common import ExitStatus, client, run
from kapply.cli.delete import delete_app
from kapply.cli.deploy import deploy_app
from kapply.errors import KapplyError
from kapply.flags import APP_NAMESPACE, LABELS, NAMESPACE
from kapply.objects import APP_GROUP_LABEL

if TYPE_CHECKING:
    from kapply.api import AsyncClient
    from kapply.ui.output import Output


def deploy(args: Args, out: Output) -> None:
    run(_deploy(args, out))


def delete(args: Args, out: Output) -> None:
    run(_delete(args, out))


def _group(args: Args) -> str:
    group: str = args["group"]
    if not group:
        raise KapplyError("Expected group name to be non-empty")
    return group


def _subdirectories(directory: str) -> list[Path]:
    if not directory:
        raise KapplyError("Expected directory to be non-empty")
    try:
        return sorted((p for p in Path(directory).iterdir() if p.is_dir()), key=lambda p: p.name)
    except OSError as e:
        reason = e.strerror or str(e)
        raise KapplyError(
            f"Reading directory '{directory}': open {directory}: {reason[:1].lower()}{reason[1:]}"
        ) from None


async def _group_apps(api: AsyncClient, namespace: str, group: str) -> list[str]:
    return sorted(app.name for app in await api.list_apps(namespace, labels={APP_GROUP_LABEL: group}))


async def _deploy(args: Args, out: Output) -> None:
    group = _group(args)
    directories = _subdirectories(args["directory"])
    async with client(args, args[NAMESPACE], out) as api:
        namespace = api.namespace(args[APP_NAMESPACE] or None)
        flags = {**args.parsed.flags, LABELS.name: [*args[LABELS], f"{APP_GROUP_LABEL}={group}"]}
        statuses: list[ExitStatus] = []
        deployed = set()
        for index, directory in enumerate(directories):
            name = f"{group}-{directory.name}"
            out.line(f"--- deploying app '{name}' (namespace: {namespace}) from {directory}")
            status = await deploy_app(api, args, out, name, [str(directory)], namespace, flags, show_target=index == 0)
            deployed.add(name)
            if status is not None:
                statuses.append(status)
        if statuses:  # kapp stops before deleting when an exit status was asked for
            raise max(statuses, key=lambda s: s.code)
        for name in await _group_apps(api, namespace, group):
            if name not in deployed:
                out.line(f"--- deleting app '{name}' (namespace: {namespace})")
                status = await delete_app(api, args, out, name, namespace, prefix="delete-")
                if status is not None:
                    statuses.append(status)
        if statuses:
            raise max(statuses, key=lambda s: s.code)
        out.finish()


async def _delete(args: Args, out: Output) -> None:
    group = _group(args)
    async with client(args, args[NAMESPACE], out) as api:
        out.line(await api.target())
        namespace = api.namespace(args[APP_NAMESPACE] or None)
        statuses: list[ExitStatus] = []
        for name in await _group_apps(api, namespace, group):
            out.line(f"--- deleting app '{name}' (namespace: {namespace})")
            status = await delete_app(api, args, out, name, namespace)
            if status is not None:
                statuses.append(status)
        if statuses:
            raise max(statuses, key=lambda s: s.code)
        out.finish()
