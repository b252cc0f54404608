"""kapply.cli.dev_config and the reads of kapply.cli.dev: the documents `kapply dev` reads, with kctrl dev's messages
(compared with the real kctrl's in tests/compat/test_kctrl_dev.py), the namespace given to those without one, the
local directories of `--local`, and the Secrets and ConfigMaps of the files served before the cluster's."""

from __future__ import annotations

import asyncio
import base64
import io
from collections.abc import Awaitable
from pathlib import Path
from typing import Any, TypeVar

import pytest
import yaml

from kapply.cli import dev_config
from kapply.cli.dev import dev_command, read_source, secret_with_data
from kapply.cli.dev_config import ConfigError, Documents
from kapply.controller.vocabulary import CARVEL, KAPPLY

T = TypeVar("T")
APP = {"apiVersion": "kappctrl.k14s.io/v1alpha1", "kind": "App", "metadata": {"name": "a"}, "spec": {}}
INSTALL = {"apiVersion": "packaging.carvel.dev/v1alpha1", "kind": "PackageInstall", "metadata": {"name": "i"}}
PACKAGE = {
    "apiVersion": "data.packaging.carvel.dev/v1alpha1",
    "kind": "Package",
    "metadata": {"name": "p.x.1.0.0"},
    "spec": {"refName": "p.x", "version": "1.0.0", "template": {"spec": {"fetch": [{"git": {}}, {"http": {}}]}}},
}
SECRET = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "stringData": {"v.yml": "a: 1"}}


def files(tmp_path: Path, *docs: Any, name: str = "f.yml") -> str:
    path = tmp_path / name
    path.write_text(yaml.safe_dump_all(docs))
    return str(path)


def run(step: Awaitable[T]) -> T:
    async def main() -> T:
        return await step

    return asyncio.run(main())


def read(*paths: str, stdin: bytes = b"") -> Documents:
    return dev_config.read(paths, lambda: stdin)


def test_the_documents_are_read_by_kind_and_empty_ones_skipped(tmp_path: Path) -> None:
    path = tmp_path / "f.yml"
    path.write_text(yaml.safe_dump_all([APP, SECRET]) + "---\n# nothing\n---\n")
    found = read(str(path), "-", stdin=yaml.safe_dump(PACKAGE).encode())
    assert found.apps == (APP,) and found.secrets == (SECRET,) and found.packages == (PACKAGE,)
    assert found.primary == APP and found.vocabulary is CARVEL
    kapply_app = {**APP, "apiVersion": "kapply.dev/v1alpha1"}
    assert read(files(tmp_path, kapply_app)).vocabulary is KAPPLY


@pytest.mark.parametrize(
    ("docs", "message"),
    [
        ([], "Expected to find at least one App or PackageInstall, but found none"),
        ([SECRET], "Expected to find at least one App or PackageInstall, but found none"),
        ([APP, APP], "Expected to find exactly one App or PackageInstall, but found multiple"),
        ([INSTALL, INSTALL, APP], "Expected to find exactly one App or PackageInstall, but found multiple"),
        (
            [{"apiVersion": "v1", "kind": "Pod"}],
            "Parsing resource config '{path}': Unknown apiVersion 'v1' or kind 'Pod' for resource",
        ),
        ([[1]], "Parsing resource config '{path}': Unmarshaling doc: expected a map, but found list"),
        ([{**APP, "metadata": 3}], "Parsing resource config '{path}': Unmarshaling App: expected metadata to be a map"),
        (
            [APP, {**PACKAGE, "apiVersion": "data.packaging.kapply.dev/v1alpha1"}],
            "Expected the documents to use one set of API groups",
        ),
    ],
)
def test_kctrls_messages(tmp_path: Path, docs: list[Any], message: str) -> None:
    path = files(tmp_path, *docs)
    with pytest.raises(ConfigError) as failed:
        read(path)
    assert str(failed.value).startswith("Reading App CR configuration files: " + message.format(path=path))


