"""Our run records (ConsolidationServiceRun nodes): each run's state, progress and report, readable from any worker."""

from __future__ import annotations

import json
from typing import Any

from .authors import RUN_LABEL
from .falkor import Falkor, booleans

JSON_FIELDS = ("tasks", "progress", "result", "scope", "counts")


class RunStore:
    """Run records live in the graph so that whichever worker answers GET /consolidate/runs/<id> can read them."""

    def __init__(self, falkor: Falkor):
        self.falkor = falkor

    def create(self, run: dict[str, Any]) -> None:
        self.falkor.execute(f"CREATE (r:{RUN_LABEL}) SET r = $props", {"props": encode_run(run)})

    def update(self, run_id: str, fields: dict[str, Any]) -> None:
        self.falkor.execute(
            f"MATCH (r:{RUN_LABEL} {{id: $id}}) SET r += $fields", {"id": run_id, "fields": encode_run(fields)}
        )

    def update_progress(self, run_id: str, fields: dict[str, Any]) -> bool:
        """update(), answering whether an administrator asked the run to stop (one round trip)."""
        rows = self.falkor.execute(
            f"MATCH (r:{RUN_LABEL} {{id: $id}}) SET r += $fields RETURN r.cancel_requested_at IS NOT NULL",
            {"id": run_id, "fields": encode_run(fields)})
        return _first_flag(rows)

    def request_cancel(self, run_id: str, at: str) -> bool:
        """Ask a running run to stop at its next safe point (a queued one is cancelled at once, before any
        worker begins it); False if it is neither."""
        rows = self.falkor.execute(
            f"MATCH (r:{RUN_LABEL} {{id: $id}}) WHERE r.state IN ['running', 'queued'] "
            "SET r.cancel_requested_at = $at, "
            "r.finished_at = CASE WHEN r.state = 'queued' THEN $at ELSE r.finished_at END, "
            "r.state = CASE WHEN r.state = 'queued' THEN 'cancelled' ELSE r.state END "
            "RETURN r.id", {"id": run_id, "at": at})
        return bool(rows)

    def start_queued(self, run_id: str, at: str, holder: str) -> bool:
        """Mark a queued run running (its worker holds the lease); False if it is no longer queued."""
        rows = self.falkor.execute(
            f"MATCH (r:{RUN_LABEL} {{id: $id}}) WHERE r.state = 'queued' "
            "SET r.state = 'running', r.started_at = $at, r.holder = $holder RETURN r.id",
            {"id": run_id, "at": at, "holder": holder})
        return bool(rows)

    def cancel_requested(self, run_id: str) -> bool:
        rows = self.falkor.execute(f"MATCH (r:{RUN_LABEL} {{id: $id}}) RETURN r.cancel_requested_at IS NOT NULL",
                                   {"id": run_id}, read_only=True)
        return _first_flag(rows)

    def get(self, run_id: str) -> dict[str, Any] | None:
        rows = self.falkor.records(
            f"MATCH (r:{RUN_LABEL} {{id: $id}}) RETURN properties(r)", {"id": run_id}, read_only=True
        )
        return decode_run(dict(rows[0][0])) if rows else None

    def abandon_running(self, except_id: str, at: str) -> None:
        """Mark every other run still recorded as running as abandoned (its process died holding the lease)."""
        self.falkor.execute(
            f"MATCH (r:{RUN_LABEL} {{state: 'running'}}) WHERE r.id <> $id "
            "SET r.state = 'abandoned', r.finished_at = $at, "
            "r.error = 'its process stopped before the run finished; the run lease expired or was taken over'",
            {"id": except_id, "at": at},
        )

    def prune(self, keep: int) -> None:
        """Delete finished runs beyond the newest `keep`."""
        self.falkor.execute(
            f"MATCH (r:{RUN_LABEL}) WHERE NOT r.state IN ['running', 'queued'] WITH r ORDER BY r.started_at DESC "
            "SKIP $keep DELETE r",
            {"keep": keep},
        )


def encode_run(fields: dict[str, Any]) -> dict[str, Any]:
    return {key: json.dumps(value) if key in JSON_FIELDS else value for key, value in fields.items()}


def _first_flag(rows: list[list[Any]]) -> bool:
    """The boolean in the first row's first column (false when there is no row)."""
    return bool(rows) and bool(booleans([rows[0][0]])[0])


def decode_run(props: dict[str, Any]) -> dict[str, Any]:
    """A run record as stored, with its JSON fields (tasks, progress, result) read back."""
    for key in JSON_FIELDS:
        if isinstance(props.get(key), str):
            props[key] = json.loads(props[key])
    return props
