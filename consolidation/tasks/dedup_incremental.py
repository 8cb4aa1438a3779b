"""Dedup's incremental pass: the memories changed since the watermark and their neighbourhood, judged by the
rules of a full pass (hygiene/), so that it reaches the state a full pass would.

What a change can alter, and so what is read:
- Merges join similar pairs of one type and scope that the judge calls one fact into groups (connected
  components, then split complete-link). A change can join, split or regroup only the groups it touches: from
  each changed memory (and each removed one, by its vector) every similar memory of its kind is read and judged,
  then from those judged one fact with it, until the groups are whole. Untouched groups merged what they could in an earlier run. The similar pairs come from the
  similarity graph the engine keeps (the one a full pass uses, its changed vectors searched again) when it is
  kept, else from an exact search of each memory against its kind. A removed memory's pairs come from that
  graph too when it held the memory with the same vector (it keeps the pairs of those its updates left out);
  else its vector is searched exactly.
- A change announcement is judged against the statements it matches (hygiene/changes.match_change) and its rivals. Its
  verdict can move only if it changed, or what it matches or its rivals did: the announcements that changed,
  and those that match a changed or removed statement (as it was, or as it is now), are judged again, each with
  everything it can match (changes.pool_query) and its rivals, found through the terms dedup stores on every
  memory (index lookups, not a read of every text).
- Two statements recorded within a minute of each other that differ in one value conflict: a new conflict has
  a changed member, and its partner is related to it, so the changed memories' related neighbours recorded
  within that minute are read too.
Connections and uses rank a group's members but are not changes: where only they moved (a memory restored apart
from its canonical, then outranked), the next full pass catches up. If the neighbourhood grows past a tenth of
the memories, a full pass costs about the same, and is taken instead.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from ..hygiene.candidate import Candidate
from ..hygiene.changes import ANY_LENGTH, ORDER_TOLERANCE_SECONDS, RELATED_SIMILARITY, Contradiction, \
    Supersession, changes_over_time, in_matches, pool_query, simultaneous_conflicts
from ..hygiene.facts import Change, read_fact
from ..hygiene.merges import Merge, PairJudge, duplicate_groups, exact_cosine
from ..hygiene.terms import UPDATABLE, stored_terms, terms_stamp
from ..hygiene.updates import Vectors, distinctive, statement_groups, subject_of, subject_terms
from ..lifecycle import decode_vector
from ..passes import changed_after
from ..similarity import INDEX, Pairs, Partition, normalized, pairs_against
from ..stores.changes import CHANGE
from ..stores.hygiene import HygieneListing
from ..timeutil import epoch_seconds, to_iso
from . import dedup
from .context import TaskContext, positions_in

# Past this share of the memories a full pass is taken: the incremental pass costs several times more a memory
# read (at 100k with 10 % changed it took 4.5-13 s against a full pass's 2.3-3.0 s; with 1 % changed, 2.6 s
# against 3.6 s).
REGION_SHARE = 0.1
REGION_FLOOR = 2000  # reading fewer memories than this is cheap, whatever share of the store they are
# Above this many vector comparisons per memory, the exact search of the changes costs more than bringing the
# kept neighbour graph up to date and reading it (about N x 10 us against 20 ns a comparison, measured: at 100k
# with 1,000 changed the exact search was 1 s faster, at 1M with 10,000 changed 9 s slower).
GRAPH_OVER_EXACT = 500
# Changed memories, and memories of their time span, compared at once for simultaneous conflicts (bounds memory).
SIMULTANEOUS_BLOCK = 512
SIMULTANEOUS_SPAN = 32768


class TooMuchChanged(Exception):
    """The changes reach so much of the store that a full pass costs about the same."""


@dataclass
class Verdicts:
    """What an incremental pass decided, over the candidates it read."""

    grouped: list[Candidate]  # the candidates merges were judged among (kept_apart indexes into these)
    judge: PairJudge
    candidates: list[Candidate]  # every candidate read, the pools of the announcements judged included
    merges: list[Merge]
    kept_apart: Pairs
    supersessions: list[Supersession]  # earlier runs' links still among them (run() leaves them out)
    contradictions: list[Contradiction]
    similar_pairs: int
    asked: dict[str, Any]  # what the model judge was asked, when one is set up
    proposals: list[Supersession] = field(default_factory=list)  # supersessions proposed for review


@dataclass(frozen=True)
class Removed:
    """A memory that left dedup's view since the watermark (archived, merged away or deleted)."""

    candidate: Candidate
    vector: np.ndarray | None


