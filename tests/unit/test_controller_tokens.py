"""The App service accounts' tokens (controller/credentials.py): kept by the account's namespace, name and uid (as
kapp-controller keys them), so that an account deleted and made anew under the same name gets a token of its own at
its first sync; the account is read at each sync, from a watch of the namespace's accounts in a running controller
(a sync of an unchanged App asks the API server nothing), from the API server without one, while the watch has not
listed, when it does not show the account, and for a delete; a refused token is forgotten."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from types import SimpleNamespace
from typing import Any

import pytest

from kapply.controller.credentials import Tokens
from kapply.errors import ClusterError, KapplyError
from kapply.objects import Obj
from kapply.resources.cluster import ResourceType


class Accounts:
    """ServiceAccounts (one, `deployer`, in `team`), their LIST and WATCH, and the TokenRequest API: each token
    request gives a new token."""

    def __init__(self, *, may_list: bool = True) -> None:
        self.uid: str | None = "sa-1"
        self.log: list[str] = []
        self.may_list = may_list
        self.events: asyncio.Queue[tuple[str, Obj]] = asyncio.Queue()

    def account(self, name: str = "deployer") -> Obj:
        return {"metadata": {"name": name, "namespace": "team", "uid": self.uid, "resourceVersion": "1"}}

    async def get(self, rtype: ResourceType, namespace: str, name: str) -> Obj | None:
        self.log.append(f"GET {name}")
        return None if self.uid is None else self.account(name)

    async def list_with_version(self, rtype: ResourceType, **options: Any) -> tuple[list[Obj], str]:
        self.log.append(f"LIST {options['namespace']}")
        if not self.may_list:
            raise ClusterError("serviceaccounts is forbidden", status=403)
        return ([] if self.uid is None else [self.account()]), "1"

    async def watch(self, rtype: ResourceType, **options: Any) -> AsyncIterator[tuple[str, Obj]]:
        while True:
            yield await self.events.get()

    async def request_token(self, namespace: str, account: str, seconds: int) -> str:
        self.log.append("POST token")
        return f"token-{len(self.log)}"

    def remake(self, uid: str | None) -> None:
        """The account deleted (and made anew with `uid`), as the watch tells it."""
        self.events.put_nowait(("DELETED", self.account()))
        self.uid = uid
        if uid is not None:
            self.events.put_nowait(("ADDED", self.account()))


def tokens(*, watch: bool = False, may_list: bool = True) -> tuple[Tokens, Accounts]:
    accounts = Accounts(may_list=may_list)
    return Tokens(SimpleNamespace(cluster=accounts), watch=watch), accounts  # type: ignore[arg-type]


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


def test_without_a_watch_the_account_is_read_at_each_sync_and_its_live_token_reused() -> None:
    async def test() -> None:
        cache, accounts = tokens()
        first = await cache.token("team", "deployer")
        assert [await cache.token("team", "deployer") for _ in range(2)] == [first] * 2
        assert accounts.log == ["GET deployer", "POST token", "GET deployer", "GET deployer"]

    asyncio.run(test())


def test_an_account_made_anew_under_the_same_name_gets_its_own_token_at_once() -> None:
    async def test() -> None:
        cache, accounts = tokens()
        first = await cache.token("team", "deployer")
        accounts.uid = None  # deleted
        with pytest.raises(KapplyError, match='serviceaccounts "deployer" not found'):
            await cache.token("team", "deployer")
        accounts.uid = "sa-2"  # and made anew: not the old account's token, although it would still "live"
        second = await cache.token("team", "deployer")
        assert second not in ("", first)
        assert await cache.token("team", "deployer") == second

    asyncio.run(test())


def test_with_a_watch_an_unchanged_apps_syncs_ask_the_api_server_nothing() -> None:
    async def test() -> None:
        cache, accounts = tokens(watch=True)
        first = await cache.token("team", "deployer")  # before the watch listed: read from the API server
        await settle()
        assert accounts.log == ["GET deployer", "POST token", "LIST team"]
        assert [await cache.token("team", "deployer") for _ in range(3)] == [first] * 3
        assert accounts.log == ["GET deployer", "POST token", "LIST team"]
        cache.stop()

    asyncio.run(test())


def test_with_a_watch_an_account_made_anew_is_seen_and_gets_its_own_token() -> None:
    async def test() -> None:
        cache, accounts = tokens(watch=True)
        first = await cache.token("team", "deployer")
        await settle()
        accounts.remake("sa-2")
        await settle()
        second = await cache.token("team", "deployer")
        assert second != first
        assert accounts.log == ["GET deployer", "POST token", "LIST team", "POST token"]
        accounts.remake(None)  # deleted: the watch no longer shows it, and the API server confirms
        await settle()
        with pytest.raises(KapplyError, match="not found"):
            await cache.token("team", "deployer")
        cache.stop()

    asyncio.run(test())


def test_an_account_the_controller_may_not_watch_is_read_at_each_sync() -> None:
    async def test() -> None:
        cache, accounts = tokens(watch=True, may_list=False)
        first = await cache.token("team", "deployer")
        await settle()
        assert await cache.token("team", "deployer") == first
        assert await cache.token("team", "deployer") == first
        assert accounts.log == ["GET deployer", "POST token", "LIST team", "GET deployer", "GET deployer"]

    asyncio.run(test())


def test_a_refused_token_is_forgotten() -> None:
    async def test() -> None:
        cache, accounts = tokens()
        first = await cache.token("team", "deployer")
        cache.forget("team", "deployer", "some older token")  # not the one cached: kept
        assert await cache.token("team", "deployer") == first
        cache.forget("team", "deployer", first)
        assert await cache.token("team", "deployer") not in ("", first)

    asyncio.run(test())


def test_a_delete_reads_the_account_even_while_the_watch_shows_it() -> None:
    async def test() -> None:
        cache, accounts = tokens(watch=True)
        first = await cache.token("team", "deployer")
        await settle()
        assert await cache.token("team", "deployer", verify=True) == first  # still there: the same token
        assert accounts.log == ["GET deployer", "POST token", "LIST team", "GET deployer"]
        accounts.uid = None  # gone, before the watch says so
        with pytest.raises(KapplyError, match="not found"):
            await cache.token("team", "deployer", verify=True)
        cache.stop()

    asyncio.run(test())
