"""Dedup's incremental pass: the memories changed since the watermark and their neighbourhood, judged by the
rules of a full pass (hygiene.py), so that it reaches the state a full pass would.

What a change can alter, and so what is read:
- Merges join similar pairs of one type and scope that state one fact into groups (connected components, then
  split complete-link). A change can join, split or regroup only the groups it touches: from each changed
  memory (and each removed one, by its vector) every memory stating its fact is read, then theirs, until the
  groups are whole. Untouched groups merged what they could in an earlier run.
- A change announcement is judged against its pool (the statements holding its old value and subject, or most
  of its subject and new value) and its rivals. Its verdict can move only if it, its pool or its rivals changed:
  the announcements that changed, and those whose stored anchors hold a term of a changed or removed statement
  that could be in their pool, are judged again, each with its whole pool and rivals, found by the terms dedup
  stores on every memory (an index lookup, not a read of every text).
- Two statements recorded within a minute of each other that differ in one value conflict: a new conflict has
  a changed member, and its partner is related to it, so the changed memories' related neighbours recorded
  within that minute are read too.
Connections and uses rank a group's members but are not changes: where only they moved (a memory restored apart
from its canonical, then outranked), the next full pass catches up. If the neighbourhood grows past a quarter of
the memories, a full pass costs about the same, and is taken instead.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..facts import Change, read_fact
from ..hygiene import ORDER_TOLERANCE_SECONDS, Candidate, Merge, changes_over_time, duplicate_groups, \
    may_change, may_state_together, pool_terms, simultaneous_conflicts, stated_together, stored_terms, terms_stamp
from ..lifecycle import decode_vector
from ..similarity import INDEX, Pairs, normalized, pairs_against
from ..stores.hygiene import HygieneListing
from ..timeutil import epoch_seconds
from . import dedup
from .context import TaskContext

REGION_SHARE = 0.25
REGION_FLOOR = 2000  # reading fewer memories than this is cheap, whatever share of the store they are


class TooMuchChanged(Exception):
    """The changes reach so much of the store that a full pass costs about the same."""


@dataclass
class Verdicts:
    """What an incremental pass decided, over the candidates it read."""

    grouped: list[Candidate]  # the candidates merges were judged among (kept_apart indexes into these)
    candidates: list[Candidate]  # every candidate read, the pools of the announcements judged included
    merges: list[Merge]
    kept_apart: Pairs
    supersessions: list
    contradictions: list
    similar_pairs: int


@dataclass(frozen=True)
class Removed:
    """A memory that left dedup's view since the watermark (archived, merged away or deleted)."""

    candidate: Candidate
    vector: np.ndarray | None
    scope: int  # scope code in the region's numbering (one no active memory has, if its scope has none left)


def run(ctx: TaskContext, dry_run: bool) -> dict[str, Any]:
    completed = [] if dry_run else ctx.hygiene.complete_pending()
    try:
        region = Region.read(ctx)
        ctx.progress(0, len(region.ids))
        verdicts = _judge(ctx, region)
    except TooMuchChanged as exc:
        return {**dedup.run(ctx, dry_run), "pass": "full", "pass_reason": str(exc)}
    v = verdicts
    if not dry_run:
        dedup.write(ctx, v.merges, v.supersessions, v.contradictions, {c.id: c.created for c in v.candidates})
        dedup.store_terms(ctx, v.candidates, region.read_changes, region.stamps)
    ctx.progress(len(region.ids), len(region.ids))
    report = dedup.report_of(ctx, len(v.candidates), v.similar_pairs, v.merges, v.supersessions, v.contradictions,
                             v.kept_apart, v.grouped, len(completed))
    return {**report, "memories_changed": region.changed_count, "memories_considered": len(v.candidates)}


def _judge(ctx: TaskContext, region: Region) -> Verdicts:
    """Read the neighbourhood of the changes and judge it by the full pass's rules."""
    changed = region.changed(ctx.since)
    removed = _removed(ctx, region)
    region.changed_count = len(changed) + len(removed)
    region.load(changed)
    changed = np.array([p for p in changed if p in region.loaded], dtype=np.int64)
    first = _first_search(ctx, region, changed, removed)
    pairs = _merge_closure(ctx, region, changed, removed, first)
    _load_simultaneous(region, changed, first)
    grouped, positions = region.candidates()
    index = {int(p): i for i, p in enumerate(positions)}
    rows = np.array([index[a] for a in pairs.rows.tolist()], dtype=INDEX)
    cols = np.array([index[b] for b in pairs.cols.tolist()], dtype=INDEX)
    merges, kept_apart = duplicate_groups(grouped, rows, cols, pairs.similarities)
    judged = _judge_announcers(ctx, region, merges, {region.ids[p] for p in changed}, removed)
    candidates, _ = region.candidates()
    active = dedup.after_merges(candidates, merges)
    supersessions, contradictions = changes_over_time(active, region.related, only=judged)
    supersessions, contradictions = dedup.new_links(
        ctx, supersessions, contradictions + simultaneous_conflicts(active, region.related))
    return Verdicts(grouped, candidates, merges, kept_apart, supersessions, contradictions, int(pairs.rows.size))


