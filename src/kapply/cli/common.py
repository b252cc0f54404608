"""What every command shares: aliases, kapp's flag groups (kubeconfig, app, diff, apply, wait, output), connecting
to the app, confirmation, and turning kapply's errors into `kapply: Error: ...` with an exit code.

A flag group is declared once and reaches a command as one frozen value (`kube: KubeconfigFlags`, `diff:
DiffFlags`, ...), as kapp's cobra commands share DiffFlags, ApplyFlags and WaitFlags.
"""

from __future__ import annotations

import asyncio
import functools
import re
import sys
from collections.abc import AsyncIterator, Callable, Coroutine, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import click

from kapply.errors import KapplyError

if TYPE_CHECKING:
    from kapply.api import AsyncClient
    from kapply.app.record import App
    from kapply.apply.options import ApplyOptions, WaitOptions
    from kapply.diff.render import DiffFormat
    from kapply.resources.kubeconfig import KubeconfigFlags
    from kapply.ui.output import Output

T = TypeVar("T")
Decorator = Callable[[Callable[..., Any]], Callable[..., Any]]


class ExitStatus(KapplyError):
    """Not a failure: kapp's --diff-exit-status / --apply-exit-status outcome (2: no changes, 3: changes)."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


class Duration(click.ParamType[float, Any]):
    """A Go duration as kapp's flags take it (`15m`, `1h30m`, `500ms`, `3s`, `0`), in seconds."""

    name = "duration"
    _UNITS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}
    _PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ms|us|µs|ns|h|m|s)")

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        if isinstance(value, int | float):
            return float(value)
        text = str(value).strip()
        if text in ("0", ""):
            return 0.0
        parts = self._PART.findall(text)
        if not parts or "".join(n + u for n, u in parts) != text:
            self.fail(f"invalid duration '{value}' (expected e.g. 15m, 1h30m, 500ms)", param, ctx)
        return sum(float(n) * self._UNITS[u] for n, u in parts)


class AliasedGroup(click.Group):
    """A group whose commands also answer to kapp's aliases (`d` and `dep` for deploy, ...)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.aliases: dict[str, str] = {}

    def add_command(self, cmd: click.Command, name: str | None = None, aliases: tuple[str, ...] = ()) -> None:
        super().add_command(cmd, name)
        for alias in aliases:
            self.aliases[alias] = name or cmd.name or ""

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        return super().get_command(ctx, self.aliases.get(cmd_name, cmd_name))

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        _, cmd, rest = super().resolve_command(ctx, args)
        return (cmd.name if cmd else None), cmd, rest


def bool_flag(*names: str, default: bool = False, help: str = "") -> Decorator:
    """A boolean flag as kapp (pflag) takes it: `--x`, `--x=true` or `--x=false`."""
    return click.option(
        *names, type=click.BOOL, default=default, is_flag=False, flag_value=True, show_default=True, help=help
    )


def flag_group(argument: str, build: Callable[..., T], options: Sequence[tuple[str, Decorator]]) -> Decorator:
    """Options whose values reach the command as one keyword `argument`, `build(**values)`. Each option is given
    with the keyword of `build` it fills; the option must declare that same name as its click parameter name."""

    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            values = {param: kwargs.pop(f"{argument}__{param}") for param, _ in options}
            return fn(*args, **{argument: build(**values)}, **kwargs)

        command: Callable[..., Any] = wrapper
        for _, option in reversed(options):
            command = option(command)
        return command

    return decorate


def kube_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """kapp's kubeconfig flags, handed to the command as one `kube: KubeconfigFlags`."""

    def build(path: str | None, context: str | None, yaml: str | None) -> KubeconfigFlags:
        from kapply.resources.kubeconfig import KubeconfigFlags

        return KubeconfigFlags(path, context, yaml)

    return flag_group(
        "kube",
        build,
        [
            (
                "path",
                click.option(
                    "--kubeconfig",
                    "kube__path",
                    envvar="KAPP_KUBECONFIG",
                    help="Path to the kubeconfig file ($KAPP_KUBECONFIG)",
                ),
            ),
            (
                "context",
                click.option(
                    "--kubeconfig-context",
                    "kube__context",
                    envvar="KAPP_KUBECONFIG_CONTEXT",
                    help="Kubeconfig context override ($KAPP_KUBECONFIG_CONTEXT)",
                ),
            ),
            (
                "yaml",
                click.option(
                    "--kubeconfig-yaml",
                    "kube__yaml",
                    envvar="KAPP_KUBECONFIG_YAML",
                    help="Kubeconfig contents as YAML ($KAPP_KUBECONFIG_YAML)",
                ),
            ),
        ],
    )(fn)


