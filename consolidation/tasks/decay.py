"""Decay: rescore every active memory's relevance and write the changed scores to the graph and Qdrant."""

from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from typing import Any

import numpy as np

from ..scoring import DEFAULT_CONFIDENCE, DEFAULT_IMPORTANCE, changed, clean_fraction, distribution, relevance_scores
from ..stores.graph import ScoringInputs
from ..timeutil import days_between
from .context import TaskContext

log = logging.getLogger(__name__)
WRITE_CHUNK = 5000


def run(ctx: TaskContext, dry_run: bool) -> dict[str, Any]:
    inputs = ctx.graph.scoring_inputs(ctx.settings.consolidation_decay_importance_threshold)
    ctx.progress(0, len(inputs))
    scores = current_relevance(inputs, ctx.now)
    rewrite = np.flatnonzero(changed(inputs.relevance, scores, ctx.settings.consolidation_score_epsilon))
    if not dry_run and rewrite.size:
        _write(ctx, inputs, rewrite, scores)
    ctx.progress(len(inputs), len(inputs))
    return {
        "memories_processed": len(inputs),
        "scores_changed": int(rewrite.size),
        "scores_unchanged": len(inputs) - int(rewrite.size),
        "average_before": _mean(inputs.relevance),
        "average_after": _mean(scores),
        "distribution": distribution(scores),
    }


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


def current_relevance(inputs: ScoringInputs, now: datetime) -> np.ndarray:
    """The formula applied at `now`; a missing creation time counts as now, a missing access as the creation,
    and a superseded memory's uses no longer count: it decays as if unused since it was made."""
    created = np.where(np.isnan(inputs.created), now.timestamp(), inputs.created)
    accessed = np.where(np.isnan(inputs.last_accessed) | inputs.superseded, created, inputs.last_accessed)
    return relevance_scores(
        age_days=days_between(created, now),
        days_since_access=days_between(accessed, now),
        relationship_counts=inputs.relationship_counts,
        importance=clean_fraction(inputs.importance, DEFAULT_IMPORTANCE),
        confidence=clean_fraction(inputs.confidence, DEFAULT_CONFIDENCE),
    )


def _mean(values: np.ndarray) -> float | None:
    known = values[~np.isnan(values)]
    return round(float(known.mean()), 6) if known.size else None
