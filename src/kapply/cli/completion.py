"""`kapply completion bash|zsh|fish|powershell`: a completion script for the shell, generated from kapply's command
tree (kapply.cli.tree), so it always offers exactly the commands and flags kapply has.

The scripts complete statically, without running kapply on each TAB: the tree is written into them as lookup
tables. Like cobra's (kapp's), they complete subcommands (not aliases, though aliases are followed), flags when the
word starts with `-`, file names after a flag that takes a file and where a command takes no subcommand, and the
shell names after `completion`. Flags kapply does not implement yet are not offered.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kapply.cli.command import Args, Command
from kapply.cli.tree import PROGRAM, tree
from kapply.errors import KapplyError
from kapply.flags import GLOBAL_FLAGS, Flag, Kind

if TYPE_CHECKING:
    from kapply.ui.output import Output

SHELLS = ("bash", "zsh", "fish", "powershell")
ARGUMENTS = {"completion": SHELLS}  # positional arguments a command takes, by command path
HELP = Flag("help", Kind.BOOL, False, "help for the command", short="h")


@dataclass(frozen=True, slots=True)
class Level:
    """What can follow the words that lead to one command (`app-change/list`; `` for kapply itself)."""

    path: str
    subcommands: tuple[tuple[str, str], ...]  # (name, description), sorted
    children: tuple[tuple[str, str], ...]  # (name or alias, the child's path)
    flags: tuple[tuple[str, str], ...]  # (`--name` or `-x`, description)
    values: tuple[tuple[str, str], ...]  # (flag word, what its value is: `file`, `dir` or `value`)
    arguments: tuple[str, ...]  # positional arguments (the shells for `completion`)

    @property
    def leaf(self) -> bool:
        return not self.subcommands and not self.arguments


def levels(root: Command, global_flags: tuple[Flag, ...]) -> list[Level]:
    """Every command of the tree, depth first, with what can follow it."""

    def walk(command: Command, path: str) -> Iterator[Level]:
        flags = [f for f in (*command.flags, *global_flags, HELP) if f.supported and not f.hidden]
        children = [c for c in command.children if not c.hidden]
        prefix = f"{path}/" if path else ""
        subcommands = sorted((c.name, c.short) for c in children)
        if children and not path:
            subcommands = sorted([*subcommands, ("help", "Help about any command")])
        yield Level(
            path,
            tuple(subcommands),
            tuple((word, prefix + c.name) for c in children for word in (c.name, *c.aliases)),
            tuple((f"--{f.name}", f.help) for f in flags) + tuple((f"-{f.short}", f.help) for f in flags if f.short),
            tuple(
                (word, f.completes.value)
                for f in flags
                if f.kind is not Kind.BOOL
                for word in (f"--{f.name}", *((f"-{f.short}",) if f.short else ()))
            ),
            ARGUMENTS.get(path, ()),
        )
        for child in children:
            yield from walk(child, prefix + child.name)

    return list(walk(root, ""))


def _keyed(all_levels: list[Level], line: Callable[[str, str], str], *, values: bool = False) -> str:
    """A script's table of the words that may follow each command, a `line(key, what)` each, keyed
    `<command path>:<word>` as the scripts look them up: what is the child command the word leads to or, with
    `values`, what the flag's value is (`file`, `dir`, `value`)."""
    return "\n".join(
        line(f"{level.path}:{word}", what)
        for level in all_levels
        for word, what in (level.values if values else level.children)
    )


# ---------------------------------------------------------------------------------------------------- sh (bash, zsh)


def _sh_quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


def _sh_tables(all_levels: list[Level]) -> str:
    """Shell functions shared by bash and zsh (both run them): the child a word leads to, what a flag's value is,
    and the words that can follow a command; each answers in REPLY."""
    children = _keyed(all_levels, lambda key, child: f"        {_sh_quote(key)}) REPLY={_sh_quote(child)} ;;")
    values = _keyed(all_levels, lambda key, kind: f"        {_sh_quote(key)}) REPLY={kind} ;;", values=True)
    words = "\n".join(
        f"        {_sh_quote(level.path)}) REPLY={_sh_quote(' '.join(w for w, _ in level.subcommands))}"
        f" FLAGS={_sh_quote(' '.join(f for f, _ in level.flags))}"
        f" ARGS={_sh_quote(' '.join(level.arguments))} ;;"
        for level in all_levels
    )
    return f"""__kapply_child() {{
    case "$1:$2" in
{children}
        *) return 1 ;;
    esac
}}

__kapply_value() {{
    case "$1:$2" in
{values}
        *) return 1 ;;
    esac
}}

__kapply_words() {{
    case "$1" in
{words}
    esac
}}

# The command path the words before the cursor lead to (PATH_), and what the word at the cursor is the value of
# (EXPECT: file, dir, value, or empty).
__kapply_state() {{
    local word
    PATH_="" EXPECT=""
    for word in "$@"; do
        if [[ -n $EXPECT ]]; then
            EXPECT=""
            continue
        fi
        case $word in
            -*=*) ;;
            -*) __kapply_value "$PATH_" "$word" && EXPECT=$REPLY ;;
            *) __kapply_child "$PATH_" "$word" && PATH_=$REPLY ;;
        esac
    done
}}"""


