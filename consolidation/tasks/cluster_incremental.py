"""Clustering's incremental pass: only the clusters the changes since the watermark touch are computed again,
whole, so that it reaches the state a full pass would (clusters.cluster_region says why that is enough).

A cluster is a connected component of the similarity graph among the candidates (active memories above the
relevance line). A change adds a candidate (new, edited, restored, risen above the line: searched against
every candidate) or takes one away (archived, merged, deleted, edited, fallen below the line: the MetaPattern it
was in is read again). The region's clusters are matched with the MetaPatterns it touched; every other
MetaPattern stays as it is, as a full pass would leave it.

Above the exact limit, with the similarity graph kept from an earlier run, the full pass is taken instead: it
searches only the changed vectors (in the kept cells) and takes every other pair from the copy, which costs
less than this pass's exact search of the changes (11 s against 33 s at a million memories, 1 % changed). It
also keeps both passes on one graph there, where an exact search would agree with the approximate graph only
as far as that graph's recall does.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..clusters import TooMuchChanged, Touched, cluster_region, region_clusters, subject_links, touched
from ..passes import changed_after
from ..scopes import scope_codes
from ..similarity import BallIndex, Pairs, normalized, similar_pairs_exact
from . import cluster
from .context import TaskContext, positions_in

SEARCH_SHARE = 0.25
SEARCH_FLOOR = 2000  # searching fewer memories than this is cheap, whatever share of the store they are
KEPT_GRAPH = "the similarity graph is kept: a full pass searches only what changed, in its cells"


def run(ctx: TaskContext, dry_run: bool) -> dict[str, Any]:
    settings = ctx.settings
    # Decided before any read: the full pass reads what it needs itself.
    if ctx.neighbours.kept_size(settings.consolidation_cluster_similarity) > settings.consolidation_cluster_exact_limit:
        return {**cluster.run(ctx, dry_run), "pass": "full", "pass_reason": KEPT_GRAPH}
    listing = ctx.graph.cluster_listing(cluster.min_relevance(settings))
    ids, matrix = ctx.vectors.vectors(listing.ids)
    ctx.progress(0, len(ids))
    unit = normalized(matrix)
    rows = positions_in(listing.ids, ids)
    scopes = scope_codes([listing.scopes[r] for r in rows])
    changes = listing.changes[rows] if rows.size else np.zeros(0)
    changed = changed_after(changes, ctx.since)
    position = dict(zip(ids, range(len(ids))))
    stored = ctx.graph.meta_patterns()
    patterns = touched(stored, position, set(changed.tolist()), settings.consolidation_cluster_min_size)
    threshold = settings.consolidation_cluster_similarity
    subjects = cluster.Subjects(ctx.graph, ids)
    try:
        region = cluster_region(changed, patterns, len(ids), _search(unit, scopes, threshold, patterns, subjects),
                                _within(unit, scopes, threshold, subjects),
                                max(SEARCH_FLOOR, int(SEARCH_SHARE * len(ids))))
    except TooMuchChanged as exc:
        return {**cluster.run(ctx, dry_run), "pass": "full", "pass_reason": str(exc)}
    groups = region_clusters(region, settings.consolidation_cluster_min_size)
    reached = {p.id for p in region.patterns}
    report = cluster.settle(ctx, dry_run, ids, unit, groups, region.patterns,
                            [p for p in stored if p.id not in reached])
    return {"memories_processed": int(region.members.size), "similar_pairs": region.similar_pairs, **report,
            "memories_changed": int(changed.size), "memories_considered": int(region.members.size)}


def _search(unit: np.ndarray, scopes: np.ndarray, threshold: float, patterns: list[Touched],
            subjects: cluster.Subjects):
    """Candidates against every candidate of their scope: the linked pairs (query number, position). The
    MetaPatterns' members are the balls of an exact index: a search skips the clusters it cannot reach."""
    index = BallIndex(unit, [entry.members for entry in patterns],
                      scopes if scopes.size and np.any(scopes != scopes[0]) else None)

    def search(positions: np.ndarray) -> Pairs:
        found = index.search(unit[positions], threshold, scopes[positions])
        keep = subject_links(subjects.of(positions[found.rows]), subjects.of(found.cols), found.similarities,
                             threshold)
        return Pairs(found.rows[keep], found.cols[keep], found.similarities[keep])

    return search


def _within(unit: np.ndarray, scopes: np.ndarray, threshold: float, subjects: cluster.Subjects):
    """The linked pairs among some candidates (local numbers), exact, within one scope."""
    def within(positions: np.ndarray) -> Pairs:
        found = similar_pairs_exact(unit[positions], threshold)
        first, second = positions[found.rows], positions[found.cols]
        keep = (scopes[first] == scopes[second]) & subject_links(subjects.of(first), subjects.of(second),
                                                                 found.similarities, threshold)
        return Pairs(found.rows[keep], found.cols[keep], found.similarities[keep])

    return within
