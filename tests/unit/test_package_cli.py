"""The pure parts of `kapply package`: the fetch kind of `--url`, the names and objects `install` creates, values
schemas and default values, the status tailing lines, and the tables (text and `--json`) with kctrl's columns and
row keys."""

from __future__ import annotations

import asyncio
import base64
import io
import json
import re
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from kapply.cli.package import created
from kapply.cli.package.available import split_name, visible
from kapply.cli.package.created import CreatedKind, InstallNames
from kapply.cli.package.install import Request, _to_create, dry_run_documents, read_files, read_overlays
from kapply.cli.package.schema import default_values, schema_properties
from kapply.cli.package.sources import SourceKind, repository_fetch, source_kind, updated_fetch
from kapply.cli.package.tailing import LogLine, progress
from kapply.cli.package.waiting import description
from kapply.controller.vocabulary import CARVEL, KAPPLY
from kapply.errors import ClusterError, KapplyError
from kapply.packaging import names
from kapply.ui import packages as ui
from kapply.ui.output import Output
from kapply.ui.table import render

# --- `--url` ----------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "kind"),
    [
        ("projects.registry.vmware.com/tce/main:0.9.1", SourceKind.IMGPKG_BUNDLE),
        ("127.0.0.1:5000/my-pkg-repo:1.0.0", SourceKind.IMGPKG_BUNDLE),
        ("docker.io/rohitagg2020/my-pkg-repo", SourceKind.IMGPKG_BUNDLE),
        ("ghcr.io/x/repo@sha256:" + "a" * 64, SourceKind.IMGPKG_BUNDLE),
        ("https://github.com/vmware-tanzu/carvel-kapp-controller.git", SourceKind.GIT),
        ("git@github.com:vmware-tanzu/carvel-kapp-controller.git", SourceKind.GIT),
        ("ssh://git@example.com/org/repo", SourceKind.GIT),
        ("git://example.com/org/repo", SourceKind.GIT),
        ("file:///srv/repos/packages.git", SourceKind.GIT),
        ("https://example.com/releases/repo.tgz", SourceKind.HTTP),
        ("https://example.com/releases/repo.tar.gz?token=x", SourceKind.HTTP),
        ("http://127.0.0.1:8080/repo.zip", SourceKind.HTTP),
        ("https://example.com/repo.TAR", SourceKind.HTTP),
    ],
)
def test_the_fetch_kind_is_read_from_the_url(url: str, kind: SourceKind) -> None:
    assert source_kind(url) is kind


@pytest.mark.parametrize(
    ("url", "fetch"),
    [  # what kctrl 0.53 makes of them (`kctrl package repository add --dry-run`)
        ("https://carvel.dev", {"image": "https://carvel.dev", "tagSelection": {"semver": {}}}),
        ("https://carvel.dev:1.0", {"image": "https://carvel.dev:1.0"}),
        ("foo:", {"image": "foo:", "tagSelection": {"semver": {}}}),
        ("Reg.io/repo", {"image": "Reg.io/repo", "tagSelection": {"semver": {}}}),
        ("reg.io/xy:1.0@sha256:" + "a" * 64, {"image": "reg.io/xy:1.0@sha256:" + "a" * 64}),
    ],
)
def test_a_url_is_read_as_kctrl_reads_an_oci_reference(url: str, fetch: dict[str, object]) -> None:
    """go-containerregistry's weak validation: `https://carvel.dev` is a reference (its fetch fails later)."""
    assert repository_fetch(url, "", "") == {"imgpkgBundle": fetch}


@pytest.mark.parametrize("url", ["a", "carvel.dev/x:1.0", "Foo/bar", "reg.io/x@sha256:abc", "x/y:bad@tag", "reg io/ab"])
def test_a_url_kctrl_cannot_parse_is_refused_in_its_words(url: str) -> None:
    with pytest.raises(KapplyError, match=f"^Parsing OCI registry URL: could not parse reference: {re.escape(url)}$"):
        repository_fetch(url, "", "")


