"""When each task is next due, from its interval, its last success and its recent failures (pure)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from .settings import TASK_NAMES
from .timeutil import parse_iso

NEVER_RAN = datetime.min.replace(tzinfo=UTC)


def next_due(task: str, control: Mapping[str, Any], interval: float, tick: float) -> datetime | None:
    """The moment `task` becomes due; None if it is disabled (interval 0).

    A task that never ran is due at once (the scheduler's first tick, not start-up). After a failure the
    retry waits tick * 2^(failures-1), never more than the interval, so a broken store is not hammered.
    """
    if interval <= 0:
        return None
    last = _time(control.get(f"last_{task}"))
    due = last + timedelta(seconds=interval) if last else NEVER_RAN
    failures = int(control.get(f"failures_{task}") or 0)
    failed_at = _time(control.get(f"last_failure_{task}"))
    if failures and failed_at:
        backoff = min(interval, tick * 2 ** min(failures - 1, 30))
        due = max(due, failed_at + timedelta(seconds=backoff))
    return due


def due_tasks(control: Mapping[str, Any], intervals: Mapping[str, float], now: datetime, tick: float) -> list[str]:
    """The tasks due at `now`, in the order a full run takes them."""
    due = []
    for task in TASK_NAMES:
        moment = next_due(task, control, intervals.get(task, 0), tick)
        if moment is not None and moment <= now:
            due.append(task)
    return due


def _time(value: Any) -> datetime | None:
    if not value:
        return None
    try:
        return parse_iso(str(value))
    except ValueError:
        return None


def why_not_run(task: str, interval: float, scheduler_enabled: bool, paused: bool, forgetting_on: bool,
                creative_kinds: tuple[str, ...]) -> str | None:
    """Why a task will not run on schedule (or will run and change nothing), in words an administrator can act
    on; None when nothing stops it."""
    if task == "forget" and not forgetting_on:
        return "off: set CONSOLIDATION_ARCHIVE_THRESHOLD / _DELETE_THRESHOLD (both 0 by default)"
    if task == "creative" and not creative_kinds:
        return "writes nothing: CONSOLIDATION_CREATIVE_KINDS is empty"
    if interval <= 0:
        return f"not scheduled: CONSOLIDATION_{task.upper()}_INTERVAL_SECONDS is 0"
    if not scheduler_enabled:
        return "not scheduled: the scheduler is disabled (CONSOLIDATION_SCHEDULER_ENABLED=false)"
    if paused:
        return "not scheduled: the schedule is paused (POST /consolidate/scheduler {\"paused\": false})"
    return None
