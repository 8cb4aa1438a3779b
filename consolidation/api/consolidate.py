"""Admin routes to run, preview and inspect consolidation."""

from __future__ import annotations

from flask import Blueprint, jsonify, url_for

from ..errors import InvalidInput, NotFound
from ..memory import parse_uuid
from ..settings import TASK_NAMES
from .auth import require_admin
from .context import json_body, only_fields, services

blueprint = Blueprint("consolidate", __name__)
ALL_TASKS = ("full", "all")


@blueprint.post("/consolidate")
@require_admin
def consolidate():
    body = only_fields(json_body(required=False), {"task", "mode", "dry_run", "wait"})
    # Every field is checked before begin() takes the run lease: a refused request must not hold it.
    tasks, dry_run, wait = _tasks(body), _flag(body, "dry_run"), _flag(body, "wait")
    engine = services().engine
    run = engine.begin(tasks, dry_run, trigger="api")
    if wait:
        return jsonify(engine.execute(run)), 200
    engine.execute_in_background(run)
    return jsonify({
        "run_id": run.id, "state": "running", "tasks": run.tasks, "dry_run": dry_run,
        "status_url": url_for("consolidate.run_status", run_id=run.id),
    }), 202


@blueprint.get("/consolidate/status")
@require_admin
def status():
    svc = services()
    scheduler = svc.scheduler
    return jsonify({
        **svc.engine.status(),
        "scheduler": {
            "enabled": svc.settings.consolidation_scheduler_enabled,
            "alive": scheduler.alive,
            "tick_seconds": scheduler.tick_seconds,
            "last_tick_at": scheduler.last_tick_at.isoformat() if scheduler.last_tick_at else None,
            "last_error": scheduler.last_error,
        },
    })


@blueprint.get("/consolidate/runs/<run_id>")
@require_admin
def run_status(run_id: str):
    run = services().engine.get_run(parse_uuid(run_id, "run_id"))
    if run is None:
        raise NotFound(f"no consolidation run {run_id} (runs beyond the newest 100 are not kept)")
    return jsonify(run)


@blueprint.post("/reconcile")
@require_admin
def reconcile():
    body = only_fields(json_body(required=False), {"repair"})
    return jsonify(services().engine.reconcile(repair=_flag(body, "repair")))


def _tasks(body: dict) -> list[str]:
    """`task` (or AutoMem's `mode`): one task name, or full/all/omitted for all four in order."""
    if "task" in body and "mode" in body and body["task"] != body["mode"]:
        raise InvalidInput("mode", "give either task or mode, not both")
    field = "task" if "task" in body else "mode"
    name = body.get(field)
    if name is None or name in ALL_TASKS:
        return list(TASK_NAMES)
    if name not in TASK_NAMES:
        raise InvalidInput(field, f"must be one of {', '.join(TASK_NAMES + ALL_TASKS)}, got {name!r}")
    return [name]


def _flag(body: dict, name: str) -> bool:
    value = body.get(name, False)
    if not isinstance(value, bool):
        raise InvalidInput(name, "must be true or false")
    return value
