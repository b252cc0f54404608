"""`kapply controller`: the App controller (and the packaging controllers) in the foreground, logging to stderr, until
interrupted."""

from __future__ import annotations

import asyncio
import logging
import math
import os
import signal
from dataclasses import replace
from typing import TYPE_CHECKING

from kapply.cli import groups
from kapply.cli.command import Args
from kapply.cli.common import run
from kapply.cli.controller_flags import API_GROUPS, DEFAULT_DRIFT_POLICY, DRIFT_WATCHES, choice
from kapply.cli.pflag import UsageError
from kapply.cli.tree import CONTROLLER_NAMESPACE
from kapply.flags import DEBUG
from kapply.values import format_duration

if TYPE_CHECKING:
    from kapply.controller.leader import Timing
    from kapply.ui.output import Output

# client-go's leader election timing, longest first: each must be shorter than the one before, the last more than 0
LEASE_TIMING = ("leader-elect-lease-duration", "leader-elect-renew-deadline", "leader-elect-retry-period")


def lease_timing(args: Args) -> Timing:
    """The leader election's timing from its flags (the leader Lease's, and with --shards every Lease's)."""
    from kapply.controller.leader import Timing

    values = [args[name] for name in LEASE_TIMING]
    shown = [f"--{name}={_duration(value)}" for name, value in zip(LEASE_TIMING, values, strict=True)]
    if values[2] <= 0:
        raise UsageError(f"{shown[2]}: expected more than 0")
    for longer in (1, 0):
        if values[longer] <= values[longer + 1]:
            raise UsageError(f"{shown[longer]}: expected longer than {shown[longer + 1]}")
    return Timing(*values)


def _duration(seconds: float) -> str:
    return format_duration(seconds) if seconds >= 0 else "-" + format_duration(-seconds)


def controller(args: Args, out: Output) -> None:
    from kapply.api import AsyncClient, DriftPolicy
    from kapply.controller import health, logs
    from kapply.controller.main import LEASE_NAMESPACE, ControllerOptions
    from kapply.controller.move import taken_data_group
    from kapply.controller.settings import DriftWatching, Settings
    from kapply.controller.vocabulary import VOCABULARIES, ApiGroups
    from kapply.http import addresses_of
    from kapply.packaging.process import run as run_controller
    from kapply.packaging.settings import from_flags

    try:
        log_format = logs.LogFormat(args["log-format"])
    except ValueError:
        raise UsageError(f"--log-format {args['log-format']!r}: expected text or json") from None
    try:
        endpoints = health.parse_address(args["metrics-bind-address"])
    except ValueError as e:
        raise UsageError(str(e)) from None
    for name in ("namespace-concurrency", "fetch-min-rate"):
        if args[name] < 0:
            raise UsageError(f"--{name}={args[name]}: expected 0 or more")
    for name in ("concurrency", "fetch-timeout", "fetch-min-rate-window", "sandbox-memory-mib", "sandbox-cpu"):
        if args[name] <= 0:
            raise UsageError(f"--{name}={args[name]}: expected more than 0")
    policy = choice(DriftPolicy, DEFAULT_DRIFT_POLICY, args[DEFAULT_DRIFT_POLICY])
    watching = choice(DriftWatching, DRIFT_WATCHES, args[DRIFT_WATCHES])
    vocabulary = VOCABULARIES[choice(ApiGroups, API_GROUPS, args[API_GROUPS])]
    if args["shards"] < 1 or (args["shards"] > 1 and not args["leader-elect"]):
        raise UsageError(f"--shards={args['shards']}: expected 1, or more with --leader-elect")
    timing = lease_timing(args)
    logs.configure(logging.DEBUG if args[DEBUG] else logging.INFO, log_format)
    options = ControllerOptions(
        settings=Settings(
            default_sync_period=args["default-sync-period"],
            min_sync_period=args["min-sync-period"],
            ghost_quiet_syncs=args["ghost-diff-quiet-syncs"],
            default_drift_policy=policy,
            drift_watches=watching,
            progress_interval=args["progress-interval"],
            allow_file_urls=args["dangerous-allow-file-urls"],
            allow_plain_http_registries=args["dangerous-allow-plain-http-registries"],
            allow_local_sources=args["dangerous-allow-local-sources"],
            fetch_timeout=args["fetch-timeout"],
            fetch_min_rate=args["fetch-min-rate"],
            fetch_min_rate_window=args["fetch-min-rate-window"],
            sandbox_memory=args["sandbox-memory-mib"] << 20,
            sandbox_cpu=math.ceil(args["sandbox-cpu"]),
            sandbox_timeout=args["sandbox-timeout"],
            vocabulary=vocabulary,
        ),
        namespace=args[CONTROLLER_NAMESPACE] or None,
        workers=args["concurrency"],
        per_namespace=args["namespace-concurrency"],
        leader_election=args["leader-elect"],
        lease_namespace=args["lease-namespace"],
        lease_name=args["lease-name"],
        lease_timing=timing,
        shards=args["shards"],
        endpoints=endpoints,
    )
    # The packaging controllers (PackageRepositories, PackageInstalls) run in the same process, as kapp-controller's.
    packaging = from_flags(
        args["packaging"],
        args["package-install-default-sync-period"],
        args["packaging-global-namespace"] or vocabulary.global_namespace,
    )

    async def main() -> None:
        # SIGTERM (a pod being stopped) ends the controller as Ctrl-C does: running deploys are cancelled (their hold on
        # the app record is given back), the leader Lease is released, and the process exits 0.
        terminated = asyncio.Event()
        me = asyncio.current_task()
        assert me is not None

        def stop() -> None:
            terminated.set()
            me.cancel()

        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop)
        kube = groups.kubeconfig(args)
        try:
            async with AsyncClient(
                kube.path,
                context=kube.context,
                kubeconfig_yaml=kube.yaml,
                in_cluster=args["in-cluster"],
                service_account_dir=os.environ.get("KAPPLY_SERVICE_ACCOUNT_DIR"),
            ) as api:
                # The Lease goes where the shipped RBAC lets the controller hold it: in cluster, the pod's own namespace
                # (as controller-runtime does); out of cluster, kapply-system.
                default = (api.cluster.namespace if args["in-cluster"] else None) or LEASE_NAMESPACE
                # Sources may never name the API server (in cluster: also its Service's address).
                server = await addresses_of(api.cluster.server, os.environ.get("KUBERNETES_SERVICE_HOST", ""))
                settings = replace(options.settings, api_server_addresses=server)
                # a cluster kapp-controller left may still route the Packages' group to its aggregated API
                if (taken := await taken_data_group(api.cluster, vocabulary)) is not None:
                    logging.getLogger("kapply.controller").error(taken)
                await run_controller(
                    api,
                    replace(options, lease_namespace=options.lease_namespace or default, settings=settings),
                    packaging,
                )
        except asyncio.CancelledError:
            if not terminated.is_set():
                raise
            logging.getLogger("kapply.controller").info("stopped (SIGTERM)")

    run(main())
