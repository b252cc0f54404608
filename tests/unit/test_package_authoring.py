"""`kapply package init`, `release` and `repository release`, their pure parts: kctrl's questions and how they read
answers (kapply.cli.package.authoring_ui), the files as kctrl 0.53 writes them (pinned from its output), the Package
a release writes and the repository's files. What needs ytt, kbld and a registry is compared with the real kctrl in
tests/compat/test_kctrl_authoring.py."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path
from typing import Any

import pytest

from kapply.cli.package import authoring as files
from kapply.cli.package.authoring_ui import AuthoringUI
from kapply.cli.package.init import check_ref_name
from kapply.cli.package.release import Pushed, docker_credentials, release_package
from kapply.cli.package.repository_release import _lock, package_repository, repository_build
from kapply.errors import KapplyError
from kapply.oci import Credentials
from kapply.ui.output import Output
from tests.unit.authoring_fakes import answering, built_app_spec

# kctrl 0.53's package-resources.yml after `package init` answered `samplepackage.corp.com`, 1 and `config`
RESOURCES = """apiVersion: data.packaging.carvel.dev/v1alpha1
kind: Package
metadata:
  creationTimestamp: null
  name: samplepackage.corp.com.0.0.0
spec:
  refName: samplepackage.corp.com
  releasedAt: null
  template:
    spec:
      deploy:
      - kapp: {}
      fetch:
      - git: {}
      template:
      - ytt:
          paths:
          - config
      - kbld: {}
  valuesSchema:
    openAPIv3: null
  version: 0.0.0

---
apiVersion: data.packaging.carvel.dev/v1alpha1
kind: PackageMetadata
metadata:
  creationTimestamp: null
  name: samplepackage.corp.com
spec:
  displayName: samplepackage
  longDescription: samplepackage.corp.com
  shortDescription: samplepackage.corp.com

---
apiVersion: packaging.carvel.dev/v1alpha1
kind: PackageInstall
metadata:
  annotations:
    kctrl.carvel.dev/local-fetch-0: .
  creationTimestamp: null
  name: samplepackage
spec:
  packageRef:
    refName: samplepackage.corp.com
    versionSelection:
      constraints: 0.0.0
  serviceAccountName: samplepackage-sa
status:
  conditions: null
  friendlyDescription: ""
  observedGeneration: 0
"""
BUILD = """apiVersion: kctrl.carvel.dev/v1alpha1
kind: PackageBuild
metadata:
  creationTimestamp: null
  name: samplepackage.corp.com
spec:
  template:
    spec:
""" + built_app_spec(6)
# kctrl's non-TTY output of the same run
INIT_OUTPUT = """> Enter the package reference name (samplepackage.corp.com): samplepackage.corp.com

1: Local Directory
2: Github Release
3: Helm Chart from Helm Repository
4: Git Repository
5: Helm Chart from Git Repository
> Enter source (1): 1

