"""What every command shares: aliases, kubeconfig and namespace flags, confirmation, and
turning kapply's errors into `kapply: Error: ...` with an exit code."""

from __future__ import annotations

import asyncio
import functools
import os
import re
import sys
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any

import click

from kapply.errors import KapplyError

if TYPE_CHECKING:
    from kapply.apply.loop import WaitOptions
    from kapply.resources.cluster import Cluster
    from kapply.resources.kubeconfig import KubeconfigFlags
    from kapply.ui.output import Output


class ExitStatus(KapplyError):
    """Not a failure: kapp's --diff-exit-status / --apply-exit-status outcome (2: no changes, 3: changes)."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


class Duration(click.ParamType):
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


def bool_flag(*names: str, default: bool = False, help: str = "") -> Callable[[Callable[..., Any]], Any]:
    """A boolean flag as kapp (pflag) takes it: `--x`, `--x=true` or `--x=false`."""
    return click.option(
        *names, type=click.BOOL, default=default, is_flag=False, flag_value=True, show_default=True, help=help
    )


def kube_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """kapp's kubeconfig flags, handed to the command as one `kube: KubeconfigFlags`."""

    @functools.wraps(fn)
    def wrapper(
        *args: Any, kubeconfig: str | None, kubeconfig_context: str | None, kubeconfig_yaml: str | None, **kwargs: Any
    ) -> Any:
        from kapply.resources.kubeconfig import KubeconfigFlags

        return fn(*args, kube=KubeconfigFlags(kubeconfig, kubeconfig_context, kubeconfig_yaml), **kwargs)

    wrapper = click.option(
        "--kubeconfig", envvar="KAPP_KUBECONFIG", help="Path to the kubeconfig file ($KAPP_KUBECONFIG)"
    )(wrapper)
    wrapper = click.option(
        "--kubeconfig-context",
        envvar="KAPP_KUBECONFIG_CONTEXT",
        help="Kubeconfig context override ($KAPP_KUBECONFIG_CONTEXT)",
    )(wrapper)
    return click.option(
        "--kubeconfig-yaml", envvar="KAPP_KUBECONFIG_YAML", help="Kubeconfig contents as YAML ($KAPP_KUBECONFIG_YAML)"
    )(wrapper)


def app_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    fn = click.option("-a", "--app", required=True, help="Set app name")(fn)
    fn = click.option(
        "-n", "--namespace", default="", help="Specified namespace ($KAPP_NAMESPACE or default from kubeconfig)"
    )(fn)
    fn = click.option("--app-namespace", default="", help="Set app namespace (to store app state)")(fn)
    return fn


def connect(kube: KubeconfigFlags) -> Cluster:
    from kapply.resources.cluster import Cluster
    from kapply.resources.kubeconfig import load

    return Cluster(load(kube))


def wait_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    fn = bool_flag("--wait", default=True, help="Wait for changes to be applied")(fn)
    fn = click.option(
        "--wait-timeout",
        type=Duration(),
        default="15m",
        show_default=True,
        help="Maximum amount of time to wait in wait phase",
    )(fn)
    fn = click.option(
        "--wait-resource-timeout",
        type=Duration(),
        default="0s",
        show_default=True,
        help="Maximum amount of time to wait for a resource in wait phase (0s means no timeout)",
    )(fn)
    fn = click.option(
        "--wait-check-interval",
        type=Duration(),
        default="3s",
        show_default=True,
        help="Amount of time to sleep between checks while waiting",
    )(fn)
    fn = click.option(
        "--wait-concurrency", default=5, show_default=True, help="Maximum number of concurrent reads while waiting"
    )(fn)
    return fn


def make_wait_options(flags: dict[str, Any]) -> WaitOptions:
    """WaitOptions from the flags of `wait_options`, which it removes from `flags`."""
    from kapply.apply.loop import WaitOptions

    return WaitOptions(
        wait=flags.pop("wait"),
        timeout=flags.pop("wait_timeout"),
        resource_timeout=flags.pop("wait_resource_timeout"),
        check_interval=flags.pop("wait_check_interval"),
        concurrency=flags.pop("wait_concurrency"),
    )


def output_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    fn = click.option(
        "--tty",
        type=click.BOOL,
        default=None,
        is_flag=False,
        flag_value=True,
        help="Force TTY-like output (default: on for deploy and delete, else when stdout is a TTY)",
    )(fn)
    fn = bool_flag("--json", "as_json", help="Output as JSON")(fn)
    return fn


def make_output(tty: bool | None, as_json: bool, *, tty_by_default: bool = False) -> Output:
    from kapply.ui.output import Output

    return Output(tty=tty if tty is not None else (tty_by_default or sys.stdout.isatty()), as_json=as_json)


def run(coro: Coroutine[Any, Any, Any]) -> Any:
    return asyncio.run(coro)


def namespace_or_default(flag: str, kubeconfig_namespace: str | None) -> str:
    """-n, else $KAPP_NAMESPACE, else the kubeconfig context's namespace."""
    namespace = flag or os.environ.get("KAPP_NAMESPACE") or kubeconfig_namespace or ""
    if not namespace:
        raise KapplyError("Expected to non-empty namespace name")
    return namespace


def app_namespace_or_default(app_namespace: str, namespace: str, kubeconfig_namespace: str | None) -> str:
    """Where the app record lives: --app-namespace, else the resources' namespace."""
    return app_namespace or namespace_or_default(namespace, kubeconfig_namespace)


def confirm(yes: bool) -> None:
    if yes:
        return
    click.echo("Continue? [yN]: ", nl=False)
    answer = sys.stdin.readline()
    if answer.strip().lower() not in ("y", "yes"):
        raise KapplyError("Stopped")


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
            click.echo(f"kapply: Error: {e}", err=True)
            sys.exit(1)
        except KeyboardInterrupt:
            click.echo("kapply: Error: Interrupted (changes applied so far stay applied)", err=True)
            sys.exit(130)

    return wrapper
