"""`template[].cue` and `template[].sops` through the controller process (issue 32), with the real cue and sops
(hack/tools.py builds them, as it builds age-keygen, which makes the tests' age keys):

- cue exports a package of the fetched files with values from a Secret and a file of the fetched content, placed by
  `inputExpression`, the object `outputExpression` names deployed;
- sops decrypts files of the fetched content encrypted for an age key (a Secret and a ConfigMap) with the key of the
  App's Secret, ytt then reads them and both are deployed; the key, and the values it opens, appear in no App's
  status, no Event and no line of the controller's log;
- hostile Apps end ReconcileFailed naming what was refused, and deploy nothing: cue and sops paths climbing out with
  `../`, symlinks to a canary the test made (in a tarball served over http: fetch refuses them before cue or sops
  could read them), options written as paths and expressions (`--outfile=...`), a cue package that allocates without
  end (the sandbox's memory limit, named; a cue package that computes without end ends on the CPU limit as every
  tool does, tests/e2e/test_controller_sandbox.py, at the cost of 8 s of CPU: cue's Go runtime ignores SIGXCPU and
  runs until the SIGKILL 5 s later), and a sops file naming a Vault
  at a listener of the test's own on loopback with a Secret whose key does not open it: while the sandbox runs its
  tools without network (kapply_sandbox_protection{protection="tool-network"}), the listener hears nothing.

One controller for the module (`-n` its own namespace, --sandbox-memory-mib=256 --sandbox-cpu=3s, the hostile Apps
reconciled all at once), one namespace, deleted at the end with everything in it.
"""

from __future__ import annotations

import base64
import io
import subprocess
import tarfile
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml
from lightkube import Client
from lightkube.resources.core_v1 import Event, Secret

from tests.e2e.controller_harness import (
    App,
    Controllers,
    config_map,
    config_map_data,
    create_all,
    endpoint,
    inline_app,
    module_controller,
    samples,
    status,
    tool_env,
)
from tests.e2e.harness import Cluster, eventually, external_tool
from tests.e2e.test_controller_hostile import assert_refused, climb, outcomes

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180)]

MEMORY_MIB = 256
CPU = 3


# --- keys and encrypted files -----------------------------------------------------------------------------------------


def run(*command: str | Path, stdin: str | None = None, cwd: Path | None = None) -> str:
    result = subprocess.run(
        [str(c) for c in command], capture_output=True, text=True, input=stdin, cwd=cwd, timeout=60, check=False
    )
    assert result.returncode == 0, f"{command}:\n{result.stderr}"
    return result.stdout


@dataclass(frozen=True)
class AgeKey:
    private: str  # age-keygen's file: comments, then AGE-SECRET-KEY-1...
    recipient: str  # age1...

    @property
    def secret_key(self) -> str:
        return next(line for line in self.private.splitlines() if line.startswith("AGE-SECRET-KEY-"))


def age_key() -> AgeKey:
    private = run(external_tool("age-keygen", "KAPPLY_AGE_KEYGEN"))
    return AgeKey(private, private.split("# public key: ")[1].split()[0])


def encrypted(key: AgeKey, plain: str, work: Path) -> str:
    """`plain` (YAML) encrypted by the real sops for `key`'s recipient."""
    work.mkdir(parents=True, exist_ok=True)
    source = work / f"{uuid.uuid4().hex[:8]}.yaml"
    source.write_text(plain)
    return run(external_tool("sops", "KAPPLY_SOPS"), "--encrypt", "--age", key.recipient, source, cwd=work)


def with_vault(text: str, address: str) -> str:
    """An encrypted file whose sops metadata also names a Vault transit key at `address` (sops tries it when no age
    key opens the file; the metadata is outside the file's MAC)."""
    document = yaml.safe_load(text)
    vault = {"vault_address": address, "engine_path": "sops", "key_name": "k", "created_at": "2026-01-01T00:00:00Z"}
    document["sops"]["hc_vault"] = [{**vault, "enc": "vault:v1:AAAA"}]
    return yaml.safe_dump(document, sort_keys=False)


