"""Entity nodes (AutoMem's: id, name, slug, category, aliases, merged_into; `(e)-[:REFERENCED_IN]->(m:Memory)`)
and their alias merges: an EntityMerge record first, then the edges moved, so a merge completes after a crash
and is undone exactly."""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from typing import Any

from ..scopes import Scoping
from .falkor import Falkor, chunked

PAGE = 2500
WRITE_CHUNK = 200
ACTIVE = "e.merged_into IS NULL"


class EntityStore:
    """Reads the active entities and their references; merges, completes and undoes alias merges."""

    def __init__(self, falkor: Falkor, scoping: Scoping):
        self.falkor, self.scoping = falkor, scoping

    def active(self) -> list[list[Any]]:
        """Rows of every active entity: id, name (or slug), category, scope key, references, kept apart."""
        return self._pages(
            f"MATCH (e:Entity) WHERE id(e) >= $first AND id(e) < $after AND {ACTIVE} AND {self.scoping.where('e')} "
            "OPTIONAL MATCH (e)-[r:REFERENCED_IN]->(:Memory) "
            f"RETURN e.id, coalesce(e.name, e.slug, e.id), coalesce(e.category, ''), "
            f"{self.scoping.key_expression('e')}, count(r), coalesce(e.kept_apart, [])")

    def references(self, ids: Sequence[str]) -> dict[str, list[str]]:
        """The memories each of these entities is referenced in."""
        found: dict[str, list[str]] = {}
        for entity_id, memory_id in self.falkor.record_chunks(
                "UNWIND $ids AS id MATCH (e:Entity {id: id})-[:REFERENCED_IN]->(m:Memory) RETURN e.id, m.id",
                list(ids), PAGE):
            found.setdefault(entity_id, []).append(memory_id)
        return found

    def merge(self, merges: Sequence[dict[str, Any]], run_id: str | None, at: str) -> list[str]:
        """Merge each {canonical_id, alias_id, reason}: its record (the alias's edges, both alias lists as they
        were) first, then the move; the records' ids."""
        records = self._records(merges, run_id, at)
        self.falkor.write_chunks("UNWIND $rows AS row CREATE (r:EntityMerge) SET r = row", records, chunk=WRITE_CHUNK)
        self._apply([r["id"] for r in records])
        return [r["id"] for r in records]

    def complete_pending(self) -> int:
        """Finish merges a crash interrupted (their records say what to do; every step can be repeated)."""
        rows = self.falkor.execute("MATCH (r:EntityMerge {state: 'pending'}) RETURN r.id", read_only=True)
        self._apply([row[0] for row in rows])
        return len(rows)

    def undo(self, alias_id: str, at: str) -> dict[str, Any] | None:
        """Undo the merge of this alias: its edges back, each memory the canonical gained from it taken away
        again, the aliases it added removed, and the two kept apart from now on. None if it is not merged."""
        rows = self.falkor.records(
            "MATCH (r:EntityMerge {alias_id: $id, state: 'done'}) SET r.state = 'restoring' RETURN properties(r)",
            {"id": alias_id})
        if not rows:
            return None
        record = _decoded(dict(rows[0][0]))
        edges, moved = record["edges"], record["moved"]
        self.falkor.write_chunks(
            "MATCH (a:Entity {id: $alias}) UNWIND $rows AS row MATCH (m:Memory {id: row[0]}) "
            "MERGE (a)-[r:REFERENCED_IN]->(m) ON CREATE SET r = row[1]", edges, chunk=WRITE_CHUNK,
            alias=alias_id)
        self.falkor.write_chunks(
            "MATCH (c:Entity {id: $canonical})-[r:REFERENCED_IN]->(m:Memory) WHERE m.id IN $rows DELETE r",
            moved, chunk=WRITE_CHUNK, canonical=record["canonical_id"])
        added = [name for name in record["added_aliases"] if name not in record["canonical_aliases"]]
        self.falkor.execute(
            "MATCH (a:Entity {id: $alias}), (c:Entity {id: $canonical}) "
            "SET a.merged_into = null, a.merged_at = null, "
            "a.kept_apart = [x IN coalesce(a.kept_apart, []) WHERE x <> $canonical] + [$canonical], "
            "c.kept_apart = [x IN coalesce(c.kept_apart, []) WHERE x <> $alias] + [$alias], "
            "c.aliases = [x IN coalesce(c.aliases, []) WHERE NOT x IN $added] "
            "WITH a MATCH (r:EntityMerge {id: $record}) SET r.state = 'restored', r.restored_at = $at",
            {"alias": alias_id, "canonical": record["canonical_id"], "added": added, "record": record["id"],
             "at": at})
        return {"alias_id": alias_id, "canonical_id": record["canonical_id"], "edges_restored": len(edges),
                "restored_at": at}

    def merges(self, limit: int, offset: int) -> tuple[list[dict[str, Any]], int]:
        """Entity merge records, newest first, and how many there are."""
        rows = self.falkor.records(
            "MATCH (r:EntityMerge) RETURN properties(r) ORDER BY r.created_at DESC SKIP $offset LIMIT $limit",
            {"offset": offset, "limit": limit}, read_only=True)
        total = self.falkor.execute("MATCH (r:EntityMerge) RETURN count(r)", read_only=True)
        shown = [{key: value for key, value in _decoded(dict(row[0])).items() if key != "edges"} for row in rows]
        return shown, int(total[0][0]) if total else 0

    def _records(self, merges: Sequence[dict[str, Any]], run_id: str | None, at: str) -> list[dict[str, Any]]:
        ids = sorted({m["canonical_id"] for m in merges} | {m["alias_id"] for m in merges})
        facts = {row[0]: row[1:] for row in self.falkor.records(
            "UNWIND $ids AS id MATCH (e:Entity {id: id}) RETURN e.id, coalesce(e.slug, e.name, e.id), "
            "coalesce(e.aliases, [])", {"ids": ids}, read_only=True)}
        edges = self._edges([m["alias_id"] for m in merges])
        referenced = self.references([m["canonical_id"] for m in merges])
        records = []
        for merge in merges:
            alias_slug, alias_aliases = facts[merge["alias_id"]]
            own = edges.get(merge["alias_id"], [])
            already = set(referenced.get(merge["canonical_id"], []))
            records.append({
                "id": str(uuid.uuid4()), "state": "pending", "canonical_id": merge["canonical_id"],
                "alias_id": merge["alias_id"], "reason": merge["reason"], "run_id": run_id, "created_at": at,
                "edges": json.dumps(own), "moved": json.dumps([m for m, _ in own if m not in already]),
                "canonical_aliases": json.dumps(list(facts[merge["canonical_id"]][1])),
                "added_aliases": json.dumps([alias_slug, *alias_aliases])})
        return records

    def _edges(self, alias_ids: Sequence[str]) -> dict[str, list[list[Any]]]:
        found: dict[str, list[list[Any]]] = {}
        for entity_id, memory_id, props in self.falkor.record_chunks(
                "UNWIND $ids AS id MATCH (e:Entity {id: id})-[r:REFERENCED_IN]->(m:Memory) "
                "RETURN e.id, m.id, properties(r)", list(alias_ids), PAGE):
            found.setdefault(entity_id, []).append([memory_id, dict(props)])
        return found

    def _apply(self, record_ids: Sequence[str]) -> None:
        """Each pending merge's move, then its record `done` (repeatable: a crash anywhere is finished by
        running it again)."""
        for part in chunked(list(record_ids), WRITE_CHUNK):
            # The entities are matched by ids passed in (an index lookup), not by the record's properties.
            rows = [{"id": record_id, "alias": alias, "canonical": canonical, "added": json.loads(added)}
                    for record_id, alias, canonical, added in self.falkor.records(
                        "UNWIND $ids AS rid MATCH (r:EntityMerge {id: rid, state: 'pending'}) "
                        "RETURN r.id, r.alias_id, r.canonical_id, r.added_aliases", {"ids": list(part)},
                        read_only=True)]
            self.falkor.execute(
                "UNWIND $rows AS row MATCH (a:Entity {id: row.alias})-[old:REFERENCED_IN]->(m:Memory) "
                "MATCH (c:Entity {id: row.canonical}) "
                "MERGE (c)-[n:REFERENCED_IN]->(m) ON CREATE SET n = properties(old) DELETE old", {"rows": rows})
            self.falkor.execute(
                "UNWIND $rows AS row MATCH (r:EntityMerge {id: row.id}) "
                "MATCH (a:Entity {id: row.alias}), (c:Entity {id: row.canonical}) "
                "SET a.merged_into = c.id, a.merged_at = r.created_at, "
                "c.aliases = coalesce(c.aliases, []) + [x IN row.added WHERE NOT x IN coalesce(c.aliases, [])], "
                "r.state = 'done'", {"rows": rows})

    def _pages(self, query: str) -> list[list[Any]]:
        highest = self.falkor.highest_node_id("Entity")
        if highest is None:
            return []
        params = self.scoping.params()
        return [row for first in range(0, highest + 1, PAGE)
                for row in self.falkor.records(query, {**params, "first": first, "after": first + PAGE},
                                               read_only=True)]


def _decoded(record: dict[str, Any]) -> dict[str, Any]:
    for key in ("edges", "moved", "canonical_aliases", "added_aliases"):
        if isinstance(record.get(key), str):
            record[key] = json.loads(record[key])
    return record
