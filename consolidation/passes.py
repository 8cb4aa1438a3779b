"""Full or incremental: whether a task reads every memory or only what changed since its watermark (pure)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import numpy as np

from .timeutil import parse_iso

# The tasks that can work on what changed plus its neighbourhood (decay and forget: plus what came due, revisits.py).
INCREMENTAL_TASKS = ("decay", "dedup", "creative", "cluster", "forget")
DUE_TASKS = ("decay", "forget")


@dataclass(frozen=True)
class PassPlan:
    """A task's pass: `since` is the watermark (work on memories changed after it), None for a full pass."""

    since: int | None
    reason: str

    @property
    def full(self) -> bool:
        return self.since is None

    @property
    def name(self) -> str:
        return "full" if self.full else "incremental"


def plan_pass(task: str, control: Mapping[str, Any], now: datetime, full_pass_interval: float, version: int,
              requested_full: bool = False, scoped: bool = False) -> PassPlan:
    """The pass `task` takes now, from the control node's watermark fields (watermark_<task>, the version of
    the rules it was taken under in rules_<task>, last_full_<task>) and the caller's wishes.

    Full when: the task is not incremental; the run is of one scope (it reads that whole scope, and the
    watermark is the whole graph's); the caller asked; the interval is 0; there is no watermark; the rules
    its stored state depends on changed since; or the last full pass is at least the interval old.
    """
    if task not in INCREMENTAL_TASKS:
        return PassPlan(None, "this task always reads every memory")
    if scoped:
        return PassPlan(None, "a run of one scope reads that whole scope")
    if requested_full:
        return PassPlan(None, "a full pass was asked for")
    if full_pass_interval <= 0:
        return PassPlan(None, "every run is a full pass (CONSOLIDATION_FULL_PASS_INTERVAL_SECONDS=0)")
    watermark = control.get(f"watermark_{task}")
    if not isinstance(watermark, int) or isinstance(watermark, bool):
        return PassPlan(None, "no watermark yet")
    if control.get(f"rules_{task}") != version:
        return PassPlan(None, "the rules changed since the watermark was taken")
    last_full = _time(control.get(f"last_full_{task}"))
    if last_full is None or now - last_full >= timedelta(seconds=full_pass_interval):
        return PassPlan(None, "the last full pass is older than CONSOLIDATION_FULL_PASS_INTERVAL_SECONDS")
    if task in DUE_TASKS:
        return PassPlan(watermark, "memories changed, touched or used since the last pass, and those come due")
    return PassPlan(watermark, f"memories changed after change {watermark}, and their neighbourhood")


def changed_after(changes: np.ndarray, since: int) -> np.ndarray:
    """Positions of the memories whose change number (NaN: none) is after the watermark. A memory no marker
    names yet (written by another program) counts as changed."""
    return np.flatnonzero(np.isnan(changes) | (changes > since))


def _time(value: Any) -> datetime | None:
    try:
        return parse_iso(str(value)) if value else None
    except ValueError:
        return None
