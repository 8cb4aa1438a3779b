"""Who wrote a record or an edge: ours carry an explicit mark, anything else (AutoMem, its clients) is theirs.

AutoMem shares the graph: its run records use the `ConsolidationRun` label (and it prunes every node of that label
beyond its newest 20), its DISCOVERED edges carry `origin: 'consolidation'` as ours did, its CONTRADICTS edges
no origin at all. So our runs have a label of their own and every edge we write says `written_by`; reads that
count our decisions count only those, and nothing of ours deletes or rewrites an edge or run that is not ours.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any



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
