"""Choose kapply's HTTP stack by client CPU per request against the local kube-apiserver.

    KUBECONFIG=/root/.cache/kapply/cluster/kubeconfig .venv/bin/python bench/http_stack.py

Candidates: httpx2 AsyncClient with HTTP/2 (one multiplexed connection, what kapply uses), httpx2 with HTTP/1.1 (pool
of 5) and aiohttp (HTTP/1.1, TCPConnector limit 5). Every candidate decodes bodies with orjson and uses an SSLContext
built the same way from the kubeconfig's client certificate. Each (candidate, repetition) runs in a fresh subprocess:
a warm-up of 5 GETs (connections, TLS), then 2,000 GETs of single ConfigMaps at 5 in flight, one LIST of the 2,000
(limit=10000, decode included), 2,000 POST creates at 5 in flight and the 2,000 matching DELETEs at 5 in flight.

Prints a markdown table (median and min-max of 3 repetitions): candidate | import ms | GET CPU ms/req | GET wall ms/req
| POST CPU ms/req | DELETE CPU ms/req | LIST 2,000 CPU ms | LIST 2,000 wall ms, then the LIST body's decode time with
orjson vs stdlib json. CPU is time.process_time() (user+sys of the client process); the machine has 2 cores shared
with the apiserver and etcd, so CPU per request is the figure to compare and wall time is secondary.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

import orjson
import yaml

NAMESPACE = "bench-http-stack"
OBJECTS = 2000
IN_FLIGHT = 5
REPS = 3
CANDIDATES = ["httpx2 http2=True", "httpx2 http2=False", "aiohttp"]
IMPORTS = {
    "httpx2 http2=True": "import httpx2, h2.connection, h2.config, h2.events",
    "httpx2 http2=False": "import httpx2",
    "aiohttp": "import aiohttp",
}
CM_PATH = f"/api/v1/namespaces/{NAMESPACE}/configmaps"
Request = Callable[[str, str, bytes | None], Awaitable[tuple[int, bytes]]]


def write_credentials(kubeconfig: str, out: Path) -> str:
    """Write the CA, client cert and key of the current context to `out`; return the server URL."""
    cfg = yaml.safe_load(Path(kubeconfig).read_text())
    ctx_name = cfg.get("current-context") or cfg["contexts"][0]["name"]
    ctx = next(c["context"] for c in cfg["contexts"] if c["name"] == ctx_name)
    cluster = next(c["cluster"] for c in cfg["clusters"] if c["name"] == ctx["cluster"])
    user = next(u["user"] for u in cfg["users"] if u["name"] == ctx["user"])
    for name, key in (("ca.pem", "certificate-authority-data"), ("cert.pem", "client-certificate-data")):
        (out / name).write_bytes(base64.b64decode(cluster[key] if name == "ca.pem" else user[key]))
    (out / "key.pem").write_bytes(base64.b64decode(user["client-key-data"]))
    (out / "key.pem").chmod(0o600)
    return str(cluster["server"]).rstrip("/")


def ssl_context(creds: Path) -> ssl.SSLContext:
    ctx = ssl.create_default_context(ssl.Purpose.SERVER_AUTH)
    ctx.load_verify_locations(cafile=str(creds / "ca.pem"))
    ctx.load_cert_chain(str(creds / "cert.pem"), str(creds / "key.pem"))
    return ctx


def cm_body(name: str) -> bytes:
    return orjson.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"k": "v" * 64}})


async def fan_out(
    request: Request, calls: Sequence[tuple[str, str, bytes | None]], ok: set[int]
) -> tuple[float, float]:
    """Run `calls` at IN_FLIGHT concurrency, decoding each body with orjson; return (CPU s, wall s)."""
    sem = asyncio.Semaphore(IN_FLIGHT)

    async def one(method: str, path: str, body: bytes | None) -> None:
        async with sem:
            status, data = await request(method, path, body)
        if status not in ok:
            raise RuntimeError(f"{method} {path}: HTTP {status}: {data[:300]!r}")
        orjson.loads(data)

    cpu, wall = time.process_time(), time.perf_counter()
    await asyncio.gather(*(one(*c) for c in calls))
    return time.process_time() - cpu, time.perf_counter() - wall


async def workload(request: Request) -> dict[str, float]:
    gets = [("GET", f"{CM_PATH}/get-{i}", None) for i in range(OBJECTS)]
    await fan_out(request, gets[:IN_FLIGHT], {200})  # warm-up: open connections, TLS handshakes
    out: dict[str, float] = {}
    out["get_cpu"], out["get_wall"] = await fan_out(request, gets, {200})
    cpu, wall = time.process_time(), time.perf_counter()
    status, data = await request("GET", f"{CM_PATH}?limit=10000", None)
    items = orjson.loads(data)["items"]
    out["list_cpu"], out["list_wall"] = time.process_time() - cpu, time.perf_counter() - wall
    if status != 200 or len(items) < OBJECTS:
        raise RuntimeError(f"LIST: HTTP {status}, {len(items)} items")
    for _ in range(3):  # decode-only cost of the same bytes, alternating, best of 3 each
        for name, loads in (("orjson", orjson.loads), ("json", json.loads)):
            cpu = time.process_time()
            loads(data)
            out[f"decode_{name}"] = min(out.get(f"decode_{name}", 1e9), time.process_time() - cpu)
    out["list_bytes"] = len(data)
    names = [f"post-{os.getpid()}-{i}" for i in range(OBJECTS)]
    posts = [("POST", CM_PATH, cm_body(n)) for n in names]
    out["post_cpu"], out["post_wall"] = await fan_out(request, posts, {201})
    deletes = [("DELETE", f"{CM_PATH}/{n}", None) for n in names]
    out["delete_cpu"], out["delete_wall"] = await fan_out(request, deletes, {200})
    return out


async def run_httpx2(server: str, ctx: ssl.SSLContext, http2: bool) -> dict[str, float]:
    import httpx2

    limits = httpx2.Limits(max_connections=IN_FLIGHT, max_keepalive_connections=IN_FLIGHT)
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    async with httpx2.AsyncClient(base_url=server, verify=ctx, http2=http2, limits=limits, headers=headers) as client:
        versions: set[str] = set()

        async def request(method: str, path: str, body: bytes | None) -> tuple[int, bytes]:
            resp = await client.request(method, path, content=body)
            versions.add(resp.http_version)
            return resp.status_code, resp.content

        out = await workload(request)
    want = "HTTP/2" if http2 else "HTTP/1.1"
    if versions != {want}:
        raise RuntimeError(f"expected {want}, got {versions}")
    return out


async def run_aiohttp(server: str, ctx: ssl.SSLContext) -> dict[str, float]:
    import aiohttp

    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    connector = aiohttp.TCPConnector(limit=IN_FLIGHT, ssl=ctx)
    async with aiohttp.ClientSession(base_url=server, connector=connector, headers=headers) as session:

        async def request(method: str, path: str, body: bytes | None) -> tuple[int, bytes]:
            async with session.request(method, path, data=body) as resp:
                return resp.status, await resp.read()

        return await workload(request)


def worker(candidate: str, server: str, creds: Path) -> None:
    ctx = ssl_context(creds)
    if candidate == "aiohttp":
        out = asyncio.run(run_aiohttp(server, ctx))
    else:
        out = asyncio.run(run_httpx2(server, ctx, http2=candidate.endswith("True")))
    print(json.dumps(out))


def admin(server: str, ctx: ssl.SSLContext, method: str, path: str, body: dict[str, Any] | None = None) -> int:
    """One synchronous request for setup and teardown (stdlib only, so no candidate is warmed up here)."""
    import urllib.error
    import urllib.request

    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(server + path, data=data, method=method, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, context=ctx, timeout=30) as resp:
            return int(resp.status)
    except urllib.error.HTTPError as e:
        return e.code


def wait_gone(server: str, ctx: ssl.SSLContext, timeout: float = 180.0) -> None:
    deadline = time.monotonic() + timeout
    while admin(server, ctx, "GET", f"/api/v1/namespaces/{NAMESPACE}") != 404:
        if time.monotonic() > deadline:
            raise RuntimeError(f"namespace {NAMESPACE} still there after {timeout:.0f}s")
        time.sleep(1)


def setup(server: str, ctx: ssl.SSLContext) -> None:
    if admin(server, ctx, "DELETE", f"/api/v1/namespaces/{NAMESPACE}") != 404:
        wait_gone(server, ctx)  # left over from an interrupted run
    status = admin(server, ctx, "POST", "/api/v1/namespaces", {"metadata": {"name": NAMESPACE}})
    if status != 201:
        raise RuntimeError(f"create namespace: HTTP {status}")

    async def create_all() -> None:  # blocking stdlib requests on the default thread pool
        loop = asyncio.get_running_loop()
        sem = asyncio.Semaphore(20)

        async def one(i: int) -> None:
            async with sem:
                body = orjson.loads(cm_body(f"get-{i}"))
                st = await loop.run_in_executor(None, admin, server, ctx, "POST", CM_PATH, body)
            if st != 201:
                raise RuntimeError(f"create get-{i}: HTTP {st}")

        await asyncio.gather(*(one(i) for i in range(OBJECTS)))

    asyncio.run(create_all())


def import_ms(statement: str) -> list[float]:
    code = f"import time; t = time.perf_counter(); {statement}; print(time.perf_counter() - t)"
    return [1000 * float(subprocess.check_output([sys.executable, "-c", code])) for _ in range(REPS)]


def cell(values: list[float], scale: float = 1.0) -> str:
    v = [x * scale for x in values]
    return f"{statistics.median(v):.3g} ({min(v):.3g}-{max(v):.3g})"


def main() -> None:
    kubeconfig = os.environ.get("KUBECONFIG", "/root/.cache/kapply/cluster/kubeconfig").split(os.pathsep)[0]
    with tempfile.TemporaryDirectory(prefix="http-stack-") as tmp:
        creds = Path(tmp)
        server = write_credentials(kubeconfig, creds)
        ctx = ssl_context(creds)
        results: dict[str, list[dict[str, float]]] = {c: [] for c in CANDIDATES}
        try:
            t0 = time.perf_counter()
            setup(server, ctx)
            print(f"setup: {OBJECTS} ConfigMaps in {time.perf_counter() - t0:.1f}s", file=sys.stderr)
            for rep in range(REPS):  # interleave candidates so drift in machine load spreads over all of them
                for cand in CANDIDATES:
                    t0 = time.perf_counter()
                    cmd = [sys.executable, __file__, "--worker", cand, server, tmp]
                    results[cand].append(json.loads(subprocess.check_output(cmd, timeout=600)))
                    print(f"rep {rep + 1} {cand}: {time.perf_counter() - t0:.1f}s", file=sys.stderr)
        finally:
            admin(server, ctx, "DELETE", f"/api/v1/namespaces/{NAMESPACE}")
            wait_gone(server, ctx)
    per_req = 1000 / OBJECTS
    print(f"\nmedian (min-max) of {REPS} runs, each in a fresh subprocess; {OBJECTS} requests, {IN_FLIGHT} in flight.")
    print("CPU = client process user+sys (time.process_time); 2 cores shared with the apiserver: compare CPU.\n")
    print(
        "| candidate | import ms | GET CPU ms/req | GET wall ms/req | POST CPU ms/req | DELETE CPU ms/req "
        "| LIST 2,000 CPU ms | LIST 2,000 wall ms |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for cand, runs in results.items():
        cols = [cell(import_ms(IMPORTS[cand]))]
        cols += [cell([r[k] for r in runs], per_req) for k in ("get_cpu", "get_wall", "post_cpu", "delete_cpu")]
        cols += [cell([r[k] for r in runs], 1000) for k in ("list_cpu", "list_wall")]
        print(f"| {cand} | " + " | ".join(cols) + " |")
    print("\nsecondary: wall ms/req (phase wall / requests)\n\n| candidate | POST wall ms/req | DELETE wall ms/req |")
    print("|---|---|---|")
    for cand, runs in results.items():
        walls = [cell([r[k] for r in runs], per_req) for k in ("post_wall", "delete_wall")]
        print(f"| {cand} | {walls[0]} | {walls[1]} |")
    dec = [r for runs in results.values() for r in runs]
    orj, std = (cell([r[k] for r in dec], 1000) for k in ("decode_orjson", "decode_json"))
    mb = dec[0]["list_bytes"] / 1e6
    print(f"\nLIST body {mb:.2f} MB, decode-only CPU ms (all {len(dec)} runs): orjson.loads {orj}, json.loads {std}")


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "--worker":
        worker(sys.argv[2], sys.argv[3], Path(sys.argv[4]))
    else:
        main()