# --- the region ---------------------------------------------------------------------------------------------


class Region:
    """Every active memory with a vector (searchable, in the order a full pass reads them: the rules break ties
    by it), and those read so far as candidates, by position."""

    def __init__(self, ctx: TaskContext, listing: HygieneListing, ids: list[str], unit: np.ndarray):
        self.ctx, self.ids, self.unit = ctx, ids, unit
        row_of = {memory_id: row for row, memory_id in enumerate(listing.ids)}
        rows = np.array([row_of[i] for i in ids], dtype=np.int64)
        keys = [listing.scopes[r] for r in rows]
        self.scope_codes = {key: code for code, key in enumerate(sorted(set(keys)))}
        self.scopes = np.array([self.scope_codes[k] for k in keys], dtype=np.int64)
        self.types = np.array([listing.types[r] for r in rows], dtype=object)
        self.timestamps = [listing.timestamps[r] for r in rows]
        self.changes = listing.changes[rows] if rows.size else np.zeros(0)
        self.position = {memory_id: p for p, memory_id in enumerate(ids)}
        self.loaded: dict[int, Candidate] = {}
        self.stamps: dict[str, str | None] = {}
        self.read_changes: dict[str, float] = {}
        self.limit = max(REGION_FLOOR, int(REGION_SHARE * len(ids)))
        self.changed_count = 0

    @classmethod
    def read(cls, ctx: TaskContext) -> Region:
        listing = ctx.hygiene.listing()
        ids, matrix = ctx.vectors.vectors(listing.ids)
        return cls(ctx, listing, ids, normalized(matrix))

    def changed(self, since: int) -> np.ndarray:
        """Positions changed after the watermark; a memory no marker names yet counts as changed."""
        return np.flatnonzero(np.isnan(self.changes) | (self.changes > since))

    def load(self, positions: Iterable[int]) -> None:
        """Read these memories as candidates (those not read yet, and still active)."""
        wanted = sorted({int(p) for p in positions} - self.loaded.keys())
        if not wanted:
            return
        if len(self.loaded) + len(wanted) > self.limit:
            raise TooMuchChanged(f"the changes reach more than {self.limit} of {len(self.ids)} memories: a full "
                                 "pass costs about the same")
        inputs = self.ctx.hygiene.inputs_of([self.ids[p] for p in wanted])
        at = {memory_id: i for i, memory_id in enumerate(inputs.ids)}
        present = [self.ids[p] for p in wanted if self.ids[p] in at]  # archived meanwhile: no longer one
        for candidate in dedup.candidates_of(inputs, present, at):
            self.loaded[self.position[candidate.id]] = candidate
        self.stamps.update(zip(inputs.ids, inputs.stamps))
        self.read_changes.update(zip(inputs.ids, inputs.changes))

    def candidates(self) -> tuple[list[Candidate], list[int]]:
        positions = sorted(self.loaded)
        return [self.loaded[p] for p in positions], positions

    def search(self, positions: np.ndarray, threshold: float) -> Pairs:
        return pairs_against(self.unit[positions], self.unit, threshold, self.scopes[positions], self.scopes)

    def stored_terms(self, positions: Iterable[int]) -> dict[int, frozenset[str] | None]:
        """The stored terms of these memories; None where they were not read from the current text."""
        wanted = sorted({int(p) for p in positions})
        stamps = {self.ids[p]: terms_stamp(self.changes[p]) for p in wanted if not math.isnan(self.changes[p])}
        found = self.ctx.hygiene.stored_terms([self.ids[p] for p in wanted], stamps)
        return {p: found.get(self.ids[p]) for p in wanted}

    def related(self, a: Candidate, b: Candidate) -> bool:
        return float(self.unit[self.position[a.id]] @ self.unit[self.position[b.id]]) >= dedup.RELATED_SIMILARITY


