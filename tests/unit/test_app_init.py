"""`kapply app init` (kapply.cli.app_init): kctrl 0.53's questions, order and files;
tests/compat/test_kctrl_authoring.py compares it with the real kctrl."""

from __future__ import annotations

from pathlib import Path

import pytest

from kapply.cli.app_init import APP_FILE, BUILD_FILE
from tests.unit.authoring_fakes import answering, built_app_spec
from tests.unit.fake_tools import fake_tool

# kctrl 0.53's files after `app init` answered `myapp`, 1 and `config`
APP_BUILD = """apiVersion: kctrl.carvel.dev/v1alpha1
kind: AppBuild
metadata:
  creationTimestamp: null
  name: myapp
spec:
""" + built_app_spec(2)
APP = """apiVersion: kappctrl.k14s.io/v1alpha1
kind: App
metadata:
  annotations:
    kctrl.carvel.dev/local-fetch-0: .
  creationTimestamp: null
  name: microservices-demo
spec:
  deploy:
  - kapp: {}
  serviceAccountName: microservices-demo-sa
status:
  conditions: null
  friendlyDescription: ""
  observedGeneration: 0
"""
# kctrl's TTY output: the files are saved, and Output and Next steps shown, before the content is asked for
TTY_OUTPUT = """
Pre-requisite
Welcome! Before we start on the app creation journey, please ensure the
following pre-requites are met:
* The Carvel suite of tools are installed. Do get familiar with the following
Carvel tools: ytt, imgpkg, vendir, and kbld.
* You have access to an OCI registry, and authenticated locally so that images
can be pushed. e.g. docker login <REGISTRY URL>

Basic Information

> Enter the app name (work): myapp


Output
Successfully updated app-build.yml
Successfully updated app.yml

**Next steps**
Use `dev deploy` command to iterate on the app and deploy locally.
Content
Please provide the location from where your Kubernetes manifests or Helm chart
can be fetched. This will be bundled as a part of the package.
1: Local Directory
2: Github Release
3: Helm Chart from Helm Repository
4: Git Repository
5: Helm Chart from Git Repository
> Enter source (1): 1

We need to include files/ directories which contain Kubernetes manifests.
Multiple values can be included using a comma separator.
> Enter the paths which contain Kubernetes manifests (): config

Succeeded
"""


kapply = answering("app")


def test_app_init_asks_kctrls_questions_and_writes_its_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "work").mkdir()
    monkeypatch.chdir(tmp_path)
    code, out, err = kapply(monkeypatch, capsys, "myapp\n1\nconfig\n", "init", "--chdir", "work", "--tty")
    assert (code, out, err) == (0, TTY_OUTPUT, "")
    assert (tmp_path / "work" / BUILD_FILE).read_text() == APP_BUILD
    assert (tmp_path / "work" / APP_FILE).read_text() == APP


def test_app_init_saves_both_files_before_the_content_and_keeps_the_users_app(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    code, _, err = kapply(monkeypatch, capsys, "x\n", "init")
    assert (code, err) == (1, "kapply: Error: Asking for choice:\n  EOF\n")
    assert "deploy:\n      - kapp: {}\n" in (tmp_path / BUILD_FILE).read_text()
    assert (tmp_path / APP_FILE).read_text() == APP
    app = "apiVersion: kappctrl.k14s.io/v1alpha1\nkind: App\nmetadata:\n  name: mine\nspec:\n  deploy: []\n  foo: 1\n"
    (tmp_path / APP_FILE).write_text(app)
    (tmp_path / BUILD_FILE).write_text((tmp_path / BUILD_FILE).read_text() + "unknown: dropped\n")
    code, out, _ = kapply(monkeypatch, capsys, "\n1\nconfig,more\n", "init")
    assert code == 0
    assert out.startswith("> Enter the app name (x): \n")
    assert (tmp_path / APP_FILE).read_text() == (
        "apiVersion: kappctrl.k14s.io/v1alpha1\nkind: App\nmetadata:\n  creationTimestamp: null\n  name: mine\n"
        'spec: {}\nstatus:\n  conditions: null\n  friendlyDescription: ""\n  observedGeneration: 0\n'
    ), "as kctrl: read into its struct, nothing filled in"
    build = (tmp_path / BUILD_FILE).read_text()
    assert "unknown" not in build and "    - config\n    - more\n" in build


def test_app_init_from_a_helm_repository_keeps_earlier_templates_and_refuses_another_source(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    fake_tool(monkeypatch, tmp_path / "vendir", "KAPPLY_VENDIR", "mkdir -p upstream\n")
    (tmp_path / BUILD_FILE).write_text(APP_BUILD)
    code, out, err = kapply(monkeypatch, capsys, "\n3\nhttp://127.0.0.1:1\nhello\n0.1.0\n", "init")
    assert (code, err) == (0, "")
    assert "> Enter helm chart version (): 0.1.0\n" in out
    assert (tmp_path / BUILD_FILE).read_text() == APP_BUILD, "as kctrl: templates and include paths kept"
    code, _, err = kapply(monkeypatch, capsys, "\n1\n", "init")
    assert (code, err) == (
        1,
        "kapply: Error: Transitioning from one fetch option to another is not allowed. Earlier option selected:\n"
        "  Helm Chart from Helm Repository, Current Option selected:\n    Local Directory\n",
    )
    code, _, err = kapply(monkeypatch, capsys, "\n2\n", "init")
    assert code == 1 and "Current Option selected:\n    Github Release\n" in err
    (tmp_path / "vendir.yml").unlink()
    code, _, err = kapply(monkeypatch, capsys, "\n5\n", "init")
    assert code == 1
    assert "(Helm Chart from Git Repository is not supported: fetch the content into a directory first)" in err
