"""Rendering as kapp does: tables (the layouts below were checked against the real kapp's output), ages, JSON."""

import io
import json
from datetime import UTC, datetime

import pytest

from kapply.ui.age import age
from kapply.ui.output import Output
from kapply.ui.table import Column, Table, render

CHANGES = Table(
    "Changes",
    tuple(Column(t) for t in ("Namespace", "Name", "Kind", "Age", "Op", "Op st.", "Wait to", "Rs", "Ri")),
    (
        ("kapp-test", "app", "ConfigMap", "", "create", "", "reconcile", "", ""),
        ("kapp-test", "app-config", "ConfigMap", "", "create", "", "reconcile", "", ""),
    ),
    notes=("Op:      2 create, 0 delete, 0 update, 0 noop, 0 exists", "Wait to: 2 reconcile, 0 delete, 0 noop"),
)


def test_tty_tables_pad_every_cell_but_the_last_and_border_every_cell():
    assert render(CHANGES) == (
        "Changes\n\n"
        "Namespace  Name        Kind       Age  Op      Op st.  Wait to    Rs  Ri  \n"
        "kapp-test  app         ConfigMap  -    create  -       reconcile  -   -  \n"
        "^          app-config  ConfigMap  -    create  -       reconcile  -   -  \n\n"
        "Op:      2 create, 0 delete, 0 update, 0 noop, 0 exists\n"
        "Wait to: 2 reconcile, 0 delete, 0 noop\n"
    )


def test_non_tty_tables_have_no_title_header_notes_or_repeats_and_end_every_cell_with_a_tab():
    table = Table("Apps", (Column("Namespace"), Column("Lcs")), (("long-ns", "true"), ("long-ns", "")), ("x",), "apps")
    assert render(table, tty=False) == "long-ns\ttrue\t\nlong-ns\t-\t\n"


def test_json_keys_are_header_names_which_may_differ_from_titles():
    table = Table("", (Column("Op st."), Column("Wait to"), Column("Lcs", "last_change_successful")), ())
    assert table.keys == ("op_st", "wait_to", "last_change_successful")


def test_json_output_is_kapps_document():
    out = io.StringIO()
    output = Output(tty=False, as_json=True, out=out)
    output.line("Target cluster 'x'")
    output.table(Table("T", (Column("Name"), Column("Age")), (("a", "1s"),)))
    output.finish()
    text = out.getvalue()
    assert not text.endswith("\n") and '    "Tables": [' in text
    assert json.loads(text) == {
        "Tables": [
            {
                "Content": "",
                "Header": {"age": "Age", "name": "Name"},
                "Rows": [{"age": "1s", "name": "a"}],
                "Notes": None,
            }
        ],
        "Blocks": None,
        "Lines": ["Target cluster 'x'", "Succeeded"],
    }


def test_only_some_columns_by_key_or_title():
    assert CHANGES.only(["name", "Op st."]).shown().keys == ("name", "op_st")
    with pytest.raises(Exception, match="Failed to find header: nope"):
        CHANGES.only(["nope"])


@pytest.mark.parametrize(
    ("seconds", "expected"), [(5, "5s"), (119, "119s"), (120, "2m"), (7199, "119m"), (7200, "2h"), (86400 * 3, "3d")]
)
def test_ages_are_kubernetes_short_durations(seconds, expected):
    now = datetime(2026, 1, 2, tzinfo=UTC)
    created = datetime.fromtimestamp(now.timestamp() - seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert age({"metadata": {"creationTimestamp": created}}, now) == expected


def test_json_escapes_what_go_escapes():
    import io

    from kapply.ui.output import Output

    buffer = io.StringIO()
    out = Output(tty=False, as_json=True, out=buffer)
    out.line("a<b>&c\u2028é")
    out.finish()
    assert '"a\\u003cb\\u003e\\u0026c\\u2028é"' in buffer.getvalue()
    assert json.loads(buffer.getvalue())["Lines"][0] == "a<b>&c\u2028é"