def test_a_missing_file_and_bad_yaml(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="Reading config 'nope.yml': open nope.yml: no such file or directory"):
        read("nope.yml")
    bad = tmp_path / "bad.yml"
    bad.write_text("a: [\n")
    with pytest.raises(ConfigError, match=f"Parsing resource config '{bad}': did not find expected node content"):
        read(str(bad))


def test_documents_without_a_namespace_get_the_one_given(tmp_path: Path) -> None:
    other = {**SECRET, "metadata": {"name": "t", "namespace": "other"}}
    found = dev_config.with_namespace(read(files(tmp_path, APP, SECRET, other, PACKAGE)), "ns")
    assert [d["metadata"]["namespace"] for d in (*found.apps, *found.secrets, *found.packages)] == [
        "ns",
        "ns",
        "other",
        "ns",
    ]
    assert "namespace" not in APP["metadata"]  # the documents read are not changed


def test_local_directories_replace_the_fetch_steps_the_annotations_name(tmp_path: Path) -> None:
    (tmp_path / "src" / "sub").mkdir(parents=True)
    (tmp_path / "src" / "a.yml").write_text("a: 1\n")
    (tmp_path / "src" / "sub" / "b.yml").write_text("b: 2\n")
    annotations = {f"{dev_config.LOCAL_FETCH}1": "src", f"{dev_config.LOCAL_FETCH}5": "src"}  # 5: past the steps
    app: dict[str, Any] = {**APP, "metadata": {"name": "a", "annotations": annotations}}
    app["spec"] = {"fetch": [{"git": {"url": "x"}}, {"http": {"url": "y"}, "path": "there"}]}
    found = dev_config.with_local_sources(read(files(tmp_path, app)), tmp_path)
    assert found.apps[0]["spec"]["fetch"] == [
        {"git": {"url": "x"}},
        {"inline": {"paths": {"a.yml": "a: 1\n", "sub/b.yml": "b: 2\n"}}, "path": "there"},
    ]
    install = {**INSTALL, "metadata": {"name": "i", "annotations": {f"{dev_config.LOCAL_FETCH}0": "src"}}}
    packaged = dev_config.with_local_sources(read(files(tmp_path, install, PACKAGE)), tmp_path)
    fetch = packaged.packages[0]["spec"]["template"]["spec"]["fetch"]
    assert fetch[0] == {"inline": {"paths": {"a.yml": "a: 1\n", "sub/b.yml": "b: 2\n"}}} and fetch[1] == {"http": {}}
    unchanged = read(files(tmp_path, APP))
    assert dev_config.with_local_sources(unchanged, tmp_path) is unchanged


def test_local_directories_hold_regular_text_files_only(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "link").symlink_to(tmp_path)
    app: dict[str, Any] = {**APP, "metadata": {"name": "a", "annotations": {f"{dev_config.LOCAL_FETCH}0": "src"}}}
    app["spec"] = {"fetch": [{"git": {}}]}
    documents = read(files(tmp_path, app))
    with pytest.raises(ConfigError, match="is not a regular file or directory"):
        dev_config.with_local_sources(documents, tmp_path)
    (tmp_path / "src" / "link").unlink()
    (tmp_path / "src" / "bin").write_bytes(b"\xff")
    with pytest.raises(ConfigError, match="is not UTF-8 text"):
        dev_config.with_local_sources(documents, tmp_path)
    with pytest.raises(ConfigError, match="not a directory"):
        dev_config.with_local_sources(documents, tmp_path / "nowhere")
    bad = {**app, "metadata": {"name": "a", "annotations": {f"{dev_config.LOCAL_FETCH}x": "src"}}}
    with pytest.raises(ConfigError, match='parsing "x": invalid syntax'):
        dev_config.local_directories(read(files(tmp_path, bad)))


