"""kapp-controller's App, PackageInstall and PackageRepository."""

from kapply.apply.waiters import failed, ok, ongoing, wait_state
from tests.unit.waiter_objects import cond, obj


def app(generation=1, observed=1, conditions=(), useful=None, **metadata):
    status = {"observedGeneration": observed, "conditions": list(conditions), "friendlyDescription": "x"}
    if useful is not None:
        status["usefulErrorMessage"] = useful
    resource = obj("kappctrl.k14s.io/v1alpha1", "App", generation=generation, status=status)
    resource["metadata"] |= metadata
    return resource


def test_app_waits_for_its_generation_to_be_observed():
    assert wait_state(app(generation=3, observed=2)) == ongoing("Waiting for generation 3 to be observed")


def test_app_reconciling_is_ongoing():
    assert wait_state(app(conditions=[cond("Reconciling", "True")])) == ongoing("Reconciling")


def test_app_reconcile_failure_prefers_the_useful_error_message():
    state = wait_state(
        app(
            conditions=[cond("ReconcileFailed", "True", "", "Deploying: Error (see .status.usefulErrorMessage)")],
            useful="kapp: Error: Ownership errors",
        )
    )
    assert state == failed("Reconcile failed:  (message: kapp: Error: Ownership errors)")


def test_app_delete_failure_falls_back_to_the_condition_message():
    state = wait_state(app(conditions=[cond("DeleteFailed", "True", "Failed", "Deleting: Error")]))
    assert state == failed("Delete failed: Failed (message: Deleting: Error)")


def test_app_reconcile_succeeded_is_ok():
    assert wait_state(app(conditions=[cond("ReconcileSucceeded", "True")])) == ok()


def test_app_being_deleted_is_deleting_after_its_conditions():
    deleting = app(
        conditions=[cond("ReconcileSucceeded", "True")],
        deletionTimestamp="2024-03-28T10:00:00Z",
        finalizers=["finalizers.kapp-ctrl.k14s.io/delete"],
    )
    assert wait_state(deleting) == ongoing("Waiting on finalizers: finalizers.kapp-ctrl.k14s.io/delete")


def test_package_install_and_repository_wait_like_apps():
    for kind in ("PackageInstall", "PackageRepository"):
        resource = app(conditions=[cond("ReconcileFailed", "True", "", "Fetching resources: Error")])
        resource |= {"apiVersion": "packaging.carvel.dev/v1alpha1", "kind": kind}
        assert wait_state(resource) == failed("Reconcile failed:  (message: Fetching resources: Error)")
