"""`tools diff` (no cluster involved beyond the harness's namespaces): the table lists every resource, unchanged ones
as noop, with kapp's `???` op strategy."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.compat.harness import Harness

pytestmark = pytest.mark.compat

A = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: x}\ndata: {k: v}\n"
B = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b, namespace: x}\ndata: {k: v}\n"


@pytest.mark.parametrize("mode", [(), ("--tty",), ("--json",), ("-c", "--tty")])
@pytest.mark.parametrize("new", [A, A.replace("k: v", "k: w") + "---\n" + B])
def test_tools_diff_lists_every_resource_as_kapp(both: Harness, tmp_path: Path, mode: tuple[str, ...], new: str):
    (tmp_path / "new.yml").write_text(new)
    (tmp_path / "old.yml").write_text(A)
    pair = both.run("tools", "diff", "-f", str(tmp_path / "new.yml"), "--file2", str(tmp_path / "old.yml"), *mode)
    if "--json" in mode:
        both.same_json(pair)
    else:
        both.same(pair)
