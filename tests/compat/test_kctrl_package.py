"""`kapply package` against the real kctrl (issue 31): the same commands, in file order, each client in its own
namespace with its own carvel-mode controller (tests/compat/kctrl_harness.py), comparing the exit status, stdout,
`--json` and the objects created. One repository bundle (seed 000's package, 1.0.0 and 2.0.0) is shared by the
module."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from lightkube import Client
from lightkube.resources.core_v1 import ServiceAccount

from tests.compat.kctrl_harness import TOOLS, CarvelInstall, CarvelRepository, Clients, Tail, kctrl_clients, objects
from tests.e2e.harness import Cluster, external_tool
from tests.e2e.package_cli_harness import REF, package_document, push_simple_app
from tests.e2e.registry import Registry

pytestmark = [pytest.mark.compat, pytest.mark.e2e, pytest.mark.timeout(300)]
WAIT = "--wait-check-interval=0.5s"


@pytest.fixture(scope="module")
def oci_registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Registry]:
    from tests.e2e import registry

    crane = external_tool("crane", "KAPPLY_CRANE")
    with registry.serving(crane, tmp_path_factory.mktemp("oci-registry")) as served:
        yield served


@pytest.fixture(scope="module")
def both(cluster: Cluster, kube: Client, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Clients]:
    kctrl = external_tool("kctrl", "KAPPLY_KCTRL")
    with kctrl_clients(cluster, kube, kctrl, tmp_path_factory.mktemp("kctrl")) as clients:
        yield clients


@pytest.fixture(scope="module")
def urls(oci_registry: Registry, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The repository bundle at two tags: 1.0.0 (the package's 1.0.0) and 2.0.0 (1.0.0 and 2.0.0)."""
    pushed = push_simple_app(oci_registry, tmp_path_factory.mktemp("kctrl-bundles"))
    one, two = (package_document(v, pushed.app_image) for v in ("1.0.0", "2.0.0"))
    return {"1.0.0": pushed.repository("1.0.0", one), "2.0.0": pushed.repository("2.0.0", one, two)}


def specs(kube: Client, kinds: dict[str, Any], clients: Clients) -> tuple[list[Any], list[Any]]:
    """Each client's objects of a kind: their names, specs, labels and annotations, normalised."""

    def seen(tool: str) -> list[Any]:
        found = objects(kube, kinds[tool], clients.ns[tool])
        kept = [{k: o.get(k) for k in ("spec",)} | {"name": o["metadata"]["name"]} for o in found]
        kept = [k | {"annotations": (o["metadata"].get("annotations") or {})} for k, o in zip(kept, found, strict=True)]
        return json.loads(clients.normalize(json.dumps(kept), tool))

    return seen("kctrl"), seen("kapply")


REPOSITORIES = dict.fromkeys(TOOLS, CarvelRepository)
INSTALLS = dict.fromkeys(TOOLS, CarvelInstall)


# --- package repository -----------------------------------------------------------------------------------------------


def test_repository_add(both: Clients, kube: Client, urls: dict[str, str]) -> None:
    both.same(both.run("repository", "add", "-r", "repo", "--url", urls["1.0.0"], "-n", "{ns}", WAIT))
    theirs, ours = specs(kube, REPOSITORIES, both)
    assert ours == theirs


def test_repository_get(both: Clients) -> None:
    both.same(both.run("repository", "get", "-r", "repo", "-n", "{ns}"))
    both.same(both.run("repository", "get", "-r", "repo", "-n", "{ns}", "--json"))


def test_repository_list(both: Clients) -> None:
    both.same(both.run("repository", "list", "-n", "{ns}"))
    both.same(both.run("repository", "list", "-n", "{ns}", "--json"))
    both.same(both.run("repository", "list", "-A"))  # both namespaces' (each NS), and only theirs
    both.same(both.run("repository", "list", "-A", "--json"))


def test_repository_update(both: Clients, kube: Client, urls: dict[str, str]) -> None:
    both.same(both.run("repository", "update", "-r", "repo", "--url", urls["2.0.0"], "-n", "{ns}", WAIT))
    theirs, ours = specs(kube, REPOSITORIES, both)
    assert ours == theirs


def test_repository_kick(both: Clients) -> None:
    both.same(both.run("repository", "kick", "-r", "repo", "-n", "{ns}", "-y", WAIT), tail=Tail.WITHIN)
    both.same(both.run("repository", "kick", "-r", "repo", "-n", "{ns}", "-y", "--wait=false"))
    both.same(both.run("repository", "kick", "-r", "missing", "-n", "{ns}", "-y"))


