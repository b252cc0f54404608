"""kapply's Python API: one client object per cluster, async or sync, that plans and runs deploys and deletes and
reads apps and their history. The CLI and the controller use nothing else to do their work.

    import kapply

    with kapply.Client() as k:                        # the kubeconfig, as kapp finds it
        plan = k.plan_deploy("web", files=["config/"], namespace="prod")
        print(plan.line_diffs())
        result = k.run_deploy(plan)

    async with kapply.AsyncClient(in_cluster=True) as k:
        await k.deploy("web", resources=[{"apiVersion": "v1", "kind": "ConfigMap", ...}], namespace="prod")
"""

from __future__ import annotations

import asyncio
import functools
import importlib
import io
import os
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass, replace
from types import TracebackType
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, TextIO, TypeVar

from kapply import objects
from kapply.app import record
from kapply.app.record import App
from kapply.errors import KapplyError, ManifestError
from kapply.flags import DELETE_FLAGS, DEPLOY_FLAGS, Target, allow_rules, resource_filter, setting
from kapply.objects import Obj
from kapply.resources.cluster import Cluster, ResourceType
from kapply.resources.kubeconfig import SERVICE_ACCOUNT, KubeconfigFlags, default_namespace, load, with_token
from kapply.resources.labeled import get_each, is_transient

# The pipelines, the diff and the history are imported where a call uses them: a client that inspects or lists apps
# imports none of them.
if TYPE_CHECKING:
    from kapply.app.history import AppChange
    from kapply.apply.planning import ClusterChange
    from kapply.apply.progress import Progress
    from kapply.config.config import Config
    from kapply.delete import DeleteOptions, DeletePlan
    from kapply.deploy import DeployOptions, Plan, Result
    from kapply.diff.attribution import OutsideField
    from kapply.diff.change import Change
    from kapply.diff.drift import DriftPolicy
    from kapply.diff.fields import FieldPath
    from kapply.diff.ghost import FieldDrift

__all__ = [
    "App",
    "AsyncClient",
    "Client",
    "DeleteOptions",
    "DeployOptions",
    "DriftPolicy",
    "FieldPath",
    "FieldReport",
    "OutsideFields",
    "Plan",
    "Resources",
    "Transcript",
    "delete_options",
    "deploy_options",
    "is_transient",
    "rebase_config",
    "record_names",
]

Resources = Sequence[Mapping[str, Any]]


