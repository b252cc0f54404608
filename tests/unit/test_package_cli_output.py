"""What scripts read from `kapply package` as they read it from kctrl (issue 31, differences 5 to 7): `--column`
naming a hidden column and kctrl's error for unknown ones, a values schema without properties, the `--json` cells
kctrl writes as Go values (conditions, an unset release time, overlay Secrets), and the lines of deleting what an
install created."""

from __future__ import annotations

import asyncio
import io
import json
from pathlib import Path
from typing import Any

import pytest

from kapply.cli.package.available import _save_default_values
from kapply.cli.package.created import OVERLAYS_ANNOTATION, CreatedKind, InstallNames, recorded_keys
from kapply.cli.package.installed import _delete_created
from kapply.cli.package.schema import check_properties, schema_properties
from kapply.errors import KapplyError
from kapply.ui import packages as ui
from kapply.ui.output import Output
from kapply.ui.table import Column, Table


def shown(*tables: Table, columns: tuple[str, ...] = (), as_json: bool = True) -> Any:
    out = io.StringIO()
    output = Output(tty=not as_json, as_json=as_json, columns=columns, out=out)
    for table in tables:
        output.table(table)
    output.finish()
    return json.loads(out.getvalue()) if as_json else out.getvalue()


METADATA = {"metadata": {"name": "p.corp.com", "namespace": "apps"}, "spec": {"displayName": "P"}}
PACKAGE = {"metadata": {"name": "p.corp.com.1.0.0", "namespace": "apps"}, "spec": {"refName": "p.corp.com"}}


# --- 5. `--column` ----------------------------------------------------------------------------------------------------


def test_column_can_name_a_column_kctrl_hides() -> None:
    table = ui.package_metadatas_table([METADATA], "t", show_namespace=False, wide=False)
    assert shown(table)["Tables"][0]["Rows"] == [{"name": "p.corp.com", "display_name": "P"}], "hidden by default"
    rows = shown(table, columns=("name", "namespace"))["Tables"][0]["Rows"]
    assert rows == [{"name": "p.corp.com", "namespace": "apps"}]
    text = shown(table, columns=("Namespace",), as_json=False)
    assert text.splitlines()[2:4] == ["Namespace  ", "apps  "]


def test_a_hidden_first_column_takes_the_repeat_mark() -> None:
    versions = [{**PACKAGE, "spec": {"refName": "p.corp.com", "version": v}} for v in ("1.0.0", "2.0.0")]
    table = ui.packages_table(versions, "t", show_namespace=False)
    assert shown(table, as_json=False).splitlines()[3:5] == ["p.corp.com  1.0.0    -  ", "p.corp.com  2.0.0    -  "]
    every = ui.packages_table(versions, "t", show_namespace=True)
    assert shown(every, as_json=False).splitlines()[4].split() == ["^", "p.corp.com", "2.0.0", "-"], "namespace repeats"


def test_unknown_columns_are_all_named_in_the_order_given_as_kctrl_names_them() -> None:
    listing = ui.package_metadatas_table([METADATA], "t", show_namespace=False, wide=False)
    with pytest.raises(KapplyError, match=r"^invalid column names: invalid,ns$"):
        shown(listing, columns=("name", "invalid", "namespace", "ns"))
    details = ui.package_table("p.corp.com", METADATA, None)
    with pytest.raises(KapplyError, match=r"^invalid column names: invalid,namespace,ns$"):
        shown(details, columns=("name", "invalid", "namespace", "ns"))


def test_kapps_tables_keep_kapps_error() -> None:
    table = Table("t", (Column("Name"), Column("Age")), (("a", "1s"),))
    with pytest.raises(KapplyError, match="^Failed to find header: nope"):
        shown(table, columns=("nope",))


def test_a_first_column_left_out_by_column_takes_the_repeat_mark_in_kapps_tables_too() -> None:
    apps = Table("Apps", (Column("Namespace"), Column("Name")), (("a", "same"), ("b", "same")))
    assert shown(apps, columns=("name",), as_json=False).splitlines()[2:5] == ["Name  ", "same  ", "same  "], "kapp ls"