# --- package available ------------------------------------------------------------------------------------------------


def test_available_list(both: Clients) -> None:
    both.same(both.run("available", "list", "-n", "{ns}"))
    both.same(both.run("available", "list", "-n", "{ns}", "--json"))
    both.same(both.run("available", "list", "-p", REF, "-n", "{ns}", "--json"))
    both.same(both.run("available", "list", "-A"))
    both.same(both.run("available", "list", "-A", "--summary=false", "--json"))


def test_columns(both: Clients) -> None:
    """`--column` may name a column the table hides; unknown names are all named, in the order given."""
    both.same(both.run("available", "list", "-n", "{ns}", "--column=name,namespace"))
    both.same(both.run("available", "list", "-n", "{ns}", "--column=invalid,name,ns"))
    both.same(both.run("repository", "list", "-n", "{ns}", "--column=name,namespace", "--json"))


def test_available_get(both: Clients, tmp_path: Path) -> None:
    both.same(both.run("available", "get", "-p", REF, "-n", "{ns}"))
    both.same(both.run("available", "get", "-p", f"{REF}/1.0.0", "-n", "{ns}", "--json"))
    both.same(both.run("available", "get", "-p", f"{REF}/2.0.0", "-n", "{ns}", "--values-schema"))


# --- package install and installed -----------------------------------------------------------------------------------


def test_install_dry_run(both: Clients) -> None:
    args = ("install", "-i", "dry", "-p", REF, "--version", "1.0.0", "-n", "{ns}", "--values-file", "-", "--dry-run")
    both.same(both.run(*args, input="hello_msg: dry\n"))


def test_install(both: Clients, kube: Client) -> None:
    values = "hello_msg: kctrl\n"
    args = ("install", "-i", "app", "-p", REF, "--version", "1.0.0", "-n", "{ns}", "--values-file", "-", WAIT)
    both.same(both.run(*args, input=values), tail=Tail.WITHIN)
    theirs, ours = specs(kube, INSTALLS, both)
    assert ours == theirs
    accounts = [
        sorted(both.normalize(a.metadata.name, tool) for a in kube.list(ServiceAccount, namespace=both.ns[tool]))
        for tool in TOOLS
    ]
    assert accounts[0] == accounts[1]


def test_installed_list(both: Clients) -> None:
    both.same(both.run("installed", "list", "-n", "{ns}"))
    both.same(both.run("installed", "list", "-n", "{ns}", "--json"))
    both.same(both.run("installed", "list", "-A", "--wide"))
    both.same(both.run("installed", "list", "-A", "--json"))


def test_installed_get(both: Clients) -> None:
    both.same(both.run("installed", "get", "-i", "app", "-n", "{ns}"))
    both.same(both.run("installed", "get", "-i", "app", "-n", "{ns}", "--json"))
    both.same(both.run("installed", "get", "-i", "app", "-n", "{ns}", "--values"))


def test_installed_update(both: Clients, kube: Client) -> None:
    updated = both.run("installed", "update", "-i", "app", "--version", "2.0.0", "-n", "{ns}", WAIT)
    theirs, ours = specs(kube, INSTALLS, both)
    assert ours == theirs
    both.same(updated, tail=Tail.WITHIN)


def test_installed_status(both: Clients) -> None:
    both.same(both.run("installed", "status", "-i", "app", "-n", "{ns}"))


def test_installed_pause_and_kick(both: Clients) -> None:
    both.same(both.run("installed", "pause", "-i", "app", "-n", "{ns}", "-y"))
    both.same(both.run("installed", "kick", "-i", "app", "-n", "{ns}", "-y", WAIT), tail=Tail.WITHIN)


def test_installed_delete(both: Clients, kube: Client) -> None:
    deleted = both.run("installed", "delete", "-i", "app", "-n", "{ns}", "-y", WAIT)
    assert specs(kube, INSTALLS, both) == ([], [])
    both.same(deleted, tail=Tail.SAME)


def test_repository_delete(both: Clients, kube: Client) -> None:
    both.same(both.run("repository", "delete", "-r", "repo", "-n", "{ns}", "-y", WAIT))
    assert specs(kube, REPOSITORIES, both) == ([], [])
