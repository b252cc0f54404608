"""Control characters are shown as escapes wherever kapply prints text for a terminal, and tables stay aligned."""

from __future__ import annotations

import io

from kapply.ui.escape import escaped
from kapply.ui.output import Output
from kapply.ui.table import Column, Table, render


def test_cursor_moves_colours_and_reordering_are_escaped():
    assert escaped("a\x1b[1A\x1b[2Kb") == "a\\x1b[1A\\x1b[2Kb"
    assert escaped("a\rb\x00c\x07d\x08e\x0bf\x0cg") == "a\\rb\\0c\\ad\\be\\vf\\fg"
    assert escaped("\x7f\x9b\u202e\u2066\u200f") == "\\x7f\\x9b\\u202e\\u2066\\u200f"


def test_newlines_tabs_and_ordinary_text_are_kept():
    text = "line 1\n\tline 2 é ✓ \\x1b"
    assert escaped(text) == text
    assert escaped(escaped("\x1b")) == "\\x1b"  # escaping twice changes nothing more


def test_a_table_is_measured_after_escaping():
    table = Table("Changes", (Column("Name"), Column("Op")), (("ok\x1b[2K", "create"), ("plain", "update")))
    lines = render(table).splitlines()
    assert lines[2:] == ["Name       Op  ", "ok\\x1b[2K  create  ", "plain      update  "]


def test_output_escapes_every_text_but_a_containers_own_log_lines():
    buffer = io.StringIO()
    out = Output(tty=True, out=buffer)
    out.line("name \x1b[1A")
    out.begin_line("progress \x1b[2K\n")
    out.block("diff \x1b\n")
    out.block("log \x1b[31mred\x1b[0m\n", raw=True)
    out.notice("note \x1b")
    assert "\x1b[1A" not in buffer.getvalue() and "\x1b[2K" not in buffer.getvalue()
    assert "\\x1b[1A" in buffer.getvalue() and "log \x1b[31mred\x1b[0m" in buffer.getvalue()
    assert "note \\x1b\n" in buffer.getvalue()
