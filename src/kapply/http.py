"""aiohttp, kapply's HTTP stack, imported without loading the system's CA store twice at start-up.

When it is imported, aiohttp builds its two default TLS contexts (`aiohttp.connector`), and each loads the system CA
store: ~18 ms apiece, about a tenth of a short CLI run. kapply's requests to the cluster never use them (each carries
the context kapply.resources.auth builds from the kubeconfig); a registry or URL fetched with aiohttp's default
verification does. So a context whose CA store load is asked for while aiohttp is imported here loads it when it is
first used for a connection (`wrap_bio`, which asyncio calls, or `wrap_socket`), and verifies from then on exactly as
aiohttp made it. Modules import aiohttp from here (`from kapply.http import aiohttp`), so that kapply's first import
of it is this one; after that, this one is a plain import.
"""

from __future__ import annotations

import asyncio
import errno
import ipaddress
import socket
import ssl
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

__all__ = [
    "ANYWHERE",
    "LOCAL_NETWORKS",
    "Destinations",
    "GuardedResolver",
    "addresses_of",
    "aiohttp",
    "guarded_connector",
]


def _loaded_on_first_use(context: ssl.SSLContext, load: Callable[[ssl.SSLContext], None]) -> None:
    """`load(context)` before the context's first connection, once, whichever thread makes it."""
    lock = threading.Lock()
    loaded = False

    def first(wrap: Callable[..., Any]) -> Callable[..., Any]:
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            nonlocal loaded
            with lock:
                if not loaded:
                    load(context)
                    loaded = True
            return wrap(*args, **kwargs)

        return wrapped

    try:
        for name in ("wrap_bio", "wrap_socket"):
            setattr(context, name, first(getattr(context, name)))
    except AttributeError:  # a context that takes no attributes of its own (some other SSLContext class): load now
        load(context)


@contextmanager
def _ca_store_loaded_on_first_use() -> Iterator[None]:
    """Within: a context's `set_default_verify_paths` (which `ssl.create_default_context` and `load_default_certs`
    call) is put off until the context is first used, whichever thread made the context."""
    own = vars(ssl.SSLContext).get("set_default_verify_paths")  # None: inherited from _ssl._SSLContext
    load = ssl.SSLContext.set_default_verify_paths

    def put_off(context: ssl.SSLContext) -> None:
        _loaded_on_first_use(context, load)

    ssl.SSLContext.set_default_verify_paths = put_off  # type: ignore[method-assign,assignment]
    try:
        yield
    finally:
        if own is None:
            del ssl.SSLContext.set_default_verify_paths
        else:
            ssl.SSLContext.set_default_verify_paths = own  # type: ignore[method-assign]


with _ca_store_loaded_on_first_use():
    import aiohttp
    import aiohttp.abc


# --- where a tenant's fetch may connect ---------------------------------------------------------------------------

# Addresses an App's sources may not name (unless the controller allows local sources): the controller's own machine
# (loopback, "this host"), and what only a machine's own neighbourhood answers (link-local: a cloud's metadata service,
# 169.254.169.254, hands out the machine's credentials).
LOCAL_NETWORKS = tuple(
    ipaddress.ip_network(n)
    for n in ("127.0.0.0/8", "0.0.0.0/8", "169.254.0.0/16", "::1/128", "::/128", "fe80::/10", "::ffff:0:0/96")
)


@dataclass(frozen=True, slots=True)
class Destinations:
    """Where a tenant's fetch may connect: anywhere but LOCAL_NETWORKS and the API server's own addresses
    (`refused`), unless `allow_local` (the tests' servers are on loopback)."""

    allow_local: bool = True
    refused: tuple[str, ...] = ()  # addresses: the API server's

    def refusal(self, address: str) -> str | None:
        """Why `address` (an IP address) may not be reached, or None."""
        if self.allow_local:
            return None
        ip = ipaddress.ip_address(address.split("%", 1)[0])
        if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
            ip = ip.ipv4_mapped
        if ip.is_loopback or ip.is_unspecified:
            return "an address of the controller's own machine"
        if ip.is_link_local:
            return "a link-local address"
        if str(ip) in self.refused:
            return "the API server's address"
        return None

    def check_literal(self, host: str) -> None:
        """OSError when `host` is an IP address that may not be reached (a name is checked when it is resolved)."""
        try:
            ipaddress.ip_address(host.strip("[]").split("%", 1)[0])
        except ValueError:
            return
        why = self.refusal(host.strip("[]"))
        if why:
            raise OSError(errno.EACCES, f"{host} is {why}: App sources may not be fetched from it")

    async def check_name(self, host: str, port: int) -> tuple[str, ...]:
        """The addresses `host` resolves to, all of which may be reached (git connects by itself: the name is
        resolved here first, and git is then told to connect to these); OSError when one may not be. () when every
        address may be reached (`allow_local`)."""
        if self.allow_local:
            return ()
        self.check_literal(host)
        addresses: list[str] = []
        for *_, address in await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM):
            why = self.refusal(str(address[0]))
            if why:
                raise OSError(
                    errno.EACCES, f"{host} resolves to {address[0]}, {why}: App sources may not be fetched from it"
                )
            addresses.append(str(address[0]))
        return tuple(dict.fromkeys(addresses))


ANYWHERE = Destinations()  # what code fetching for itself (not for a tenant) may reach


class GuardedResolver(aiohttp.abc.AbstractResolver):
    """aiohttp's resolver, refusing a name that resolves to an address `destinations` refuses: checked on the
    addresses the connection is then made to, so a name cannot point elsewhere between a check and the connection.
    (aiohttp does not resolve IP addresses: `Destinations.check_literal` checks them before each request.)"""

    def __init__(self, destinations: Destinations) -> None:
        self.destinations = destinations
        self.inner = aiohttp.DefaultResolver()

    async def resolve(self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET) -> list[Any]:
        found = await self.inner.resolve(host, port, family)
        for entry in found:
            why = self.destinations.refusal(entry["host"])
            if why:
                message = f"{host} resolves to {entry['host']}, {why}: App sources may not be fetched from it"
                raise OSError(errno.EACCES, message)
        return found

    async def close(self) -> None:
        await self.inner.close()


def guarded_connector(destinations: Destinations, **options: Any) -> aiohttp.TCPConnector:
    """A connector whose names resolve through GuardedResolver."""
    return aiohttp.TCPConnector(resolver=GuardedResolver(destinations), **options)


async def addresses_of(url: str, *hosts: str) -> tuple[str, ...]:
    """The IP addresses the host of `url` and `hosts` resolve to (a name that does not resolve adds none)."""
    found: set[str] = set()
    for host in (urlsplit(url).hostname or "", *hosts):
        if not host:
            continue
        try:
            for *_, address in await asyncio.get_running_loop().getaddrinfo(host, None, type=socket.SOCK_STREAM):
                found.add(str(ipaddress.ip_address(str(address[0]).split("%", 1)[0])))
        except OSError:
            continue
    return tuple(sorted(found))
