"""`kapply completion`: the scripts really complete kapply's commands and flags, in the shells themselves."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kapply.cli.completion import SHELLS, levels, script
from kapply.cli.tree import tree
from kapply.flags import GLOBAL_FLAGS

CASES = [
    (["kapply", "dep"], ["deploy", "deploy-config"]),
    (["kapply", "deploy", "--diff-c"], ["--diff-changes", "--diff-changes-yaml", "--diff-context"]),
    (["kapply", "deploy", "--diff-a"], ["--diff-against-last-applied", "--diff-anchored"]),
    (["kapply", "app-change", ""], ["garbage-collect", "list", "rollback"]),
    (["kapply", "ac", "l"], ["list"]),  # aliases lead to their command
    (["kapply", "-n", "x", "--kubeconfig", "k", "ins"], ["inspect"]),  # flag values are skipped
    (
        ["kapply", "tools", "inspect", "--filter-k"],
        ["--filter-kind", "--filter-kind-name", "--filter-kind-ns", "--filter-kind-ns-name"],
    ),
    (["kapply", "completion", ""], ["bash", "zsh", "fish", "powershell"]),
    (["kapply", "deploy", "-a", ""], []),  # an app name: nothing to offer
    (["kapply", "package", ""], ["available", "init", "install", "installed", "release", "repository"]),
    (["kapply", "pkg", "i", "k"], ["kick"]),  # kctrl's aliases lead to their command
    (["kapply", "p", "r", "add", "--wait-"], ["--wait-check-interval", "--wait-timeout"]),
]


def run_bash(words: list[str], completion: str) -> list[str]:
    words_text = " ".join(f"'{w}'" for w in words)
    program = (
        f"{completion}\nCOMP_WORDS=({words_text}); COMP_CWORD={len(words) - 1}; _kapply; "
        'printf "%s\\n" "${COMPREPLY[@]}"'
    )
    done = subprocess.run(["bash", "-c", program], capture_output=True, text=True)
    assert done.stderr == ""
    return [line for line in done.stdout.splitlines() if line]


@pytest.mark.parametrize(("words", "expected"), CASES)
def test_bash_completes_commands_flags_and_arguments(words: list[str], expected: list[str]):
    assert run_bash(words, script("bash")) == expected


def test_bash_offers_every_command_of_the_tree_and_files_for_file_flags(tmp_path: Path):
    names = sorted([c.name for c in tree().children if not c.hidden] + ["help"])
    assert run_bash(["kapply", ""], script("bash")) == names
    (tmp_path / "app.yml").write_text("")
    assert run_bash(["kapply", "deploy", "-f", f"{tmp_path}/a"], script("bash")) == [f"{tmp_path}/app.yml"]
    assert run_bash(["kapply", "deploy", "--file", f"{tmp_path}/"], script("bash")) == [f"{tmp_path}/app.yml"]


def test_flags_kapply_does_not_implement_yet_are_not_offered():
    deploy = next(level for level in levels(tree(), GLOBAL_FLAGS) if level.path == "deploy")
    offered = {flag for flag, _ in deploy.flags}
    assert "--diff-run" in offered and "-c" in offered and "--yes" in offered
    assert "--diff-anchored" in offered and "--diff-ui-alpha" in offered
    assert "--profile" not in offered and "--profile-output" not in offered


@pytest.mark.skipif(shutil.which("zsh") is None, reason="zsh is not installed")
@pytest.mark.parametrize(("words", "expected"), CASES)
def test_zsh_completes_alike(words: list[str], expected: list[str]):
    """The completion function, run by zsh with compadd and _files standing in for the completion system's."""
    words_text = " ".join(f"'{w}'" for w in words)
    program = f"""
compdef() {{ }}
compadd() {{ shift; print -rl -- "$@"; }}
_files() {{ print -r -- FILES; }}
{script("zsh")}
words=({words_text}); CURRENT=$#words; PREFIX=${{words[CURRENT]}}
_kapply | while read -r w; do [[ $w == ${{PREFIX}}* ]] && print -r -- $w; done; true
"""
    done = subprocess.run(["zsh", "-c", program], capture_output=True, text=True)
    assert (done.stderr, sorted(done.stdout.split())) == ("", sorted(expected))


@pytest.mark.skipif(shutil.which("fish") is None, reason="fish is not installed")
@pytest.mark.parametrize(("words", "expected"), CASES)
def test_fish_completes_alike(words: list[str], expected: list[str]):
    line = " ".join(words)
    program = f'{script("fish")}\ncomplete -C"{line}"'
    done = subprocess.run(["fish", "-c", program], capture_output=True, text=True)
    assert (done.stderr, sorted(row.split("\t")[0] for row in done.stdout.splitlines())) == ("", sorted(expected))


def test_powershell_script_names_every_command():
    text = script("powershell")
    assert "Register-ArgumentCompleter -Native -CommandName kapply" in text
    assert all(f"'{c.name}'" in text for c in tree().children if not c.hidden)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ([], "kapply: Error: accepts 1 arg(s), received 0\n"),
        (["tcsh"], 'kapply: Error: invalid argument "tcsh" for "kapply completion"\n'),
    ],
)
def test_completion_needs_one_known_shell(argv: list[str], message: str):
    done = subprocess.run([sys.executable, "-m", "kapply", "completion", *argv], capture_output=True, text=True)
    assert (done.returncode, done.stdout, done.stderr) == (1, "", message)


@pytest.mark.parametrize("shell", SHELLS)
def test_completion_prints_the_script(shell: str):
    done = subprocess.run([sys.executable, "-m", "kapply", "completion", shell], capture_output=True, text=True)
    assert (done.returncode, done.stdout, done.stderr) == (0, script(shell), "")


def test_the_scripts_tables_key_each_word_by_the_command_it_follows() -> None:
    from kapply.cli.completion import Level, _keyed

    top = Level("", (), (("ac", "app-change"),), (), (("-f", "file"),), ())
    sub = Level("app-change", (), (("ls", "app-change/list"),), (), (), ())
    line = "{}={}".format
    assert _keyed([top, sub], line) == ":ac=app-change\napp-change:ls=app-change/list"
    assert _keyed([top, sub], line, values=True) == ":-f=file"
