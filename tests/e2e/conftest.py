"""Harness for tests that talk to the real local control plane.

One cluster per test run (session fixture), one namespace per test. The cluster
is the one `hack/cluster.py` builds and starts, or whatever `$KUBECONFIG` names
(then `$KAPPLY_RESTRICTED_KUBECONFIG` may name the restricted user's kubeconfig).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from lightkube import Client
from lightkube.core.exceptions import ApiError
from lightkube.resources.core_v1 import Namespace

from tests.e2e.harness import Cluster, KapplyRunner, KappRun, real_kapp
from tests.e2e.packaging_harness import install_crds


@contextmanager
def _fresh_namespace(kube: Client, named_after: str) -> Iterator[str]:
    """A namespace named after `named_after` (its first 40 characters), deleted afterwards (without waiting)."""
    slug = re.sub(r"[^a-z0-9]+", "-", named_after.lower())[:40].strip("-")
    name = f"t-{slug}-{uuid.uuid4().hex[:5]}"
    kube.create(Namespace.from_dict({"metadata": {"name": name}}))
    yield name
    try:
        kube.delete(Namespace, name)
    except ApiError as e:
        if e.status.code != 404:
            raise


@pytest.fixture
def namespace(kube: Client, request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh namespace for one test."""
    with _fresh_namespace(kube, request.node.name) as name:
        yield name


@pytest.fixture(scope="module")
def module_namespace(kube: Client, request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh namespace for one module, named after it."""
    with _fresh_namespace(kube, request.module.__name__.rsplit(".", 1)[-1].removeprefix("test_")) as name:
        yield name


@pytest.fixture
def kapply(cluster: Cluster) -> KapplyRunner:
    """The kapply CLI, run as a subprocess against the test cluster."""
    return KapplyRunner(cluster.kubeconfig)


@pytest.fixture
def kapp(cluster: Cluster) -> KappRun:
    """The real kapp, run as a subprocess against the test cluster."""
    return real_kapp(cluster.kubeconfig)


@pytest.fixture(scope="module")
def packaging_crds(cluster: Cluster, kube: Client) -> None:
    """The App and packaging CRDs, installed once for the module (no test removes them)."""
    install_crds(cluster, kube)


from tests.e2e import registry  # noqa: E402  (appended with the fixture below)
from tests.e2e.harness import external_tool  # noqa: E402


@pytest.fixture(scope="session")
def oci_registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[registry.Registry]:
    """A real OCI registry (`crane registry serve`, from $KAPPLY_CRANE or PATH) for the test session, on 127.0.0.1,
    stopped afterwards; tests push to it with its `crane` (tests/e2e/registry.py)."""
    crane = external_tool("crane", "KAPPLY_CRANE")
    with registry.serving(crane, tmp_path_factory.mktemp("oci-registry")) as served:
        yield served
