"""Decay: rescore every active memory's relevance and write the changed scores to the graph and Qdrant."""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

import numpy as np

from ..scoring import DEFAULT_CONFIDENCE, DEFAULT_IMPORTANCE, changed, clean_fraction, distribution, relevance_scores
from ..stores.graph import ScoringInputs
from ..timeutil import days_between
from .context import TaskContext

log = logging.getLogger(__name__)


def run(ctx: TaskContext, dry_run: bool) -> dict[str, Any]:
    inputs = ctx.graph.scoring_inputs(ctx.settings.consolidation_decay_importance_threshold)
    ctx.progress(0, len(inputs))
    scores = current_relevance(inputs, ctx.now)
    rewrite = changed(inputs.relevance, scores, ctx.settings.consolidation_score_epsilon)
    ids = [inputs.ids[i] for i in np.flatnonzero(rewrite)]
    if not dry_run and ids:
        # Qdrant first: if the graph write then fails, the graph still holds the old scores, so the next
        # run sees the difference and rewrites both; the other order could leave Qdrant stale for good.
        ctx.vectors.set_relevance(ids, scores[rewrite])
        ctx.graph.write_scores(ids, scores[rewrite])
    ctx.progress(len(inputs), len(inputs))
    return {
        "memories_processed": len(inputs),
        "scores_changed": len(ids),
        "scores_unchanged": len(inputs) - len(ids),
        "average_before": _mean(inputs.relevance),
        "average_after": _mean(scores),
        "distribution": distribution(scores),
    }


def current_relevance(inputs: ScoringInputs, now: datetime) -> np.ndarray:
    """The formula applied at `now`; a missing creation time counts as now, a missing access as the creation."""
    created = np.where(np.isnan(inputs.created), now.timestamp(), inputs.created)
    accessed = np.where(np.isnan(inputs.last_accessed), created, inputs.last_accessed)
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
