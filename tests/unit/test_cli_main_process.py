"""The CLI process: no garbage collection in a command's first seconds, as usual after (kapply.cli.main.collect_later);
its exit without the interpreter's tear-down, that still does what an exit must (exit_now)."""

from __future__ import annotations

import atexit
import gc
import io
import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from typing import NoReturn

import pytest

from kapply.cli import main


@pytest.fixture
def gc_restored() -> Iterator[None]:
    yield
    gc.unfreeze()
    gc.enable()


def test_no_collection_at_first_then_collection_with_what_was_made_frozen(gc_restored: None) -> None:
    main.collect_later(0.2)
    assert not gc.isenabled()
    deadline = time.monotonic() + 10
    while not gc.isenabled() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert gc.isenabled()
    assert gc.get_freeze_count() > 0


def test_a_short_command_exits_before_collecting_and_a_long_one_collects() -> None:
    """In a fresh interpreter, as the console script runs it: `version` exits at once with collection off; a command
    that outlives the delay (here a sleep standing in for a deploy's wait) finds it on."""
    script = textwrap.dedent(
        """
        import gc, sys, time
        from kapply.cli import main
        main.collect_later(0.1)
        print("at start", gc.isenabled())
        time.sleep(float(sys.argv[1]))
        print("later", gc.isenabled())
        """
    )
    short = subprocess.run([sys.executable, "-c", script, "0"], capture_output=True, text=True, check=True)
    assert short.stdout.split("\n")[:2] == ["at start False", "later False"]
    long = subprocess.run([sys.executable, "-c", script, "1.5"], capture_output=True, text=True, check=True)
    assert long.stdout.split("\n")[:2] == ["at start False", "later True"]


def _exit_script(body: str) -> subprocess.CompletedProcess[str]:
    script = "import atexit, sys, threading, time\nfrom kapply.cli.main import exit_now\n" + textwrap.dedent(body)
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)


def test_the_exit_keeps_the_status_runs_the_atexit_handlers_and_flushes_what_was_written() -> None:
    done = _exit_script(
        """
        atexit.register(lambda: print("handler ran", file=sys.stderr, end=""))
        sys.stdout.write("no newline, still buffered")
        exit_now(3)
        """
    )
    assert (done.returncode, done.stdout, done.stderr) == (3, "no newline, still buffered", "handler ran")


def test_the_exit_waits_for_a_thread_still_at_work() -> None:
    done = _exit_script(
        """
        def work():
            time.sleep(0.5)
            print("the thread finished")
        threading.Thread(target=work).start()
        exit_now(2)
        """
    )
    assert (done.returncode, done.stdout) == (2, "the thread finished\n"), done.stderr


def test_the_exit_does_not_wait_for_a_daemon_thread() -> None:
    done = _exit_script(
        """
        threading.Thread(target=lambda: (time.sleep(30), print("late")), daemon=True).start()
        started = time.monotonic()
        exit_now(0)
        """
    )
    assert (done.returncode, done.stdout) == (0, ""), done.stderr


class _Exited(Exception):
    pass


def test_a_stream_that_cannot_be_flushed_any_more_is_no_error_at_exit(monkeypatch: pytest.MonkeyPatch) -> None:
    """`kapply ls | head -1`: what is left in stdout's buffer cannot be written; the status is the command's."""

    class ReaderGone(io.StringIO):
        def flush(self) -> None:
            raise BrokenPipeError(32, "Broken pipe")

    def exit_status(status: int) -> NoReturn:
        raise _Exited(status)

    monkeypatch.setattr(sys, "stdout", ReaderGone())
    monkeypatch.setattr(atexit, "_run_exitfuncs", lambda: None)  # not pytest's own handlers
    monkeypatch.setattr(os, "_exit", exit_status)
    with pytest.raises(_Exited) as exited:
        main.exit_now(0)
    assert exited.value.args == (0,)