def run(ctx: TaskContext, dry_run: bool) -> dict[str, Any]:
    completed = [] if dry_run else ctx.hygiene.complete_pending()
    try:
        region = Region.read(ctx)
        ctx.progress(0, len(region.ids))
        v = _judge(ctx, region, dry_run)
    except TooMuchChanged as exc:
        return {**dedup.run(ctx, dry_run), "pass": "full", "pass_reason": str(exc)}
    if not dry_run:
        dedup.write_merges(ctx, v.merges)
    # As the full pass does: links an earlier run made are left out once the merges are in (a merge moves the
    # duplicate's SUPERSEDES edge to its canonical, which then needs no contradiction beside it).
    v.supersessions, v.contradictions = dedup.new_links(ctx, v.supersessions, v.contradictions)
    v.contradictions, left_out = dedup.bounded(ctx, v.contradictions)
    if not dry_run:
        dedup.write_links(ctx, v.supersessions, v.contradictions, {c.id: c.created for c in v.candidates})
    v.asked.update(dedup.propose(ctx, v.proposals, dry_run))
    if not dry_run:
        dedup.store_terms(ctx, v.candidates, np.array([region.read_changes[c.id] for c in v.candidates]),
                          [region.stamps[c.id] for c in v.candidates])
    ctx.progress(len(region.ids), len(region.ids))
    report = dedup.report_of(ctx, len(v.candidates), v.similar_pairs, v.merges, v.supersessions, v.contradictions,
                             (v.kept_apart, len(v.kept_apart.rows)), v.grouped, len(completed), v.judge)
    return {**report, **v.asked, "contradictions_left_out": left_out, "memories_changed": region.changed_count,
            "memories_considered": len(v.candidates),
            "neighbours_from": "the kept similarity graph" if region.graph is not None else "an exact search"}


def _judge(ctx: TaskContext, region: Region, dry_run: bool) -> Verdicts:
    """Read the neighbourhood of the changes and judge it by the full pass's rules."""
    changed = region.changed(ctx.since)
    removed = _removed(ctx, region)
    region.changed_count = len(changed) + len(removed)
    region.load(changed)
    changed = np.array([p for p in changed if p in region.loaded], dtype=np.int64)
    region.judge = dedup.pair_judge(ctx.settings)
    pairs = _merge_closure(ctx, region, changed, removed)
    _load_simultaneous(region, changed)
    grouped, positions = region.candidates()
    index = {int(p): i for i, p in enumerate(positions)}
    rows = np.array([index[a] for a in pairs.rows.tolist()], dtype=INDEX)
    cols = np.array([index[b] for b in pairs.cols.tolist()], dtype=INDEX)
    found, asked, region.judge = dedup.find_merges(ctx, lambda judge: duplicate_groups(
        grouped, rows, cols, pairs.similarities, judge,
        similarity=lambda a, b: exact_cosine(region.unit, positions[a], positions[b])), region.judge, dry_run)
    merges, kept_apart = found.merges, found.kept_apart
    judged = _judge_announcers(ctx, region, merges, [region.ids[p] for p in changed], removed)
    subjects = _load_subjects(ctx, region, [region.ids[p] for p in changed], removed, judged)
    candidates, _ = region.candidates()
    active = dedup.after_merges(candidates, merges)
    vectors = Vectors(region.unit, region.position)
    supersessions, contradictions = changes_over_time(active, vectors, only=judged)
    contradictions += simultaneous_conflicts(active, vectors)
    supersessions, proposals, asked_plain = dedup.with_plain_updates(
        ctx, active, statement_groups(active, subjects), vectors, supersessions, contradictions,
        dedup.restated_times(candidates, merges), dry_run)
    return Verdicts(grouped, region.judge, candidates, merges, kept_apart, supersessions, contradictions,
                    int(pairs.rows.size), {**asked, **asked_plain}, proposals)