def bash_script(all_levels: list[Level]) -> str:
    return f"""# bash completion for kapply                                 -*- shell-script -*-
# Generated by `kapply completion bash`. Load it with `source <(kapply completion bash)`.

{_sh_tables(all_levels)}

_kapply() {{
    local cur=${{COMP_WORDS[COMP_CWORD]}} REPLY FLAGS ARGS PATH_ EXPECT
    __kapply_state "${{COMP_WORDS[@]:1:COMP_CWORD-1}}"
    COMPREPLY=()
    case $EXPECT in
        file) compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -f -- "$cur")); return ;;
        dir) compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -d -- "$cur")); return ;;
        value) return ;;
    esac
    __kapply_words "$PATH_"
    if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "$FLAGS" -- "$cur"))
    elif [[ -n $REPLY || -n $ARGS ]]; then
        COMPREPLY=($(compgen -W "$REPLY $ARGS" -- "$cur"))
    else
        compopt -o filenames 2>/dev/null
        COMPREPLY=($(compgen -f -- "$cur"))
    fi
}}

complete -F _kapply kapply
"""


def zsh_script(all_levels: list[Level]) -> str:
    return f"""#compdef kapply
# zsh completion for kapply, generated by `kapply completion zsh`. Load it with `source <(kapply completion zsh)`,
# or save it as `_kapply` in a directory of $fpath.

{_sh_tables(all_levels)}

_kapply() {{
    local REPLY FLAGS ARGS PATH_ EXPECT
    __kapply_state "${{(@)words[2,CURRENT-1]}}"
    case $EXPECT in
        file) _files; return ;;
        dir) _files -/; return ;;
        value) return 1 ;;
    esac
    __kapply_words "$PATH_"
    if [[ $PREFIX == -* ]]; then
        compadd -- ${{=FLAGS}}
    elif [[ -n $REPLY || -n $ARGS ]]; then
        compadd -- ${{=REPLY}} ${{=ARGS}}
    else
        _files
    fi
}}

if [[ $funcstack[1] == _kapply ]]; then
    _kapply "$@"
else
    compdef _kapply kapply
fi
"""


# ---------------------------------------------------------------------------------------------------- fish


