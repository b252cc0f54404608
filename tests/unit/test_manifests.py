"""Reading manifests: files, directories, stdin and dicts, into documents named by where they came from."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from kapply.errors import ManifestError
from kapply.resources import manifests

CM = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n"


def test_a_directory_is_walked_in_sorted_order_reading_only_yaml_and_json(tmp_path: Path):
    (tmp_path / "b.yml").write_text(CM.format(name="b"))
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "a.yaml").write_text(CM.format(name="sub-a"))
    (tmp_path / "c.json").write_text('{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}')
    (tmp_path / "notes.txt").write_text("not a manifest")
    docs = manifests.read([str(tmp_path)])
    assert [d.obj["metadata"]["name"] for d in docs] == ["b", "c", "sub-a"]
    assert docs[0].origin == f"file '{tmp_path / 'b.yml'}' doc 1"


def test_multi_document_files_skip_empty_documents_and_number_the_others(tmp_path: Path):
    path = tmp_path / "all.yml"
    path.write_text("---\n" + CM.format(name="one") + "---\n---\n# only a comment\n---\n" + CM.format(name="two"))
    docs = manifests.read([str(path)])
    assert [(d.obj["metadata"]["name"], d.origin.rsplit(" ", 2)[-1]) for d in docs] == [("one", "1"), ("two", "4")]


def test_a_list_is_expanded_into_its_items():
    text = "apiVersion: v1\nkind: List\nitems:\n- " + CM.format(name="x").replace("\n", "\n  ").rstrip() + "\n"
    docs = manifests.read(["-"], io.StringIO(text))
    assert [(d.obj["metadata"]["name"], d.origin) for d in docs] == [("x", "stdin doc 1 item 0")]


def test_yaml_is_read_as_kapp_reads_it_into_json_types():
    docs = manifests.read(["-"], io.StringIO("kind: ConfigMap\ndata:\n  on: yes\n  when: 2024-01-01\n  2: two\n"))
    assert docs[0].obj["data"] == {"true": True, "when": "2024-01-01", "2": "two"}


def test_dicts_are_resources_too_copied_and_named_by_position():
    given = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "data": {"a": "1"}}
    docs = manifests.from_objects([given])
    assert docs[0].obj == given and docs[0].obj is not given and docs[0].origin == "resource 1"
    docs[0].obj["data"]["a"] = "changed"
    assert given["data"]["a"] == "1"


@pytest.mark.parametrize(
    ("resources", "message"),
    [
        (["not a mapping"], r"Reading resource 1: expected a resource \(a mapping\), got str"),
        ([{"kind": "ConfigMap"}, {"data": {1j: "x"}}], "resource 2: not representable as JSON"),
    ],
)
def test_dicts_that_are_not_resources_are_refused_naming_them(resources, message):
    with pytest.raises(ManifestError, match=message):
        manifests.from_objects(resources)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("kind: [unclosed", "Parsing stdin: .* at line 2, column 1"),
        ("- just\n- a list\n", "Parsing stdin doc 1: expected a resource \\(a YAML mapping\\), got list"),
        ("kind: List\nitems:\n- 3\n", "Parsing stdin doc 1 item 0: expected a resource"),
    ],
)
def test_bad_yaml_is_one_clear_error_naming_where(text, message):
    with pytest.raises(ManifestError, match=message):
        manifests.read(["-"], io.StringIO(text))


def test_a_missing_path_and_no_path_at_all_are_errors(tmp_path: Path):
    with pytest.raises(ManifestError, match="no such file or directory"):
        manifests.read([str(tmp_path / "missing.yml")])
    with pytest.raises(ManifestError, match="Expected at least one --file"):
        manifests.read([])