def secret(name: str, namespace: str, **data: str) -> str:
    encoded = {k: base64.b64encode(v.encode()).decode() for k, v in data.items()}
    return yaml.safe_dump(
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": namespace}, "data": encoded}
    )


# --- an http server of the test's own ---------------------------------------------------------------------------------


@dataclass
class Web:
    base: str = ""
    files: dict[str, bytes] = field(default_factory=dict)
    heard: list[str] = field(default_factory=list)  # every request, as "METHOD path"


@pytest.fixture(scope="module")
def web() -> Iterator[Web]:
    """Serves `files` on 127.0.0.1 (and answers 500 to anything else, as a Vault that refuses would)."""
    served = Web()

    class Handler(BaseHTTPRequestHandler):
        def answer(self) -> None:
            served.heard.append(f"{self.command} {self.path}")
            body = served.files.get(self.path)
            self.send_response(200 if body is not None else 500)
            self.send_header("Content-Length", str(len(body or b"")))
            self.end_headers()
            self.wfile.write(body or b"")

        do_GET = do_PUT = do_POST = answer  # noqa: N815 (http.server's names)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    served.base = f"http://127.0.0.1:{server.server_port}"
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield served
    finally:
        server.shutdown()
        server.server_close()


def tarball(files: dict[str, str], links: dict[str, str]) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as tar:
        for name, content in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(content.encode())
            tar.addfile(info, io.BytesIO(content.encode()))
        for name, target in links.items():
            info = tarfile.TarInfo(name)
            info.type, info.linkname = tarfile.SYMTYPE, target
            tar.addfile(info)
    return out.getvalue()


# --- the module's namespace and controller ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def controller(
    cluster: Cluster, kube: Client, module_namespace: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Controllers]:
    """One controller for the module's namespace, with ytt, cue and sops, under small sandbox limits."""
    logs = tmp_path_factory.mktemp("logs")
    with module_controller(
        cluster.kubeconfig,
        kube,
        module_namespace,
        logs,
        f"--sandbox-memory-mib={MEMORY_MIB}",
        f"--sandbox-cpu={CPU}s",
        "--namespace-concurrency=10",  # the hostile Apps all at once (half of --concurrency by default)
        env=tool_env("ytt", "cue", "sops"),
    ) as running:
        yield running


def app(name: str, namespace: str, files: dict[str, str], template: list[dict[str, Any]], **spec: Any) -> Any:
    return App(**inline_app(name, namespace, files, template=template, syncPeriod="30s", **spec))


def readable(kube: Client, namespace: str, controller: Controllers) -> dict[str, str]:
    """What an App's author or a log reader sees: every App (status included), Event and the controller's log."""
    texts = {f"App {a.metadata.name}": yaml.safe_dump(a.to_dict()) for a in kube.list(App, namespace=namespace)}
    texts |= {f"Event {e.metadata.name}": yaml.safe_dump(e.to_dict()) for e in kube.list(Event, namespace=namespace)}
    texts |= {f"log {n}": log.read_text() for n, log in controller.logs_by_name.items() if log.exists()}
    return texts


def failed(kube: Client, namespace: str, name: str) -> dict[str, Any]:
    """The App's status once a reconcile of it ended ReconcileFailed (polled: a failed App is retried within seconds,
    and its status says `Reconciling` again while it runs)."""

    def ended() -> dict[str, Any] | None:
        reported = status(kube, namespace, name)
        return reported if (reported.get("conditions") or [{}])[0].get("type") == "ReconcileFailed" else None

    reported = eventually(ended, timeout=90, what=f"App {name} to fail")
    assert isinstance(reported, dict)
    return reported


# --- cue --------------------------------------------------------------------------------------------------------------

CUE_PACKAGE = """package greeting

values: {
	greeting: string
	owner:    string | *"nobody"
}

configMap: {
	apiVersion: "v1"
	kind:       "ConfigMap"
	metadata: name: "cue-greeting"
	data: {greeting: values.greeting, owner: values.owner}
}
"""