def _removed(ctx: TaskContext, region: Region) -> list[Removed]:
    """The memories archived or deleted since the watermark, as candidates with their vectors: their groups and
    the pools they were in are read again."""
    archived = ctx.hygiene.archived_since(ctx.since)
    with_vectors, matrix = ctx.vectors.vectors([row[0] for row in archived])
    vectors = dict(zip(with_vectors, normalized(matrix)))
    found = [(memory_id, content, kind, scope, vectors.get(memory_id)) for memory_id, content, kind, scope in archived]
    for gone in ctx.lifecycle.tombstones.deleted_since(ctx.since):
        props = gone["properties"]
        if props.get("type") == "MetaPattern":
            continue
        vector = decode_vector(gone["vector"])
        found.append((gone["id"], props.get("content") or "", props.get("type") or "Memory",
                      ctx.hygiene.scoping.key_of(props), None if vector is None else normalized(vector[None])[0]))
    removed = []
    for number, (memory_id, content, kind, scope, vector) in enumerate(found):
        candidate = Candidate(memory_id, kind, read_fact(content), math.nan, 0, 0, content=content, scope=scope)
        removed.append(Removed(candidate, vector, region.scope_codes.get(scope, -1 - number)))
    return removed


# --- merges: the groups the changes touch, whole -------------------------------------------------------------


def _first_search(ctx: TaskContext, region: Region, changed: np.ndarray, removed: list[Removed]) -> Pairs:
    """The changed and removed memories against every memory, once, at the lowest threshold any rule needs.
    Query numbers: the changed positions first, then the removed memories that have a vector."""
    threshold = min(ctx.settings.consolidation_dedup_similarity, dedup.RELATED_SIMILARITY)
    vectors = [region.unit[changed]] + [r.vector[None] for r in removed if r.vector is not None]
    codes = [region.scopes[changed]] + [np.array([r.scope]) for r in removed if r.vector is not None]
    return pairs_against(np.concatenate(vectors), region.unit, threshold, np.concatenate(codes), region.scopes)


def _merge_closure(ctx: TaskContext, region: Region, changed: np.ndarray, removed: list[Removed],
                   first: Pairs) -> Pairs:
    """The similar pairs (positions, i < j) among the members of every group a change touches, reading each
    member reached through a pair that states one fact, until no group has an unread member."""
    threshold = ctx.settings.consolidation_dedup_similarity
    queries = [region.loaded[int(p)] for p in changed] + [r.candidate for r in removed if r.vector is not None]
    origins = np.concatenate([changed, np.full(len(queries) - changed.size, -1)]).astype(np.int64)
    hits, found = first, []
    queried = set(changed.tolist())
    while True:
        joined = _follow(region, hits, queries, origins, threshold, found)
        frontier = np.array(sorted(set(joined) - queried), dtype=np.int64)
        if frontier.size == 0:
            break
        queried.update(frontier.tolist())
        queries, origins = [region.loaded[int(p)] for p in frontier], frontier
        hits = region.search(frontier, threshold)
    if not found:
        return Pairs.empty()
    first_, second, similarities = (np.array(column) for column in zip(*found))
    return Pairs(first_.astype(INDEX), second.astype(INDEX), similarities.astype(np.float32)).deduplicated(
        len(region.ids))


def _follow(region: Region, hits: Pairs, queries: list[Candidate], origins: np.ndarray, threshold: float,
            found: list[tuple[int, int, float]]) -> list[int]:
    """Read the memories the queries' hits may state one fact with; add every similar pair of read memories of
    one type to `found`; return the positions that do state one fact with their query."""
    keep = hits.similarities >= threshold
    q, t, similarity = hits.rows[keep], hits.cols[keep].astype(np.int64), hits.similarities[keep]
    query_types = np.array([c.type for c in queries], dtype=object)
    keep = (origins[q] != t) & (region.types[t] == query_types[q])  # other types are never one fact
    q, t, similarity = q[keep], t[keep], similarity[keep]
    unread = sorted(set(t.tolist()) - region.loaded.keys())
    terms = region.stored_terms(unread)
    worth = {p for p in unread if terms[p] is None}
    for k, p in zip(q.tolist(), t.tolist()):
        if p not in worth and terms.get(p) is not None and may_state_together(queries[k].fact.key, terms[p]):
            worth.add(p)
    region.load(worth)
    joined = []
    for k, p, s in zip(q.tolist(), t.tolist(), similarity.tolist()):
        other = region.loaded.get(p)
        if other is None:
            continue
        if origins[k] >= 0:
            found.append((min(origins[k], p), max(origins[k], p), s))
        if stated_together(queries[k], other):
            joined.append(p)
    return joined


