"""Each of kapp's flags is declared once, in kapply.flags, on the option it sets, and everything else is derived from
that declaration: a flag's value is read through it (`args[APPLY_EXIT_STATUS]`, `deploy_options`, `diff_view`),
never by the flag's name, and no other module declares a flag of the same name.

The scan reads kapply's source: any string equal to a declared flag name that has a dash (no Python name nor
Kubernetes field has one), and a declared name without a dash (`patch`, `namespace`) where it is the key of a
lookup in flag values (`args[...]`, `flags.get(...)`, `values[...]`, `... in raw`) or the name of a new `Flag(...)`.
ALLOWED lists the few places that must name a flag, each with the reason."""

from __future__ import annotations

import ast
import dataclasses
import inspect
from collections.abc import Iterator
from pathlib import Path

import pytest

import kapply
from kapply import flags
from kapply.api import delete_options, deploy_options
from kapply.apply.options import ApplyOptions, WaitOptions
from kapply.cli.tree import global_flags, tree
from kapply.controller import options as controller_options
from kapply.delete import DeleteOptions
from kapply.deploy import DeployOptions, DiffOptions
from kapply.flags import DELETE_FLAGS, DEPLOY_FLAGS, Flag, Target
from kapply.resources.allow import AllowRules
from kapply.resources.filters import from_flags

SRC = Path(kapply.__file__).parent
DECLARING = "flags.py"
FLAG_VALUES = frozenset({"args", "flags", "values", "raw"})  # what a mapping of flag values by name is called
LOOKUPS = frozenset({"get", "pop", "setdefault", "given"})

KCTRL_WAIT = "kctrl's own WaitFlags (`kapply package`), named as kapp's; read through their declarations"
ALLOWED = {
    ("cli/package/commands.py", "wait"): KCTRL_WAIT,
    ("cli/package/commands.py", "wait-check-interval"): KCTRL_WAIT,
    ("cli/package/commands.py", "wait-timeout"): KCTRL_WAIT,
    ("cli/package/commands.py", "summary"): "kctrl's own `package available list --summary`",
    ("cli/tree.py", "namespace"): "`kapply controller -n`: the controller's own flag (CONTROLLER_NAMESPACE)",
    ("cli/controller_manifests.py", "namespace"): "`kapply controller manifests -n`: its own flag (INSTALL_NAMESPACE)",
    **{
        ("controller/options.py", name): "kapp-controller's rawOptions allow-list names the flags an App may set"
        for name in controller_options.DEPLOY
        if "-" in name
    },
}


def declared_names() -> frozenset[str]:
    """The names of the flags kapply.flags declares (the `tools diff` variants among them)."""
    found = set()
    for value in vars(flags).values():
        for flag in value if isinstance(value, tuple) else (value,):
            if isinstance(flag, Flag):
                found.add(flag.name)
    return frozenset(found)