# --- the region ---------------------------------------------------------------------------------------------


class Region:
    """Every active memory with a vector (searchable, in the order a full pass reads them: the rules break ties
    by it), and those read so far as candidates, by position."""

    def __init__(self, ctx: TaskContext, listing: HygieneListing, ids: list[str], unit: np.ndarray):
        self.ctx, self.ids, self.unit = ctx, ids, unit
        rows = positions_in(listing.ids, ids)
        self.scope_keys = [listing.scopes[r] for r in rows]
        self.types = [listing.types[r] for r in rows]
        # Only memories of one type and scope can state one fact: the search runs within each such kind.
        self.kind_codes: dict[tuple[str, str], int] = {}
        self.kinds = np.fromiter((self.kind_codes.setdefault(k, len(self.kind_codes))
                                  for k in zip(self.types, self.scope_keys)), dtype=np.int64, count=len(ids))
        self.graph: Pairs | None = None  # the kept similarity graph's pairs (of any kinds), when it is kept
        self.times = epoch_seconds(listing.timestamps[r] for r in rows)
        self.changes = listing.changes[rows] if rows.size else np.zeros(0)
        self.position = dict(zip(ids, range(len(ids))))
        self.loaded: dict[int, Candidate] = {}
        self.stamps: dict[str, str | None] = {}
        self.read_changes: dict[str, float] = {}
        self.limit = max(REGION_FLOOR, int(REGION_SHARE * len(ids)))
        self.changed_count = 0
        self.judge: PairJudge | None = None  # set once the changed memories are read (their vectors' space)

    @classmethod
    def read(cls, ctx: TaskContext) -> Region:
        listing = ctx.hygiene.listing()
        ids, matrix = ctx.vectors.vectors(listing.ids)
        region = cls(ctx, listing, ids, normalized(matrix))
        threshold = ctx.settings.consolidation_dedup_similarity
        if ctx.neighbours.kept_size(threshold) and region.exact_comparisons() > GRAPH_OVER_EXACT * len(ids):
            # The full pass's graph, brought up to date by searching only the changed vectors: cheaper than an
            # exact search of each change against its kind once that compares enough pairs, and the pairs a full
            # pass would judge.
            # Pairs of two kinds are left in: only the few touching a query are looked at (_graph_hits drops
            # them there), and filtering all of them cost half a second at a million memories.
            region.graph = ctx.neighbours.pairs(ids, region.unit, threshold, ctx.progress, region.scope_keys)
        return region

    def exact_comparisons(self) -> int:
        """How many vector pairs an exact search of the changed memories against their kinds would compare."""
        changed = np.bincount(self.kinds[self.changed(self.ctx.since)], minlength=len(self.kind_codes))
        return int(changed @ np.bincount(self.kinds, minlength=len(self.kind_codes)))

    @cached_property
    def partition(self) -> Partition:
        """The vectors grouped by kind, for exact searches (built only if one is needed: it copies them)."""
        return Partition(self.unit, self.kinds)

    def changed(self, since: int) -> np.ndarray:
        return changed_after(self.changes, since)

    def kind_of(self, candidate: Candidate) -> int:
        """The kind code of a memory's type and scope (one no active memory has, if none has it)."""
        return self.kind_codes.get((candidate.type, candidate.scope), -1)

    def load(self, positions: Iterable[int]) -> None:
        """Read these memories as candidates (those not read yet, and still active)."""
        wanted = sorted({int(p) for p in positions} - self.loaded.keys())
        if not wanted:
            return
        if len(self.loaded) + len(wanted) > self.limit:
            raise TooMuchChanged(f"the changes reach more than {self.limit} of {len(self.ids)} memories: a full "
                                 "pass costs about the same")
        inputs = self.ctx.hygiene.inputs_of([self.ids[p] for p in wanted]).holding(to_iso(self.ctx.now))
        read = set(inputs.ids)
        present = [self.ids[p] for p in wanted if self.ids[p] in read]  # archived meanwhile: no longer one
        for candidate in dedup.candidates_of(inputs, positions_in(inputs.ids, present)):
            self.loaded[self.position[candidate.id]] = candidate
        self.stamps.update(zip(inputs.ids, inputs.stamps))
        self.read_changes.update(zip(inputs.ids, inputs.changes))

    def candidates(self) -> tuple[list[Candidate], list[int]]:
        positions = sorted(self.loaded)
        return [self.loaded[p] for p in positions], positions

    def search(self, queries: list[Candidate], origins: np.ndarray, vectors: np.ndarray, threshold: float) -> Pairs:
        """Pairs (query number, position) with cosine >= threshold, each query among memories of its kind: from
        the kept graph for queries that are memories here (`origins`: their positions) and for removed ones it
        held with the same vector, by exact products for the others or when no graph is kept (then a query may
        find itself)."""
        kinds = np.array([self.kind_of(q) for q in queries], dtype=np.int64)
        if self.graph is None:
            return pairs_against(vectors, self.unit, threshold, kinds, self.partition)
        outside = np.flatnonzero(origins < 0)
        parts = [self._graph_hits(origins)]
        if outside.size:
            former, outside = self._former_hits(queries, outside, vectors, kinds, threshold)
            found = pairs_against(vectors[outside], self.unit, threshold, kinds[outside], self.partition)
            parts += [former, Pairs(outside[found.rows].astype(INDEX), found.cols, found.similarities)]
        return Pairs.joined(parts)

    def _former_hits(self, queries: list[Candidate], outside: np.ndarray, vectors: np.ndarray, kinds: np.ndarray,
                     threshold: float) -> tuple[Pairs, np.ndarray]:
        """The pairs the kept graph held for these removed memories (query numbers), with memories of their kind
        still here; and the numbers of those it does not hold with their vector, to be searched."""
        held = self.ctx.neighbours.former_pairs([queries[k].id for k in outside.tolist()], vectors[outside],
                                                [queries[k].scope for k in outside.tolist()], threshold)
        answered = [k for k in outside.tolist() if queries[k].id in held]
        pairs = [held[queries[k].id] for k in answered]
        numbers = np.repeat(np.array(answered, dtype=INDEX), [len(others) for others, _ in pairs])
        get = self.position.get
        at = np.array([get(other, -1) for others, _ in pairs for other in others], dtype=np.int64)
        similarities = np.concatenate([s for _, s in pairs]) if pairs else np.zeros(0, np.float32)
        mine = (at >= 0) & (self.kinds[np.maximum(at, 0)] == kinds[numbers])
        searched = np.array([k for k in outside.tolist() if queries[k].id not in held], dtype=np.int64)
        return Pairs(numbers[mine], at[mine].astype(INDEX), similarities[mine]), searched

    def _graph_hits(self, origins: np.ndarray) -> Pairs:
        """The kept graph's pairs (read at the search's threshold) touching the queries that are memories here,
        with a memory of their kind, as (query number, other)."""
        number_at = np.full(len(self.ids), -1, dtype=np.int64)
        inside = np.flatnonzero(origins >= 0)
        number_at[origins[inside]] = inside
        asked = number_at >= 0  # a mask is gathered over every pair: an eighth of the numbers' bytes
        graph, parts = self.graph, []
        for mine, theirs in ((graph.rows, graph.cols), (graph.cols, graph.rows)):
            hit = np.flatnonzero(asked[mine])
            hit = hit[self.kinds[mine[hit]] == self.kinds[theirs[hit]]]
            parts.append(Pairs(number_at[mine[hit]].astype(INDEX), theirs[hit], graph.similarities[hit]))
        return Pairs.joined(parts)

    def worth_reading(self, keys: dict[int, dict[tuple[str, ...], None]]) -> set[int]:
        """Which of these unread memories the judge could find one fact with a memory of one of the keys given
        for each (by the terms stored on them: a number each side lacks is a conflict), or have no terms stored
        from their text now: those worth reading."""
        unknown = {p for p in keys if math.isnan(self.changes[p])}
        rows = [{"id": self.ids[p], "stamp": terms_stamp(self.changes[p]),
                 "keys": [{"terms": sorted(k), "numbers": sorted(t for t in k if t[:1].isdigit())} for k in ks]}
                for p, ks in keys.items() if p not in unknown]
        return unknown | {self.position[i] for i in self.ctx.hygiene.worth_reading(rows)}

    def similarity(self, a: Candidate, b: Candidate) -> float:
        return float(self.unit[self.position[a.id]] @ self.unit[self.position[b.id]])


