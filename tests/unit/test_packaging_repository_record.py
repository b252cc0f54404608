"""A PackageRepository's app record as untrusted input: each field of the record forged (the class: every field of
kapp's AppMeta, with each kind of forgery that field allows) is refused with a message naming the record and the field,
or, for the fields that steer nothing (lastChange's times, outcome and description), accepted as the next change
rewrites them. A key or value that is not a label is refused for every record, not only a repository's (the selector
is built from them)."""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
import pytest

from kapply import objects
from kapply.api import AsyncClient
from kapply.app import record
from kapply.app.meta import AppMeta
from kapply.controller.vocabulary import KAPPLY
from kapply.errors import ClusterError, KapplyError
from kapply.packaging.repository_deploy import check_record, confined, repository_delete_options, scope
from kapply.resources.confined import ConfinementError
from tests.unit.test_confined_cluster import KUBECONFIG, Recording

GOOD: dict[str, Any] = {
    "labelKey": "kapp.k14s.io/app",
    "labelValue": "1764626421000000000",
    "lastChangeName": "evil.pkgr-change-abcde",
    "lastChange": {
        "startedAt": "2026-12-01T22:00:21Z",
        "finishedAt": "2026-12-01T22:00:21Z",
        "successful": True,
        "description": "update: Op: 1 create, 0 delete, 0 update, 0 noop, 0 exists / Wait to: 0 reconcile",
        "namespaces": ["t-evil"],
    },
    "usedGVs": [{"Group": "data.packaging.kapply.dev", "Version": "v1alpha1"}],
    "usedGKs": [
        {"Group": "data.packaging.kapply.dev", "Kind": "Package"},
        {"Group": "data.packaging.kapply.dev", "Kind": "PackageMetadata"},
    ],
}
PARSE = "did not contain parseable app metadata"
FORGED = "was not written by the controller"
# field: [(forged value, a fragment of the refusal, or None when accepted)]
FORGERIES: dict[str, list[tuple[Any, str | None]]] = {
    "labelKey": [
        ("kapp.k14s.io/app!", f"{PARSE}: 'labelKey' 'kapp.k14s.io/app!' is not a label key"),  # the issue's: `!=`
        ("a,b", "'labelKey' 'a,b' is not a label key"),
        ("", "'labelKey' '' is not a label key"),
        ("team", f"{FORGED}: 'labelKey' is 'team', not 'kapp.k14s.io/app'"),  # a label, but not kapp's
        (7, f"{PARSE}: expected 'labelKey' to be a string"),
    ],
    "labelValue": [
        ("none,kapp.k14s.io/app", "'labelValue' 'none,kapp.k14s.io/app' is not a label value"),  # adds a requirement
        ("x notin (y)", "is not a label value"),
        ("-x", "is not a label value"),
        ("x" * 64, "is not a label value"),
        (None, f"{PARSE}: expected 'labelValue' to be a string, but was null"),
        ("123", None),  # another of the namespace's apps' values: it reaches only what the namespace has
    ],
    "lastChangeName": [
        ("victim", f"{FORGED}: 'lastChangeName' is 'victim', not one of the app's changes"),
        ("", None),
        ([], f"{PARSE}: expected 'lastChangeName' to be a string"),
    ],
    "lastChange.namespaces": [
        (["t-victim"], f"{FORGED}: 'lastChange.namespaces' names t-victim (a repository deploys to t-evil)"),
        (["t-evil", "kube-system", "(cluster)"], "names (cluster), kube-system"),
        ([], None),
        ("t-victim", f"{PARSE}: expected 'lastChange.namespaces' to be a list"),
    ],
    "usedGKs": [
        ([{"Group": "", "Kind": "ConfigMap"}], f"{FORGED}: 'usedGKs' names ConfigMap (a repository deploys Packages"),
        ([{"Group": "kapply.dev", "Kind": "App"}], "'usedGKs' names App.kapply.dev"),
        (None, f"{FORGED}: 'usedGKs' is null"),
        ([], None),
        ({"Group": ""}, f"{PARSE}: expected 'usedGKs' to be a list"),
    ],
    "usedGVs": [
        ([{"Group": "", "Version": "v1"}], f"{FORGED}: 'usedGVs' names v1 (a repository deploys data.packaging"),
        ([{"Group": "metrics.k8s.io", "Version": "v1beta1"}], "'usedGVs' names metrics.k8s.io/v1beta1"),
        ([], None),
    ],
    "lastChange.startedAt": [("forged", None), (1, f"{PARSE}: expected 'lastChange.startedAt' to be a string")],
    "lastChange.finishedAt": [("forged", None)],
    "lastChange.successful": [(False, None), ("yes", f"{PARSE}: expected 'lastChange.successful' to be a boolean")],
    "lastChange.description": [("forged <script>", None)],
    "lastChange": [(None, None), ("x", f"{PARSE}: expected 'lastChange' to be an object")],
}
CASES = [(f, v, m) for f, forgeries in FORGERIES.items() for v, m in forgeries]


