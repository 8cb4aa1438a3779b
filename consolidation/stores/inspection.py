"""Read-only pages of what consolidation did, for administrators: runs, clusters, merges, supersessions, the
memories a restore can bring back, and how relevance is spread. Each page is one query plus one count."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ..lifecycle.states import state_of
from .authors import OURS, RUN_LABEL, WRITTEN_BY, author_of, is_ours
from .falkor import Falkor
from .graph import ACTIVE_MEMORY, NOT_SUMMARY
from .runs import decode_run

ACTIVE_PATTERN = "coalesce(p.archived, false) = false"
# Lists show the start of a memory's text; the whole of it is one GET /memory/<id> away.
PREVIEW_CHARS = 280
LINK_RELATIONS = {"contradictions": "CONTRADICTS", "associations": "DISCOVERED"}
RESTORABLE = {
    "archived": "m.archived = true AND m.merged_into IS NULL",
    "merged": "m.archived = true AND m.merged_into IS NOT NULL",
}
RESTORABLE_KINDS = ("archived", "merged", "deleted")
# The state of the memory bound to `o`, in the lifecycle's words (a deleted one has no node to reach).
OTHER_STATE = ("CASE WHEN o.merged_into IS NOT NULL THEN 'merged' WHEN coalesce(o.archived, false) THEN 'archived' "
               "ELSE 'active' END")


@dataclass(frozen=True)
class Page:
    """Some items of a longer list, and how long the whole list is."""

    items: list[dict[str, Any]]
    total: int


class InspectionStore:
    """Paged reads over run records, MetaPatterns, MergeRecords, SUPERSEDES edges, archived memories and
    tombstones; nothing here writes."""

    def __init__(self, falkor: Falkor):
        self.falkor = falkor

    def runs(self, limit: int, offset: int, task: str | None = None, trigger: str | None = None,
             state: str | None = None) -> Page:
        """Run records, newest first, with their per-task reports decoded; only those of a task, a trigger or a
        recorded state when asked."""
        conditions = ["($task IS NULL OR r.tasks CONTAINS $quoted)", "($trigger IS NULL OR r.trigger = $trigger)",
                      "($state IS NULL OR r.state = $state)"]
        where = f"MATCH (r:{RUN_LABEL}) WHERE " + " AND ".join(conditions)
        params = {"task": task, "quoted": f'"{task}"', "trigger": trigger, "state": state}
        rows = self.falkor.records(
            f"{where} WITH r ORDER BY r.started_at DESC, r.id SKIP $offset LIMIT $limit RETURN properties(r)",
            {**params, "offset": offset, "limit": limit}, read_only=True)
        total = self.falkor.execute(f"{where} RETURN count(r)", params, read_only=True)
        return Page([decode_run(dict(row[0])) for row in rows], int(total[0][0]) if total else 0)

    def state_counts(self) -> dict[str, int]:
        """How many memories are in each state now (cluster summaries aside), and how many are restorable from
        a tombstone (one scan of the memories)."""
        pages = self.falkor.scan_memories(
            NOT_SUMMARY, "sum(CASE WHEN m.merged_into IS NOT NULL THEN 1 ELSE 0 END), "
            "sum(CASE WHEN m.merged_into IS NULL AND m.archived = true THEN 1 ELSE 0 END), count(m)")
        merged, archived, total = (sum(int(value or 0) for value in column) for column in pages) if pages else (0, 0, 0)
        deleted = self._count("MATCH (t:Tombstone) WHERE t.state = 'deleted'", "t")
        return {"active": total - merged - archived, "archived": archived, "merged": merged, "deleted": deleted}

    def relevance_counts(self, bins: int) -> tuple[list[int], int]:
        """How many active memories (summaries aside) have a stored relevance in each of `bins` equal slices
        of 0..1 (the last one closed), and how many were never scored."""
        rows = self.falkor.execute(
            f"MATCH (m:Memory) WHERE {ACTIVE_MEMORY} "
            "WITH CASE WHEN m.relevance_score IS NULL THEN -1 "
            "ELSE toInteger(floor(toFloat(m.relevance_score) * $bins)) END AS slot "
            "RETURN slot, count(*)", {"bins": bins}, read_only=True)
        counts, unscored = [0] * bins, 0
        for slot, count in rows:
            slot, count = int(slot), int(count)
            if slot < 0:
                unscored += count
            else:
                counts[min(slot, bins - 1)] += count  # a score of exactly 1.0 belongs to the last slice
        return counts, unscored

    def clusters(self, limit: int, offset: int) -> Page:
        """Active MetaPatterns, largest first, with how many memories each summarizes now."""
        rows = self.falkor.records(
            f"MATCH (p:MetaPattern) WHERE {ACTIVE_PATTERN} "
            "WITH p ORDER BY coalesce(p.cluster_size, 0) DESC, p.id SKIP $offset LIMIT $limit "
            "OPTIONAL MATCH (p)-[:SUMMARIZES]->(m:Memory) "
            "WITH p, count(m) AS members "
            "RETURN p.id, p.content, members, p.dominant_type, p.summary_method, p.temporal_span_days, "
            "p.created_at, p.updated_at ORDER BY members DESC, p.id",
            {"offset": offset, "limit": limit}, read_only=True)
        names = ("id", "summary", "size", "dominant_type", "summary_method", "temporal_span_days", "created_at",
                 "updated_at")
        return Page([dict(zip(names, row)) for row in rows],
                    self._count(f"MATCH (p:MetaPattern) WHERE {ACTIVE_PATTERN}", "p"))

    def merges(self, limit: int, offset: int) -> Page:
        """Merge records, newest first: which memory went into which, why, and whether it was undone."""
        rows = self.falkor.records(
            "MATCH (r:MergeRecord) WITH r ORDER BY r.merged_at DESC, r.canonical_id, r.duplicate_id "
            "SKIP $offset LIMIT $limit "
            "OPTIONAL MATCH (d:Memory {id: r.duplicate_id}) OPTIONAL MATCH (c:Memory {id: r.canonical_id}) "
            "RETURN r.duplicate_id, left(d.content, $chars), r.canonical_id, left(c.content, $chars), r.state, "
            "r.similarity, r.reason, r.merged_at, r.restored_at, r.deleted_at, r.duplicate",
            {"offset": offset, "limit": limit, "chars": PREVIEW_CHARS}, read_only=True)
        names = ("duplicate_id", "duplicate_content", "canonical_id", "canonical_content", "state", "similarity",
                 "reason", "merged_at", "restored_at", "deleted_at")
        items = []
        for row in rows:
            item = dict(zip(names, row[:-1]))
            if item["duplicate_content"] is None:  # deleted since: its text as the merge recorded it
                recorded = _kept_properties(row[-1]).get("content")
                item["duplicate_content"] = recorded[:PREVIEW_CHARS] if recorded else None
            items.append(item)
        return Page(items, self._count("MATCH (r:MergeRecord)", "r"))

    def supersessions(self, limit: int, offset: int) -> Page:
        """SUPERSEDES edges, newest first: which memory replaced which, how sure, and why."""
        rows = self.falkor.records(
            "MATCH (n:Memory)-[s:SUPERSEDES]->(o:Memory) WITH n, s, o "
            "ORDER BY s.detected_at DESC, n.id, o.id SKIP $offset LIMIT $limit "
            "RETURN n.id, left(n.content, $chars), o.id, left(o.content, $chars), s.confidence, s.reason, "
            "s.detected_at",
            {"offset": offset, "limit": limit, "chars": PREVIEW_CHARS}, read_only=True)
        names = ("newer_id", "newer_content", "older_id", "older_content", "confidence", "reason", "detected_at")
        return Page([dict(zip(names, row)) for row in rows],
                    self._count("MATCH (:Memory)-[s:SUPERSEDES]->(:Memory)", "s"))

    def links(self, relation: str, limit: int, offset: int, written_by: str = OURS) -> Page:
        """CONTRADICTS or DISCOVERED edges, newest first, with both memories' texts, kind, confidence and reason:
        ours (our decisions), or those AutoMem or its clients wrote (`written_by` THEIRS)."""
        whose = is_ours("r") if written_by == OURS else f"NOT coalesce({is_ours('r')}, false)"
        match = f"MATCH (a:Memory)-[r:{LINK_RELATIONS[relation]}]->(b:Memory) WHERE {whose}"
        # AutoMem's edges carry updated_at where ours carry when they were detected or discovered.
        at = "coalesce(r.detected_at, r.discovered_at, r.created_at, r.updated_at)"
        rows = self.falkor.records(
            f"{match} WITH a, r, b ORDER BY {at} DESC, a.id, b.id SKIP $offset LIMIT $limit "
            "RETURN a.id, left(a.content, $chars), b.id, left(b.content, $chars), r.kind, r.confidence, r.reason, "
            f"{at}",
            {"offset": offset, "limit": limit, "chars": PREVIEW_CHARS}, read_only=True)
        names = ("from_id", "from_content", "to_id", "to_content", "kind", "confidence", "reason", "detected_at")
        return Page([{**dict(zip(names, row)), "written_by": written_by} for row in rows],
                    self._count(match, "r"))

    def texts(self, ids: list[str]) -> dict[str, str | None]:
        """The start of each memory's text: from its node, or from its tombstone if it was deleted since."""
        found = {memory_id: content for memory_id, content in self.falkor.records(
            "UNWIND $ids AS id MATCH (m:Memory {id: id}) RETURN m.id, left(m.content, $chars)",
            {"ids": ids, "chars": PREVIEW_CHARS}, read_only=True)}
        missing = [memory_id for memory_id in ids if memory_id not in found]
        for memory_id, snapshot in self.falkor.records(
                "UNWIND $ids AS id MATCH (t:Tombstone {memory_id: id}) RETURN t.memory_id, t.memory",
                {"ids": missing}, read_only=True):
            content = _kept_properties(snapshot).get("content")
            found[memory_id] = content[:PREVIEW_CHARS] if content else None
        return {memory_id: found.get(memory_id) for memory_id in ids}

    def edges_of(self, memory_id: str, limit: int = 200) -> list[dict[str, Any]]:
        """The memory's edges to other memories (clusters' MetaPatterns among them), with their kind and the
        other memory's text and state (whether it is still current: a stale end shows as such)."""
        rows = self.falkor.records(
            "MATCH (m:Memory {id: $id})-[r]-(o:Memory) RETURN type(r), id(startNode(r)) = id(m), o.id, o.type, "
            f"left(o.content, $chars), r.kind, r.confidence, r.reason, {OTHER_STATE}, o.superseded_by, "
            f"r.{WRITTEN_BY} LIMIT $limit",
            {"id": memory_id, "chars": PREVIEW_CHARS, "limit": limit}, read_only=True)
        names = ("relation", "outgoing", "other_id", "other_type", "other_content", "kind", "confidence", "reason",
                 "other_state", "other_superseded_by")
        return [{**dict(zip(names, row)), "outgoing": row[1] is True or row[1] == "true",
                 "written_by": author_of({WRITTEN_BY: row[-1]})} for row in rows]

    def events_of(self, memory_id: str) -> list[dict[str, Any]]:
        """What happened to the memory, oldest first: created, merged (and undone), superseded, archived,
        deleted and restored, and as a canonical each duplicate merged in (and taken back out by a restore),
        each with when and the run that did it (the real run going on at that moment)."""
        events = []
        rows = self.falkor.records("MATCH (m:Memory {id: $id}) RETURN properties(m)", {"id": memory_id},
                                   read_only=True)
        node = dict(rows[0][0]) if rows else {}
        for event, field, detail in (("created", "timestamp", None), ("superseded", "superseded_at", "superseded_by"),
                                     ("archived", "archived_at", "archived_reason"),
                                     ("restored", "restored_at", "held_until")):
            if node.get(field):
                events.append({"event": event, "at": node[field], "detail": node.get(detail) if detail else None})
        for merged_at, canonical, deleted_at in self.falkor.execute(
                "MATCH (r:MergeRecord {duplicate_id: $id}) RETURN r.merged_at, r.canonical_id, r.deleted_at",
                {"id": memory_id}, read_only=True):
            events.append({"event": "merged", "at": merged_at, "detail": f"into {canonical}", "other_id": canonical})
            if deleted_at:
                events.append({"event": "deleted with its canonical", "at": deleted_at, "detail": canonical})
        for deleted_at, reason in self.falkor.execute(
                "MATCH (t:Tombstone {memory_id: $id}) RETURN t.deleted_at, t.reason", {"id": memory_id},
                read_only=True):
            events.append({"event": "deleted", "at": deleted_at, "detail": reason})
        events += self._merged_in(memory_id)
        events.sort(key=lambda e: str(e["at"]))
        return self._with_runs(events)

    def _merged_in(self, memory_id: str) -> list[dict[str, Any]]:
        """The duplicates merged into this memory as their canonical, each with its text as the merge recorded
        it and the merge's reason, and the restores that took one back out."""
        events = []
        for duplicate_id, merged_at, reason, restored_at, recorded in self.falkor.records(
                "MATCH (r:MergeRecord {canonical_id: $id}) WHERE r.state <> 'pending' "
                "RETURN r.duplicate_id, r.merged_at, r.reason, r.restored_at, r.duplicate", {"id": memory_id},
                read_only=True):
            content = _kept_properties(recorded).get("content")
            duplicate = {"other_id": duplicate_id, "other_content": content[:PREVIEW_CHARS] if content else None}
            events.append({"event": "merged in", "at": merged_at, "detail": reason, **duplicate})
            if restored_at:
                events.append({"event": "merge undone", "at": restored_at, "detail": "the duplicate was restored",
                               **duplicate})
        return events

    def _with_runs(self, events: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Each event with the real run that was going on at its moment (none: an administrator or a client)."""
        runs = self.falkor.execute(
            f"MATCH (r:{RUN_LABEL}) WHERE coalesce(r.dry_run, false) = false AND r.finished_at IS NOT NULL "
            "RETURN r.id, r.started_at, r.finished_at", read_only=True)
        for event in events:
            at = str(event["at"])
            event["run_id"] = next((run_id for run_id, started, finished in runs
                                    if str(started) <= at <= str(finished)), None)
        return events

    def search(self, text: str, limit: int, offset: int) -> Page:
        """Memories whose id is `text`, or whose content holds it (any case): the stored ones newest first, then
        the deleted ones a tombstone keeps, newest deletion first. A scan of every memory's text: an
        administrator's search, not a recall path."""
        where = "MATCH (m:Memory) WHERE m.id = $q OR toLower(m.content) CONTAINS toLower($q)"
        rows = self.falkor.execute(f"{where} RETURN count(m)", {"q": text}, read_only=True)
        stored = int(rows[0][0]) if rows else 0
        items = self._stored_found(where, text, limit, offset) if offset < stored else []
        deleted = self._deleted_found(text)
        start = max(0, offset - stored)
        items += deleted[start:start + limit - len(items)]
        return Page(items, stored + len(deleted))

    def _stored_found(self, where: str, text: str, limit: int, offset: int) -> list[dict[str, Any]]:
        rows = self.falkor.records(
            f"{where} WITH m ORDER BY m.timestamp DESC, m.id SKIP $offset LIMIT $limit "
            "RETURN m.id, m.type, left(m.content, $chars), m.timestamp, m.relevance_score, "
            "coalesce(m.archived, false), m.merged_into, m.superseded_by, m.held_until",
            {"q": text, "offset": offset, "limit": limit, "chars": PREVIEW_CHARS}, read_only=True)
        items = []
        for memory_id, memory_type, content, timestamp, score, archived, merged_into, superseded_by, held in rows:
            memory = {"archived": archived is True or archived == "true", "merged_into": merged_into}
            items.append({"memory_id": memory_id, "type": memory_type, "content": content, "timestamp": timestamp,
                          "relevance_score": score, "state": state_of(memory), "merged_into": merged_into,
                          "superseded_by": superseded_by, "held_until": held, "deleted_at": None})
        return items

    def _deleted_found(self, text: str) -> list[dict[str, Any]]:
        """Deleted memories (restorable from their tombstones) whose id is `text` or whose kept content holds it."""
        return [{"memory_id": memory_id, "type": properties.get("type"),
                 "content": (properties.get("content") or "")[:PREVIEW_CHARS],
                 "timestamp": properties.get("timestamp"), "relevance_score": properties.get("relevance_score"),
                 "state": "deleted", "merged_into": properties.get("merged_into"),
                 "superseded_by": properties.get("superseded_by"), "held_until": None, "deleted_at": deleted_at}
                for memory_id, properties, _reason, deleted_at in self._tombstones_holding(text, by_id=True)]

    def _tombstones_holding(self, text: str, by_id: bool = False) -> list[tuple[str, dict, Any, Any]]:
        """The deleted memories whose kept content holds `text` (any case), or (`by_id`) whose id is `text`, newest
        deletion first: id, kept properties, reason, when deleted. The tombstone keeps the memory as JSON: the
        graph narrows on the text as JSON writes it, the content itself decides (an erased tombstone keeps no
        text and is never found)."""
        by_id_clause = "t.memory_id = $q OR " if by_id else ""
        rows = self.falkor.records(
            f"MATCH (t:Tombstone) WHERE t.state = 'deleted' AND ({by_id_clause}toLower(t.memory) CONTAINS "
            "toLower($escaped)) RETURN t.memory_id, t.memory, t.reason, t.deleted_at "
            "ORDER BY t.deleted_epoch DESC, t.memory_id", {"q": text, "escaped": json.dumps(text)[1:-1]},
            read_only=True)
        found = []
        for memory_id, kept, reason, deleted_at in rows:
            properties = _kept_properties(kept)
            if (by_id and memory_id == text) or text.lower() in (properties.get("content") or "").lower():
                found.append((memory_id, properties, reason, deleted_at))
        return found

    def restorable(self, kind: str | None, limit: int, offset: int, text: str | None = None) -> Page:
        """Memories a restore brings back, newest first: archived, merged into another, or deleted (from their
        tombstones); with no kind, all three, one kind after the other; with `text`, those whose content holds
        it (any case)."""
        if kind is None:
            return self._every_kind(limit, offset, text)
        if kind == "deleted":
            return self._deleted(limit, offset, text)
        holds = " AND toLower(m.content) CONTAINS toLower($q)" if text else ""
        where = f"MATCH (m:Memory) WHERE {RESTORABLE[kind]}{holds}"
        rows = self.falkor.records(
            f"{where} WITH m ORDER BY coalesce(m.merged_at, m.archived_at) DESC, m.id SKIP $offset LIMIT $limit "
            "OPTIONAL MATCH (c:Memory {id: m.merged_into}) "
            "RETURN m.id, m.type, left(m.content, $chars), coalesce(m.merged_at, m.archived_at), "
            "m.merged_into, m.relevance_score, m.archived_reason, left(c.content, $chars)",
            {"offset": offset, "limit": limit, "chars": PREVIEW_CHARS, "q": text}, read_only=True)
        items = [{"memory_id": memory_id, "kind": kind, "type": memory_type, "content": content, "since": since,
                  "reason": _why(merged_into, canonical, archived_reason), "merged_into": merged_into,
                  "relevance_score": score}
                 for memory_id, memory_type, content, since, merged_into, score, archived_reason, canonical in rows]
        return Page(items, self._count(where, "m", {"q": text}))

    def _every_kind(self, limit: int, offset: int, text: str | None) -> Page:
        """Archived, then merged, then deleted memories, paged as one list."""
        items, total = [], 0
        for kind in RESTORABLE_KINDS:
            start = max(0, offset - total)
            page = self.restorable(kind, max(1, limit - len(items)), start, text)
            if len(items) < limit and start < page.total:
                items += page.items[:limit - len(items)]
            total += page.total
        return Page(items, total)

    def _deleted(self, limit: int, offset: int, text: str | None) -> Page:
        """Deleted memories from their tombstones, newest deletion first; with `text`, those whose kept content
        holds it (paged here)."""
        if text:
            items = [_deleted_item(*found) for found in self._tombstones_holding(text)]
            return Page(items[offset:offset + limit], len(items))
        where = "MATCH (t:Tombstone) WHERE t.state = 'deleted'"
        rows = self.falkor.records(
            f"{where} WITH t ORDER BY t.deleted_epoch DESC, t.memory_id SKIP $offset LIMIT $limit "
            "RETURN t.memory_id, t.memory, t.reason, t.deleted_at",
            {"offset": offset, "limit": limit}, read_only=True)
        items = [_deleted_item(memory_id, _kept_properties(kept), reason, deleted_at)
                 for memory_id, kept, reason, deleted_at in rows]
        return Page(items, self._count(where, "t"))

    def _count(self, match: str, variable: str, params: dict | None = None) -> int:
        rows = self.falkor.execute(f"{match} RETURN count({variable})", params or {}, read_only=True)
        return int(rows[0][0]) if rows else 0


def _kept_properties(kept: str | None) -> dict[str, Any]:
    """The properties of a memory kept as JSON (by a tombstone or a merge record; none once erased)."""
    return json.loads(kept).get("properties", {}) if kept else {}


def _deleted_item(memory_id: str, properties: dict[str, Any], reason: Any, deleted_at: Any) -> dict[str, Any]:
    """A deleted memory, from its tombstone, as a restorable item."""
    return {"memory_id": memory_id, "kind": "deleted", "type": properties.get("type"),
            "content": (properties.get("content") or "")[:PREVIEW_CHARS], "since": deleted_at, "reason": reason,
            "merged_into": None, "relevance_score": properties.get("relevance_score")}


def _why(merged_into: str | None, canonical_text: str | None, archived_reason: str | None) -> str:
    """Why an archived memory is out of recall, in words."""
    if merged_into:
        return f"merged into {merged_into}" + (f": {canonical_text!r}" if canonical_text else "")
    return archived_reason or "archived (before reasons were recorded, or by an import or a retired cluster)"