def _removed(ctx: TaskContext, region: Region) -> list[Removed]:
    """The memories archived or deleted since the watermark, as candidates with their vectors: their groups and
    the pools they were in are read again."""
    archived = ctx.hygiene.archived_since(ctx.since)
    with_vectors, matrix = ctx.vectors.vectors([row[0] for row in archived])
    vectors = dict(zip(with_vectors, normalized(matrix)))
    found = [(*row, vectors.get(row[0])) for row in archived]
    for gone in ctx.lifecycle.tombstones.deleted_since(ctx.since):
        props = gone["properties"]
        if props.get("type") == "MetaPattern" or _archived_before(props, ctx.since):
            continue
        vector = decode_vector(gone["vector"])
        found.append((gone["id"], props.get("content") or "", props.get("type") or "Memory",
                      ctx.hygiene.scoping.key_of(props), props.get("timestamp"),
                      None if vector is None else normalized(vector[None])[0]))
    created = epoch_seconds(row[4] for row in found)
    return [Removed(Candidate(memory_id, kind, read_fact(content), float(when), 0, 0, content=content, scope=scope),
                    vector) for (memory_id, content, kind, scope, _, vector), when in zip(found, created)]


def _archived_before(properties: dict, since: int) -> bool:
    """A deleted memory that was archived (forgotten or merged away) at or before the watermark and not changed
    after: it had left dedup's view before the last run, which judged its groups without it. (Forget deletes
    archived memories once their grace period ends.)"""
    change = properties.get(CHANGE)
    return properties.get("archived") is True and isinstance(change, (int, float)) and change <= since


