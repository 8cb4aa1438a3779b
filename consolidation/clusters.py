"""Stable cluster identity: which existing MetaPattern each new cluster continues, and which ones dissolved; and
which clusters the changes since a run touch (an incremental run recomputes only those)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from .similarity import clusters
from .stores.graph import MetaPatternRecord

# A cluster continues a MetaPattern when at least half of one of them is in the other.
MIN_SHARE = 0.5


@dataclass(frozen=True)
class ClusterMatch:
    members: frozenset[str]
    pattern_id: str | None  # None: a new MetaPattern
    previous_members: frozenset[str]


def match_clusters(
    clusters: Sequence[frozenset[str]], patterns: Sequence[MetaPatternRecord]
) -> tuple[list[ClusterMatch], list[str]]:
    """Pair clusters with existing MetaPatterns by member overlap (largest overlap first, one-to-one).

    Returns one match per cluster and the ids of MetaPatterns no cluster continues (to be retired).
    """
    owners: dict[str, list[MetaPatternRecord]] = {}
    for pattern in patterns:
        for member in pattern.member_ids:
            owners.setdefault(member, []).append(pattern)
    candidates = []
    for index, cluster in enumerate(clusters):
        overlaps = Counter(p.id for member in cluster for p in owners.get(member, ()))
        for pattern in {p.id: p for member in cluster for p in owners.get(member, ())}.values():
            overlap = overlaps[pattern.id]
            share = max(overlap / len(cluster), overlap / max(1, len(pattern.member_ids)))
            if share >= MIN_SHARE:
                candidates.append((overlap, share, index, pattern))
    candidates.sort(key=lambda c: (c[0], c[1], c[3].id), reverse=True)
    assigned: dict[int, MetaPatternRecord] = {}
    taken: set[str] = set()
    for _, _, index, pattern in candidates:
        if index not in assigned and pattern.id not in taken:
            assigned[index] = pattern
            taken.add(pattern.id)
    matches = [
        ClusterMatch(cluster, assigned[i].id if i in assigned else None,
                     assigned[i].member_ids if i in assigned else frozenset())
        for i, cluster in enumerate(clusters)
    ]
    retired = sorted(p.id for p in patterns if p.id not in taken)
    return matches, retired


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
    found = []
    for pattern in patterns:
        members = np.array(sorted(position[m] for m in pattern.member_ids if m in position), dtype=np.int64)
        broken = (members.size < len(pattern.member_ids) or members.size < min_size
                  or (pattern.size is not None and pattern.size != len(pattern.member_ids))
                  or any(int(m) in changed for m in members))
        found.append(Touched(pattern, members, broken))
    return found


def cluster_region(changed: Sequence[int], patterns: Sequence[Touched], n: int, search: Callable,
                   within: Callable, most_searched: int) -> ClusterRegion:
    """The region of every cluster a change touches, whole (pure, given the searches).

    After a run each cluster of the minimum size is exactly a MetaPattern's members; smaller components are
    stored nowhere. So: every changed candidate is searched (`search(positions)` -> pairs of (query number,
    position)); a MetaPattern reached, or broken, joins whole (an intact one's members are connected among
    themselves and have no pair with an unchanged memory outside; a broken one's pairs are read by
    `within(positions)` -> pairs of local numbers); a candidate reached that is in no MetaPattern is searched
    in turn, to read its small component whole. TooMuchChanged past `most_searched` searches."""
    growth = _Growth(patterns, n, within)
    for k, entry in enumerate(patterns):
        if entry.broken:
            growth.take(k)
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


class _Growth:
    """A cluster region as it grows: what is in it, the pairs read, and the MetaPatterns taken whole."""

    def __init__(self, patterns: Sequence[Touched], n: int, within: Callable):
        self.patterns, self.within = patterns, within
        self.owners: dict[int, list[int]] = {}
        for k, entry in enumerate(patterns):
            for member in entry.members.tolist():
                self.owners.setdefault(member, []).append(k)
        self.in_region = np.zeros(n, dtype=bool)
        self.taken: set[int] = set()
        self.edges: list[tuple[np.ndarray, np.ndarray]] = []
        self.chains: list[tuple[np.ndarray, np.ndarray]] = []

    def take(self, k: int) -> None:
        """A MetaPattern joins whole: a broken one with its members' pairs read, an intact one as a chain (its
        members are known to be connected)."""
        if k in self.taken:
            return
        self.taken.add(k)
        members = self.patterns[k].members
        self.in_region[members] = True
        if self.patterns[k].broken:
            local = self.within(members)
            self.edges.append((members[local.rows], members[local.cols]))
        else:
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
        rows = np.concatenate([found_rows] + [a for a, _ in self.chains]).astype(np.int64)
        cols = np.concatenate([found_cols] + [b for _, b in self.chains]).astype(np.int64)
        # Distinct pairs read (a pair found from both ends once); by sorting: numpy's hashing unique is slow.
        size = max(1, self.in_region.size)
        keys = np.sort(np.minimum(found_rows, found_cols) * size + np.maximum(found_rows, found_cols))
        read = int(np.count_nonzero(np.diff(keys))) + int(keys.size > 0)
        return ClusterRegion(np.flatnonzero(self.in_region), rows, cols, read,
                             [self.patterns[k].pattern for k in sorted(self.taken)])


def region_clusters(region: ClusterRegion, min_size: int) -> list[np.ndarray]:
    """The clusters (connected components of at least `min_size`) within the region, as arrays of positions."""
    local = np.full(int(region.members.max()) + 1 if region.members.size else 0, -1, dtype=np.int64)
    local[region.members] = np.arange(region.members.size)
    groups = clusters(region.members.size, local[region.rows], local[region.cols], min_size)
    return [region.members[g] for g in groups]