@dataclass(frozen=True, slots=True)
class AppFlags:
    name: str
    namespace: str  # "" when not given
    app_namespace: str  # "" when not given


def app_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """`-a`, `-n` and `--app-namespace`, handed to the command as one `app: AppFlags`."""
    return flag_group(
        "app",
        AppFlags,
        [
            ("name", click.option("-a", "--app", "app__name", required=True, help="Set app name")),
            (
                "namespace",
                click.option(
                    "-n",
                    "--namespace",
                    "app__namespace",
                    default="",
                    help="Specified namespace ($KAPP_NAMESPACE or default from kubeconfig)",
                ),
            ),
            (
                "app_namespace",
                click.option(
                    "--app-namespace", "app__app_namespace", default="", help="Set app namespace (to store app state)"
                ),
            ),
        ],
    )(fn)


@dataclass(frozen=True, slots=True)
class DiffFlags:
    """kapp's DiffFlags (with a `diff-` prefix on deploy and delete, none on `tools diff`)."""

    summary: bool = True
    changes: bool = False
    context: int = 2
    line_numbers: bool = True
    mask: bool = True
    against_last_applied: bool = True
    run: bool = False
    exit_status: bool = False

    def format(self) -> DiffFormat:
        from kapply.diff.render import DiffFormat

        return DiffFormat(context=self.context, line_numbers=self.line_numbers, mask=self.mask)


def diff_options(prefix: str = "diff-") -> Decorator:
    def flag(name: str) -> str:
        return f"--{prefix}{name}"

    short = "-c"
    return flag_group(
        "diff",
        DiffFlags,
        [
            ("summary", bool_flag(flag("summary"), "diff__summary", default=True, help="Show diff summary")),
            ("changes", bool_flag(short, flag("changes"), "diff__changes", help="Show changes")),
            (
                "context",
                click.option(
                    flag("context"),
                    "diff__context",
                    default=2,
                    show_default=True,
                    help="Show number of lines around changed lines",
                ),
            ),
            (
                "line_numbers",
                bool_flag(flag("line-numbers"), "diff__line_numbers", default=True, help="Show line numbers"),
            ),
            ("mask", bool_flag(flag("mask"), "diff__mask", default=True, help="Apply masking rules")),
            (
                "against_last_applied",
                bool_flag(
                    flag("against-last-applied"),
                    "diff__against_last_applied",
                    default=True,
                    help="Show changes against last applied copy when possible",
                ),
            ),
            ("run", bool_flag(flag("run"), "diff__run", help="Show diff and exit")),
            (
                "exit_status",
                bool_flag(
                    flag("exit-status"),
                    "diff__exit_status",
                    help="Return specific exit status based on number of changes",
                ),
            ),
        ],
    )


def apply_options(*, default_timeout: str = "15m") -> Decorator:
    """kapp's ApplyFlags, handed to the command as one `apply: ApplyOptions`."""

    def build(concurrency: int, default_update_strategy: str, timeout: float) -> ApplyOptions:
        from kapply.apply.options import ApplyOptions

        return ApplyOptions(concurrency, default_update_strategy, timeout)

    return flag_group(
        "apply",
        build,
        [
            (
                "concurrency",
                click.option(
                    "--apply-concurrency",
                    "apply__concurrency",
                    default=5,
                    show_default=True,
                    help="Maximum number of concurrent apply operations",
                ),
            ),
            (
                "default_update_strategy",
                click.option(
                    "--apply-default-update-strategy",
                    "apply__default_update_strategy",
                    default="",
                    help="Change default update strategy",
                ),
            ),
            (
                "timeout",
                click.option(
                    "--apply-timeout",
                    "apply__timeout",
                    type=Duration(),
                    default=default_timeout,
                    show_default=True,
                    help="Maximum amount of time to wait for a resource marked kapp.k14s.io/exists to appear",
                ),
            ),
        ],
    )


