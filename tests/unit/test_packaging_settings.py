"""`kapply controller`'s packaging flags: on by default, the install default sync period, the global namespace."""

from __future__ import annotations

import subprocess
import sys

from kapply.packaging.settings import PackagingSettings, from_flags


def test_the_flags_give_the_settings() -> None:
    assert from_flags(True, 600.0, "kapply-packaging-global") == PackagingSettings(600.0, "kapply-packaging-global")
    assert from_flags(True, 5.0, "g") == PackagingSettings(30.0, "g"), "raised to 30 s, as kapp-controller"
    assert from_flags(False, 600.0, "g") is None


def test_the_controller_command_has_the_packaging_flags_with_their_defaults() -> None:
    run = [sys.executable, "-m", "kapply", "controller", "--help"]
    shown = subprocess.run(run, capture_output=True, text=True, timeout=30, check=True).stdout
    line = next(x for x in shown.splitlines() if "--packaging " in x)
    assert "(default true)" in line, line
    line = next(x for x in shown.splitlines() if "--package-install-default-sync-period" in x)
    assert "10m" in line
    line = next(x for x in shown.splitlines() if "--packaging-global-namespace" in x)
    assert "(default: kapply-packaging-global; kapp-controller-packaging-global with --api-groups carvel)" in line
    line = next(x for x in shown.splitlines() if "--api-groups" in x)
    assert '(default "kapply")' in line, line
