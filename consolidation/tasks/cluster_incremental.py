"""Clustering's incremental pass: only the clusters the changes since the watermark touch are computed again,
whole, so that it reaches the state a full pass would (clusters.cluster_region says why that is enough).

A cluster is a connected component of the similarity graph among the candidates (active memories above the
relevance line). A change adds a candidate (new, edited, restored, risen above the line: its pairs are read) or
takes one away (archived, merged, deleted, edited, fallen below the line: the MetaPattern it was in is read
again). The region's clusters are matched with the MetaPatterns it touched; every other MetaPattern stays as it
is, as a full pass would leave it.

Where the pairs come from: above the exact limit, with the similarity graph kept in this process, from that graph
(brought up to date by a search of the changed vectors in its cells): looking a memory's pairs up there costs
far less than searching it, and both passes then read one graph. That holds only if the MetaPatterns were stored
from this graph as it is now (not built again since, not from another process's graph): else the full pass.
Below the limit, or with no graph kept, by an exact search of the changes against every candidate.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..clusters import TooMuchChanged, Touched, cluster_region, region_clusters, subject_links, touched, within_each
from ..passes import changed_after
from ..scopes import scope_codes
from ..similarity import BallIndex, Pairs, similar_pairs_exact
from ..stores.graph import MetaPatternRecord
from . import cluster
from .context import TaskContext

SEARCH_SHARE = 0.25
SEARCH_FLOOR = 2000  # searching fewer memories than this is cheap, whatever share of the store they are
# Past these shares of the candidates in MetaPatterns the changes broke, a full pass is taken: each broken one is
# read again whole. Where the members' subjects are not kept (the first pass after a start) their texts are read
# too: at 1M, with 1 % changed at random, the broken MetaPatterns held half the candidates, and the incremental
# pass took 25.9 s against a full pass's 21.3 s. With the subjects kept it took 21.9 s against 19.7 s: at half
# the candidates the pairs, the components and the population read by both passes cost what a full pass does.
UNREAD_BROKEN_SHARE = 0.25
BROKEN_SHARE = 0.5
GRAPH_BUILT_AGAIN = ("the kept similarity graph is not the one the clusters were stored from (built again since, "
                     "or another process clustered last)")


def run(ctx: TaskContext, dry_run: bool) -> dict[str, Any]:
    settings = ctx.settings
    memories = cluster.population(ctx)
    position = {memories.ids[p]: p for p in np.flatnonzero(memories.candidate).tolist()}
    changed = changed_after(memories.changes, ctx.since)
    changed = changed[memories.candidate[changed]]
    stored = ctx.graph.meta_patterns()
    patterns = touched(stored, position, set(changed.tolist()), settings.consolidation_cluster_min_size)
    subjects = cluster.Subjects(ctx.graph, memories, ctx.subjects)
    found = None  # the similar pairs of every candidate, when the kept graph has them
    too_broken = _too_broken(patterns, subjects, len(position))
    if too_broken:
        return _full_pass(ctx, dry_run, memories, found, stored, subjects, too_broken)
    if ctx.neighbours.kept_size(settings.consolidation_cluster_similarity) > settings.consolidation_cluster_exact_limit:
        found = cluster.similar_pairs(ctx, memories)  # brings the graph up to date, or builds it again
        if ctx.neighbours.settled(cluster.TASK) != ctx.since:
            return _full_pass(ctx, dry_run, memories, found, stored, subjects, GRAPH_BUILT_AGAIN)
    search, within, source = _searches(memories, patterns, found, subjects, settings.consolidation_cluster_similarity)
    try:
        region = cluster_region(changed, patterns, len(memories.ids), search, within,
                                max(SEARCH_FLOOR, int(SEARCH_SHARE * len(position))))
    except TooMuchChanged as exc:
        return _full_pass(ctx, dry_run, memories, found, stored, subjects, str(exc))
    subjects.keep(ctx)
    groups = region_clusters(region, settings.consolidation_cluster_min_size)
    reached = {p.id for p in region.patterns}
    report = cluster.settle(ctx, dry_run, memories.ids, memories.unit, groups, region.patterns,
                            [p for p in stored if p.id not in reached])
    if found is not None:
        cluster.settled_on_kept_graph(ctx, dry_run)
    return {"memories_processed": int(region.members.size), "similar_pairs": region.similar_pairs, **report,
            "memories_changed": int(changed.size), "memories_considered": int(region.members.size),
            "neighbours_from": source}


def _too_broken(patterns: list[Touched], subjects: cluster.Subjects, candidates: int) -> str | None:
    """Why reading the broken MetaPatterns again would cost about a full pass, if it would."""
    broken = [entry.members for entry in patterns if entry.broken]
    held = sum(group.size for group in broken)
    if held > max(SEARCH_FLOOR, BROKEN_SHARE * candidates):
        return (f"the MetaPatterns the changes broke hold {held} of {candidates} candidates: reading them again "
                "costs about a full pass")
    unread = subjects.unread(broken)  # (their vectors fingerprinted: only past the cheaper rule above)
    if unread > max(SEARCH_FLOOR, UNREAD_BROKEN_SHARE * candidates):
        return (f"the MetaPatterns the changes broke hold {unread} of {candidates} candidates whose texts this "
                "process has not read since they last changed: reading them costs about a full pass")
    return None


def _searches(memories: cluster.Population, patterns: list[Touched], found: Pairs | None,
              subjects: cluster.Subjects, threshold: float):
    """cluster_region's search and within, and where their pairs come from: the kept graph's pairs `found`,
    else an exact search."""
    if found is not None:
        kept = KeptPairs(found, len(memories.ids), subjects, threshold)
        return kept.search, kept.within, "the kept similarity graph"
    exact = ExactSearch(memories, [entry.members for entry in patterns], subjects, threshold)
    return exact.search, within_each(exact.among), "an exact search"


def _full_pass(ctx: TaskContext, dry_run: bool, memories: cluster.Population, found: Pairs | None,
               stored: list[MetaPatternRecord], subjects: cluster.Subjects, reason: str) -> dict[str, Any]:
    found = cluster.similar_pairs(ctx, memories) if found is None else found
    return {**cluster.full_pass(ctx, dry_run, memories, found, stored, subjects), "pass": "full",
            "pass_reason": reason}


class KeptPairs:
    """The linked pairs of some candidates, looked up among the similar pairs kept for every candidate (a mask
    over them per lookup: a region is read in a few rounds, and sorting 23M pairs for an index costs more)."""

    def __init__(self, found: Pairs, n: int, subjects: cluster.Subjects, threshold: float):
        self.found, self.n, self.subjects, self.threshold = found, n, subjects, threshold

    def search(self, positions: np.ndarray) -> Pairs:
        """Pairs (query number, position) of each of `positions` with any candidate."""
        number = np.full(self.n, -1, dtype=np.int64)
        number[positions] = np.arange(positions.size)
        wanted = number >= 0
        rows, cols, similarities = self.found
        by_row, by_col = np.flatnonzero(wanted[rows]), np.flatnonzero(wanted[cols])
        query = np.concatenate([number[rows[by_row]], number[cols[by_col]]])
        other = np.concatenate([cols[by_row], rows[by_col]]).astype(np.int64)
        similarity = np.concatenate([similarities[by_row], similarities[by_col]])
        return self._linked(query, other, similarity, positions[query])

    def within(self, groups: list[np.ndarray]) -> Pairs:
        """The pairs among the members of the groups, as positions (all groups at once: pairs between two
        groups are pairs of the region as well)."""
        wanted = np.zeros(self.n, dtype=bool)
        wanted[np.concatenate(groups)] = True
        rows, cols, similarities = self.found
        among = np.flatnonzero(wanted[rows])
        among = among[wanted[cols[among]]]
        first, second = rows[among].astype(np.int64), cols[among].astype(np.int64)
        return self._linked(first, second, similarities[among], first)

    def _linked(self, rows: np.ndarray, cols: np.ndarray, similarities: np.ndarray, ends: np.ndarray) -> Pairs:
        keep = subject_links(self.subjects.of(ends), self.subjects.of(cols), similarities, self.threshold)
        return Pairs(rows[keep], cols[keep], similarities[keep])


class ExactSearch:
    """The linked pairs of some candidates, searched exactly within their scope. The MetaPatterns' members (`balls`)
    are the balls of an exact index: a search skips the clusters it cannot reach."""

    def __init__(self, memories: cluster.Population, balls: list[np.ndarray], subjects: cluster.Subjects,
                 threshold: float):
        self.unit, self.candidate, self.subjects, self.threshold = (memories.unit, memories.candidate, subjects,
                                                                    threshold)
        self.scopes = scope_codes(memories.scope_keys)
        several = self.scopes.size and np.any(self.scopes != self.scopes[0])
        self.index = BallIndex(self.unit, balls, self.scopes if several else None)

    def search(self, positions: np.ndarray) -> Pairs:
        """Pairs (query number, position) of each of `positions` with every candidate of its scope."""
        found = self.index.search(self.unit[positions], self.threshold, self.scopes[positions])
        keep = self.candidate[found.cols] & subject_links(self.subjects.of(positions[found.rows]),
                                                          self.subjects.of(found.cols), found.similarities,
                                                          self.threshold)
        return Pairs(found.rows[keep], found.cols[keep], found.similarities[keep])

    def among(self, positions: np.ndarray) -> Pairs:
        """The linked pairs among some candidates (local numbers)."""
        found = similar_pairs_exact(self.unit[positions], self.threshold)
        first, second = positions[found.rows], positions[found.cols]
        keep = (self.scopes[first] == self.scopes[second]) & subject_links(
            self.subjects.of(first), self.subjects.of(second), found.similarities, self.threshold)
        return Pairs(found.rows[keep], found.cols[keep], found.similarities[keep])