# --- merges: the groups the changes touch, whole -------------------------------------------------------------


def _merge_closure(ctx: TaskContext, region: Region, changed: np.ndarray, removed: list[Removed]) -> Pairs:
    """The similar pairs (positions, i < j) among the members of every group a change touches: from the changed
    and removed memories, every memory reached through a pair that states one fact is read and searched in
    turn, until no group has an unread member."""
    threshold = ctx.settings.consolidation_dedup_similarity
    leaving = [r for r in removed if r.vector is not None]
    queries = [region.loaded[int(p)] for p in changed] + [r.candidate for r in leaving]
    origins = np.concatenate([changed, np.full(len(leaving), -1)]).astype(np.int64)
    vectors = np.concatenate([region.unit[changed]] + [r.vector[None] for r in leaving])
    found: list[tuple[int, int, float]] = []
    queried = set(changed.tolist())
    while queries:
        hits = region.search(queries, origins, vectors, threshold)
        frontier = np.array(sorted(set(_follow(region, hits, queries, origins, found)) - queried), dtype=np.int64)
        queried.update(frontier.tolist())
        queries, origins, vectors = [region.loaded[int(p)] for p in frontier], frontier, region.unit[frontier]
    if not found:
        return Pairs.empty()
    first, second, similarities = (np.array(column) for column in zip(*found))
    return Pairs(first.astype(INDEX), second.astype(INDEX), similarities.astype(np.float32)).deduplicated(
        len(region.ids))


def _follow(region: Region, hits: Pairs, queries: list[Candidate], origins: np.ndarray,
            found: list[tuple[int, int, float]]) -> list[int]:
    """Read the memories the queries' hits (all of their kind) are similar enough to for the judge to merge;
    add every similar pair of read memories to `found`; return the positions judged one fact with their query
    (or close to the line, where the model judge may have the last word)."""
    q, t, similarity = hits.rows, hits.cols.astype(np.int64), hits.similarities
    keep = (origins[q] != t) & (similarity >= region.judge.lowest)
    q, t, similarity = q[keep], t[keep], similarity[keep]
    keys: dict[int, dict[tuple[str, ...], None]] = defaultdict(dict)
    for k, p in zip(q.tolist(), t.tolist()):
        if p not in region.loaded:
            keys[p].setdefault(queries[k].fact.terms)
    region.load(region.worth_reading(keys))
    joined = []
    for k, p, s in zip(q.tolist(), t.tolist(), similarity.tolist()):
        other = region.loaded.get(p)
        if other is None:
            continue
        if origins[k] >= 0:
            found.append((min(origins[k], p), max(origins[k], p), s))
        verdict = region.judge.verdict(queries[k], other, s)
        if verdict.same or verdict.grey:
            joined.append(p)
    return joined