> Enter the paths which contain Kubernetes manifests (): config
"""


kapply = answering("package")


def test_init_writes_kctrls_files_and_asks_its_questions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "work").mkdir()
    code, out, err = kapply(monkeypatch, capsys, "samplepackage.corp.com\n1\nconfig\n", "init", "--chdir", "work")
    assert (code, out, err) == (0, INIT_OUTPUT, "")
    assert (tmp_path / "work" / files.RESOURCES_FILE).read_text() == RESOURCES
    assert (tmp_path / "work" / files.BUILD_FILE).read_text() == BUILD


def test_init_again_offers_the_last_answers_and_asks_before_overwriting_the_package(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / files.BUILD_FILE).write_text(BUILD)
    (tmp_path / files.RESOURCES_FILE).write_text(RESOURCES)
    code, out, _ = kapply(monkeypatch, capsys, "other.corp.com\n\nconfig, extra \n1\n", "init", "--tty")
    assert code == 0
    assert "> Enter the package reference name (samplepackage.corp.com): other.corp.com\n" in out
    assert "> Enter the paths which contain Kubernetes manifests (config): config, extra \n" in out
    assert "Found different AppSpec section in\nPackage (inside package-resources.yml) and\n" in out
    assert out.endswith("package repository directory.\n\nSucceeded\n")
    build = files.load_mapping((tmp_path / files.BUILD_FILE).read_text(), "b")
    assert build["metadata"]["name"] == "other.corp.com"
    assert build["spec"]["template"]["spec"]["export"] == [{"includePaths": ["config", "extra"]}]
    package, metadata, install = (files.only(files.read_resources(required=True), k) for k in files.KINDS)
    assert package is not None and metadata is not None and install is not None
    assert package["metadata"]["name"] == "other.corp.com.0.0.0"
    assert package["spec"]["template"]["spec"]["template"][0] == {"ytt": {"paths": ["config", "extra"]}}
    assert metadata["spec"]["displayName"] == "other"
    assert metadata["spec"]["shortDescription"] == "samplepackage.corp.com", "an earlier description is kept"
    assert install["spec"]["packageRef"]["refName"] == "samplepackage.corp.com", "as kctrl: the install is kept"


def test_init_refuses_a_github_release(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    code, _, err = kapply(monkeypatch, capsys, "a.b.c\n2\n", "init")
    assert code == 1
    assert "(Github Release is not supported: fetch the content into a directory first)" in err
    code, _, err = kapply(monkeypatch, capsys, "", "init", "--chdir", "missing")
    assert (code, err) == (1, "kapply: Error: chdir missing: no such file or directory\n")


@pytest.mark.parametrize(
    ("name", "problem"),
    [
        ("a.b.c", None),
        (
            "foo.bar",
            "Invalid name: foo.bar should be a fully qualified name with at least three segments separated by dots",
        ),
        ("Foo.bar.com", "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters"),
        ("a..b.c", "a lowercase RFC 1123 subdomain"),
        ("a" * 250 + ".b.c", "must be no more than 253 characters"),
    ],
)
def test_a_reference_name_is_a_subdomain_of_three_segments(name: str, problem: str | None) -> None:
    found = check_ref_name(name)
    assert found == problem if problem is None else found is not None and found.startswith(problem)


# --- the questions ----------------------------------------------------------------------------------------------------


def _ui(monkeypatch: pytest.MonkeyPatch, stdin: str, *, tty: bool = False) -> tuple[AuthoringUI, io.StringIO]:
    monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
    written = io.StringIO()
    return AuthoringUI(Output(tty=tty, out=written)), written


def test_questions_take_defaults_check_answers_and_echo_what_they_read(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    ui, written = _ui(monkeypatch, "bad\n\n\n\n7\nx\n2\n")
    assert ui.ask_text("Name", "good", lambda a: "no" if a == "bad" else None) == "good"
    assert ui.ask_text("Other", "") == ""
    assert ui.ask_choice("Pick", ("a", "b"), 0) == 0
    assert ui.ask_choice("Pick", ("a", "b"), 0) == 1
    assert written.getvalue() == (
        "> Name (good): bad\n> Name (good): \n> Other (): \n"  # two questions for text in a row: no blank line
        "\n1: a\n2: b\n> Pick (1): \n"
        "\n1: a\n2: b\n> Pick (1): 7\ninvalid selection (must be 1-2)\n"
        "> Pick (1): x\ninvalid selection (not a number)\n> Pick (1): 2\n"
    )
    assert capsys.readouterr().err == "Failed validation: no\n"


def test_a_question_at_the_end_of_stdin_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    ui, _ = _ui(monkeypatch, "")
    with pytest.raises(KapplyError, match="^Asking for text: EOF$"):
        ui.ask_text("Name", "")
    with pytest.raises(KapplyError, match="^Asking for choice: EOF$"):
        ui.ask_choice("Pick", ("a",), 0)


def test_texts_show_on_a_tty_only_and_command_output_always(monkeypatch: pytest.MonkeyPatch) -> None:
    for tty, expected in (
        (True, "Header\ninfo\n\t    | $ ytt -f config\n\n\t    | line\n"),
        (False, "\t    | $ ytt -f config\n\n\t    | line\n"),
    ):
        ui, written = _ui(monkeypatch, "", tty=tty)
        ui.header("Header")
        ui.informational("info\n")
        ui.command_output("$ ytt -f config")
        ui.command_output("\nline")
        assert written.getvalue() == expected


# --- the files --------------------------------------------------------------------------------------------------------


def test_resources_of_another_kind_are_refused_as_kctrl_refuses_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(
        KapplyError, match="^Reading config 'package-resources.yml': open package-resources.yml: no such"
    ):
        files.read_resources(required=True)
    assert files.read_resources(required=False) == {"Package": [], "PackageMetadata": [], "PackageInstall": []}
    (tmp_path / files.RESOURCES_FILE).write_text("a: 1\n")
    with pytest.raises(KapplyError, match="Unknown apiVersion '' or kind '' for resource"):
        files.read_resources(required=True)
    (tmp_path / files.RESOURCES_FILE).write_text(RESOURCES + "---\n" + RESOURCES.split("---")[1])
    with pytest.raises(KapplyError, match="^More than 1 PackageMetadata found$"):
        files.only(files.read_resources(required=True), "PackageMetadata")
    with pytest.raises(KapplyError, match="^open package-build.yml: no such file or directory$"):
        files.read_build(required=True)


def test_a_release_writes_the_package_fetching_the_bundle_by_digest() -> None:
    package = files.load_mapping(RESOURCES.split("\n---\n")[0], "p")
    build = files.load_mapping(BUILD, "b")
    app_spec = files.build_app_spec(build)
    assert app_spec is not None
    image = "127.0.0.1:5000/pkg@sha256:" + "1" * 64
    released = release_package(package, "samplepackage.corp.com", "1.0.0", Pushed(image), app_spec, True, None, 0.0)
    assert released["metadata"] == {"creationTimestamp": None, "name": "samplepackage.corp.com.1.0.0"}
    assert released["spec"] == {
        "refName": "samplepackage.corp.com",
        "releasedAt": "1970-01-01T00:00:00Z",
        "template": {
            "spec": {
                "fetch": [{"imgpkgBundle": {"image": image}}],
                "template": [{"ytt": {"paths": ["config"]}}, {"kbld": {"paths": ["-", ".imgpkg/images.yml"]}}],
                "deploy": [{"kapp": {}}],
            }
        },
        "valuesSchema": {"openAPIv3": None},
        "version": "1.0.0",
    }
    assert app_spec["template"][1] == {"kbld": {}}, "the build's own spec is left as it was"


def test_a_repository_release_writes_kctrls_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repository = package_repository("repo.corp.com", "1.0.0", "r@sha256:" + "2" * 64, 0.0)
    files.write_yaml(tmp_path / "repo.yml", repository)
    assert (tmp_path / "repo.yml").read_text() == (
        "apiVersion: packaging.carvel.dev/v1alpha1\nkind: PackageRepository\nmetadata:\n  annotations:\n"
        '    kctrl.carvel.dev/repository-version: 1.0.0\n  creationTimestamp: "1970-01-01T00:00:00Z"\n'
        "  name: repo.corp.com\nspec:\n  fetch:\n    imgpkgBundle:\n      image: r@sha256:" + "2" * 64 + "\n"
        'status:\n  conditions: null\n  friendlyDescription: ""\n  observedGeneration: 0\n'
    )
    made = repository_build(None, 0.0)
    assert made == {
        "apiVersion": "kctrl.carvel.dev/v1alpha1",
        "kind": "PackageRepositoryBuild",
        "metadata": {"creationTimestamp": "1970-01-01T00:00:00Z"},
        "spec": {"export": {"imgpkgBundle": {}}},
    }
    kept: dict[str, Any] = {
        "metadata": {"name": "r", "creationTimestamp": "x"},
        "spec": {"export": {"imgpkgBundle": {"image": "i"}}},
    }
    assert repository_build(kept, 0.0)["metadata"]["creationTimestamp"] == "x"
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".imgpkg").mkdir()
    with pytest.raises(KapplyError, match="has a .imgpkg already"):
        _lock()
    assert (tmp_path / ".imgpkg").is_dir(), "the user's own is left alone"


def test_registry_credentials_come_from_the_docker_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCKER_CONFIG", str(tmp_path))
    assert docker_credentials().for_registry("127.0.0.1:5000") is None
    auths = {"auths": {"127.0.0.1:5000": {"username": "u", "password": "p"}}}
    (tmp_path / "config.json").write_text(json.dumps(auths))
    assert docker_credentials().for_registry("127.0.0.1:5000") == Credentials("u", "p")
    os.chmod(tmp_path / "config.json", 0)
    if os.geteuid() != 0:
        with pytest.raises(KapplyError, match="Reading"):
            docker_credentials()


# --- the commands -----------------------------------------------------------------------------------------------------

STR, BOOL = "string", ""


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        (("init",), {"chdir": ("", STR, ""), "tty": ("", BOOL, False)}),
        (
            ("release",),
            {
                "build-values": ("", STR, ""),
                "build-ytt-validations": ("", BOOL, True),
                "chdir": ("", STR, ""),
                "copy-to": ("", STR, "carvel-artifacts"),
                "openapi-schema": ("", BOOL, True),
                "repo-output": ("", STR, ""),
                "tag": ("t", STR, ""),
                "tty": ("", BOOL, False),
                "version": ("v", STR, ""),
            },
        ),
        (
            ("repository", "release"),
            {"chdir": ("", STR, ""), "copy-to": ("", STR, ""), "tty": ("", BOOL, False), "version": ("v", STR, "")},
        ),
    ],
    ids=" ".join,
)
def test_the_authoring_commands_have_kctrls_flags(path: tuple[str, ...], expected: dict[str, Any]) -> None:
    """kctrl 0.53's flags (`kctrl package init|release|repository release --help`); no cluster flags: they work on
    files and a registry only."""
    from kapply.cli.tree import tree

    command = tree().child("package")
    for name in path:
        assert command is not None
        command = command.child(name)
    assert command is not None and command.handler
    assert {f.name: (f.short, str(f.kind), f.default) for f in command.flags} == expected


def test_with_yes_every_question_takes_its_default_unasked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(""))
    written = io.StringIO()
    ui = AuthoringUI(Output(tty=True, out=written), assume_yes=True)
    assert ui.ask_text("Name", "a.b.c", check_ref_name) == "a.b.c"
    assert ui.ask_choice("Pick", ("a", "b"), 1) == 1
    assert written.getvalue() == ""
