"""Admin routes to run, preview and inspect consolidation."""

from __future__ import annotations

from flask import Blueprint, jsonify, request, url_for

from ..errors import GRAPH_HEADER, NotFound
from ..memory import parse_uuid
from .auth import require_admin
from .context import graph, services
from ..reports import named_ids, paged_report
from ..tasks.forget import policy_of
from ..cadence import why_not_run
from .models import (
    CancelAnswer,
    ConsolidateRequest,
    ErrorBody,
    ReconcileReport,
    ReconcileRequest,
    ReembedReport,
    ReembedRequest,
    ReportQuery,
    RunQuery,
    RunReport,
    RunInProgressBody,
    RunRecord,
    RunStarted,
    SchedulerAnswer,
    SchedulerRequest,
    SettingsAnswer,
    Status,
)
from .openapi import ADMIN, addresses_graph, amend, answers, api, uuid_in_path

blueprint = addresses_graph(Blueprint("consolidate", __name__))
ADMIN_ROUTE = {"security": ADMIN, "tags": ["consolidation"]}
OPTIONAL_BODY = {"requestBody": {"required": False}}
RUN_ID = uuid_in_path("run_id", "the run's id, as POST /consolidate answered it")


@blueprint.post("/consolidate")
@require_admin
@api.validate(resp=answers(HTTP_200=RunRecord, HTTP_202=RunStarted, HTTP_409=RunInProgressBody), **ADMIN_ROUTE)
@amend(OPTIONAL_BODY)
def consolidate(json: ConsolidateRequest):
    """Run consolidation: 202 with the run to follow, or with wait the finished run's record, as
    GET /consolidate/runs/<id> shows it (409 while a run goes on)."""
    # The body is validated before the run is begun (the lease taken, or the run queued for a worker): a
    # refused request never holds the lease.
    runner = graph().runner
    run = runner.start(json.tasks, json.dry_run, json.trigger, json.scope, json.full, json.incremental, json.moment)
    if json.wait:
        return jsonify(runner.wait(run)), 200
    state = runner.detach(run)
    return jsonify({
        "run_id": run.id, "graph": run.graph, "state": state, "tasks": run.tasks, "dry_run": json.dry_run,
        **({"scope": run.scope} if run.scope else {}), **({"as_of": json.as_of} if json.as_of else {}),
        "status_url": url_for("consolidate.run_status", run_id=run.id),
        # Following the run needs the same graph: the status URL is the graph's, named in the same header.
    }), 202


@blueprint.get("/consolidate/status")
@require_admin
@api.validate(resp=answers(HTTP_200=Status), **ADMIN_ROUTE)
def status():
    """Last runs, next due times, history, the current run and lease, store counts, the scheduler."""
    svc = services()
    addressed = graph() if svc.graphs.selection.default or request.headers.get(GRAPH_HEADER) else None
    own = addressed.engine.status() if addressed else {}
    return jsonify({
        **own,
        "graphs": [{**served.engine.schedule(own if served is addressed else None),
                    "collection": svc.graphs.selection.collection(served.name)} for served in svc.graphs.all()],
        "scheduler": svc.scheduler_view(),
    })


@blueprint.get("/consolidate/runs/<run_id>")
@require_admin
@api.validate(query=RunQuery, resp=answers(HTTP_200=RunRecord, HTTP_404=ErrorBody), **ADMIN_ROUTE)
@amend(RUN_ID)
def run_status(run_id: str, query: RunQuery):
    """One run: its state, progress (task, processed / total, elapsed) and result; with ?task=, that task's report
    opened as well (`opened`: its lists paged, with the memories' texts)."""
    run = _run(run_id)
    if query.task is not None:
        run["opened"] = _opened(run, query.task, query.limit, query.offset)
    return jsonify(run)


@blueprint.get("/consolidate/runs/<run_id>/report")
@require_admin
@api.validate(query=ReportQuery, resp=answers(HTTP_200=RunReport, HTTP_404=ErrorBody), **ADMIN_ROUTE)
@amend(RUN_ID)
def run_report(run_id: str, query: ReportQuery):
    """One task's report of a run (real or dry; without `task`, its first task's), its decisions paged, with the
    text of every memory they name (from the graph, or from the tombstone of one deleted since)."""
    run = _run(run_id)
    return jsonify(_opened(run, query.task or _first_reported(run), query.limit, query.offset))


