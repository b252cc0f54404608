"""kapp's layout of error messages (go-cli-ui's `errors` package), so that kapply's errors read as kapp's do.

A message is read as nested pieces: text, and groups opened by `(`, `[`, `{` (closed by any of `)`, `]`, `}`) or by
`...|` (closed by `|...`, holding raw text in which brackets are not groups). A message whose brackets do not balance
is left as it is.

- `semi_structured` (kapp's SemiStructuredError, around the API server's answer to an apply): a top-level `[a, b]`
  list, as Kubernetes joins several validation errors, becomes `\\n\\n  - a\\n\\n  - b\\n\\n`. An item starts at a
  `, ` followed by 3 to 10 characters of lower-case letters, `.`, `[`, `]`, `:` or spaces; other `, ` stay in the
  item (so `"OnFailure", "Never"` stays whole, and `between 1 and 65535, inclusive` splits, as kapp's).
- `multi_line` (kapp's MultiLineError, around every error it prints): in the first line, outside groups, each `: `
  before a capital letter ends a line, and each next line is indented two spaces more.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_OPEN = {"(": ")", "[": "]", "{": "}"}
_CLOSE = frozenset(_OPEN.values())
_RAW_OPEN = "...|"
_RAW_CLOSE = "|..."
_ROOT, _RAW, _LIST_ITEM = "*", "...|", "~"  # group kinds without brackets of their own
_COLON_BEFORE_CAPITAL = re.compile(r"(: )([A-Z])")
_LIST_ITEM_START = re.compile(r"^[a-z.\[\]:\t\n\f\r ]{3,10}")  # Go's `\s` is ASCII only


@dataclass(eq=False)
class _Piece:
    """Text (`value`), or a group (`kind` set) of pieces. Mutable while a message is parsed and rearranged."""

    value: str = ""
    kind: str = ""
    pieces: list[_Piece] = field(default_factory=list)
    as_list: bool = False

    def add_text(self, text: str) -> None:
        last = self.pieces[-1] if self.pieces else None
        if last is None or last.kind:
            last = _Piece()
            self.pieces.append(last)
        last.value += text

    def text(self) -> str:
        if self.value:
            return self.value
        if self.as_list:
            return ("\n\n" if self.pieces else "") + "".join(f"  - {p.text()}\n\n" for p in self.pieces)
        inner = "".join(p.text() for p in self.pieces)
        return f"{self.kind}{inner}{_OPEN[self.kind]}" if self.kind in _OPEN else inner


def _parse(message: str) -> _Piece | None:
    """The message as pieces, or None when its groups do not balance. Positions are counted in UTF-8 bytes, as Go's
    ranging over a string does, since the raw markers are looked for by byte offset."""
    data = message.encode()
    root = _Piece(kind=_ROOT)
    stack = [root]
    offset = 0
    for char in message:
        at, offset = offset, offset + len(char.encode())
        if not stack:
            return None
        top = stack[-1]
        if top.kind != _RAW:
            if char in _OPEN:
                group = _Piece(kind=char)
                top.pieces.append(group)
                stack.append(group)
                continue
            if char in _CLOSE:
                stack.pop()
                continue
        if at + len(_RAW_OPEN) < len(data) and data[at : at + len(_RAW_OPEN)] == _RAW_OPEN.encode():
            raw = _Piece(kind=_RAW)
            raw.add_text(char)
            top.pieces.append(raw)
            stack.append(raw)
        elif at - len(_RAW_CLOSE) + 1 >= 0 and data[at - len(_RAW_CLOSE) + 1 : at + 1] == _RAW_CLOSE.encode():
            top.add_text(char)
            stack.pop()
        else:
            top.add_text(char)
    return root if len(stack) == 1 else None


def _as_list(group: _Piece) -> None:
    """A `[...]` group's pieces regrouped as list items around `, ` (see the module docs), shown as a list when there
    are several."""
    items: list[_Piece] = []
    for piece in group.pieces:
        if not piece.value:  # a group inside the item
            if items:
                items[-1].pieces.append(piece)
            else:
                items.append(_Piece(kind=_LIST_ITEM, pieces=[piece]))
            continue
        for index, part in enumerate(piece.value.split(", ")):
            if items and index == 0:
                items[-1].add_text(part)
            elif items and not _LIST_ITEM_START.match(part):
                items[-1].add_text(", " + part)
            else:
                items.append(_Piece(kind=_LIST_ITEM, pieces=[_Piece(value=part)]))
    if len(items) > 1:
        group.pieces = items
        group.as_list = True


def semi_structured(message: str) -> str:
    """kapp's SemiStructuredError: top-level `[a, b]` lists as indented items (see the module docs)."""
    root = _parse(message)
    if root is None:
        return message
    for piece in root.pieces:
        if piece.kind == "[":
            _as_list(piece)
    return root.text()


def multi_line(message: str) -> str:
    """kapp's MultiLineError: the first line broken at each top-level `: <Capital>`, each part indented two spaces
    more than the one before (see the module docs)."""
    first, newline, rest = message.partition("\n")
    root = _parse(first)
    if root is None:
        return message
    for piece in root.pieces:
        if piece.value:
            piece.value = _COLON_BEFORE_CAPITAL.sub(":\n\\2", piece.value)
    lines = root.text().split("\n")
    return "\n".join("  " * i + line for i, line in enumerate(lines)) + newline + rest
