"""The graph side of memory hygiene: the memories dedup reads, MergeRecords and the merges they hold, and the
SUPERSEDES / CONTRADICTS links between memories.

A merge is written as MergeRecord nodes first (one per duplicate: its properties and edges, the canonical's
fields before and after, as lifecycle/merging.py plans them), then applied; every step of applying is idempotent,
so a merge a crash interrupted is completed from its records. The steps of undoing one (claim the record, put
the duplicate and its edges back, set the canonical apart) are queries here; what they write is decided in
lifecycle/merging.py.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..memory import BUILT_IN_EMBEDDER, EMBEDDED_BY
from ..scopes import Scoping
from .authors import is_ours, mark, with_mark
from .changes import CHANGE, MARK_SUMMARIES, NEXT_CHANGE, changed_after, ids_of, touched
from .fact_terms import CLEAR_LEGACY, DELETE_ORPHANED, FACT_TERMS, ITS_MEMORY, ORPHANED, SET_TERMS, TERMS_OF_MEMORY
from .embedding_models import HASH_MODEL
from .falkor import Falkor, booleans, chunked, floats, typed
from .graph import ACTIVE_MEMORY, DEGREE, Listing
from .tombstones import edge_groups, restore_edges, snapshot

# {degree}: the memory's connections (what ranks a canonical), or 0 where they are read later for the few
# memories that may merge (counting every memory's edges is a third of reading them all).
INPUT_COLUMNS = ("m.id, m.type, m.content, m.timestamp, {degree}, m.access_count, m.protected, "
                 f"m.superseded_by IS NOT NULL, {{scope}}, m.{CHANGE}, m.fact_stamp, "
                 f"m.{EMBEDDED_BY} = '{BUILT_IN_EMBEDDER}' AND coalesce(m.embedding_model,'{HASH_MODEL}') = '{HASH_MODEL}', "
                 "m.held_until")
# Types and scopes are few spellings, each held once (a new string per memory read: ~100 MB at a million); times
# are read as epoch seconds as each page arrives (a million ISO texts: ~80 MB).
INPUT_KINDS = tuple({"m.type": "names", "{scope}": "names", "m.timestamp": "times"}.get(column, "as read")
                    for column in INPUT_COLUMNS.split(", "))
TERM_LOOKUP_CHUNK = 200
INPUT_CHUNK = 2000  # memories whose inputs (texts among them) one read query returns
# Pools per query: each walks the postings of its drive terms, so few at a time keep a query short (servers may
# time out queries after a second).
POOL_CHUNK = 50
# Terms are lists: 1,000 memories' took 127 ms of FalkorDB's write lock at 50k, and every read waited behind it.
TERMS_WRITE_CHUNK = 200


@dataclass
class HygieneInputs:
    """Every active memory dedup looks at, as columns."""

    ids: list[str]
    types: list[str]
    contents: list[str]
    created: np.ndarray  # epoch seconds of each one's timestamp, NaN when missing or unreadable
    connections: list[int]
    access_counts: list[int]
    protected: list[bool]
    superseded: list[bool]
    distinct_from: dict[str, list[str]]
    merged_texts: dict[str, list[str]]  # canonical id -> the contents merged into it
    scopes: list[str] = field(default_factory=list)
    changes: np.ndarray = field(default_factory=lambda: np.zeros(0))  # change numbers, NaN when unmarked
    stamps: list[str | None] = field(default_factory=list)  # what the stored fact terms were read from
    built_in: list[bool] = field(default_factory=list)  # whether the hashing embedder made the vector
    held_until: list[str | None] = field(default_factory=list)  # until when a restore holds it (ISO)

    def holding(self, now: str) -> HygieneInputs:
        """These inputs with every memory a restore still holds counted as protected: never merged away."""
        self.protected = [p or (h is not None and str(h) > now) for p, h in zip(self.protected, self.held_until)]
        return self


@dataclass
class HygieneListing(Listing):
    """Every active memory dedup looks at, light: ids, scopes, changes, and what finds neighbours cheaply."""

    types: list[str] = field(default_factory=list)
    timestamps: list[str | None] = field(default_factory=list)


class HygieneStore:
    def __init__(self, falkor: Falkor, scoping: Scoping | None = None):
        self.falkor = falkor
        self.scoping = scoping or Scoping()

    def within(self, scope: dict[str, str]) -> HygieneStore:
        """This store with its inputs limited to one scope (a run of one scope)."""
        return HygieneStore(self.falkor, self.scoping.within(scope))

    def stored_by(self, moment: str) -> HygieneStore:
        """This store with every read limited to the memories stored by `moment` (a run as of a time)."""
        return HygieneStore(self.falkor, self.scoping.stored_by(moment))

    # --- reading -----------------------------------------------------------------------------------------------

    def inputs(self) -> HygieneInputs:
        """Every active memory's inputs, with connections left 0 (see connections())."""
        columns = self.falkor.scan_memories(
            f"{ACTIVE_MEMORY} AND {self.scoping.where()}",
            INPUT_COLUMNS.format(scope=self.scoping.key_expression(), degree="0"), self.scoping.params(),
            kinds=INPUT_KINDS)
        distinct = self.falkor.scan_records(f"{ACTIVE_MEMORY} AND m.distinct_from IS NOT NULL", "m.id, m.distinct_from")
        merged = self.falkor.scan_memories(
            "m.merged_into IS NOT NULL", "c.id, m.content",
            then="MATCH (m)-[:MERGED_INTO]->(c:Memory) WHERE coalesce(c.archived, false) = false")
        return _inputs(columns, distinct, list(zip(*merged)))

    def inputs_of(self, ids: Sequence[str]) -> HygieneInputs:
        """inputs(), for the active memories among `ids` only (an incremental run's region), in batches."""
        columns = INPUT_COLUMNS.format(scope=self.scoping.key_expression(), degree=DEGREE)
        ids = list(ids)
        rows = self.falkor.read_chunks(
            f"UNWIND $ids AS id MATCH (m:Memory {{id: id}}) WHERE {ACTIVE_MEMORY} AND {self.scoping.where()} "
            f"RETURN {columns}", ids, INPUT_CHUNK, params=self.scoping.params())
        distinct = self.falkor.record_chunks(
            "UNWIND $ids AS id MATCH (m:Memory {id: id}) WHERE m.distinct_from IS NOT NULL "
            "RETURN m.id, m.distinct_from", ids, 5000)
        merged = self.falkor.read_chunks(
            "UNWIND $ids AS id MATCH (d:Memory)-[:MERGED_INTO]->(m:Memory {id: id}) RETURN m.id, d.content",
            ids, 5000)
        return _inputs(typed([list(column) for column in zip(*rows)], INPUT_KINDS), distinct, merged)

    def connections(self, ids: Sequence[str]) -> dict[str, int]:
        """How many edges each of these memories has."""
        return {memory_id: int(degree) for memory_id, degree in self.falkor.read_chunks(
            f"UNWIND $ids AS id MATCH (m:Memory {{id: id}}) RETURN m.id, {DEGREE}", list(ids), 5000)}

    def listing(self) -> HygieneListing:
        """Every active memory's id, scope, change number, type and time, without its text (cheap to read)."""
        columns = self.falkor.scan_memories(
            f"{ACTIVE_MEMORY} AND {self.scoping.where()}",
            f"m.id, {self.scoping.key_expression()}, m.{CHANGE}, m.type, m.timestamp", self.scoping.params())
        if not columns:
            return HygieneListing([], [], np.zeros(0))
        ids, scopes, changes, types, timestamps = columns
        return HygieneListing(list(ids), list(scopes), floats(changes), [t or "Memory" for t in types],
                              list(timestamps))

    def archived_since(self, since: int) -> list[tuple[str, str, str, str, str | None]]:
        """Memories archived (by forget or a merge) after the `since` change number: id, text, type, scope, time."""
        return [tuple(row) for row in self.falkor.execute(
            f"MATCH (m:Memory) WHERE {changed_after()} AND coalesce(m.archived, false) = true "
            f"AND coalesce(m.type, '') <> 'MetaPattern' AND {self.scoping.where()} "
            f"RETURN m.id, coalesce(m.content, ''), coalesce(m.type, 'Memory'), {self.scoping.key_expression()}, "
            "m.timestamp", {"since": since, **self.scoping.params()}, read_only=True)]

    # --- stored fact terms: which memories hold a term, without reading every text ------------------------------

    def previous_terms(self, ids: Sequence[str]) -> dict[str, frozenset[str]]:
        """The fact terms stored for these memories, whatever text they were read from (for a memory whose text
        was replaced since: the old text's)."""
        return {memory_id: frozenset(terms) for memory_id, terms in self.falkor.record_chunks(
            f"UNWIND $ids AS id MATCH (f:{FACT_TERMS} {{memory_id: id}}) WHERE f.terms IS NOT NULL {ITS_MEMORY}"
            "RETURN m.id, f.terms", list(ids), 5000)}

    def anchored(self, terms: Sequence[str]) -> set[str]:
        """The active memories announcing a change anchored on any of these terms (stored anchors)."""
        return {row[0] for row in self.falkor.read_chunks(
            f"UNWIND $terms AS t MATCH (f:{FACT_TERMS}) WHERE t IN f.anchors {ITS_MEMORY}WHERE {ACTIVE_MEMORY} "
            f"AND {self.scoping.where()} RETURN DISTINCT m.id",
            sorted(set(terms)), TERM_LOOKUP_CHUNK, key="terms", params=self.scoping.params())}

    def worth_reading(self, rows: Sequence[dict[str, Any]]) -> set[str]:
        """For rows {id, keys: [{terms, numbers}], stamp}: the memories that one of those keys' memories could be
        judged one fact with by what their stored terms show: unless every such key holds a number the memory's
        terms lack while they hold a number the key lacks (a conflict the judge would find, merges.py), and the
        memory announces no change (whose old values its stored terms leave out). A memory whose stored terms
        were read from another text than its own now (its stamp is not `stamp`) is always worth reading. The
        test runs in the store, so the terms of the many that are not never travel."""
        return {row[0] for row in self.falkor.read_chunks(
            f"UNWIND $rows AS row MATCH (m:Memory {{id: row.id}}) {TERMS_OF_MEMORY}"
            "WITH m, row, f.anchors AS anchors, f.terms AS terms "
            "WHERE coalesce(m.fact_stamp, '') <> row.stamp OR anchors IS NOT NULL OR any(k IN row.keys WHERE "
            "all(n IN k.numbers WHERE n IN terms) OR "
            "all(t IN terms WHERE NOT (t >= '0' AND t < ':') OR t IN k.terms)) RETURN m.id",
            list(rows), 1000, key="rows")}

    def holding(self, rows: Sequence[dict[str, Any]]) -> dict[int, set[str]]:
        """For each row {key, drive, required, counted, need, slack} (hygiene.changes.PoolQuery): the active
        memories whose stored terms hold every required term and `need` of the counted ones, with no more than
        `slack` words besides; reached through the postings of the `drive` terms (each such memory holds one)."""
        found: dict[int, set[str]] = {}
        for key, memory_id in self.falkor.read_chunks(
                f"UNWIND $rows AS row UNWIND row.drive AS d MATCH (f:{FACT_TERMS}) WHERE d IN f.terms "
                "AND all(t IN row.required WHERE t IN f.terms) "
                "WITH row, f, size([t IN row.counted WHERE t IN f.terms]) AS held "
                f"WHERE held >= row.need AND coalesce(f.least, 0) <= held + row.slack {ITS_MEMORY}"
                f"WHERE {ACTIVE_MEMORY} AND {self.scoping.where()} RETURN DISTINCT row.key, m.id",
                list(rows), POOL_CHUNK, key="rows", params=self.scoping.params()):
            found.setdefault(int(key), set()).add(memory_id)
        return found

    def write_terms(self, rows: Sequence[dict[str, Any]]) -> None:
        """Store fact terms {id, change, terms, anchors, least, stamp}, each only if the memory has not changed
        since it was read (a newer text is read, and its terms stored, by the next run). Not a change itself."""
        self.falkor.write_chunks(
            f"UNWIND $rows AS row MATCH (m:Memory {{id: row.id}}) WHERE m.{CHANGE} = row.change "
            f"SET m.fact_stamp = row.stamp, {CLEAR_LEGACY} {SET_TERMS}",
            list(rows), chunk=TERMS_WRITE_CHUNK)

    def sweep_orphan_terms(self) -> int:
        """Delete the fact terms of memories that are gone (another program deleted them); how many. Found by
        a paged read (no write lock held while looking), deleted in chunks."""
        orphans = [row[0] for row in self.falkor.scan_nodes(FACT_TERMS, ORPHANED, "n.memory_id")]
        return sum(int(row[0]) for row in self.falkor.write_chunks(DELETE_ORPHANED, orphans))

    def linked_pairs(self, pairs: Sequence[tuple[str, str]]) -> set[frozenset[str]]:
        """Which of these pairs already have a SUPERSEDES or CONTRADICTS edge (either way)."""
        found: set[frozenset[str]] = set()
        for part in chunked([list(p) for p in pairs], 2000):
            rows = self.falkor.execute(
                "UNWIND $pairs AS p MATCH (a:Memory {id: p[0]})-[r:SUPERSEDES|CONTRADICTS]-(b:Memory {id: p[1]}) "
                "RETURN DISTINCT a.id, b.id", {"pairs": list(part)}, read_only=True)
            found.update(frozenset(row) for row in rows)
        return found

    def supersessions_among(self, ids: Sequence[str]) -> list[tuple[str, str]]:
        """(newer, older) of every SUPERSEDES edge into or out of these memories (an earlier run's, or an
        agent's)."""
        rows = self.falkor.read_chunks(
            "UNWIND $ids AS id MATCH (m:Memory {id: id}) "
            "CALL { WITH m MATCH (m)<-[:SUPERSEDES]-(n:Memory) RETURN n.id AS newer, m.id AS older "
            "UNION WITH m MATCH (m)-[:SUPERSEDES]->(o:Memory) RETURN m.id AS newer, o.id AS older } "
            "RETURN newer, older", list(ids), 5000)
        return sorted({(newer, older) for newer, older in rows})

    def contradiction_counts(self, ids: Sequence[str]) -> dict[str, int]:
        """How many CONTRADICTS edges each of these memories has already."""
        return {memory_id: int(count) for memory_id, count in self.falkor.read_chunks(
            "UNWIND $ids AS id MATCH (m:Memory {id: id})-[:CONTRADICTS]-() RETURN id, count(*)", list(ids), 5000)}

    # --- merging: MergeRecords, written and replayed (lifecycle/merging.py decides what they hold) ----------

    def snapshots(self, ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        """Each memory's properties, labels and edges, keyed by id: what a merge record keeps of a duplicate."""
        return snapshot(self.falkor, ids)

    def fields_of(self, ids: Sequence[str], names: Sequence[str]) -> dict[str, dict[str, Any]]:
        """These properties of each memory, keyed by id."""
        # A chunk at a time: at a million memories one read of every canonical held FalkorDB for half a second.
        query = (f"UNWIND $ids AS id MATCH (m:Memory {{id: id}}) RETURN m.id, "
                 f"{', '.join(f'm.{name}' for name in names)}")
        rows = self.falkor.record_chunks(query, list(ids), INPUT_CHUNK)
        return {row[0]: dict(zip(names, row[1:])) for row in rows}

    def merge(self, records: Sequence[dict[str, Any]]) -> list[str]:
        """Write these merge records (pending), then apply them; returns the ids archived as duplicates."""
        rows = [_encoded(r) for r in records]
        self.falkor.write_chunks("UNWIND $rows AS row CREATE (r:MergeRecord) SET r = row", rows, chunk=200)
        self._apply([_decoded(dict(r)) for r in rows])
        return [r["duplicate_id"] for r in rows]

    def has_pending(self) -> bool:
        return self.pending_count() > 0

    def pending_count(self) -> int:
        rows = self.falkor.execute("MATCH (r:MergeRecord {state: 'pending'}) RETURN count(r)", read_only=True)
        return int(rows[0][0]) if rows else 0

    def complete_pending(self) -> list[str]:
        """Apply the merges a crash left recorded but unfinished; returns their duplicates' ids."""
        records = self._records("r.state = 'pending'", {})
        self._apply(records)
        return [r["duplicate_id"] for r in records]

    def _apply(self, records: list[dict[str, Any]]) -> None:
        if not records:
            return
        self.falkor.write_chunks(MARK_SUMMARIES, [r["duplicate_id"] for r in records])
        self._repoint_edges(records)
        self.falkor.write_chunks(
            NEXT_CHANGE + "UNWIND $rows AS row MATCH (d:Memory {id: row.duplicate_id}), "
            "(c:Memory {id: row.canonical_id}) MERGE (d)-[r:MERGED_INTO]->(c) "
            "ON CREATE SET r.similarity = row.similarity, r.reason = row.reason, "
            f"r.merged_at = row.merged_at, r.origin = 'consolidation', {mark('r')} "
            "SET d.archived = true, d.archived_at = row.merged_at, d.merged_into = row.canonical_id, "
            f"d.merged_at = row.merged_at, d.{CHANGE} = change",
            [_row(r) for r in records], chunk=500)
        # A duplicate that was itself a canonical hands its own duplicates on (their edges moved above).
        self.falkor.write_chunks(
            # Written from the indexed canonical: FalkorDB would otherwise scan every memory for each row.
            "UNWIND $rows AS cid MATCH (c:Memory {id: cid})<-[:MERGED_INTO]-(x:Memory) SET x.merged_into = cid",
            sorted({r["canonical_id"] for r in records}))
        fields = {r["canonical_id"]: r["canonical_after"] for r in records}
        # The canonical now stands for the duplicates' texts too: a change for dedup.
        self.falkor.write_chunks(
            NEXT_CHANGE + "UNWIND $rows AS row MATCH (c:Memory {id: row.id}) "
            f"SET c += row.fields, c.{CHANGE} = change",
            [{"id": c, "fields": f} for c, f in fields.items()], chunk=500)
        self.falkor.write_chunks("UNWIND $rows AS id MATCH (r:MergeRecord {id: id}) SET r.state = 'done'",
                                 [r["id"] for r in records])

    def _repoint_edges(self, records: list[dict[str, Any]]) -> None:
        """Each duplicate's edges are re-pointed to its canonical (unless the canonical has one like it already),
        marked with where they came from; then the duplicate's own edges of ours go. AutoMem's (its own and its
        clients') are copied, as they were, and stay on the duplicate too: nothing of ours deletes or rewrites
        an edge it did not write, and the canonical still holds the relation for a reader of it."""
        grouped = {r["duplicate_id"] for r in records}
        moved = []
        for record in records:
            for edge in record["duplicate"]["edges"]:
                if edge["other_id"] in grouped or edge["other_id"] == record["canonical_id"]:
                    continue
                # An old edge of ours gains the mark; a copy of AutoMem's keeps its properties (read as AutoMem's).
                props = {**with_mark(edge["type"], edge["properties"]), "repointed_from":
                         edge["properties"].get("repointed_from", record["duplicate_id"])}
                moved.append({**edge, "properties": props, "canonical": record["canonical_id"]})
        for (relation, outgoing), edges in edge_groups(moved).items():
            pattern = f"(c)-[r:{relation}]->(o)" if outgoing else f"(o)-[r:{relation}]->(c)"
            self.falkor.write_chunks(
                NEXT_CHANGE + "UNWIND $rows AS e MATCH (c:Memory {id: e.canonical}), (o:Memory {id: e.other_id}) "
                f"MERGE {pattern} ON CREATE SET r = e.properties {touched(ids_of('o'))}", edges, chunk=500)
        self.falkor.write_chunks(
            NEXT_CHANGE + "UNWIND $rows AS id MATCH (d:Memory {id: id})-[r]-(x) WHERE (type(r) <> 'MERGED_INTO' "
            f"OR id(startNode(r)) <> id(d)) AND {is_ours('r')} DELETE r {touched(ids_of('x'))}", sorted(grouped))

    # --- undoing a merge: the steps lifecycle/merging.py takes ----------------------------------------------

    def claim(self, state: str, duplicate_id: str, at: str, stale_after: float = 300.0) -> dict[str, Any] | None:
        """The newest merge record of this duplicate in `state`, claimed for one restore ('restoring'): of
        concurrent restores one gets it. A claim a crash left behind is taken anew after `stale_after` s."""
        rows = self.falkor.records(
            "MATCH (r:MergeRecord {duplicate_id: $id}) WHERE r.state = $state OR (r.state = 'restoring' AND "
            "r.restoring_from = $state AND r.restoring_epoch < timestamp() / 1000.0 - $stale) "
            "WITH r ORDER BY r.merged_at DESC LIMIT 1 SET r.state = 'restoring', r.restoring_from = $state, "
            "r.restoring_epoch = timestamp() / 1000.0 RETURN properties(r)",
            {"id": duplicate_id, "state": state, "stale": stale_after})
        return _decoded(dict(rows[0][0])) if rows else None

    def unmerge_node(self, duplicate_id: str, properties: dict[str, Any]) -> None:
        """A merged duplicate's MERGED_INTO edge gone and its properties replaced by these (a change)."""
        self.falkor.execute("MATCH (d:Memory {id: $id})-[r:MERGED_INTO]->() DELETE r", {"id": duplicate_id})
        self.falkor.execute(NEXT_CHANGE + f"MATCH (d:Memory {{id: $id}}) SET d = $props SET d.{CHANGE} = change",
                            {"id": duplicate_id, "props": properties})

    def restore_edges(self, memory_id: str, edges: Sequence[dict[str, Any]]) -> int:
        """Recreate these edges of a memory whose other end still exists (tombstones.restore_edges)."""
        return restore_edges(self.falkor, memory_id, edges)

    def drop_lent_edges(self, canonical_id: str, duplicate_id: str) -> None:
        """The edges a duplicate lent its canonical gone: they sit on the canonical, or one merge further if the
        canonical was merged since."""
        self.falkor.execute(
            NEXT_CHANGE + "MATCH (c:Memory {id: $canonical}) OPTIONAL MATCH (c)-[:MERGED_INTO]->(next:Memory) "
            "WITH change, [c] + CASE WHEN next IS NULL THEN [] ELSE [next] END AS holders UNWIND holders AS h "
            f"MATCH (h)-[r]-(x) WHERE r.repointed_from = $id DELETE r {touched(ids_of('h', 'x'))}",
            {"canonical": canonical_id, "id": duplicate_id})

    def merged_with(self, group_id: str, duplicate_id: str) -> list[dict[str, Any]]:
        """The done merge records of this merge group but this duplicate's."""
        return self._records("r.group_id = $group AND r.state = 'done' AND r.duplicate_id <> $id",
                             {"group": group_id, "id": duplicate_id})

    def properties_of(self, memory_id: str) -> dict[str, Any] | None:
        rows = self.falkor.records("MATCH (c:Memory {id: $id}) RETURN properties(c)", {"id": memory_id})
        return dict(rows[0][0]) if rows else None

    def set_canonical(self, canonical_id: str, fields: dict[str, Any], distinct: Sequence[str]) -> None:
        """A canonical's fields and distinct_from set (a change)."""
        self.falkor.execute(
            NEXT_CHANGE + "MATCH (c:Memory {id: $id}) "
            f"SET c += $fields, c.distinct_from = $distinct, c.{CHANGE} = change",
            {"id": canonical_id, "fields": fields, "distinct": list(distinct)})

    def set_canonical_after(self, rows: Sequence[dict[str, Any]]) -> None:
        """For rows {id, after}: what these merge records say their canonical's fields were after the merge."""
        self.falkor.write_chunks("UNWIND $rows AS row MATCH (r:MergeRecord {id: row.id}) SET r.canonical_after = "
                                 "row.after", [{"id": r["id"], "after": json.dumps(r["after"])} for r in rows])

    def mark_restored(self, record_id: str, at: str) -> None:
        self.falkor.execute("MATCH (r:MergeRecord {id: $id}) SET r.state = 'restored', r.restored_at = $at, "
                            "r.restoring_from = null, r.restoring_epoch = null", {"id": record_id, "at": at})

    def left_with(self, canonical_id: str) -> list[str]:
        """The duplicates whose merge into this canonical says 'deleted' (they left with it, or alone)."""
        return [row[0] for row in self.falkor.execute(
            "MATCH (r:MergeRecord {canonical_id: $id}) WHERE r.state = 'deleted' RETURN DISTINCT r.duplicate_id",
            {"id": canonical_id}, read_only=True)]

    def mark_merged(self, record_id: str) -> None:
        """A claimed merge record whose duplicate is back in its canonical: 'done' again."""
        self.falkor.execute("MATCH (r:MergeRecord {id: $id}) SET r.state = 'done', r.restoring_from = null, "
                            "r.restoring_epoch = null, r.deleted_at = null", {"id": record_id})

    def mark_left(self, duplicate_ids: Sequence[str], at: str) -> None:
        """Merged duplicates deleted (with their canonical): their merge records say so."""
        self.falkor.write_chunks(
            "UNWIND $rows AS id MATCH (r:MergeRecord {duplicate_id: id}) WHERE r.state = 'done' "
            "SET r.state = 'deleted', r.deleted_at = $at", list(duplicate_ids), at=at)

    def merged_into_any(self, canonical_ids: Sequence[str]) -> dict[str, str]:
        """The memories merged into any of these canonicals: duplicate id -> canonical id."""
        return {duplicate: canonical for canonical, duplicate in self.falkor.read_chunks(
            "UNWIND $ids AS cid MATCH (c:Memory {id: cid})<-[:MERGED_INTO]-(d:Memory) RETURN cid, d.id",
            list(canonical_ids), 5000)}

    def erase_records(self, ids: Sequence[str]) -> None:
        """Drop the merge records holding these memories' text (as the duplicate or the canonical): an erased
        memory's merges can no longer be undone."""
        self.falkor.write_chunks(
            "UNWIND $rows AS id MATCH (r:MergeRecord) WHERE r.duplicate_id = id OR r.canonical_id = id DELETE r",
            list(ids), chunk=500)

    def _records(self, where: str, params: dict[str, Any]) -> list[dict[str, Any]]:
        rows = self.falkor.records(f"MATCH (r:MergeRecord) WHERE {where} RETURN properties(r)", params,
                                   read_only=True)
        return [_decoded(dict(row[0])) for row in rows]

    # --- supersessions and contradictions ----------------------------------------------------------------------

    def supersede(self, rows: Sequence[dict[str, Any]], at: str, origin: str = "consolidation") -> None:
        """SUPERSEDES newer -> older; the older (and whatever was merged into it) gets superseded_by. Beside it,
        what AutoMem's current-state recall reads: (older)-[:EVOLVED_INTO]->(newer), and the older memory invalid
        from the newer one's time (t_invalid, unless a client set one), so AutoMem recalls the newer instead."""
        self.falkor.write_chunks(MARK_SUMMARIES, [row["older"] for row in rows])
        self.falkor.write_chunks(
            NEXT_CHANGE + "UNWIND $rows AS row MATCH (n:Memory {id: row.newer}), (o:Memory {id: row.older}) "
            "MERGE (n)-[r:SUPERSEDES]->(o) ON CREATE SET r.confidence = row.confidence, r.reason = row.reason, "
            f"r.detected_at = $at, r.origin = $origin, {mark('r')} "
            "MERGE (o)-[e:EVOLVED_INTO]->(n) ON CREATE SET e.confidence = row.confidence, e.reason = row.reason, "
            f"e.updated_at = $at, e.origin = $origin, {mark('e')} "
            "SET o.t_invalid_set_by = CASE WHEN o.t_invalid IS NULL THEN 'consolidation' ELSE o.t_invalid_set_by END "
            "SET o.t_invalid = coalesce(o.t_invalid, n.timestamp, $at) "
            f"SET o.superseded_by = row.newer, o.superseded_at = $at, o.{CHANGE} = change {touched(ids_of('n'))}",
            list(rows), chunk=500, at=at, origin=origin)
        self.falkor.write_chunks(
            "UNWIND $rows AS row MATCH (o:Memory {id: row.older})<-[:MERGED_INTO]-(d:Memory) "
            "SET d.superseded_by = row.newer", list(rows), chunk=500)

    def contradict(self, rows: Sequence[dict[str, Any]], at: str) -> None:
        self.falkor.write_chunks(
            NEXT_CHANGE + "UNWIND $rows AS row MATCH (a:Memory {id: row.a}), (b:Memory {id: row.b}) "
            "MERGE (a)-[r:CONTRADICTS]->(b) ON CREATE SET r.confidence = row.confidence, r.reason = row.reason, "
            f"r.detected_at = $at, r.origin = 'consolidation', {mark('r')} {touched(ids_of('a', 'b'))}",
            list(rows), chunk=500, at=at)


def _inputs(columns: list[Any], distinct: list, merged: list) -> HygieneInputs:
    """HygieneInputs from the input columns (read as INPUT_KINDS), the distinct_from lists and the (canonical,
    merged text) rows."""
    if not columns:
        return HygieneInputs([], [], [], np.zeros(0), [], [], [], [], {}, {}, [])
    (ids, types, contents, created, degrees, uses, protected, superseded, scopes, changes, stamps, built_in,
     held_until) = columns
    merged_texts: dict[str, list[str]] = {}
    for canonical, content in merged:
        merged_texts.setdefault(canonical, []).append(content or "")
    for texts in merged_texts.values():
        texts.sort()  # in a fixed order, however they were read: the rules break ties by it
    return HygieneInputs(
        ids=list(ids), types=[t or "Memory" for t in types], contents=[c or "" for c in contents],
        created=created, connections=[int(d) for d in degrees],
        access_counts=[int(u) if str(u).lstrip("-").isdigit() else 0 for u in uses],
        protected=list(booleans(protected)), superseded=list(booleans(superseded)),
        distinct_from={memory_id: list(others) for memory_id, others in distinct},
        merged_texts=merged_texts, scopes=list(scopes), changes=floats(changes), stamps=list(stamps),
        built_in=booleans(built_in).tolist(), held_until=list(held_until),
    )


def _row(record: dict[str, Any]) -> dict[str, Any]:
    return {k: record[k] for k in ("duplicate_id", "canonical_id", "similarity", "reason", "merged_at")}


def _encoded(record: dict[str, Any]) -> dict[str, Any]:
    return {k: json.dumps(v) if k in ("duplicate", "canonical_before", "canonical_after") else v
            for k, v in record.items()}


def _decoded(record: dict[str, Any]) -> dict[str, Any]:
    for name in ("duplicate", "canonical_before", "canonical_after"):
        if isinstance(record.get(name), str):
            record[name] = json.loads(record[name])
    return record
