"""Duplicates (pure): which similar memories state one fact, in which groups, and which memory each group keeps.

A pair is judged by judge.py (its vectors' similarity and its words' evidence); groups are complete-link, every
two members judged one fact, so "deploys", "staging deploys" and "production deploys" never end up together.
Millions of similar pairs are first narrowed in numpy by what can be read off every memory's fact key without
reading its text again (a different number, a negation, too many words apart for the similarity); only the
pairs left are judged one by one. A merge's field rules are here too: the canonical's fields after a merge, and
after one of its duplicates is restored (lifecycle/merging.py applies them).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import NamedTuple

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from ..similarity import INDEX, Pairs
from ..slices import columns_of, joined, slices
from ..timeutil import epoch_or_nan
from .candidate import Candidate
from .facts import NOT
from .clauses import read_clause
from .evidence import weigh
from .judge import MIN_SHARED_TERMS, Thresholds, Verdict, announces, decide
from .model_judge import GreyPair
from .reading import read
from .replacement import is_state, same_named_subject, subjects_differ

# Memories with one fact key are compared directly only in groups this small (a larger group of word-for-word
# restatements is left to the neighbour graph: its pairs are close anyway).
SAME_FACT_GROUP_LIMIT = 50
KEY_SLACK = 2
CONTRASTS = frozenset("but while whereas although though however yet".split())
SAME_TIME_SECONDS = 3600.0  # statements made this close are told at one time (one conversation)
SIFT_SLICE = 1 << 18  # similar pairs sifted at once (_sifted)


@dataclass(frozen=True, slots=True)
class Merge:
    into: str
    duplicates: tuple[str, ...]
    similarity: float  # the lowest similarity of the pairs that joined the group
    reason: str


@dataclass(frozen=True)
class PairJudge:
    """Judges pairs of candidates: with the hashing embedder's thresholds when it made both vectors, else with a
    sentence model's (the built-in one's, a client's); and with the model's verdicts on grey pairs (by
    `settled_key(first text, second text)`) where it was asked."""

    client: Thresholds
    built_in: Thresholds
    settled: Mapping[str, bool] = field(default_factory=dict)
    settled_key: Callable[[str, str], str] | None = None

    def thresholds(self, a: Candidate, b: Candidate) -> Thresholds:
        return self.built_in if a.built_in and b.built_in else self.client

    def verdict(self, a: Candidate, b: Candidate, similarity: float) -> Verdict:
        """The verdict on two memories and every text merged into each: all must state one fact."""
        if a.type != b.type or a.scope != b.scope:
            return Verdict(False, lambda: "kept apart: different type or scope", math.nan)
        thresholds = self.thresholds(a, b)
        found = None
        for first in (a.content, *a.merged_texts):
            for second in (b.content, *b.merged_texts):
                if subjects_differ(first, second):
                    return Verdict(False, lambda: "kept apart: said by or about different people", math.nan)
                verdict = self.texts(first, second, similarity, thresholds)
                if not verdict.same and restates(first, second, similarity, thresholds, a.created, b.created):
                    verdict = Verdict(True, lambda: f"one fact restated by {' '.join(same_named_subject(first, second))}"
                                                    f": similarity {similarity:.3f} >= {thresholds.restated:.3f}, "
                                                    "no conflicting value", thresholds.restated)
                if not verdict.same:
                    return verdict
                found = found or verdict
        return found

    def texts(self, first: str, second: str, similarity: float, thresholds: Thresholds) -> Verdict:
        verdict = decide(read(first), read(second), similarity, thresholds)
        if verdict.grey and self.settled_key is not None:
            answer = self.settled.get(self.settled_key(first, second))
            if answer is not None:
                said = "the same fact" if answer else "different facts"
                return replace(verdict, same=answer, why=lambda: f"{verdict.reason}; the model judge said {said}")
        return verdict

    @property
    def lowest(self) -> float:
        """The least similarity at which any pair may merge (the grey zone's lower edge)."""
        return min(t.same_fact - t.grey_margin for t in (self.client, self.built_in))

    @property
    def least_per_added_term(self) -> float:
        return min(self.client.per_added_term, self.built_in.per_added_term)

    def describe(self) -> dict[str, dict[str, float]]:
        return {"sentence model's vectors": self.client.describe(),
                "hashing embedder's vectors": self.built_in.describe()}


@dataclass
class Judged:
    """What duplicate_groups found: the merges, the similar pairs of one kind kept apart, and the grey pairs."""

    merges: list[Merge]
    kept_apart: Pairs
    grey: list[GreyPair]


def restates(first: str, second: str, similarity: float, thresholds: Thresholds, first_created: float,
             second_created: float) -> bool:
    """Whether two texts restate one fact of one named subject (Thresholds.restated): that similar, nothing in
    them conflicting, and each a state of the subject, or both told at one time (two events told at different
    times may be two events: "attended a pride parade last week", a month apart)."""
    if similarity < thresholds.restated or not same_named_subject(first, second):
        return False
    if any(CONTRASTS.intersection(read_clause(text).words) for text in (first, second)):
        return False  # "... is the only bank left to sell, but the state still holds stakes": two facts
    one, other = read(first), read(second)
    if announces(one) != announces(other):
        return False
    evidence = weigh(one, other)
    if evidence.conflicts or len(evidence.shared) < MIN_SHARED_TERMS:
        return False
    together = abs(first_created - second_created) <= SAME_TIME_SECONDS
    return together or is_state(read_clause(first)) and is_state(read_clause(second))


def duplicate_groups(candidates: Sequence[Candidate], rows: np.ndarray, cols: np.ndarray, similarities: np.ndarray,
                     judge: PairJudge, similarity: Callable[[int, int], float] | None = None,
                     connections: Callable[[list[str]], dict[str, int]] | None = None) -> Judged:
    """Merges for the similar pairs (rows[k], cols[k]) judged one fact, grouped complete-link. `similarity(i, j)`:
    the cosine of two candidates worked out one way, whatever search found the pair (a merge records it, and
    complete-link asks it of pairs the search did not return). `connections(ids)`: the edge counts of the
    memories that may merge, when the candidates were read without them (they rank a canonical)."""
    similarity = similarity or _from_pairs(rows, cols, similarities)
    same_kind, may_merge = _sifted(KeyColumns.of(candidates), rows, cols, similarities, judge)
    worth = np.flatnonzero(may_merge)
    judged_same = np.zeros(rows.size, dtype=bool)
    grey = []
    for k in worth.tolist():
        a, b = candidates[rows[k]], candidates[cols[k]]
        verdict = judge.verdict(a, b, float(similarities[k]))
        judged_same[k] = verdict.same
        if verdict.grey:
            grey.append(GreyPair(a.content, b.content, float(similarities[k]), verdict.same))
    apart = same_kind & ~judged_same
    kept_apart = Pairs(rows[apart], cols[apart], similarities[apart])
    if not judged_same.any():
        return Judged([], kept_apart, grey)
    merges = _groups(candidates, rows[judged_same], cols[judged_same], judge, similarity, connections)
    return Judged(merges, kept_apart, grey)


def _groups(candidates, rows, cols, judge: PairJudge, similarity, connections) -> list[Merge]:
    n = len(candidates)
    _, labels = connected_components(coo_matrix((np.ones(rows.size), (rows, cols)), shape=(n, n)), directed=False)
    positions = np.unique(np.concatenate([rows, cols])).tolist()
    merging = [candidates[index] for index in positions]
    if connections is not None:
        counts = connections([c.id for c in merging])
        merging = [replace(c, connections=counts.get(c.id, 0)) for c in merging]
    place = {c.id: index for index, c in zip(positions, merging)}
    members: dict[int, list[Candidate]] = defaultdict(list)
    for index, candidate in zip(positions, merging):
        members[int(labels[index])].append(candidate)
    merges = []
    for _, component in sorted(members.items(), key=lambda item: min(c.id for c in item[1])):
        def together(a: Candidate, b: Candidate) -> bool:
            # Two memories an administrator set apart (a restore) are no group, so each may join others.
            apart = a.id in b.distinct_from or b.id in a.distinct_from
            return not apart and judge.verdict(a, b, similarity(place[a.id], place[b.id])).same

        for group in complete_link(canonical_order(component), together):
            merges.extend(_merges_of(group, judge, lambda a, b: similarity(place[a.id], place[b.id])))
    return merges


def _from_pairs(rows: np.ndarray, cols: np.ndarray, similarities: np.ndarray) -> Callable[[int, int], float]:
    found = {(int(a), int(b)): float(s) for a, b, s in zip(rows.tolist(), cols.tolist(), similarities.tolist())}
    return lambda a, b: found.get((min(a, b), max(a, b)), -1.0)


KEY_COLUMN_TYPES = (np.int64, np.int64, bool, bool, np.int64, np.int64)  # KeyColumns' fields, in order


class KeyColumns(NamedTuple):
    """What every candidate's fact key shows, as columns: its kind (type and scope: only one kind merges), how
    many terms, whether negated, whether a plain statement (not a change), and its numbers (how many, a hash of
    which)."""

    kind: np.ndarray
    size: np.ndarray
    negated: np.ndarray
    plain: np.ndarray
    number_count: np.ndarray
    number_hash: np.ndarray

    @classmethod
    def of(cls, candidates: Sequence[Candidate]) -> KeyColumns:
        kinds: dict = {}
        parts = [_key_columns(part, kinds) for part in slices(candidates)]
        return cls(*(joined([part[k] for part in parts], dtype) for k, dtype in enumerate(KEY_COLUMN_TYPES)))


def _key_columns(candidates: Sequence[Candidate], kinds: dict) -> list[np.ndarray]:
    """KeyColumns' columns of a slice of candidates (`kinds`: the code of each type and scope met so far). A row
    per candidate lives only as long as its slice: a million of them took ~100 MB, which stayed in the process's
    heap for the rest of the pass."""
    rows = [(kinds.setdefault((c.type, c.scope), len(kinds)), len(c.fact.terms), NOT in c.fact.terms,
             c.fact.change is None, c.fact.number_count, c.fact.number_hash) for c in candidates]
    return [np.array(column, dtype) for column, dtype in zip(columns_of(rows), KEY_COLUMN_TYPES)]


def _sifted(columns: KeyColumns, rows: np.ndarray, cols: np.ndarray, similarities: np.ndarray,
            judge: PairJudge) -> tuple[np.ndarray, np.ndarray]:
    """For every pair: whether its two memories are of one kind, and whether the judge could merge them
    (_may_merge), a slice of pairs at a time: the sift's temporaries are int64 and float64 columns gathered
    per pair, ~190 MB each for the 23M pairs of a million memories (about 0.8 GB at once), and a few MB for a
    slice."""
    same_kind = np.empty(rows.size, dtype=bool)
    may_merge = np.empty(rows.size, dtype=bool)
    for start in range(0, rows.size, SIFT_SLICE):
        part = slice(start, start + SIFT_SLICE)
        same_kind[part] = columns.kind[rows[part]] == columns.kind[cols[part]]
        may_merge[part] = _may_merge(columns, rows[part], cols[part], similarities[part], judge)
    return same_kind, may_merge


def _may_merge(columns: KeyColumns, rows: np.ndarray, cols: np.ndarray, similarities: np.ndarray,
               judge: PairJudge) -> np.ndarray:
    """Which pairs the judge could merge, by what every fact key shows at once: one kind, similar enough for the
    fewest words the two keys differ by, the same negation, and (for plain statements) no number on each side
    that the other lacks ("note 517" / "note 518": as many numbers each, not the same ones; a hash collision
    only lets a pair through to the judge). A necessary condition only: the pairs left are judged one by one.
    A memory's own text is one of the texts a verdict compares (PairJudge.verdict), so what its key shows
    holds whatever was merged into it."""
    c = columns
    both_plain = c.plain[rows] & c.plain[cols]
    # Keys count a few terms the judge does not (a preference, a number written twice) and the judge joins a few
    # the keys keep apart (compounds, spellings): the bound leaves room for KEY_SLACK of them.
    apart_words = np.where(both_plain, np.abs(c.size[rows] - c.size[cols]), 0)
    needed = judge.lowest + judge.least_per_added_term * np.maximum(apart_words - KEY_SLACK, 0)
    numbers_differ = both_plain & (c.number_count[rows] == c.number_count[cols]) & (c.number_count[rows] > 0) & \
        (c.number_hash[rows] != c.number_hash[cols])
    return (c.kind[rows] == c.kind[cols]) & (similarities >= needed) & \
        ((c.negated[rows] == c.negated[cols]) | ~both_plain) & ~numbers_differ


def complete_link(ordered: list[Candidate], together: Callable[[Candidate, Candidate], bool]) -> list[list[Candidate]]:
    """Split a connected group so every two members are together; the best-ranked members come first."""
    groups: list[list[Candidate]] = []
    for member in ordered:
        home = next((g for g in groups if all(together(member, other) for other in g)), None)
        if home is None:
            groups.append([member])
        else:
            home.append(member)
    return groups


def canonical_order(group: Sequence[Candidate]) -> list[Candidate]:
    """Most connected, then most used, then oldest (then id, so the choice never depends on input order);
    protected memories first, since a merge never archives them."""
    def rank(c: Candidate):
        created = c.created if not math.isnan(c.created) else math.inf
        return (not c.protected, -c.connections, -c.access_count, created, c.id)

    return sorted(group, key=rank)


def _merges_of(group: Sequence[Candidate], judge: PairJudge, similarity) -> list[Merge]:
    """The canonical takes every member it may; a member an administrator set apart from it (a restore), or a
    protected one, stays, and the members left form their own group. Each merge says what decided it."""
    merges = []
    remaining = canonical_order(group)
    while len(remaining) > 1:
        canonical, rest = remaining[0], remaining[1:]
        taken = [m for m in rest if not m.protected and m.id not in canonical.distinct_from
                 and canonical.id not in m.distinct_from]
        if taken:
            closest = [similarity(canonical, m) for m in taken]
            weakest = taken[int(np.argmin(closest))]
            reason = judge.verdict(canonical, weakest, min(closest)).reason
            merges.append(Merge(canonical.id, tuple(m.id for m in taken), round(min(closest), 6),
                                f"same type ({canonical.type}); {reason}"))
        remaining = [m for m in rest if m not in taken and not m.protected]
    return merges


def exact_cosine(unit: np.ndarray, a: int, b: int) -> float:
    """The cosine of two unit rows, summed in float64: the same number whatever the rows' places in memory."""
    return float(np.dot(unit[a].astype(np.float64), unit[b].astype(np.float64)))


def fact_ids(candidates: Sequence[Candidate]) -> np.ndarray:
    """A number per candidate, equal for candidates of one type and scope stating the same key."""
    seen: dict = {}
    return np.fromiter((seen.setdefault((c.scope, c.type, c.fact.terms), len(seen)) for c in candidates), np.int64,
                       len(candidates))


def with_same_facts(pairs: Pairs, candidates: list[Candidate], facts: np.ndarray, unit: np.ndarray,
                    threshold: float) -> Pairs:
    """The neighbour graph's pairs plus every close pair stating the very same fact key. The graph is
    approximate at scale and may miss a pair one run and find it the next; the texts are exact, so a
    restatement whose key matches is compared whatever the graph found (a second run then has nothing left to
    merge)."""
    groups = facts.copy()
    groups[[not c.fact.terms for c in candidates]] = -1
    order = np.argsort(groups, kind="stable")
    sizes = np.bincount(groups[groups >= 0])
    starts = np.concatenate(([0], np.cumsum(sizes))) + int(np.count_nonzero(groups < 0))
    rows, cols = [], []
    for group in np.flatnonzero((sizes > 1) & (sizes <= SAME_FACT_GROUP_LIMIT)).tolist():
        members = order[starts[group]:starts[group + 1]]
        first, second = np.triu_indices(members.size, 1)
        rows.append(members[first])
        cols.append(members[second])
    if not rows:
        return pairs
    rows, cols = np.concatenate(rows), np.concatenate(cols)
    rows, cols = np.minimum(rows, cols).astype(INDEX), np.maximum(rows, cols).astype(INDEX)
    similarities = np.einsum("ij,ij->i", unit[rows], unit[cols])
    close = similarities >= threshold
    return pairs.union(Pairs(rows[close], cols[close], similarities[close]), len(candidates))


# The canonical's fields a merge changes (merged_fields), recorded before and after so a restore can put them back.
CANONICAL_FIELDS = ("access_count", "importance", "confidence", "last_accessed", "tags")


def merged_fields(canonical: dict, duplicates: Sequence[dict], most_uses: int) -> dict:
    """The canonical's fields after a merge: uses summed, the highest importance, confidence and last use, and
    every tag (the canonical's first)."""
    everyone = [canonical, *duplicates]
    tags = list(dict.fromkeys(t for m in everyone for t in (m.get("tags") or [])))
    last_uses = [m["last_accessed"] for m in everyone if isinstance(m.get("last_accessed"), str)]
    return {
        "access_count": min(most_uses, sum(int(m.get("access_count") or 0) for m in everyone)),
        "importance": max(_number(m.get("importance")) for m in everyone),
        "confidence": max(_number(m.get("confidence")) for m in everyone),
        "last_accessed": max(last_uses, key=_instant) if last_uses else canonical.get("last_accessed"),
        "tags": tags,
    }


def canonical_apart(current: dict, record: dict, others: Sequence[dict], most_uses: int) -> tuple[dict, list[str]]:
    """A canonical's fields once the duplicate of merge record `record` is restored (`others`: the records of the
    duplicates still merged into it): as before the merge plus the duplicates still merged, except a field
    someone changed since the merge, which keeps its change (uses: minus this one's); and its distinct_from,
    which now sets that duplicate apart."""
    target = merged_fields({**current, **record["canonical_before"]},
                           [o["duplicate"]["properties"] for o in others], most_uses)
    after = record["canonical_after"]
    fields = {}
    for name in CANONICAL_FIELDS:
        if current.get(name) == after.get(name):
            fields[name] = target[name]
        elif name == "access_count":
            taken = int(record["duplicate"]["properties"].get("access_count") or 0)
            fields[name] = max(int(current.get(name) or 0) - taken, 0)
    return fields, sorted({*current.get("distinct_from", []), record["duplicate_id"]})


def unmerged_properties(properties: dict, canonical_id: str, at: str) -> dict:
    """A merged duplicate's properties as an active memory of its own again, kept apart from its canonical."""
    props = {key: value for key, value in properties.items() if key not in ("merged_into", "merged_at")}
    props.update(archived=False, archived_at=None, last_accessed=at, restored_at=at)
    props["distinct_from"] = sorted({*(props.get("distinct_from") or []), canonical_id})
    return props


def _number(value) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.5


def _instant(iso: str) -> float:
    moment = epoch_or_nan(iso)
    return -math.inf if math.isnan(moment) else moment
