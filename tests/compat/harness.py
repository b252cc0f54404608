"""The differential harness: the same scenario run with the real kapp and with kapply, on the local control plane, in
two namespaces whose names have the same length (so tables align alike), and what a user and a script see compared.

Normalising leaves only what must match: namespaces become `NS` (`NS2` for a second pair), the program name in
`<program>: Error:` becomes `PROG`, times of day, ages, app label values, association hashes, generated name suffixes,
uids, resource versions and timestamps become placeholders. Tables are compared with their padding when no age
changes a column's width, and cell by cell otherwise.
"""

from __future__ import annotations

import difflib
import json
import os
import re
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from lightkube import Client
from lightkube.core.exceptions import ApiError
from lightkube.resources.apiextensions_v1 import CustomResourceDefinition
from lightkube.resources.core_v1 import ConfigMap, Namespace

TOOLS = ("kapp", "kapply")
# `deploy` of the app `app` in the test's namespace with the manifest from stdin (the flags that follow say the rest)
DEPLOY_STDIN = ("deploy", "-a", "app", "-n", "{ns}", "-f", "-")


ANY_FIELDS = {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}  # a version's schema


def namespaced_crd(group: str, kind: str, *older: dict[str, Any]) -> dict[str, Any]:
    """A namespaced CustomResourceDefinition of `kind` (plural: `<kind in lower case>s`) whose stored version `v1`
    keeps any field; the `older` versions are listed before it."""
    plural = kind.lower() + "s"
    names = {"plural": plural, "singular": kind.lower(), "kind": kind}
    v1 = {"name": "v1", "served": True, "storage": True, "schema": ANY_FIELDS}
    spec = {"group": group, "scope": "Namespaced", "names": names, "versions": [*older, v1]}
    return {"metadata": {"name": f"{plural}.{group}"}, "spec": spec}


@contextmanager
def established_crd(kube: Client, crd: dict[str, Any]) -> Iterator[None]:
    """The CustomResourceDefinition `crd`, created and established (within 30 s), deleted afterwards."""
    name = crd["metadata"]["name"]
    kube.create(CustomResourceDefinition.from_dict(crd))
    deadline = time.monotonic() + 30
    while not any(
        c.type == "Established" and c.status == "True"
        for c in (kube.get(CustomResourceDefinition, name).status.conditions or [])
    ):
        assert time.monotonic() < deadline, "the CRD did not become established"
        time.sleep(0.2)
    try:
        yield
    finally:
        kube.delete(CustomResourceDefinition, name)


@dataclass(frozen=True)
class Result:
    tool: str
    code: int
    stdout: str
    stderr: str

    @property
    def output(self) -> str:
        return self.stdout + self.stderr


@dataclass(frozen=True)
class Pair:
    kapp: Result
    kapply: Result

    def __iter__(self):  # noqa: ANN204
        return iter((self.kapp, self.kapply))


_REPLACEMENTS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\b(kapp|kapply): Error:"), "PROG: Error:"),
    (re.compile(r"\(hint: found app '([^']*)' in other namespaces: [^)]*\)"), r"(hint: found app '\1' elsewhere)"),
    (re.compile(r"\b\d{1,2}:\d\d:\d\d(AM|PM)"), "TIME"),
    (re.compile(r"\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z"), "TIMESTAMP"),
    (re.compile(r"kapp\.k14s\.io/app(=|: \"?|-change-app-label(=|: \"?))\d{16,20}"), r"kapp.k14s.io/app\1LABEL"),
    (re.compile(r"\b\d{18,20}\b"), "LABEL"),
    (re.compile(r"v1\.[0-9a-f]{32}"), "v1.ASSOC"),
    (re.compile(r"-change-[a-z0-9]{5}\b"), "-change-RAND"),
    (re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b"), "UID"),
    (re.compile(r"(resourceVersion: )\"\d+\""), r'\1"RV"'),
    (re.compile(r"\b[a-z0-9-]+-[a-f0-9]{8,10}-[a-z0-9]{5}\b"), "POD"),
)
_AGE_VALUE = re.compile(r"\d+[smhd]|\d+m\d+s")
_AGE = re.compile(r"(?<=\s)(\d+[smhd]|\d+m\d+s)(?=\s|$)")


class Namespaces:
    """Pairs of namespaces of equal-length names, one for each tool, made for a test and deleted after it."""

    def __init__(self, kube: Client, test_name: str) -> None:
        self.kube = kube
        self.slug = re.sub(r"[^a-z0-9]+", "-", test_name.lower())[:30].strip("-")
        self.made: list[str] = []
        self.pairs: list[dict[str, str]] = []

    def new(self) -> dict[str, str]:
        suffix = uuid.uuid4().hex[:5]
        pair = {tool: f"c-{self.slug}-{'kapp' if tool == 'kapp' else 'kply'}-{suffix}" for tool in TOOLS}
        for name in pair.values():
            self.kube.create(Namespace.from_dict({"metadata": {"name": name}}))
            self.made.append(name)
        self.pairs.append(pair)
        return pair

    def cleanup(self) -> None:
        for name in self.made:
            try:
                self.kube.delete(Namespace, name)
            except ApiError as e:
                if e.status.code != 404:
                    raise


