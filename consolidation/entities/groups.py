"""Alias groups among entities: candidate pairs by blocking (never all pairs), each judged by the name rules
with its memories' evidence, then groups around a canonical that every member pairs with directly."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import combinations

import numpy as np

from .names import DELETION, NAME, SHORT_FORM, Evidence, alias_reason, blocking_keys, canonical_order, read_name

MAX_BLOCK = 64  # a blocking key shared by more names than this says nothing about any two of them


@dataclass(frozen=True)
class EntityRow:
    """An active entity as the task reads it."""

    id: str
    name: str
    category: str
    scope: str
    references: int = 0
    kept_apart: frozenset[str] = field(default_factory=frozenset)


@dataclass(frozen=True)
class AliasGroup:
    canonical: int  # index into the entities
    aliases: tuple[tuple[int, str], ...]  # (index, reason)


def candidate_pairs(entities: Sequence[EntityRow]) -> list[tuple[int, int]]:
    """Pairs of one category and scope that share a blocking key, each once."""
    codes = {NAME: 0, SHORT_FORM: 1, DELETION: 3}
    keys: list[str] = []
    owners: list[int] = []  # each key's entity and role, as index * 4 + the role's code
    for index, entity in enumerate(entities):
        # One category and scope per block: both go into the key (a deletion's apart from whole names).
        where = f"{entity.category.lower()}\x1f{entity.scope}\x1f"
        for key, role in blocking_keys(read_name(entity.name)):
            code = codes[role]
            keys.append(where + key if code != 3 else where + "~" + key)
            owners.append(index * 4 + code)
    if not keys:
        return []
    # Blocks by the keys' hashes, sorted in numpy: only the keys shared by two names come back to Python (a
    # hash collision only adds a pair for the rule to refuse).
    hashes = np.fromiter(map(hash, keys), dtype=np.int64, count=len(keys))
    order = np.argsort(hashes, kind="stable")
    sorted_hashes, sorted_owners = hashes[order], np.asarray(owners, dtype=np.int64)[order]
    starts = np.flatnonzero(np.r_[True, sorted_hashes[1:] != sorted_hashes[:-1]])
    sizes = np.diff(np.r_[starts, sorted_hashes.size])
    pairs: set[tuple[int, int]] = set()
    for start, size in zip(starts[(sizes > 1) & (sizes <= MAX_BLOCK)].tolist(),
                           sizes[(sizes > 1) & (sizes <= MAX_BLOCK)].tolist()):
        _pair_block(sorted_owners[start:start + size].tolist(), pairs)
    return sorted(pairs)


def _pair_block(block: list[int], pairs: set[tuple[int, int]]) -> None:
    """The pairs one block makes: any two of its names (own keys, stems, deletions), and each short form
    (initials, numeronym) with each name, never two short forms."""
    names = sorted({m >> 2 for m in block if m & 3 != 1})
    short = {m >> 2 for m in block if m & 3 == 1}
    pairs.update(combinations(names, 2))
    pairs.update((min(i, j), max(i, j)) for i in names for j in short if i != j)


def alias_groups(entities: Sequence[EntityRow], pairs: Sequence[tuple[int, int]],
                 evidence: Callable[[int, int], Evidence]) -> tuple[list[AliasGroup], int]:
    """The groups the judged pairs make, and how many pairs were judged. A member joins its group's canonical
    (most referenced, then longest name) only if the two pair directly: a chain A~B~C never merges A and C on
    B's word alone. Entities an administrator kept apart are never paired."""
    parent = list(range(len(entities)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    reasons: dict[tuple[int, int], str] = {}
    for i, j in pairs:
        reason = _judge(entities, i, j, evidence)
        if reason is not None:
            reasons[(i, j)] = reason
            parent[root(i)] = root(j)
    components: dict[int, list[int]] = defaultdict(list)
    for index in {i for pair in reasons for i in pair}:
        components[root(index)].append(index)
    groups = []
    for members in components.values():
        canonical = min(members, key=lambda i: canonical_order(read_name(entities[i].name), entities[i].references))
        aliases = []
        for member in sorted(members):
            if member == canonical:
                continue
            pair = (min(member, canonical), max(member, canonical))
            reason = reasons.get(pair) or _judge(entities, *pair, evidence)
            if reason is not None:
                aliases.append((member, reason))
        if aliases:
            groups.append(AliasGroup(canonical, tuple(aliases)))
    return sorted(groups, key=lambda g: entities[g.canonical].name), len(pairs)


def _judge(entities: Sequence[EntityRow], i: int, j: int, evidence: Callable[[int, int], Evidence]) -> str | None:
    a, b = entities[i], entities[j]
    if a.id in b.kept_apart or b.id in a.kept_apart:
        return None
    return alias_reason(read_name(a.name), read_name(b.name), a.category, evidence(i, j))