def wait_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """kapp's WaitFlags, handed to the command as one `wait: WaitOptions`."""

    def build(**values: Any) -> WaitOptions:
        from kapply.apply.options import WaitOptions

        return WaitOptions(**values)

    return flag_group(
        "wait",
        build,
        [
            ("wait", bool_flag("--wait", "wait__wait", default=True, help="Wait for changes to be applied")),
            (
                "timeout",
                click.option(
                    "--wait-timeout",
                    "wait__timeout",
                    type=Duration(),
                    default="15m",
                    show_default=True,
                    help="Maximum amount of time to wait in wait phase",
                ),
            ),
            (
                "resource_timeout",
                click.option(
                    "--wait-resource-timeout",
                    "wait__resource_timeout",
                    type=Duration(),
                    default="0s",
                    show_default=True,
                    help="Maximum amount of time to wait for a resource in wait phase (0s means no timeout)",
                ),
            ),
            (
                "check_interval",
                click.option(
                    "--wait-check-interval",
                    "wait__check_interval",
                    type=Duration(),
                    default="3s",
                    show_default=True,
                    help="Amount of time to sleep between checks while waiting",
                ),
            ),
            (
                "concurrency",
                click.option(
                    "--wait-concurrency",
                    "wait__concurrency",
                    default=5,
                    show_default=True,
                    help="Maximum number of concurrent reads while waiting",
                ),
            ),
        ],
    )(fn)


@dataclass(frozen=True, slots=True)
class OutputFlags:
    tty: bool | None  # None: not given
    json: bool

    def output(self, *, tty_by_default: bool = False) -> Output:
        from kapply.ui.output import Output

        tty = self.tty if self.tty is not None else (tty_by_default or sys.stdout.isatty())
        return Output(tty=tty, as_json=self.json)


def output_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """`--tty` and `--json`, handed to the command as one `out: OutputFlags`."""
    return flag_group(
        "out",
        OutputFlags,
        [
            (
                "tty",
                click.option(
                    "--tty",
                    "out__tty",
                    type=click.BOOL,
                    default=None,
                    is_flag=False,
                    flag_value=True,
                    help="Force TTY-like output (default: on for deploy and delete, else when stdout is a TTY)",
                ),
            ),
            ("json", bool_flag("--json", "out__json", help="Output as JSON")),
        ],
    )(fn)


def client(kube: KubeconfigFlags, namespace: str = "") -> AsyncClient:
    """A client of the public API, connected as the kubeconfig flags say; `namespace` is `-n` ("" when not given)."""
    from kapply.api import AsyncClient

    return AsyncClient(kube.path, context=kube.context, kubeconfig_yaml=kube.yaml, namespace=namespace or None)


@asynccontextmanager
async def existing_app(kube: KubeconfigFlags, app: AppFlags) -> AsyncIterator[tuple[AsyncClient, App]]:
    """Connect, resolve the app namespace (`--app-namespace`, else `-n` and its defaults) and find the app."""
    async with client(kube, app.namespace) as api:
        yield api, await api.get_app(app.name, namespace=app.app_namespace or None)


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)


def confirm(yes: bool) -> None:
    if yes:
        return
    click.echo("Continue? [yN]: ", nl=False)
    answer = sys.stdin.readline()
    if answer.strip().lower() not in ("y", "yes"):
        raise KapplyError("Stopped")


def _with_notes(error: BaseException) -> str:
    """The message and any notes added to it on the way up (e.g. that recording the failure failed too)."""
    return "\n".join([str(error), *getattr(error, "__notes__", ())])


def handle_errors(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Print kapply's errors as one message (no traceback) and exit 1, or with an ExitStatus' code."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except ExitStatus as e:
            click.echo(f"kapply: Error: {e}", err=True)
            sys.exit(e.code)
        except KapplyError as e:
            click.echo(f"kapply: Error: {_with_notes(e)}", err=True)
            sys.exit(1)
        except KeyboardInterrupt:
            click.echo("kapply: Error: Interrupted (changes applied so far stay applied)", err=True)
            sys.exit(130)

    return wrapper
