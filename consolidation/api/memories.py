"""The small ingest API: add a memory, read it, record a use of it, restore a forgotten one."""

from __future__ import annotations

from flask import Blueprint, jsonify, request

from .auth import require_admin, require_token
from .context import json_body, services

blueprint = Blueprint("memories", __name__)


@blueprint.post("/memory")
@require_token
def create_memory():
    return jsonify({"memory": services().memories.create(json_body())}), 201


@blueprint.post("/memory/import")
@require_token
def import_memories():
    """A JSONL body, one memory per line; all lines are checked before any is written."""
    lines = request.get_data(as_text=True).splitlines()
    shift = request.args.get("shift_to_now", "false").lower() in ("1", "true", "yes")
    report = services().memories.import_lines(lines, shift_to_now=shift)
    body = {"lines": report.lines, "imported": report.imported, "errors": report.errors}
    if report.errors:
        return jsonify({"error": "invalid_input", "detail": f"{len(report.errors)} invalid line(s); nothing imported",
                        **body}), 400
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