def test_an_oci_reference_becomes_kctrls_imgpkg_bundle_with_a_tag_selection_only_without_a_tag() -> None:
    assert repository_fetch("reg.io/p/repo:1.0.0", "1.0.0", "") == {"imgpkgBundle": {"image": "reg.io/p/repo:1.0.0"}}
    assert repository_fetch("reg.io/p/repo", ">1.0.0", "regcred") == {
        "imgpkgBundle": {
            "image": "reg.io/p/repo",
            "tagSelection": {"semver": {"constraints": ">1.0.0"}},
            "secretRef": {"name": "regcred"},
        }
    }
    assert repository_fetch("reg.io/p/repo", "", "") == {
        "imgpkgBundle": {"image": "reg.io/p/repo", "tagSelection": {"semver": {}}}
    }
    # `latest` counts as a tag only when written
    assert repository_fetch("reg.io/p/repo:latest", "", "") == {"imgpkgBundle": {"image": "reg.io/p/repo:latest"}}
    digest = "reg.io/p/repo@sha256:" + "0" * 64
    assert repository_fetch(digest, "", "") == {"imgpkgBundle": {"image": digest}}


def test_git_and_http_sources_take_the_url_and_secret_but_no_tag_constraints() -> None:
    assert repository_fetch("https://h/r.git", "", "creds") == {
        "git": {"url": "https://h/r.git", "secretRef": {"name": "creds"}}
    }
    assert repository_fetch("https://h/r.tgz", "", "") == {"http": {"url": "https://h/r.tgz"}}
    with pytest.raises(KapplyError, match=r"only with an OCI reference \(--url names a git repository\)"):
        repository_fetch("https://h/r.git", "1.x", "")
    with pytest.raises(KapplyError, match="^Parsing OCI registry URL: could not parse reference: Reg.io/UPPER/repo$"):
        repository_fetch("Reg.io/UPPER/repo", "", "")


def test_an_update_keeps_the_secret_of_a_source_of_the_same_kind() -> None:
    existing = {"imgpkgBundle": {"image": "reg.io/repo:1", "secretRef": {"name": "kept"}}}
    assert updated_fetch(existing, "reg.io/repo:2", "", "") == {
        "imgpkgBundle": {"image": "reg.io/repo:2", "secretRef": {"name": "kept"}}
    }
    assert updated_fetch(existing, "reg.io/repo:2", "", "new")["imgpkgBundle"]["secretRef"] == {"name": "new"}
    assert updated_fetch(existing, "https://h/r.git", "", "") == {"git": {"url": "https://h/r.git"}}


# --- what install creates ---------------------------------------------------------------------------------------------


def test_install_names_and_annotates_what_it_creates_as_kctrl() -> None:
    made = InstallNames("pkg-demo", "apps")
    assert (made.owner, made.service_account, made.cluster_role, made.cluster_role_binding) == (
        "pkg-demo-apps",
        "pkg-demo-apps-sa",
        "pkg-demo-apps-cluster-role",
        "pkg-demo-apps-cluster-rolebinding",
    )
    assert (made.values_secret, made.overlays_secret) == ("pkg-demo-apps-values", "pkg-demo-apps-overlays")
    owner = {"packaging.carvel.dev/package": "pkg-demo-apps", "tkg.tanzu.vmware.com/tanzu-package": "pkg-demo-apps"}
    assert created.service_account(made)["metadata"] == {
        "name": "pkg-demo-apps-sa",
        "namespace": "apps",
        "annotations": owner,
    }
    assert created.cluster_role(made)["rules"] == [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]
    binding = created.cluster_role_binding(made)
    assert binding["roleRef"]["name"] == "pkg-demo-apps-cluster-role"
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "pkg-demo-apps-sa", "namespace": "apps"}]
    secret = created.secret(made.values_secret, made, {"values.yaml": b"a: 1\n"})
    assert secret["data"] == {"values.yaml": base64.b64encode(b"a: 1\n").decode()}
    assert created.owned_by(secret, made) and not created.owned_by(secret, InstallNames("other", "apps"))


