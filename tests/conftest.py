import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def cluster_script() -> ModuleType:
    """hack/cluster.py, which builds and runs the local control plane (not part of the package)."""
    spec = importlib.util.spec_from_file_location("kapply_cluster", REPO / "hack" / "cluster.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up here
    spec.loader.exec_module(module)
    return module
