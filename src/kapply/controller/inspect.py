"""`deploy[].kapp.inspect`: the App's resources listed after a pass, into `status.inspect`, as kapp-controller runs
`kapp inspect --filter '{"not":{"resource":{"kinds":["PodMetrics"]}}}' --tty <rawOptions>` (off unless `inspect`
is set, since kapp-controller v0.31.0).

The listing is kapply's `inspect` (every type the cluster serves, with the app's label), read with the App's own
service account. `rawOptions` are kapp-controller's inspect allow-list, each `--name=value`; kapply shows `--tree`,
`--raw`, `--status` and the resource filters (`--filter`, `--filter-kind`, ...) as `kapply inspect` does, takes
`--tty` (always on), `--kube-api-qps` and `--kube-api-burst` (no effect on what is shown), and refuses the others
(`--column`, `--json`, `--debug`, `--dangerous-*`) naming them, rather than showing something else than asked.
"""

from __future__ import annotations

from collections.abc import Sequence

from kapply.api import AsyncClient, Transcript
from kapply.controller.options import COMMON, parse_raw_options
from kapply.controller.status import Stage
from kapply.errors import KapplyError
from kapply.flags import Flag, Kind, resource_filter
from kapply.objects import Obj

_VIEWS = {
    name: Flag(name, Kind.BOOL, False, description)
    for name, description in (("raw", "Output raw YAML"), ("status", "Output status"), ("tree", "Tree view"))
}
INSPECT = {**COMMON, **_VIEWS}  # kapp-controller's allow-list for inspect (pkg/deploy/kapp_restrict.go)
# on the allow-list, but not for kapply's inspect: its own table columns, JSON, debug output and the dangerous flags
UNSUPPORTED = frozenset({"column", "json", "debug", *(name for name in COMMON if name.startswith("dangerous-"))})
POD_METRICS = "PodMetrics"  # kapp-controller filters them out: they come and go every few seconds


async def inspect(client: AsyncClient, app: str, namespace: str, raw_options: Sequence[str]) -> Obj:
    """`status.inspect` for the kapp app `app` of `namespace`: its resources, or the error (`Inspecting: ...`)."""
    try:
        values = parse_raw_options(raw_options, INSPECT)
        refused = sorted(name for name in values if name in UNSUPPORTED)
        if refused:
            raise KapplyError(
                f"Unsupported flag '{refused[0]}' for inspect (kapply shows the table, --tree, --raw, --status, "
                "filtered by --filter*)"
            )
        found = resource_filter(values)
        resources = [r for r in await client.inspect(app, namespace=namespace) if r.get("kind") != POD_METRICS]
        if found is not None:
            resources = found.apply(resources)
        out = Transcript()
        if values.get("raw"):
            out.raw(resources)
        else:
            out.resources(app, resources, tree=bool(values.get("tree")), status=bool(values.get("status")))
        out.finish()
    except KapplyError as e:
        error = f"Inspecting: {e}"
        return Stage(1, stderr=f"kapply: Error: {e}", error=error).to_status()
    return Stage(0, stdout=out.text).to_status()
