"""Stable cluster identity: which existing MetaPattern each new cluster continues, and which ones dissolved; and
which clusters the changes since a run touch (an incremental run recomputes only those)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import chain, repeat

import numpy as np

from .similarity import Pairs, clusters
from .stores.graph import MetaPatternRecord

# A cluster continues a MetaPattern when at least half of one of them is in the other.
MIN_SHARE = 0.5
# The sentence model puts two statements naming one person about 0.1 closer than the same statements naming
# nobody (all-MiniLM-L6-v2 on LoCoMo's facts, pairs near the line: 0.06-0.12). A link between them asks this
# much more, so that a shared name alone never chains a person's unrelated facts (music, a trip) into a cluster.
NAMED_SUBJECT_MARGIN = 0.05
# The link rules' version: under another, an incremental pass's watermark is not trusted (tasks.incremental_version).
LINK_RULES = 1


@dataclass(frozen=True)
class ClusterMatch:
    members: frozenset[str]
    pattern_id: str | None  # None: a new MetaPattern
    previous_members: frozenset[str]


def subject_links(first: np.ndarray, second: np.ndarray, similarities: np.ndarray, threshold: float) -> np.ndarray:
    """Which similar pairs clustering links, given each side's subject (a number; -1: it names nobody): pairs
    about one subject only, and those naming it at `threshold` + NAMED_SUBJECT_MARGIN. Decided by the pair
    alone, so a cluster stays exactly a connected component (what an incremental pass relies on)."""
    return (first == second) & ((first < 0) | (similarities >= threshold + NAMED_SUBJECT_MARGIN))


def match_clusters(
    clusters: Sequence[frozenset[str]], patterns: Sequence[MetaPatternRecord]
) -> tuple[list[ClusterMatch], list[str]]:
    """Pair clusters with existing MetaPatterns by member overlap: the pairs where at least MIN_SHARE of one is in
    the other, largest overlap first (then share, then pattern id), one-to-one.

    Returns one match per cluster and the ids of MetaPatterns no cluster continues (to be retired).
    """
    cluster_at, pattern_at, overlaps = _overlaps(clusters, patterns)
    cluster_sizes = np.fromiter(map(len, clusters), dtype=np.int64, count=len(clusters))
    pattern_sizes = np.fromiter((len(p.member_ids) for p in patterns), dtype=np.int64, count=len(patterns))
    shares = np.maximum(overlaps / cluster_sizes[cluster_at], overlaps / np.maximum(1, pattern_sizes[pattern_at]))
    candidates = sorted(((overlap, share, patterns[p].id, c, p) for overlap, share, c, p in zip(
        overlaps.tolist(), shares.tolist(), cluster_at.tolist(), pattern_at.tolist()) if share >= MIN_SHARE),
        reverse=True)
    assigned: dict[int, MetaPatternRecord] = {}
    taken: set[str] = set()
    for _, _, pattern_id, index, p in candidates:
        if index not in assigned and pattern_id not in taken:
            assigned[index] = patterns[p]
            taken.add(pattern_id)
    matches = [
        ClusterMatch(cluster, assigned[i].id if i in assigned else None,
                     assigned[i].member_ids if i in assigned else frozenset())
        for i, cluster in enumerate(clusters)
    ]
    retired = sorted(p.id for p in patterns if p.id not in taken)
    return matches, retired


def _overlaps(clusters: Sequence[frozenset[str]],
              patterns: Sequence[MetaPatternRecord]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(cluster, pattern, members in both) for every cluster and pattern sharing a member. Counted with numpy
    over every membership at once (at a million memories there are 700k): each member is numbered, the
    clusters' memberships sorted by number, and each pattern membership joined with the clusters holding it."""
    members = list(chain.from_iterable(clusters))
    number = dict(zip(members, range(len(members))))  # a member in several clusters: one number for it
    cluster_numbers = np.fromiter(map(number.__getitem__, members), dtype=np.int64, count=len(members))
    cluster_of = np.repeat(np.arange(len(clusters)), [len(c) for c in clusters])
    order = np.argsort(cluster_numbers, kind="stable")
    cluster_numbers, cluster_of = cluster_numbers[order], cluster_of[order]
    pattern_sizes = [len(p.member_ids) for p in patterns]
    pattern_numbers = np.fromiter(map(number.get, chain.from_iterable(p.member_ids for p in patterns),
                                      repeat(-1)), dtype=np.int64, count=sum(pattern_sizes))
    pattern_of = np.repeat(np.arange(len(patterns)), pattern_sizes)
    low = np.searchsorted(cluster_numbers, pattern_numbers, side="left")
    counts = np.searchsorted(cluster_numbers, pattern_numbers, side="right") - low
    starts = np.cumsum(counts) - counts
    joined = cluster_of[np.arange(int(counts.sum())) - np.repeat(starts - low, counts)]
    width = max(1, len(clusters))
    pairs, overlaps = np.unique(np.repeat(pattern_of, counts) * width + joined, return_counts=True)
    pattern_at, cluster_at = np.divmod(pairs, width)
    return cluster_at, pattern_at, overlaps


