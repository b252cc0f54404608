"""Applying one change to the cluster: create, update, delete, with kapp's strategies.
(The order of changes and the waiting are `kapply.apply.loop`'s.)

Every create and update records the last-applied copy (kapp's `kapp.k14s.io/original` and `original-diff-md5`): what
it applied, which for an update under `preserve` or `warn` is the desired state with the drifted fields it keeps at
their live value (`Change.recorded`, see `kapply.diff.change.calculate`).
kapp does it with a second write after each one; kapply sends the annotations with the write itself, computed as if
the server stored the object as sent, and checks them against what the server returned: only when the server changed
the object (defaults, allocated fields, a webhook) does a second write correct them, so that the record is always
exactly kapp's. That second write is an update (PUT) of the stored object, as kapp's: a user with kapp's rights
(`create`, `update`, no `patch`) can deploy.

A change that fails is reported as kapp reports it: `<op> <resource>: <why>`, with the API server's list of errors
laid out as kapp lays it out (`error_text.semi_structured`) and kapp's hint when the resource's scope looks wrong.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from kapply import objects
from kapply.apply.error_text import semi_structured
from kapply.apply.options import ApplyOptions
from kapply.apply.progress import Notices, Progress
from kapply.apply.strategies import (
    CreateStrategy,
    DeleteStrategy,
    UpdateStrategy,
    create_strategy,
    delete_strategy,
    update_strategy,
)
from kapply.config.config import Config
from kapply.config.rules import MaskCounter
from kapply.diff.change import (
    MAX_ANNOTATION_VALUE,
    MAX_ANNOTATIONS_SIZE,
    Change,
    Op,
    calculate,
    last_applied_annotations,
    records_original,
)
from kapply.diff.ops_diff import fingerprint
from kapply.diff.render import masked
from kapply.diff.text_diff import diff_lines, render_minimal
from kapply.diff.yaml_text import to_yaml
from kapply.errors import ApplyError, ClusterError, KapplyError
from kapply.objects import Obj, ResourceKey, describe
from kapply.resources.cluster import Cluster, Discovery, ResourceType
from kapply.resources.labeled import identity_value, with_identity
from kapply.values import format_duration

CONFLICT_RETRIES = 10
DISCOVERY_RETRIES = 20
EXISTS_CHECK_INTERVAL = 1.0  # kapp's --apply-check-interval default, between checks of a `kapp.k14s.io/exists` resource
# kapp's hints for an API server answer that suggests the resource's scope is wrong
SCOPE_HINTS = {
    "the server does not allow this method on the requested resource": (
        "resource is possibly not namespaced but must be"
    ),
    "the server could not find the requested resource": "resource is possibly namespaced but cannot be",
}


def failed(change: Change, why: str) -> ApplyError:
    """kapp's error for a change that did not apply: `<op> <resource>: <why>`, an API server's list of errors laid out
    as kapp's, and kapp's hint when the answer suggests a wrong scope."""
    hint = next((f" (hint: {text})" for found, text in SCOPE_HINTS.items() if found in why), "")
    return ApplyError(f"{change.op.apply_op} {change.describe()}: {semi_structured(why)}{hint}")


class Applier:
    def __init__(
        self,
        cluster: Cluster,
        discovery: Discovery,
        config: Config,
        options: ApplyOptions,
        progress: Progress,
        masks: MaskCounter | None = None,
    ) -> None:
        self.cluster = cluster
        self.discovery = discovery
        self.config = config
        self.options = options
        self.progress = progress
        self.notices = Notices(progress)  # shared with the apply loop: one de-duplication per run, as kapp's
        # numbers masked values in a recalculated diff as the plan's diffs did (kapp's numbering is process-wide)
        self.masks = MaskCounter() if masks is None else masks
        # the names the server gave resources created with only `generateName` (kapp's `<generateName>*`)
        self.generated: dict[ResourceKey, str] = {}
        # the objects as the server answered their create or update: what the first wait check may go by (issue 33)
        self.answers: dict[ResourceKey, Obj] = {}
        # the resources whose DELETE the server answered as done (`gone_as_answered`): no wait check reads them
        self.deleted: set[ResourceKey] = set()
        # the last-applied records corrected after a write (the server filled in what the write's own record could
        # not know, a Service's defaults): nothing waits for them but the end of the run (see `recorded`)
        self._pending_records: list[asyncio.Task[None]] = []
        # by type, the object of its last create as the server stored it: what it filled in (its defaults) is likely
        # what it fills in the next one's spec, whose record the create then carries right (see `_as_stored`)
        self._created: dict[tuple[str, str], Obj] = {}

    async def recorded(self, *, stop: bool = False) -> None:
        """Wait for the records corrected after writes (`stop`: stop them first); the first that failed is raised, as
        its change's failure."""
        pending, self._pending_records = self._pending_records, []
        if stop:
            for task in pending:
                task.cancel()
        results = await asyncio.gather(*pending, return_exceptions=True)
        for result in results:
            if isinstance(result, Exception):
                raise result

    def _record_later(self, change: Change, rtype: ResourceType, saved: Obj, applied: Obj) -> None:
        """Record `applied` on the written object (`_record`) without holding up the change (`_pending_records`)."""

        async def record() -> None:
            try:
                await self._record(rtype, saved, applied)
            except KapplyError as e:
                raise failed(change, str(e)) from e

        self._pending_records.append(asyncio.ensure_future(record()))

    async def _rtype(self, res: Obj) -> ResourceType:
        """The resource's type; an unknown kind (one whose CRD was just created) re-reads discovery, which
        can lag a CRD's Established condition by a moment."""
        for attempt in range(DISCOVERY_RETRIES):
            rtype = self.discovery.find(res["apiVersion"], res["kind"])
            if rtype is not None:
                return rtype
            if attempt:
                await asyncio.sleep(0.5)
            self.discovery = await self.cluster.discovery(refresh=True)
        raise ApplyError(f"Expected to find kind '{res['apiVersion']}/{res['kind']}', but did not")

    async def _write(self, verb: str, change: Change, call: Callable[[], Awaitable[Obj]]) -> Obj:
        try:
            return await call()
        except ClusterError as e:
            raise ApplyError(f"{verb} resource {change.describe()}: {e}") from e

    def _recording(self, body: Obj, applied: Obj, live: Obj | None = None) -> Obj:
        """`body` with the annotations that record `applied`, computed as if the server stores `body` unchanged (it
        usually does: then the write is the only one), or with the fields of its spec the server filled in `live`
        (the object an update replaces, or the last one of its type created: see `_as_stored`). Unchanged when they
        cannot be recorded in the write."""
        if not records_original(applied):
            return body
        annotations = last_applied_annotations(_as_stored(body, live), applied, self.config)
        if annotations is None:
            return body
        merged = objects.annotations(body) | annotations
        if sum(len(k) + len(v) for k, v in merged.items()) > MAX_ANNOTATIONS_SIZE:
            return body  # the write would be refused: record after it (which warns)
        return {**body, "metadata": {**body["metadata"], "annotations": merged}}

    async def _record(self, rtype: ResourceType, saved: Obj, applied: Obj, written: Obj | None = None) -> None:
        """Annotate the stored object with the copy kapply applied, unless the write already did so correctly; and
        with its identity when the server named it (`generateName`: it was written as `<generateName>*`), as kapp's
        second write after a create does. `written`: the object as kapply's own write left it (`saved`, unless someone
        else wrote it since: then `saved` is the latest copy); the copy's fingerprint is of `written`, so that a change
        made in between (an autoscaler's, while kapp waits) is not recorded as kapply's and the next deploy sees it."""
        written = saved if written is None else written
        annotations = {objects.IDENTITY: identity_value(saved)}
        if records_original(applied) and records_original(saved):
            recording = last_applied_annotations(written, applied, self.config)
            if recording is None:
                self.progress.warn(
                    f"Not recording the last-applied copy of {describe(saved)}: it is larger than "
                    f"{MAX_ANNOTATION_VALUE} bytes, the limit of an annotation value; the next deploy "
                    "diffs it against the live object"
                )
            else:
                annotations |= recording
        current = objects.annotations(saved)
        if all(current.get(k) == v for k, v in annotations.items()):
            return
        meta = saved["metadata"]
        recorded = {**saved, "metadata": {**meta, "annotations": current | annotations}}
        try:
            await self.cluster.update(rtype, recorded)  # with the resourceVersion read: a change in between is a 409
        except ClusterError as e:
            if e.invalid:  # the annotations together exceed what the server accepts
                self.progress.warn(f"Not recording the last-applied copy of {describe(saved)}: {e}")
            elif e.conflict:  # changed in between (a controller): record against the latest copy
                latest = await self.cluster.get(rtype, meta.get("namespace"), meta["name"])
                if latest is not None:
                    await self._record(rtype, latest, applied, written)
            else:
                raise ApplyError(f"Recording the last-applied copy of {describe(saved)}: {e}") from e

    async def _create(self, change: Change) -> None:
        assert change.new is not None
        res = with_identity(change.new)
        rtype = await self._rtype(res)
        strategy = create_strategy(res)
        kind = (rtype.api_version, rtype.kind)
        try:
            saved = await self.cluster.create(rtype, self._recording(res, change.new, self._created.get(kind)))
        except ClusterError as e:
            if e.conflict and strategy is not CreateStrategy.PLAIN:
                await self._update_after_create(change, rtype, strategy)
                return
            raise ApplyError(f"Creating resource {change.describe()}: {e}") from e
        if not objects.metadata(res).get("name"):
            self.generated[change.key] = objects.name(saved)
        self.answers[change.key] = saved
        self._created[kind] = saved
        self._record_later(change, rtype, saved, change.new)

    async def _update_after_create(self, change: Change, rtype: ResourceType, strategy: CreateStrategy) -> None:
        gone = "resource disappeared while falling back to update"
        recalculated = await self._recalculated(change, rtype, change.resource["metadata"], gone)
        if recalculated.op is not Op.UPDATE:
            if strategy is CreateStrategy.FALLBACK_ON_UPDATE_OR_NOOP:
                return
            raise ApplyError(
                "Recalculated change was a noop but those are not allowed "
                "(try adding annotation kapp.k14s.io/create-strategy: fallback-on-update-or-noop)"
            )
        await self._update(recalculated)

    async def _update(self, change: Change) -> None:
        assert change.to_apply is not None and change.new is not None and change.recorded is not None
        rtype = await self._rtype(change.to_apply)
        strategy = update_strategy(change.new, self.options.default_update_strategy)
        if strategy is UpdateStrategy.SKIP:
            return
        if strategy is UpdateStrategy.ALWAYS_REPLACE:
            await self._replace(change, rtype)
            return
        approved = fingerprint(change.left, change.right)
        for _ in range(CONFLICT_RETRIES):
            try:
                body = self._recording(with_identity(change.to_apply), change.recorded, change.existing)
                saved = await self.cluster.update(rtype, body)
                self.answers[change.key] = saved
                self._record_later(change, rtype, saved, change.recorded)
                return
            except ClusterError as e:
                if e.invalid and strategy is UpdateStrategy.FALLBACK_ON_REPLACE:
                    await self._replace(change, rtype)
                    return
                if not e.conflict:
                    raise ApplyError(f"Updating resource {change.describe()}: {e}") from e
                conflict = e
            gone = "resource was deleted while updating it"
            recalculated = await self._recalculated(change, rtype, change.to_apply["metadata"], gone)
            if recalculated.op is Op.UPDATE and fingerprint(recalculated.left, recalculated.right) != approved:
                raise ApplyError(
                    "Failed to update due to resource conflict (approved "
                    f"diff no longer matches): {conflict}: Recalculated diff:\n"
                    f"{self._minimal_diff(recalculated)}"
                )
            if recalculated.op is not Op.UPDATE:
                return
            change = recalculated
        raise ApplyError(f"Failed to update due to resource conflict (tried multiple times): {conflict}")

    async def _recalculated(self, change: Change, rtype: ResourceType, meta: Obj, gone: str) -> Change:
        """The change calculated again against the object `meta` names as it is now on the cluster (someone else wrote
        it in between); ApplyError `gone` when it no longer exists."""
        live = await self.cluster.get(rtype, meta.get("namespace"), meta["name"])
        if live is None:
            raise ApplyError(gone)
        live["apiVersion"], live["kind"] = rtype.api_version, rtype.kind
        return calculate(change.new, live, self.config, policy=change.policy)

    def _minimal_diff(self, change: Change) -> str:
        left, right = (
            to_yaml(masked(side, self.config, self.masks)).split("\n") if side is not None else []
            for side in (change.left, change.right)
        )
        return render_minimal(diff_lines(left, right))

    async def _replace(self, change: Change, rtype: ResourceType) -> None:
        assert change.existing is not None and change.new is not None
        meta = change.existing["metadata"]
        await self.cluster.delete(rtype, meta.get("namespace"), meta["name"], uid=meta.get("uid"))
        while await self.cluster.get(rtype, meta.get("namespace"), meta["name"]) is not None:
            await asyncio.sleep(0.5)
        body = self._recording(with_identity(change.new), change.new)
        saved = await self._write("Creating", change, lambda: self.cluster.create(rtype, body))
        self.answers[change.key] = saved
        await self._record(rtype, saved, change.new)

    async def _delete(self, change: Change) -> None:
        assert change.existing is not None
        res = change.existing
        rtype = await self._rtype(res)
        meta = res["metadata"]
        if delete_strategy(res) is DeleteStrategy.ORPHAN:
            patch = [
                {"op": "remove", "path": "/metadata/labels/" + objects.APP_LABEL.replace("/", "~1")},
                {"op": "add", "path": "/metadata/labels/" + objects.ORPHANED_LABEL.replace("/", "~1"), "value": ""},
            ]
            await self._write(
                "Patching", change, lambda: self.cluster.patch(rtype, meta.get("namespace"), meta["name"], patch)
            )
            return
        if "delete" not in rtype.verbs:
            return
        try:
            # The UID precondition: never delete an object that replaced ours under the same name (the server
            # answers 409, which is reported: the object the plan showed was not the one deleted).
            answer = await self.cluster.delete(rtype, meta.get("namespace"), meta["name"], uid=meta.get("uid"))
        except ClusterError as e:
            raise ApplyError(f"Deleting resource {change.describe()}: {e}") from e
        if gone_as_answered(answer, meta.get("uid")):
            self.deleted.add(change.key)

    async def _exists(self, change: Change) -> None:
        """Wait until the resource exists, as kapp retries the change: each miss is its retryable error (which kapp's
        de-duplication shows once a minute), until `--apply-timeout`."""
        res = change.resource
        rtype = await self._rtype(res)
        meta = res["metadata"]
        deadline = asyncio.get_running_loop().time() + self.options.timeout
        missing = "External resource doesn't exists"
        while await self.cluster.get(rtype, meta.get("namespace"), meta["name"]) is None:
            self.notices.lines([f"exists {change.describe()}", f" ^ Retryable error: {missing}"])
            if asyncio.get_running_loop().time() > deadline:
                raise ApplyTimedOut(
                    f"Timed out waiting after {format_duration(self.options.timeout)}: "
                    f"Last error: exists {change.describe()}: {missing}"
                )
            await asyncio.sleep(EXISTS_CHECK_INTERVAL)

    async def apply_one(self, change: Change) -> None:
        """Apply the change; a failure is raised as kapp reports it (see `failed`)."""
        action = {Op.ADD: self._create, Op.UPDATE: self._update, Op.DELETE: self._delete, Op.EXISTS: self._exists}.get(
            change.op
        )
        if action is None:
            return
        try:
            await action(change)
        except ApplyTimedOut:
            raise
        except KapplyError as e:
            raise failed(change, str(e)) from e


