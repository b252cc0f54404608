"""Running a rollback (a plan of `AsyncClient.plan_rollback`) of an app a controller may deploy: the App that deploys
it (kapply's or kapp-controller's, `<App>.app`) and the PackageInstall that made that App are paused first, saying
so, as Argo CD turns auto-sync off before a rollback; else the next reconcile would deploy the App's own spec over
it. `kapply app-change rollback` and the dashboard's "Roll back to this change" both run rollbacks through here."""

from __future__ import annotations

from collections.abc import Callable

from kapply.api import AsyncClient, Plan
from kapply.apply.progress import Progress
from kapply.controller.deploy import kapp_app_name
from kapply.controller.vocabulary import VOCABULARIES
from kapply.errors import ClusterError
from kapply.objects import Obj
from kapply.resources.cluster import ResourceType

PAUSE = [{"op": "add", "path": "/spec/paused", "value": True}]
APP_SUFFIX = kapp_app_name("")  # the kapp app an App deploys as is `<App>.app`


async def roll_back(api: AsyncClient, plan: Plan, say: Callable[[str], None], progress: Progress | None = None) -> str:
    """Pause what would deploy over the rollback (saying so through `say`), run the rollback's plan, and say so: the
    app-change recording it ("" when none was recorded)."""
    await pause_deployers(api, plan.app.name, plan.app.namespace, say)
    result = await api.run_deploy(plan, progress=progress)
    recorded = f", recorded as app change '{result.app_change}'" if result.app_change else ""
    say(f"Rolled back to app change '{plan.options.rollback_of}'{recorded}")
    return result.app_change


async def pause_deployers(api: AsyncClient, app: str, namespace: str, say: Callable[[str], None]) -> None:
    """Pause the App (kapply's or kapp-controller's) that deploys the kapp app `app` (`<App>.app`), and the
    PackageInstall that made that App (its reconcile would set the App's `paused` back), saying so; nothing when no
    App deploys it or it is paused already. A refusal to pause is the API server's ClusterError."""
    if not app.endswith(APP_SUFFIX):
        return
    name = app.removesuffix(APP_SUFFIX)
    for vocabulary in VOCABULARIES.values():
        try:
            found = await api.cluster.get(vocabulary.app.rtype, namespace, name)
        except ClusterError:  # the group is not served, or may not be read
            continue
        if found is None:
            continue
        for owner in (found.get("metadata") or {}).get("ownerReferences") or []:
            if owner.get("apiVersion") == vocabulary.install.api_version and owner.get("kind") == "PackageInstall":
                install = await api.cluster.get(vocabulary.install.rtype, namespace, owner.get("name", ""))
                if install is not None:
                    resume = f"kapply package installed kick -i {owner['name']}"
                    await _pause(api, vocabulary.install.rtype, install, "the App's PackageInstall", resume, say)
        await _pause(api, vocabulary.app.rtype, found, "App", f"kapply app kick -a {name}", say)


async def _pause(
    api: AsyncClient, rtype: ResourceType, obj: Obj, what: str, resume: str, say: Callable[[str], None]
) -> None:
    """Set `spec.paused` (unless it is set), saying so."""
    if (obj.get("spec") or {}).get("paused"):
        return
    meta = obj["metadata"]
    await api.cluster.patch(rtype, meta["namespace"], meta["name"], PAUSE)
    say(
        f"Paused {what} '{meta['name']}' ({rtype.group}, namespace: {meta['namespace']}), so that it does not deploy "
        f"its own spec over the rollback (spec.paused: true; resume with `{resume}`)"
    )
