"""AutoMem's own consolidation records in the graph, read and never written: its run records, its control node."""

from __future__ import annotations

from typing import Any

from .authors import AUTOMEM_RUN_LABEL
from .falkor import Falkor

RUNS_READ = 50  # AutoMem keeps its newest 20


Traces = tuple[list[dict[str, Any]], list[dict[str, Any]]]  # AutoMem's runs newest first, its control nodes
RUN_FIELDS = ("mode", "task", "started_at", "dry_run")


def traces_clause(carried: str) -> str:
    """The part of a query that reads AutoMem's traces into `automem_runs` and `automem_controls`, carrying the
    variables `carried` through: status reads them in its one round trip (stores/control.py)."""
    return (f"OPTIONAL MATCH (automem_run:{AUTOMEM_RUN_LABEL}) WHERE automem_run.tasks IS NULL "
            f"WITH {carried}, automem_run ORDER BY automem_run.started_at DESC LIMIT {RUNS_READ} "
            f"WITH {carried}, collect([{', '.join(f'automem_run.{name}' for name in RUN_FIELDS)}]) AS automem_runs "
            "OPTIONAL MATCH (automem_control:ConsolidationControl) WHERE automem_control.id <> 'singleton' "
            f"WITH {carried}, automem_runs, collect(properties(automem_control)) AS automem_controls ")


def parse_traces(runs: list, controls: list) -> Traces:
    """What traces_clause read, as (runs, control nodes' properties)."""
    return ([dict(zip(RUN_FIELDS, run)) for run in runs if any(value is not None for value in run)],
            [dict(control) for control in controls])


class AutomemRecords:
    """What AutoMem's consolidation left: its runs newest first, and its control nodes (ours is id 'singleton')."""

    def __init__(self, falkor: Falkor):
        self.falkor = falkor

    def read(self) -> Traces:
        """(runs, control nodes' properties), in one round trip."""
        rows = self.falkor.records("WITH 1 AS one " + traces_clause("one") +
                                   "RETURN automem_runs, automem_controls", read_only=True)
        return parse_traces(*rows[0]) if rows else ([], [])
