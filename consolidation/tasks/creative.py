"""Creative associations: sample memories, compare unlinked pairs by vector, and add the edges the rules call for."""

from __future__ import annotations

import itertools
import logging
from collections import Counter
from typing import Any

import numpy as np

from ..rules import association_for
from ..scoring import CANDIDATE_RELEVANCE
from ..stores.graph import SampledMemory
from ..timeutil import to_iso
from .context import TaskContext

log = logging.getLogger(__name__)
MIN_RELEVANCE = CANDIDATE_RELEVANCE
ALGORITHM = "creative_association"


def run(ctx: TaskContext, dry_run: bool) -> dict[str, Any]:
    sample = ctx.graph.sample_memories(MIN_RELEVANCE, ctx.settings.consolidation_creative_sample_size)
    return _associate(ctx, dry_run, sample, lambda first, second: True)


def run_incremental(ctx: TaskContext, dry_run: bool) -> dict[str, Any]:
    """The incremental pass: only pairs with at least one member changed since the watermark. Half the sample
    comes from the changed memories, the rest from all, so each changed memory meets old ones as well as new;
    two unchanged memories had the same chance to meet in earlier runs. (The sample is random either way:
    there is no full-pass result to match, only this rule.)"""
    size = ctx.settings.consolidation_creative_sample_size
    changed, total = ctx.graph.sample_changed(MIN_RELEVANCE, (size + 1) // 2, ctx.since)
    fresh = {m.id for m in changed}
    others = ctx.graph.sample_memories(MIN_RELEVANCE, size - len(changed)) if changed else []
    sample = changed + [m for m in others if m.id not in fresh]
    report = _associate(ctx, dry_run, sample, lambda first, second: first.id in fresh or second.id in fresh)
    return {**report, "memories_changed": total, "memories_considered": len(sample)}


def _associate(ctx: TaskContext, dry_run: bool, sample: list[SampledMemory], eligible) -> dict[str, Any]:
    """Compare the sample's unlinked pairs of one scope that `eligible` admits, and add the edges the rules
    call for."""
    kinds = frozenset(ctx.settings.consolidation_creative_kinds)  # kinds measured below 0.9 precision are off
    ctx.progress(0, len(sample))
    linked = ctx.graph.linked_pairs([m.id for m in sample])
    with_vectors, matrix = ctx.vectors.vectors([m.id for m in sample])
    row_of = {memory_id: row for row, memory_id in enumerate(with_vectors)}
    similarities = _cosine_matrix(matrix)
    edges = []
    considered = 0
    for first, second in itertools.combinations(sample, 2):
        if first.scope != second.scope or frozenset((first.id, second.id)) in linked or first.id not in row_of \
                or second.id not in row_of or not eligible(first, second):
            continue
        considered += 1
        similarity = float(similarities[row_of[first.id], row_of[second.id]])
        edge = _edge(first, second, similarity, to_iso(ctx.now))
        if edge and edge["props"]["kind"] in kinds:
            edges.append(edge)
    if not dry_run:
        ctx.graph.create_associations("DISCOVERED", edges)
    ctx.progress(len(sample), len(sample))
    return {
        "memories_processed": len(sample),
        "pairs_compared": considered,
        "pairs_already_linked": len(linked),
        "by_kind": dict(Counter(e["props"]["kind"] for e in edges)),
        "edges": [_public(e) for e in edges],
    }


def _cosine_matrix(matrix: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    unit = matrix / np.where(norms == 0, 1.0, norms)
    return unit @ unit.T


def _edge(first: SampledMemory, second: SampledMemory, similarity: float, now_iso: str) -> dict[str, Any] | None:
    apart = None if np.isnan(first.created) or np.isnan(second.created) else second.created - first.created
    association = association_for(first.type, second.type, similarity, apart)
    if association is None:
        return None
    source, target = _direction(first, second, association.kind)
    return {
        "relation": association.relation,
        "a": source.id,
        "b": target.id,
        "props": {
            "kind": association.kind,
            "confidence": association.confidence,
            "similarity": round(similarity, 6),
            "discovered_at": now_iso,
            "origin": "consolidation",
            "algorithm": ALGORITHM,
        },
    }


def _direction(first: SampledMemory, second: SampledMemory, kind: str) -> tuple[SampledMemory, SampledMemory]:
    """An Insight explains a Pattern; otherwise the edge runs from the older memory to the newer one."""
    if kind == "explains":
        return (first, second) if first.type == "Insight" else (second, first)
    if np.isnan(second.created) or (not np.isnan(first.created) and first.created <= second.created):
        return first, second
    return second, first


def _public(edge: dict[str, Any]) -> dict[str, Any]:
    return {"relation": edge["relation"], "from": edge["a"], "to": edge["b"], **edge["props"]}
