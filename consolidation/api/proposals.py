"""The review list: supersessions dedup proposed instead of applying them (their evidence fell short), read a page
at a time, and accepted or rejected one by one by an administrator (audited)."""

from __future__ import annotations

from typing import Literal

from flask import Blueprint, jsonify
from pydantic import BaseModel, ConfigDict, Field

from ..memory import parse_uuid
from .auth import require_admin, requester
from .context import graph
from .models import ErrorBody
from .openapi import ADMIN, addresses_graph, amend, answers, api, uuid_in_path

blueprint = addresses_graph(Blueprint("proposals", __name__))
ROUTE = {"security": ADMIN, "tags": ["hygiene"]}
PROPOSAL_ID = uuid_in_path("proposal_id", "the proposal's id")


class ProposalQuery(BaseModel):
    model_config = ConfigDict(extra="forbid")

    state: Literal["proposed", "accepted", "rejected", "all"] = Field(
        "proposed", description="proposed (waiting for a decision, the default), accepted, rejected, or all")
    limit: int = Field(50, ge=1, le=500, description="items per page, 1..500")
    offset: int = Field(0, ge=0, le=10_000_000, description="items to skip")


class Proposal(BaseModel):
    id: str
    kind: Literal["supersession"]
    state: Literal["proposed", "accepted", "rejected"]
    newer_id: str
    older_id: str
    newer_content: str | None = Field(description="the newer memory's text (null: it no longer exists)")
    older_content: str | None = Field(description="the older memory's text, which accepting hides from recall")
    newer_superseded_by: str | None
    older_superseded_by: str | None
    reason: str = Field(description="what the rules found, and why it was proposed rather than applied")
    rule: str | None
    proposed_at: str
    decided_at: str | None
    decided_by: str | None


class ProposalPage(BaseModel):
    items: list[Proposal]
    total: int
    limit: int
    offset: int


class Decided(BaseModel):
    id: str
    state: Literal["accepted", "rejected"]
    newer_id: str
    older_id: str


@blueprint.get("/hygiene/proposals")
@require_admin
@api.validate(query=ProposalQuery, resp=answers(HTTP_200=ProposalPage), **ROUTE)
def proposals(query: ProposalQuery):
    """The proposals to review, newest first, with both memories' texts as they are now and the reason."""
    state = None if query.state == "all" else query.state
    return jsonify(_service().page(state, query.limit, query.offset))


@blueprint.post("/hygiene/proposals/<proposal_id>/accept")
@require_admin
@api.validate(resp=answers(HTTP_200=Decided, HTTP_404=ErrorBody, HTTP_409=ErrorBody), **ROUTE)
@amend(PROPOSAL_ID)
def accept(proposal_id: str):
    """Apply the proposed supersession (409 if it was decided already, or a memory changed since so that it no
    longer applies)."""
    return jsonify(_service().accept(parse_uuid(proposal_id, "proposal_id"), requester()))


@blueprint.post("/hygiene/proposals/<proposal_id>/reject")
@require_admin
@api.validate(resp=answers(HTTP_200=Decided, HTTP_404=ErrorBody, HTTP_409=ErrorBody), **ROUTE)
@amend(PROPOSAL_ID)
def reject(proposal_id: str):
    """Reject the proposal: the two memories stay as they are, and dedup never proposes the pair again."""
    return jsonify(_service().reject(parse_uuid(proposal_id, "proposal_id"), requester()))


def _service():
    addressed = graph()
    addressed.stores.ensure_ready()
    return addressed.memories.requests.proposals
