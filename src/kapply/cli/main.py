"""The `kapply` command: kapp's command tree, flags, help and exit statuses.

Handlers are imported when their command runs (`kapply version` imports no Kubernetes client). Errors print as
`kapply: Error: <message>` (in `--json` output, as the last line) and exit 1; `--diff-exit-status` and
`--apply-exit-status` exit 2 or 3, as kapp's do.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from kapply import __version__
from kapply.cli.command import handler, resolve
from kapply.cli.flags import UsageError
from kapply.cli.tree import PROGRAM, global_flags, tree
from kapply.errors import KapplyError


def version(_args: object, _out: object) -> None:
    print(f"kapply version {__version__}")


def run(argv: Sequence[str]) -> int:
    """Run the command line; returns the exit status."""
    from kapply.cli.common import ExitStatus, output

    out = None
    try:
        root = tree()
        args = resolve(root, argv, global_flags(), PROGRAM)
        if args is None:
            return 0
        if args.command is root:  # only `--version` runs the root command
            print(f"kapply version {__version__}")
            return 0
        out = output(args)
        handler(args.command)(args, out)
        return 0
    except ExitStatus as e:
        _fail(out, f"{PROGRAM}: Error: {e}")
        return e.code
    except (KapplyError, UsageError) as e:
        _fail(out, f"{PROGRAM}: Error: " + "\n".join([str(e), *getattr(e, "__notes__", ())]))
        return 1
    except BrokenPipeError:  # the reader went away (`kapply ... | head`): nothing more to say
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # so that the exit's flush is quiet too
        return 1
    except KeyboardInterrupt:
        _fail(out, f"{PROGRAM}: Error: Interrupted (changes applied so far stay applied)")
        return 130


def _fail(out: object, message: str) -> None:
    from kapply.ui.output import Output

    if isinstance(out, Output):
        out.fail(message)
    else:
        print(message, file=sys.stderr, flush=True)


def main() -> None:
    sys.exit(run(sys.argv[1:]))
