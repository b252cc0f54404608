"""Terminal control characters in what kapply prints are shown as escapes, beyond kapp (a known difference,
docs/compatibility.md): a resource named `x ESC[1A ESC[2K y` would move the terminal's cursor up and erase the row
above it in the Changes table the user approves, and kapp prints it as it is. kapply's output is kapp's with each
control character written as `\\x1b` (and so on): in the table, the diff's headers, progress lines and errors."""

from __future__ import annotations

import re

import pytest

from tests.compat.harness import Harness

pytestmark = pytest.mark.compat

NAME = "ok\x1b[1A\x1b[2Kspoof"
MANIFEST = 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: "ok\\e[1A\\e[2Kspoof"}\ndata: {k: "v\\ev"}\n'
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def test_control_characters_are_shown_as_escapes(both: Harness):
    for args in (
        ("deploy", "-a", "app", "-n", "{ns}", "-f", "-", "--diff-run", "-c"),
        ("deploy", "-a", "app", "-n", "{ns}", "-f", "-", "-y"),  # the name is refused by the API server
    ):
        kapp, kapply = both.run(*args, input=MANIFEST)
        assert NAME in kapp.output  # kapp: as it is
        assert not CONTROL.search(kapply.output), kapply.output
        assert seen(both, kapply.tool, kapply.stdout, kapply.stderr) == seen(
            both, kapp.tool, kapp.stdout.replace("\x1b", "\\x1b"), kapp.stderr.replace("\x1b", "\\x1b")
        )
        assert kapply.code == kapp.code


def seen(both: Harness, tool: str, *texts: str) -> list[str]:
    """Normalised, with runs of spaces as one (escapes widen the table's Name column, which stays aligned)."""
    return [re.sub(r" {2,}", "  ", both.normalize(text, tool)) for text in texts]