class Harness:
    def __init__(self, kapp: Path, kubeconfig: Path, namespaces: Namespaces) -> None:
        self.kapp = kapp
        self.kubeconfig = kubeconfig
        self.namespaces = namespaces
        self.ns = namespaces.new()  # {"kapp": ..., "kapply": ...}

    def command(self, tool: str) -> list[str]:
        return [str(self.kapp)] if tool == "kapp" else [sys.executable, "-m", "kapply"]

    def fill(self, text: str, tool: str) -> str:
        """`{ns}` (and `{ns2}`, ... for further pairs) become the tool's namespace."""
        for index, pair in enumerate(self.namespaces.pairs):
            text = text.replace("{ns}" if index == 0 else f"{{ns{index + 1}}}", pair[tool])
        return text

    def run_one(
        self,
        tool: str,
        args: Sequence[str],
        *,
        input: str | None = None,
        env: dict[str, str] | None = None,
        timeout: float = 120,
    ) -> Result:
        full_env = {**os.environ, "KUBECONFIG": str(self.kubeconfig), **(env or {})}
        full_env.pop("KAPP_NAMESPACE", None)
        argv = [*self.command(tool), *(self.fill(a, tool) for a in args)]
        done = subprocess.run(
            argv,
            input=self.fill(input, tool) if input is not None else None,
            env=full_env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        return Result(tool, done.returncode, done.stdout, done.stderr)

    def run(self, *args: str, input: str | None = None, env: dict[str, str] | None = None) -> Pair:
        """The command with each tool, kapp first."""
        return Pair(*(self.run_one(tool, args, input=input, env=env) for tool in TOOLS))

    def run_together(self, *args: str, input: str | None = None, env: dict[str, str] | None = None) -> Pair:
        """`run`, the two tools at the same time: for a command that waits on the cluster (a rollout, kapp's retries
        of an unavailable API) in each tool's own namespaces, so the test waits once rather than twice."""
        with ThreadPoolExecutor(len(TOOLS)) as pool:
            kapp, kapply = pool.map(lambda tool: self.run_one(tool, args, input=input, env=env), TOOLS)
        return Pair(kapp, kapply)

    def normalize(self, text: str, tool: str) -> str:
        for index, pair in enumerate(self.namespaces.pairs):
            text = text.replace(pair[tool], "NS" if index == 0 else f"NS{index + 1}")
        for pattern, replacement in _REPLACEMENTS:
            text = pattern.sub(replacement, text)
        return text

    def same(self, pair: Pair, *, stdout: bool = True, stderr: bool = True, exact: bool = True) -> None:
        """The two runs look the same to a user: exit status, and stdout and stderr once normalised. With `exact`,
        byte for byte (tables padded alike); otherwise ages become `AGE` and runs of spaces are collapsed."""
        kapp, kapply = (self._seen(r, exact) for r in pair)
        seen_kapp = f"exit {pair.kapp.code}\n{kapp[0] if stdout else ''}\n== stderr\n{kapp[1] if stderr else ''}"
        seen_kapply = (
            f"exit {pair.kapply.code}\n{kapply[0] if stdout else ''}\n== stderr\n{kapply[1] if stderr else ''}"
        )
        if seen_kapp != seen_kapply:
            diff = difflib.unified_diff(seen_kapp.split("\n"), seen_kapply.split("\n"), "kapp", "kapply", lineterm="")
            pytest.fail("kapply's output differs from kapp's (normalised):\n" + "\n".join(diff), pytrace=False)

    def _seen(self, result: Result, exact: bool) -> tuple[str, str]:
        out, err = (_sort_concurrent(self.normalize(t, result.tool)) for t in (result.stdout, result.stderr))
        if not exact:
            out, err = (re.sub(r" {2,}", "  ", _AGE.sub("AGE", t)) for t in (out, err))
        return out, err

    def same_json(self, pair: Pair, *, ignore: Callable[[dict[str, Any]], dict[str, Any]] = lambda d: d) -> None:
        """Both printed the same `--json` document (normalised), and exited alike."""
        docs = [json.dumps(ignore(self._json(r)), indent=1, sort_keys=True) for r in pair]
        seen = [f"exit {r.code}\n{doc}" for r, doc in zip(pair, docs, strict=True)]
        if seen[0] != seen[1]:
            diff = difflib.unified_diff(seen[0].split("\n"), seen[1].split("\n"), "kapp", "kapply", lineterm="")
            pytest.fail("kapply's --json output differs from kapp's (normalised):\n" + "\n".join(diff), pytrace=False)

    def _json(self, result: Result) -> dict[str, Any]:
        try:
            doc = json.loads(result.stdout)
        except json.JSONDecodeError:
            pytest.fail(f"{result.tool} did not print JSON:\n{result.output}")
        doc = _normalize_value(doc, lambda s: _AGE.sub("AGE", self.normalize(s, result.tool)))
        if isinstance(doc, dict) and isinstance(doc.get("Lines"), list):
            doc["Lines"] = _sort_concurrent("\x00".join(doc["Lines"]).replace("\n\x00", "\x00"), "\x00").split("\x00")
        return doc

    def objects(self, tool: str, kinds: Iterable[Any] = (ConfigMap,), pair: int = 0) -> dict[str, Any]:
        """Every object of the kinds in the tool's namespace, normalised, by `Kind/name`."""
        kube = Client(self.kubeconfig_path())
        namespace = self.namespaces.pairs[pair][tool]
        out = {}
        for kind in kinds:
            found = [
                obj.to_dict() if hasattr(obj, "to_dict") else dict(obj) for obj in kube.list(kind, namespace=namespace)
            ]
            found.sort(key=lambda raw: int(raw["metadata"]["resourceVersion"]))  # creation order
            changes = 0
            for raw in found:
                meta = raw.get("metadata", {})
                if meta.get("name") == "kube-root-ca.crt":
                    continue
                if raw.get("type") == "kapply.dev/app-change-applied":
                    continue  # what each kapply change applied, kept for a rollback (compatibility.md, "Beyond kapp")
                if "-change-" in meta.get("name", "") and "data" in raw:
                    changes += 1
                    meta["name"] = f"{meta['name'].rsplit('-change-', 1)[0]}-change-{changes}"
                    raw["data"].pop("diff", None)  # kapply keeps each change's diff (compatibility.md, "Beyond kapp")
                for key in ("uid", "resourceVersion", "creationTimestamp", "managedFields", "generation"):
                    meta.pop(key, None)
                raw.pop("status", None)
                name = self.normalize(meta.get("name", ""), tool)
                out[f"{raw.get('kind', kind.__name__)}/{name}"] = _normalize_value(
                    raw, lambda s, t=tool: self.normalize(s, t)
                )
        return out

    def kubeconfig_path(self) -> Any:
        from lightkube import KubeConfig

        return KubeConfig.from_file(self.kubeconfig)

    def same_objects(self, kinds: Iterable[Any] = (ConfigMap,)) -> None:
        """What each tool left on the cluster is the same, field by field (app records and changes included)."""
        kinds = list(kinds)
        seen = [json.dumps(self.objects(tool, kinds), indent=1, sort_keys=True) for tool in TOOLS]
        if seen[0] != seen[1]:
            diff = difflib.unified_diff(seen[0].split("\n"), seen[1].split("\n"), "kapp", "kapply", lineterm="")
            pytest.fail("the objects kapply left differ from kapp's (normalised):\n" + "\n".join(diff), pytrace=False)


def _sort_timed_out(lines: list[str]) -> list[str]:
    """The `  - <resource>` items after kapp's `Timed out waiting after <d> for resources:`, sorted in place (blank
    lines where they were): kapp lists the changes still waiting in the order their waits ended, which varies."""
    out = list(lines)
    for start, line in enumerate(lines):
        if "Timed out waiting after" not in line or "for resources:" not in line:
            continue
        end = start + 1
        while end < len(lines) and (not lines[end].strip() or lines[end].startswith("  - ")):
            end += 1
        places = [i for i in range(start + 1, end) if lines[i].startswith("  - ")]
        for i, item in zip(places, sorted(lines[i] for i in places), strict=True):
            out[i] = item
    return out


def _sort_concurrent(text: str, separator: str = "\n") -> str:
    """Progress lines between two `----` section lines, sorted: changes apply and converge concurrently, so their
    order varies from run to run with kapp too; so do the resources a timed-out wait names."""
    lines = _sort_timed_out(text.split(separator))
    out: list[str] = []
    run: list[str] = []
    for line in lines:
        if line.startswith("TIME: ") and "----" not in line and not line.startswith("TIME:  "):
            run.append(line)
            continue
        out += sorted(run)
        run = []
        out.append(line)
    out += sorted(run)
    return separator.join(out)


def _normalize_value(value: Any, text: Callable[[str], str]) -> Any:
    if isinstance(value, str) and _AGE_VALUE.fullmatch(value):
        return "AGE"
    if isinstance(value, str):
        try:
            inner = json.loads(value)
        except ValueError:
            return text(value)
        if isinstance(inner, dict | list):  # JSON inside a string (an app record's spec): compare as data
            return {"json": _normalize_value(inner, text)}
        return text(value)
    if isinstance(value, dict):
        return {text(k): _normalize_value(v, text) for k, v in value.items()}
    if isinstance(value, list):
        return [_normalize_value(v, text) for v in value]
    return value
