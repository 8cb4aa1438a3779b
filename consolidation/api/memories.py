"""The small ingest API: add a memory, read it, record a use of it, restore a forgotten one."""

from __future__ import annotations

from flask import Blueprint, jsonify, request

from ..errors import Unauthorized
from .auth import is_admin, require_admin, require_token
from .context import json_body, query_flags, services
from .errors import error_response

blueprint = Blueprint("memories", __name__)


@blueprint.post("/memory")
@require_token
def create_memory():
    return jsonify({"memory": services().memories.create(json_body())}), 201


@blueprint.post("/memory/import")
@require_token
def import_memories():
    """A JSONL body, one memory per line; every line is checked before any is written: all or nothing."""
    flags = query_flags({"shift_to_now", "overwrite", "dry_run"})
    if flags["overwrite"] and not is_admin():
        raise Unauthorized("overwrite=true replaces stored memories; only the admin token may ask for it")
    report = services().memories.import_jsonl(request.get_data(), **flags)
    body = report.public()
    if report.errors:
        first = report.errors[0]
        return error_response(400, "invalid_input", f"{len(report.errors)} invalid line(s), the first is line "
                              f"{first['line']}; nothing imported", field=first["field"], **body)
    if report.conflicts:
        return error_response(409, "conflict", f"{len(report.conflicts)} line(s) conflict with stored or forgotten "
                              "memories; nothing imported (an administrator may add ?overwrite=true)", **body)
    return jsonify(body)


@blueprint.get("/memory/<memory_id>")
@require_token
def get_memory(memory_id: str):
    return jsonify({"memory": services().memories.get(memory_id)})


@blueprint.post("/memory/<memory_id>/access")
@require_token
def record_access(memory_id: str):
    return jsonify({"memory": services().memories.record_access(memory_id)})


@blueprint.post("/memory/<memory_id>/restore")
@require_admin
def restore_memory(memory_id: str):
    return jsonify(services().memories.restore(memory_id))
