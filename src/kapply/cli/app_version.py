"""`kapply version`, and with `--controller` (kctrl's `version --controller`) the version of the controller the
cluster runs, read from its Deployment as kctrl reads kapp-controller's: kapply's controller
(`kapply-system/kapply-controller`, as `kapply controller manifests` installs it) by the tag of its container's image
(`ghcr.io/kapply/kapply:<version>`, kapply's version when the manifests wrote it), else kapp-controller's
(`kapp-controller/kapp-controller`) by its `kapp-controller.carvel.dev/version` annotation, in kctrl's words."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from kapply.cli.app_commands import CONTROLLER
from kapply.cli.command import Args
from kapply.cli.common import client, run
from kapply.cli.controller_manifests import NAMESPACE as KAPPLY_NAMESPACE
from kapply.errors import KapplyError
from kapply.objects import Obj

if TYPE_CHECKING:
    from kapply.ui.output import Output

KAPPLY_DEPLOYMENT = "kapply-controller"
KAPPLY_CONTAINER = "controller"
CARVEL_NAMESPACE = CARVEL_DEPLOYMENT = "kapp-controller"
CARVEL_VERSION = "kapp-controller.carvel.dev/version"


@dataclass(frozen=True, slots=True)
class Found:
    """The controller found: its name (`kapply-controller`, `kapp-controller`) and its version."""

    name: str
    version: str

    @property
    def text(self) -> str:
        return f"{self.name} version {self.version}\n"


def version(args: Args, out: Output) -> None:
    if not args[CONTROLLER]:
        from kapply.cli.main import version as client_version

        client_version(args, out)
        return
    run(_controller_version(args, out))


def image_version(image: str) -> str:
    """The version an image reference names: its tag (`ghcr.io/kapply/kapply:0.1.0` -> `0.1.0`); the reference
    itself when it has none (a digest, or no tag)."""
    name = image.split("@", 1)[0]
    last = name.rsplit("/", 1)[-1]
    return last.rsplit(":", 1)[1] if ":" in last and "@" not in image else image


def kapply_controller(deployment: Obj) -> Found:
    containers = ((deployment.get("spec") or {}).get("template") or {}).get("spec", {}).get("containers") or []
    ours = next((c for c in containers if c.get("name") == KAPPLY_CONTAINER), containers[0] if containers else {})
    return Found(KAPPLY_DEPLOYMENT, image_version(str(ours.get("image", ""))))


def carvel_controller(deployment: Obj) -> Found:
    annotations = (deployment.get("metadata") or {}).get("annotations") or {}
    return Found(CARVEL_DEPLOYMENT, str(annotations.get(CARVEL_VERSION, "")))


async def _controller_version(args: Args, out: Output) -> None:
    from kapply.resources.cluster import ResourceType

    deployments = ResourceType("apps", "v1", "Deployment", "deployments", True, frozenset({"get"}))
    async with client(args, "", out) as api:
        out.line(await api.target())
        deployment = await api.cluster.get(deployments, KAPPLY_NAMESPACE, KAPPLY_DEPLOYMENT)
        if deployment is not None:
            found = kapply_controller(deployment)
        else:
            deployment = await api.cluster.get(deployments, CARVEL_NAMESPACE, CARVEL_DEPLOYMENT)
            if deployment is None:
                raise KapplyError(
                    "Controller not installed on cluster (or is not present in the default location: neither "
                    f"namespace={KAPPLY_NAMESPACE} deployment={KAPPLY_DEPLOYMENT} nor "
                    f"namespace={CARVEL_NAMESPACE} deployment={CARVEL_DEPLOYMENT})"
                )
            found = carvel_controller(deployment)
        out.block(found.text)
        out.finish()