def gone_as_answered(answer: Obj | None, uid: str | None) -> bool:
    """Whether a DELETE's answer says the object is gone: the Status the API server answers for an object it removed
    at once (`status: Success`, its UID in the details), or the object as deleted, without a deletionTimestamp
    (Services and custom resources answer so). An object still going (finalizers, a grace period) comes back with a
    deletionTimestamp, and no answer (gone already: a 404; a client that says nothing) proves nothing: those are read
    as kapp reads every deleted resource until it is gone. Gone by its UID is gone for good (issue 33: the wait check
    after a group of deletes then reads only what the answers left open)."""
    if not answer or not uid:
        return False
    if answer.get("kind") == "Status":
        details = answer.get("details")
        return answer.get("status") == "Success" and isinstance(details, dict) and details.get("uid") == uid
    meta = answer.get("metadata")
    return isinstance(meta, dict) and meta.get("uid") == uid and "deletionTimestamp" not in meta


def _as_stored(body: Obj, live: Obj | None) -> Obj:
    """What the server is likely to store when `body` replaces `live` (or is created like it): `body`, with the fields
    of its spec that only `live` has, which the server's defaults fill in again (a Service's `sessionAffinity`, a
    port's `protocol`, a Deployment's `strategy`: issue 33, a second write less). A guess only: `_record` checks it
    against what the server stored, and writes the record again when it was wrong (a field the new spec leaves out, a
    default that depends on the object)."""
    if live is None or not isinstance(body.get("spec"), dict):
        return body
    return {**body, "spec": _filled(body["spec"], live.get("spec"))}


def _filled(value: object, like: object) -> object:
    """`value` with what `like` has beside it: keys it lacks, recursively, and lists of the same length item by item."""
    if isinstance(value, dict) and isinstance(like, dict):
        return {
            **{k: v for k, v in like.items() if k not in value},
            **{k: _filled(v, like.get(k)) for k, v in value.items()},
        }
    if isinstance(value, list) and isinstance(like, list) and len(value) == len(like):
        return [_filled(v, other) for v, other in zip(value, like, strict=True)]
    return value


class ApplyTimedOut(ApplyError):
    """`--apply-timeout` passed while a change could not be applied yet (a `kapp.k14s.io/exists` resource still
    missing): reported as kapp reports it, naming the last error, after which kapp prints nothing for the change."""