def _fish_quote(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def fish_script(all_levels: list[Level]) -> str:
    children = _keyed(
        all_levels,
        lambda key, child: f"            case {_fish_quote(key)}\n                set path {_fish_quote(child)}",
    )
    values = _keyed(
        all_levels,
        lambda key, kind: f"            case {_fish_quote(key)}\n                set expect {kind}",
        values=True,
    )
    words = "\n".join(
        f"        case {_fish_quote(level.path)}\n"
        + "".join(
            f"            printf '%s\\t%s\\n' {_fish_quote(name)} {_fish_quote(short)}\n"
            for name, short in level.subcommands
        )
        + "".join(f"            echo {_fish_quote(argument)}\n" for argument in level.arguments)
        + ("            return 1\n" if level.leaf else "")
        for level in all_levels
    )
    flags = "\n".join(
        f"        case {_fish_quote(level.path)}\n"
        + "".join(f"            printf '%s\\t%s\\n' {_fish_quote(f)} {_fish_quote(h)}\n" for f, h in level.flags)
        for level in all_levels
    )
    return f"""# fish completion for kapply, generated by `kapply completion fish`.
# Load it with `kapply completion fish | source`, or save it as ~/.config/fish/completions/kapply.fish.

# The command path the words before the cursor lead to, and what the word at the cursor is the value of.
function __kapply_state
    set -l path ''
    set -l expect ''
    set -l words (commandline -opc)
    set -e words[1]
    for word in $words
        if test -n "$expect"
            set expect ''
            continue
        end
        if string match -q -- '-*=*' $word
            continue
        end
        if string match -q -- '-*' $word
            switch "$path:$word"
{values}
            end
            continue
        end
        switch "$path:$word"
{children}
        end
    end
    echo $path
    echo $expect
end

function __kapply_subcommands
    switch $argv[1]
{words}
    end
end

function __kapply_flags
    switch $argv[1]
{flags}
    end
end

function __kapply_complete
    set -l state (__kapply_state)
    set -l current (commandline -ct)
    switch "$state[2]"
        case file
            __fish_complete_path $current
            return
        case dir
            __fish_complete_directories $current
            return
        case value
            return
    end
    if string match -q -- '-*' $current
        __kapply_flags $state[1]
    else if not __kapply_subcommands $state[1]
        __fish_complete_path $current
    end
end

complete -c kapply -f -a '(__kapply_complete)'
"""


# ---------------------------------------------------------------------------------------------------- powershell


def _ps_quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _ps_list(items: list[str]) -> str:
    return "@(" + ", ".join(_ps_quote(i) for i in items) + ")"


def powershell_script(all_levels: list[Level]) -> str:
    children = _keyed(all_levels, lambda key, child: f"        {_ps_quote(key)} = {_ps_quote(child)}")
    values = _keyed(all_levels, lambda key, kind: f"        {_ps_quote(key)} = {_ps_quote(kind)}", values=True)
    words = "\n".join(
        f"        {_ps_quote(level.path)} = {_ps_list([n for n, _ in level.subcommands] + list(level.arguments))}"
        for level in all_levels
    )
    flags = "\n".join(
        f"        {_ps_quote(level.path)} = {_ps_list([f for f, _ in level.flags])}" for level in all_levels
    )
    return f"""# powershell completion for kapply, generated by `kapply completion powershell`.
# Load it with `kapply completion powershell | Out-String | Invoke-Expression`.

Register-ArgumentCompleter -Native -CommandName kapply -ScriptBlock {{
    param($wordToComplete, $commandAst, $cursorPosition)
    $children = @{{
{children}
    }}
    $values = @{{
{values}
    }}
    $words = @{{
{words}
    }}
    $flags = @{{
{flags}
    }}
    # the words before the one being completed (which ends at the cursor)
    $before = @($commandAst.CommandElements | Select-Object -Skip 1 |
        Where-Object {{ $_.Extent.EndOffset -lt $cursorPosition }} | ForEach-Object {{ $_.ToString() }})
    $path = ''
    $expect = ''
    foreach ($word in $before) {{
        if ($expect -ne '') {{ $expect = ''; continue }}
        if ($word -like '-*=*') {{ continue }}
        if ($word -like '-*') {{
            if ($values.ContainsKey("${{path}}:$word")) {{ $expect = $values["${{path}}:$word"] }}
            continue
        }}
        if ($children.ContainsKey("${{path}}:$word")) {{ $path = $children["${{path}}:$word"] }}
    }}
    if ($expect -eq 'value') {{ return }}
    if ($expect -eq '' -and $wordToComplete -like '-*') {{
        $candidates = $flags[$path]
    }} elseif ($expect -eq '' -and $words[$path].Count -gt 0) {{
        $candidates = $words[$path]
    }} else {{
        $candidates = @(Get-ChildItem -Path "$wordToComplete*" -ErrorAction SilentlyContinue |
            ForEach-Object {{ $_.Name }})
    }}
    $candidates | Where-Object {{ $_ -like "$wordToComplete*" }} | ForEach-Object {{
        [System.Management.Automation.CompletionResult]::new($_, $_, 'ParameterValue', $_)
    }}
}}
"""


SCRIPTS = {"bash": bash_script, "zsh": zsh_script, "fish": fish_script, "powershell": powershell_script}


def script(shell: str) -> str:
    """The completion script for `shell` (one of SHELLS)."""
    return SCRIPTS[shell](levels(tree(), GLOBAL_FLAGS))


def completion(args: Args, out: Output) -> None:
    if len(args.positional) != 1:
        raise KapplyError(f"accepts 1 arg(s), received {len(args.positional)}")
    shell = args.positional[0]
    if shell not in SHELLS:
        raise KapplyError(f'invalid argument "{shell}" for "{PROGRAM} completion"')
    out.block(script(shell))
    out.finish()
