"""The memory graph in FalkorDB, in the domain's words: memories, scores, associations, clusters."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import redis

from ..revisits import Lookup
from ..hygiene.terms import TERMS_VERSION, text_terms
from ..scopes import Scoping
from ..scoring import CANDIDATE_RELEVANCE, ScoringInputs
from ..timeutil import epoch_seconds
from .changes import (CHANGE, DELETE_TOUCHING_NEIGHBOURS, MARK_SUMMARIES, MEMBERS_LEFT, NEXT_CHANGE, STAMP, TOUCH,
                      changed_after, ids_of, touched, without_bookkeeping)
from .authors import AUTOMEM_SUMMARY_LABEL, RUN_LABEL, is_ours, mark
from .report_pages import PAGE_LABEL
from .control import control_node
from .fact_terms import INDEXES as FACT_TERMS_INDEXES, LEGACY_INDEXES, SET_TERMS
from .proposals import INDEXES as PROPOSAL_INDEXES
from ..slices import joined_columns
from .falkor import Falkor, booleans, floats, typed

ACTIVE = "coalesce(m.archived, false) = false"
NOT_SUMMARY = "coalesce(m.type, '') <> 'MetaPattern'"
ACTIVE_MEMORY = f"{ACTIVE} AND {NOT_SUMMARY}"  # an active memory, not a summary of others
# AutoMem's own cluster summaries (no vector): never scored, forgotten, counted or embedded by us.
NOT_AUTOMEM_SUMMARY = f"NOT m:{AUTOMEM_SUMMARY_LABEL}"
# A memory that was never scored counts as fully relevant until decay scores it.
RELEVANCE = "coalesce(m.relevance_score, 1.0)"
# A memory's relationships, every edge counted (as AutoMem counts them): a supersession is two, SUPERSEDES and the
# EVOLVED_INTO that mirrors it for AutoMem's recall. Leaving the mirror out costs typed degrees, +45 % per scan.
DEGREE = "indegree(m) + outdegree(m)"
SUPERSEDED = "m.superseded_by IS NOT NULL"
NOT_SUPERSEDED = "m.superseded_by IS NULL"
# A memory a summary may speak for: active, and neither merged away nor superseded.
CURRENT = f"{ACTIVE} AND m.merged_into IS NULL AND {NOT_SUPERSEDED}"
# Undoing a supersession clears the validity end AutoMem's recall reads, if we set it (a client's own stays).
OUR_T_INVALID_UNDONE = ("o.t_invalid = CASE WHEN o.t_invalid_set_by = 'consolidation' THEN null ELSE o.t_invalid END, "
                        "o.t_invalid_set_by = null")
SCORING_COLUMNS = (f"m.id, id(m), m.timestamp, m.last_accessed, m.importance, m.confidence, m.relevance_score, "
                   f"{DEGREE}, {SUPERSEDED}")
# The same with every relationship count read as 0: counting is over half of a scan's cost at a million memories
# (forget reads the counts only of the memories they can matter for, GraphStore.relationship_counts).
UNCOUNTED_SCORING_COLUMNS = SCORING_COLUMNS.replace(DEGREE, "0")
SCORING_WIDTH = 9  # columns of SCORING_COLUMNS
# How each column of SCORING_COLUMNS is read, and of forget's columns after them (stores/falkor.typed: a scan
# converts each page as it arrives).
SCORING_KINDS = ("as read", "integers", "times", "times", "numbers", "numbers", "numbers", "counts", "flags")
FORGET_KINDS = (*SCORING_KINDS, "flags", "names", "flags", "as read", "times", "flags", "times", "times")
MERGED = "m.merged_into IS NOT NULL"
FORGET_COLUMNS = (f"{UNCOUNTED_SCORING_COLUMNS}, m.archived, m.type, m.protected, m.protected_reason, m.restored_at, "
                  f"{MERGED}, m.held_until, m.archived_at")
ABOVE_DECAY_THRESHOLD = "coalesce(m.importance, 0.5) >= $threshold"  # with ACTIVE: the memories decay scores
# A MetaPattern by id, found through the index on Memory ids: `(p:MetaPattern {id: id})` scans every MetaPattern
# for each row (8,000 rows against 8,000 summaries: 6 s at a million memories, against 0.2 s).
PATTERN_BY_ID = "(p:Memory {id: id}) WHERE p:MetaPattern"
PATTERNS_PER_READ = 50  # summaries whose members one read returns (~5,500 members at a million memories)
PROBE_FACTOR, PROBE_ROUNDS = 4, 3
# What an incremental decay or forget reads besides the memories due and touched: the condition, the Lookup field
# bound to it (as the parameter of that name), and whether an index serves it (else a scan of every memory that
# returns only the matches: 0.3-0.5 s at a million; an index on last_accessed would make every use an index write).
LOOKUP_READS = {
    "changed": (changed_after(), "since", True),
    "used": ("m.last_accessed >= $used_since", "used_since", False),
}
SCAN_INSTEAD_SHARE = 0.25  # of the memories: asked for by id beyond it, they are read with every other one
# Range indexes the queries rely on: ids, change markers ("changed since"), dedup's stored fact terms (on nodes of
# their own: stores/fact_terms.py), and the keys of the dedup model judge's cached verdicts (stores/verdicts.py).
# Memory keeps only the two it cannot do without: FalkorDB re-indexes a node on every write to it.
INDEXES = (("Memory", "id"), ("Memory", CHANGE), *FACT_TERMS_INDEXES, ("RequestRecord", "key"),
           ("RequestRecord", "memory_id"), ("Tombstone", "memory_id"), ("Tombstone", CHANGE), (RUN_LABEL, "id"),
           ("MergeRecord", "id"), ("MergeRecord", "duplicate_id"), ("MergeRecord", "group_id"),
           ("JudgeVerdict", "key"), ("Entity", "id"),
           ("EntityMerge", "id"), ("EntityMerge", "alias_id"), (PAGE_LABEL, "run_id"), *PROPOSAL_INDEXES)

# A new memory is written with the fact terms dedup stores (hygiene.text_terms), stamped as of its change number
# as dedup stamps them, so no dedup pass has to store them afterwards; rows are {memory, terms, anchors, least}.
TERMS_STAMP = "m.fact_stamp = toString($terms_version) + ':' + toString(change)"


@dataclass
class ForgetInputs:
    """The scoring columns of every memory plus what the protections look at."""

    scoring: ScoringInputs
    archived: np.ndarray
    types: list[str]
    protected: np.ndarray
    protected_reasons: list[str | None]
    restored: np.ndarray  # epoch seconds of the last restore (a fresh grace period), NaN if never
    merged: np.ndarray  # merged into another memory: it leaves with its canonical, never on its own score
    held_until: np.ndarray  # epoch seconds until which a restore holds it, NaN if never restored
    archived_at: np.ndarray  # epoch seconds it was archived (the dwell before a deletion counts from it), or NaN


@dataclass(frozen=True)
class SampledMemory:
    id: str
    type: str
    created: float  # epoch seconds, NaN if unknown
    scope: str = ""


@dataclass(frozen=True)
class MetaPatternRecord:
    id: str
    member_ids: frozenset[str]
    size: int | None = None  # the cluster size it was written with (more than its members now: one was deleted)


@dataclass
class Listing:
    """Ids, scope keys and change numbers of the memories a task looks at (NaN: never marked)."""

    ids: list[str]
    scopes: list[str]
    changes: np.ndarray


@dataclass
class ClusterListing(Listing):
    """Every active memory, and whether each is a candidate clustering groups."""

    candidate: np.ndarray


class GraphStore:
    """Reads and writes memories in FalkorDB; every query batches (UNWIND) instead of looping per memory."""

    def __init__(self, falkor: Falkor, scoping: Scoping | None = None):
        self.falkor = falkor
        self.scoping = scoping or Scoping()

    def within(self, scope: dict[str, str]) -> GraphStore:
        """This store with every task read limited to one scope (a run of one scope)."""
        return GraphStore(self.falkor, self.scoping.within(scope))

    def stored_by(self, moment: str) -> GraphStore:
        """This store with every read limited to the memories stored by `moment` (a run as of a time)."""
        return GraphStore(self.falkor, self.scoping.stored_by(moment))

    def ensure_schema(self) -> None:
        """Create the indexes the queries rely on, if missing, and drop those older versions made, if there; the
        server's query log off (memory texts stay in the graph's own records)."""
        self.falkor.silence_query_log()
        for label, field in INDEXES:
            self._index_command("CREATE", label, field, "already indexed")
        for label, field in LEGACY_INDEXES:
            self._index_command("DROP", label, field, "unable to drop index")

    def _index_command(self, verb: str, label: str, field: str, done_already: str) -> None:
        """CREATE or DROP one index; the error saying it was done already (`done_already`) is no error."""
        try:
            self.falkor.execute(f"{verb} INDEX FOR (n:{label}) ON (n.{field})")
        except redis.ResponseError as exc:
            if done_already not in str(exc).lower():
                raise

    # --- single memories -------------------------------------------------------------------------

    def upsert_memories(self, memories: Sequence[dict[str, Any]]) -> None:
        """Create each memory, or update the stored fields of one with the same id (an update keeps the fact
        terms of its old text, as replace_memories does)."""
        self.falkor.write_chunks(
            NEXT_CHANGE + "UNWIND $rows AS row OPTIONAL MATCH (e:Memory {id: row.memory.id}) "
            "WITH row, change, e IS NULL AS fresh MERGE (m:Memory {id: row.memory.id}) "
            f"ON CREATE SET {TERMS_STAMP} SET m += row.memory SET {STAMP} "
            f"FOREACH (_ IN CASE WHEN fresh THEN [1] ELSE [] END | {SET_TERMS})",
            with_terms(memories), chunk=500, terms_version=TERMS_VERSION)

    def create_memories(self, memories: Sequence[dict[str, Any]]) -> set[str]:
        """Create memories whose id is not taken yet (an existing one is never touched); returns the created ids."""
        rows = self.falkor.write_chunks(
            NEXT_CHANGE + "UNWIND $rows AS row OPTIONAL MATCH (e:Memory {id: row.memory.id}) "
            f"WITH row, change WHERE e IS NULL CREATE (m:Memory) SET m = row.memory SET {STAMP}, {TERMS_STAMP} "
            f"{SET_TERMS}RETURN m.id",
            with_terms(memories), chunk=500, terms_version=TERMS_VERSION)
        return {row[0] for row in rows}

    def replace_memories(self, memories: Sequence[dict[str, Any]]) -> None:
        """Replace every property of existing memories (their edges stay). The fact terms dedup stored stay too
        (beside the memory, with their stamp on it): they describe the text replaced (its change number no longer
        matches the stamp), which the next incremental dedup needs to find what that text was part of."""
        self.falkor.write_chunks(
            NEXT_CHANGE + "UNWIND $rows AS row MATCH (m:Memory {id: row.id}) "
            f"WITH m, row, change, m.fact_stamp AS stamp SET m = row SET {STAMP}, m.fact_stamp = stamp",
            list(memories), chunk=500)

    def remove_memories(self, ids: Sequence[str]) -> None:
        """Remove nodes outright (undoing a write that failed half-way; forgetting goes through tombstones)."""
        self.falkor.write_chunks(NEXT_CHANGE + "UNWIND $rows AS id MATCH (m:Memory {id: id}) "
                                 + DELETE_TOUCHING_NEIGHBOURS, list(ids))

    def get_memory(self, memory_id: str) -> dict[str, Any] | None:
        found = self.get_memories([memory_id])
        return found[0] if found else None

    def get_memories(self, ids: Sequence[str]) -> list[dict[str, Any]]:
        """All stored fields of each memory that exists, in the order of `ids`."""
        rows = self.falkor.record_chunks("UNWIND $ids AS id MATCH (m:Memory {id: id}) RETURN properties(m)",
                                         list(ids), 1000)
        return [without_bookkeeping(dict(row[0])) for row in rows]

    def existing_ids(self, ids: Sequence[str]) -> set[str]:
        rows = self.falkor.execute("UNWIND $ids AS id MATCH (m:Memory {id: id}) RETURN m.id", {"ids": list(ids)},
                                   read_only=True)
        return {row[0] for row in rows}

    def record_access(self, memory_id: str, accessed_at: str, most_uses: int) -> dict[str, Any] | None:
        """One more use (the count stops at `most_uses`, so it can never wrap), and when."""
        rows = self.falkor.records(
            "MATCH (m:Memory {id: $id}) SET m.last_accessed = $at, "
            "m.access_count = CASE WHEN coalesce(m.access_count, 0) < $most THEN coalesce(m.access_count, 0) + 1 "
            "ELSE m.access_count END RETURN properties(m)",
            {"id": memory_id, "at": accessed_at, "most": most_uses},
        )
        return without_bookkeeping(dict(rows[0][0])) if rows else None

    def mark_changed(self, ids: Sequence[str]) -> None:
        """Stamp memories as changed (a write elsewhere changed what they are, e.g. their vector)."""
        self.falkor.write_chunks(NEXT_CHANGE + f"UNWIND $rows AS id MATCH (m:Memory {{id: id}}) SET {STAMP}",
                                 list(ids))

    def mark_unmarked(self) -> int:
        """Stamp the memories no change marker names yet (written by another program, or before markers
        existed), so later runs find them, and only their later changes, by the index. Returns how many.
        MetaPatterns are left alone: no incremental task reads them as memories.

        A control node made anew (removed by hand, or a graph restored without it) restarts the counter below
        the markers memories and tombstones carry, which would then read as changed after every watermark: the
        counter is moved past them first."""
        counter = self._change_counter()
        columns = self.falkor.scan_memories(
            f"(m.{CHANGE} IS NULL OR m.{CHANGE} > $counter) AND {NOT_SUMMARY}", f"m.id, m.{CHANGE}",
            {"counter": counter})
        ids, marks = (columns[0], floats(columns[1])) if columns else ([], np.zeros(0))
        tombstones = self.falkor.execute(f"MATCH (t:Tombstone) WHERE t.{CHANGE} > $counter RETURN max(t.{CHANGE})",
                                         {"counter": counter}, read_only=True)
        ahead = np.nanmax(np.concatenate([marks, floats([row[0] for row in tombstones]), [counter]]))
        if ahead > counter:
            self.falkor.execute(f"MERGE {control_node('c')} SET c.{CHANGE} = CASE WHEN c.{CHANGE} > $ahead "
                                f"THEN c.{CHANGE} ELSE $ahead END", {"ahead": int(ahead)})
        if not np.isnan(marks).any():
            return 0
        # By node id ranges, not by id lookups: a graph another program wrote may not have our indexes yet
        # (they build in the background), and a lookup per memory would then scan the graph each time.
        return self.falkor.write_pages(NEXT_CHANGE, f"m.{CHANGE} IS NULL AND {NOT_SUMMARY}", STAMP)

    def _change_counter(self) -> int:
        rows = self.falkor.execute(f"MATCH {control_node('c')} RETURN c.{CHANGE}", read_only=True)
        return int(rows[0][0]) if rows and rows[0][0] is not None else 0

    def count_memories(self) -> int:
        """Memories and our summaries (each has a vector), AutoMem's summaries aside: two label counts."""
        counts = [int(self.falkor.execute(f"MATCH (m:{label}) RETURN count(m)", read_only=True)[0][0])
                  for label in ("Memory", AUTOMEM_SUMMARY_LABEL)]
        return counts[0] - counts[1]

    def all_memory_ids(self) -> list[str]:
        """Every memory that should have a vector (AutoMem's summaries have none)."""
        columns = self.falkor.scan_memories(NOT_AUTOMEM_SUMMARY, "m.id")
        return columns[0] if columns else []

    # --- decay -----------------------------------------------------------------------------------

    def scoring_inputs(self, importance_threshold: float | None, lookup: Lookup | None = None) -> ScoringInputs:
        """The active memories decay scores (all of them, or those at or above the importance threshold; only
        those the lookup names, if given)."""
        where, params = self._decayed(importance_threshold)
        return _scoring_inputs(self._memories(where, SCORING_COLUMNS, params, lookup, SCORING_KINDS))

    def scoring_inputs_and_merged(self, importance_threshold: float | None) -> tuple[ScoringInputs, np.ndarray]:
        """scoring_inputs of every memory decay scores, and which of them are merged into another (one scan)."""
        where, params = self._decayed(importance_threshold)
        columns = self.falkor.scan_memories(where, f"{SCORING_COLUMNS}, {MERGED}", params,
                                            kinds=(*SCORING_KINDS, "flags"))
        if not columns:
            return _scoring_inputs([]), np.zeros(0, bool)
        return _scoring_inputs(columns[:SCORING_WIDTH]), columns[SCORING_WIDTH]

    def _decayed(self, importance_threshold: float | None) -> tuple[str, dict[str, Any]]:
        """The condition (and its parameters) of the memories decay scores."""
        where = f"{ACTIVE} AND {NOT_AUTOMEM_SUMMARY} AND {self.scoping.where()}"
        params = self.scoping.params()
        if importance_threshold is not None:
            where += f" AND {ABOVE_DECAY_THRESHOLD}"
            params["threshold"] = importance_threshold
        return where, params

    def scoring_inputs_of(self, ids: Sequence[str]) -> ScoringInputs:
        """scoring_inputs for these memories, whatever their state."""
        rows = self.falkor.read_chunks(
            f"UNWIND $ids AS id MATCH (m:Memory {{id: id}}) RETURN {SCORING_COLUMNS}, {CURRENT}", list(ids), 5000)
        columns = typed([list(column) for column in zip(*rows)], (*SCORING_KINDS, "flags"))
        return _scoring_inputs(columns[:SCORING_WIDTH], columns[SCORING_WIDTH] if columns else None)

    def _memories(self, where: str, returns: str, params: dict[str, Any], lookup: Lookup | None,
                  kinds: Sequence[str]) -> list[Any]:
        """`returns` (starting with m.id, id(m)) as columns of these kinds for the memories matching `where`:
        every one, or those the lookup names (LOOKUP_READS, then a seek by node id of the memories due or
        touched)."""
        if lookup is None:
            return self.falkor.scan_memories(where, returns, params, kinds=kinds)
        rows: dict[int, Sequence[Any]] = {}
        for condition, bound, indexed in LOOKUP_READS.values():
            values = {**params, bound: getattr(lookup, bound)}
            if indexed:
                found = self.falkor.execute(f"MATCH (m:Memory) WHERE {condition} AND ({where}) RETURN {returns}",
                                            values, read_only=True)
            else:
                found = list(zip(*self.falkor.scan_memories(f"{condition} AND ({where})", returns, values)))
            rows.update((row[1], row) for row in found)
        rows.update((row[1], row) for row in self.falkor.read_chunks(
            f"UNWIND $nodes AS node MATCH (m:Memory) WHERE id(m) = node AND ({where}) RETURN {returns}",
            np.union1d(lookup.node_ids, self.touched_since(lookup.since)).tolist(), 5000, key="nodes", params=params))
        return typed([list(column) for column in zip(*rows.values())], kinds)

    def touched_since(self, since: int) -> np.ndarray:
        """The internal ids of the nodes writes numbered after `since` touched (gave or took a relationship)."""
        rows = self.falkor.execute(f"MATCH (t:{TOUCH}) WHERE t.change > $since UNWIND t.nodes AS node "
                                   "RETURN DISTINCT node", {"since": since}, read_only=True)
        return np.array([row[0] for row in rows], dtype=np.int64)

    def drop_touches(self, before_ms: float) -> None:
        """Let go of the Touch nodes written before this time (FalkorDB's clock, ms)."""
        self.falkor.execute(f"MATCH (t:{TOUCH}) WHERE t.at < $before DELETE t", {"before": before_ms})

    def write_scores(self, node_ids: Sequence[int], ids: Sequence[str], scores: Iterable[float]) -> None:
        """Set relevance scores by internal node id (a direct seek), checking the memory id still matches."""
        rows = [[int(node), memory_id, float(score)] for node, memory_id, score in zip(node_ids, ids, scores)]
        # A score crossing the candidate line adds the memory to clustering and creative, or takes it out:
        # that is a change for them (compared with the stored score, in the query, so no other write races it).
        self.falkor.write_chunks(
            NEXT_CHANGE + "UNWIND $rows AS row MATCH (m) WHERE id(m) = row[0] AND m.id = row[1] "
            f"WITH m, row, change, ({RELEVANCE} > $line) <> (row[2] > $line) AS crossed "
            f"SET m.{CHANGE} = CASE WHEN crossed THEN change ELSE m.{CHANGE} END, m.relevance_score = row[2]",
            rows, line=CANDIDATE_RELEVANCE,
        )

    # --- creative associations ---------------------------------------------------------------------

    def sample_memories(self, min_relevance: float, size: int) -> list[SampledMemory]:
        """A uniform random sample of active, relevant, non-summary memories.

        Probing random internal node ids finds qualifying nodes in well under a millisecond; sorting every
        memory by rand() takes tens at 100k. Each qualifying node is equally likely to be probed, so the
        sample is uniform; if probing finds too few (a small or mostly irrelevant store), the full sort decides.
        """
        filters = f"{RELEVANCE} > $min AND {ACTIVE_MEMORY} AND {self.scoping.where()}"
        columns = f"m.id, m.type, m.timestamp, {self.scoping.key_expression()}"
        # Node ids are reused after deletions, so they stay close to 0..count; the margin covers the rest.
        bound = int(self.falkor.execute("MATCH (n) RETURN count(n)", read_only=True)[0][0] * 1.1) + 64
        found: dict[str, list] = {}
        if bound > PROBE_ROUNDS * size * PROBE_FACTOR:
            for round_ in range(PROBE_ROUNDS):
                probes = random.sample(range(bound), min(bound, size * PROBE_FACTOR * 2**round_))
                rows = self.falkor.execute(
                    f"UNWIND $ids AS i MATCH (m:Memory) WHERE id(m) = i AND {filters} RETURN {columns}",
                    {"ids": probes, "min": min_relevance, **self.scoping.params()}, read_only=True)
                found.update((row[0], row) for row in rows)
                if len(found) >= size:
                    break
        if len(found) < size:
            rows = self.falkor.execute(
                f"MATCH (m:Memory) WHERE {filters} WITH m ORDER BY rand() LIMIT $size RETURN {columns}",
                {"min": min_relevance, "size": size, **self.scoping.params()}, read_only=True)
            found = {row[0]: row for row in rows}
        rows = random.sample(list(found.values()), min(size, len(found)))
        created = epoch_seconds(row[2] for row in rows)
        return [SampledMemory(row[0], row[1] or "Memory", float(t), row[3]) for row, t in zip(rows, created)]

    def sample_changed(self, min_relevance: float, size: int, since: int) -> tuple[list[SampledMemory], int]:
        """A uniform random sample of the memories sample_memories would consider that changed after `since`
        (one indexed read of the changed ones, then a sample of those), and how many there were."""
        rows = self.falkor.execute(
            f"MATCH (m:Memory) WHERE {changed_after()} AND {RELEVANCE} > $min AND {ACTIVE_MEMORY} "
            f"AND {self.scoping.where()} RETURN m.id, m.type, m.timestamp, {self.scoping.key_expression()}",
            {"since": since, "min": min_relevance, **self.scoping.params()}, read_only=True)
        total, rows = len(rows), random.sample(rows, min(size, len(rows)))
        created = epoch_seconds(row[2] for row in rows)
        return [SampledMemory(row[0], row[1] or "Memory", float(t), row[3]) for row, t in zip(rows, created)], total

    def linked_pairs(self, ids: Sequence[str]) -> set[frozenset[str]]:
        """Pairs among these memories that already share an edge of any type or direction."""
        rows = self.falkor.execute(
            "UNWIND $ids AS x MATCH (a:Memory {id: x})-[]-(b:Memory) WHERE b.id IN $ids RETURN DISTINCT a.id, b.id",
            {"ids": list(ids)},
            read_only=True,
        )
        return {frozenset(row) for row in rows}

    def create_associations(self, relation: str, rows: Sequence[dict[str, Any]]) -> None:
        """Create `relation` edges {a, b, props}; a pair that gained an edge meanwhile is left alone."""
        if relation != "DISCOVERED":
            raise ValueError(f"unknown association relation {relation}")
        self.falkor.write_chunks(
            NEXT_CHANGE + "UNWIND $rows AS row MATCH (a:Memory {id: row.a}), (b:Memory {id: row.b}) "
            f"WHERE NOT (a)--(b) CREATE (a)-[r:{relation}]->(b) SET r = row.props, {mark('r')} "
            f"{touched(ids_of('a', 'b'))}",
            list(rows),
            chunk=500,
        )

    def joined_pairs(self, pairs: Sequence[tuple[str, str]]) -> set[frozenset[str]]:
        """Those of these pairs of memories that already share an edge of any type or direction."""
        return {frozenset(row) for row in self.falkor.read_chunks(
            "UNWIND $ids AS row MATCH (a:Memory {id: row[0]})--(b:Memory {id: row[1]}) RETURN DISTINCT a.id, b.id",
            [list(pair) for pair in pairs], 5000)}

    def episode_population(self) -> tuple[list[str], list[str], np.ndarray, np.ndarray]:
        """Every current memory (active, not superseded, not a summary): ids, scope keys, the epoch seconds of
        its timestamp (NaN: none) and its change number (what episode links are drawn among)."""
        columns = self.falkor.scan_memories(
            f"{ACTIVE_MEMORY} AND {NOT_SUPERSEDED} AND {self.scoping.where()}",
            f"m.id, {self.scoping.key_expression()}, m.timestamp, m.{CHANGE}", self.scoping.params())
        if not columns:
            return [], [], np.zeros(0), np.zeros(0)
        return columns[0], columns[1], epoch_seconds(columns[2]), floats(columns[3])

    def episode_partners(self, memory_id: str, limit: int) -> list[str]:
        """The ids of the memories a same_episode association joins to this one, the most similar first."""
        rows = self.falkor.execute(
            "MATCH (:Memory {id: $id})-[r:DISCOVERED {kind: 'same_episode'}]-(o:Memory) "
            "RETURN o.id ORDER BY r.similarity DESC, o.id LIMIT $limit",
            {"id": memory_id, "limit": limit}, read_only=True)
        return [row[0] for row in rows]

    # --- clustering ------------------------------------------------------------------------------

    def cluster_population(self, min_relevance: float) -> ClusterListing:
        """Every active memory (in the order dedup reads them, so that both tasks are handed the same vectors)
        with whether each is a candidate clustering groups (relevance above `min_relevance`)."""
        columns = self.falkor.scan_memories(
            f"{ACTIVE_MEMORY} AND {self.scoping.where()}",
            f"m.id, {self.scoping.key_expression()}, m.{CHANGE}, {RELEVANCE} > $min AND {NOT_SUPERSEDED}",
            {"min": min_relevance, **self.scoping.params()})
        if not columns:
            return ClusterListing([], [], np.zeros(0), np.zeros(0, dtype=bool))
        return ClusterListing(columns[0], columns[1], floats(columns[2]), booleans(columns[3]))

    def memory_details(self, ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        """Type, timestamp, importance and scope properties of the given memories, by id."""
        scope = "".join(f", m.{name}" for name in self.scoping.properties)
        rows = list(self._rows_by_id(ids, f"m.type, m.timestamp, m.importance{scope}"))
        weights = floats([row[3] for row in rows])
        return {
            row[0]: {"type": row[1] or "Memory", "timestamp": row[2],
                     "importance": None if np.isnan(weight) else float(weight),
                     "scope": dict(zip(self.scoping.properties, row[4:]))}
            for row, weight in zip(rows, weights)
        }

    def memory_contents(self, ids: Sequence[str]) -> dict[str, str]:
        return {memory_id: content or "" for memory_id, content in self._rows_by_id(ids, "m.content")}

    def _rows_by_id(self, ids: Sequence[str], fields: str) -> Iterable[list[Any]]:
        """`m.id, <fields>` of these memories (absent ones left out). For a large share of the graph every memory
        is read a page at a time instead: at a million memories a lookup through the id index costs 9-12 µs,
        a row of the scan 2-3 µs (a day's decay moves most clusters, whose members are then all asked for)."""
        wanted = list(ids)
        if len(wanted) > SCAN_INSTEAD_SHARE * self.count_memories():
            asked = set(wanted)
            columns = self.falkor.scan_memories("true", f"m.id, {fields}")
            yield from (list(row) for row in zip(*columns) if row[0] in asked)
            return
        yield from self.falkor.read_chunks(
            f"UNWIND $ids AS id MATCH (m:Memory {{id: id}}) RETURN m.id, {fields}", wanted, 5000)

    def meta_patterns(self) -> list[MetaPatternRecord]:
        """The active MetaPatterns with the ids of the memories each summarizes."""
        heads = self.falkor.execute(
            f"MATCH (p:MetaPattern) WHERE coalesce(p.archived, false) = false AND {self.scoping.where('p')} "
            "RETURN p.id, p.cluster_size", self.scoping.params(), read_only=True)
        members: dict[str, list[str]] = {pattern_id: [] for pattern_id, _ in heads}
        # The members a few summaries at a time: one query over every summary held a reading thread of the server
        # for 2.5 s at a million memories, and any write waiting meanwhile held up every other read behind it.
        for pattern_id, member_id in self.falkor.read_chunks(
                f"UNWIND $ids AS id MATCH {PATTERN_BY_ID} MATCH (p)-[:SUMMARIZES]->(m:Memory) RETURN p.id, m.id",
                list(members), PATTERNS_PER_READ):
            members[pattern_id].append(member_id)
        return [MetaPatternRecord(pattern_id, frozenset(members[pattern_id]), size if isinstance(size, int) else None)
                for pattern_id, size in heads]

    def save_meta_patterns(self, patterns: Sequence[dict[str, Any]], added: Sequence[tuple[str, str]],
                           removed: Sequence[tuple[str, str]]) -> None:
        """Create or update MetaPatterns {id, props}, then add and remove (pattern, member) SUMMARIZES edges."""
        self.falkor.write_chunks(
            NEXT_CHANGE + "UNWIND $rows AS row MERGE (p:Memory:MetaPattern {id: row.id}) SET p += row.props "
            + touched(ids_of("p")), list(patterns),
            chunk=200,
        )
        self.falkor.write_chunks(
            NEXT_CHANGE + "UNWIND $rows AS row MATCH (p:Memory {id: row[0]})-[s:SUMMARIZES]->(m:Memory {id: row[1]}) "
            f"DELETE s {touched(ids_of('p', 'm'))}",
            [list(pair) for pair in removed],
        )
        self.falkor.write_chunks(
            NEXT_CHANGE + "UNWIND $rows AS row MATCH (p:Memory {id: row[0]}), (m:Memory {id: row[1]}) "
            f"MERGE (p)-[s:SUMMARIZES]->(m) SET {mark('s')} {touched(ids_of('p', 'm'))}",
            [list(pair) for pair in added],
        )

    def summaries_members_left(self) -> list[tuple[str, frozenset[str], frozenset[str]]]:
        """(id, every member, the members still current) of each active MetaPattern a member of which left."""
        rows = self.falkor.records(
            f"MATCH (p:MetaPattern) WHERE p.{MEMBERS_LEFT} = true AND coalesce(p.archived, false) = false "
            f"AND {self.scoping.where('p')} OPTIONAL MATCH (p)-[:SUMMARIZES]->(m:Memory) "
            f"RETURN p.id, collect(m.id), collect(CASE WHEN {CURRENT} THEN m.id END)",
            self.scoping.params(), read_only=True)
        return [(row[0], frozenset(row[1]), frozenset(row[2])) for row in rows]

    def summaries_rebuilt(self, ids: Sequence[str]) -> None:
        self.falkor.write_chunks(f"UNWIND $rows AS id MATCH {PATTERN_BY_ID} SET p.{MEMBERS_LEFT} = null", list(ids))

    def retire_meta_patterns(self, ids: Sequence[str], retired_at: str) -> None:
        """A MetaPattern whose cluster dissolved is archived and stops summarizing anything."""
        self.falkor.write_chunks(
            NEXT_CHANGE + f"UNWIND $rows AS id MATCH {PATTERN_BY_ID} "
            "SET p.archived = true, p.archived_at = $at, p.retired_at = $at, p.protected = false "
            f"WITH p, change OPTIONAL MATCH (p)-[s:SUMMARIZES]->(m) DELETE s {touched(ids_of('p', 'm'))}",
            list(ids),
            at=retired_at,
        )

    # --- forgetting ------------------------------------------------------------------------------

    def forget_inputs(self, lookup: Lookup | None = None) -> ForgetInputs:
        """Every memory, archived and merged ones too (or those the lookup names), with what the forgetting
        rules look at, relationship counts aside (all 0: see relationship_counts); AutoMem's summaries are
        AutoMem's to keep or drop."""
        return _forget_inputs(self._memories(f"{NOT_AUTOMEM_SUMMARY} AND {self.scoping.where()}", FORGET_COLUMNS,
                                             self.scoping.params(), lookup, FORGET_KINDS))

    def forget_inputs_beside_decay(self, lookup: Lookup, importance_threshold: float | None) -> ForgetInputs:
        """forget_inputs of the memories the lookup names and of every one decay does not score (archived, or
        under its importance threshold: a scan that returns only those), in node id order."""
        where = f"{NOT_AUTOMEM_SUMMARY} AND {self.scoping.where()}"
        decayed, params = self._decayed(importance_threshold)
        named = self._memories(where, FORGET_COLUMNS, self.scoping.params(), lookup, FORGET_KINDS)
        others = self.falkor.scan_memories(f"NOT ({decayed}) AND {where}", FORGET_COLUMNS, params, kinds=FORGET_KINDS)
        both = joined_columns([named, others])
        if not both:
            return _forget_inputs([])
        _, first = np.unique(both[1], return_index=True)  # each memory once, in node id order
        return _forget_inputs([_rows_of(column, first) for column in both])

    def relationship_counts(self, node_ids: np.ndarray, ids: Sequence[str]) -> np.ndarray:
        """Each memory's relationships, every edge counted as SCORING_COLUMNS counts them, by internal id (0 for
        one gone since it was read: its id is checked too, as FalkorDB gives a deleted node's id to the next)."""
        rows = self.falkor.read_chunks(
            f"UNWIND $rows AS row MATCH (m) WHERE id(m) = row[0] AND m.id = row[1] RETURN row[0], {DEGREE}",
            [[int(node), memory_id] for node, memory_id in zip(node_ids.tolist(), ids)], 5000, key="rows")
        counted = {int(node): float(count) for node, count in rows}
        return np.fromiter((counted.get(node, 0.0) for node in node_ids.tolist()), np.float64, len(node_ids))

    def archive(self, ids: Sequence[str], archived_at: str, reasons: Mapping[str, str] | None = None) -> None:
        """Archive these memories, each with the reason it was archived for (when given)."""
        reasons = reasons or {}
        self.falkor.write_chunks(MARK_SUMMARIES, list(ids))
        self.falkor.write_chunks(
            NEXT_CHANGE + "UNWIND $rows AS row MATCH (m:Memory {id: row[0]}) SET m.archived = true, "
            f"m.archived_at = $at, m.archived_reason = row[1], {STAMP}",
            [[memory_id, reasons.get(memory_id)] for memory_id in ids],
            at=archived_at,
        )

    def date_archives(self, node_ids: Sequence[int], ids: Sequence[str], archived_at: str) -> None:
        """Give archived memories whose archived_at is missing or unreadable (imported so, or archived by another
        writer) this one, by internal node id: the dwell before forget may delete them counts from it. No change
        for the other tasks: nothing they read moved."""
        self.falkor.write_chunks(
            "UNWIND $rows AS row MATCH (m) WHERE id(m) = row[0] AND m.id = row[1] AND m.archived = true "
            "AND m.merged_into IS NULL SET m.archived_at = $at",
            [[int(node), memory_id] for node, memory_id in zip(node_ids, ids)], at=archived_at)

    def unarchive(self, memory_id: str, restored_at: str) -> bool:
        """Back from the archive (False: it was not archived, or is merged; another request restored it)."""
        rows = self.falkor.execute(
            NEXT_CHANGE + "MATCH (m:Memory {id: $id}) WHERE m.archived = true AND m.merged_into IS NULL "
            "SET m.archived = false, m.archived_at = null, m.archived_reason = null, "
            f"m.last_accessed = $at, m.restored_at = $at, {STAMP} RETURN m.id", {"id": memory_id, "at": restored_at}
        )
        return bool(rows)

    def lifecycle_marks(self) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray, list[str]]:
        """Every memory's id, whether it is archived, merged and superseded, and its scope key (what the vector
        payload mirrors)."""
        columns = self.falkor.scan_memories(
            NOT_AUTOMEM_SUMMARY, "m.id, m.archived, m.merged_into IS NOT NULL, m.superseded_by IS NOT NULL, "
            f"{self.scoping.key_expression()}")
        if not columns:
            empty = np.zeros(0, bool)
            return [], empty, empty, empty, []
        ids, archived, merged, superseded, scopes = columns
        return list(ids), booleans(archived), booleans(merged), booleans(superseded), list(scopes)

    def hold_as_used(self, memory_id: str, at: str, until: str, most_uses: int) -> None:
        """A restore: one more use now, and held from automatic archive, delete and merge until `until`."""
        self.falkor.execute(
            NEXT_CHANGE + "MATCH (m:Memory {id: $id}) SET m.last_accessed = $at, m.restored_at = $at, "
            "m.held_until = $until, m.access_count = CASE WHEN coalesce(m.access_count, 0) < $most "
            f"THEN coalesce(m.access_count, 0) + 1 ELSE m.access_count END, {STAMP}",
            {"id": memory_id, "at": at, "until": until, "most": most_uses})

    def contents_in_scope(self) -> tuple[list[str], list[str], np.ndarray]:
        """Every memory's id and text in the scope (summaries, archived and merged ones too), and whether each
        is an active summary (one that a rebuild rewrites from its members)."""
        columns = self.falkor.scan_memories(
            self.scoping.where(), f"m.id, coalesce(m.content, ''), {ACTIVE} AND NOT ({NOT_SUMMARY})",
            self.scoping.params())
        return (list(columns[0]), list(columns[1]), booleans(columns[2])) if columns else ([], [], np.zeros(0, bool))

    def validity_ends(self, ids: Sequence[str] | None = None) -> dict[str, Any]:
        """Each of these memories' t_invalid (None: still valid), by id; with no ids, those of every memory that
        has one."""
        # Parsed values: a client's t_invalid may be epoch seconds, which the payload must keep a number.
        if ids is None:
            return dict(self.falkor.scan_records("m.t_invalid IS NOT NULL", "m.id, m.t_invalid"))
        return dict(self.falkor.record_chunks("UNWIND $ids AS id MATCH (m:Memory {id: id}) RETURN m.id, m.t_invalid",
                                              list(ids), 5000))

    def lifted_above(self, cap: float) -> tuple[list[int], list[str]]:
        """The memories no longer current (archived, merged, superseded) whose stored score is above `cap` (node
        ids, memory ids): another writer lifted it (AutoMem's decay and forget rescore every memory they see)."""
        rows = self.falkor.scan_records(
            f"m.relevance_score > {float(cap)!r} AND {NOT_AUTOMEM_SUMMARY} AND (coalesce(m.archived, false) = true "
            "OR m.merged_into IS NOT NULL OR m.superseded_by IS NOT NULL)", "id(m), m.id")
        return [row[0] for row in rows], [row[1] for row in rows]

    def unsupersede(self, newer: str, older: str) -> None:
        """Undo one supersession: the edges between the two go, and the older memory's marks with them (a mark
        another newer memory set stays)."""
        self.falkor.execute(
            NEXT_CHANGE + "MATCH (n:Memory {id: $newer}), (o:Memory {id: $older}) "
            f"OPTIONAL MATCH (n)-[s:SUPERSEDES]->(o) WHERE {is_ours('s')} DELETE s WITH n, o, change "
            f"OPTIONAL MATCH (o)-[e:EVOLVED_INTO]->(n) WHERE {is_ours('e')} DELETE e WITH DISTINCT n, o, change "
            "WHERE o.superseded_by = $newer "
            f"SET o.superseded_by = null, o.superseded_at = null, {OUR_T_INVALID_UNDONE} "
            f"{touched(ids_of('n', 'o'))}", {"newer": newer, "older": older})

    def unlink(self, ids: Sequence[str]) -> list[str]:
        """Remove every edge between these memories and other memories, and the superseded_by marks the
        SUPERSEDES edges among them stood for; returns the memories no longer superseded. AutoMem's edges go too:
        an administrator moved these memories to another scope, and no edge may lead from one scope to another."""
        cleared = [row[0] for row in self.falkor.execute(  # a few memories at a time: those an overwrite moves
            "UNWIND $ids AS id MATCH (:Memory {id: id})-[:SUPERSEDES]->(o:Memory) WHERE o.superseded_by = id "
            f"SET o.superseded_by = null, o.superseded_at = null, {OUR_T_INVALID_UNDONE} RETURN o.id",
            {"ids": list(ids)})]
        self.falkor.write_chunks(
            "UNWIND $rows AS id MATCH (o:Memory {id: id}) SET o.superseded_by = null, o.superseded_at = null, "
            f"{OUR_T_INVALID_UNDONE}", list(ids))
        self.falkor.write_chunks(
            NEXT_CHANGE + "UNWIND $rows AS id MATCH (m:Memory {id: id})-[r]-(o:Memory) DELETE r "
            f"{touched(ids_of('m', 'o'))}", list(ids))
        return cleared + list(ids)


