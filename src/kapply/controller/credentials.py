"""Deploying with the App's service account: a token from the TokenRequest API, cached and renewed at half its life
(as kapp-controller's token manager), so that a periodic sync of an unchanged App writes nothing.

Tokens are kept by the account's namespace, name and uid, as kapp-controller keys them: an account deleted and made
anew under the same name (`kapply package installed delete`, then `install` again) is another account, whose first
sync asks for its own token rather than deploying with the old account's (which the API server refuses: 401). So
the account is read at every sync, as kapp-controller reads it; in a running controller (`watch=True`) from a watch
of the ServiceAccounts of each namespace Apps deploy from (started by the first token asked for there), so that a
sync of an unchanged App still asks the API server nothing. The account is read from the API server instead while
that watch has not listed yet, when the watch does not show it (it may lag behind an account just made: a missing
account is an error only when the API server says so too), when the controller may not list and watch accounts
(then at every sync), and for an App's delete (`verify`: the API server may still take a deleted account's token for
a few seconds, and a delete must not go ahead with an account that is gone). A token the API server no longer takes
is forgotten (`forget`), so that the next sync asks for a new one."""

from __future__ import annotations

import asyncio
import contextvars
import logging
import time
from dataclasses import dataclass

from kapply.api import AsyncClient
from kapply.controller.cache import Store
from kapply.controller.watch import Following
from kapply.errors import ClusterError, KapplyError
from kapply.objects import Obj
from kapply.resources.cluster import SERVICE_ACCOUNTS, Refusal, list_then_watch

_log = logging.getLogger("kapply.controller")
LIFETIME = 7200  # seconds asked for, as kapp-controller
RETRY = 2.0  # seconds before a broken watch of accounts starts again


@dataclass(frozen=True, slots=True)
class _Token:
    value: str
    renew_at: float  # monotonic


Key = tuple[str, str, str]  # the account's namespace, name and uid


class Tokens:
    def __init__(self, controller: AsyncClient, *, watch: bool = False) -> None:
        self.controller = controller
        self.watch = watch
        self._tokens: dict[Key, _Token] = {}
        self._locks: dict[tuple[str, str], asyncio.Lock] = {}
        self._stores: dict[str, Store] = {}  # the accounts of a namespace, by its watch
        self._watches: dict[str, asyncio.Task[None]] = {}
        self._unwatched: set[str] = set()  # namespaces whose accounts the controller may not list and watch

    async def token(self, namespace: str, account: str, *, verify: bool = False) -> str:
        """A token of the service account; KapplyError (kapp-controller's `Preparing kapp: ...`) when there is none.
        Two Apps of one account syncing at once share one token request. With `verify` the account is read from the
        API server (an App's delete)."""
        async with self._locks.setdefault((namespace, account), asyncio.Lock()):
            return await self._token(namespace, account, verify)

    def forget(self, namespace: str, account: str, token: str) -> None:
        """`token` was refused (401): the next `token` asks for a new one."""
        for key in [k for k, t in self._tokens.items() if k[:2] == (namespace, account) and t.value == token]:
            del self._tokens[key]

    def stop(self) -> None:
        """Stop the watches of accounts (the controller stops working); a later `token` starts them again."""
        for task in self._watches.values():
            task.cancel()
        self._watches.clear()
        self._stores.clear()

    async def _token(self, namespace: str, account: str, verify: bool) -> str:
        sa = None if verify else self._watched(namespace, account)
        if sa is None:
            sa = await self._read(namespace, account)
        key = (namespace, account, str(sa["metadata"].get("uid") or ""))
        cached = self._tokens.get(key)
        if cached is not None and time.monotonic() < cached.renew_at:
            return cached.value
        try:
            token = await self.controller.cluster.request_token(namespace, account, LIFETIME)
        except ClusterError as e:
            if cached is not None:  # keep a token that still works when renewing it fails
                return cached.value
            raise KapplyError(f"Preparing kapp: Requesting a token for service account '{account}': {e}") from e
        for older in [k for k in self._tokens if k[:2] == key[:2]]:  # an account of this name that was deleted
            del self._tokens[older]
        self._tokens[key] = _Token(token, time.monotonic() + LIFETIME / 2)
        return token

    async def _read(self, namespace: str, account: str) -> Obj:
        try:
            sa = await self.controller.cluster.get(SERVICE_ACCOUNTS, namespace, account)
        except ClusterError as e:
            raise KapplyError(f"Preparing kapp: Getting service account: {e}") from e
        if sa is None:
            raise KapplyError(f'Preparing kapp: Getting service account: serviceaccounts "{account}" not found')
        return sa

    def _watched(self, namespace: str, account: str) -> Obj | None:
        """The account as the namespace's watch shows it; None when it does not (yet) show it."""
        if not self.watch or namespace in self._unwatched:
            return None
        store = self._stores.get(namespace)
        if store is None:
            store = self._stores[namespace] = Store("")
            # (in a context of its own: not logged as part of the reconcile that happened to start it)
            task = asyncio.create_task(self._follow(namespace, store), context=contextvars.Context())
            task.add_done_callback(lambda done: self._ended(namespace, done))
            self._watches[namespace] = task
        return store.named(namespace, account) if store.synced else None

    def _ended(self, namespace: str, task: asyncio.Task[None]) -> None:
        """A watch that stopped (refused, or failed) is forgotten: the next token asked for there starts it again
        (unless the controller may not watch accounts there)."""
        if self._watches.get(namespace) is task:
            del self._watches[namespace]
            self._stores.pop(namespace, None)
        if not task.cancelled() and task.exception() is not None:
            _log.warning("watching serviceaccounts in %s: %s", namespace, task.exception())

    async def _follow(self, namespace: str, store: Store) -> None:
        def refused(refusal: Refusal, error: ClusterError) -> None:
            _log.warning("watching serviceaccounts in %s: %s (read at each sync instead)", namespace, error)
            if refusal is Refusal.FORBIDDEN:
                self._unwatched.add(namespace)

        await list_then_watch(
            self.controller.cluster,
            SERVICE_ACCOUNTS,
            Following(store),
            namespace=namespace,
            refused=refused,
            retry=RETRY,
        )
