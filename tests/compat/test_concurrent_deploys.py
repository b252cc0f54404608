"""A second deploy of the same app while the first waits at `Continue? [yN]:`. kapp decides per resource: the
approved update meets a 409 Conflict, is recalculated against the object as it is now, and goes ahead if the diff
is still the approved one (the in-between deploys changed the Service and changed it back), or stops with
`approved diff no longer matches` and the recalculated diff. kapply does the same; it only refuses outright (before
applying anything) when the app no longer has the objects the plan was made with, where kapp would apply a plan that
misses some (docs/compatibility.md, Known differences). Masked values keep their numbers from the plan to the
recalculated diff, as kapp's process-wide numbering does."""

from __future__ import annotations

import os
import re
import subprocess
import threading
import time
from dataclasses import replace
from typing import IO

import pytest

from tests.compat.harness import TOOLS, Harness, Pair, Result

pytestmark = pytest.mark.compat

SERVICE = """---
apiVersion: v1
kind: Service
metadata: {name: redis-primary}
spec:
  ports: [{port: PORT, targetPort: 6379}]
  selector: {app: redis}
"""

SECRET = """---
apiVersion: v1
kind: Secret
metadata: {name: creds}
stringData: {user: admin, password: PASSWORD}
"""


def service(port: int, selector: str = "") -> str:
    text = SERVICE.replace("PORT", str(port))
    return text.replace("{app: redis}", "{app: redis, " + selector + "}") if selector else text


class Prompted:
    """`deploy` by one tool, left at its `Continue? [yN]:` until answered."""

    def __init__(self, both: Harness, tool: str, args: tuple[str, ...], manifest: str) -> None:
        self.tool = tool
        self.process = subprocess.Popen(
            [*both.command(tool), *(both.fill(a, tool) for a in args)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**os.environ, "KUBECONFIG": str(both.kubeconfig)},
        )
        self.out = {"stdout": "", "stderr": ""}
        self.readers = [
            threading.Thread(target=self._read, args=(self.process.stdout, name), daemon=True) for name in ("stdout",)
        ] + [threading.Thread(target=self._read, args=(self.process.stderr, "stderr"), daemon=True)]
        for reader in self.readers:
            reader.start()
        self.path = both.fill(manifest, tool)

    def _read(self, stream: IO[bytes], name: str) -> None:
        while chunk := stream.read1(4096):  # type: ignore[attr-defined]
            self.out[name] += chunk.decode()

    def wait_for_prompt(self, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while not self.out["stdout"].endswith("Continue? [yN]: "):
            assert self.process.poll() is None, f"{self.tool} ended first:\n{self.out}"
            assert time.monotonic() < deadline, f"{self.tool} did not ask:\n{self.out}"
            time.sleep(0.1)

    def answer(self, text: str) -> Result:
        assert self.process.stdin is not None
        self.process.stdin.write(text.encode())
        self.process.stdin.close()
        code = self.process.wait(timeout=120)
        for reader in self.readers:
            reader.join(timeout=10)
        return Result(self.tool, code, self.out["stdout"], self.out["stderr"])


def prompted_deploy(both: Harness, tmp_path, manifest: str, in_between: list[str]) -> Pair:
    """Each tool: deploy `manifest` and wait at the prompt; meanwhile deploy each of `in_between` (the same app,
    with `-y`); then answer `y`."""
    results = []
    for tool in TOOLS:
        path = tmp_path / f"{tool}.yml"
        path.write_text(both.fill(manifest, tool))
        deploy = Prompted(both, tool, ("deploy", "-a", "conf", "-n", "{ns}", "-f", str(path), "-c"), manifest)
        deploy.wait_for_prompt()
        for text in in_between:
            done = both.run_one(tool, ("deploy", "-a", "conf", "-n", "{ns}", "-f", "-", "-y"), input=text)
            assert done.code == 0, done.output
        result = deploy.answer("y\n")
        # kapp echoes the answer; kapply does not when stdin is not a terminal (docs/compatibility.md)
        results.append(replace(result, stdout=result.stdout.replace("Continue? [yN]: y\n\n", "Continue? [yN]: \n")))
    return Pair(*results)


def deployed(both: Harness, manifest: str) -> None:
    for result in both.run("deploy", "-a", "conf", "-n", "{ns}", "-f", "-", "-y", input=manifest):
        assert result.code == 0, result.output


def live_port(both: Harness, tool: str) -> int:
    from lightkube import Client
    from lightkube.resources.core_v1 import Service

    svc = Client(both.kubeconfig_path()).get(Service, "redis-primary", namespace=both.ns[tool])
    return svc.spec.ports[0].port


def test_a_deploy_goes_ahead_when_its_approved_diff_still_holds(both: Harness, tmp_path):
    deployed(both, service(6380))
    pair = prompted_deploy(both, tmp_path, service(6381), [service(6383), service(6380)])
    both.same(pair, exact=False)
    assert pair.kapply.code == 0, pair.kapply.output
    assert [live_port(both, tool) for tool in TOOLS] == [6381, 6381]


def _recalculated(result: Result) -> str:
    """The recalculated diff of a conflict, as the tool printed it."""
    assert "approved diff no longer matches" in result.stderr, result.output
    return result.stderr.split("Recalculated diff:")[-1].strip("\n")


def test_a_deploy_whose_approved_diff_no_longer_holds_stops_with_the_recalculated_diff(both: Harness, tmp_path):
    deployed(both, service(6380))
    pair = prompted_deploy(both, tmp_path, service(6381), [service(6380, "changed: label")])
    both.same(pair, exact=False, stderr=False)  # kapp breaks an error into lines at each ": <Capital>"
    assert pair.kapply.code == 1, pair.kapply.output
    assert "(reason: Conflict)" in pair.kapply.stderr
    kapp, kapply = (both.normalize(_recalculated(r), r.tool) for r in pair)
    assert kapply == kapp
    assert [live_port(both, tool) for tool in TOOLS] == [6380, 6380]


def test_masked_values_keep_their_numbers_in_the_recalculated_diff(both: Harness, tmp_path):
    """A value that changed since the plan gets a number of its own, one unchanged keeps the plan's."""
    deployed(both, service(6380) + SECRET.replace("PASSWORD", "one"))
    pair = prompted_deploy(
        both,
        tmp_path,
        service(6380) + SECRET.replace("PASSWORD", "two"),
        [service(6380) + SECRET.replace("PASSWORD", "three")],
    )
    both.same(pair, exact=False, stderr=False)
    assert pair.kapply.code == 1, pair.kapply.output
    kapp, kapply = (both.normalize(_recalculated(r), r.tool) for r in pair)
    assert kapply == kapp
    numbers = set(re.findall(r"#\d+", kapply))
    shown = set(re.findall(r"#\d+", pair.kapply.stdout))
    assert numbers - shown, "the value changed since the plan shows a number of the plan's"


def test_kapply_refuses_a_plan_that_no_longer_knows_the_app_s_objects(both: Harness, tmp_path):
    deployed(both, service(6380))
    extra = "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: extra}\ndata: {k: v}\n"
    pair = prompted_deploy(both, tmp_path, service(6381), [service(6380) + extra])
    assert pair.kapp.code == 0, pair.kapp.output  # kapp applies its plan, which knows nothing of `extra`
    assert pair.kapply.code == 1, pair.kapply.output
    assert "changed since this deploy was planned" in pair.kapply.stderr
    assert [live_port(both, tool) for tool in TOOLS] == [6381, 6380]
