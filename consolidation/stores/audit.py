"""AuditEntry nodes: administrator actions that change memories outside consolidation (e.g. import overwrites)."""

from __future__ import annotations

import json
import uuid
from typing import Any

from .falkor import Falkor


class AuditLog:
    """An append-only record in the graph, so every replica's administrators' actions are kept in one place."""

    def __init__(self, falkor: Falkor):
        self.falkor = falkor

    def record(self, action: str, at: str, **details: Any) -> str:
        entry_id = str(uuid.uuid4())
        self.falkor.execute(
            "CREATE (a:AuditEntry) SET a = $props",
            {"props": {"id": entry_id, "action": action, "at": at, "details": json.dumps(details)}},
        )
        return entry_id

    def recent(self, limit: int = 50) -> list[dict[str, Any]]:
        rows = self.falkor.records(
            "MATCH (a:AuditEntry) RETURN properties(a) ORDER BY a.at DESC LIMIT $limit", {"limit": limit},
            read_only=True,
        )
        entries = []
        for (props,) in rows:
            entry = dict(props)
            entry["details"] = json.loads(entry.get("details") or "{}")
            entries.append(entry)
        return entries