def test_the_package_install_records_what_was_created_for_it() -> None:
    made = InstallNames("pkg-demo", "apps")
    kinds = [
        CreatedKind.CLUSTER_ROLE,
        CreatedKind.CLUSTER_ROLE_BINDING,
        CreatedKind.SERVICE_ACCOUNT,
        CreatedKind.SECRET,
    ]
    install = created.package_install(
        KAPPLY.install,
        made,
        "simple-app.corp.com",
        "1.0.0",
        made.service_account,
        made.values_secret,
        made.overlays_secret,
        kinds,
    )
    assert install["apiVersion"] == "packaging.kapply.dev/v1alpha1" and install["kind"] == "PackageInstall"
    assert install["spec"] == {
        "serviceAccountName": "pkg-demo-apps-sa",
        "packageRef": {
            "refName": "simple-app.corp.com",
            "versionSelection": {"constraints": "1.0.0", "prereleases": {}},
        },
        "values": [{"secretRef": {"name": "pkg-demo-apps-values"}}],
    }
    annotations = install["metadata"]["annotations"]
    assert annotations["ext.packaging.carvel.dev/ytt-paths-from-secret-name.kctrl-ytt-overlays"] == (
        "pkg-demo-apps-overlays"
    )
    assert annotations["packaging.carvel.dev/package-ServiceAccount"] == "pkg-demo-apps-sa"
    assert annotations["tkg.tanzu.vmware.com/tanzu-package-ClusterRoleBinding"] == "pkg-demo-apps-cluster-rolebinding"
    assert created.recorded(annotations) == [
        (CreatedKind.SERVICE_ACCOUNT, "pkg-demo-apps-sa"),
        (CreatedKind.CLUSTER_ROLE, "pkg-demo-apps-cluster-role"),
        (CreatedKind.CLUSTER_ROLE_BINDING, "pkg-demo-apps-cluster-rolebinding"),
        (CreatedKind.SECRET, "pkg-demo-apps-values"),
    ]
    assert created.recorded(created.without_recorded(annotations, CreatedKind.SECRET))[-1][0] is not CreatedKind.SECRET
    bare = created.package_install(CARVEL.install, made, "p.corp.com", ">= 0.0.0", "existing-sa", "", "", [])
    assert bare["apiVersion"] == "packaging.carvel.dev/v1alpha1"
    assert "annotations" not in bare["metadata"] and "values" not in bare["spec"]


def test_overlay_files_are_keyed_as_kctrl_keys_them(tmp_path: Path) -> None:
    (tmp_path / "one.yml").write_text("a")
    (tmp_path / "dir" / "sub").mkdir(parents=True)
    (tmp_path / "dir" / "b.yaml").write_text("b")
    (tmp_path / "dir" / "sub" / "c.yml").write_text("c")
    (tmp_path / "dir" / "notes.txt").write_text("skipped")
    found = read_overlays((str(tmp_path / "one.yml"), str(tmp_path / "dir")))
    assert found == {"0000-one.yml": b"a", "0001-b.yaml": b"b", "0001-sub_c.yml": b"c"}
    with pytest.raises(KapplyError, match=r"Expected ytt overlay file '.*notes.txt' to be a .yml or .yaml file"):
        read_overlays((str(tmp_path / "dir" / "notes.txt"),))
    with pytest.raises(KapplyError, match=r"^Reading ytt overlay file '.*missing.yml': No such file or directory"):
        read_overlays((str(tmp_path / "missing.yml"),))


def test_the_dry_run_shows_everything_install_would_create(tmp_path: Path) -> None:
    values = tmp_path / "values.yml"
    values.write_text("hello_msg: hi\n")
    request = Request("pkg-demo", "simple-app.corp.com", "1.0.0", str(values), True, (), True)
    documents = dry_run_documents(KAPPLY.install, request, read_files(request), InstallNames("pkg-demo", "apps"), "")
    assert [d["kind"] for d in documents] == [
        "ServiceAccount",
        "ClusterRole",
        "ClusterRoleBinding",
        "Secret",
        "PackageInstall",
    ]
    assert documents[3]["stringData"] == {"values.yaml": "hello_msg: hi\n"}
    existing = dry_run_documents(
        KAPPLY.install, request, read_files(request), InstallNames("pkg-demo", "apps"), "deployer"
    )
    assert [d["kind"] for d in existing] == ["Secret", "PackageInstall"]
    assert existing[-1]["spec"]["serviceAccountName"] == "deployer"


