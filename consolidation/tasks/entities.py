"""Entity hygiene: merge the `Entity` nodes of one category and scope that name the same thing (off by default:
run it by name, or give it an interval)."""

from __future__ import annotations

import logging
from typing import Any

import numpy as np

from ..entities.groups import EntityRow, alias_groups, candidate_pairs
from ..entities.names import Evidence
from ..stores.entities import EntityStore
from ..timeutil import to_iso
from .context import TaskContext

log = logging.getLogger(__name__)


def run(ctx: TaskContext, dry_run: bool) -> dict[str, Any]:
    store = EntityStore(ctx.graph.falkor, ctx.graph.scoping)
    completed = 0 if dry_run else store.complete_pending()
    entities = [EntityRow(row[0], str(row[1]), str(row[2]), str(row[3]), int(row[4]), frozenset(row[5] or ()))
                for row in store.active()]
    ctx.progress(0, len(entities))
    pairs = candidate_pairs(entities)
    evidence = _evidence(ctx, store, entities, pairs)
    groups, judged = alias_groups(entities, pairs, evidence)
    merges = [{"canonical_id": entities[g.canonical].id, "alias_id": entities[i].id, "reason": reason}
              for g in groups for i, reason in g.aliases]
    if merges and not dry_run:
        store.merge(merges, None, to_iso(ctx.now))
    ctx.progress(len(entities), len(entities))
    shown = [{"canonical_id": entities[g.canonical].id, "canonical_name": entities[g.canonical].name,
              "category": entities[g.canonical].category,
              "aliases": [{"id": entities[i].id, "name": entities[i].name, "reason": reason} for i, reason in g.aliases]}
             for g in groups]
    return {"entities_processed": len(entities), "pairs_judged": judged, "merged": len(merges),
            "interrupted_merges_completed": completed,
            "groups": shown}


def _evidence(ctx: TaskContext, store: EntityStore, entities: list[EntityRow], pairs: list[tuple[int, int]]):
    """For the candidate pairs only: the share of memories two entities have in common, and how close the mean
    vectors of their memories are."""
    involved = sorted({i for pair in pairs for i in pair})
    references = store.references([entities[i].id for i in involved])
    memory_ids = sorted({m for ms in references.values() for m in ms})
    found, matrix = ctx.vectors.vectors(memory_ids) if memory_ids else ([], np.zeros((0, 1), np.float32))
    row_of = dict(zip(found, range(len(found))))
    means: dict[int, np.ndarray] = {}
    for i in involved:
        rows = [row_of[m] for m in references.get(entities[i].id, []) if m in row_of]
        if rows:
            mean = matrix[rows].mean(axis=0)
            norm = float(np.linalg.norm(mean))
            if norm > 0:
                means[i] = mean / norm

    referenced = {entity_id: set(memories) for entity_id, memories in references.items()}

    def evidence(i: int, j: int) -> Evidence:
        mine, theirs = referenced.get(entities[i].id, set()), referenced.get(entities[j].id, set())
        shared = len(mine & theirs) / min(len(mine), len(theirs)) if mine and theirs else 0.0
        context = float(means[i] @ means[j]) if i in means and j in means else None
        return Evidence(shared, context)

    return evidence
