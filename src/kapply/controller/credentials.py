"""Deploying with the App's service account: a token from the TokenRequest API, cached and renewed at half its life
(as kapp-controller's token manager), so that a periodic sync of an unchanged App writes nothing. While a cached
token lives the ServiceAccount is not read either (a sync of an unchanged App asks the API server nothing): it is
read when a token is asked for, and a token the API server no longer takes (401: its account was deleted, or deleted
and made anew) is forgotten (`forget`), so that the next sync reads the account again and says it is missing."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

from kapply.api import AsyncClient
from kapply.errors import ClusterError, KapplyError
from kapply.resources.cluster import SERVICE_ACCOUNTS

LIFETIME = 7200  # seconds asked for, as kapp-controller


@dataclass(frozen=True, slots=True)
class _Token:
    value: str
    renew_at: float  # monotonic
    uid: str  # of the ServiceAccount it was asked for


class Tokens:
    def __init__(self, controller: AsyncClient) -> None:
        self.controller = controller
        self._tokens: dict[tuple[str, str], _Token] = {}
        self._locks: dict[tuple[str, str], asyncio.Lock] = {}

    async def token(self, namespace: str, account: str, *, verify: bool = False) -> str:
        """A token of the service account; KapplyError (kapp-controller's `Preparing kapp: ...`) when there is none.
        Two Apps of one account syncing at once share one token request. With `verify` the account is read even while
        a token lives (an App's delete: the API server may still take a deleted account's token for a few seconds,
        and a delete must not go ahead with an account that is gone)."""
        async with self._locks.setdefault((namespace, account), asyncio.Lock()):
            return await self._token(namespace, account, verify)

    def forget(self, namespace: str, account: str, token: str) -> None:
        """`token` was refused (401): the next `token` reads the account and asks for a new one."""
        cached = self._tokens.get((namespace, account))
        if cached is not None and cached.value == token:
            del self._tokens[(namespace, account)]

    async def _token(self, namespace: str, account: str, verify: bool) -> str:
        key = (namespace, account)
        cached = self._tokens.get(key)
        if cached is not None and time.monotonic() < cached.renew_at and not verify:
            return cached.value
        try:
            sa = await self.controller.cluster.get(SERVICE_ACCOUNTS, namespace, account)
        except ClusterError as e:
            raise KapplyError(f"Preparing kapp: Getting service account: {e}") from e
        if sa is None:
            raise KapplyError(f'Preparing kapp: Getting service account: serviceaccounts "{account}" not found')
        uid = sa["metadata"].get("uid", "")
        if cached is not None and cached.uid != uid:  # an account made anew under the same name: its own token
            cached = None
        if cached is not None and time.monotonic() < cached.renew_at:
            return cached.value
        try:
            token = await self.controller.cluster.request_token(namespace, account, LIFETIME)
        except ClusterError as e:
            if cached is not None:  # keep a token that still works when renewing it fails
                return cached.value
            raise KapplyError(f"Preparing kapp: Requesting a token for service account '{account}': {e}") from e
        self._tokens[key] = _Token(token, time.monotonic() + LIFETIME / 2, uid)
        return token
