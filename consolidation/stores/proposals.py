"""HygieneProposal nodes: decisions dedup found whose evidence fell short of applying them (a supersession the
statements do not carry), kept for an administrator to accept or reject; each pair is proposed once, and a
decided one stays decided."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from .falkor import Falkor

LABEL = "HygieneProposal"
SUPERSESSION = "supersession"
PROPOSED, ACCEPTED, REJECTED = "proposed", "accepted", "rejected"
INDEXES = ((LABEL, "key"), (LABEL, "id"), (LABEL, "state"))
# What a page of proposals shows of each, with both memories' texts and states as they are now.
SHOWN = ("RETURN p.id, p.kind, p.state, p.newer_id, p.older_id, p.reason, p.rule, p.proposed_at, p.decided_at, "
         "p.decided_by, n.content, o.content, n.superseded_by, o.superseded_by")
FIELDS = ("id", "kind", "state", "newer_id", "older_id", "reason", "rule", "proposed_at", "decided_at",
          "decided_by", "newer_content", "older_content", "newer_superseded_by", "older_superseded_by")


def key_of(kind: str, newer: str, older: str) -> str:
    return f"{kind}:{newer}:{older}"


class ProposalStore:
    """Proposals by id: written once per pair, listed by state, decided once."""

    def __init__(self, falkor: Falkor):
        self.falkor = falkor

    def propose(self, kind: str, rows: Sequence[dict[str, Any]], at: str) -> int:
        """Record these ({newer, older, reason, rule}) unless the pair was proposed before, in any state; how
        many are new."""
        rows = [{**row, "key": key_of(kind, row["newer"], row["older"]), "id": str(uuid.uuid4())} for row in rows]
        created = self.falkor.write_chunks(
            f"UNWIND $rows AS row OPTIONAL MATCH (e:{LABEL} {{key: row.key}}) WITH row, e WHERE e IS NULL "
            f"CREATE (p:{LABEL} {{key: row.key, id: row.id, kind: $kind, state: '{PROPOSED}', newer_id: row.newer, "
            "older_id: row.older, reason: row.reason, rule: row.rule, proposed_at: $at}) RETURN p.id",
            rows, kind=kind, at=at)
        return len(created)

    def page(self, state: str | None, limit: int, offset: int) -> tuple[list[dict[str, Any]], int]:
        """One page of proposals (of a state, None: all), newest first, and how many there are."""
        where = "WHERE p.state = $state" if state else ""
        params = {"state": state, "limit": limit, "offset": offset}
        rows = self.falkor.records(
            f"MATCH (p:{LABEL}) {where} OPTIONAL MATCH (n:Memory {{id: p.newer_id}}) OPTIONAL MATCH "
            f"(o:Memory {{id: p.older_id}}) {SHOWN} ORDER BY p.proposed_at DESC, p.id SKIP $offset LIMIT $limit",
            params, read_only=True)
        total = self.falkor.records(f"MATCH (p:{LABEL}) {where} RETURN count(p)", params, read_only=True)
        return [dict(zip(FIELDS, row)) for row in rows], int(total[0][0]) if total else 0

    def get(self, proposal_id: str) -> dict[str, Any] | None:
        rows = self.falkor.records(
            f"MATCH (p:{LABEL} {{id: $id}}) OPTIONAL MATCH (n:Memory {{id: p.newer_id}}) OPTIONAL MATCH "
            f"(o:Memory {{id: p.older_id}}) {SHOWN}", {"id": proposal_id}, read_only=True)
        return dict(zip(FIELDS, rows[0])) if rows else None

    def decide(self, proposal_id: str, state: str, by: str, at: str) -> bool:
        """Move a proposal that is still proposed to `state`; False when another decision came first."""
        rows = self.falkor.records(
            f"MATCH (p:{LABEL} {{id: $id}}) WHERE p.state = '{PROPOSED}' SET p.state = $state, p.decided_by = $by, "
            "p.decided_at = $at RETURN p.id", {"id": proposal_id, "state": state, "by": by, "at": at})
        return bool(rows)

    def reopen(self, proposal_id: str) -> None:
        """Undo a decision whose step after it failed (the proposal is open again)."""
        self.falkor.execute(f"MATCH (p:{LABEL} {{id: $id}}) SET p.state = '{PROPOSED}', p.decided_by = null, "
                            "p.decided_at = null", {"id": proposal_id})
