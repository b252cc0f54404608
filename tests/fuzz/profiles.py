"""How long the fuzz tests run, and the corpus they replay.

`$KAPPLY_FUZZ_PROFILE` picks the profile: `ci` (the default, part of `make test`: 100 inputs per target, hypothesis'
own default, some seconds in all) or `fuzz` (`make fuzz`: 1,000 per target, 14,000 in all). Every run first replays the
corpus in `tests/fuzz/corpus/`, hypothesis' database of the inputs that once failed. A `ci` run only reads it; a
`fuzz` run adds what it finds, so that a new crash is kept once found (commit it with its fix). Nothing is ever
removed from the corpus, even once an input passes: it is a regression suite. The crashes found so far are also
written out as `@example`s next to the targets, which survive changes to the strategies (corpus entries do not).
"""

from __future__ import annotations

import os
from pathlib import Path

from hypothesis import HealthCheck, settings
from hypothesis.database import DirectoryBasedExampleDatabase, ReadOnlyDatabase

CORPUS = Path(__file__).parent / "corpus"


class Corpus(DirectoryBasedExampleDatabase):
    """A database that only grows: hypothesis deletes an entry that stopped failing, this keeps it."""

    def delete(self, key: bytes, value: bytes) -> None:
        pass

    def move(self, src: bytes, dest: bytes, value: bytes) -> None:
        self.save(dest, value)


_COMMON = {
    "deadline": None,  # inputs are as slow as they are; a duration is measured in bench/, never asserted
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
    "print_blob": True,
}
settings.register_profile("ci", max_examples=100, database=ReadOnlyDatabase(Corpus(CORPUS)), **_COMMON)
settings.register_profile("fuzz", max_examples=1000, database=Corpus(CORPUS), **_COMMON)

fuzz_settings = settings.get_profile(os.environ.get("KAPPLY_FUZZ_PROFILE", "ci"))
"""The decorator every fuzz target wears."""
