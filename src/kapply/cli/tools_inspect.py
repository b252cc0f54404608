"""`kapply tools inspect`: the resources in files, a table per file (or their YAML), without a cluster."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

from kapply.cli.command import Args
from kapply.flags import FILE, SORT, resource_filter

if TYPE_CHECKING:
    from kapply.ui.output import Output


def _files(path: str) -> list[tuple[str, str]]:
    """(what to read, how kapp names it) for each file a `-f` value stands for: stdin, a URL, the file, or the manifest
    files of a directory, in kapp's order (sorted paths) and named by their path within it."""
    from kapply.resources import remote
    from kapply.resources.manifests import MANIFEST_SUFFIXES

    if path == "-":
        return [("-", "stdin")]
    if remote.is_url(path):
        return [(path, remote.source(path))]
    if not os.path.isdir(path):
        return [(path, f"file '{path}'")]
    found = sorted(
        os.path.join(directory, name)
        for directory, _, names in os.walk(path)
        for name in names
        if name.endswith(MANIFEST_SUFFIXES)
    )
    return [(file, f"file '{os.path.relpath(file, path)}'") for file in found]


def inspect(args: Args, out: Output) -> None:
    from kapply.resources import manifests
    from kapply.ui.resources import document, resources_table

    found_filter = resource_filter(args.parsed.flags)
    for path in args[FILE]:
        for file, source in _files(path):
            resources = [doc.obj for doc in manifests.read([file], sys.stdin)]
            if found_filter is not None:
                resources = found_filter.apply(resources)
            if args["raw"]:
                for obj in resources:
                    out.block(document(obj))
            else:
                out.table(resources_table(source, resources, sort=args[SORT], listed=False))
    out.finish()
