"""What else reconciles a PackageInstall than a change of its own (kapp-controller's watches of Packages and of the Apps
PackageInstalls control):

- a Package created, changed or deleted: the PackageInstalls of its package, in its namespace (every namespace for a
  Package of the global namespace), whose version selection admits its version (`versions.selection_admits`) — so a
  higher version is installed as soon as it appears, and the next one is selected when the installed one goes;
- any event of an App a PackageInstall controls (its status changed, it is gone): that PackageInstall.

The PackageInstalls are known from their own watch (`InstallIndex.observe`), so a Package event costs no request."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from kapply import objects
from kapply.controller.spec import SpecError
from kapply.controller.vocabulary import Vocabulary
from kapply.objects import Obj
from kapply.packaging import names
from kapply.packaging.install_app import controller_of
from kapply.packaging.spec import parse_package_install
from kapply.versions import VersionSelection, selection_admits

Key = tuple[str, str]
Request = tuple[str, Key, float]
APP_DEBOUNCE = 0.5  # seconds: an App's burst of status writes (Reconciling, then the outcome) is one reconcile


@dataclass
class InstallIndex:
    """Each PackageInstall's package and version selection, by namespace and name."""

    wanted: dict[Key, tuple[str, VersionSelection]] = field(default_factory=dict)

    def observe(self, event: str, install: Obj) -> None:
        key = (objects.namespace(install), objects.name(install))
        if event == "DELETED":
            self.wanted.pop(key, None)
            return
        try:
            ref = parse_package_install(install).package_ref
        except SpecError:
            ref = None
        if ref is None or ref.selection is None:
            self.wanted.pop(key, None)
        else:
            self.wanted[key] = (ref.ref_name, ref.selection)

    def forget(self, key: Key) -> None:
        self.wanted.pop(key, None)

    def admitting(self, package: Obj, global_namespace: str) -> list[Key]:
        """The PackageInstalls a Package concerns."""
        body = package.get("spec") or {}
        ref_name, version = body.get("refName"), body.get("version")
        if not isinstance(ref_name, str) or not isinstance(version, str):
            return []
        namespace = objects.namespace(package)
        return sorted(
            key
            for key, (wanted, selection) in self.wanted.items()
            if wanted == ref_name
            and (namespace == global_namespace or key[0] == namespace)
            and selection_admits(version, selection)
        )


def package_trigger(index: InstallIndex, global_namespace: str) -> Callable[[str, Obj], Iterable[Request]]:
    def event(kind: str, package: Obj) -> Iterable[Request]:
        return [(names.PACKAGE_INSTALL.kind, key, 0.0) for key in index.admitting(package, global_namespace)]

    return event


def owning_install(app: Obj, vocabulary: Vocabulary) -> Key | None:
    """The PackageInstall (of the controller's vocabulary) that controls an App, if one does."""
    owner = controller_of(app)
    if (
        owner is None
        or owner.get("apiVersion") != vocabulary.install.api_version
        or owner.get("kind") != vocabulary.install.kind
        or not owner.get("name")
    ):
        return None
    return objects.namespace(app), str(owner["name"])


def app_trigger(vocabulary: Vocabulary) -> Callable[[str, Obj], Iterable[Request]]:
    def event(kind: str, app: Obj) -> Iterable[Request]:
        key = owning_install(app, vocabulary)
        return [] if key is None else [(vocabulary.install.kind, key, APP_DEBOUNCE)]

    return event
