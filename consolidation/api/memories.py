"""The small ingest API: add a memory, read it, record a use of it, import many, restore a forgotten one."""

from __future__ import annotations

from flask import Blueprint, jsonify, request

from .. import importing
from ..errors import Forbidden, InvalidInput
from ..lifecycle.purge import PurgeAsk
from ..scopes import bound_body
from ..memory import ImportedMemoryFields, MemoryFields, parse_memory_id
from .auth import bound_scope, is_admin, require_admin, require_token, requester
from .context import graph, graph_to_write, services
from .errors import error_response
from .models import (ConflictBody, DeletedMemory, ErrorBody, Forgotten, ImportQuery, ImportRefused, ImportReport,
                     MemoryAnswer, PurgeAnswer, PurgeRequest, Restored, Superseded, SupersessionUndone)
from .openapi import ADMIN, addresses_graph, TOKEN, amend, answers, api, uuid_in_path

blueprint = addresses_graph(Blueprint("memories", __name__))
TOKEN_ROUTE = {"security": TOKEN, "tags": ["memories"]}
MEMORY_ID = uuid_in_path("memory_id", "the memory's id")
SKIP_HINT = "?skip_bad_lines=true imports the other lines"
NAMED_LINES = 10  # a refused import's detail names this many of its bad lines; its report lists more
# OpenAPI 3.1 has no schema for a stream of JSON lines: the body is described as the array of its lines.
JSONL_BODY = {"requestBody": {"required": True, "content": {"application/x-ndjson": {"schema": {
    "type": "array", "items": ImportedMemoryFields.model_json_schema(),
    "description": "one JSON object per line (lines end at \\n), each a memory as POST /memory takes it, plus "
                   "relevance_score, archived and archived_at from another store"}}}}}


# The body is checked against MemoryFields by the memory service itself, which also takes the scope properties
# the settings name (top-level strings no static model can list).
MEMORY_BODY = {"requestBody": {"required": True, "content": {"application/json": {
    "schema": MemoryFields.model_json_schema()}}}}


@blueprint.post("/memory")
@require_token
@api.validate(resp=answers(HTTP_201=MemoryAnswer, HTTP_403=ErrorBody, HTTP_409=ConflictBody), **TOKEN_ROUTE)
@amend(MEMORY_BODY)
def create_memory():
    """Create a memory (409 if its id is taken, or belongs to a forgotten memory: restore that instead; under a
    prefix, a new graph takes the admin token (403) and room under FALKORDB_GRAPHS_MAX (409 graph_limit))."""
    body = request.get_json()
    body = {} if body is None else body

    body = bound_body(body, bound_scope())

    def writes() -> bool:
        services().checks.memory(body)
        return True

    return jsonify({"memory": graph_to_write(writes, is_admin()).memories.create(body)}), 201


@blueprint.post("/memory/import")
@require_token
@api.validate(query=ImportQuery, resp=answers(HTTP_200=ImportReport, HTTP_400=ImportRefused,
                                              HTTP_409=ImportRefused), **TOKEN_ROUTE)
@amend(JSONL_BODY)
def import_memories(query: ImportQuery):
    """A JSONL body, one memory per line; every line is checked before any is written: all or nothing. With
    skip_bad_lines, invalid and conflicting lines are left out instead, every one listed, and the rest written."""
    if query.overwrite and not is_admin():
        raise Forbidden("overwrite=true replaces stored memories; only the admin token may ask for it")
    data, flags = request.get_data(), {**query.model_dump(), "bound": bound_scope()}
    gate = services().checks.import_gate(data, flags)
    target = graph_to_write(gate, is_admin())
    report = gate.report if target is None else target.memories.import_jsonl(data, **flags)
    body = report.public()
    if report.stops_on(report.errors):
        return error_response(400, "invalid_input", _refusal(report), field=report.errors[0]["field"], **body)
    if report.stops_on(report.conflicts):
        return error_response(409, "conflict", _refusal(report), **body)
    return jsonify(body)


def _refusal(report: importing.ImportReport) -> str:
    """Why nothing was imported: the invalid and the conflicting lines, by number, and how to import the rest."""
    kinds = [f"{len(report.errors)} invalid line(s) ({_numbers(report.errors)})"] if report.errors else []
    if report.conflicts:
        kinds.append(f"{len(report.conflicts)} line(s) conflicting with stored or forgotten memories "
                     f"({_numbers(report.conflicts)}; an administrator may add ?overwrite=true)")
    return f"{', '.join(kinds)}; nothing imported ({SKIP_HINT})"


def _numbers(entries: list[dict]) -> str:
    """The refused lines by number, the first few of many."""
    named = ", ".join(str(entry["line"]) for entry in entries[:NAMED_LINES])
    more = f" and {len(entries) - NAMED_LINES} more" if len(entries) > NAMED_LINES else ""
    return f"line{'s' if len(entries) > 1 else ''} {named}{more}"


@blueprint.get("/memory/<memory_id>")
@require_token
@api.validate(resp=answers(HTTP_200=MemoryAnswer, HTTP_404=ErrorBody, HTTP_410=DeletedMemory), **TOKEN_ROUTE)
@amend(MEMORY_ID)
def get_memory(memory_id: str):
    """Every stored field with the memory's state (active, archived, merged) and held_until; 410 with
    deleted_at, reason and restorable_until for a deleted memory."""
    return jsonify({"memory": graph().memories.get(memory_id, bound_scope())})