def _load_simultaneous(region: Region, changed: np.ndarray) -> None:
    """Read the memories of a changed memory's kind recorded within ORDER_TOLERANCE_SECONDS of it and related to
    it: the partners of any new simultaneous conflict (found by time, then checked by vector). The changed
    memories are taken a block at a time, in time order, against the memories of their block's time span: an
    import writes thousands in one minute, and one product per block costs far less than one per memory."""
    timed = changed[~np.isnan(region.times[changed])]
    timed = timed[np.argsort(region.times[timed], kind="stable")]
    order = np.argsort(region.times, kind="stable")
    times = region.times[order]
    # Partners already read need no search: after an import, the changes' time span is mostly the changes.
    unread = np.ones(len(region.ids), dtype=bool)
    unread[list(region.loaded)] = False
    partners: set[int] = set()
    for block, low, high in _blocks(timed, region.times, times):
        for near_start in range(low, high, SIMULTANEOUS_SPAN):
            near = order[near_start:min(high, near_start + SIMULTANEOUS_SPAN)]
            near = near[unread[near]]
            close = np.abs(region.times[block][:, None] - region.times[near][None, :]) <= ORDER_TOLERANCE_SECONDS
            close &= (region.kinds[block][:, None] == region.kinds[near][None, :]) & (block[:, None] != near[None, :])
            close &= region.unit[block] @ region.unit[near].T >= RELATED_SIMILARITY
            partners.update(near[close.any(axis=0)].tolist())
    region.load(partners)


def _blocks(timed: np.ndarray, times_of: np.ndarray, sorted_times: np.ndarray):
    """The changed memories (`timed`, in time order) in blocks, each with the range of the time-sorted memories
    within the tolerance of any of its members. A block grows while the next change's window overlaps its range
    (and it spans at most SIMULTANEOUS_SPAN memories): changes far apart in time (a decay crossing here and
    there) are each compared with their own minute, not with the stretch of timeline between them."""
    low = np.searchsorted(sorted_times, times_of[timed] - ORDER_TOLERANCE_SECONDS, side="left")
    high = np.searchsorted(sorted_times, times_of[timed] + ORDER_TOLERANCE_SECONDS, side="right")
    start = 0
    while start < timed.size:
        end = start + 1
        while end < timed.size and end - start < SIMULTANEOUS_BLOCK and low[end] < high[end - 1] and \
                high[end] - low[start] <= SIMULTANEOUS_SPAN:
            end += 1
        yield timed[start:end], int(low[start]), int(high[end - 1])
        start = end


# --- plain-word updates: the subjects the changes are about, whole ------------------------------------------


def _load_subjects(ctx: TaskContext, region: Region, changed_ids: list[str], removed: list[Removed],
                   judged: set[str]) -> set[tuple[str, str]]:
    """Read every statement about the subjects of the changed and removed memories (updates.py judges a subject's
    statements together, in time order): found by the subject's stored terms, an index lookup. The announcements
    among them are judged by changes.py's rules again too (added to `judged`, with their pools), as a full pass
    would judge them beside the plain-word rules. Returns the (scope, subject) pairs to judge."""
    touched = [region.loaded[region.position[i]] for i in changed_ids if region.position.get(i) in region.loaded]
    updatable = {key: c.fact.updatable for c in touched + [r.candidate for r in removed]
                 if (key := subject_of(c)) is not None}
    # A subject none of whose statements may update needs no sweep: for a change that may not, one lookup asks
    # whether a statement of its subject may (UPDATABLE among its stored terms) before the subject is read whole.
    doubtful = sorted(key for key in updatable if not updatable[key] and subject_terms(key[1]))
    confirmed = {doubtful[n] for n in ctx.hygiene.holding(_subject_rows(doubtful, UPDATABLE))} if doubtful else set()
    sought = sorted(key for key in updatable if subject_terms(key[1]) and (updatable[key] or key in confirmed))
    found = ctx.hygiene.holding(_subject_rows(sought)) if sought else {}
    subjects = set(sought)
    region.load(region.position[i] for ids in found.values() for i in ids if i in region.position)
    candidates, _ = region.candidates()
    members = [c for c in candidates if subject_of(c) in subjects]
    announcing = {c.id for c in members if _changes(c)} - judged
    _load_pools(ctx, region, [c for c in members if c.id in announcing])
    judged |= announcing
    return subjects


