"""Whether a resource has converged: kapp's waiters (pkg/kapp/resourcesmisc), as pure functions, one module per kind.

kapp asks the first *specific waiter* that applies to a resource whether it is done: a fixed list by
kind, with the Config's waitRules after the deletion check (`registry`). Beyond kapp, kapply also waits on
ReplicaSets, Namespaces, PersistentVolumeClaims, and any other resource whose status has standard `Ready`, `Failed`
or `Stalled` conditions (kstatus' convention, as Flux reads it). A resource no waiter applies to
(ConfigMap, Secret, ...) is done at once. Workloads also name the types of their
children, the resources carrying their association label; the caller lists those
(`which_children`) and `converge` reports on each of them next to the parent (`convergence`).
"""

from kapply.apply.waiters.convergence import ChildState, Convergence, converge, wait_lines, wait_state
from kapply.apply.waiters.registry import ChildType, which_children
from kapply.apply.waiters.state import State, Word, failed, ok, ongoing

__all__ = [
    "ChildState",
    "ChildType",
    "Convergence",
    "State",
    "Word",
    "converge",
    "failed",
    "ok",
    "ongoing",
    "wait_lines",
    "wait_state",
    "which_children",
]
