"""`kapply dashboard`: serve the local web page of the Apps and PackageInstalls the kubeconfig's user can list
(kapply.dashboard; docs/dashboard.md) until Ctrl-C or SIGTERM, its intended end: `Dashboard stopped`, exit status 0
(not a command's `Interrupted`/`Terminated (changes applied so far stay applied)`: it applies nothing of its own).
Prints its URL (`Dashboard: http://127.0.0.1:<port>/<token>/`), which holds the random token the server answers to;
`--open` opens it in the default browser."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kapply.cli.command import Args, Command, FlagSection
from kapply.flags import NAMESPACE, Flag, Kind
from kapply.flags import tty as tty_flag

if TYPE_CHECKING:
    from kapply.ui.output import Output

PORT = Flag("port", Kind.INT, 0, "Listen on this port of 127.0.0.1 (0: one the system chooses)")
OPEN = Flag("open", Kind.BOOL, False, "Open the dashboard in the default browser")


def dashboard_command(section: str) -> Command:
    return Command(
        "dashboard",
        "Serve a local web dashboard of Apps and PackageInstalls, live (kapply)",
        "kapply.cli.dashboard:dashboard",
        section=section,
        flag_sections=(FlagSection("Flags", (NAMESPACE, OPEN, PORT, tty_flag(False))),),
    )


def dashboard(args: Args, out: Output) -> None:
    from kapply.cli.common import Terminated, run

    try:
        run(_dashboard(args))
    except (KeyboardInterrupt, Terminated):
        print("Dashboard stopped", flush=True)


async def _dashboard(args: Args) -> None:
    import webbrowser

    from kapply.cli.common import client
    from kapply.dashboard.server import serve

    def started(url: str) -> None:
        print(f"Dashboard: {url}", flush=True)
        if args[OPEN]:
            webbrowser.open(url)

    async with client(args, args[NAMESPACE]) as api:
        await serve(api, args[PORT], started)