def test_cue_exports_the_fetched_package_with_values_and_the_object_it_names_is_deployed(
    controller: Controllers, kube: Client, module_namespace: str
):
    create_all(kube, secret("cue-values", module_namespace, **{"greeting.yaml": "greeting: hi from a Secret\n"}))
    files = {"config/greeting.cue": CUE_PACKAGE, "values/owner.yaml": "owner: team-a\n"}
    cue = {
        "paths": ["config"],
        "inputExpression": "values:",
        "outputExpression": "configMap",
        "valuesFrom": [{"secretRef": {"name": "cue-values"}}, {"path": "values/owner.yaml"}],
    }
    kube.create(app("cue", module_namespace, files, [{"cue": cue}]))

    reported = outcomes(kube, module_namespace, "cue", timeout=60)["cue"]
    assert reported["conditions"][0]["type"] == "ReconcileSucceeded", reported
    assert config_map_data(kube, module_namespace, "cue-greeting") == {
        "greeting": "hi from a Secret",
        "owner": "team-a",
    }


# --- sops -------------------------------------------------------------------------------------------------------------


def test_sops_decrypts_age_encrypted_files_with_the_apps_secret_and_the_key_is_shown_nowhere(
    controller: Controllers, kube: Client, module_namespace: str, tmp_path: Path
):
    key = age_key()
    password = f"pw-{uuid.uuid4().hex}"
    plain_secret = yaml.safe_dump(
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "db"}, "stringData": {"password": password}}
    )
    files = {
        "secrets/db.sops.yaml": encrypted(key, plain_secret, tmp_path),
        "settings.sops.yml": encrypted(key, config_map("settings", mode=f"mode-{password}"), tmp_path),
        "plain.yml": config_map("plain", a="b"),
    }
    create_all(kube, secret("age-key", module_namespace, **{"key.txt": key.private}))
    template = [{"sops": {"age": {"privateKeysSecretRef": {"name": "age-key"}}}}, {"ytt": {}}]
    kube.create(app("sops", module_namespace, files, template))

    reported = outcomes(kube, module_namespace, "sops", timeout=60)["sops"]
    assert reported["conditions"][0]["type"] == "ReconcileSucceeded", reported
    deployed = kube.get(Secret, "db", namespace=module_namespace)
    assert base64.b64decode((deployed.data or {})["password"]).decode() == password
    assert config_map_data(kube, module_namespace, "settings") == {"mode": f"mode-{password}"}
    assert config_map_data(kube, module_namespace, "plain") == {"a": "b"}
    leaks = [
        where
        for where, text in readable(kube, module_namespace, controller).items()
        if key.secret_key in text or password in text
    ]
    assert not leaks, f"the key or what it opens is in {leaks}"


# --- hostile ----------------------------------------------------------------------------------------------------------

CUE_MEMORY_BOMB = 'package bomb\nimport "list"\na: [for x in list.Range(0, 100000000, 1) {x}]\n'
MEMORY = f"ran out of memory (the sandbox's limit is {MEMORY_MIB << 20} bytes per process, --sandbox-memory-mib)"