def _subject_rows(subjects: list[tuple[str, str]], *also: str) -> list[dict[str, Any]]:
    """HygieneStore.holding rows asking for the active memories holding every term of each subject (and `also`),
    reached through the subject's most distinctive term."""
    return [{"key": number, "drive": [distinctive(subject_terms(about))],
             "required": sorted(subject_terms(about)) + list(also), "counted": [], "need": 0, "slack": ANY_LENGTH}
            for number, (_, about) in enumerate(subjects)]


# --- changes: the announcements whose verdict can move -------------------------------------------------------


def _judge_announcers(ctx: TaskContext, region: Region, merges: list[Merge], changed_ids: list[str],
                      removed: list[Removed]) -> set[str]:
    """The ids of the announcements to judge again, with each one's pool and rivals read into the region.

    A verdict moves only with what the announcement matches: the statements matched before the changes (the
    removed ones, what this run merges away, the canonicals as they were, and the old text of a memory whose
    text was replaced) and those matched after (the changed memories and canonicals as they are now)."""
    before, _ = region.candidates()
    by_id = {c.id: c for c in dedup.after_merges(before, merges)}
    into = {m.into for m in merges}
    gone = {d for m in merges for d in m.duplicates}
    now = [by_id[i] for i in dict.fromkeys([*changed_ids, *into]) if i in by_id]
    exact = now + [c for c in before if c.id in gone or c.id in into] + [r.candidate for r in removed]
    loose = _replaced_texts(ctx, now)
    judged = {c.id for c in now if _changes(c)}
    lookup = set().union(set(), *(stored_terms(c).terms for c in exact), *(terms for terms, _ in loose),
                         *(ch.old | ch.subject | ch.new for c in now for ch in _changes(c)))
    found = [region.position[i] for i in ctx.hygiene.anchored(sorted(lookup)) if i in region.position]
    region.load(found)
    candidates, _ = region.candidates()
    by_id = {c.id: c for c in dedup.after_merges(candidates, merges)}
    announcers = [by_id[region.ids[p]] for p in found if region.ids[p] in by_id and region.ids[p] not in judged]
    judged |= _affected(region, announcers, exact, loose, [c for c in now if _changes(c)])
    _load_pools(ctx, region, [by_id[i] for i in judged if i in by_id])
    return judged


def _replaced_texts(ctx: TaskContext, changed: list[Candidate]) -> list[tuple[frozenset[str], str]]:
    """(stored terms, scope) of the changed memories whose stored terms are not those of their text now: read from
    a text since replaced (an overwrite), or from more texts than they stand for now (a merge undone). Only the
    terms are left of what they were, so they are matched loosely."""
    previous = ctx.hygiene.previous_terms([c.id for c in changed])
    return [(previous[c.id], c.scope) for c in changed
            if c.id in previous and previous[c.id] != frozenset(stored_terms(c).terms)]


def _changes(candidate: Candidate) -> list[Change]:
    """The changes a memory announces, in any text it stands for."""
    return [fact.change for fact, _ in candidate.variants if fact.change is not None]


