"""Creative associations: sample memories, compare unlinked pairs by vector, and add the edges the rules call for."""

from __future__ import annotations

import itertools
import logging
from collections import Counter
from typing import Any

import numpy as np

from ..episodes import Episodes, closest_partners, episodes_of
from ..rules import association_for
from ..scoring import CANDIDATE_RELEVANCE
from ..similarity import normalized
from ..stores.graph import SampledMemory
from ..timeutil import to_iso
from .context import TaskContext, positions_in

log = logging.getLogger(__name__)
MIN_RELEVANCE = CANDIDATE_RELEVANCE
ALGORITHM = "creative_association"
EPISODE_ALGORITHM = "episode_association"
EPISODE_PART = 16384  # episode members whose vectors are read at once (24 MB of 384-d rows)


def run(ctx: TaskContext, dry_run: bool) -> dict[str, Any]:
    sample = ctx.graph.sample_memories(MIN_RELEVANCE, ctx.settings.consolidation_creative_sample_size)
    return _with_episodes(ctx, dry_run, _associate(ctx, dry_run, sample, lambda first, second: True), None)


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
    report = _with_episodes(ctx, dry_run, report, ctx.since)
    return {**report, "memories_changed": total, "memories_considered": len(sample)}


def _with_episodes(ctx: TaskContext, dry_run: bool, report: dict[str, Any], since: int | None) -> dict[str, Any]:
    """The report with the same_episode links added: every current memory (of those changed after `since`, on
    an incremental pass) linked to its closest partner among what its scope stated within the episode's span.
    Unlike the sampled kinds these are drawn over the whole store: what was said together is recalled together,
    whatever a memory's relevance now. Episodes are cut from every current memory with a time; one without a
    vector is compared with nothing."""
    settings = ctx.settings
    if "same_episode" not in settings.consolidation_creative_kinds or not settings.consolidation_episode_seconds:
        return report
    ids, scope_keys, seconds, changes = ctx.graph.episode_population()
    episodes = episodes_of(scope_keys, seconds, settings.consolidation_episode_seconds)
    changed = np.ones(len(ids), bool) if since is None else changes > since
    # Only the episodes with a changed member can give a link naming one: only their vectors are read.
    first, second, similarity = _episode_links(ctx, ids, episodes.touching(changed))
    now_iso = to_iso(ctx.now)
    edges = [_episode_edge(ids[a], ids[b], value, now_iso)
             for a, b, value in zip(first.tolist(), second.tolist(), similarity.tolist()) if changed[a] or changed[b]]
    joined = ctx.graph.joined_pairs([(e["a"], e["b"]) for e in edges])
    edges = [e for e in edges if frozenset((e["a"], e["b"])) not in joined]
    if not dry_run:
        ctx.graph.create_associations("DISCOVERED", edges)
    by_kind = {**report["by_kind"], **({"same_episode": len(edges)} if edges else {})}
    return {**report, "by_kind": by_kind, "edges": report["edges"] + [_public(e) for e in edges]}


def _episode_links(ctx: TaskContext, ids: list[str], episodes: Episodes) -> tuple[np.ndarray, ...]:
    """Each episode member's closest partner (closest_partners), as rows of `ids`, ordered by them. The vectors
    are read a part of the episodes at a time: a few rows are copied, where asking for most of the store in
    episode order would have the vector cache reorder its million rows (and the next task's request undo it)."""
    min_similarity = ctx.settings.consolidation_episode_similarity
    number = np.full(len(ids), -1, dtype=np.int64)
    firsts, seconds, values = [np.zeros(0, np.int64)], [np.zeros(0, np.int64)], [np.zeros(0)]
    for part in episodes.parts(EPISODE_PART):
        members = part.members()
        member_ids = [ids[r] for r in members.tolist()]
        found, matrix = ctx.vectors.vectors(member_ids)
        rows = members[positions_in(member_ids, found)]
        number[rows] = np.arange(rows.size)
        links = closest_partners(part.renumbered(number), normalized(matrix), min_similarity)
        number[rows] = -1
        firsts.append(rows[links.first])
        seconds.append(rows[links.second])
        values.append(links.similarity)
    first, second, similarity = (np.concatenate(column) for column in (firsts, seconds, values))
    order = np.lexsort((second, first))  # (each memory is in one episode: no pair is found in two parts)
    return first[order], second[order], similarity[order]


def _episode_edge(first: str, second: str, similarity: float, now_iso: str) -> dict[str, Any]:
    return {"relation": "DISCOVERED", "a": first, "b": second,
            "props": {"kind": "same_episode", "confidence": round(similarity, 6), "similarity": round(similarity, 6),
                      "discovered_at": now_iso, "origin": "consolidation", "algorithm": EPISODE_ALGORITHM}}


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
