"""helm, kustomize, kbld, cue and sops, as hack/tools.py builds them for kapply's controller, report their pinned
versions and render manifests (cue and sops through kapply's own template steps, with keys age-keygen and gpg make).
They need no cluster; they are built here if missing (slow)."""

from __future__ import annotations

import asyncio
import base64
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from kapply.controller.spec import SopsKeys, SopsKind, TemplateStep, TemplateTool, ValuesSource
from kapply.controller.template import template
from kapply.objects import Obj

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(3600)]  # the first test may wait for the builds

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "hack" / "tools.py"


def run(*cmd: str | Path, env: dict[str, str] | None = None) -> str:
    """A command's stdout; its stderr in the failure when it fails."""
    result = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 0, f"{cmd} exited {result.returncode}:\n{result.stderr}"
    return result.stdout


def script(*args: str) -> str:
    return run(sys.executable, SCRIPT, *args)


def pinned_version(tool: str) -> str:
    """From the path the script gives: <cache>/<tool>-<version>/bin/<tool>."""
    return Path(script("path", tool).strip()).parent.parent.name.removeprefix(f"{tool}-")


@pytest.fixture(scope="session")
def template_tools() -> dict[str, Path]:
    """KAPPLY_HELM / KAPPLY_KUSTOMIZE / KAPPLY_KBLD / KAPPLY_CUE / KAPPLY_SOPS (and KAPPLY_CRANE, the tests' registry,
    and KAPPLY_AGE_KEYGEN, their sops keys) -> binary, built through the script unless they are."""
    subprocess.run([sys.executable, str(SCRIPT), "build"], check=True)  # builds nothing when built
    paths = dict(line.split("=", 1) for line in script("env").splitlines())
    assert set(paths) >= {
        "KAPPLY_HELM",
        "KAPPLY_KUSTOMIZE",
        "KAPPLY_KBLD",
        "KAPPLY_CUE",
        "KAPPLY_SOPS",
        "KAPPLY_CRANE",
        "KAPPLY_AGE_KEYGEN",
    }
    return {name: Path(path) for name, path in paths.items()}


@pytest.fixture
def helm(template_tools: dict[str, Path], tmp_path: Path):
    # helm's config, cache and data dirs in tmp_path: the user's repositories and plugins play no part
    homes = {f"HELM_{kind}_HOME": str(tmp_path / f"helm-{kind.lower()}") for kind in ["CACHE", "CONFIG", "DATA"]}

    return lambda *args: run(template_tools["KAPPLY_HELM"], *args, env={**os.environ, **homes})


def test_helm_reports_its_pinned_version(helm, template_tools):
    assert script("path", "helm").strip() == str(template_tools["KAPPLY_HELM"])
    version = pinned_version("helm")
    assert version.startswith("v3.")
    assert helm("version", "--template", "{{ .Version }}") == version
    assert f'Version:"{version}"' in helm("version")


def test_helm_template_renders_a_local_chart_with_its_values(helm, tmp_path):
    chart = tmp_path / "greeter"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: greeter\nversion: 0.1.0\n")
    (chart / "values.yaml").write_text("greeting: hello\n")
    (chart / "templates" / "configmap.yaml").write_text(
        "apiVersion: v1\n"
        "kind: ConfigMap\n"
        "metadata:\n"
        "  name: {{ .Release.Name }}-greeting\n"
        "  namespace: {{ .Release.Namespace }}\n"
        "data:\n"
        "  greeting: {{ .Values.greeting | quote }}\n"
        "  kubeVersion: {{ .Capabilities.KubeVersion.Version | quote }}\n"
    )

    def expected(greeting: str, kube_version: str) -> str:
        return (
            "---\n"
            "# Source: greeter/templates/configmap.yaml\n"
            "apiVersion: v1\n"
            "kind: ConfigMap\n"
            "metadata:\n"
            "  name: demo-greeting\n"
            "  namespace: apps\n"
            "data:\n"
            f'  greeting: "{greeting}"\n'
            f'  kubeVersion: "{kube_version}"\n'
        )

    out = helm("template", "demo", str(chart), "--namespace", "apps")
    kube_version = out.split('kubeVersion: "')[1].split('"')[0]
    assert out == expected("hello", kube_version)
    # the Kubernetes version of helm's client-go, as in release builds; v1.20.0 if the build did not stamp it
    major, minor, patch = kube_version.removeprefix("v").split(".")
    assert (major, patch) == ("1", "0") and int(minor) > 30

    assert helm("template", "demo", str(chart), "--namespace", "apps", "--set", "greeting=hi") == expected(
        "hi", kube_version
    )


