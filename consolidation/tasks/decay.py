"""Decay: rescore the active memories' relevance and write the changed scores to the graph and Qdrant (every
memory in a full pass; in an incremental one, those whose score could have moved by more than epsilon); a
superseded memory's score stays capped (scoring.as_stored)."""

from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from ..other_engine import automem_consolidation
from ..scoring import NOT_CURRENT_RELEVANCE, ScoringInputs, changed, distribution, relevance_due, stored_relevance
from ..revisits import Lookup
from ..stores.automem import AutomemRecords
from .context import TaskContext
from .dues import fell_back, keep_dues, lookup_for

log = logging.getLogger(__name__)
WRITE_CHUNK = 5000


def run(ctx: TaskContext, dry_run: bool) -> dict[str, Any]:
    lookup, fallback = lookup_for(ctx, "decay")
    inputs = _read(ctx, lookup)
    ctx.progress(0, len(inputs))
    scores = stored_relevance(inputs, ctx.now)
    epsilon = ctx.settings.consolidation_score_epsilon
    moved = changed(inputs.relevance, scores, epsilon)
    rewrite = np.flatnonzero(moved)
    if not dry_run:
        if rewrite.size:
            _write(ctx, inputs, rewrite, scores)
        # Due when the score, as now stored, would next be rewritten.
        stored = np.where(moved, scores, inputs.relevance)
        keep_dues(ctx, "decay", lookup, inputs.node_ids, relevance_due(inputs, ctx.now, stored - epsilon))
    lifted_nodes, lifted = _lifted(ctx)
    if lifted and not dry_run:
        capped = np.full(len(lifted), NOT_CURRENT_RELEVANCE)
        ctx.vectors.set_relevance(lifted, capped)
        ctx.graph.write_scores(lifted_nodes, lifted, capped)
    ctx.progress(len(inputs), len(inputs))
    return {
        **fell_back(fallback),
        "capped_again": len(lifted),
        "memories_processed": len(inputs),
        "scores_changed": int(rewrite.size),
        "scores_unchanged": len(inputs) - int(rewrite.size),
        "average_before": _mean(inputs.relevance),
        "average_after": _mean(scores),
        "distribution": distribution(scores),
    }


def _read(ctx: TaskContext, lookup: Lookup | None) -> ScoringInputs:
    """The memories this pass scores; a full pass with forget later in its run hands what it read to forget's
    judgement (tasks/handoff.py)."""
    threshold = ctx.settings.consolidation_decay_importance_threshold
    if lookup is not None or ctx.handoff is None:
        return ctx.graph.scoring_inputs(threshold, lookup)
    inputs, merged = ctx.graph.scoring_inputs_and_merged(threshold)
    ctx.handoff.keep(ctx, inputs, merged)
    return inputs


def _lifted(ctx: TaskContext) -> tuple[list[int], list[str]]:
    """Memories no longer current whose score is above the cap (scoring.as_stored): another writer lifted it, or
    it was archived before the cap existed. Looked for in a full pass, and in every pass while AutoMem's own
    consolidation runs (its decay and forget rescore every memory, merged and superseded ones too; no change
    marker of ours says which). A scan of every memory's score: ~0.4 s at a million. They get the cap itself
    (a lower score than it stays lower)."""
    if ctx.since is not None and not automem_consolidation(*AutomemRecords(ctx.graph.falkor).read(),
                                                           ctx.now)["consolidating"]:
        return [], []
    return ctx.graph.lifted_above(NOT_CURRENT_RELEVANCE)


def _write(ctx: TaskContext, inputs: ScoringInputs, rows: np.ndarray, scores: np.ndarray) -> None:
    """Mirror to Qdrant and write the graph, chunk by chunk, overlapping the two stores.

    A chunk reaches the graph only after its Qdrant mirror succeeded: if anything fails, the graph still
    holds the old scores for the rest, the next run sees the difference and rewrites both. (Graph first
    could leave Qdrant stale for good, since epsilon would then call the graph's score unchanged.)
    """
    ids = [inputs.ids[i] for i in rows]
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="decay-mirror") as mirror:
        previous = None
        for start in range(0, rows.size, WRITE_CHUNK):
            part = slice(start, start + WRITE_CHUNK)
            mirrored = mirror.submit(ctx.vectors.set_relevance, ids[part], scores[rows[part]])
            if previous:
                _graph_write(ctx, inputs, rows, scores, ids, *previous)
            previous = (part, mirrored)
        if previous:
            _graph_write(ctx, inputs, rows, scores, ids, *previous)


def _graph_write(ctx, inputs, rows, scores, ids, part, mirrored) -> None:
    mirrored.result()  # raises if the mirror failed: then this chunk stays unwritten in the graph too
    ctx.graph.write_scores(inputs.node_ids[rows[part]], ids[part], scores[rows[part]])
    unchanged = len(inputs) - rows.size
    ctx.progress(unchanged + min(part.stop, rows.size), len(inputs))


def _mean(values: np.ndarray) -> float | None:
    known = values[~np.isnan(values)]
    return round(float(known.mean()), 6) if known.size else None
