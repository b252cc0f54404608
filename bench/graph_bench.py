"""How long ordering a large app takes: 5,020 changes (25 namespaces of RBAC, configuration, Deployments, Services
and custom resources; about a million edges for upserts, since every workload waits for all ConfigMaps, Secrets and
RBAC of its namespace). Median of 5 runs per op.

    .venv/bin/python bench/graph_bench.py
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.unit.test_graph import large_app  # noqa: E402  (the same app the unit test orders)

from kapply.config import default_config  # noqa: E402
from kapply.graph import GraphOp, Node, build_graph  # noqa: E402


def main() -> None:
    config = default_config()
    for op in (GraphOp.UPSERT, GraphOp.DELETE):
        nodes = [Node(op, node.resource, node.description) for node in large_app()]
        times = []
        for _ in range(5):
            start = time.perf_counter()
            build_graph(nodes, config)
            times.append(time.perf_counter() - start)
        print(
            f"{op.value:7} {len(nodes)} changes: median {statistics.median(times) * 1000:.0f} ms "
            f"(min {min(times) * 1000:.0f}, max {max(times) * 1000:.0f})"
        )


if __name__ == "__main__":
    main()