def _last_name(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return ""


def _key(node: ast.expr) -> ast.Constant | None:
    """The string a lookup key ends with: `"x"`, or the `x` of `f"{prefix}x"`."""
    if isinstance(node, ast.JoinedStr) and node.values:
        node = node.values[-1]
    return node if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _lookups(tree: ast.AST) -> Iterator[ast.Constant]:
    """The keys of lookups in flag values, and the names of new Flags."""
    for node in ast.walk(tree):
        key = None
        if isinstance(node, ast.Subscript) and _last_name(node.value) in FLAG_VALUES:
            key = _key(node.slice)
        elif isinstance(node, ast.Call) and node.args:
            func = node.func
            if _last_name(func) == "Flag" or (
                isinstance(func, ast.Attribute) and func.attr in LOOKUPS and _last_name(func.value) in FLAG_VALUES
            ):
                key = _key(node.args[0])
        elif (
            isinstance(node, ast.Compare)
            and isinstance(node.ops[0], ast.In | ast.NotIn)
            and _last_name(node.comparators[0]) in FLAG_VALUES
        ):
            key = _key(node.left)
        if key is not None:
            yield key


def named_flags(source: str, names: frozenset[str]) -> list[tuple[int, str]]:
    """Where `source` names a declared flag: (line, name)."""
    tree = ast.parse(source)
    found = {
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and "-" in node.value and node.value in names
    }
    found |= {(node.lineno, node.value) for node in _lookups(tree) if node.value in names}
    return sorted(found)


def test_no_module_but_the_declarations_names_a_flag() -> None:
    names = declared_names()
    found = []
    for path in sorted(SRC.rglob("*.py")):
        module = path.relative_to(SRC).as_posix()
        if module == DECLARING:
            continue
        for line, name in named_flags(path.read_text(), names):
            if (module, name) not in ALLOWED:
                found.append(f"src/kapply/{module}:{line}: {name!r}")
    assert not found, "read these flags through their declarations in kapply.flags:\n" + "\n".join(found)


def test_every_allowed_place_still_names_its_flag() -> None:
    names = declared_names()
    named = {module: {name for _, name in named_flags((SRC / module).read_text(), names)} for module, _ in ALLOWED}
    assert [entry for entry in ALLOWED if entry[1] not in named[entry[0]]] == []


@pytest.mark.parametrize(
    "source",
    [
        'args["diff-run"]',
        'args[f"{prefix}apply-exit-status"]',
        'flags.get("patch", False)',
        'args.parsed.flags.get("namespace")',
        '"wait" in values',
        'raw["logs"]',
        'Flag("json", BOOL, False, "Output as JSON")',
        'OPTIONS = {"dangerous-allow-empty-list-of-resources": True}',
    ],
)
def test_the_scan_finds_a_flag_named(source: str) -> None:
    assert named_flags(source, declared_names())


@pytest.mark.parametrize(
    "source",
    [
        'obj["metadata"]["namespace"]',
        'meta.get("labels", {})',
        '{"namespace": "x", "name": "y"}',
        'args[APPLY_EXIT_STATUS] and "--diff-run" in text',
    ],
)
def test_the_scan_leaves_other_strings(source: str) -> None:
    assert not named_flags(source, declared_names())


def _fields(target: Target) -> set[str]:
    """What `target` has for the flags to set."""
    match target:
        case Target.RESOURCE_FILTER:
            return set(inspect.signature(from_flags).parameters) - {"now"}
        case Target.ALLOW:
            return {f.name for f in dataclasses.fields(AllowRules)} | {"check"}
    classes = {
        Target.DEPLOY: DeployOptions,
        Target.DELETE: DeleteOptions,
        Target.DIFF: DiffOptions,
        Target.APPLY: ApplyOptions,
        Target.WAIT: WaitOptions,
        Target.DIFF_VIEW: flags.DiffView,
    }
    return {f.name for f in dataclasses.fields(classes[target])}


# the fields of an option no flag sets: other options, built from their own flags (or not a flag at all)
NOT_FROM_ONE_FLAG = {
    Target.DEPLOY: {"diff", "apply", "wait", "resource_filter", "allow", "rollback_of"},  # rollback_of: --to
    Target.DELETE: {"apply", "wait", "resource_filter", "used_kinds_only"},
    Target.WAIT: {"wake_on_watch"},  # kapply beyond kapp, no flag: the controller turns it off
}


@pytest.mark.parametrize(("target", "declared"), [(t, DEPLOY_FLAGS) for t in Target if t is not Target.DELETE])
def test_each_field_of_a_deploys_options_is_set_by_one_declared_flag(target: Target, declared: tuple[Flag, ...]):
    setters = [sets.field for flag in declared for sets in flag.sets if sets.target is target]
    assert sorted(setters) == sorted(_fields(target) - NOT_FROM_ONE_FLAG.get(target, set()))


@pytest.mark.parametrize("target", [Target.DELETE, Target.APPLY, Target.WAIT, Target.RESOURCE_FILTER])
def test_each_field_of_a_deletes_options_is_set_by_one_declared_flag(target: Target) -> None:
    setters = [sets.field for flag in DELETE_FLAGS for sets in flag.sets if sets.target is target]
    assert sorted(setters) == sorted(_fields(target) - NOT_FROM_ONE_FLAG.get(target, set()))


def test_the_declared_defaults_are_the_options_defaults() -> None:
    assert deploy_options({}) == DeployOptions()
    assert delete_options({}) == DeleteOptions()


def test_deploy_and_delete_offer_every_flag_their_options_are_built_from() -> None:
    commands = {c.name: c for c in tree().children}
    app_group = {c.name: c for c in commands["app-group"].children}
    assert set(DEPLOY_FLAGS) <= set(commands["deploy"].flags)
    assert set(DELETE_FLAGS) <= set(commands["delete"].flags)
    copies = {f"delete-{f.name}" for f in (*flags.DELETE_APPLY_FLAGS, *flags.DELETE_WAIT_FLAGS) if f.sets}
    assert copies <= {f.name for f in app_group["deploy"].flags}


def test_the_controller_allows_flags_of_kapp_deploy_with_their_types() -> None:
    deploy = tree().child("deploy")
    assert deploy is not None
    offered = {f.name: f.kind for f in (*global_flags(), *deploy.flags)}
    assert {name: flag.kind for name, flag in controller_options.DEPLOY.items()} == {
        name: offered[name] for name in controller_options.DEPLOY
    }
