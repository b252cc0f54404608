"""The seam between kapply and the API server: kapply.resources.cluster is the one module that talks HTTP to the cluster
(docs/design.md). Every other module of src/kapply is read (its syntax tree, docstrings aside) for what would talk to
the API server around it:

- a path of the API server written out: a string (or an f-string's text) that starts `/api`, `/apis`, `/version` or
  `/openapi`, holds `/namespaces/`, or is a subresource's last segment (`/status`, `/token`, `/log`, ...);
- a path built from a resource type's (`rtype.path(...) + "/status"`, `f"{rtype.path(...)}/token"`);
- a request sent with a path of its own (`x.request("GET", path)`) or a stream opened on one (`x.stream_lines(...)`),
  except by a wrapper of the client forwarding its own arguments (a method of the same name: Confined, CachedCluster);
- an HTTP status read off an answer (`response.status == 404`, `.status_code`), or off a ClusterError (the client's
  error, which says how the API server answered: the names caught `except ClusterError as e`, annotated ClusterError,
  or checked `isinstance(e, ClusterError)`; or a status copied into a new one): its callers ask its predicates
  (`e.not_found`, `e.conflict`, `e.forbidden`, ...), so which number means what is said once, in kapply.errors;
- an HTTP client imported (aiohttp, httpx, requests, urllib.request, http.client).

The modules that talk HTTP to servers other than the API server (registries, App sources, remote manifests) or serve
it (the controller's /metrics, the diff browser) are named below with the reason; the rules on API paths hold for
them too. `test_the_scanner_finds_each_kind_of_violation` shows the scan failing on a planted violation of each kind.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "kapply"
CLIENT = "resources/cluster.py"
PREDICATES = "errors.py"  # ClusterError's predicates: what each of its statuses means, said once
# Modules that talk HTTP, but not to the API server: their own requests and answers' statuses are theirs.
OTHER_HTTP = {
    "http.py": "the guarded HTTP transport (addresses checked) every outbound client uses",
    "transport.py": "the cluster client's HTTP/1.1 connections: statuses as it reads them, no API path of its own",
    "oci/registry.py": "image registries (imgpkg bundles, OCI sources)",
    "oci/push.py": "image registries (the bundles `kapply package release` pushes)",
    "controller/fetch.py": "App sources fetched over HTTP",
    "resources/remote.py": "manifests at http(s) URLs (`-f https://...`)",
    "controller/health.py": "serves /metrics, /healthz and /readyz",
    "ui/browser_server.py": "serves the diff browser",
    "dashboard/server.py": "serves `kapply dashboard` (the cluster is read through kapply.api)",
    "resources/confined.py": "a wrapper of the Cluster client: refuses to open connections of its own",
}
API_PATH = re.compile(
    r"^/(api|apis|version|openapi)(/|$|\?)|/namespaces/"
    r"|^/(status|token|log|scale|eviction|binding|exec|attach|portforward|proxy|finalize|approval|ephemeralcontainers"
    r"|resize)$"
)
# A module whose text holds none of these breaks no rule (a path's text starts at a quote or after an f-string's `}`):
# the others are not parsed.
CANDIDATE = re.compile(
    r"""["'}]/|/namespaces/|path\(|request\(|stream_lines|\.status|aiohttp|httpx|requests|urllib|http\.client"""
    r"|from http import"
)
HTTP_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"})
HTTP_CLIENTS = frozenset({"aiohttp", "httpx", "requests", "urllib.request", "http.client", "urllib3"})


def _docstrings(tree: ast.AST) -> set[int]:
    """The ids of the docstring nodes (documentation may name paths)."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            first = node.body[0] if node.body else None
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def _names_cluster_error(node: ast.expr | None) -> bool:
    return node is not None and any(
        isinstance(n, ast.Name | ast.Attribute) and (getattr(n, "id", None) or getattr(n, "attr", "")) == "ClusterError"
        for n in ast.walk(node)
    )


def _cluster_errors(function: ast.AST) -> set[str]:
    """The names that hold a ClusterError within a function (or a module's top level)."""
    names = set()
    for node in ast.walk(function):
        if isinstance(node, ast.ExceptHandler) and node.name and _names_cluster_error(node.type):
            names.add(node.name)
        elif isinstance(node, ast.arg) and _names_cluster_error(node.annotation):
            names.add(node.arg)
        elif (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and _names_cluster_error(node.annotation)
        ):
            names.add(node.target.id)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "isinstance"
            and len(node.args) == 2
            and isinstance(node.args[0], ast.Name)
            and _names_cluster_error(node.args[1])
        ):
            names.add(node.args[0].id)
    return names


