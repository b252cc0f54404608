"""Aggregated APIs that do not answer (an APIService whose backing service is down), as kapp treats them.

Discovery leaves out the group versions of an unavailable APIService (`Discovery.failing`). kapp goes on without them
unless the deploy needs one: a new resource of that group version, or one the app recorded as used (its usedGVs);
then it stops with client-go's discovery error, unless `--dangerous-ignore-failing-api-services` is given.
"""

from __future__ import annotations

from collections.abc import Iterable

from kapply.errors import ClusterError
from kapply.resources.cluster import Discovery

ISSUE_HINT = "(possibly related issue: https://github.com/vmware-tanzu/carvel-kapp/issues/12)"
UNAVAILABLE = "the server is currently unable to handle the request"


def group_version(group: str, version: str) -> str:
    """`apps/v1`, or `v1` for the core group."""
    return f"{group}/{version}" if group else version


def check_required(discovery: Discovery, required: Iterable[str], *, ignore: bool = False) -> None:
    """Refuse (with kapp's message, naming every failing group version) when a required group version is failing,
    unless `ignore`."""
    if ignore or not discovery.failing or not discovery.failing & set(required):
        return
    groups = ", ".join(sorted(f"{gv}: {UNAVAILABLE}" for gv in discovery.failing))
    raise ClusterError(f"unable to retrieve the complete list of server APIs: {groups} {ISSUE_HINT}", status=503)