def _affected(region: Region, announcers: list[Candidate], exact: list[Candidate],
              loose: list[tuple[frozenset[str], str]], changed_announcers: list[Candidate]) -> set[str]:
    """Which of these unchanged announcements match a changed statement (before or after its change), or are
    rivals of a changed announcement (one subject and old value)."""
    exact_terms = [frozenset(stored_terms(s).terms) for s in exact]
    loose_terms = [terms for terms, _ in loose]
    exact_index, loose_index = _term_index(exact_terms), _term_index(loose_terms)
    rival_keys = {(ch.subject, ch.old) for a in changed_announcers for ch in _changes(a) if ch.old and ch.new}
    affected = set()
    for announcer in announcers:
        for change in _changes(announcer):
            query = pool_query(change)
            if (change.subject, change.old) in rival_keys or any(
                    exact[k].scope == announcer.scope and exact[k].id != announcer.id
                    and in_matches(announcer, change, exact[k]) and _maybe_related(region, announcer, exact[k])
                    for k in _answering(exact_index, exact_terms, query)) or any(
                    loose[k][1] == announcer.scope for k in _answering(loose_index, loose_terms, query)):
                affected.add(announcer.id)
                break
    return affected


def _answering(index: dict[str, set[int]], terms: list[frozenset[str]], query) -> set[int]:
    """The entries whose terms answer a pool query (may_change, but for the numbers): every required term (found
    through the index), then `need` of the counted ones."""
    if not query.required:
        return _holders(index, query.counted, query.need)
    found = _holders(index, query.required, len(query.required))
    return {k for k in found if len(query.counted & terms[k]) >= query.need}


def _term_index(term_sets: Iterable[Iterable[str]]) -> dict[str, set[int]]:
    index: dict[str, set[int]] = defaultdict(set)
    for number, terms in enumerate(term_sets):
        for term in terms:
            index[term].add(number)
    return index


def _holders(index: dict[str, set[int]], terms: frozenset[str], need: int) -> set[int]:
    """The entries of a term index holding at least `need` of `terms` (found through the rarest postings)."""
    postings = sorted((index.get(t, set()) for t in terms), key=len)
    if not postings or need > len(postings):
        return set()
    reached = set().union(*postings[: len(postings) - need + 1])
    return {k for k in reached if sum(k in p for p in postings) >= need}


def _maybe_related(region: Region, a: Candidate, b: Candidate) -> bool:
    """Whether two memories' vectors are related, or True for a memory whose vector is gone with it (a deletion
    whose tombstone had none)."""
    return a.id not in region.position or b.id not in region.position or \
        region.similarity(a, b) >= RELATED_SIMILARITY


def _load_pools(ctx: TaskContext, region: Region, announcers: list[Candidate]) -> None:
    """Read each announcement's whole pool (every memory whose stored terms answer its pool_query: all it can
    match, reached through the postings of its rarest terms) and its rivals (stored anchors holding its old
    value)."""
    rows = []
    for announcer in announcers:
        for change in _changes(announcer):
            query = pool_query(change)
            rows.append({"key": len(rows), "required": sorted(query.required), "counted": sorted(query.counted),
                         "need": query.need, "slack": query.slack})
    # How common each term is, judged from the memories read so far: a choice of drive terms, never of answers.
    counts = Counter(t for c in region.loaded.values() for t in stored_terms(c).terms)
    for row in rows:
        # Any one required term reaches every answer; else enough of the counted ones that each answer holds one.
        row["drive"] = drive_terms(row["required"], 1, counts)[:1] if row["required"] else \
            drive_terms(row["counted"], row["need"], counts)
    pools = ctx.hygiene.holding([row for row in rows if row["drive"]])
    olds = {t for a in announcers for ch in _changes(a) if ch.old for t in ch.old}
    ids = set().union(set(), *pools.values(), ctx.hygiene.anchored(sorted(olds)) if olds else set())
    region.load(region.position[i] for i in ids if i in region.position)


def drive_terms(terms: list[str], need: int, counts: dict[str, int]) -> list[str]:
    """The fewest terms whose postings hold every memory holding `need` of `terms`: the rarest
    len(terms) - need + 1 of them (a memory missing all of those misses too many)."""
    if need <= 0:
        return list(terms)
    return sorted(terms, key=lambda t: (counts.get(t, 0), t))[: len(terms) - need + 1]