def _is_code(node: ast.expr) -> bool:
    """An integer, or a tuple, list or set of them: an HTTP status code or codes."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, int) and not isinstance(node.value, bool) and 100 <= node.value <= 599
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return bool(node.elts) and all(_is_code(e) for e in node.elts)
    return False


class _Scan(ast.NodeVisitor):
    def __init__(self, where: str, other_http: bool, docstrings: set[int]) -> None:
        self.where = where
        self.other_http = other_http
        self.docstrings = docstrings
        self.found: list[str] = []
        self.functions: list[str] = []
        self.errors: list[set[str]] = [set()]
        self.building = 0  # inside a `+` or an f-string

    def _say(self, node: ast.AST, what: str) -> None:
        self.found.append(f"{self.where}:{getattr(node, 'lineno', 0)}: {what}")

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self.functions.append(node.name)
        # a function's names (its nested functions' included, which keep them: one walk per outermost function)
        self.errors.append(self.errors[-1] if len(self.functions) > 1 else _cluster_errors(node))
        self.generic_visit(node)
        self.errors.pop()
        self.functions.pop()

    visit_FunctionDef = _function
    visit_AsyncFunctionDef = _function

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, str) and id(node) not in self.docstrings and API_PATH.search(node.value):
            self._say(node, f"an API server path written out: {node.value!r}")

    def _building(self, node: ast.AST) -> None:
        self.building += 1
        self.generic_visit(node)
        self.building -= 1

    def visit_BinOp(self, node: ast.BinOp) -> None:
        if isinstance(node.op, ast.Add):
            self._building(node)
        else:
            self.generic_visit(node)

    visit_JoinedStr = _building

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else ""
        first = node.args[0] if node.args else None
        forwarding = bool(self.functions) and self.functions[-1] == name
        if name == "path" and self.building:
            self._say(node, "a path built from a resource type's")
        elif name == "request" and isinstance(first, ast.Constant) and first.value in HTTP_METHODS:
            if not self.other_http:
                self._say(node, f"a request sent with a path of its own ({first.value})")
        elif name == "stream_lines" and not forwarding and not self.other_http:
            self._say(node, "a stream opened on a path of its own")
        if _names_cluster_error(func):
            for given in [*node.args, *(k.value for k in node.keywords)]:
                if isinstance(given, ast.Attribute) and given.attr == "status" and not self._of_cluster_error(given):
                    self._say(node, f"a status copied into a ClusterError ({ast.unparse(given)})")
        self.generic_visit(node)

    def _of_cluster_error(self, node: ast.Attribute) -> bool:
        return isinstance(node.value, ast.Name) and node.value.id in self.errors[-1]

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if node.attr == "status_code" and not self.other_http:
            self._say(node, "an HTTP status read (status_code)")
        elif node.attr == "status" and self._of_cluster_error(node):
            self._say(node, f"a ClusterError's status read ({ast.unparse(node)}): ask its predicates")
        self.generic_visit(node)

    def visit_Compare(self, node: ast.Compare) -> None:
        sides = [node.left, *node.comparators]
        for side in sides:
            if not (isinstance(side, ast.Attribute) and side.attr == "status"):
                continue
            if not any(_is_code(other) for other in sides if other is not side):
                continue
            if not self._of_cluster_error(side) and not self.other_http:  # a ClusterError's: visit_Attribute says so
                self._say(node, f"an HTTP status read off an answer ({ast.unparse(node)})")
        self.generic_visit(node)

    def _imported(self, node: ast.AST, module: str) -> None:
        if (
            module in HTTP_CLIENTS or module.split(".")[0] in HTTP_CLIENTS - {"urllib", "http"}
        ) and not self.other_http:
            self._say(node, f"an HTTP client imported ({module})")

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._imported(node, alias.name)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = node.module or ""
        self._imported(node, module)
        if module in ("urllib", "http"):
            for alias in node.names:
                self._imported(node, f"{module}.{alias.name}")
        if module == "kapply.http" and any(alias.name == "aiohttp" for alias in node.names):
            self._imported(node, "aiohttp")


def scan(source: str, where: str) -> list[str]:
    """What of `source` (the module at `where`, relative to src/kapply) talks to the API server around the client."""
    tree = ast.parse(source)
    visitor = _Scan(where, where in OTHER_HTTP, _docstrings(tree))
    visitor.visit(tree)
    return visitor.found


def test_nothing_but_the_client_talks_to_the_api_server() -> None:
    modules = sorted(p for p in SRC.rglob("*.py") if "__pycache__" not in p.parts)
    assert len(modules) > 100
    found = [
        problem
        for path in modules
        if (where := path.relative_to(SRC).as_posix()) not in (CLIENT, PREDICATES)
        and CANDIDATE.search(text := path.read_text())
        for problem in scan(text, where)
    ]
    assert found == [], "only kapply.resources.cluster talks to the API server:\n" + "\n".join(found)


def test_the_allowances_name_modules_that_exist() -> None:
    assert all((SRC / where).is_file() for where in [CLIENT, PREDICATES, *OTHER_HTTP])


PLANTED = """
import httpx
from kapply.errors import ClusterError
from kapply.http import aiohttp


