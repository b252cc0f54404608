"""The CustomResourceDefinition waiter."""

from kapply.apply.waiters import ok, ongoing, wait_state
from tests.unit.waiter_objects import cond, obj


def crd(conditions):
    return obj("apiextensions.k8s.io/v1", "CustomResourceDefinition", namespace="", status={"conditions": conditions})


def test_crd_is_ok_once_established_and_names_accepted():
    conditions = [
        cond("NamesAccepted", "True", "NoConflicts", "no conflicts found"),
        cond("Established", "True", "InitialNamesAccepted", "the initial names have been accepted"),
    ]
    assert wait_state(crd(conditions)) == ok()


def test_crd_waits_for_a_missing_condition():
    state = wait_state(crd([cond("NamesAccepted", "True", "NoConflicts")]))
    assert state == ongoing("Condition Established is not set")


def test_crd_waits_for_a_condition_that_is_not_true():
    conditions = [cond("NamesAccepted", "False", "MultipleConflicts"), cond("Established", "True", "x")]
    assert wait_state(crd(conditions)) == ongoing("Condition NamesAccepted is not True (False)")
