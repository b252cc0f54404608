"""Who wrote a field that someone other than kapply or kapp changed on the cluster: its field manager, from
`metadata.managedFields`; for a field no manager wrote, the mutating admission webhooks the API server calls for the
object (a webhook is never a field manager). What drift reports and ghost diffs name as `writtenBy`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kapply import objects
from kapply.diff import ghost
from kapply.diff.change import Change
from kapply.diff.fields import ABSENT
from kapply.diff.ghost import FieldDrift
from kapply.objects import Obj
from kapply.resources import admission
from kapply.resources.cluster import Cluster, Discovery


@dataclass(frozen=True, slots=True)
class OutsideField:
    """A field of a change that someone other than kapply or kapp wrote on the cluster, and who, as one line of text
    (`kubectl (Update, scale)`, or the mutating webhooks that may have)."""

    change: Change
    field: FieldDrift
    written_by: str


async def attribute(
    cluster: Cluster, discovery: Discovery, found: Sequence[tuple[Change, Sequence[FieldDrift]]]
) -> list[OutsideField]:
    """Who wrote each field: its field manager; for a field on the cluster that no manager wrote, the mutating
    admission webhooks the server calls for the object (see `kapply.resources.admission`; listed only when needed)."""
    configurations: list[Obj] | None = None
    out = []
    for change, fields in found:
        for f in fields:
            written_by = ghost.writer(f.owner)
            if f.owner is None and f.live is not ABSENT and change.existing is not None:
                if configurations is None:
                    configurations = await admission.mutating_webhook_configurations(cluster)
                rtype = discovery.find(objects.api_version(change.existing), objects.kind(change.existing))
                hooks = admission.webhooks_for(configurations, rtype, change.existing) if rtype else []
                if hooks:
                    written_by = f"a mutating admission webhook ({', '.join(hooks)}); no recorded field manager"
            out.append(OutsideField(change, f, written_by))
    return out
