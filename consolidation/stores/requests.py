"""RequestRecord nodes: a supersede or purge asked over HTTP, written before its first step, so that a crash
leaves it to be finished and a retry with the same Idempotency-Key finds it instead of doing it twice."""

from __future__ import annotations

import json
from typing import Any

from .falkor import Falkor

ENCODED = ("plan", "answer")


class RequestRecords:
    """Pending, done and undone requests; `key` (an Idempotency-Key, or the record's own id) is unique."""

    def __init__(self, falkor: Falkor):
        self.falkor = falkor

    def begin(self, record: dict[str, Any]) -> dict[str, Any]:
        """Write the record as pending unless one with its key exists; the record that holds the key now."""
        rows = self.falkor.records(
            "MERGE (r:RequestRecord {key: $key}) ON CREATE SET r += $props RETURN properties(r)",
            {"key": record["key"], "props": _encoded({**record, "state": "pending"})})
        return _decoded(dict(rows[0][0]))

    def find(self, key: str) -> dict[str, Any] | None:
        rows = self.falkor.records("MATCH (r:RequestRecord {key: $key}) RETURN properties(r)", {"key": key},
                                   read_only=True)
        return _decoded(dict(rows[0][0])) if rows else None

    def of_memory(self, kind: str, memory_id: str, state: str) -> dict[str, Any] | None:
        """The latest record of this kind about this memory in this state."""
        rows = self.falkor.records(
            "MATCH (r:RequestRecord {kind: $kind, memory_id: $id, state: $state}) RETURN properties(r) "
            "ORDER BY r.at DESC LIMIT 1", {"kind": kind, "id": memory_id, "state": state}, read_only=True)
        return _decoded(dict(rows[0][0])) if rows else None

    def pending(self) -> list[dict[str, Any]]:
        rows = self.falkor.records("MATCH (r:RequestRecord {state: 'pending'}) RETURN properties(r) ORDER BY r.at",
                                   read_only=True)
        return [_decoded(dict(row[0])) for row in rows]

    def has_pending(self) -> bool:
        return bool(self.falkor.execute("MATCH (r:RequestRecord {state: 'pending'}) RETURN r.id LIMIT 1",
                                        read_only=True))

    def settle(self, record_id: str, state: str, fields: dict[str, Any]) -> None:
        """Move the record to `state` ('done', 'undone'), setting `fields` (a null removes one)."""
        self.falkor.execute("MATCH (r:RequestRecord {id: $id}) SET r += $fields",
                            {"id": record_id, "fields": _encoded({**fields, "state": state})})


def _encoded(record: dict[str, Any]) -> dict[str, Any]:
    return {k: json.dumps(v) if k in ENCODED and v is not None else v for k, v in record.items()}


def _decoded(record: dict[str, Any]) -> dict[str, Any]:
    return {k: json.loads(v) if k in ENCODED and isinstance(v, str) else v for k, v in record.items()}