async def status_write(cluster, rtype, obj):
    await cluster.request("PUT", rtype.path("ns", "web") + "/status", body=obj)


async def token(cluster, rtype):
    return await cluster.request("POST", f"{rtype.path('ns', 'sa')}/token")


async def version(cluster):
    return await cluster.document("/version")


async def logs(cluster, path):
    async with cluster.stream_lines(path, {}, read_timeout=None) as lines:
        return lines


async def answer(session, url):
    response = await session.get(url)
    if response.status == 404:
        return None
    return response.status_code


async def allowed(cluster, rtype):
    try:
        return await cluster.get(rtype, "ns", "web")
    except ClusterError as e:
        if e.status in (403, 404):
            return None
        raise


def code(error: ClusterError, refused):
    if isinstance(refused, Exception):
        raise ClusterError(str(refused), status=refused.status)
    return error.status


def conflict(error):
    return isinstance(error, ClusterError) and error.status == 409


async def allowed_by_name(cluster, rtype):
    try:
        return await cluster.get(rtype, "ns", "web")
    except ClusterError as e:
        if e.forbidden or e.not_found:
            return None
        raise
"""


def test_the_scanner_finds_each_kind_of_violation() -> None:
    assert all(CANDIDATE.search(function) for function in PLANTED.split("\n\n\n")[1:-1])
    found = scan(PLANTED, "controller/planted.py")
    said = [problem.split(": ", 1)[1] for problem in found]
    assert said == [
        "an HTTP client imported (httpx)",
        "an HTTP client imported (aiohttp)",
        "a request sent with a path of its own (PUT)",
        "a path built from a resource type's",
        "an API server path written out: '/status'",
        "a request sent with a path of its own (POST)",
        "a path built from a resource type's",
        "an API server path written out: '/token'",
        "an API server path written out: '/version'",
        "a stream opened on a path of its own",
        "an HTTP status read off an answer (response.status == 404)",
        "an HTTP status read (status_code)",
        "a ClusterError's status read (e.status): ask its predicates",
        "a status copied into a ClusterError (refused.status)",
        "a ClusterError's status read (error.status): ask its predicates",
        "a ClusterError's status read (error.status): ask its predicates",
    ]  # and nothing of `allowed_by_name`: a ClusterError's predicates say what the client's status means
    assert scan(PLANTED, "oci/registry.py") == [
        f"oci/registry.py:{line}: {what}"
        for line, what in [
            (8, "a path built from a resource type's"),
            (8, "an API server path written out: '/status'"),
            (12, "a path built from a resource type's"),
            (12, "an API server path written out: '/token'"),
            (16, "an API server path written out: '/version'"),
            (35, "a ClusterError's status read (e.status): ask its predicates"),
            (42, "a status copied into a ClusterError (refused.status)"),
            (43, "a ClusterError's status read (error.status): ask its predicates"),
            (47, "a ClusterError's status read (error.status): ask its predicates"),
        ]
    ]  # a module talking to other servers still writes no API path, and reads no ClusterError's status
