"""The CLI's garbage collection: none in a command's first seconds, as usual after (kapply.cli.main.collect_later)."""

from __future__ import annotations

import gc
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator

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