class TooMuchChanged(Exception):
    """The changes reach so much of the store that a full pass costs about the same."""


@dataclass(frozen=True)
class Touched:
    """A MetaPattern as an incremental run sees it: its members' positions among the candidates now, and
    whether it is broken (a member changed or is no longer a candidate), so its members' pairs must be read."""

    pattern: MetaPatternRecord
    members: np.ndarray
    broken: bool


@dataclass
class ClusterRegion:
    """The candidates whose clusters the changes touch (positions), the pairs among them (positions, plus a chain
    through each intact MetaPattern: its members are known to be connected), and the MetaPatterns touched."""

    members: np.ndarray
    rows: np.ndarray
    cols: np.ndarray
    similar_pairs: int  # pairs read (the chains excluded)
    patterns: list[MetaPatternRecord]


def touched(patterns: Sequence[MetaPatternRecord], position: dict[str, int], changed: set[int],
            min_size: int) -> list[Touched]:
    """Each MetaPattern with its members' positions. Broken: a member changed, is no longer a candidate (or was
    deleted: fewer members than its cluster_size), or it is smaller than clusters are now."""
    is_changed = np.zeros(max(max(position.values(), default=-1), max(changed, default=-1)) + 1, dtype=bool)
    is_changed[list(changed)] = True  # (a mask: at a million memories MetaPatterns hold 700k members)
    found = []
    for pattern in patterns:
        members = np.sort(np.fromiter((position[m] for m in pattern.member_ids if m in position), dtype=np.int64))
        broken = (members.size < len(pattern.member_ids) or members.size < min_size
                  or (pattern.size is not None and pattern.size != len(pattern.member_ids))
                  or bool(is_changed[members].any()))
        found.append(Touched(pattern, members, broken))
    return found


def cluster_region(changed: Sequence[int], patterns: Sequence[Touched], n: int, search: Callable,
                   within: Callable, most_searched: int) -> ClusterRegion:
    """The region of every cluster a change touches, whole (pure, given the searches).

    After a run each cluster of the minimum size is exactly a MetaPattern's members; smaller components are
    stored nowhere. So: every changed candidate is searched (`search(positions)` -> pairs of (query number,
    position)); a MetaPattern reached, or broken, joins whole (an intact one's members are connected among
    themselves and have no pair with an unchanged memory outside; the broken ones' pairs are read at once by
    `within(groups)` -> the pairs among each group's positions, as positions); a candidate reached that is in
    no MetaPattern is searched in turn, to read its small component whole. TooMuchChanged past `most_searched`
    searches."""
    growth = _Growth(patterns, n)
    growth.take_broken(within)
    queue = sorted(set(int(c) for c in changed))
    growth.in_region[queue] = True
    searched: set[int] = set()
    while queue:
        batch = np.array([p for p in queue if p not in searched], dtype=np.int64)
        if batch.size == 0:
            break
        searched.update(batch.tolist())
        if len(searched) > most_searched:
            raise TooMuchChanged(f"the changes reach more than {most_searched} memories to search: a full pass "
                                 "costs about the same")
        hits = search(batch)
        queue = growth.reach(batch[hits.rows], hits.cols.astype(np.int64))
    return growth.region()