def _forget_inputs(columns: list[Any]) -> ForgetInputs:
    """ForgetInputs from forget's columns (FORGET_COLUMNS read as FORGET_KINDS)."""
    if not columns:
        empty, none = np.zeros(0), np.zeros(0, bool)
        return ForgetInputs(_scoring_inputs([]), none, [], none, [], empty, none, empty, empty)
    archived, merged = columns[SCORING_WIDTH], columns[SCORING_WIDTH + 5]
    return ForgetInputs(
        scoring=_scoring_inputs(columns[:SCORING_WIDTH], ~archived & ~merged),
        archived=archived,
        types=[name or "Memory" for name in columns[SCORING_WIDTH + 1]],
        protected=columns[SCORING_WIDTH + 2],
        protected_reasons=columns[SCORING_WIDTH + 3],
        restored=columns[SCORING_WIDTH + 4],
        merged=merged,
        held_until=columns[SCORING_WIDTH + 6],
        archived_at=columns[SCORING_WIDTH + 7],
    )


def _rows_of(column: Any, rows: np.ndarray) -> Any:
    """These rows (positions) of a column as a scan reads it: an array, or a list."""
    if isinstance(column, np.ndarray):
        return column[rows]
    return [column[i] for i in rows.tolist()]


def _scoring_inputs(columns: list[Any], unarchived: np.ndarray | None = None) -> ScoringInputs:
    """ScoringInputs from SCORING_COLUMNS read as SCORING_KINDS; `unarchived`: which are neither archived nor
    merged (None: all, as decay reads only those)."""
    if not columns:
        empty = np.zeros(0)
        none = np.zeros(0, bool)
        return ScoringInputs([], np.zeros(0, np.int64), empty, empty, empty, empty, empty, empty, none, none)
    ids, node_ids, created, accessed, importance, confidence, relevance, degree, superseded = columns
    return ScoringInputs(
        ids=ids,
        node_ids=node_ids,
        created=created,
        last_accessed=accessed,
        importance=importance,
        confidence=confidence,
        relevance=relevance,
        relationship_counts=degree,
        superseded=superseded,
        current=~superseded if unarchived is None else unarchived & ~superseded,
    )



def with_terms(memories: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows for a write storing each memory with the terms of its text (SET_TERMS, TERMS_STAMP)."""
    rows = []
    for memory in memories:
        terms, anchors, least = text_terms(memory.get("content") or "")
        rows.append({"memory": memory, "terms": terms, "anchors": anchors or None, "least": least})
    return rows
