"""How changes are applied and waited for: kapp's apply and wait flags."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ApplyOptions:
    concurrency: int = 5
    default_update_strategy: str = ""
    timeout: float = 900  # kapp's --apply-timeout: how long an `exists` resource is waited for


@dataclass(frozen=True, slots=True)
class WaitOptions:
    wait: bool = True
    timeout: float = 900  # per round of waiting, as kapp's --wait-timeout
    resource_timeout: float = 0  # from when the change was applied; 0 is none
    check_interval: float = 3
    concurrency: int = 5  # reads in flight per check