def test_install_creates_what_the_dry_run_shows_saying_what_it_creates_with_secrets_as_data(tmp_path: Path) -> None:
    values, overlay = tmp_path / "values.yml", tmp_path / "o.yml"
    values.write_text("hello_msg: hi\n")
    overlay.write_text("#@ load('@ytt:overlay', 'overlay')\n")
    request = Request("pkg-demo", "simple-app.corp.com", "1.0.0", str(values), True, (str(overlay),), True)
    names = InstallNames("pkg-demo", "apps")
    made = _to_create(CARVEL.install, request, read_files(request), names, "", as_text=False)
    assert [said for said, _ in made] == [
        "Creating service account 'pkg-demo-apps-sa'",
        "Creating cluster admin role 'pkg-demo-apps-cluster-role'",
        "Creating cluster role binding 'pkg-demo-apps-cluster-rolebinding'",
        "Creating secret 'pkg-demo-apps-values'",
        "Creating overlay secrets",
        "Creating package install resource",
    ]
    assert made[3][1]["data"] == {"values.yaml": base64.b64encode(b"hello_msg: hi\n").decode()}
    shown = dry_run_documents(CARVEL.install, request, read_files(request), names, "")
    # as kctrl prints them: Go's empty fields of its typed objects
    assert all(d["metadata"].pop("creationTimestamp") is None for d in shown)
    assert shown[-1].pop("status") == {"conditions": None, "friendlyDescription": "", "observedGeneration": 0}
    assert [{k: v for k, v in d.items() if k not in ("data", "stringData")} for d in shown] == [
        {k: v for k, v in d.items() if k not in ("data", "stringData")} for _, d in made
    ]


# --- available --------------------------------------------------------------------------------------------------------


def test_a_package_is_named_alone_or_with_its_version() -> None:
    assert split_name("simple-app.corp.com") == ("simple-app.corp.com", "")
    assert split_name("simple-app.corp.com/1.0.0") == ("simple-app.corp.com", "1.0.0")
    with pytest.raises(KapplyError, match="Package name should be of the format 'name' or 'name/version'"):
        split_name("a/b/c")


SCHEMA = {
    "title": "values",
    "properties": {
        "namespace": {"type": "string", "default": "fluent-bit", "description": "Namespace"},
        "deployment": {
            "type": "object",
            "properties": {
                "replicas": {"type": "integer", "default": 2, "description": "Replicas"},
                "args": {"type": "array", "description": "Arguments"},
            },
        },
        "tls": {"type": "object", "properties": {"cert": {"type": "string"}}},
        "extra": {"type": "object", "properties": {}, "description": "Anything"},
    },
}


def test_a_values_schema_is_listed_leaf_by_leaf() -> None:
    assert [(p.key, p.type, p.default, p.description) for p in schema_properties(SCHEMA)] == [
        ("deployment.args", "array", None, "Arguments"),
        ("deployment.replicas", "integer", 2, "Replicas"),
        ("extra", "object", None, "Anything"),
        ("namespace", "string", "fluent-bit", "Namespace"),
        ("tls.cert", "string", None, ""),
    ]


def test_the_default_values_file_has_the_defaults_commented_out() -> None:
    assert default_values(SCHEMA) == "# deployment:\n#   replicas: 2\n# namespace: fluent-bit\n"
    required = {
        "properties": {"tls": {"type": "object", "properties": {"cert": {"type": "string"}}}},
        "required": ["tls"],
    }
    assert default_values(required) == "# tls:\n"


# --- status tailing ---------------------------------------------------------------------------------------------------

SUCCEEDED = [{"type": "ReconcileSucceeded", "status": "True"}]


def stage(updated: str, started: str = "", **fields: object) -> dict[str, object]:
    return {"updatedAt": updated, **({"startedAt": started} if started else {}), "exitCode": 0, **fields}


def test_a_reconcile_is_told_stage_by_stage_as_kctrl_tails_it() -> None:
    new = {
        "conditions": SUCCEEDED,
        "fetch": stage("T01", "T01", stdout="lock"),
        "template": stage("T02"),
        "deploy": stage("T03", "T02", finished=True, stdout="Changes\nSucceeded"),
    }
    found = progress({}, new, "")
    assert found.lines == (
        LogLine("Fetch started", "T01"),
        LogLine("Fetching", "T01", "lock"),
        LogLine("Fetch succeeded", "T01"),
        LogLine("Template succeeded", "T02"),
        LogLine("Deploy started", "T02"),
        LogLine("Deploying", "T03", "Changes\nSucceeded"),
        LogLine("Deploy succeeded", "T03"),
    )
    assert found.deploy_output == "Changes\nSucceeded"
    assert progress(new, new, found.deploy_output).lines == (), "nothing new, nothing said"


