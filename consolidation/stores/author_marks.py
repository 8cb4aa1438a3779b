"""Once per graph, at start: what the service wrote before records and edges carried their author gets the mark
(stores/authors.py says who wrote what); AutoMem's runs and edges are left as they are."""

from __future__ import annotations

import logging
from collections.abc import Mapping

from .authors import AUTOMEM_RUN_LABEL, MARKS_VERSION, RUN_LABEL, UNMARKED_OURS, WRITTEN_BY, mark
from .control import CONTROL
from .falkor import Falkor

log = logging.getLogger(__name__)

MARK_BATCH = 5000  # edges marked per write query: a short hold of FalkorDB's write lock each


def mark_existing(falkor: Falkor) -> dict[str, int]:
    """Our run records under our own label (at every start: few nodes, and a replica of an earlier version may
    still write them during an upgrade), and, once per graph (recorded on our control node), the mark on every
    edge of ours written before it. Idempotent, in batches; AutoMem's runs and edges are left as they are.
    Returns what it changed."""
    changed = {"runs": _relabel_our_runs(falkor)}
    rows = falkor.execute(f"MATCH {CONTROL} RETURN c.marks_version", read_only=True)
    if not (rows and rows[0][0] is not None and int(rows[0][0]) >= MARKS_VERSION):
        for relation, rules in UNMARKED_OURS.items():
            changed[relation] = _mark_batches(falkor, f"()-[r:{relation}]->()", _legacy_condition(rules))
        changed["SUMMARIZES"] = _mark_batches(falkor, "(:MetaPattern)-[r:SUMMARIZES]->()", "true")
        falkor.execute(f"MERGE {CONTROL} ON CREATE SET c.history = '[]' SET c.marks_version = $version",
                       {"version": MARKS_VERSION})
    if any(changed.values()):
        log.info("marked what the service wrote before marks existed graph=%s %s", falkor.graph_name,
                 " ".join(f"{name}={count}" for name, count in changed.items()))
    return changed


def _relabel_our_runs(falkor: Falkor) -> int:
    """Our run records written under AutoMem's label (they carry `tasks`; AutoMem's carry `task` and `mode`),
    once finished: a replica of an earlier version still writes to its running or queued run by that label."""
    return _batches(falkor, f"MATCH (r:{AUTOMEM_RUN_LABEL}) WHERE r.tasks IS NOT NULL AND r.mode IS NULL "
                            "AND NOT coalesce(r.state, '') IN ['running', 'queued'] "
                            f"WITH r LIMIT $batch SET r:{RUN_LABEL} REMOVE r:{AUTOMEM_RUN_LABEL} RETURN count(r)")


def _mark_batches(falkor: Falkor, pattern: str, condition: str) -> int:
    return _batches(falkor, f"MATCH {pattern} WHERE r.{WRITTEN_BY} IS NULL AND {condition} "
                            f"WITH r LIMIT $batch SET {mark('r')} RETURN count(r)")


def _batches(falkor: Falkor, query: str) -> int:
    done = 0
    while True:
        rows = falkor.execute(query, {"batch": MARK_BATCH})
        count = int(rows[0][0]) if rows else 0
        done += count
        if count < MARK_BATCH:
            return done


def _legacy_condition(rules: Mapping[str, tuple[str, ...] | None]) -> str:
    parts = []
    for name, values in rules.items():
        parts.append(f"r.{name} IS NOT NULL" if values is None
                     else f"r.{name} IN [{', '.join(repr(v) for v in values)}]")
    return " AND ".join(parts)
