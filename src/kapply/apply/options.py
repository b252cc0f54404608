"""How changes are applied and waited for: kapp's apply and wait flags."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ApplyOptions:
    concurrency: int = 5
    default_update_strategy: str = ""
    timeout: float = 900  # kapp's --apply-timeout: how long an `exists` resource is waited for
    ignored: bool = False  # kapp's --apply-ignored: also apply ignored changes (deletes of transient objects)
    exit_early: bool = True  # kapp's --exit-early-on-apply-error; False: apply the rest, report every error at the end


@dataclass(frozen=True, slots=True)
class WaitOptions:
    wait: bool = True
    timeout: float = 900  # per round of waiting, as kapp's --wait-timeout
    resource_timeout: float = 0  # from when the change was applied; 0 is none
    check_interval: float = 3
    concurrency: int = 5  # reads in flight per check
    ignored: bool = False  # kapp's --wait-ignored: also wait on ignored changes (kapp delete's default: True)
    exit_early: bool = True  # kapp's --exit-early-on-wait-error; False: wait on the rest, report every error at the end
    ignore_failing_api_services: bool = False  # kapp's --dangerous-ignore-failing-api-services: unavailable is done
    # kapply beyond kapp, no flag: watches of what a wait reads end its sleep when something changes (observe.Wakes);
    # False: a look every check_interval only, as kapp (the controller, whose reads its own watch-fed cache serves)
    wake_on_watch: bool = True