# --- 6. a values schema without properties ----------------------------------------------------------------------------


HINT = (
    "unable to parse the value schema, the value of key named 'properties' has unsupported type <nil>. Expected "
    "types are: [map[string]interface{}, json.RawMessage] (hint: the valuesSchema might not have any properties)"
)


@pytest.mark.parametrize("schema", [{"title": "Empty values schema"}, {}, {"type": "object"}])
def test_a_schema_without_properties_is_refused_with_kctrls_hint(schema: dict[str, Any]) -> None:
    with pytest.raises(KapplyError) as refused:
        check_properties(schema)
    assert str(refused.value) == HINT


def test_properties_that_are_no_object_fail_as_kctrls_decoder_fails() -> None:
    with pytest.raises(KapplyError, match=r"^json: cannot unmarshal array into Go value of type map\[string\]"):
        check_properties({"properties": ["a"]})


@pytest.mark.parametrize("properties", [{}, None])
def test_empty_properties_at_the_root_are_one_empty_property(properties: dict[str, Any] | None) -> None:
    schema = {"type": "object", "description": "Nothing", "properties": properties}
    check_properties(schema)
    assert [(p.key, p.type, p.default, p.description) for p in schema_properties(schema)] == [("", "", None, "")]


NO_VALUES = "Package 'p.corp.com/1.0.0' does not have any user configurable values in the 'apps' namespace"


