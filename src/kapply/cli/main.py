"""The `kapply` command: kapp's command tree, flags, help and exit statuses.

Handlers are imported when their command runs (`kapply version` imports no Kubernetes client). Errors print as
`kapply: Error: <message>` (in `--json` output, as the last line), laid out on several lines as kapp lays out its
errors, and exit 1; `--diff-exit-status` and `--apply-exit-status` exit 2 or 3, as kapp's do.

Installed as a drop-in (a link or copy named `kapp`), the program says `kapp` where kapp does: in its version, its
errors, its help and usage messages.
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import logging
import os
import sys
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, NoReturn

from kapply import __version__
from kapply.cli.command import handler, resolve
from kapply.cli.pflag import UsageError
from kapply.cli.tree import PROGRAM, global_flags, tree
from kapply.errors import KapplyError
from kapply.flags import DEBUG

if TYPE_CHECKING:
    from kapply.cli.command import Args
    from kapply.ui.output import Output

DROP_IN = "kapp"


def program() -> str:
    """The name the user knows the program by: `kapp` when it was run under that name (a drop-in install), else
    kapply's own."""
    return DROP_IN if os.path.basename(sys.argv[0]) == DROP_IN else PROGRAM


def version_text() -> str:
    """`kapply version <kapply's version>`; as a drop-in, `kapp version <the kapp release kapply follows>` (the
    version `minimumRequiredVersion` in a Config is checked against), for scripts that check kapp's version."""
    if program() == DROP_IN:
        from kapply.config.config import KAPP_COMPAT_VERSION

        return f"{DROP_IN} version {KAPP_COMPAT_VERSION}"
    return f"{PROGRAM} version {__version__}"


def version(_args: Args, out: Output) -> None:
    out.block(version_text() + "\n")
    out.finish()


def run(argv: Sequence[str]) -> int:
    """Run the command line; returns the exit status."""
    from kapply.cli.common import ExitStatus, Terminated, output

    out = None
    name = program()
    try:
        root = tree()
        args = resolve(root, argv, global_flags(), name)
        if args is None:
            return 0
        if args.command is root:  # only `--version` runs the root command
            print(version_text())
            return 0
        out = output(args)
        if args[DEBUG]:
            _debug_output()
        handler(args.command)(args, out)
        return 0
    except ExitStatus as e:
        _fail(out, name, str(e))
        return e.code
    except (KapplyError, UsageError) as e:
        _fail(out, name, "\n".join([str(e), *getattr(e, "__notes__", ())]))
        return 1
    except BrokenPipeError:  # the reader went away (`kapply ... | head`): nothing more to say
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # so that the exit's flush is quiet too
        return 1
    except KeyboardInterrupt:
        _fail(out, name, "Interrupted (changes applied so far stay applied)")
        return 130
    except Terminated:
        _fail(out, name, "Terminated (changes applied so far stay applied)")
        return Terminated.STATUS


def _debug_output() -> None:
    """`--debug`: kapply's debug lines on stderr (each request to the API server with its status and duration),
    kapp's `<time>: debug: ` before each; other messages as without the flag. `kapply controller` sets up its own
    logging over this (controller.logs.configure)."""
    debug = logging.StreamHandler(sys.stderr)
    debug.setFormatter(logging.Formatter("%(asctime)s: debug: %(message)s", "%I:%M:%S%p"))
    debug.addFilter(lambda record: record.levelno < logging.INFO)
    others = logging.StreamHandler(sys.stderr)
    others.setLevel(logging.INFO)
    logging.basicConfig(handlers=[debug, others])
    logging.getLogger("kapply").setLevel(logging.DEBUG)


def _fail(out: object, name: str, message: str) -> None:
    """`<program>: Error: <message>`, the message laid out as kapp lays out its errors."""
    from kapply.apply.error_text import multi_line
    from kapply.ui.output import Output

    text = f"{name}: Error: {multi_line(message)}"
    if isinstance(out, Output):
        out.fail(text)
    else:
        from kapply.ui.escape import escaped

        print(escaped(text), file=sys.stderr, flush=True)


def main() -> None:
    collect_later()
    exit_now(run(sys.argv[1:]))


def exit_now(status: int) -> NoReturn:
    """Exit without the interpreter's tear-down (freeing every module and object the command made: ~45 ms of a
    no-change redeploy of 100 resources, bench/why.md). What an exit must do is done first: the atexit handlers
    (logging's flush, among others) and stdout and stderr flushed. While a thread other than daemons is still at
    work, the usual exit, which waits for it."""
    main_thread = threading.main_thread()
    if any(t.is_alive() and not t.daemon for t in threading.enumerate() if t is not main_thread):
        sys.exit(status)
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a reader gone (`| head`), a stream closed: nothing to add
            stream.flush()
    os._exit(status)


COLLECT_AFTER_S = 2.0


def collect_later(after_s: float = COLLECT_AFTER_S) -> None:
    """No garbage collection in a command's first seconds. A short command (a small deploy, a diff, `ls`) frees what
    it made when it exits, and most of the collections it would run only rescan what its imports made: without them,
    a no-change redeploy of 100 resources takes ~14 ms less CPU, of 1,000 ~39 ms (bench/why.md). A command still
    running after `after_s` (a deploy waiting, `logs -f`, the controller) collects as usual from then on, with what
    it made so far frozen out of the collections (`gc.freeze`), as a long-lived process's start-up objects should be."""
    gc.disable()
    timer = threading.Timer(after_s, _collect_from_now_on)
    timer.daemon = True
    timer.start()


def _collect_from_now_on() -> None:
    gc.freeze()
    gc.enable()
