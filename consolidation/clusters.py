"""Stable cluster identity: which existing MetaPattern each new cluster continues, and which ones dissolved."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

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
