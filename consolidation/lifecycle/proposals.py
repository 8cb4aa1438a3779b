"""Proposals under review: a supersession dedup found but did not apply (its evidence fell short), accepted by an
administrator (then applied as any supersession, audited) or rejected (then never proposed or applied again)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from ..errors import Conflict, NotFound
from ..stores.audit import AuditLog
from ..stores.proposals import ACCEPTED, PROPOSED, REJECTED, ProposalStore
from ..timeutil import to_iso
from .service import Lifecycle
from .states import ACTIVE, state_of


class Proposals:
    """Accept or reject what dedup proposed, once each."""

    def __init__(self, lifecycle: Lifecycle, refresh_summaries: Callable[[], int], clock: Callable[[], datetime]):
        self.lifecycle = lifecycle
        self.graph = lifecycle.graph
        self.store = ProposalStore(self.graph.falkor)
        self.audit = AuditLog(self.graph.falkor)
        self.refresh_summaries = refresh_summaries
        self.clock = clock

    def page(self, state: str | None, limit: int, offset: int) -> dict[str, Any]:
        items, total = self.store.page(state, limit, offset)
        return {"items": items, "total": total, "limit": limit, "offset": offset}

    def accept(self, proposal_id: str, requester: str) -> dict[str, Any]:
        """Apply the proposed supersession: the newer memory must still be current and the older one not yet
        superseded (409 otherwise); a failure after the decision leaves the proposal open again."""
        proposal = self._open(proposal_id)
        newer, older = (self.graph.get_memory(proposal[f"{side}_id"]) for side in ("newer", "older"))
        if newer is None or older is None:
            raise Conflict(f"proposal {proposal_id}: memory {proposal['newer_id' if newer is None else 'older_id']} "
                           "no longer exists; reject the proposal", state=PROPOSED)
        if state_of(newer) != ACTIVE or newer.get("superseded_by"):
            raise Conflict(f"proposal {proposal_id}: the newer memory is no longer current", state=PROPOSED)
        if older.get("superseded_by") or state_of(older) not in (ACTIVE, "archived"):
            raise Conflict(f"proposal {proposal_id}: the older memory is superseded or merged already",
                           state=PROPOSED)
        at = self.clock()
        if not self.store.decide(proposal_id, ACCEPTED, requester, to_iso(at)):
            raise Conflict(f"proposal {proposal_id} was decided meanwhile by another request")
        try:
            self._supersede(proposal, requester, at)
        except Exception:
            self.store.reopen(proposal_id)
            raise
        self.audit.record("accept_proposal", to_iso(at), proposal_id=proposal_id, requested_by=requester,
                          newer_id=proposal["newer_id"], older_id=proposal["older_id"])
        return {"id": proposal_id, "state": ACCEPTED, "newer_id": proposal["newer_id"],
                "older_id": proposal["older_id"]}

    def reject(self, proposal_id: str, requester: str) -> dict[str, Any]:
        """The proposal is rejected: dedup leaves the pair as it is from now on."""
        proposal = self._open(proposal_id)
        at = to_iso(self.clock())
        if not self.store.decide(proposal_id, REJECTED, requester, at):
            raise Conflict(f"proposal {proposal_id} was decided meanwhile by another request")
        self.audit.record("reject_proposal", at, proposal_id=proposal_id, requested_by=requester)
        return {"id": proposal_id, "state": REJECTED, "newer_id": proposal["newer_id"],
                "older_id": proposal["older_id"]}

    def _open(self, proposal_id: str) -> dict[str, Any]:
        proposal = self.store.get(proposal_id)
        if proposal is None:
            raise NotFound(f"no proposal {proposal_id}")
        if proposal["state"] != PROPOSED:
            raise Conflict(f"proposal {proposal_id} is {proposal['state']} already", state=proposal["state"])
        return proposal

    def _supersede(self, proposal: dict[str, Any], requester: str, at: datetime) -> None:
        """The supersession as dedup writes one (SUPERSEDES and AutoMem's marks, the payload, the scores)."""
        older_id, hygiene = proposal["older_id"], self.lifecycle.hygiene
        hygiene.supersede([{"newer": proposal["newer_id"], "older": older_id, "confidence": 0.75,
                            "reason": f"accepted on review ({requester}): {proposal['reason']}"}], to_iso(at),
                          origin="review")
        superseded = [older_id, *hygiene.merged_into_any([older_id])]
        self.lifecycle.vectors.set_superseded(superseded, True)
        self.lifecycle.mirror_validity([older_id])
        self.lifecycle.rescore(superseded, at)
        self.refresh_summaries()
