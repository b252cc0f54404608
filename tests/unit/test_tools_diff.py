"""`kapply tools diff`: two sets of manifests compared locally, no cluster."""

import subprocess
import sys


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "kapply", "tools", "diff", *args], capture_output=True, text=True, timeout=30
    )


OLD = """apiVersion: v1
kind: ConfigMap
metadata:
  name: cm1
  namespace: ns1
data:
  a: "1"
  b: "2"
  c: "3"
  d: "4"
  e: "5"
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: gone
"""

NEW = (
    OLD.replace('c: "3"', "c: 3x").split("---")[0]
    + """---
apiVersion: v1
kind: Secret
metadata:
  name: new
  namespace: ns2
stringData:
  password: hunter2
"""
)


def test_local_diff_shows_kapps_line_diff_and_summary(tmp_path):
    (tmp_path / "old.yml").write_text(OLD)
    (tmp_path / "new.yml").write_text(NEW)
    result = run("-f", str(tmp_path / "new.yml"), "--file2", str(tmp_path / "old.yml"), "-c", "--tty")
    assert result.returncode == 0, result.stderr
    assert (
        '@@ update configmap/cm1 (v1) namespace: ns1 @@\n  ...\n  3,  3     b: "2"\n'
        '  4     -   c: "3"\n      4 +   c: 3x\n  5,  5     d: "4"\n  6,  6     e: "5"\n' in result.stdout
    )
    assert "@@ delete configmap/gone (v1) cluster @@" in result.stdout
    assert "@@ create secret/new (v1) namespace: ns2 @@" in result.stdout
    assert "hunter2" not in result.stdout and "<-- value not shown (#1)" in result.stdout
    assert "Op:      1 create, 1 delete, 1 update, 0 noop, 0 exists" in result.stdout


def test_local_diff_shows_secret_values_only_when_asked(tmp_path):
    (tmp_path / "old.yml").write_text(OLD)
    (tmp_path / "new.yml").write_text(NEW)
    result = run("-f", str(tmp_path / "new.yml"), "--file2", str(tmp_path / "old.yml"), "-c", "--mask=false")
    assert "password: hunter2" in result.stdout