# Exported here, imported from their own modules when first asked for (`from kapply.api import DeployOptions`).
_LAZY_EXPORTS = {
    "DeleteOptions": "kapply.delete",
    "DeployOptions": "kapply.deploy",
    "Plan": "kapply.deploy",
    "DriftPolicy": "kapply.diff.drift",
    "FieldPath": "kapply.diff.fields",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY_EXPORTS:
        return getattr(importlib.import_module(_LAZY_EXPORTS[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


_P = ParamSpec("_P")
_T = TypeVar("_T")


def deploy_options(flags: Mapping[str, Any]) -> DeployOptions:
    """DeployOptions from kapp's deploy flags by name (`"diff-against-last-applied"`, `"apply-timeout"` in seconds,
    `"map-ns"` as `src=dst` strings, ...): what `kapply deploy` and the controller's `rawOptions` both build. Each
    flag sets the fields its declaration in kapply.flags names; a flag not given takes its declared default."""
    from kapply.apply.options import ApplyOptions, WaitOptions
    from kapply.deploy import DeployOptions, DiffOptions

    def of(target: Target) -> dict[str, Any]:
        return setting(DEPLOY_FLAGS, target, flags)

    return DeployOptions(
        **of(Target.DEPLOY),
        diff=DiffOptions(**of(Target.DIFF)),
        apply=ApplyOptions(**of(Target.APPLY)),
        wait=WaitOptions(**of(Target.WAIT)),
        resource_filter=resource_filter(flags),
        allow=allow_rules(flags),
    )


def delete_options(flags: Mapping[str, Any], prefix: str = "") -> DeleteOptions:
    """DeleteOptions from kapp's delete flags by name, as `deploy_options` (kapp's delete defaults: it waits for
    ignored changes). `prefix` "delete-" takes the apply and wait flags `app-group deploy` has for the apps it
    deletes (`--delete-apply-timeout`, ...), and no resource filter, as kapp."""
    from kapply.apply.options import ApplyOptions, WaitOptions
    from kapply.delete import DeleteOptions

    return DeleteOptions(
        apply=ApplyOptions(**setting(DELETE_FLAGS, Target.APPLY, flags, prefix)),
        wait=WaitOptions(**setting(DELETE_FLAGS, Target.WAIT, flags, prefix)),
        resource_filter=None if prefix else resource_filter(flags),
        **setting(DELETE_FLAGS, Target.DELETE, flags),
    )


def record_names(app: str) -> frozenset[str]:
    """The names the ConfigMap of `app`'s record may have: kapp's two (`<app>` and `<app>.apps.k14s.io`)."""
    return frozenset({app, app + record.FQ_SUFFIX})


@dataclass(frozen=True, slots=True)
class FieldReport:
    """A field of a plan that someone other than kapply or kapp wrote on the cluster, as a report shows it: the
    resource (`Change.describe()`), the path, the desired and live values (JSON cut at 80 characters, `(none)` when
    absent, never the value of a resource under a diffMaskRule, a Secret's), and who wrote it. `obj` and `field` are
    the resource and the path themselves, for `rebase_config`."""

    resource: str
    path: str
    desired: str
    live: str
    written_by: str
    obj: Obj
    field: FieldPath

    @classmethod
    def of(cls, item: OutsideField, config: Config) -> FieldReport:
        from kapply.diff import ghost

        obj, path = item.change.resource, item.field.path
        desired, live = (ghost.shown_value(obj, value, config) for value in (item.field.desired, item.field.live))
        return cls(item.change.describe(), str(path), desired, live, item.written_by, obj, path)


@dataclass(frozen=True, slots=True)
class OutsideFields:
    """What `AsyncClient.outside_fields` found in a plan: `drift`, the fields others changed that the drift policy
    (`preserve`, `warn`) leaves as they are; `ghosts`, the fields the plan's updates set back (ghost diffs)."""

    drift: tuple[FieldReport, ...] = ()
    ghosts: tuple[FieldReport, ...] = ()


def ghost_diffs(plan: Plan) -> list[tuple[Change, tuple[FieldDrift, ...]]]:
    """The fields each update of the plan changes, for a plan whose desired state is the one deployed last time:
    every one of them was changed on the cluster since (a ghost diff)."""
    from kapply.diff import ghost
    from kapply.diff.change import Op

    found = []
    for change in (c.change for c in plan.changes if c.change.op is Op.UPDATE):
        if change.left is not None and change.right is not None and change.existing is not None:
            found.append((change, tuple(ghost.explain(change.left, change.right, change.existing, change.new))))
    return found


def rebase_config(fields: Sequence[tuple[Obj, Sequence[FieldPath]]], more_rules: Sequence[Obj] = ()) -> str:
    """The kapp Config, as YAML ready to paste next to the app's resources, whose rebase rules keep the cluster's
    value of each resource's fields (one rule per kind, see kapply.diff.ghost.suggest_rebase_rules), followed by
    `more_rules` not already among them."""
    from kapply.diff import ghost

    config = ghost.suggest_rebase_rules(fields)
    config["rebaseRules"] += [r for r in more_rules if r not in config["rebaseRules"]]
    return ghost.config_yaml(config)


class Transcript:
    """kapp's deploy output as text, as kapp-controller keeps it in a status: lines, a plan's changes table (after its
    `--diff-changes` hunks when asked), then the lines of a `progress()` given to `run_deploy`. `text` is what it
    holds so far (a deploy that runs long shows its progress)."""

    def __init__(self) -> None:
        from kapply.ui.output import Output

        self._text = io.StringIO()
        self._out = Output(tty=True, out=self._text)

    @property
    def text(self) -> str:
        return self._text.getvalue()

    def line(self, text: str) -> None:
        self._out.line(text)

    def plan(self, plan: Plan, *, hunks: bool = False) -> None:
        from kapply.ui.changes import changes_table, show_hunks

        if hunks:
            show_hunks(self._out, plan.hunks())
        self._out.table(changes_table(plan.changes))

    def progress(self) -> Progress:
        from kapply.ui.messages import ProgressLines

        return ProgressLines(self._out)

    def resources(self, app: str, resources: Sequence[Obj], *, tree: bool = False, status: bool = False) -> None:
        """`kapp inspect`'s output for `app`'s resources: its table (`tree`: as a tree; `status`: their status)."""
        from kapply.ui.resources import resources_table, status_table

        source = f"app '{app}'"
        self._out.table(status_table(source, resources) if status else resources_table(source, resources, tree=tree))

    def raw(self, resources: Sequence[Obj]) -> None:
        """`kapp inspect --raw`'s output: each resource's YAML."""
        from kapply.ui.resources import raw, raw_order

        for obj in raw_order(resources):
            self._out.block(raw(obj))

    def finish(self) -> None:
        self._out.finish()


class AsyncClient:
    """A connection to one cluster. Connects as kapp does: `kubeconfig_yaml`, else the `kubeconfig` path (or
    $KAPP_KUBECONFIG, $KUBECONFIG, ~/.kube/config), with `context`; or, with `in_cluster`, the pod's service
    account. `namespace` is the default for every call (else $KAPP_NAMESPACE, else the context's)."""

    def __init__(
        self,
        kubeconfig: str | os.PathLike[str] | None = None,
        *,
        context: str | None = None,
        kubeconfig_yaml: str | None = None,
        in_cluster: bool = False,
        namespace: str | None = None,
        timeout: float = 60,
        service_account_dir: str | None = None,
    ) -> None:
        flags = KubeconfigFlags(
            str(kubeconfig) if kubeconfig is not None else None,
            context,
            kubeconfig_yaml,
            in_cluster=in_cluster,
            service_account_dir=service_account_dir or SERVICE_ACCOUNT,
        )
        self.cluster = Cluster(load(flags), timeout=timeout)
        self._namespace = namespace
        self._target: str | None = None

    @property
    def server(self) -> str:
        return self.cluster.server

    def with_token(self, token: str, namespace: str) -> AsyncClient:
        """A client of the same cluster acting as a service account (`token`, e.g. from the TokenRequest API), with
        `namespace` as its default: deploying with the rights of that account, never this client's."""
        return AsyncClient(kubeconfig_yaml=with_token(self.cluster.context, token, namespace), namespace=namespace)

    def through(self, cluster: Cluster) -> AsyncClient:
        """This client with every request sent through `cluster` (a kapply.resources.confined.Confined wrapping this
        client's, say), with the same default namespace."""
        client = AsyncClient.__new__(AsyncClient)
        client.cluster, client._namespace, client._target = cluster, self._namespace, None
        return client

    def namespace(self, explicit: str | None = None) -> str:
        """The namespace a call uses: `explicit`, else the client's, else $KAPP_NAMESPACE, else the context's."""
        return default_namespace(explicit or self._namespace, self.cluster.namespace)

    async def close(self) -> None:
        await self.cluster.close()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def target(self) -> str:
        """kapp's `Target cluster '<server>' (nodes: <oldest node>, <N-1>+)`, read once per client."""
        if self._target is None:
            self._target = await self.cluster.target()
        return self._target

    async def prefetch_app(self, app: str, *, namespace: str | None = None, app_namespace: str | None = None) -> None:
        """Starts reading `app`'s record (in `app_namespace`, else `namespace`, as `plan_deploy` and `plan_delete`
        place it) and returns at once; a plan of the app (or `get_app`, `find_app`) made soon after takes that answer
        instead of asking: for a caller with other work to do first (the CLI imports its planning code meanwhile, or
        asks for the nodes of its target line: one round trip less at a distance). Sends nothing for a labeled app; a
        failed read is the plan's to report. (`Client`'s read leaves with its next call.)"""
        record.read_ahead(self.cluster, app_namespace or self.namespace(namespace), app)

    async def plan_deploy(
        self,
        app: str,
        *,
        files: Sequence[str | os.PathLike[str]] = (),
        resources: Resources | None = None,
        namespace: str | None = None,
        app_namespace: str | None = None,
        options: DeployOptions | None = None,
        stdin: TextIO | None = None,
        manifests: str | None = None,
    ) -> Plan:
        """The changes deploying `files` (paths, directories, `-` for `stdin`), `resources` (dicts) and `manifests`
        (YAML documents as text) as `app` would make. Writes nothing. `manifests` are read as kapp reads `-f -` (what
        kapp-controller passes its templated output as): named `stdin` in messages, so not with `stdin` too.
        `options` None: kapp's deploy defaults (`DeployOptions()`)."""
        from kapply import deploy as deploy_pipeline

        paths = tuple(str(f) for f in files)
        if manifests is not None:
            if stdin is not None:
                raise ManifestError("Expected either manifests or stdin, not both")
            paths, stdin = (*paths, "-"), io.TextIOWrapper(io.BytesIO(manifests.encode()), encoding="utf-8")
        source = deploy_pipeline.Source(paths, resources, stdin)
        return await deploy_pipeline.plan(
            self.cluster,
            app,
            source,
            deploy_pipeline.DeployOptions() if options is None else options,
            namespace_name=self.namespace(namespace),
            app_namespace=app_namespace,
        )

    async def plan_rollback(
        self, app: str, change: str, *, namespace: str | None = None, options: DeployOptions | None = None
    ) -> Plan:
        """The changes deploying again what the app-change `change` of `app` (in `namespace`) applied make (kapply's
        `app-change rollback`): its kept documents, placed as they were, with `options` (the diff, apply and wait
        ones; its placement is the change's). Running the plan records a change that says it rolls back to `change`.
        Writes nothing. KapplyError when the app has no such change, or the change kept nothing."""
        from kapply import deploy as deploy_pipeline
        from kapply.app import history

        found = await self.get_app(app, namespace=namespace)
        if change not in {c.name for c in await history.list_changes(self.cluster, found)}:
            raise KapplyError(
                f"App-change '{change}' of {found.describe()} does not exist "
                f"(hint: kapply app-change list -a {found.name})"
            )
        applied = await history.kept(self.cluster, found, change)
        if applied is None:
            raise KapplyError(
                f"App-change '{change}' of {found.describe()} kept nothing to roll back to (it was recorded by kapp, "
                "by a kapply that did not keep changes yet, by a user who may not create Secrets, by a partial "
                "deploy (--patch, --filter, --diff-filter), or was too large to keep)"
            )
        options = replace(
            deploy_pipeline.DeployOptions() if options is None else options,
            into_namespace=applied.into_namespace,
            namespace_map=applied.namespace_map,
            rollback_of=change,
            prev_app="",
        )
        return await deploy_pipeline.plan(
            self.cluster,
            found.name,
            deploy_pipeline.Source(resources=applied.documents),
            options,
            namespace_name=applied.namespace,
            app_namespace=found.namespace,
        )

    async def check_deploy(self, plan: Plan) -> None:
        """The checks kapp makes between showing a plan and applying it: `--allow-*` (ManifestError) and, when the plan
        changes something, the `--preflight` checks (PreflightError). Nothing is written."""
        from kapply import deploy as deploy_pipeline

        await deploy_pipeline.check(self.cluster, plan)

    async def run_deploy(self, plan: Plan, *, progress: Progress | None = None) -> Result:
        """Apply a plan, wait until it converges, and record it in the app's history."""
        from kapply import deploy as deploy_pipeline

        return await deploy_pipeline.run(self.cluster, plan, progress)

    async def outside_changes(
        self, plan: Plan, found: Sequence[tuple[Change, Sequence[FieldDrift]]] | None = None
    ) -> list[OutsideField]:
        """The fields of the plan someone other than kapply or kapp wrote on the cluster (`plan.outside_changes()`,
        or the given fields of its changes), each with who wrote it: the field manager, or for a field no manager
        wrote, the mutating admission webhooks that may have."""
        from kapply.diff import attribution

        return await attribution.attribute(
            self.cluster, plan.discovery, plan.outside_changes() if found is None else found
        )

    async def outside_fields(self, plan: Plan, *, ghosts: bool = False) -> OutsideFields:
        """Drift and ghost diffs in one call, each field with its writer (see `outside_changes`): the fields others
        changed that the plan's drift policy leaves as they are (none under `enforce`) and, with `ghosts` (for a plan
        of the same desired state as the deploy before it), every field the plan's updates set back."""
        from kapply.diff.drift import DriftPolicy

        drift = plan.outside_changes() if plan.options.drift_policy is not DriftPolicy.ENFORCE else []
        set_back = ghost_diffs(plan) if ghosts else []
        found = await self.outside_changes(plan, [*drift, *set_back])
        reports = tuple(FieldReport.of(item, plan.config) for item in found)
        kept = sum(len(fields) for _, fields in drift)
        return OutsideFields(reports[:kept], reports[kept:])

    def resource_types(self, plan: Plan) -> list[ResourceType]:
        """The types of the app's objects (new and existing), each at its group's preferred version: the version a
        deploy lists them at."""
        found = (plan.discovery.preferred(g, k) for g, _, k in plan.used)
        return list({t: None for t in found if t is not None})

    async def still_current(self, plan: Plan) -> bool:
        """Whether each live object the plan starts from (those it would update or delete, and the drifted ones) is,
        on the API server, still the version the plan saw: a plan made from a cache that lagged is not (one GET per
        object, or one LIST for many of a type)."""
        changes = [c.change for c in plan.changes] + list(plan.drifted)
        read = list({objects.uid(c.existing): c.existing for c in changes if c.existing is not None}.values())
        if not read:
            return True
        seen = {objects.uid(obj): objects.metadata(obj).get("resourceVersion") for obj in read}
        live = await get_each(self.cluster, plan.discovery, read)
        return {objects.uid(obj): objects.metadata(obj).get("resourceVersion") for obj in live} == seen

    async def deploy(
        self,
        app: str,
        *,
        files: Sequence[str | os.PathLike[str]] = (),
        resources: Resources | None = None,
        namespace: str | None = None,
        app_namespace: str | None = None,
        options: DeployOptions | None = None,
        progress: Progress | None = None,
    ) -> Result:
        """Plan, check (`check_deploy`) and run a deploy (no confirmation: the caller decided)."""
        plan = await self.plan_deploy(
            app, files=files, resources=resources, namespace=namespace, app_namespace=app_namespace, options=options
        )
        await self.check_deploy(plan)
        return await self.run_deploy(plan, progress=progress)

    async def plan_delete(
        self, app: str, *, namespace: str | None = None, options: DeleteOptions | None = None
    ) -> DeletePlan | None:
        """What deleting `app` does (with kapp's delete defaults when `options` is None); None when it does not
        exist. Writes nothing."""
        from kapply import delete as delete_pipeline

        options = delete_pipeline.DeleteOptions() if options is None else options
        return await delete_pipeline.plan(self.cluster, app, options, namespace_name=self.namespace(namespace))

    async def run_delete(self, plan: DeletePlan, *, progress: Progress | None = None) -> tuple[ClusterChange, ...]:
        """Delete the app's resources, then its history and record; returns the changes that were waited on."""
        from kapply import delete as delete_pipeline

        return await delete_pipeline.run(self.cluster, plan, progress)

    async def delete(
        self,
        app: str,
        *,
        namespace: str | None = None,
        options: DeleteOptions | None = None,
        progress: Progress | None = None,
    ) -> bool:
        """Plan and run a delete; False when the app did not exist."""
        plan = await self.plan_delete(app, namespace=namespace, options=options)
        if plan is None:
            return False
        await self.run_delete(plan, progress=progress)
        return True

    async def get_app(self, app: str, *, namespace: str | None = None) -> App:
        """The app's record; AppNotFoundError when there is none."""
        return await record.require(self.cluster, self.namespace(namespace), app)

    async def find_app(self, app: str, *, namespace: str | None = None) -> App | None:
        """The app's record; None when there is none."""
        return await record.find(self.cluster, self.namespace(namespace), app)

    async def inspect(self, app: str, *, namespace: str | None = None) -> list[Obj]:
        """Every object labeled as the app's, controller-made ones included."""
        return await record.list_resources(self.cluster, await self.get_app(app, namespace=namespace))

    async def list_apps(
        self, namespace: str | None = None, *, all_namespaces: bool = False, labels: Mapping[str, str] | None = None
    ) -> list[App]:
        """The apps of a namespace (or all), only those whose record carries `labels` when given."""
        return await record.list_apps(self.cluster, None if all_namespaces else self.namespace(namespace), labels)

    async def app_changes(self, app: str, *, namespace: str | None = None) -> list[AppChange]:
        """The app's changes, oldest first, each with the masked diff kapply recorded."""
        from kapply.app import history

        return await history.list_changes(self.cluster, await self.get_app(app, namespace=namespace))


def _blocking(
    method: Callable[Concatenate[AsyncClient, _P], Coroutine[Any, Any, _T]],
) -> Callable[Concatenate[Client, _P], _T]:
    """AsyncClient's `method` as a Client method: the same parameters (and docstring), the call run on the client's
    event loop. It calls the method of that name on the client's `aio` (a subclass's, if it is one)."""
    name = method.__name__

    @functools.wraps(method)
    def run(self: Client, /, *args: _P.args, **kwargs: _P.kwargs) -> _T:
        bound: Callable[_P, Coroutine[Any, Any, _T]] = getattr(self.aio, name)
        return self._runner.run(bound(*args, **kwargs))

    return run


def _parameters_of(
    of: Callable[Concatenate[Any, _P], None],
) -> Callable[[Callable[..., None]], Callable[Concatenate[Any, _P], None]]:
    """Gives a constructor that passes its arguments on to `of` the parameters of `of` (for type checkers and
    `inspect.signature`): Client's are AsyncClient's, so the twins cannot differ."""

    def declared(init: Callable[..., None]) -> Callable[Concatenate[Any, _P], None]:
        return functools.update_wrapper(init, of, assigned=(), updated=())

    return declared


class Client:
    """The synchronous twin of AsyncClient (same arguments, same methods), for scripts and notebooks. Calls run on
    an event loop of its own, so one connection serves them all; use AsyncClient inside async code."""

    @_parameters_of(AsyncClient.__init__)
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._runner = asyncio.Runner()
        self.aio = AsyncClient(*args, **kwargs)

    @classmethod
    def _of(cls, aio: AsyncClient) -> Client:
        client = cls.__new__(cls)
        client._runner = asyncio.Runner()
        client.aio = aio
        return client

    @property
    def server(self) -> str:
        return self.aio.server

    def with_token(self, token: str, namespace: str) -> Client:
        """A client of the same cluster acting as a service account (AsyncClient.with_token), with a connection and
        an event loop of its own: close it too."""
        return Client._of(self.aio.with_token(token, namespace))

    def through(self, cluster: Cluster) -> Client:
        """This client with every request sent through `cluster` (AsyncClient.through), on this client's event loop:
        close this client, not the one returned."""
        client = Client.__new__(Client)
        client._runner, client.aio = self._runner, self.aio.through(cluster)
        return client

    def namespace(self, explicit: str | None = None) -> str:
        return self.aio.namespace(explicit)

    def close(self) -> None:
        try:
            self._runner.run(self.aio.close())
        finally:
            self._runner.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # Each runs AsyncClient's method of the same name on this client's event loop (see _blocking).
    target = _blocking(AsyncClient.target)
    prefetch_app = _blocking(AsyncClient.prefetch_app)
    plan_deploy = _blocking(AsyncClient.plan_deploy)
    plan_rollback = _blocking(AsyncClient.plan_rollback)
    check_deploy = _blocking(AsyncClient.check_deploy)
    run_deploy = _blocking(AsyncClient.run_deploy)
    outside_changes = _blocking(AsyncClient.outside_changes)
    outside_fields = _blocking(AsyncClient.outside_fields)

    def resource_types(self, plan: Plan) -> list[ResourceType]:
        return self.aio.resource_types(plan)

    still_current = _blocking(AsyncClient.still_current)
    deploy = _blocking(AsyncClient.deploy)
    plan_delete = _blocking(AsyncClient.plan_delete)
    run_delete = _blocking(AsyncClient.run_delete)
    delete = _blocking(AsyncClient.delete)
    get_app = _blocking(AsyncClient.get_app)
    find_app = _blocking(AsyncClient.find_app)
    inspect = _blocking(AsyncClient.inspect)
    list_apps = _blocking(AsyncClient.list_apps)
    app_changes = _blocking(AsyncClient.app_changes)