def forged(field: str, value: Any) -> dict[str, Any]:
    spec: dict[str, Any] = orjson.loads(orjson.dumps(GOOD))
    where = spec
    *parents, last = field.split(".")
    for parent in parents:
        where = where[parent]
    where[last] = value
    return spec


def configmap(spec: Any, name: str = "evil.pkgr") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "t-evil", "labels": {objects.IS_APP_LABEL: ""}},
        "data": {"spec": spec if isinstance(spec, str) else orjson.dumps(spec).decode()},
    }


class Records(Recording):
    """A cluster holding one ConfigMap, `evil.pkgr` (its `<name>.apps.k14s.io` name is not found)."""

    def __init__(self, cm: dict[str, Any]) -> None:
        super().__init__()
        self.cm = cm

    async def request(self, method: str, path: str, **kwargs: Any) -> Any:
        self.sent.append((method, path))
        if path.endswith("/" + self.cm["metadata"]["name"]):
            return self.cm
        raise ClusterError("not found", status=404)


def client(inner: Records) -> AsyncClient:
    return AsyncClient(kubeconfig_yaml=KUBECONFIG).through(inner)


def check(cm: dict[str, Any]) -> Records:
    inner = Records(cm)
    asyncio.run(check_record(confined(client(inner), KAPPLY, "evil", "t-evil"), KAPPLY, "evil", "t-evil"))
    return inner


@pytest.mark.parametrize(("field", "value", "message"), CASES, ids=[f"{f}={v!r}"[:60] for f, v, _ in CASES])
def test_each_field_of_the_record_forged_is_refused_naming_it_or_steers_nothing(
    field: str, value: Any, message: str | None
) -> None:
    cm = configmap(forged(field, value))
    if message is None:
        check(cm)
        return
    with pytest.raises(KapplyError) as refused:
        check(cm)
    assert message in str(refused.value)
    assert "ConfigMap 'evil.pkgr'" in str(refused.value) and "t-evil" in str(refused.value)


def test_the_record_as_the_controller_writes_it_passes_and_is_read_in_its_namespace_only() -> None:
    inner = check(configmap(GOOD))
    assert inner.sent == [
        ("GET", "/api/v1/namespaces/t-evil/configmaps/evil.pkgr.apps.k14s.io"),
        ("GET", "/api/v1/namespaces/t-evil/configmaps/evil.pkgr"),
    ]
    # both names asked at once, the migrated one first
    assert check(configmap(GOOD, "evil.pkgr.apps.k14s.io")).sent[0][1].endswith("evil.pkgr.apps.k14s.io")