def within_each(pairs_among: Callable[[np.ndarray], Pairs]) -> Callable[[Sequence[np.ndarray]], Pairs]:
    """cluster_region's `within` from a search of one group at a time (`pairs_among(positions)` -> pairs of
    local numbers)."""
    def within(groups: Sequence[np.ndarray]) -> Pairs:
        found = [(group, pairs_among(group)) for group in groups]
        return Pairs.joined([(group[local.rows], group[local.cols], local.similarities) for group, local in found])

    return within


class _Growth:
    """A cluster region as it grows: what is in it, the pairs read, and the MetaPatterns taken whole."""

    def __init__(self, patterns: Sequence[Touched], n: int):
        self.patterns = patterns
        self.owners: dict[int, list[int]] = {}
        for k, entry in enumerate(patterns):
            for member in entry.members.tolist():
                self.owners.setdefault(member, []).append(k)
        self.in_region = np.zeros(n, dtype=bool)
        self.taken: set[int] = set()
        self.broken_pairs = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64))  # as `within` read them
        self.edges: list[tuple[np.ndarray, np.ndarray]] = []  # as the searches found them
        self.chains: list[tuple[np.ndarray, np.ndarray]] = []

    def take_broken(self, within: Callable[[Sequence[np.ndarray]], Pairs]) -> None:
        """Every broken MetaPattern joins whole, its members' pairs read."""
        broken = [k for k, entry in enumerate(self.patterns) if entry.broken]
        self.taken.update(broken)
        groups = [self.patterns[k].members for k in broken]
        for members in groups:
            self.in_region[members] = True
        if groups:
            found = within(groups)
            self.broken_pairs = (found.rows.astype(np.int64), found.cols.astype(np.int64))

    def take(self, k: int) -> None:
        """An intact MetaPattern joins whole, as a chain (its members are known to be connected)."""
        if k in self.taken:
            return
        self.taken.add(k)
        members = self.patterns[k].members
        self.in_region[members] = True
        self.chains.append((members[:-1], members[1:]))

    def reach(self, first: np.ndarray, second: np.ndarray) -> list[int]:
        """Add the pairs found; take the MetaPatterns reached; return the memories in none, to be searched."""
        keep = first != second
        self.edges.append((first[keep], second[keep]))
        loners = []
        for target in sorted(set(second[keep].tolist())):
            if target in self.owners:
                for k in self.owners[target]:
                    self.take(k)
            elif not self.in_region[target]:
                self.in_region[target] = True
                loners.append(target)
        return loners

    def region(self) -> ClusterRegion:
        empty = [np.zeros(0, dtype=np.int64)]
        found_rows, found_cols = (np.concatenate([side[k] for side in self.edges] + empty) for k in (0, 1))
        rows = np.concatenate([self.broken_pairs[0], found_rows] + [a for a, _ in self.chains]).astype(np.int64)
        cols = np.concatenate([self.broken_pairs[1], found_cols] + [b for _, b in self.chains]).astype(np.int64)
        return ClusterRegion(np.flatnonzero(self.in_region), rows, cols, self._pairs_read(found_rows, found_cols),
                             [self.patterns[k].pattern for k in sorted(self.taken)])

    def _pairs_read(self, found_rows: np.ndarray, found_cols: np.ndarray) -> int:
        """Distinct pairs read: those `within` read, and the searches' others (a pair found from both ends, or
        also read within a broken MetaPattern, once). Only the pairs within touching a searched memory (`found_rows`)
        are sorted: at a million memories the broken MetaPatterns held 13M pairs, and sorting them took 1.5 s."""
        size = max(1, self.in_region.size)
        found = np.unique(np.minimum(found_rows, found_cols) * size + np.maximum(found_rows, found_cols))
        first, second = self.broken_pairs
        searched = np.zeros(size, dtype=bool)
        searched[found_rows] = True
        near = np.flatnonzero(searched[first] | searched[second])
        again = np.minimum(first[near], second[near]) * size + np.maximum(first[near], second[near])
        return int(first.size + found.size - np.isin(found, again).sum())


def region_clusters(region: ClusterRegion, min_size: int) -> list[np.ndarray]:
    """The clusters (connected components of at least `min_size`) within the region, as arrays of positions."""
    local = np.full(int(region.members.max()) + 1 if region.members.size else 0, -1, dtype=np.int64)
    local[region.members] = np.arange(region.members.size)
    groups = clusters(region.members.size, local[region.rows], local[region.cols], min_size)
    return [region.members[g] for g in groups]
