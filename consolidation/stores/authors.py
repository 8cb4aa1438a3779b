"""Who wrote a record or an edge: ours carry an explicit mark, anything else (AutoMem, its clients) is theirs.

AutoMem shares the graph: its run records use the `ConsolidationRun` label (and it prunes every node of that label
beyond its newest 20), its DISCOVERED edges carry `origin: 'consolidation'` as ours did, its CONTRADICTS edges
no origin at all. So our runs have a label of their own and every edge we write says `written_by`; reads that
count our decisions count only those, and nothing of ours deletes or rewrites an edge or run that is not ours.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from .falkor import Falkor

log = logging.getLogger(__name__)

WRITTEN_BY = "written_by"
OURS = "consolidation-service"
THEIRS = "automem"
RUN_LABEL = "ConsolidationServiceRun"
AUTOMEM_RUN_LABEL = "ConsolidationRun"
# AutoMem's cluster summaries: `Memory:MetaMemory` nodes of type MetaPattern without a vector (ours are
# `Memory:MetaPattern` with one). Told apart by the label, which the graph's statistics also count.
AUTOMEM_SUMMARY_LABEL = "MetaMemory"
# Bumped when the rules below change: a graph whose control node records an older version is marked again.
MARKS_VERSION = 1
MARK_BATCH = 5000  # edges marked per write query: a short hold of FalkorDB's write lock each

# How an edge we wrote before edges carried the mark is told from AutoMem's: property -> the values it holds
# (None: any value). AutoMem's DISCOVERED edges have origin and kind but never our `algorithm`; its CONTRADICTS
# edges (and those its clients author, like EVOLVED_INTO) carry no origin.
UNMARKED_OURS: dict[str, dict[str, tuple[str, ...] | None]] = {
    "DISCOVERED": {"algorithm": None},
    "CONTRADICTS": {"origin": ("consolidation",), "detected_at": None},
    "SUPERSEDES": {"origin": ("consolidation", "request")},
    "EVOLVED_INTO": {"origin": ("consolidation", "request")},
    "MERGED_INTO": {"origin": ("consolidation",)},
}


def mark(variable: str) -> str:
    """The SET item marking the edge (or record) bound to `variable` as ours."""
    return f"{variable}.{WRITTEN_BY} = '{OURS}'"


def is_ours(variable: str) -> str:
    """A condition true for an edge (or record) bound to `variable` that we wrote."""
    return f"{variable}.{WRITTEN_BY} = '{OURS}'"


def author_of(properties: Mapping[str, Any]) -> str:
    """Whose an edge is, from its properties: ours, or AutoMem's (it or a client of it wrote it)."""
    return OURS if properties.get(WRITTEN_BY) == OURS else THEIRS


def _legacy_condition(rules: Mapping[str, tuple[str, ...] | None]) -> str:
    parts = []
    for name, values in rules.items():
        parts.append(f"r.{name} IS NOT NULL" if values is None
                     else f"r.{name} IN [{', '.join(repr(v) for v in values)}]")
    return " AND ".join(parts)


def legacy_ours(relation: str, properties: Mapping[str, Any]) -> bool:
    """Whether an edge without the mark (kept in a tombstone or merge record before marks existed) is ours."""
    rules = UNMARKED_OURS.get(relation)
    if rules is None:
        return False
    return all(properties.get(name) is not None and (values is None or properties.get(name) in values)
               for name, values in rules.items())


def with_mark(relation: str, properties: Mapping[str, Any]) -> dict[str, Any]:
    """An edge's properties as written back (restored, moved by a merge): an old edge of ours gains the mark,
    AutoMem's stay exactly as they were."""
    if WRITTEN_BY not in properties and legacy_ours(relation, properties):
        return {**properties, WRITTEN_BY: OURS}
    return dict(properties)


def mark_existing(falkor: Falkor) -> dict[str, int]:
    """Our run records under our own label (at every start: few nodes, and a replica of an earlier version may
    still write them during an upgrade), and, once per graph (recorded on our control node), the mark on every
    edge of ours written before it. Idempotent, in batches; AutoMem's runs and edges are left as they are.
    Returns what it changed."""
    from .control import CONTROL

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
