"""`kapply package available list|get`: kctrl's commands for the Packages and PackageMetadatas a namespace sees: its
own and those of the global namespace (`kapply-packaging-global`, or kapp-controller's
`kapp-controller-packaging-global` under its groups), its own winning, as kapp-controller's API shows them (a
namespace annotated to exclude the global packages sees only its own)."""

from __future__ import annotations

from collections.abc import Awaitable
from typing import TYPE_CHECKING, TypeVar

from kapply.cli.command import Args
from kapply.cli.common import run
from kapply.cli.package.commands import SUMMARY
from kapply.cli.package.common import connected, required, write_file
from kapply.controller.vocabulary_choice import package as speaks  # the groups the available commands speak
from kapply.errors import KapplyError
from kapply.objects import Obj

T = TypeVar("T")

if TYPE_CHECKING:
    from kapply.api import AsyncClient
    from kapply.resources.cluster import ResourceType
    from kapply.ui.output import Output


def list_available(args: Args, out: Output) -> None:
    run(_list(args, out))


def get(args: Args, out: Output) -> None:
    run(_get(args, out))


def _key(obj: Obj) -> str:
    """What makes two objects the same one across the namespace and the global namespace: the name (a Package's is
    `<refName>.<version>`)."""
    return str(obj["metadata"]["name"])


async def visible(api: AsyncClient, rtype: ResourceType, namespace: str | None, global_namespace: str) -> list[Obj]:
    """The objects of `rtype` the namespace sees (every namespace's own when None), with `global_namespace`'s. A user
    who may not read the Namespace (its opt-out annotation) or the global namespace sees what it may read."""
    from kapply.packaging.selection import NAMESPACES, excluded

    own = await api.cluster.list(rtype, namespace=namespace)
    if namespace is None or namespace == global_namespace:
        return own
    if excluded(await _unless_forbidden(api.cluster.get(NAMESPACES, None, namespace), None)):
        return own
    shared = await _unless_forbidden(api.cluster.list(rtype, namespace=global_namespace), [])
    merged = {_key(o): o for o in shared}
    merged.update((_key(o), o) for o in own)
    return list(merged.values())


async def _unless_forbidden(request: Awaitable[T], instead: T) -> T:
    """The answer, or `instead` when the user may not make the request (403)."""
    from kapply.errors import ClusterError

    try:
        return await request
    except ClusterError as e:
        if not e.forbidden:
            raise
        return instead


async def _list(args: Args, out: Output) -> None:
    from kapply.ui.packages import package_metadatas_table, packages_table

    every, package = args["all-namespaces"], args["package"]
    async with connected(args, out, speaks) as (api, namespace, vocabulary):
        where = "all namespaces" if every else f"namespace '{namespace}'"
        scope, shared = None if every else namespace, vocabulary.global_namespace
        if args[SUMMARY] and not package:
            found = await visible(api, vocabulary.package_metadata.rtype, scope, shared)
            title = f"Available summarized packages in {where}"
            out.table(package_metadatas_table(found, title, show_namespace=every, wide=args["wide"]))
        else:
            packages = await visible(api, vocabulary.package.rtype, scope, shared)
            chosen = [p for p in packages if not package or (p.get("spec") or {}).get("refName") == package]
            out.table(packages_table(chosen, f"Available packages in {where}", show_namespace=every))
        out.finish()


def split_name(text: str) -> tuple[str, str]:
    """`name` or `name/version` (kctrl's `-p` of `available get`)."""
    parts = text.split("/")
    if len(parts) > 2:
        raise KapplyError("Package name should be of the format 'name' or 'name/version'")
    return parts[0], parts[1] if len(parts) == 2 else ""


def _version_required(flag: str) -> KapplyError:
    return KapplyError(
        f"Package version is required when {flag} flag is declared (hint: to specify a particular version use the "
        "format: '<package-name>/<version>')"
    )


async def _get(args: Args, out: Output) -> None:
    from kapply.cli.package.schema import check_properties, schema_properties
    from kapply.packaging import names
    from kapply.ui.packages import package_table, values_schema_table, versions_table

    name, version = split_name(required(args["package"], "Expected package name to be non-empty"))
    defaults_file = args["default-values-file-output"]
    if not version and args["values-schema"]:
        raise _version_required("--values-schema")
    if not version and defaults_file:
        raise _version_required("--default-values-file-output")
    async with connected(args, out, speaks) as (api, namespace, vocabulary):
        packages, shared = vocabulary.package.rtype, vocabulary.global_namespace
        package = None
        if version:
            wanted = names.package_name(name, version)
            package = next((p for p in await visible(api, packages, namespace, shared) if _key(p) == wanted), None)
            if package is None:
                raise KapplyError(f"Package '{name}/{version}' not found in namespace '{namespace}'")
            schema = ((package.get("spec") or {}).get("valuesSchema") or {}).get("openAPIv3")
            if args["values-schema"]:
                if schema is None:
                    out.line(_no_values(name, version, namespace))
                else:
                    check_properties(schema)
                    rows = [(p.key, p.default, p.type, p.description) for p in schema_properties(schema)]
                    out.table(values_schema_table(f"Values schema for '{name}/{version}'", rows))
                out.finish()
                return
            if defaults_file:
                _save_default_values(out, defaults_file, schema, _no_values(name, version, namespace))
        metadatas = await visible(api, vocabulary.package_metadata.rtype, namespace, shared)
        metadata = next((m for m in metadatas if _key(m) == name), None)
        listed = [] if version else await visible(api, packages, namespace, shared)
        versions = [p for p in listed if (p.get("spec") or {}).get("refName") == name]
        if metadata is None and package is None and not versions:
            raise KapplyError(f"Package '{name}' not found in namespace '{namespace}'")
        out.table(package_table(name, metadata, package))
        if not version:
            out.table(versions_table(versions))
        out.finish()


def _no_values(name: str, version: str, namespace: str) -> str:
    return f"Package '{name}/{version}' does not have any user configurable values in the '{namespace}' namespace"


def _save_default_values(out: Output, path: str, schema: object, no_values: str) -> None:
    """`--default-values-file-output`: the file of default values (`# {}` when no property has one). Without
    properties at the schema's root (or without a schema), or when the file cannot be written, kctrl's error line (on
    stderr, and the command goes on and succeeds) and no file."""
    from kapply.cli.package.schema import default_values

    properties = schema.get("properties") if isinstance(schema, dict) else None
    if not isinstance(schema, dict) or not isinstance(properties, dict) or not properties:
        out.error_line(f"Default values file output: {no_values}")
        return
    try:
        write_file(path, default_values(schema), "default values")
    except KapplyError as e:
        out.error_line(f"Default values file output: {e}")
        return
    out.line(f"Created default values file at {path}")
