"""Which API groups a client speaks, as the cluster serves them (issue 31): kapply's own (`kapply.dev`,
`packaging.kapply.dev`, `data.packaging.kapply.dev`) or kapp-controller's (`kappctrl.k14s.io`, `packaging.carvel.dev`,
`data.packaging.carvel.dev`). Here, below both of its users in the layers: the client commands (`kapply app`, `kapply
package`), which speak ONE set of groups (`chosen`), and the dashboard, which shows the objects of every set served
(`served`).

A cluster where `kapply controller --api-groups carvel` runs (or kapp-controller ran) serves only kapp-controller's
CRDs, and the commands then read and write those, as kctrl would; where kapply's are served they are used, even beside
kapp-controller's (kapply's controller in its own mode reconciles only its own groups). Where neither is served,
kapply's, so that the first request names the group that is missing.

One choice per command, from the cluster's discovery (which the command's other requests share, cached): never a
mixture of groups."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from kapply.controller.vocabulary import CARVEL, KAPPLY, Resource, Vocabulary

if TYPE_CHECKING:
    from kapply.resources.cluster import Cluster, Discovery

# The resource a client needs: the App (`kapply app`), the PackageInstall, the Package, ...
Needed = Callable[[Vocabulary], Resource]


def app(vocabulary: Vocabulary) -> Resource:
    return vocabulary.app


def repository(vocabulary: Vocabulary) -> Resource:
    return vocabulary.repository


def install(vocabulary: Vocabulary) -> Resource:
    return vocabulary.install


def package(vocabulary: Vocabulary) -> Resource:
    return vocabulary.package


def served(discovery: Discovery, needed: Needed = app) -> list[Vocabulary]:
    """The vocabularies whose `needed` resource the cluster serves, kapply's first."""
    return [
        vocabulary
        for vocabulary in (KAPPLY, CARVEL)
        if discovery.find(needed(vocabulary).api_version, needed(vocabulary).kind) is not None
    ]


def chosen(discovery: Discovery, needed: Needed = app) -> Vocabulary:
    """KAPPLY when the cluster serves kapply's `needed` resource, else CARVEL when it serves kapp-controller's, else
    KAPPLY."""
    return next(iter(served(discovery, needed)), KAPPLY)


async def served_vocabulary(cluster: Cluster, needed: Needed = app) -> Vocabulary:
    """`chosen` from the cluster's discovery."""
    return chosen(await cluster.discovery(), needed)
