"""Tombstone nodes: what a deleted memory was (fields, edges, vector) so it can be restored, and deletions finished."""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Collection, Sequence
from typing import Any

from .changes import (CHANGE, DELETE_TOUCHING_NEIGHBOURS, MARK_SUMMARIES, NEXT_CHANGE, STAMP, changed_after, ids_of,
                      touched)
from .authors import AUTOMEM_SUMMARY_LABEL, OURS, author_of, with_mark
from .falkor import Falkor

SNAPSHOT_CHUNK = 500

RELATION_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class TombstoneStore:
    """The graph side of crash-safe deletion: pending tombstone -> vector gone -> node gone + tombstone 'deleted'."""

    def __init__(self, falkor: Falkor):
        self.falkor = falkor

    def snapshot(self, ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        return snapshot(self.falkor, ids)

    def write_pending(self, tombstones: Sequence[dict[str, Any]]) -> None:
        rows = [{**t, "memory": json.dumps(t["memory"]), "edges": json.dumps(t["edges"]), "state": "pending"}
                for t in tombstones]
        self.falkor.write_chunks("UNWIND $rows AS row CREATE (t:Tombstone) SET t = row", rows, chunk=200)

    def finish(self, memory_ids: Sequence[str]) -> None:
        """In one atomic query per chunk: pending tombstones become 'deleted' and their nodes are detached and deleted.
        The tombstone carries the change number: a deletion is a change dedup looks at (deleted_since)."""
        self.falkor.write_chunks(MARK_SUMMARIES, list(memory_ids), chunk=500)
        self.falkor.write_chunks(
            NEXT_CHANGE + "UNWIND $rows AS mid MATCH (t:Tombstone {memory_id: mid}) WHERE t.state = 'pending' "
            f"SET t.state = 'deleted', t.{CHANGE} = change "
            "WITH DISTINCT mid, change OPTIONAL MATCH (m:Memory {id: mid}) " + DELETE_TOUCHING_NEIGHBOURS,
            list(memory_ids),
            chunk=500,
        )

    def pending_ids(self) -> list[str]:
        rows = self.falkor.execute(
            "MATCH (t:Tombstone) WHERE t.state = 'pending' RETURN DISTINCT t.memory_id", read_only=True
        )
        return [row[0] for row in rows]

    def pending_among(self, ids: Sequence[str]) -> set[str]:
        """Which of these memories a deletion is under way for (a pending tombstone)."""
        return {row[0] for row in self.falkor.read_chunks(
            "UNWIND $ids AS id MATCH (t:Tombstone {memory_id: id}) WHERE t.state = 'pending' RETURN DISTINCT id",
            list(ids), 5000)}

    def deleted_since(self, since: int) -> list[dict[str, Any]]:
        """The memories deleted after the `since` change number: id, properties and vector (base64), as their
        tombstones keep them."""
        rows = self.falkor.execute(
            f"MATCH (t:Tombstone) WHERE {changed_after('t')} AND t.state = 'deleted' "
            "RETURN t.memory_id, t.memory, t.vector", {"since": since}, read_only=True)
        return [{"id": memory_id, "properties": json.loads(memory)["properties"], "vector": vector}
                for memory_id, memory, vector in rows]

    def open_states(self, ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        """For each of these memory ids with a pending, deleted or restoring tombstone: its state and deletion
        time (a deletion or a restore under way wins over a finished deletion)."""
        rows = self.falkor.execute(
            "UNWIND $ids AS id MATCH (t:Tombstone {memory_id: id}) WHERE t.state IN ['pending', 'deleted', "
            "'restoring'] "
            "RETURN t.memory_id, t.state, t.deleted_at",
            {"ids": list(ids)},
            read_only=True,
        )
        states: dict[str, dict[str, Any]] = {}
        for memory_id, state, deleted_at in rows:
            if states.get(memory_id, {}).get("state") in (None, "deleted"):
                states[memory_id] = {"state": state, "deleted_at": deleted_at}
        return states

    def mark_replaced(self, memory_ids: Sequence[str], replaced_at: str) -> None:
        """Deleted memories an administrator imported anew: their tombstones no longer stand for them."""
        self.falkor.write_chunks(
            "UNWIND $rows AS id MATCH (t:Tombstone {memory_id: id}) WHERE t.state = 'deleted' "
            "SET t.state = 'replaced', t.replaced_at = $at",
            list(memory_ids),
            at=replaced_at,
        )

    def claim_deleted(self, memory_id: str, at: str, now_epoch: float, stale_after: float = 300.0
                      ) -> dict[str, Any] | None:
        """The newest 'deleted' tombstone of this memory, claimed for one restore ('restoring'): of concurrent
        restores one gets it, the others None. A claim a crash left behind is taken anew after `stale_after`
        seconds."""
        rows = self.falkor.records(
            "MATCH (t:Tombstone {memory_id: $id}) WHERE t.state = 'deleted' OR (t.state = 'restoring' AND "
            "t.restoring_epoch < $stale) WITH t ORDER BY t.deleted_epoch DESC LIMIT 1 "
            "SET t.state = 'restoring', t.restoring_epoch = $now RETURN properties(t)",
            {"id": memory_id, "stale": now_epoch - stale_after, "now": now_epoch})
        if not rows:
            return None
        tombstone = dict(rows[0][0])
        tombstone["memory"] = json.loads(tombstone["memory"])
        tombstone["edges"] = json.loads(tombstone["edges"])
        return tombstone

    def latest(self, memory_id: str) -> dict[str, Any] | None:
        """The newest open tombstone of this memory (pending, deleted or being restored): state, reason, when."""
        rows = self.falkor.records(
            "MATCH (t:Tombstone {memory_id: $id}) WHERE t.state IN ['pending', 'deleted', 'restoring'] "
            "RETURN t.state, t.reason, t.deleted_at ORDER BY t.deleted_epoch DESC LIMIT 1",
            {"id": memory_id}, read_only=True)
        return dict(zip(("state", "reason", "deleted_at"), rows[0])) if rows else None

    def kept(self, memory_id: str) -> dict[str, Any] | None:
        """The fields of a deleted memory as its newest deleted tombstone keeps them (None: no such tombstone)."""
        rows = self.falkor.records("MATCH (t:Tombstone {memory_id: $id}) WHERE t.state = 'deleted' "
                                   "RETURN t.memory ORDER BY t.deleted_epoch DESC LIMIT 1", {"id": memory_id},
                                   read_only=True)
        return json.loads(rows[0][0]).get("properties") if rows and rows[0][0] else None

    def deleted_memories(self) -> list[tuple[str, dict[str, Any]]]:
        """Every deleted memory still restorable: its id and its fields as the tombstone keeps them."""
        rows = self.falkor.execute("MATCH (t:Tombstone) WHERE t.state = 'deleted' RETURN t.memory_id, t.memory",
                                   read_only=True)
        return [(memory_id, json.loads(memory).get("properties", {})) for memory_id, memory in rows]

    def contents_of(self, memory_ids: Sequence[str]) -> list[str]:
        """The texts the open tombstones of these memories keep (an interrupted purge looks for its identifier
        in them)."""
        rows = self.falkor.execute(
            "UNWIND $ids AS id MATCH (t:Tombstone {memory_id: id}) WHERE t.state IN ['pending', 'deleted'] "
            "RETURN t.memory", {"ids": list(memory_ids)}, read_only=True)
        return [str(json.loads(memory).get("properties", {}).get("content") or "") for (memory,) in rows]

    def erased_at(self, memory_id: str) -> str | None:
        """When this memory was erased on request (its tombstone keeps only that), or None."""
        rows = self.falkor.records("MATCH (t:Tombstone {memory_id: $id}) WHERE t.state = 'erased' "
                                   "RETURN t.deleted_at ORDER BY t.deleted_epoch DESC LIMIT 1", {"id": memory_id},
                                   read_only=True)
        return rows[0][0] if rows else None

    def restore_node(self, properties: dict[str, Any], labels: Sequence[str], edges: Sequence[dict[str, Any]],
                     merged: bool = False) -> int:
        """Recreate the node with these properties and every edge whose other end still exists (`merged`: a
        duplicate back in its canonical, its MERGED_INTO edge with it); idempotent. Returns the edges restored."""
        node_labels = "".join(f":{label}" for label in ("Memory", "MetaPattern", AUTOMEM_SUMMARY_LABEL)
                              if label == "Memory" or label in labels)
        self.falkor.execute(NEXT_CHANGE + f"MERGE (m{node_labels} {{id: $id}}) SET m = $props SET {STAMP}",
                            {"id": properties["id"], "props": properties})
        return restore_edges(self.falkor, properties["id"], edges, merged)

    def deleted_at_of(self, memory_ids: Sequence[str]) -> dict[str, str]:
        """When each of these memories was deleted, by its newest 'deleted' tombstone (restorable ones only)."""
        rows = self.falkor.execute(
            "UNWIND $ids AS id MATCH (t:Tombstone {memory_id: id}) WHERE t.state = 'deleted' "
            "RETURN t.memory_id, t.deleted_at ORDER BY t.deleted_epoch", {"ids": list(memory_ids)}, read_only=True)
        return {memory_id: deleted_at for memory_id, deleted_at in rows}

    def mark_restored(self, tombstone_id: str, restored_at: str) -> None:
        self.falkor.execute(
            "MATCH (t:Tombstone {id: $id}) SET t.state = 'restored', t.restored_at = $at",
            {"id": tombstone_id, "at": restored_at},
        )

    def erase(self, memory_ids: Sequence[str]) -> None:
        """Keep of these memories' tombstones only that they were erased (no text, edges or vector): they can no
        longer be restored."""
        self.falkor.write_chunks(
            "UNWIND $rows AS mid MATCH (t:Tombstone {memory_id: mid}) "
            "SET t.memory = $blank, t.edges = '[]', t.vector = null, t.state = 'erased'",
            list(memory_ids), chunk=500, blank=json.dumps({"properties": {}, "labels": ["Memory"]}))

    def purge(self, older_than_epoch: float) -> int:
        """Drop finished tombstones past the retention period; those a deletion or a restore is under way for
        never are."""
        rows = self.falkor.execute(
            "MATCH (t:Tombstone) WHERE NOT t.state IN ['pending', 'restoring'] AND t.deleted_epoch < $cutoff "
            "WITH t LIMIT 10000 DELETE t RETURN count(t)",
            {"cutoff": older_than_epoch},
        )
        return int(rows[0][0]) if rows else 0


def snapshot(falkor: Falkor, ids: Sequence[str], edges_of: Collection[str] | None = None) -> dict[str, dict[str, Any]]:
    """Each memory's properties, labels and edges (to other memories), keyed by memory id; with `edges_of`, only
    those memories' edges are read (the others get an empty list)."""
    found: dict[str, dict[str, Any]] = {}
    # A chunk at a time: one read of every memory a forget pass deletes held FalkorDB for tens of milliseconds.
    rows = falkor.record_chunks("UNWIND $ids AS id MATCH (m:Memory {id: id}) RETURN m.id, properties(m), labels(m)",
                                list(ids), SNAPSHOT_CHUNK)
    for memory_id, props, labels in rows:
        found[memory_id] = {"properties": dict(props), "labels": list(labels), "edges": []}
    edges = falkor.record_chunks("UNWIND $ids AS id MATCH (m:Memory {id: id})-[r]-(o:Memory) "
                                 "RETURN m.id, type(r), id(startNode(r)) = id(m), properties(r), o.id",
                                 [i for i in found if edges_of is None or i in edges_of], SNAPSHOT_CHUNK)
    for memory_id, relation, outgoing, props, other_id in edges:
        found[memory_id]["edges"].append(
            {"type": relation, "outgoing": bool(outgoing), "properties": dict(props), "other_id": other_id}
        )
    return found


def restore_edges(falkor: Falkor, memory_id: str, edges: Sequence[dict[str, Any]], merged: bool = False) -> int:
    """Recreate these edges of a memory whose other end still exists (MERGE: twice changes nothing). A merge's
    own edge comes back only with a duplicate restored into its canonical (`merged`), out of it: a memory restored
    as active points nowhere, and what was merged into it was handed on, restored or deleted since, so its
    merged_into says where it belongs now. An edge of ours gets its kept properties back; AutoMem's is only made
    again if it is gone (one still there is left as its writer has it now)."""
    restored = 0
    # An edge of ours kept from before edges carried the mark comes back with it; AutoMem's come back as they were.
    edges = [{**edge, "properties": with_mark(edge["type"], edge["properties"])} for edge in edges
             if edge["type"] != "MERGED_INTO" or (merged and edge["outgoing"])]
    for ours in (True, False):
        chosen = [edge for edge in edges if (author_of(edge["properties"]) == OURS) == ours]
        setting = "SET r = e.properties" if ours else "ON CREATE SET r = e.properties"
        for (relation, outgoing), group in edge_groups(chosen).items():
            pattern = f"(m)-[r:{relation}]->(o)" if outgoing else f"(o)-[r:{relation}]->(m)"
            rows = falkor.execute(
                NEXT_CHANGE + "MATCH (m:Memory {id: $id}) UNWIND $rows AS e MATCH (o:Memory {id: e.other_id}) "
                f"MERGE {pattern} {setting} {touched(ids_of('m', 'o'), counting='count(r)')}",
                {"id": memory_id, "rows": group},
            )
            restored += int(rows[0][0]) if rows else 0
    return restored


def edge_groups(edges: Sequence[dict[str, Any]]) -> dict[tuple[str, bool], list[dict[str, Any]]]:
    """Edges grouped by (relation, direction): Cypher cannot take a relation type as a parameter."""
    groups: dict[tuple[str, bool], list[dict[str, Any]]] = defaultdict(list)
    for edge in edges:
        if RELATION_NAME.match(edge["type"]):
            groups[(edge["type"], edge["outgoing"])].append(
                {key: value for key, value in edge.items() if key not in ("type", "outgoing")}
            )
    return groups

