"""`deploy`'s Pod logs (`--logs`, `--logs-all`, the `kapp.k14s.io/deploy-logs` annotations), compared with the real
kapp on the local control plane, where kwok serves every container's log from one file (see test_logs.py).

Log lines are printed as they come, between progress lines and interleaved across containers, and whether a
container is still starting when first looked at (`logs | # waiting for ...`) depends on timing: for each deploy the
`logs | ` lines other than those are compared as a sorted list, with generated Pod names replaced.
"""

from __future__ import annotations

import json
import re
from collections import Counter

import pytest

from tests.compat.harness import Harness, Pair
from tests.compat.test_logs import pod_logs  # noqa: F401 (the fixture)

pytestmark = [pytest.mark.compat, pytest.mark.usefixtures("pod_logs")]

POD = re.compile(r"\b([a-z]+)-[a-z0-9]{6,10}-[a-z0-9]{5}\b")


def deployment(name: str, annotations: dict[str, str] | None = None) -> str:
    template_annotations = f"annotations: {annotations}" if annotations else ""
    return f"""
---
apiVersion: apps/v1
kind: Deployment
metadata: {{name: {name}}}
spec:
  replicas: 1
  selector: {{matchLabels: {{app: {name}}}}}
  template:
    metadata:
      labels: {{app: {name}}}
      {template_annotations}
    spec:
      initContainers: [{{name: setup, image: busybox}}]
      containers: [{{name: main, image: busybox}}, {{name: sidecar, image: busybox}}]
"""


EXISTING = deployment(
    "a", {"kapp.k14s.io/deploy-logs": "for-existing", "kapp.k14s.io/deploy-logs-container-names": "main"}
)
QUIET = deployment("b")
NEW = deployment("c", {"kapp.k14s.io/deploy-logs": ""})
EITHER = deployment("d", {"kapp.k14s.io/deploy-logs": "for-new-or-existing"})
MORE = deployment("e")
ANOTHER = deployment("f", {"kapp.k14s.io/deploy-logs": "for-new"})
LAST = deployment("g", {"kapp.k14s.io/deploy-logs": "for-new"})


def logs(both: Harness, pair: Pair, *, as_json: bool = False) -> list[str]:
    """The `logs | ` lines but `# waiting for ...`, sorted; with `as_json`, those of the document's Blocks and
    Lines, each marked with where it was."""
    seen = []
    for result in pair:
        assert result.code == 0, result.output
        text = both.normalize(POD.sub(r"\1-POD", result.stdout), result.tool)
        if as_json:
            doc = json.loads(text)
            lines = [f"{key}: {entry}" for key in ("Blocks", "Lines") for entry in doc[key] or []]
        else:
            lines = text.splitlines()
        seen.append(sorted(line for line in lines if "logs | " in line and "# waiting for" not in line))
    only_kapp, only_kapply = Counter(seen[0]) - Counter(seen[1]), Counter(seen[1]) - Counter(seen[0])
    assert seen[0] == seen[1], f"only kapp's: {sorted(only_kapp)}\nonly kapply's: {sorted(only_kapply)}"
    return seen[0]


def deploy(both: Harness, manifests: str, *flags: str) -> list[str]:
    pair = both.run_together("deploy", "-a", "app", "-n", "{ns}", "-f", "-", "-y", *flags, input=manifests)
    return logs(both, pair, as_json="--json" in flags)


def test_deploy_shows_the_logs_of_annotated_pods_alike(both: Harness):
    assert deploy(both, EXISTING + QUIET) == []  # a's Pod is new: for-existing leaves it out
    shown = deploy(both, EXISTING + QUIET + NEW + EITHER)
    every_line = [f"line {i}" for i in range(1, 13)]
    assert shown == sorted(
        [f"logs | # starting tailing '{pod} > {c}' logs" for pod, c in [("a-POD", "main")]]
        + [f"logs | # starting tailing '{pod}-POD > {c}' logs" for pod in "cd" for c in ("main", "sidecar")]
        + [f"logs | a-POD > main | {line}" for line in every_line]
        + [f"logs | {pod}-POD > {c} | {line}" for pod in "cd" for c in ("main", "sidecar") for line in every_line]
    )
    shown = deploy(both, EXISTING + QUIET + NEW + EITHER + MORE, "--logs-all")
    assert {line.split(" > ")[0] for line in shown} == {
        "logs | # starting tailing 'a-POD",
        "logs | # starting tailing 'b-POD",
        "logs | # starting tailing 'c-POD",
        "logs | # starting tailing 'd-POD",
        "logs | # starting tailing 'e-POD",
        "logs | a-POD",
        "logs | b-POD",
        "logs | c-POD",
        "logs | d-POD",
        "logs | e-POD",
    }
    shown = deploy(both, EXISTING + QUIET + NEW + EITHER + MORE + ANOTHER, "--json")
    tailed = [("a", "main"), ("d", "main"), ("d", "sidecar"), ("f", "main"), ("f", "sidecar")]  # a, d: existing
    assert shown == sorted(  # the `#` lines are Lines, the log lines Blocks
        [f"Lines: logs | # starting tailing '{pod}-POD > {c}' logs\n" for pod, c in tailed]
        + [f"Blocks: logs | {pod}-POD > {c} | {line}\n" for pod, c in tailed for line in every_line]
    )
    assert deploy(both, EXISTING + QUIET + NEW + EITHER + MORE + ANOTHER + LAST, "--logs=false") == []
