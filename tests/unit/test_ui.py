"""Rendering as kapp does: tables, ages, summaries, durations."""

from datetime import UTC, datetime

import click
import pytest

from kapply.cli.common import Duration
from kapply.ui.changes import age
from kapply.ui.table import Table, render


def test_changes_table_renders_like_kapp():
    table = Table(
        "Changes",
        ("Namespace", "Name", "Kind", "Age", "Op", "Op st.", "Wait to", "Rs", "Ri"),
        (
            ("kapp-test", "app", "ConfigMap", "", "create", "", "reconcile", "", ""),
            ("kapp-test", "app-config", "ConfigMap", "", "create", "", "reconcile", "", ""),
        ),
        notes=("Op:      2 create, 0 delete, 0 update, 0 noop, 0 exists", "Wait to: 2 reconcile, 0 delete, 0 noop"),
    )
    assert render(table) == (
        "Changes\n\n"
        "Namespace  Name        Kind       Age  Op      Op st.  Wait to    Rs  Ri  \n"
        "kapp-test  app         ConfigMap  -    create  -       reconcile  -   -   \n"
        "^          app-config  ConfigMap  -    create  -       reconcile  -   -   \n\n"
        "Op:      2 create, 0 delete, 0 update, 0 noop, 0 exists\n"
        "Wait to: 2 reconcile, 0 delete, 0 noop\n"
    )


def test_non_tty_tables_are_tab_separated_without_title_or_repeats():
    table = Table("Apps", ("Name", "Lcs"), (("a", "true"), ("a", "")), notes=("x",), content="apps")
    assert render(table, tty=False) == "Name\tLcs\na\ttrue\na\t\n"


def test_json_keys_are_snake_cased_header_words():
    assert Table("", ("Op st.", "Wait to", "Last Change Age"), ()).keys() == ("op_st", "wait_to", "last_change_age")


@pytest.mark.parametrize(
    ("seconds", "expected"), [(5, "5s"), (119, "119s"), (120, "2m"), (7199, "119m"), (7200, "2h"), (86400 * 3, "3d")]
)
def test_ages_are_kubernetes_short_durations(seconds, expected):
    now = datetime(2026, 1, 2, tzinfo=UTC)
    created = datetime.fromtimestamp(now.timestamp() - seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert age({"metadata": {"creationTimestamp": created}}, now) == expected


@pytest.mark.parametrize(("text", "seconds"), [("15m", 900), ("1h30m", 5400), ("500ms", 0.5), ("0", 0), ("3s", 3)])
def test_durations_are_read_as_go_writes_them(text, seconds):
    assert Duration().convert(text, None, None) == seconds


def test_a_malformed_duration_is_refused():
    with pytest.raises(click.BadParameter):
        Duration().convert("15 minutes", None, None)
