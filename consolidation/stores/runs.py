"""ConsolidationRun nodes: each run's state, progress and report, readable from any worker."""

from __future__ import annotations

import json
from typing import Any

from .falkor import Falkor, booleans

JSON_FIELDS = ("tasks", "progress", "result", "scope", "counts")


class RunStore:
    """Run records live in the graph so that whichever worker answers GET /consolidate/runs/<id> can read them."""

    def __init__(self, falkor: Falkor):
        self.falkor = falkor

    def create(self, run: dict[str, Any]) -> None:
        self.falkor.execute("CREATE (r:ConsolidationRun) SET r = $props", {"props": _encode(run)})

    def update(self, run_id: str, fields: dict[str, Any]) -> None:
        self.falkor.execute(
            "MATCH (r:ConsolidationRun {id: $id}) SET r += $fields", {"id": run_id, "fields": _encode(fields)}
        )

    def update_progress(self, run_id: str, fields: dict[str, Any]) -> bool:
        """update(), answering whether an administrator asked the run to stop (one round trip)."""
        rows = self.falkor.execute(
            "MATCH (r:ConsolidationRun {id: $id}) SET r += $fields RETURN r.cancel_requested_at IS NOT NULL",
            {"id": run_id, "fields": _encode(fields)})
        return _first_flag(rows)

    def request_cancel(self, run_id: str, at: str) -> bool:
        """Ask a running run to stop at its next safe point; False if it is not running."""
        rows = self.falkor.execute(
            "MATCH (r:ConsolidationRun {id: $id}) WHERE r.state = 'running' SET r.cancel_requested_at = $at "
            "RETURN r.id", {"id": run_id, "at": at})
        return bool(rows)

    def cancel_requested(self, run_id: str) -> bool:
        rows = self.falkor.execute("MATCH (r:ConsolidationRun {id: $id}) RETURN r.cancel_requested_at IS NOT NULL",
                                   {"id": run_id}, read_only=True)
        return _first_flag(rows)

    def get(self, run_id: str) -> dict[str, Any] | None:
        rows = self.falkor.records(
            "MATCH (r:ConsolidationRun {id: $id}) RETURN properties(r)", {"id": run_id}, read_only=True
        )
        return decode_run(dict(rows[0][0])) if rows else None

    def abandon_running(self, except_id: str, at: str) -> None:
        """Mark every other run still recorded as running as abandoned (its process died holding the lease)."""
        self.falkor.execute(
            "MATCH (r:ConsolidationRun {state: 'running'}) WHERE r.id <> $id "
            "SET r.state = 'abandoned', r.finished_at = $at, "
            "r.error = 'its process stopped before the run finished; the run lease expired or was taken over'",
            {"id": except_id, "at": at},
        )

    def prune(self, keep: int) -> None:
        """Delete finished runs beyond the newest `keep`."""
        self.falkor.execute(
            "MATCH (r:ConsolidationRun) WHERE r.state <> 'running' WITH r ORDER BY r.started_at DESC "
            "SKIP $keep DELETE r",
            {"keep": keep},
        )


def _encode(fields: dict[str, Any]) -> dict[str, Any]:
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
