"""Measure the Kubernetes client candidates on the local control plane.

    KUBECONFIG=... .venv/bin/python bench/client_choice.py

For lightkube (httpx2, HTTP/2 on and off) and the official `kubernetes` client:
import time, 100 concurrent GETs, and one LIST of 1,000 ConfigMaps. Prints a
markdown table (median and min/max of the repetitions) for docs/design.md.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

NAMESPACE = "bench-client-choice"
OBJECTS = 1000
CONCURRENT_GETS = 100
REPS = 5

IMPORTS = {
    "lightkube": "import lightkube; from lightkube import AsyncClient, Client",
    "kubernetes": "import kubernetes; from kubernetes import client, config, dynamic",
}


def import_seconds(statement: str) -> list[float]:
    code = f"import time; t = time.perf_counter(); {statement}; print(time.perf_counter() - t)"
    return [float(subprocess.check_output([sys.executable, "-c", code])) for _ in range(REPS)]


def timed(fn: Callable[[], object]) -> list[float]:
    fn()  # warm-up: connection, TLS, discovery
    out = []
    for _ in range(REPS):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return out


def setup() -> None:
    from lightkube import AsyncClient
    from lightkube.resources.core_v1 import ConfigMap, Namespace

    async def create_all() -> None:
        client = AsyncClient(http2=True)
        try:
            await client.create(Namespace.from_dict({"metadata": {"name": NAMESPACE}}))
        except Exception:  # exists from an earlier run
            await client.close()
            return
        sem = asyncio.Semaphore(50)

        async def one(i: int) -> None:
            async with sem:
                await client.create(
                    ConfigMap.from_dict({"metadata": {"name": f"cm-{i}"}, "data": {"k": "v" * 200}}),
                    namespace=NAMESPACE,
                )

        await asyncio.gather(*(one(i) for i in range(OBJECTS)))
        await client.close()

    asyncio.run(create_all())


def lightkube_cases(http2: bool) -> dict[str, Callable[[], object]]:
    from lightkube import AsyncClient, Client
    from lightkube.resources.core_v1 import ConfigMap

    loop = asyncio.new_event_loop()
    aclient = AsyncClient(http2=http2)
    client = Client(http2=http2)

    async def gets() -> None:
        await asyncio.gather(*(aclient.get(ConfigMap, f"cm-{i}", namespace=NAMESPACE) for i in range(CONCURRENT_GETS)))

    def list_all() -> None:
        listed = list(client.list(ConfigMap, namespace=NAMESPACE, chunk_size=500))
        assert len(listed) >= OBJECTS  # plus kube-root-ca.crt

    return {"100 concurrent GETs": lambda: loop.run_until_complete(gets()), "LIST 1,000": list_all}


def raw_transport_cases() -> dict[str, Callable[[], object]]:
    """lightkube's kubeconfig, TLS and auth, but plain dicts: the shape of kapply's hot path."""
    import orjson
    from lightkube import KubeConfig
    from lightkube.config.client_adapter import AsyncClient, ConnectionParams

    config = KubeConfig.from_env().get()
    loop = asyncio.new_event_loop()
    http = AsyncClient(config, ConnectionParams(http2=True))
    base = f"/api/v1/namespaces/{NAMESPACE}/configmaps"

    async def get(path: str, **params: str) -> dict:
        response = await http.get(path, params=params)
        response.raise_for_status()
        return orjson.loads(response.content)

    async def gets() -> None:
        await asyncio.gather(*(get(f"{base}/cm-{i}") for i in range(CONCURRENT_GETS)))

    async def list_all() -> None:
        items, token = [], ""
        while True:
            page = await get(base, limit="500", **({"continue": token} if token else {}))
            items += page["items"]
            token = page["metadata"].get("continue", "")
            if not token:
                break
        assert len(items) >= OBJECTS  # plus kube-root-ca.crt

    return {
        "100 concurrent GETs": lambda: loop.run_until_complete(gets()),
        "LIST 1,000": lambda: loop.run_until_complete(list_all()),
    }


def kubernetes_cases() -> dict[str, Callable[[], object]]:
    from kubernetes import client, config

    config.load_kube_config()
    conf = client.Configuration.get_default_copy()
    conf.connection_pool_maxsize = CONCURRENT_GETS
    api = client.CoreV1Api(client.ApiClient(conf))
    pool = ThreadPoolExecutor(max_workers=CONCURRENT_GETS)

    def gets() -> None:
        list(pool.map(lambda i: api.read_namespaced_config_map(f"cm-{i}", NAMESPACE), range(CONCURRENT_GETS)))

    def list_all() -> None:
        items, token = [], None
        while True:
            page = api.list_namespaced_config_map(NAMESPACE, limit=500, _continue=token)
            items += page.items
            token = page.metadata._continue
            if not token:
                break
        assert len(items) >= OBJECTS  # plus kube-root-ca.crt

    return {"100 concurrent GETs": gets, "LIST 1,000": list_all}


def fmt(samples: list[float]) -> str:
    return f"{statistics.median(samples) * 1000:.0f} ms ({min(samples) * 1000:.0f}-{max(samples) * 1000:.0f})"


def main() -> None:
    if not os.environ.get("KUBECONFIG"):
        sys.exit("set KUBECONFIG to the local control plane's kubeconfig")
    setup()
    rows = {
        "lightkube 1.0 (httpx2, HTTP/2)": lightkube_cases(http2=True),
        "lightkube 1.0 (httpx2, HTTP/1.1)": lightkube_cases(http2=False),
        "lightkube transport, dicts + orjson (HTTP/2)": raw_transport_cases(),
        "kubernetes 37 (urllib3, threads)": kubernetes_cases(),
    }
    imports = {"lightkube": import_seconds(IMPORTS["lightkube"]), "kubernetes": import_seconds(IMPORTS["kubernetes"])}
    print("| client | import | 100 concurrent GETs | LIST 1,000 ConfigMaps (pages of 500) |")
    print("|---|---|---|---|")
    for name, cases in rows.items():
        results = {case: fmt(timed(fn)) for case, fn in cases.items()}
        imp = fmt(imports["kubernetes" if name.startswith("kubernetes") else "lightkube"])
        print(f"| {name} | {imp} | {results['100 concurrent GETs']} | {results['LIST 1,000']} |")


if __name__ == "__main__":
    main()