def test_the_files_secrets_and_config_maps_are_read_before_the_clusters(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config_map = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"k": "v"}}
    documents = dev_config.with_namespace(read(files(tmp_path, APP, SECRET, config_map)), "ns")
    asked: list[tuple[str, str]] = []

    async def cluster(kind: str, name: str) -> dict[str, Any]:
        asked.append((kind, name))
        return {"from": "cluster"}

    monkeypatch.setattr("kapply.controller.reconciler.reader", lambda client, namespace: cluster)
    read_in = read_source(documents)(None, "ns")  # type: ignore[arg-type]
    secret = run(read_in("Secret", "s"))
    assert secret is not None and secret["data"] == {"v.yml": base64.b64encode(b"a: 1").decode()}
    assert "stringData" not in secret
    assert run(read_in("ConfigMap", "c")) == {**config_map, "metadata": {"name": "c", "namespace": "ns"}}
    assert run(read_in("Secret", "other")) == {"from": "cluster"}
    assert run(read_source(documents)(None, "elsewhere")("Secret", "s")) == {"from": "cluster"}  # type: ignore[arg-type]
    assert asked == [("Secret", "other"), ("Secret", "s")]


def test_a_secrets_string_data_is_written_over_its_data() -> None:
    secret = {**SECRET, "data": {"old": "eA==", "v.yml": "eA=="}}
    assert secret_with_data(secret)["data"] == {"old": "eA==", "v.yml": base64.b64encode(b"a: 1").decode()}
    plain = {"kind": "Secret", "data": {"a": "eA=="}}
    assert secret_with_data(plain) is plain


def test_the_command_has_kctrls_flags() -> None:
    command = dev_command("Misc")
    flags = [(f.name, f.short, f.default, f.supported) for section in command.flag_sections for f in section.flags]
    assert flags == [
        ("delete", "", False, True),
        ("file", "f", (), True),
        ("kbld-build", "b", False, False),  # refused when set: kapply's kbld step does not build images
        ("local", "l", False, True),
        ("namespace", "n", "", True),
        ("tty", "", False, True),
    ]


def test_the_tail_tells_the_apps_stages_as_they_are_written_and_stops_at_a_failure() -> None:
    from kapply.cli.dev import Tail
    from kapply.ui.output import Output

    stream = io.StringIO()
    apps = CARVEL.app.rtype
    tail = Tail(Output(tty=True, out=stream), apps, "ns", "a")
    at = "2026-01-01T00:00:00Z"
    fetched = {"fetch": {"startedAt": at, "updatedAt": at, "exitCode": 0, "stdout": "lock"}}
    tail(apps, {"metadata": {"name": "other", "namespace": "ns"}, "status": fetched})  # another App
    tail(CARVEL.install.rtype, {"metadata": {"name": "a", "namespace": "ns"}, "status": fetched})  # not an App
    assert stream.getvalue() == ""
    tail(apps, {"metadata": {"name": "a", "namespace": "ns"}, "status": fetched})
    failed = {**fetched, "template": {"updatedAt": at, "exitCode": 1, "stderr": "bad", "error": "Templating"}}
    tail(apps, {"metadata": {"name": "a", "namespace": "ns"}, "status": failed})
    tail(apps, {"metadata": {"name": "a", "namespace": "ns"}, "status": {**failed, "deploy": {"startedAt": at}}})
    messages = [line.split(": ", 1)[1].split(" (")[0] for line in stream.getvalue().splitlines() if ": " in line]
    assert messages == ["Fetch started", "Fetching", "Fetch succeeded", "Template failed"]
    assert tail.failure == "Template failed"


def test_the_object_is_printed_as_kctrl_prints_its_go_struct() -> None:
    from kapply.cli.dev import go_printed

    shown = go_printed(APP, "2026-01-01T00:00:00Z")
    assert shown["metadata"] == {"name": "a", "creationTimestamp": None, "deletionTimestamp": "2026-01-01T00:00:00Z"}
    assert shown["status"] == {"conditions": None, "friendlyDescription": "", "observedGeneration": 0}
    given = go_printed({**APP, "status": {"friendlyDescription": "x"}}, None)
    assert "deletionTimestamp" not in given["metadata"] and given["status"]["friendlyDescription"] == "x"
    assert "status" not in APP and "creationTimestamp" not in APP["metadata"]  # the document read is not changed