def test_a_new_fetch_first_seen_ended_is_said_started_as_kctrl_watch_sees_it() -> None:
    old = {"conditions": SUCCEEDED, "fetch": stage("T01", "T00", stdout="old lock")}
    new = {"conditions": [{"type": "Reconciling", "status": "True"}], "fetch": stage("T11", "T10", stdout="lock")}
    assert progress(old, new, "").lines[:2] == (LogLine("Fetch started", "T10"), LogLine("Fetching", "T11", "lock"))


def test_a_growing_deploy_output_shows_only_its_new_lines_and_a_failed_stage_ends_the_tail() -> None:
    running = {"conditions": [{"type": "Reconciling", "status": "True"}], "deploy": stage("T1", "T0", stdout="a\nb")}
    grown = {**running, "deploy": stage("T2", "T0", stdout="a\nb\nc")}
    assert progress(running, grown, "a\nb").lines == (LogLine("", "T2", "c"),)
    failed = {
        "conditions": [{"type": "ReconcileFailed", "status": "True"}],
        "usefulErrorMessage": "ytt: Error",
        "template": stage("T3", exitCode=1, stderr="ytt: Error", error="exit 1"),
        "deploy": stage("T4", "T4"),
    }
    assert progress(running, failed, "").lines == (LogLine("Template failed", "T3", "ytt: Error\nexit 1"),)
    ended = {**running, "conditions": [{"type": "ReconcileFailed", "status": "True"}], "usefulErrorMessage": "bad"}
    assert progress(running, ended, "a\nb").lines == (LogLine("ReconcileFailed: bad", ""),)


def test_status_lines_carry_the_time_of_the_status_and_its_age() -> None:
    out = io.StringIO()
    now = datetime(2024, 1, 1, 12, 0, 30, tzinfo=UTC)
    ui.status_line(Output(tty=True, out=out), "Fetch succeeded", "2024-01-01T12:00:00Z", "line one\nline two", now)
    clock = ui.clock(datetime(2024, 1, 1, 12, 0, 0, tzinfo=UTC))
    assert out.getvalue() == f"{clock}: Fetch succeeded (30s ago)\n\t    | line one\n\t    | line two\n"
    assert [ui.short_duration(s) for s in (5, 61, 7200, 90000, 400 * 86400)] == ["5s", "1m", "2h", "1d", "1y"]


def test_kctrls_description_of_a_packaging_resource_names_the_groups_spoken() -> None:
    assert description(KAPPLY.install, "apps", "pkg-demo") == (
        "packageinstall/pkg-demo (packaging.kapply.dev/v1alpha1) namespace: apps"
    )
    assert description(CARVEL.install, "apps", "pkg-demo") == (
        "packageinstall/pkg-demo (packaging.carvel.dev/v1alpha1) namespace: apps"
    )


# --- tables -----------------------------------------------------------------------------------------------------------


def as_json(*tables: ui.Table) -> dict[str, object]:
    out = io.StringIO()
    output = Output(tty=False, as_json=True, out=out)
    for table in tables:
        output.table(table)
    output.finish()
    return json.loads(out.getvalue())


def repository(name: str, namespace: str, fetch: dict[str, object], description: str) -> dict[str, object]:
    return {
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"fetch": fetch},
        "status": {"friendlyDescription": description, "conditions": SUCCEEDED},
    }


