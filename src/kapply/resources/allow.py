"""kapp's client-side allowing (`--allow-check` with `--allow-ns`, `--allow-all-ns`, `--allow-cluster`): which
namespaces a deploy may put resources in, and whether it may create cluster-scoped ones. It never applies to the app
record itself. The namespace resources are placed into by default (`-n`), `--into-ns` and the targets of `--map-ns`
are always allowed; `--allow-all-ns` counts only when no `--allow-ns` is given (as kapp)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kapply.errors import ManifestError
from kapply.objects import Document, describe, namespace
from kapply.resources.preparation import Placement


@dataclass(frozen=True, slots=True)
class AllowRules:
    namespaces: tuple[str, ...] = ()  # --allow-ns
    all_namespaces: bool = False  # --allow-all-ns
    cluster: bool = False  # --allow-cluster

    def namespace_allowed(self, ns: str, placement: Placement) -> bool:
        if not self.namespaces and self.all_namespaces:
            return True
        automatic = {placement.default_namespace, placement.into_namespace, *placement.namespace_map.values()}
        return ns in self.namespaces or ns in automatic - {""}


def violations(docs: Sequence[Document], rules: AllowRules, placement: Placement) -> list[str]:
    """kapp's validation errors for the placed resources, in input order."""
    out = []
    for doc in docs:
        ns = namespace(doc.obj)
        if not ns:
            if not rules.cluster:
                out.append(f"Cluster level resource '{describe(doc.obj)}' is not allowed ({doc.origin})")
        elif not rules.namespace_allowed(ns, placement):
            out.append(f"Resource '{describe(doc.obj)}' is outside of allowed namespaces ({doc.origin})")
    return out


def check(docs: Sequence[Document], rules: AllowRules | None, placement: Placement) -> None:
    """Refuse resources outside what `rules` allow (None: kapp's default, no check)."""
    if rules is None:
        return
    found = violations(docs, rules, placement)
    if found:
        raise ManifestError("Validation errors:\n" + "\n".join(f"- {v}" for v in found))
