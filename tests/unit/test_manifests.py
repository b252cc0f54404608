"""Reading manifests: files, directories, stdin and dicts, into documents named by where they came from."""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
import threading
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
    assert docs[0].origin == "file 'b.yml' doc 1"  # named within the directory, as kapp names it
    assert docs[2].origin == "file 'sub/a.yaml' doc 1"


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


def test_documents_are_read_as_kapp_reads_them_so_true_and_1_stay_two_keys_and_a_bare_equals_is_a_string():
    docs = manifests.read(["-"], io.StringIO(CM.format(name="x") + "data:\n  on: a\n  1: b\n  op: =\n"))
    assert docs[0].obj["data"] == {"true": "a", "1": "b", "op": "="}


# Anything that cannot be read stops the whole read with an error naming the path: a file skipped silently would have
# its resources deleted from the cluster as no longer part of the app.


def app_dir(tmp_path: Path) -> Path:
    tmp_path.mkdir(exist_ok=True)
    for name in ("a", "b", "c"):
        (tmp_path / f"{name}.yml").write_text(CM.format(name=name))
    return tmp_path


def test_a_dangling_symlink_with_a_manifest_suffix_is_an_error_naming_it(tmp_path: Path):
    root = app_dir(tmp_path)
    (root / "b.yml").unlink()
    (root / "b.yml").symlink_to(root / "gone.yml")
    with pytest.raises(
        ManifestError, match=f"^Reading file '{root / 'b.yml'}': it is a symlink to '.*gone.yml', which"
    ):
        manifests.read([str(root)])


def test_a_symlink_loop_is_an_error_naming_it(tmp_path: Path):
    root = app_dir(tmp_path)
    (root / "b.yml").unlink()
    (root / "b.yml").symlink_to(root / "b.yml")
    with pytest.raises(ManifestError, match=f"^Reading file '{root / 'b.yml'}': too many levels of symbolic links"):
        manifests.read([str(root)])


def test_a_fifo_in_a_directory_is_refused_without_blocking(tmp_path: Path):
    root = app_dir(tmp_path)
    (root / "b.yml").unlink()
    os.mkfifo(root / "b.yml")
    with pytest.raises(ManifestError, match=f"^Reading file '{root / 'b.yml'}': it is a FIFO, not a regular file$"):
        manifests.read([str(root)])


def test_a_symlink_to_a_directory_with_a_manifest_suffix_is_refused(tmp_path: Path):
    root = app_dir(tmp_path / "app")
    (tmp_path / "elsewhere").mkdir()
    (root / "d.yml").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(ManifestError, match="d.yml': is a directory$"):
        manifests.read([str(root)])


def test_a_named_pipe_given_by_name_is_read_as_process_substitution_gives_one(tmp_path: Path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    writer = threading.Thread(target=lambda: fifo.write_text(CM.format(name="piped")))
    writer.start()
    docs = manifests.read([str(fifo)])
    writer.join()
    assert [d.obj["metadata"]["name"] for d in docs] == ["piped"]


def test_invalid_utf8_in_a_file_is_an_error_naming_it(tmp_path: Path):
    root = app_dir(tmp_path)
    (root / "b.yml").write_bytes(CM.format(name="b").encode() + b"data:\n  k: \xff\xfe\n")
    with pytest.raises(ManifestError, match=f"^Parsing file '{root / 'b.yml'}': invalid leading UTF-8 octet at byte"):
        manifests.read([str(root)])


def test_invalid_utf8_on_stdin_is_an_error_whether_stdin_gives_bytes_or_text():
    raw = CM.format(name="x").encode() + b"data:\n  k: \xff\n"
    with pytest.raises(ManifestError, match="^Parsing stdin: invalid leading UTF-8 octet at byte 62$"):
        manifests.read(["-"], io.TextIOWrapper(io.BytesIO(raw)))
    as_text = raw.decode("utf-8", errors="surrogateescape")  # what Python's stdin gives in a C locale
    with pytest.raises(ManifestError, match="^Parsing stdin: not valid UTF-8 \\(character 62 is a lone surrogate\\)$"):
        manifests.read(["-"], io.StringIO(as_text))


AS_ROOT = os.geteuid() == 0
USER_NAMESPACES = shutil.which("unshare") is not None and subprocess.run(["unshare", "-U", "true"]).returncode == 0


def _read_error(path: Path) -> str:
    """The ManifestError reading `path` gives. Root reads files whatever their mode, so as root it is read in a user
    namespace (`unshare -U`), where root keeps no override over the host's files."""
    script = (
        "import sys\nfrom kapply.errors import ManifestError\nfrom kapply.resources import manifests\n"
        "try:\n    manifests.read([sys.argv[1]])\nexcept ManifestError as e:\n    print(e)\n"
    )
    command = [*(["unshare", "-U"] if AS_ROOT else []), sys.executable, "-c", script, str(path)]
    return subprocess.run(command, capture_output=True, text=True, check=True).stdout.strip()


@pytest.mark.skipif(AS_ROOT and not USER_NAMESPACES, reason="as root, only a user namespace makes chmod 000 count")
def test_unreadable_files_and_directories_are_errors_naming_them(tmp_path: Path):
    root = app_dir(tmp_path)
    (root / "b.yml").chmod(0)
    assert _read_error(root) == f"Reading file '{root / 'b.yml'}': permission denied"
    (root / "b.yml").chmod(0o644)
    (root / "sub").mkdir()
    (root / "sub").chmod(0)
    try:
        assert _read_error(root) == f"Listing files '{root / 'sub'}': permission denied"
    finally:
        (root / "sub").chmod(0o755)


def test_files_are_found_as_kapp_finds_them_by_suffix_from_the_last_dot_in_sorted_path_order(tmp_path: Path):
    (tmp_path / ".yml").write_text(CM.format(name="hidden"))  # Go's filepath.Ext(".yml") is ".yml"
    (tmp_path / "a-b.yml").write_text(CM.format(name="a-b"))
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "x.yml").write_text(CM.format(name="a/x"))
    (tmp_path / "notes.yml.txt").write_text("not a manifest: [")
    assert [d.obj["metadata"]["name"] for d in manifests.read([str(tmp_path)])] == ["hidden", "a-b", "a/x"]


def test_dicts_nested_deeper_than_yaml_may_nest_are_refused(tmp_path: Path):
    deep: object = "x"
    for _ in range(98):
        deep = {"k": deep}
    resource = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "data": deep}
    assert manifests.from_objects([resource])[0].obj == resource  # 99 levels
    with pytest.raises(ManifestError, match="^Reading resource 2: nesting deeper than 100 levels$"):
        manifests.from_objects([resource, {**resource, "data": [[deep]]}])
    cycle: dict[str, object] = {"apiVersion": "v1", "kind": "ConfigMap"}
    cycle["self"] = cycle
    with pytest.raises(ManifestError, match="^Reading resource 1: nesting deeper than 100 levels$"):
        manifests.from_objects([cycle])