@pytest.mark.parametrize("schema", [{"title": "Empty values schema"}, {"properties": {}}, None])
def test_a_defaults_file_of_a_schema_without_properties_is_not_written(
    schema: dict[str, Any] | None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path, out = tmp_path / "defaults.yml", io.StringIO()
    output = Output(tty=True, out=out)
    output.line("Target cluster 'x'")
    _save_default_values(output, str(path), schema, NO_VALUES)
    output.table(ui.versions_table([PACKAGE]))
    assert capsys.readouterr().err == f"Default values file output: {NO_VALUES}\n", "kctrl's ErrorLinef"
    assert out.getvalue().startswith("Target cluster 'x'\n\n\nVersion"), "a blank line before each"
    assert not path.exists()
    document = io.StringIO()
    as_json = Output(tty=False, as_json=True, out=document)
    _save_default_values(as_json, str(path), schema, NO_VALUES)
    as_json.finish()
    assert json.loads(document.getvalue())["Lines"] == [f"Default values file output: {NO_VALUES}", "Succeeded"]


def test_a_defaults_file_is_written_when_the_schema_has_properties(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path, out = tmp_path / "defaults.yml", io.StringIO()
    output = Output(tty=True, out=out)
    _save_default_values(output, str(path), {"properties": {"a": {"type": "string"}}}, NO_VALUES)
    assert path.read_text() == "# {}\n", "no defaults: kctrl's empty document"
    _save_default_values(output, str(path), {"properties": {"port": {"type": "integer", "default": 80}}}, NO_VALUES)
    assert path.read_text() == "# port: 80\n"
    assert out.getvalue().endswith(f"\nCreated default values file at {path}\n")
    _save_default_values(output, str(tmp_path / "missing" / "d.yml"), {"properties": {"a": {}}}, NO_VALUES)
    assert capsys.readouterr().err.startswith("Default values file output: Writing default values to "), "exit 0"


# --- 7. cells kctrl writes as Go values -------------------------------------------------------------------------------


def test_conditions_keep_kctrls_field_order_and_empty_fields() -> None:
    conditions = [
        {"status": "True", "type": "ReconcileFailed", "message": "first line\nsecond", "lastTransitionTime": "t"},
        {"type": "Reconciling", "status": "False", "reason": "Waiting"},
    ]
    assert ui.conditions_text(conditions) == (
        "- type: ReconcileFailed\n"
        '  status: "True"\n'
        '  reason: ""\n'
        "  message: |-\n"
        "    first line\n"
        "    second\n"
        "- type: Reconciling\n"
        '  status: "False"\n'
        "  reason: Waiting\n"
        '  message: ""'
    )
    assert ui.conditions_text([]) == ui.conditions_text(None) == ""


def test_an_unset_release_time_is_a_dash_in_json() -> None:
    packages = ui.packages_table([PACKAGE], "t", show_namespace=False)
    versions = ui.versions_table([PACKAGE])
    details = ui.package_table("p.corp.com", None, PACKAGE)
    tables = shown(packages, versions, details)["Tables"]
    assert [t["Rows"][0]["released_at"] for t in tables] == ["-", "-", "-"]


def test_an_installs_overlay_secrets_are_a_yaml_list_and_an_empty_error_is_hidden() -> None:
    install = {
        "metadata": {"name": "i", "namespace": "apps"},
        "spec": {"packageRef": {"refName": "p.corp.com"}},
        "status": {"conditions": [{"type": "ReconcileSucceeded", "status": "True"}]},
    }
    row = shown(ui.install_table(install, ["i-apps-overlays"]))["Tables"][0]["Rows"][0]
    assert row["overlay_secrets"] == "- i-apps-overlays"
    assert row["conditions"] == '- type: ReconcileSucceeded\n  status: "True"\n  reason: ""\n  message: ""'
    assert "useful_error_message" not in row
    bare = shown(ui.install_table(install, []), columns=("name", "overlay_secrets"))["Tables"][0]["Rows"][0]
    assert bare == {"name": "i", "overlay_secrets": ""}, "hidden, shown when named"
    failed = {**install, "status": {"usefulErrorMessage": "boom"}}
    table = ui.install_table(failed, [])
    assert shown(table)["Tables"][0]["Rows"][0]["useful_error_message"] == "boom"
    assert "Useful Error Message  boom" in shown(table, as_json=False)


class Cluster:
    """Holds `objects` by (plural, name); records deletions."""

    def __init__(self, objects: dict[tuple[str, str], dict[str, Any]]) -> None:
        self.objects, self.deleted = objects, list[str]()

    async def get(self, rtype: Any, namespace: str | None, name: str) -> dict[str, Any] | None:
        return self.objects.get((rtype.plural, name))

    async def delete(self, rtype: Any, namespace: str | None, name: str) -> None:
        self.deleted.append(f"{rtype.plural}/{name}")


class Api:
    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster


NAMES = InstallNames("i", "apps")
OWNED = {"metadata": {"annotations": {"packaging.carvel.dev/package": "i-apps"}}}


def deleting(install: dict[str, Any] | None, objects: dict[tuple[str, str], dict[str, Any]]) -> tuple[str, Cluster]:
    cluster, out = Cluster(objects), io.StringIO()
    output = Output(tty=True, out=out)
    asyncio.run(_delete_created(Api(cluster), NAMES, install, output))  # type: ignore[arg-type]
    return out.getvalue(), cluster


def test_leftovers_of_an_install_that_is_gone_are_named_by_resource_type() -> None:
    text, cluster = deleting(
        None,
        {
            ("secrets", "i-apps-overlays"): OWNED,
            ("serviceaccounts", "i-apps-sa"): OWNED,
            ("clusterroles", "i-apps-cluster-role"): {"metadata": {}},  # not the install's: kept
        },
    )
    assert text == "Deleting 'serviceaccounts': i-apps-sa\n\nDeleting 'secrets': i-apps-overlays\n"
    assert cluster.deleted == ["serviceaccounts/i-apps-sa", "secrets/i-apps-overlays"]


def test_what_an_install_recorded_is_deleted_by_kind_and_its_overlays_quietly() -> None:
    annotations = {
        recorded_keys(CreatedKind.SECRET)[0]: "i-apps-values",
        OVERLAYS_ANNOTATION: "i-apps-overlays",
    }
    install = {"metadata": {"name": "i", "namespace": "apps", "annotations": annotations}}
    text, cluster = deleting(install, {("secrets", "i-apps-overlays"): OWNED})
    assert text.endswith(": Deleting 'Secret': i-apps-values\n") and text.count("Deleting") == 1, text
    assert cluster.deleted == ["secrets/i-apps-values", "secrets/i-apps-overlays"]