def test_kustomize_build_applies_a_name_prefix_and_common_labels(template_tools, tmp_path):
    (tmp_path / "configmap.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  color: blue\n"
    )
    (tmp_path / "kustomization.yaml").write_text(
        "apiVersion: kustomize.config.k8s.io/v1beta1\n"
        "kind: Kustomization\n"
        "resources:\n"
        "- configmap.yaml\n"
        "namePrefix: dev-\n"
        "commonLabels:\n"
        "  app: shop\n"
    )
    kustomize = template_tools["KAPPLY_KUSTOMIZE"]
    assert run(kustomize, "build", tmp_path) == (
        "apiVersion: v1\n"
        "data:\n"
        "  color: blue\n"
        "kind: ConfigMap\n"
        "metadata:\n"
        "  labels:\n"
        "    app: shop\n"
        "  name: dev-settings\n"
    )

    version = pinned_version("kustomize")
    assert version.startswith("v5.")
    assert run(kustomize, "version") == f"{version}\n"


def test_kbld_reports_its_pinned_version_and_rewrites_an_image_its_lock_names(template_tools, tmp_path):
    kbld = template_tools["KAPPLY_KBLD"]
    assert run(kbld, "version").splitlines()[0] == f"kbld version {pinned_version('kbld').removeprefix('v')}"
    digest = "sha256:" + "1" * 64
    lock = tmp_path / "images.yml"
    lock.write_text(
        "apiVersion: imgpkg.carvel.dev/v1alpha1\nkind: ImagesLock\nimages:\n"
        f"- image: registry.example/app@{digest}\n  annotations: {{kbld.carvel.dev/id: example.com/app:v1}}\n"
    )
    pod = tmp_path / "pod.yml"
    pod.write_text(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{image: example.com/app:v1}]}\n"
    )
    out = run(kbld, "-f", pod, "-f", lock, "--build=false", env={"PATH": os.environ["PATH"], "HOME": str(tmp_path)})
    assert f"image: registry.example/app@{digest}" in out


def secret_reader(**secrets: dict[str, bytes]):
    async def read(kind: str, name: str) -> Obj | None:
        data = secrets.get(name) if kind == "Secret" else None
        return None if data is None else {"data": {k: base64.b64encode(v).decode() for k, v in data.items()}}

    return read


def test_cue_reports_its_pinned_version_and_kapplys_cue_step_exports_with_values(template_tools, tmp_path, monkeypatch):
    cue = template_tools["KAPPLY_CUE"]
    assert run(cue, "version").splitlines()[0] == f"cue version {pinned_version('cue')}"
    monkeypatch.setenv("KAPPLY_CUE", str(cue))
    root = tmp_path / "root"
    (root / "config").mkdir(parents=True)
    (root / "config" / "cm.cue").write_text(
        'package cm\n\nvalues: {greeting: string | *"hello"}\n'
        'cm: {apiVersion: "v1", kind: "ConfigMap", metadata: name: "greeting", data: greeting: values.greeting}\n'
    )
    step = TemplateStep(
        TemplateTool.CUE,
        paths=("config",),
        input_expression="values:",
        output_expression="cm",
        values_from=(ValuesSource(secret="vals"),),
    )
    read = secret_reader(vals={"vals.yaml": b"greeting: hi\n"})
    out = asyncio.run(template((step,), root, read, "app", "ns"))
    assert yaml.safe_load(out) == {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "greeting"},
        "data": {"greeting": "hi"},
    }


