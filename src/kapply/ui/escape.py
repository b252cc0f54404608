"""Text that cannot move a terminal's cursor: control characters shown as escapes.

A resource's name, a label, an error from the API server or a Config reaches the terminal as kapply prints it, and a
name may hold any character but `/` and `%` (a custom resource's, say). A name carrying `ESC [ 1 A ESC [ 2 K` would
move the cursor up and erase the row above it: rows of the Changes table the user is about to approve could vanish
or be overwritten. So every line, table and error kapply prints shows control characters as escapes (`\\x1b`,
`\\r`, `\\u202e`): C0 controls but newline and tab, DEL, C1 controls, and the Unicode controls that reorder text
(bidirectional embeddings, overrides and isolates). kapp prints them as they are (see docs/compatibility.md, "Known
differences"). JSON output is unaffected: JSON escapes what it needs itself.
"""

from __future__ import annotations

import re

_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_NAMED = {"\r": "\\r", "\x0b": "\\v", "\x0c": "\\f", "\x08": "\\b", "\x07": "\\a", "\x00": "\\0"}


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    if char in _NAMED:
        return _NAMED[char]
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def escaped(text: str) -> str:
    """`text` with its control characters as escapes (see the module docs); newlines and tabs are kept."""
    return _CONTROLS.sub(_escape, text)
