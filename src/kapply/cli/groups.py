"""What the commands build from kapp's flags (declared in kapply.flags): their help sections, the kubeconfig to
connect with, and the app they work on."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from kapply.cli.command import Args, FlagSection
from kapply.flags import APP, APP_NAMESPACE, KUBECONFIG, KUBECONFIG_CONTEXT, KUBECONFIG_YAML, NAMESPACE, Flag

if TYPE_CHECKING:
    from kapply.resources.kubeconfig import KubeconfigFlags


def sections(*pairs: tuple[str, tuple[Flag, ...]]) -> tuple[FlagSection, ...]:
    return tuple(FlagSection(title, flags) for title, flags in pairs)


def kubeconfig(args: Args) -> KubeconfigFlags:
    from kapply.resources.kubeconfig import KubeconfigFlags

    return KubeconfigFlags(args[KUBECONFIG] or None, args[KUBECONFIG_CONTEXT] or None, args[KUBECONFIG_YAML] or None)


@dataclass(frozen=True, slots=True)
class AppFlags:
    name: str
    namespace: str  # "" when not given
    app_namespace: str  # "" when not given


def app(args: Args) -> AppFlags:
    return AppFlags(args[APP], args[NAMESPACE], args[APP_NAMESPACE])
