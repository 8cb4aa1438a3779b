"""POST /recall: what an agent would recall for a query, now or with its history."""

from __future__ import annotations

from flask import Blueprint, jsonify

from .auth import bound_scope, require_token
from .context import graph
from .models import ConflictBody, ErrorBody, RecallAnswer, RecallRequest
from .openapi import TOKEN, addresses_graph, answers, api

blueprint = addresses_graph(Blueprint("recall", __name__))


@blueprint.post("/recall")
@require_token
@api.validate(resp=answers(HTTP_200=RecallAnswer, HTTP_403=ErrorBody, HTTP_404=ErrorBody, HTTP_409=ConflictBody), security=TOKEN, tags=["memories"])
def recall(json: RecallRequest):
    """The k memories most similar to the query (filtered vector search). current: each superseded hit replaced
    by the newest memory of its chain (replaces), archived, merged and deleted ones left out; history: every hit,
    marked. Summaries only when asked for. Reads only: nothing counts as a use. A token bound to a scope
    recalls its own scope's memories only."""
    memories = graph().memories
    query = memories.recall_query(json.model_dump(), bound_scope())
    return jsonify(RecallAnswer(state=query.state, results=memories.recall.recall(query)).model_dump())