def test_repositories_are_listed_with_kctrls_source_and_status_columns() -> None:
    repositories = [
        repository("tce", "b", {"imgpkgBundle": {"image": "reg/tce:0.9.1"}}, "Reconcile succeeded"),
        repository(
            "pinned",
            "a",
            {"imgpkgBundle": {"image": "reg/r", "tagSelection": {"semver": {"constraints": "1.x"}}}},
            "x" * 50,
        ),
        repository("git", "a", {"git": {"url": "https://h/r.git", "ref": "origin/main"}}, ""),
    ]
    table = ui.repositories_table(repositories, "Repositories in all namespaces", show_namespace=True)
    assert render(table) == (
        "Repositories in all namespaces\n\n"
        "Namespace  Name    Source                               Status  \n"
        "a          git     (git) https://h/r.git (origin/main)  -  \n"
        f"^          pinned  (imgpkg) reg/r (1.x)                 {'x' * 40}...  \n"
        "b          tce     (imgpkg) reg/tce:0.9.1               Reconcile succeeded  \n"
    )
    rows = as_json(ui.repositories_table(repositories, "t", show_namespace=False))["Tables"][0]["Rows"]  # type: ignore[index]
    assert rows[1] == {"name": "pinned", "source": "(imgpkg) reg/r (1.x)", "status": "x" * 40 + "..."}
    assert set(rows[0]) == {"name", "source", "status"}, "Namespace hidden without -A"
    get = as_json(ui.repository_table(repositories[2]))["Tables"][0]["Rows"][0]  # type: ignore[index]
    assert set(get) == {"namespace", "name", "source", "status", "conditions", "useful_error_message"}
    assert get["conditions"] == '- type: ReconcileSucceeded\n  status: "True"\n  reason: ""\n  message: ""'


def install(name: str, **status: object) -> dict[str, object]:
    return {
        "metadata": {"name": name, "namespace": "apps"},
        "spec": {"packageRef": {"refName": "simple-app.corp.com"}},
        "status": status,
    }


def test_installs_are_listed_with_kctrls_status_words() -> None:
    installs = [
        install("b", version="1.0.0", conditions=SUCCEEDED),
        install("a", version="2.0.0", conditions=[{"type": "ReconcileFailed", "status": "True", "message": "m" * 60}]),
        {**install("c", conditions=SUCCEEDED), "spec": {"paused": True, "packageRef": {"refName": "x"}}},
        install("d", friendlyDescription="Deleting"),
    ]
    assert [ui.install_status(i) for i in installs] == ["Reconcile succeeded", "Reconcile failed", "Paused", "Deleting"]
    table = ui.installs_table(installs, "Installed packages in namespace 'apps'", show_namespace=False, wide=False)
    assert render(table).splitlines()[:4] == [
        "Installed packages in namespace 'apps'",
        "",
        "Name  Package Name         Package Version  Status  ",
        "a     simple-app.corp.com  2.0.0            Reconcile failed  ",
    ]
    rows = as_json(ui.installs_table(installs, "t", show_namespace=False, wide=True))["Tables"][0]["Rows"]  # type: ignore[index]
    assert rows[0] == {
        "name": "a",
        "package_name": "simple-app.corp.com",
        "package_version": "2.0.0",
        "status": "Reconcile failed",
        "message": "m" * 50 + "...",
    }
    get = as_json(ui.install_table(installs[1], ["pkg-demo-apps-overlays"]))["Tables"][0]["Rows"][0]  # type: ignore[index]
    assert set(get) == {
        "namespace",
        "name",
        "package_name",
        "package_version",
        "status",
        "overlay_secrets",
        "conditions",
    }


def test_available_packages_are_sorted_by_version_and_released_at_is_gos_time() -> None:
    packages = [
        {"metadata": {"namespace": "a"}, "spec": {"refName": "p.corp.com", "version": v, "releasedAt": r}}
        for v, r in (("1.10.0", ""), ("1.2.0", "2021-10-05T05:30:00+05:30"), ("1.2.0-rc.1", "2021-10-05T00:00:00Z"))
    ]
    rows = as_json(ui.packages_table(packages, "t", show_namespace=False))["Tables"][0]["Rows"]  # type: ignore[index]
    assert rows == [
        {"name": "p.corp.com", "version": "1.2.0-rc.1", "released_at": "2021-10-05 00:00:00 +0000 UTC"},
        {"name": "p.corp.com", "version": "1.2.0", "released_at": "2021-10-05 05:30:00 +0530 +0530"},
        {"name": "p.corp.com", "version": "1.10.0", "released_at": "-"},
    ]
    metadata = {"metadata": {"name": "p.corp.com"}, "spec": {"displayName": "P", "shortDescription": "short"}}
    narrow = as_json(ui.package_metadatas_table([metadata], "t", show_namespace=False, wide=False))
    assert narrow["Tables"][0]["Rows"] == [{"name": "p.corp.com", "display_name": "P"}]  # type: ignore[index]
    wide = as_json(ui.package_metadatas_table([metadata], "t", show_namespace=True, wide=True))
    assert set(wide["Tables"][0]["Rows"][0]) == {"namespace", "name", "display_name", "short_description"}  # type: ignore[index]


