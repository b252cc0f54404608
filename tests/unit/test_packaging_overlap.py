"""Two repositories bringing the same Package: kapp-controller's rules (its rebase rule noop-on-identical-packages)."""

from __future__ import annotations

from typing import Any

import pytest

from kapply.packaging import names
from kapply.packaging.overlap import ConflictError, Overlap, compare_revisions, decide, difference, revision

OURS = "ns/ours"
THEIRS = "ns/theirs"


def package(owner: str | None, spec: dict[str, Any] | None = None, **meta: Any) -> dict[str, Any]:
    annotations = dict(meta.pop("annotations", {}))
    if owner is not None:
        annotations[names.REPOSITORY_REF_ANNOTATION] = owner
    return {
        "apiVersion": names.DATA_API_VERSION,
        "kind": "Package",
        "metadata": {"name": "contooor.co.uk.0.22.0", "annotations": annotations, **meta},
        "spec": spec if spec is not None else {"refName": "contooor.co.uk", "version": "0.22.0"},
    }


def test_revisions_are_dot_separated_integers_and_none_is_minus_one() -> None:
    assert revision({names.REVISION_ANNOTATION: "1.2.0.4"}) == (1, 2, 0, 4)
    assert revision({}) == (-1,)
    with pytest.raises(ConflictError, match="to be integers separated by dots, got 'x.1'"):
        revision({names.REVISION_ANNOTATION: "x.1"})


@pytest.mark.parametrize(
    ("a", "b", "sign"),
    [
        ((1,), (1,), 0),
        ((2,), (1, 9), 1),
        ((1, 2), (1, 3), -1),
        ((0,), (0, 0), -1),
        ((1, 0, 0), (1, 0), 1),
        ((-1,), (0,), -1),
    ],
)
def test_revisions_compare_element_by_element_then_the_longer_is_higher(
    a: tuple[int, ...], b: tuple[int, ...], sign: int
) -> None:
    result = compare_revisions(a, b)
    assert (result > 0) - (result < 0) == sign


def test_a_new_object_an_unowned_one_and_our_own_are_deployed() -> None:
    new = package(OURS)
    assert decide(None, new) is Overlap.DEPLOY
    assert decide(package(None, {"other": 1}), new) is Overlap.DEPLOY, "no owner: taken over"
    assert decide(package(OURS, {"other": 1}), new) is Overlap.DEPLOY


def test_another_repositorys_identical_copy_is_left_alone_whatever_the_controllers_wrote() -> None:
    existing = package(
        THEIRS,
        labels={"kapp.k14s.io/app": "123", "kapp.k14s.io/association": "v1.abc"},
        annotations={"kapp.k14s.io/identity": "v1;x", "kapp.k14s.io/create-strategy": "fallback-on-update-or-noop"},
    )
    assert decide(existing, package(OURS)) is Overlap.LEAVE


@pytest.mark.parametrize(
    ("existing", "new", "reason"),
    [
        (package(THEIRS), package(OURS, {"refName": "contooor.co.uk", "version": "0.22.0", "x": 1}), "adding spec.x"),
        (package(THEIRS, {"refName": "contooor.co.uk", "version": "0.22.0", "x": 1}), package(OURS), "missing spec.x"),
        (package(THEIRS, {"refName": "a", "version": "0.22.0"}), package(OURS), "mismatch in spec.refName"),
        (package(THEIRS, labels={"a": "b"}), package(OURS), "mismatch in metadata.labels"),
        (
            package(THEIRS),
            package(OURS, annotations={"some.co.internal.ann": "value"}),
            "mismatch in metadata.annotations",
        ),
    ],
)
def test_differences_are_named_as_kapp_controller_names_them(
    existing: dict[str, Any], new: dict[str, Any], reason: str
) -> None:
    assert difference(existing, new) == reason
    with pytest.raises(ConflictError) as e:
        decide(existing, new)
    assert str(e.value) == (
        f"Error: Conflicting resources: Package/contooor.co.uk.0.22.0 is already present but not identical ({reason})"
    )


def test_a_higher_revision_wins_either_way() -> None:
    newer = {names.REVISION_ANNOTATION: "1.1"}
    older = {names.REVISION_ANNOTATION: "1.0.5"}
    spec = {"refName": "contooor.co.uk", "version": "0.22.0", "releaseNotes": "x"}
    assert decide(package(THEIRS, annotations=older), package(OURS, spec, annotations=newer)) is Overlap.DEPLOY
    assert decide(package(THEIRS, annotations=newer), package(OURS, spec, annotations=older)) is Overlap.LEAVE
    assert decide(package(THEIRS), package(OURS, spec, annotations={names.REVISION_ANNOTATION: "0"})) is Overlap.DEPLOY