@blueprint.post("/memory/<memory_id>/access")
@require_token
@api.validate(resp=answers(HTTP_200=MemoryAnswer, HTTP_404=ErrorBody, HTTP_410=DeletedMemory), **TOKEN_ROUTE)
@amend(MEMORY_ID)
def record_access(memory_id: str):
    """Record a use: last_accessed = now, access_count + 1, relevance_score recomputed."""
    return jsonify({"memory": graph().memories.record_access(memory_id, bound_scope())})


@blueprint.post("/memory/<memory_id>/restore")
@require_admin
@api.validate(resp=answers(HTTP_200=Restored, HTTP_403=ErrorBody, HTTP_404=ErrorBody, HTTP_409=ErrorBody,
                           HTTP_410=DeletedMemory), security=ADMIN,
              tags=["memories"])
@amend(MEMORY_ID)
def restore_memory(memory_id: str):
    """Bring back an archived, deleted (from its tombstone, with its edges) or merged memory as an active one,
    counted as a use and held from every automatic archive, delete and merge until held_until (409 if it is
    active, or another restore of it is under way)."""
    return jsonify(graph().memories.restore(memory_id))


IDEMPOTENCY_HEADER = "Idempotency-Key"
SUPERSEDE_BODY = {"requestBody": {"required": True, "content": {"application/json": {"schema": {"oneOf": [
    MemoryFields.model_json_schema(),
    {"type": "object", "required": ["by"], "additionalProperties": False,
     "properties": {"by": {"type": "string", "format": "uuid", "description": "an existing, newer memory"}}},
]}}}}, "parameters": [{"name": IDEMPOTENCY_HEADER, "in": "header", "required": False, "schema": {
    "type": "string", "maxLength": 200}, "description": "a retry with the same key answers what the first did, "
                                                        "and never makes a second memory"}]}


@blueprint.post("/memory/<memory_id>/supersede")
@require_token
@api.validate(resp=answers(HTTP_200=Superseded, HTTP_404=ErrorBody, HTTP_409=ConflictBody, HTTP_410=DeletedMemory,
                           HTTP_422=ErrorBody), **TOKEN_ROUTE)
@amend({**MEMORY_ID, **SUPERSEDE_BODY, "parameters": MEMORY_ID["parameters"] + SUPERSEDE_BODY["parameters"]})
def supersede_memory(memory_id: str):
    """The memory is superseded by a new memory (the body: a memory as POST /memory takes it, its scope the
    older one's) or an existing newer one ({"by": id}); a compound memory's facts the newer one leaves
    standing become memories of their own (survivors). One crash-safe transition; with an Idempotency-Key a
    retry answers what the first did. 409 if it is already superseded (supersede the newest) or merged."""
    key = (request.headers.get(IDEMPOTENCY_HEADER) or "").strip() or None
    if key is not None and len(key) > 200:
        raise InvalidInput(IDEMPOTENCY_HEADER, "must be at most 200 characters")
    memories = graph().memories
    memories.stores.ensure_ready()
    return jsonify(memories.requests.supersede(parse_memory_id(memory_id), request.get_json(), key, requester(),
                                               bound_scope()))


@blueprint.post("/memory/<memory_id>/supersede/undo")
@require_token
@api.validate(resp=answers(HTTP_200=SupersessionUndone, HTTP_404=ErrorBody, HTTP_410=DeletedMemory),
              **TOKEN_ROUTE)
@amend(MEMORY_ID)
def undo_supersession(memory_id: str):
    """Undo the latest supersession of this memory asked over the API: it is current again, and what that
    request created (the new memory, the survivors of a split) is forgotten (restorable)."""
    return jsonify(graph().memories.requests.undo_supersede(parse_memory_id(memory_id), requester(), bound_scope()))


@blueprint.delete("/memory/<memory_id>")
@require_token
@api.validate(resp=answers(HTTP_200=Forgotten, HTTP_404=ErrorBody, HTTP_409=ErrorBody, HTTP_410=DeletedMemory),
              **TOKEN_ROUTE)
@amend(MEMORY_ID)
def forget_memory(memory_id: str):
    """Forget a memory on request: a tombstone keeps it restorable (POST /memory/<id>/restore) for
    CONSOLIDATION_TOMBSTONE_RETENTION_DAYS; the audit records which token asked."""
    return jsonify(graph().memories.requests.forget(parse_memory_id(memory_id), requester(), bound_scope()))


@blueprint.post("/memories/purge")
@require_admin
@api.validate(json=PurgeRequest, resp=answers(HTTP_200=PurgeAnswer, HTTP_403=ErrorBody, HTTP_409=ErrorBody),
              security=ADMIN,
              tags=["memories"])
def purge_memories(json: PurgeRequest):
    """Every memory (of the scope) holding the identifier as a whole identifier, never a longer one that starts
    or ends with it: previewed by a dry run (the default: each memory's text, state and whether it says more,
    a page at a time), deleted otherwise (or, with redact, its text without the identifier where it says more);
    erase (a privacy request) removes the text from every place that kept it, and the audit keeps who asked and
    how many, never the identifier. A match that is not an identifier (400), or that would take more than a
    tenth of its scope (409), runs only with expected_count: the count its preview found."""
    ask = PurgeAsk(**json.model_dump())
    return jsonify(graph().memories.requests.purges.purge(ask, requester()))
