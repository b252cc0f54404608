"""A delete's last check (kapp's: discovery asked again, then every listable type listed by the app's label, and the
record kept if anything of the app is left) lists the types it knew while discovery is asked (issue 33: a round trip
less): a type discovery no longer serves is left out, a type it newly serves is listed after it, and what is found in
either way fails the delete as before."""

from __future__ import annotations

import asyncio

import pytest

from kapply import delete
from kapply.app import record
from kapply.app.meta import AppMeta
from kapply.errors import KapplyError
from kapply.objects import Obj
from kapply.resources.cluster import Discovery, ResourceType
from kapply.resources.labeled import with_identity
from tests.unit.conftest import BUILTIN_TYPES
from tests.unit.fake_cluster import FakeCluster

VERBS = frozenset({"get", "list", "watch", "create", "update", "patch", "delete"})
WIDGET = ResourceType("example.com", "v1", "Widget", "widgets", True, VERBS)  # discovered, then gone
GADGET = ResourceType("example.com", "v1", "Gadget", "gadgets", True, VERBS)  # served once the delete began
APP = record.App("web", "ns", "web", AppMeta("kapp.k14s.io/app", "1"))


def labeled(kind: str, name: str) -> Obj:
    """An object the app made (labeled, with its identity annotation)."""
    obj = {
        "apiVersion": "example.com/v1",
        "kind": kind,
        "metadata": {"name": name, "namespace": "ns", "labels": {"kapp.k14s.io/app": "1"}},
    }
    return with_identity(obj)


class Rediscovered(FakeCluster):
    """Discovery asked again answers only once a LIST was asked meanwhile (a check that listed after it would time
    out), and serves GADGET instead of WIDGET."""

    def __init__(self) -> None:
        super().__init__(Discovery((*BUILTIN_TYPES, WIDGET)))
        self.listing = asyncio.Event()

    async def discovery(self, refresh: bool = False) -> Discovery:
        if refresh:
            self.log.append(("discovery", "", ""))
            await asyncio.wait_for(self.listing.wait(), 5)
            self._discovery = Discovery((*BUILTIN_TYPES, GADGET))
        return await super().discovery(refresh)

    async def list(
        self, rtype: ResourceType, *, label_selector: str | None = None, namespace: str | None = None
    ) -> list[Obj]:
        self.listing.set()
        return await super().list(rtype, label_selector=label_selector, namespace=namespace)


def check(fake: Rediscovered) -> list[tuple[str, str, str]]:
    asyncio.run(delete._check_gone(fake, APP))  # type: ignore[arg-type]
    return fake.log


def test_the_known_types_are_listed_while_discovery_is_asked_and_a_new_type_after_it() -> None:
    fake = Rediscovered()
    fake.objects[("example.com", "Widget", "ns", "w")] = labeled("Widget", "w")  # of a type no longer served
    log = check(fake)
    assert log[0] == ("discovery", "", "")
    assert ("list", "Widget", "") in log  # asked before discovery answered, its answer then left out
    assert log[-1] == ("list", "Gadget", "")  # the new type, once discovery answered
    assert [entry for entry in log if entry[0] == "list"].count(("list", "ConfigMap", "")) == 1


def test_what_is_left_of_the_app_in_a_type_discovery_newly_serves_is_found() -> None:
    fake = Rediscovered()
    fake.objects[("example.com", "Gadget", "ns", "g")] = labeled("Gadget", "g")
    with pytest.raises(KapplyError, match="^Expected all resources to be gone, but found: gadget/g"):
        check(fake)