def test_the_issues_record_is_refused_at_its_label_key() -> None:
    issue = (
        '{"labelKey":"kapp.k14s.io/app!","labelValue":"none","lastChange":{"startedAt":"2026-12-01T22:00:21Z",'
        '"finishedAt":"2026-12-01T22:00:21Z","successful":true,"description":"forged","namespaces":["t-victim"]},'
        '"usedGVs":[{"Group":"","Version":"v1"},{"Group":"kapply.dev","Version":"v1alpha1"}],'
        '"usedGKs":[{"Group":"","Kind":"ConfigMap"},{"Group":"kapply.dev","Kind":"App"}]}'
    )
    with pytest.raises(KapplyError, match="'labelKey' 'kapp.k14s.io/app!' is not a label key"):
        check(configmap(issue))
    # with a label key of kapp's, every other forged field is named at once
    with pytest.raises(KapplyError) as refused:
        check(configmap(issue.replace("kapp.k14s.io/app!", "kapp.k14s.io/app")))
    assert str(refused.value) == (
        "App record ConfigMap 'evil.pkgr' (namespace: t-evil) was not written by the controller: 'usedGKs' names "
        "App.kapply.dev, ConfigMap (a repository deploys Packages and PackageMetadatas); 'usedGVs' names "
        "kapply.dev/v1alpha1, v1 (a repository deploys data.packaging.kapply.dev/v1alpha1 only); "
        "'lastChange.namespaces' names t-victim (a repository deploys to t-evil) (hint: ConfigMap was overriden by "
        "another user? Deleting it lets the next deploy write it anew)"
    )


def test_no_record_is_a_new_app() -> None:
    check(configmap(GOOD, "another"))


def test_a_label_selector_is_built_from_a_label_key_and_value_only() -> None:
    app = record.App("a", "ns", "a", AppMeta("kapp.k14s.io/app!", "none"))
    with pytest.raises(KapplyError, match="Expected a label key, but was 'kapp.k14s.io/app!'"):
        _ = app.label_selector
    assert record.App("a", "ns", "a", AppMeta("kapp.k14s.io/app", "1")).label_selector == "kapp.k14s.io/app=1"


def test_the_scope_is_the_namespaces_packages_and_the_apps_own_config_maps() -> None:
    described = scope(KAPPLY, "evil", "t-evil").describe()
    assert described == (
        "namespace 't-evil': packages.data.packaging.kapply.dev, packagemetadatas.data.packaging.kapply.dev, "
        "configmaps (evil-ctrl, evil-ctrl.apps.k14s.io, evil.pkgr, evil.pkgr.apps.k14s.io, evil.pkgr-change-*, "
        "evil-ctrl-change-*)"
    )


def test_a_record_an_older_kapp_controller_wrote_is_checked_when_the_repository_has_none_of_its_own() -> None:
    """kapp-controller's `--prev-app <name>-ctrl`: the deploy renames that record (with its label, kinds and last
    change), so it is read as untrusted input too; renamed, it names its old last change until a new one."""
    legacy = {**GOOD, "lastChangeName": "evil-ctrl-change-abcde"}
    inner = check(configmap(legacy, "evil-ctrl"))
    assert [path.rsplit("/", 1)[1] for _, path in inner.sent] == [
        "evil.pkgr.apps.k14s.io",
        "evil.pkgr",
        "evil-ctrl.apps.k14s.io",
        "evil-ctrl",
    ]
    check(configmap(legacy))  # `evil.pkgr`, renamed from `evil-ctrl`
    with pytest.raises(KapplyError, match="ConfigMap 'evil-ctrl' .* 'usedGKs' names ConfigMap"):
        check(configmap(forged("usedGKs", [{"Group": "", "Kind": "ConfigMap"}]), "evil-ctrl"))


def test_the_delete_lists_the_recorded_kinds_only() -> None:
    assert repository_delete_options().used_kinds_only


def test_a_confined_record_read_elsewhere_is_refused() -> None:
    inner = Records(configmap(GOOD))
    with pytest.raises(ConfinementError):
        asyncio.run(check_record(confined(client(inner), KAPPLY, "evil", "t-evil"), KAPPLY, "evil", "t-victim"))
    assert inner.sent == []
