"""The `--dangerous-*` flags that change where kapp looks for an app's resources:

- `--dangerous-scope-to-fallback-allowed-namespaces`: namespaced types are listed only in the app's namespaces (its
  own, those of its last change, those of the new resources), never cluster-wide;
- `--dangerous-disable-gk-scoping`: deploy lists every type, not only the kinds the app recorded;
- `--dangerous-ignore-failing-api-services`: an APIService that does not answer stops deploy, inspect and delete
  when the app uses its group version, unless this flag is given.
"""

from __future__ import annotations

import contextlib
import json
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest
from lightkube import Client
from lightkube.core.exceptions import ApiError
from lightkube.resources.apiregistration_v1 import APIService
from lightkube.resources.core_v1 import ConfigMap, Secret

from tests.compat.harness import TOOLS, Harness, Pair

pytestmark = pytest.mark.compat


def config_map(name: str, namespace: str = "") -> str:
    where = f", namespace: {namespace}" if namespace else ""
    return f"---\napiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}{where}}}\ndata: {{k: v}}\n"


def succeeded(pair: Pair) -> None:
    for result in pair:
        assert result.code == 0, result.output


def label_value(kube: Client, namespace: str, app: str) -> str:
    return str(json.loads(kube.get(ConfigMap, app, namespace=namespace).data["spec"])["labelValue"])


def test_scope_to_fallback_namespaces_sees_only_the_apps_namespaces(both: Harness, kube: Client):
    both.namespaces.new()  # {ns2}: where the app put a resource
    third = both.namespaces.new()  # where someone else labeled an object as the app's
    succeeded(
        both.run(
            "deploy", "-a", "app", "-n", "{ns}", "-f", "-", "-y", input=config_map("a1") + config_map("b1", "{ns2}")
        )
    )
    for tool in TOOLS:
        value = label_value(kube, both.ns[tool], "app")
        kube.create(
            ConfigMap.from_dict(
                {"metadata": {"name": "stray", "namespace": third[tool], "labels": {"kapp.k14s.io/app": value}}}
            )
        )
    flag = "--dangerous-scope-to-fallback-allowed-namespaces"
    for command in (
        ("inspect", "-a", "app", "-n", "{ns}", flag),
        ("inspect", "-a", "app", "-n", "{ns}"),
        ("deploy", "-a", "app", "-n", "{ns}", "-f", "-", "--diff-run", flag),
        ("delete", "-a", "app", "-n", "{ns}", "--diff-run", flag),
    ):
        pair = both.run(*command, input=config_map("a1"))
        both.same(pair, exact=False)
        assert pair.kapply.code == 0
        assert ("stray" in pair.kapply.stdout) == (flag not in command)


def test_disable_gk_scoping_finds_kinds_the_app_did_not_record(both: Harness, kube: Client):
    succeeded(both.run("deploy", "-a", "app", "-n", "{ns}", "-f", "-", "-y", input=config_map("a1")))
    for tool in TOOLS:
        namespace = both.ns[tool]
        identity = f"v1;{namespace}//Secret/extra;v1"
        labels = {"kapp.k14s.io/app": label_value(kube, namespace, "app")}
        meta = {
            "name": "extra",
            "namespace": namespace,
            "labels": labels,
            "annotations": {"kapp.k14s.io/identity": identity},
        }
        kube.create(Secret.from_dict({"metadata": meta}))
    for flags in ((), ("--dangerous-disable-gk-scoping",)):
        pair = both.run("deploy", "-a", "app", "-n", "{ns}", "-f", "-", "--diff-run", *flags, input=config_map("a1"))
        both.same(pair, exact=False)
        assert ("extra" in pair.kapply.stdout) == bool(flags)


@pytest.fixture
def failing_group_version(kube: Client) -> Iterator[str]:
    """An APIService whose service does not exist (its group version is never available), removed afterwards."""
    group = f"broken-{uuid.uuid4().hex[:6]}.kapply.dev"
    name = f"v1.{group}"
    kube.create(
        APIService.from_dict(
            {
                "metadata": {"name": name},
                "spec": {
                    "group": group,
                    "version": "v1",
                    "groupPriorityMinimum": 100,
                    "versionPriority": 100,
                    "insecureSkipTLSVerify": True,
                    "service": {"name": "kapply-no-such-service", "namespace": "default", "port": 443},
                },
            }
        )
    )
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            conditions = (kube.get(APIService, name).status or {}).conditions or []  # type: ignore[union-attr]
            if any(c.type == "Available" and c.status == "False" for c in conditions):
                break
            time.sleep(0.5)
        yield f"{group}/v1"
    finally:
        with contextlib.suppress(ApiError):
            kube.delete(APIService, name)


def test_an_unavailable_api_the_app_uses_stops_it_unless_ignored(
    both: Harness, kube: Client, failing_group_version: str
):
    succeeded(both.run("deploy", "-a", "app", "-n", "{ns}", "-f", "-", "-y", input=config_map("a1")))
    for tool in TOOLS:  # as if the app had deployed a resource of that API
        record = kube.get(ConfigMap, "app", namespace=both.ns[tool])
        spec = json.loads(record.data["spec"])
        group, version = failing_group_version.split("/")
        spec["usedGVs"].append({"Group": group, "Version": version})
        record.data["spec"] = json.dumps(spec, separators=(",", ":"))
        kube.replace(record)
    ignore = "--dangerous-ignore-failing-api-services"
    foo = f"apiVersion: {failing_group_version}\nkind: Foo\nmetadata: {{name: f}}\n"
    runs = [
        *(
            ((*command, *flags), config_map("a1"))
            for command in (
                ("deploy", "-a", "app", "-n", "{ns}", "-f", "-", "--diff-run"),
                ("inspect", "-a", "app", "-n", "{ns}"),
                ("delete", "-a", "app", "-n", "{ns}", "--diff-run"),
            )
            for flags in ((), (ignore,))
        ),
        (("deploy", "-a", "other", "-n", "{ns}", "-f", "-", "--diff-run"), config_map("b1")),
        (("deploy", "-a", "other", "-n", "{ns}", "-f", "-", "--diff-run"), foo),
    ]
    # None of these runs changes the cluster, and kapp retries its discovery of the unavailable API for 10 s in
    # each run that stops: they are made at the same time.
    with ThreadPoolExecutor(len(runs)) as pool:
        pairs = list(pool.map(lambda run: both.run_together(*run[0], input=run[1]), runs))
    *stopped_or_ignored, unused, used = pairs
    for (args, _), pair in zip(runs[:-2], stopped_or_ignored, strict=True):
        both.same(pair, exact=False)
        assert pair.kapply.code == (0 if ignore in args else 1), pair.kapply.output
    both.same(unused)  # an API no resource of the deploy uses does not matter
    assert unused.kapply.code == 0
    both.same(used)  # a new resource of that API does
    assert used.kapply.code == 1