def _first_reported(run: dict) -> str:
    """The run's first task (in its order) that has a report; its first task if none has one yet."""
    reports = run.get("result") or {}
    tasks = run.get("tasks") or []
    return next((task for task in tasks if task in reports), next(iter(reports), tasks[0] if tasks else ""))


def _run(run_id: str) -> dict:
    run = graph().engine.get_run(parse_uuid(run_id, "run_id"))
    if run is None:
        raise NotFound(f"no consolidation run {run_id} (runs beyond the newest 100 are not kept)")
    return run


def _opened(run: dict, task: str, limit: int, offset: int) -> dict:
    """A task's report of the run, its lists paged, with the texts of the memories they name."""
    reports = run.get("result") or {}
    if task not in reports:
        raise NotFound(f"run {run['run_id']} has no report of {task} (it ran {', '.join(reports) or 'nothing yet'})")
    page = paged_report(reports[task], limit, offset, graph().engine.pages.read(run["run_id"], task, limit, offset))
    return {"run_id": run["run_id"], "task": task, "state": run["state"], "dry_run": run["dry_run"], **page,
            "texts": graph().inspection.texts(named_ids(page["lists"])), "limit": limit, "offset": offset}


@blueprint.post("/consolidate/runs/<run_id>/cancel")
@require_admin
@api.validate(resp=answers(HTTP_200=CancelAnswer, HTTP_404=ErrorBody, HTTP_409=ErrorBody), **ADMIN_ROUTE)
@amend(RUN_ID)
def cancel_run(run_id: str):
    """Ask a running run to stop at its next safe point (between chunks), whichever process runs it; 409 if it is
    not running. The run then ends as cancelled; tasks it did not reach are listed as cancelled."""
    return jsonify(graph().engine.cancel(parse_uuid(run_id, "run_id")))


@blueprint.post("/consolidate/scheduler")
@require_admin
@api.validate(resp=answers(HTTP_200=SchedulerAnswer), **ADMIN_ROUTE)
def scheduler(json: SchedulerRequest):
    """Pause or resume the addressed graph's schedule in every process (runs asked by hand still run)."""
    return jsonify(graph().engine.pause(json.paused))


@blueprint.get("/consolidate/settings")
@require_admin
@api.validate(resp=answers(HTTP_200=SettingsAnswer), **ADMIN_ROUTE)
def settings_in_force():
    """The settings in force (secrets shown only as set), and beside each task why it will not run, if it
    will not."""
    svc = services()
    settings = svc.settings
    control = graph().engine.control.state()
    forget_on = policy_of(settings).enabled
    tasks = {task: {"interval_seconds": interval, "why_not": why_not_run(
        task, interval, settings.consolidation_scheduler_enabled, bool(control.get("scheduler_paused")), forget_on,
        settings.consolidation_creative_kinds)} for task, interval in settings.task_intervals.items()}
    return jsonify({"settings": settings.in_force(), "tasks": tasks,
                    "paused": bool(control.get("scheduler_paused"))})


@blueprint.post("/reembed")
@require_admin
@api.validate(resp=answers(HTTP_200=ReembedReport, HTTP_409=RunInProgressBody), **ADMIN_ROUTE)
@amend(OPTIONAL_BODY)
def reembed(json: ReembedRequest):
    """Move the store to the configured embedding model: each memory whose vector another model made is embedded
    again from its text (resumable; under the run lease, so once across replicas). Long on a big store: the CLI's
    `consolidation reembed` shows its progress."""
    return jsonify(graph().engine.reembed(dry_run=json.dry_run))


@blueprint.post("/reconcile")
@require_admin
@api.validate(resp=answers(HTTP_200=ReconcileReport, HTTP_409=RunInProgressBody), **ADMIN_ROUTE)
@amend(OPTIONAL_BODY)
def reconcile(json: ReconcileRequest):
    """Nodes without vectors and vectors without nodes; with repair, re-embed or remove them."""
    return jsonify(graph().engine.reconcile(repair=json.repair))
