"""`kapply controller`: the App controller in the foreground, logging to stderr, until interrupted."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
from typing import TYPE_CHECKING

from kapply.cli import groups
from kapply.cli.command import Args
from kapply.cli.common import run

if TYPE_CHECKING:
    from kapply.ui.output import Output


def controller(args: Args, out: Output) -> None:
    from kapply.api import AsyncClient
    from kapply.controller.main import ControllerOptions
    from kapply.controller.main import run as run_controller
    from kapply.controller.reconciler import Settings

    logging.basicConfig(
        level=logging.DEBUG if args["debug"] else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    options = ControllerOptions(
        settings=Settings(default_sync_period=args["default-sync-period"], min_sync_period=args["min-sync-period"]),
        namespace=args["namespace"] or None,
        workers=args["concurrency"],
        leader_election=args["leader-elect"],
        lease_namespace=args["lease-namespace"],
        lease_name=args["lease-name"],
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
                await run_controller(api, options)
        except asyncio.CancelledError:
            if not terminated.is_set():
                raise
            logging.getLogger("kapply.controller").info("stopped (SIGTERM)")

    run(main())
