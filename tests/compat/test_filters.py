"""The filters of `ls` (`--filter-age`, `--filter-labels`) and of `app-change list` (`--before`, `--after`), compared
with the real kapp. (The resource filters are compared in test_inspect.py and test_tools_inspect.py.)"""

from __future__ import annotations

import pytest

from tests.compat.harness import Harness

pytestmark = pytest.mark.compat

CONFIG = """
apiVersion: v1
kind: ConfigMap
metadata: {name: settings-APP}
data: {greeting: hello}
"""


def deploy(both: Harness, app: str, *flags: str, greeting: str = "hello") -> None:
    manifest = CONFIG.replace("APP", app).replace("hello", greeting)
    for result in both.run("deploy", "-a", app, "-n", "{ns}", "-f", "-", "-y", *flags, input=manifest):
        assert result.code == 0, result.output


@pytest.fixture
def apps(both: Harness) -> None:
    deploy(both, "front", "--labels", "team=web", "--labels", "owner={ns}")
    deploy(both, "back", "--labels", "team=db", "--labels", "owner={ns}")


LS_FILTERS = [
    ("--filter-labels", "team=web", "--tty"),
    ("--filter-labels", "team=web", "--json"),
    ("--filter-labels", "team=web,owner={ns}"),
    ("--filter-labels", "team=web", "--filter-labels", "team=db", "--tty"),  # a later value of a key wins
    ("--filter-labels", "team=", "--tty"),
    ("--filter-age", "1h-", "--tty"),
    ("--filter-age", "1h+", "--tty"),
    ("--filter-age", "1h-", "--filter-labels", "team=db", "--json"),
]


@pytest.mark.usefixtures("apps")
def test_ls_keeps_apps_of_an_age_and_with_labels(both: Harness):
    for flags in LS_FILTERS:  # one test, so that the apps are deployed once
        pair = both.run("ls", "-n", "{ns}", *flags)
        if "--json" in flags:
            both.same_json(pair)
        else:
            both.same(pair, exact=False)
    both.same(both.run("ls", "-A", "--filter-labels", "owner={ns}", "--tty"), exact=False)


@pytest.mark.parametrize(
    "flags",
    [
        ("--filter-age", "1h"),
        ("--filter-age", "-"),
        ("--filter-age", "1d-"),
        ("--filter-labels", "team"),
        ("--filter-labels", "=web"),
    ],
)
@pytest.mark.parametrize("tty", ["--tty", "--tty=false"])
def test_ls_refuses_bad_filters_alike(both: Harness, flags: tuple[str, ...], tty: str):
    both.same(both.run("ls", "-n", "{ns}", tty, *flags))


@pytest.fixture
def changes(both: Harness) -> None:
    deploy(both, "app")
    deploy(both, "app", greeting="hi")


TIMES = [
    ("--after", "2020-01-10"),
    ("--before", "2020-01-10"),
    ("--after", "2020-01-10T12:15:25Z", "--before", "2999-01-01"),
    ("--after", "2999-01-01T00:00:00+02:00"),
    ("--before", "2999-01-01T10:00:00.5-01:00", "--json"),
    ("--after", "2020-01-10", "--before", "2020-01-10"),  # equal bounds are allowed, and keep nothing
]
BAD_TIMES = [
    ("--before", "yesterday"),
    ("--after", "2020-01-10 12:15:25"),
    ("--after", "2020-13-01"),
    ("--after", "2020-01-10T25:00:00Z"),
    ("--before", "2020-01-10T12:15:25"),
    ("--after", "2022-01-10", "--before", "2021-01-10"),
    ("--before", "2021-01-10", "--after", "bad"),
]


@pytest.mark.usefixtures("changes")
def test_app_change_list_keeps_changes_between_times_and_refuses_bad_times_alike(both: Harness):
    for flags in TIMES + BAD_TIMES:  # one test, so that the changes are made once
        pair = both.run("app-change", "list", "-a", "app", "-n", "{ns}", "--tty", *flags)
        if "--json" in flags:
            both.same_json(pair)
        else:
            both.same(pair)
