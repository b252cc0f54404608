"""kapply.cli.kctrl_leaves: a leaf of kctrl's command tables, its flags in kctrl's order and its Examples."""

from kapply.cli.command import Command
from kapply.cli.kctrl_leaves import Leaves, examples
from kapply.flags import NAMESPACE, Flag, Kind

GROUPS = Flag("api-groups", Kind.STRING, "", "API groups to speak")


def test_examples_are_each_case_then_its_command_line_without_trailing_blanks() -> None:
    cases = (("Get one", "-a app1"), ("Every one", ""))
    assert examples("app get", cases) == "# Get one\nkapply app get -a app1\n\n# Every one\nkapply app get\n"


def test_a_leaf_is_named_by_its_paths_last_word_with_its_flags_then_tty_then_the_tables_last() -> None:
    leaf = Leaves("package", "kapply.cli.package", (GROUPS,))(
        "repository get",
        "Get details",
        "repository:get",
        NAMESPACE,
        tty=True,
        cases=(("Get it", "-r r1"),),
        aliases=("g",),
    )
    assert (leaf.name, leaf.short, leaf.handler, leaf.aliases) == (
        "get",
        "Get details",
        "kapply.cli.package.repository:get",
        ("g",),
    )
    assert [(f.name, f.default) for f in leaf.flags] == [("namespace", ""), ("tty", True), ("api-groups", "")]
    assert leaf.examples == "# Get it\nkapply package repository get -r r1\n"
    assert leaf.section == Command("x", "").section  # the default where the table names none


def test_a_tables_section_is_its_leaves() -> None:
    leaf = Leaves("app", "kapply.cli", section="App Management Commands")("list", "List", "a:b", tty=False, cases=())
    assert (leaf.section, [f.name for f in leaf.flags], leaf.flags[0].default) == (
        "App Management Commands",
        ["tty"],
        False,
    )