def test_hostile_cue_and_sops_apps_are_refused_naming_what_and_read_or_write_nothing_outside(
    controller: Controllers, kube: Client, module_namespace: str, tmp_path: Path, web: Web
):
    canary = tmp_path / "canary"
    canary.mkdir()
    token = f"CANARY-{uuid.uuid4()}"
    (canary / "token.sops.yaml").write_text(f"stolen: {token}\n")
    (canary / "token.cue").write_text(f'package canary\nstolen: "{token}"\n')
    key, other = age_key(), age_key()
    create_all(kube, secret("other-key", module_namespace, **{"key.txt": other.private}))
    age = {"age": {"privateKeysSecretRef": {"name": "other-key"}}}
    # symlinks to the canary, absolute and climbing out: the archive is refused before cue or sops could follow them
    web.files["/absolute.tgz"] = tarball({"ok.yml": "a: 1\n"}, {"stolen.sops.yaml": str(canary / "token.sops.yaml")})
    web.files["/climbing.tgz"] = tarball({"ok.cue": "package ok\na: 1\n"}, {"canary": climb(canary)})
    absolute, climbing = ([{"http": {"url": f"{web.base}/{name}.tgz"}}] for name in ("absolute", "climbing"))
    vault_file = with_vault(encrypted(key, config_map("vault", a="b"), tmp_path), f"{web.base}/vault")
    pwned = canary / "pwned.yaml"
    attacks: dict[str, tuple[Any, str]] = {
        "cue-climb": (
            app("cue-climb", module_namespace, {"a.cue": "a: 1\n"}, [{"cue": {"paths": ["../../../canary"]}}]),
            "Templating dir: Invalid path: ../../../canary",
        ),
        "sops-climb": (
            app("sops-climb", module_namespace, {"a.yml": "a: 1\n"}, [{"sops": {**age, "paths": ["../x.sops.yaml"]}}]),
            "Decrypting dir: Invalid path: ../x.sops.yaml",
        ),
        "cue-link": (
            App(
                **inline_app(
                    "cue-link", module_namespace, {}, template=[{"cue": {"paths": ["canary"]}}], fetch=climbing
                )
            ),
            "climbing.tgz: entry 'canary' is a symlink that resolves outside the directory; refusing the layer",
        ),
        "sops-link": (
            App(**inline_app("sops-link", module_namespace, {}, template=[{"sops": age}, {"ytt": {}}], fetch=absolute)),
            "absolute.tgz: entry 'stolen.sops.yaml' is a symlink to an absolute path; refusing the layer",
        ),
        "cue-option": (
            app(
                "cue-option",
                module_namespace,
                {"a.cue": "package a\na: 1\n"},
                [{"cue": {"paths": [f"--outfile={pwned}"], "outputExpression": f"--outfile={pwned}"}}],
            ),
            "Templating dir: cue failed (exit status 1)",
        ),
        "cue-expression": (
            app(
                "cue-expression",
                module_namespace,
                {"a.cue": "package a\na: 1\n", "v.yaml": "b: 2\n"},
                [{"cue": {"inputExpression": f"--outfile={pwned}", "valuesFrom": [{"path": "v.yaml"}]}}],
            ),
            "Templating dir: cue failed (exit status 1)",
        ),
        "sops-option": (
            app("sops-option", module_namespace, {"a.yml": "a: 1\n"}, [{"sops": {**age, "paths": ["--config=/x"]}}]),
            "Decrypting dir: Checking path: '--config=/x' does not exist",
        ),
        "cue-memory": (
            app("cue-memory", module_namespace, {"bomb.cue": CUE_MEMORY_BOMB}, [{"cue": {}}]),
            f"Templating dir: cue {MEMORY}",
        ),
        "sops-vault": (
            app("sops-vault", module_namespace, {"v.sops.yaml": vault_file}, [{"sops": age}, {"ytt": {}}]),
            "Decrypting dir: Decrypting file 'v.sops.yaml': sops failed",
        ),
    }
    for made, _ in attacks.values():
        kube.create(made)
    try:
        reported = {name: failed(kube, module_namespace, name) for name in attacks}
        texts = readable(kube, module_namespace, controller)
    finally:  # the bombs would be retried while the module's other tests run (none of them ever deployed)
        for name in attacks:
            kube.delete(App, name, namespace=module_namespace)
    assert not pwned.exists()
    assert sorted(p.name for p in canary.iterdir()) == ["token.cue", "token.sops.yaml"]
    leaks = [where for where, text in texts.items() if token in text]
    assert not leaks, f"the canary's token is in {leaks}"
    for name, (_, message) in attacks.items():
        assert_refused(reported[name], message)
    assert "Failed to get the data key" in reported["sops-vault"]["usefulErrorMessage"], reported["sops-vault"]
    protections = {
        s.labels["protection"]: s.value
        for s in samples(endpoint(controller.logs_by_name["controller"]))
        if s.name == "kapply_sandbox_protection"
    }
    if protections.get("tool-network") == 1:
        assert not [heard for heard in web.heard if "/vault" in heard], web.heard
    assert not [where for where, text in texts.items() if other.secret_key in text]
