"""The App service accounts' tokens (controller/credentials.py): asked for once and reused while they live, without
reading the ServiceAccount again (a sync of an unchanged App asks the API server nothing); a token the API server
refused is forgotten, and the next one is asked for after reading the account again."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest

from kapply.controller.credentials import Tokens
from kapply.errors import KapplyError
from kapply.objects import Obj
from kapply.resources.cluster import ResourceType


class Accounts:
    """ServiceAccounts and the TokenRequest API: each token request gives a new token."""

    def __init__(self) -> None:
        self.uid: str | None = "sa-1"
        self.log: list[str] = []

    async def get(self, rtype: ResourceType, namespace: str, name: str) -> Obj | None:
        self.log.append(f"GET {name}")
        return None if self.uid is None else {"metadata": {"name": name, "uid": self.uid}}

    async def request_token(self, namespace: str, account: str, seconds: int) -> str:
        self.log.append("POST token")
        return f"token-{len(self.log)}"


def tokens() -> tuple[Tokens, Accounts]:
    accounts = Accounts()
    return Tokens(SimpleNamespace(cluster=accounts)), accounts  # type: ignore[arg-type]


def test_a_live_token_is_reused_without_reading_the_account() -> None:
    async def test() -> None:
        cache, accounts = tokens()
        first = await cache.token("team", "deployer")
        assert [await cache.token("team", "deployer") for _ in range(3)] == [first] * 3
        assert accounts.log == ["GET deployer", "POST token"]

    asyncio.run(test())


def test_a_refused_token_is_forgotten_and_the_account_read_again() -> None:
    async def test() -> None:
        cache, accounts = tokens()
        first = await cache.token("team", "deployer")
        cache.forget("team", "deployer", "some older token")  # not the one cached: kept
        assert await cache.token("team", "deployer") == first
        cache.forget("team", "deployer", first)
        accounts.uid = None  # the account was deleted
        with pytest.raises(KapplyError, match='serviceaccounts "deployer" not found'):
            await cache.token("team", "deployer")
        accounts.uid = "sa-2"  # and made anew
        assert await cache.token("team", "deployer") not in ("", first)

    asyncio.run(test())


def test_a_delete_reads_the_account_even_while_its_token_lives() -> None:
    async def test() -> None:
        cache, accounts = tokens()
        first = await cache.token("team", "deployer")
        assert await cache.token("team", "deployer", verify=True) == first  # still there: the same token
        assert accounts.log == ["GET deployer", "POST token", "GET deployer"]
        accounts.uid = None
        with pytest.raises(KapplyError, match="not found"):
            await cache.token("team", "deployer", verify=True)

    asyncio.run(test())
