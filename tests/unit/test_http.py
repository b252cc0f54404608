"""aiohttp as kapply imports it (kapply.http): its default TLS contexts load the system CA store on their first
connection instead of at import, and verify exactly as before. Each check runs in a fresh interpreter, where
kapply.http is the first import of aiohttp; `SSL_CERT_FILE` stands for the system store."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

# A server with `pki`'s serving certificate (127.0.0.1), and one GET to it with aiohttp's default verification.
CLIENT = """
import asyncio, ssl, sys
from kapply.http import aiohttp
from aiohttp import connector, web

pki = sys.argv[1]
assert "set_default_verify_paths" not in vars(ssl.SSLContext)  # ssl as it was
before = connector._SSL_CONTEXT_VERIFIED.cert_store_stats()["x509_ca"]

async def main():
    app = web.Application()
    app.router.add_get("/", lambda request: web.Response(text="ok"))
    runner = web.AppRunner(app)
    await runner.setup()
    tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    tls.load_cert_chain(f"{pki}/apiserver.crt", f"{pki}/apiserver.key")
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=tls)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]
    try:
        async with aiohttp.ClientSession() as session, session.get(f"https://127.0.0.1:{port}/") as response:
            return await response.text()
    except aiohttp.ClientConnectorCertificateError as e:
        return f"refused: {e.certificate_error.verify_message}"
    finally:
        await runner.cleanup()

answer = asyncio.run(main())
after = connector._SSL_CONTEXT_VERIFIED.cert_store_stats()["x509_ca"]
print(before, after, answer)
"""


def _client(pki: Path, trusted: Path) -> str:
    env = {**os.environ, "SSL_CERT_FILE": str(trusted), "SSL_CERT_DIR": str(trusted.parent / "no-such-dir")}
    done = subprocess.run(
        [sys.executable, "-c", CLIENT, str(pki)], env=env, capture_output=True, text=True, timeout=60, check=True
    )
    return done.stdout.strip()


def test_the_default_context_loads_the_trusted_cas_at_its_first_connection(pki: Path):
    assert _client(pki, pki / "ca.crt") == "0 1 ok"


def test_the_default_context_still_refuses_a_certificate_no_trusted_ca_signed(
    pki: Path, cluster_script: ModuleType, tmp_path: Path
):
    cluster_script.make_certs(tmp_path)  # another CA
    assert _client(pki, tmp_path / "ca.crt") == "0 1 refused: unable to get local issuer certificate"
