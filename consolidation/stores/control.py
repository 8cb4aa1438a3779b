"""The ConsolidationControl node: last-run times, bounded history, retry state and the run lease."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ..settings import TASK_NAMES
from .falkor import Falkor

CONTROL = "(c:ConsolidationControl {id: 'singleton'})"


@dataclass(frozen=True)
class Lease:
    """Who holds the right to run consolidation, for which run, until when (epoch seconds)."""

    holder: str
    run_id: str
    task: str | None
    expires_at: float


class ControlStore:
    """Reads and writes the singleton control node that makes the schedule survive restarts."""

    def __init__(self, falkor: Falkor):
        self.falkor = falkor

    def ensure(self) -> None:
        self.falkor.execute(f"MERGE {CONTROL} ON CREATE SET c.history = '[]'")

    def state(self) -> dict[str, Any]:
        """All control fields, with `history` decoded to a list (newest first)."""
        rows = self.falkor.records(f"MATCH {CONTROL} RETURN properties(c)", read_only=True)
        props = dict(rows[0][0]) if rows else {}
        props["history"] = _decode_history(props.get("history"))
        return props

    def record_task(self, task: str, entry: dict[str, Any], history_limit: int) -> None:
        """Prepend a history entry; on success set last_<task>, on failure count it for the retry backoff."""
        if task not in TASK_NAMES:
            raise ValueError(f"unknown task {task}")
        self.ensure()
        history = [entry, *self.state()["history"]][:history_limit]
        if entry["success"]:
            # A record written late (after a store outage) must not move last_<task> backwards.
            update = (f"c.last_{task} = CASE WHEN c.last_{task} > $ran_at THEN c.last_{task} ELSE $ran_at END, "
                      f"c.failures_{task} = 0, c.last_failure_{task} = null")
        else:
            update = f"c.failures_{task} = coalesce(c.failures_{task}, 0) + 1, c.last_failure_{task} = $ran_at"
        self.falkor.execute(
            f"MATCH {CONTROL} SET c.history = $history, {update}",
            {"history": json.dumps(history), "ran_at": entry["ran_at"]},
        )

    # --- the lease: a compare-and-set on the control node (FalkorDB runs write queries one at a time). -------
    # Times are the FalkorDB server's own clock (timestamp(), in ms), so replicas with skewed clocks agree
    # on when a lease expires.

    def acquire_lease(self, holder: str, run_id: str, task: str | None, ttl: float) -> Lease | None:
        """Take the lease if it is free, expired, or already ours; None if someone else holds it."""
        self.ensure()
        rows = self.falkor.execute(
            f"MATCH {CONTROL} WITH c, timestamp() / 1000.0 AS now "
            "WHERE c.lease_expires_at IS NULL OR c.lease_expires_at < now OR c.lease_run_id = $run_id "
            "SET c.lease_holder = $holder, c.lease_run_id = $run_id, c.lease_task = $task, "
            "c.lease_expires_at = now + $ttl RETURN c.lease_expires_at",
            {"holder": holder, "run_id": run_id, "task": task, "ttl": float(ttl)},
        )
        return Lease(holder, run_id, task, float(rows[0][0])) if rows else None

    def renew_lease(self, run_id: str, task: str | None, ttl: float) -> bool:
        """Extend our lease (and say which task runs now); False if it was lost to another holder."""
        rows = self.falkor.execute(
            f"MATCH {CONTROL} WHERE c.lease_run_id = $run_id "
            "SET c.lease_expires_at = timestamp() / 1000.0 + $ttl, c.lease_task = $task RETURN c.lease_run_id",
            {"run_id": run_id, "task": task, "ttl": float(ttl)},
        )
        return bool(rows)

    def release_lease(self, run_id: str) -> None:
        self.falkor.execute(
            f"MATCH {CONTROL} WHERE c.lease_run_id = $run_id "
            "SET c.lease_holder = null, c.lease_run_id = null, c.lease_task = null, c.lease_expires_at = null",
            {"run_id": run_id},
        )

    def current_lease(self) -> Lease | None:
        """The lease if someone holds it and it has not expired."""
        rows = self.falkor.records(
            f"MATCH {CONTROL} WHERE c.lease_expires_at >= timestamp() / 1000.0 "
            "RETURN c.lease_holder, c.lease_run_id, c.lease_task, c.lease_expires_at",
            read_only=True,
        )
        return Lease(*rows[0]) if rows else None


def _decode_history(raw: Any) -> list[dict[str, Any]]:
    if not raw:
        return []
    try:
        history = json.loads(raw) if isinstance(raw, str) else list(raw)
    except (TypeError, ValueError):
        return []
    return [entry for entry in history if isinstance(entry, dict)]