def test_sops_reports_its_pinned_version_and_kapplys_sops_step_decrypts_with_an_age_key(
    template_tools, tmp_path, monkeypatch
):
    sops = template_tools["KAPPLY_SOPS"]
    version = pinned_version("sops")
    assert run(sops, "--version", "--disable-version-check").splitlines()[0] == f"sops {version.removeprefix('v')}"
    assert run(template_tools["KAPPLY_AGE_KEYGEN"], "--version").strip() == pinned_version("age-keygen")
    key = run(template_tools["KAPPLY_AGE_KEYGEN"])  # "# created: ...\n# public key: age1...\nAGE-SECRET-KEY-1..."
    recipient = key.split("# public key: ")[1].split()[0]
    root = tmp_path / "root"
    root.mkdir()
    (root / "secret.yaml").write_text("apiVersion: v1\nkind: Secret\nmetadata: {name: s}\nstringData: {a: hunter2}\n")
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path)}
    encrypted = run(sops, "--encrypt", "--age", recipient, root / "secret.yaml", env=env)
    (root / "secret.yaml").unlink()
    (root / "secret.sops.yaml").write_text(encrypted)
    assert "hunter2" not in encrypted
    monkeypatch.setenv("KAPPLY_SOPS", str(sops))
    step = TemplateStep(TemplateTool.SOPS, sops_keys=SopsKeys(SopsKind.AGE, "age"))
    assert asyncio.run(template((step,), root, secret_reader(age={"key.txt": key.encode()}), "app", "ns")) == ""
    assert yaml.safe_load((root / "secret.yaml").read_text())["stringData"] == {"a": "hunter2"}
    assert not (root / "secret.sops.yaml").exists()


@pytest.mark.skipif(shutil.which("gpg") is None, reason="gpg makes the PGP key")
def test_kapplys_sops_step_decrypts_with_armored_pgp_private_keys_without_gpg(template_tools, tmp_path, monkeypatch):
    home = tmp_path / "gnupg"
    home.mkdir(mode=0o700)
    gpg_env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "GNUPGHOME": str(home)}
    unattended = ("--batch", "--pinentry-mode", "loopback", "--passphrase", "")
    root = tmp_path / "root"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "cm.yml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {a: b}\n")
    try:
        run("gpg", *unattended, "--quick-gen-key", "kapply <t@kapply.test>", "rsa2048", "encrypt,sign", "never",
            env=gpg_env)  # fmt: skip
        listed = run("gpg", "--list-keys", "--with-colons", env=gpg_env)
        fingerprint = next(line.split(":")[9] for line in listed.splitlines() if line.startswith("fpr:"))
        private = run("gpg", "--batch", "--armor", "--export-secret-keys", fingerprint, env=gpg_env)
        sops = template_tools["KAPPLY_SOPS"]
        encrypted = run(sops, "--encrypt", "--pgp", fingerprint, root / "sub" / "cm.yml", env=gpg_env)
    finally:  # the agent gpg started
        subprocess.run(["gpgconf", "--kill", "all"], env=gpg_env, capture_output=True, timeout=30, check=False)
    (root / "sub" / "cm.yml").unlink()
    (root / "sub" / "cm.sops.yml").write_text(encrypted)
    monkeypatch.setenv("KAPPLY_SOPS", str(template_tools["KAPPLY_SOPS"]))
    step = TemplateStep(TemplateTool.SOPS, paths=("sub",), sops_keys=SopsKeys(SopsKind.PGP, "gpg"))
    read = secret_reader(gpg={"private.asc": private.encode()})
    asyncio.run(template((step,), root, read, "app", "ns"))  # sops finds no gpg: its PATH is empty
    assert yaml.safe_load((root / "sub" / "cm.yml").read_text())["data"] == {"a": "b"}
