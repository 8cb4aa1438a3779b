"""Pure: whether AutoMem's own consolidation writes to the store we consolidate, and how to turn it off.

Two engines on one store fight: both decay every memory (each undoing the other's scores), both cluster (two
kinds of summaries), and AutoMem's forget deletes without our tombstones. AutoMem leaves traces we can read: a
`ConsolidationRun` node per run (mode decay / creative / cluster / forget / identity / full) and its control
node (`ConsolidationControl {id: 'global'}`) whose `<task>_last_run` fields it sets when a task completes (all of
them to one time when the node is first made, which is no run). It has no single switch: each task is off with
its interval at 0 (its config.py; identity synthesis only runs with IDENTITY_SYNTHESIS_ENABLED set).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from .timeutil import epoch_or_nan, to_iso

# AutoMem's default intervals are a day (decay) and a week (creative): a run within the last eight days is its
# schedule at work. The warning clears that long after its last run.
RECENT = timedelta(days=8)
# AutoMem's settings (on AutoMem's side) that turn each of its tasks off.
TURN_OFF = {
    "decay": "CONSOLIDATION_DECAY_INTERVAL_SECONDS=0",
    "creative": "CONSOLIDATION_CREATIVE_INTERVAL_SECONDS=0",
    "cluster": "CONSOLIDATION_CLUSTER_INTERVAL_SECONDS=0",
    "forget": "CONSOLIDATION_FORGET_INTERVAL_SECONDS=0",
    "identity": "CONSOLIDATION_IDENTITY_INTERVAL_SECONDS=0 (and IDENTITY_SYNTHESIS_ENABLED unset)",
}
LAST_RUN = "_last_run"


def automem_consolidation(runs: Sequence[Mapping[str, Any]], controls: Sequence[Mapping[str, Any]],
                          now: datetime) -> dict[str, Any]:
    """What AutoMem's traces in the graph say: whether AutoMem runs beside us (`present`), whether its own
    consolidation ran within RECENT (`consolidating`: which tasks, when last), and the warning to give.

    `runs`: AutoMem's run records (mode, started_at, dry_run); `controls`: its control nodes' properties. Its
    run records decide; its control node's fields only when no run record is left (pruned, or never kept)."""
    since = (now - RECENT).timestamp()
    seen = [(run.get("mode") or run.get("task"), epoch_or_nan(run.get("started_at"))) for run in runs
            if not run.get("dry_run")]
    if not runs:
        seen = [pair for control in controls for pair in _completed(control)]
    recent = [(task, at) for task, at in seen if at >= since]
    tasks = sorted({name for task, _ in recent for name in (TURN_OFF if task == "full" else [task])
                    if name in TURN_OFF})
    last = max((at for _, at in recent), default=math.nan)
    consolidating = bool(recent)
    return {
        "present": bool(runs or controls),
        "consolidating": consolidating,
        "tasks": tasks,
        "last_run_at": None if math.isnan(last) else to_iso(datetime.fromtimestamp(last, UTC)),
        "turn_off": list(TURN_OFF.values()),
        "warning": warning(tasks, last) if consolidating else None,
    }


def warning(tasks: Sequence[str], last_epoch: float) -> str:
    """The one sentence status, the dashboard and the log give while AutoMem's consolidation writes too."""
    when = to_iso(datetime.fromtimestamp(last_epoch, UTC))
    return (f"AutoMem's own consolidation writes to this store too ({', '.join(tasks) or 'a task'}, last at "
            f"{when}): two engines on one store undo each other's work. Turn it off on AutoMem's side: "
            f"{', '.join(TURN_OFF.values())}.")


def _completed(control: Mapping[str, Any]) -> list[tuple[str, float]]:
    """(task, when) for each `<task>_last_run` field later than the earliest one (the time the node was made:
    AutoMem sets every field to it then)."""
    times = {name[: -len(LAST_RUN)]: epoch_or_nan(value) for name, value in control.items()
             if name.endswith(LAST_RUN) and isinstance(value, str)}
    known = [at for at in times.values() if not math.isnan(at)]
    made = min(known, default=math.nan)
    return [(task, at) for task, at in times.items() if not math.isnan(at) and at > made]
