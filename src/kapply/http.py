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

import ssl
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["aiohttp"]


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