def test_ghost_diffs_are_shown_with_their_writer_and_syncs() -> None:
    now = datetime(2024, 1, 1, 12, 1, 0, tzinfo=UTC)
    diff = {
        "resource": "deployment/simple-app (apps/v1) namespace: apps",
        "path": "spec.replicas",
        "desired": "2",
        "live": "1",
        "writtenBy": "kubectl (Update, scale)",
        "recurrences": 3,
        "firstSeen": "2024-01-01T12:00:00Z",
        "lastSeen": "2024-01-01T12:00:50Z",
    }
    row = as_json(ui.ghost_diffs_table([diff], now))["Tables"][0]["Rows"][0]  # type: ignore[index]
    assert row == {
        "resource": diff["resource"],
        "field": "spec.replicas",
        "desired": "2",
        "live": "1",
        "written_by": "kubectl (Update, scale)",
        "syncs": "3",
        "first_seen": "1m",
        "last_seen": "10s",
    }
    resolved = {k: v for k, v in diff.items() if k != "live"}  # not seen at the last sync: no stale live value
    row = as_json(ui.ghost_diffs_table([resolved], now))["Tables"][0]["Rows"][0]  # type: ignore[index]
    assert row["live"] == "not seen since 2024-01-01T12:00:50Z"


class Forbidden:
    """A cluster holding `objects` (Packages and Namespaces) that refuses to list the Packages of the namespaces in
    `unlisted` and to read the Namespaces in `unread`."""

    def __init__(self, objects: list[dict[str, Any]], unlisted: set[str], unread: set[str]) -> None:
        self.objects, self.unlisted, self.unread = objects, unlisted, unread

    async def list(self, rtype: object, namespace: str | None = None) -> list[dict[str, Any]]:
        if namespace in self.unlisted:
            raise ClusterError("forbidden", status=403)
        return [o for o in self.objects if o["kind"] == "Package" and o["metadata"]["namespace"] == namespace]

    async def get(self, rtype: object, namespace: str | None, name: str) -> dict[str, Any] | None:
        if name in self.unread:
            raise ClusterError("forbidden", status=403)
        return next((o for o in self.objects if o["kind"] == "Namespace" and o["metadata"]["name"] == name), None)


CM = "cm.test.carvel.dev"
GLOBAL = names.DEFAULT_GLOBAL_NAMESPACE


def pkg(namespace: str, version: str, note: str) -> dict[str, Any]:
    name = names.package_name(CM, version)
    return {"kind": "Package", "metadata": {"name": name, "namespace": namespace, "labels": {"note": note}}}


@pytest.mark.parametrize(
    ("annotations", "unlisted", "unread", "expected"),
    [
        ({}, set(), set(), {"1.0.0": "own", "2.0.0": "global"}),  # the namespace's own wins over the global one
        ({"kapp-controller.carvel.dev/exclude-global-packages": ""}, set(), set(), {"1.0.0": "own"}),
        ({}, {GLOBAL}, set(), {"1.0.0": "own"}),  # may not read the global namespace: its own
        ({}, set(), {"apps"}, {"1.0.0": "own", "2.0.0": "global"}),  # may not read the Namespace: not excluded
    ],
)
def test_a_namespace_sees_its_packages_and_the_global_namespaces(
    annotations: dict[str, str], unlisted: set[str], unread: set[str], expected: dict[str, str]
) -> None:
    objects = [
        {"kind": "Namespace", "metadata": {"name": "apps", "annotations": annotations}},
        pkg("apps", "1.0.0", "own"),
        pkg(GLOBAL, "1.0.0", "global"),
        pkg(GLOBAL, "2.0.0", "global"),
    ]
    api = SimpleNamespace(cluster=Forbidden(objects, unlisted, unread))
    found = asyncio.run(visible(api, KAPPLY.package.rtype, "apps", GLOBAL))  # type: ignore[arg-type]
    assert {p["metadata"]["name"].removeprefix(f"{CM}."): p["metadata"]["labels"]["note"] for p in found} == expected