def _load_simultaneous(region: Region, changed: np.ndarray, first: Pairs) -> None:
    """Read the memories of a changed memory's type recorded within ORDER_TOLERANCE_SECONDS of it and related to
    it: the partners of any new simultaneous conflict."""
    keep = (first.rows < changed.size) & (first.similarities >= dedup.RELATED_SIMILARITY)
    origin, partner = changed[first.rows[keep]], first.cols[keep].astype(np.int64)
    keep = (origin != partner) & (region.types[origin] == region.types[partner])
    origin, partner = origin[keep], partner[keep]
    if origin.size == 0:
        return
    times = epoch_seconds([region.timestamps[p] for p in origin.tolist()])
    others = epoch_seconds([region.timestamps[p] for p in partner.tolist()])
    region.load(partner[np.abs(times - others) <= ORDER_TOLERANCE_SECONDS])


# --- changes: the announcements whose verdict can move -------------------------------------------------------


def _judge_announcers(ctx: TaskContext, region: Region, merges: list[Merge], changed_ids: set[str],
                      removed: list[Removed]) -> set[str]:
    """The ids of the announcements to judge again, with each one's pool and rivals read into the region.

    Changed statements: the changed memories, the canonicals this run merges into (they stand for more texts
    now), what this run merges away, and what was removed since the watermark."""
    candidates, _ = region.candidates()
    by_id = {c.id: c for c in dedup.after_merges(candidates, merges)}
    gone = {d for m in merges for d in m.duplicates}
    changed_ids = changed_ids | {m.into for m in merges}
    statements = [by_id[i] for i in changed_ids if i in by_id] + \
        [c for c in candidates if c.id in gone] + [r.candidate for r in removed]
    judged = {c.id for c in statements if c.id in by_id and _changes(c)}
    lookup = set().union(set(), *(stored_terms(c)[0] for c in statements),
                         *(ch.old | ch.subject | ch.new for i in judged for ch in _changes(by_id[i])))
    found = [region.position[i] for i in ctx.hygiene.anchored(sorted(lookup)) if i in region.position]
    region.load(found)
    candidates, _ = region.candidates()
    by_id = {c.id: c for c in dedup.after_merges(candidates, merges)}
    judged |= _affected(region, [by_id[region.ids[p]] for p in found if region.ids[p] in by_id], statements,
                        [by_id[i] for i in judged])
    _load_pools(ctx, region, [by_id[i] for i in judged if i in by_id])
    return judged


def _changes(candidate: Candidate) -> list[Change]:
    """The changes a memory announces, in any text it stands for."""
    return [fact.change for fact, _ in candidate.variants if fact.change is not None]


def _affected(region: Region, announcers: list[Candidate], statements: list[Candidate],
              changed_announcers: list[Candidate]) -> set[str]:
    """Which of these announcements may take a changed statement into their pool, or are rivals of a changed
    announcement (one subject and old value, another new value)."""
    terms = {id(s): frozenset(stored_terms(s)[0]) for s in statements}
    rival_keys = {(ch.subject, ch.old) for a in changed_announcers for ch in _changes(a) if ch.old and ch.new}
    affected = set()
    for announcer in announcers:
        for change in _changes(announcer):
            if (change.subject, change.old) in rival_keys or any(
                    s.scope == announcer.scope and may_change(change, terms[id(s)])
                    and _maybe_related(region, announcer, s) for s in statements):
                affected.add(announcer.id)
                break
    return affected


def _maybe_related(region: Region, a: Candidate, b: Candidate) -> bool:
    """related(), or True for a memory whose vector is gone with it (a deletion whose tombstone had none)."""
    return a.id not in region.position or b.id not in region.position or region.related(a, b)


def _load_pools(ctx: TaskContext, region: Region, announcers: list[Candidate]) -> None:
    """Read each announcement's whole pool (stored terms holding enough of pool_terms, reached through the
    postings of its rarest terms) and its rivals (stored anchors holding its old value)."""
    rows = []
    for announcer in announcers:
        for change in _changes(announcer):
            terms, need = pool_terms(change)
            rows.append({"key": len(rows), "terms": sorted(terms), "need": need})
    counts = ctx.hygiene.term_counts(sorted({t for row in rows for t in row["terms"]}))
    for row in rows:
        row["drive"] = drive_terms(row["terms"], row["need"], counts)
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
