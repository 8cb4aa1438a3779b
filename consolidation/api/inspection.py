"""Admin-only, paged read routes over what consolidation did: run history, the relevance histogram, clusters,
merges, supersessions and the memories a restore can bring back. The dashboard reads these, as any client may.

Each route's query and response are pydantic models kept next to it, declared with api.validate (OpenAPI)."""

from __future__ import annotations

import math
from typing import Any, Literal

from flask import Blueprint, jsonify
from pydantic import BaseModel, ConfigDict, Field

from .. import TASK_NAMES
from ..errors import Gone
from ..lifecycle.states import restorable_until
from ..memory import parse_uuid
from ..reports import task_outcome
from ..stores.inspection import PREVIEW_CHARS
from ..timeutil import epoch_or_nan
from .auth import require_admin
from .context import graph, services
from .models import ErrorBody, Progress
from .openapi import ADMIN, addresses_graph, amend, answers, api, uuid_in_path

blueprint = addresses_graph(Blueprint("inspection", __name__))
DEFAULT_LIMIT, MAX_LIMIT = 50, 500
MAX_OFFSET = 10_000_000


# --- queries -------------------------------------------------------------------------------------------------

class PageQuery(BaseModel):
    """Which slice of a list: at most `limit` items after skipping `offset`."""

    model_config = ConfigDict(extra="forbid")

    limit: int = Field(DEFAULT_LIMIT, ge=1, le=MAX_LIMIT, description=f"items per page, 1..{MAX_LIMIT}")
    offset: int = Field(0, ge=0, le=MAX_OFFSET, description="items to skip from the start of the list")


class RestorableQuery(PageQuery):
    kind: Literal["archived", "merged", "deleted"] | None = Field(
        None, description="archived (by forgetting or a retired cluster), merged (into another memory), or deleted "
                          "(restorable from its tombstone); none: all three, in that order")
    q: str | None = Field(None, min_length=1, max_length=500, description="only those whose text holds this "
                                                                         "(any case)")


class LinkQuery(PageQuery):
    written_by: Literal["consolidation-service", "automem"] = Field(
        "consolidation-service", description="whose edges: ours (our decisions, the default), or those AutoMem's "
                                             "own consolidation or its clients wrote (shown, never counted as ours)")


class RunHistoryQuery(PageQuery):
    task: Literal[TASK_NAMES] | None = Field(None, description="runs of this task")
    trigger: Literal["schedule", "api", "cli", "dashboard", "manual"] | None = Field(
        None, description="who started them")
    state: Literal["running", "succeeded", "failed", "cancelled", "abandoned"] | None = None


class TrendQuery(BaseModel):
    model_config = ConfigDict(extra="forbid")

    limit: int = Field(100, ge=1, le=500, description="the newest runs to draw, 1..500")


class SearchQuery(PageQuery):
    q: str = Field(min_length=1, max_length=500, description="a memory's id, or text its content holds (any case)")


class HistogramQuery(BaseModel):
    model_config = ConfigDict(extra="forbid")

    bins: int = Field(10, ge=2, le=100, description="equal slices of 0..1, 2..100")


# --- responses -----------------------------------------------------------------------------------------------

class PageInfo(BaseModel):
    total: int = Field(description="how many items the whole list holds")
    limit: int
    offset: int


class TaskOutcome(BaseModel):
    success: bool | None
    cancelled: bool = Field(False, description="stopped by an administrator: not a failure (success is false)")
    seconds: float | None
    memories_processed: int | None
    error: str | None = None


class RunSummary(BaseModel):
    """One run as the history lists it: its tasks' outcomes and times, without their full reports (those are
    at GET /consolidate/runs/<run_id>)."""

    run_id: str
    state: Literal["running", "succeeded", "failed", "abandoned", "cancelled"]
    tasks: list[str]
    dry_run: bool
    trigger: str | None
    started_at: str | None
    finished_at: str | None
    duration_seconds: float | None = Field(description="from start to finish; null while running")
    outcomes: dict[str, TaskOutcome] = Field(description="by task name, for the tasks that ran")
    progress: Progress | None
    error: str | None = None
    counts: dict[str, int] | None = Field(None, description="memories by state when a real whole-graph run ended")


class RunPage(PageInfo):
    items: list[RunSummary]


class TrendPoint(BaseModel):
    """One real run in the trends: when, how long, what it did, and the memories' states after it."""

    run_id: str
    started_at: str | None
    trigger: str | None
    state: str
    duration_seconds: float | None
    failures: int = Field(description="tasks that failed (a task an administrator cancelled is not one)")
    merged: int
    supersessions: int
    contradictions: int
    archived: int
    deleted: int
    counts: dict[str, int] | None = Field(description="active, archived, merged, deleted after the run")


class Trends(BaseModel):
    points: list[TrendPoint] = Field(description="oldest first")


class RelevanceBucket(BaseModel):
    low: float
    high: float = Field(description="exclusive, except for the last bucket, which holds 1.0")
    count: int


class RelevanceHistogram(BaseModel):
    """Stored relevance of the active memories (cluster summaries aside); never-scored ones are counted apart."""

    bins: int
    buckets: list[RelevanceBucket]
    scored: int
    unscored: int


class Cluster(BaseModel):
    id: str
    summary: str | None
    size: int = Field(description="memories it summarizes now")
    dominant_type: str | None
    summary_method: str | None
    temporal_span_days: float | None
    created_at: str | None
    updated_at: str | None


class ClusterPage(PageInfo):
    items: list[Cluster]


class MergeEntry(BaseModel):
    duplicate_id: str
    duplicate_content: str | None = Field(description=f"its first {PREVIEW_CHARS} characters")
    canonical_id: str
    canonical_content: str | None
    state: Literal["pending", "done", "restoring", "restored", "deleted"] = Field(
        description="the duplicate's state: done (merged), deleted (left with its canonical, restorable from its "
                    "tombstone), restored; pending / restoring while written")
    similarity: float | None
    reason: str | None
    merged_at: str | None
    restored_at: str | None
    deleted_at: str | None = None


class MergePage(PageInfo):
    items: list[MergeEntry]


class Supersession(BaseModel):
    newer_id: str
    newer_content: str | None
    older_id: str
    older_content: str | None
    confidence: float | None
    reason: str | None
    detected_at: str | None


class SupersessionPage(PageInfo):
    items: list[Supersession]


class Link(BaseModel):
    from_id: str
    from_content: str | None
    to_id: str
    to_content: str | None
    kind: str | None = Field(description="DISCOVERED: explains, shares_theme, parallel_context; else null")
    confidence: float | None
    reason: str | None
    detected_at: str | None
    written_by: Literal["consolidation-service", "automem"] = Field(
        description="who wrote the edge: this service, or AutoMem (its consolidation or a client of it)")


class LinkPage(PageInfo):
    items: list[Link]


class FoundMemory(BaseModel):
    memory_id: str
    type: str | None
    content: str | None = Field(description=f"its first {PREVIEW_CHARS} characters")
    timestamp: str | None
    relevance_score: float | None
    state: Literal["active", "archived", "merged", "deleted"]
    merged_into: str | None
    superseded_by: str | None
    held_until: str | None
    deleted_at: str | None = Field(None, description="a deleted memory: when (its tombstone keeps it)")
    restorable_until: str | None = Field(None, description="a deleted memory: until when POST /memory/<id>/restore "
                                                           "brings it back")


class FoundPage(PageInfo):
    items: list[FoundMemory]


class Edge(BaseModel):
    relation: str = Field(description="CONTRADICTS, DISCOVERED, SUPERSEDES, MERGED_INTO, SUMMARIZES, ...")
    outgoing: bool = Field(description="from this memory to the other")
    other_id: str
    other_type: str | None
    other_content: str | None
    kind: str | None
    confidence: float | None
    reason: str | None
    other_state: str = Field(description="the other memory's state: active, archived or merged")
    other_superseded_by: str | None = Field(None, description="set when a newer memory superseded the other one: "
                                                              "its text is no longer current")
    written_by: Literal["consolidation-service", "automem"] = Field(
        "automem", description="who wrote the edge: this service, or AutoMem (its consolidation or a client of it)")


class Event(BaseModel):
    event: str = Field(description="created, merged, superseded, archived, deleted, deleted with its canonical, "
                                   "restored; on a canonical: merged in (a duplicate went into it), merge undone "
                                   "(that duplicate was restored)")
    at: str | None
    detail: str | None = Field(description="why (a merge's reason, a deletion's), or what it points to")
    other_id: str | None = Field(None, description="the other memory of a merge: the canonical it went into, or "
                                                   "the duplicate merged in")
    other_content: str | None = Field(None, description=f"a duplicate merged in: the first {PREVIEW_CHARS} "
                                                        "characters of its text as the merge recorded it")
    run_id: str | None = Field(description="the real run going on at that moment (null: a client or an "
                                           "administrator did it)")


class MemoryDetail(BaseModel):
    """A memory opened: what GET /memory/<id> shows, its edges, and what happened to it."""

    memory: dict[str, Any] | None = Field(description="a deleted memory: the fields its tombstone keeps, with "
                                                      "deleted_at, reason and restorable_until; null once erased")
    state: Literal["active", "archived", "merged", "deleted"]
    edges: list[Edge]
    events: list[Event]


class RestorableMemory(BaseModel):
    memory_id: str
    kind: Literal["archived", "merged", "deleted"]
    type: str | None
    content: str | None = Field(description=f"its first {PREVIEW_CHARS} characters")
    since: str | None = Field(description="when it was archived, merged or deleted")
    reason: str | None = Field(description="why it was deleted, or which memory it was merged into")
    merged_into: str | None
    relevance_score: float | None


class RestorablePage(PageInfo):
    kind: Literal["archived", "merged", "deleted"] | None
    items: list[RestorableMemory]


# --- routes --------------------------------------------------------------------------------------------------

READ_ROUTE = {"security": ADMIN, "tags": ["inspection"]}


@blueprint.get("/consolidate/runs")
@require_admin
@api.validate(query=RunHistoryQuery, resp=answers(HTTP_200=RunPage), **READ_ROUTE)
def run_history(query: RunHistoryQuery):
    """The run history, newest first (a run recorded as running that nobody holds the lease for: abandoned),
    of one task, trigger or state when asked."""
    svc = _ready_graph()
    recorded = "running" if query.state == "abandoned" else query.state
    page = svc.inspection.runs(query.limit, query.offset, query.task, query.trigger, recorded)
    lease = svc.engine.control.current_lease()
    live = lease.run_id if lease else None
    items = [_run_summary(run, live) for run in page.items]
    if query.state in ("running", "abandoned"):  # which of the runs recorded as running still hold the lease
        items = [item for item in items if item.state == query.state]
    return _reply(RunPage(items=items, total=page.total, limit=query.limit, offset=query.offset))


@blueprint.get("/consolidate/trends")
@require_admin
@api.validate(query=TrendQuery, resp=answers(HTTP_200=Trends), **READ_ROUTE)
def trends(query: TrendQuery):
    """The newest real runs, oldest first: what each did (merges, supersessions, contradictions, archives,
    deletions, failures), how long it took, and how many memories were in each state after it."""
    page = _ready_graph().inspection.runs(query.limit, 0)
    return _reply(Trends(points=[_trend_point(run) for run in reversed(page.items) if not run.get("dry_run")]))


@blueprint.get("/memories/relevance-histogram")
@require_admin
@api.validate(query=HistogramQuery, resp=answers(HTTP_200=RelevanceHistogram), **READ_ROUTE)
def relevance_histogram(query: HistogramQuery):
    """Stored relevance of the active memories in equal buckets of 0..1."""
    bins = query.bins
    counts, unscored = _ready_graph().inspection.relevance_counts(bins)
    buckets = [RelevanceBucket(low=round(i / bins, 6), high=round((i + 1) / bins, 6), count=count)
               for i, count in enumerate(counts)]
    return _reply(RelevanceHistogram(bins=bins, buckets=buckets, scored=sum(counts), unscored=unscored))


@blueprint.get("/clusters")
@require_admin
@api.validate(query=PageQuery, resp=answers(HTTP_200=ClusterPage), **READ_ROUTE)
def clusters(query: PageQuery):
    """The active clusters (MetaPatterns): summary and size."""
    return _paged(ClusterPage, _ready_graph().inspection.clusters(query.limit, query.offset), query)


@blueprint.get("/hygiene/merges")
@require_admin
@api.validate(query=PageQuery, resp=answers(HTTP_200=MergePage), **READ_ROUTE)
def merges(query: PageQuery):
    """Every merge dedup made, with its reason and state (restored ones too)."""
    return _paged(MergePage, _ready_graph().inspection.merges(query.limit, query.offset), query)


@blueprint.get("/hygiene/supersessions")
@require_admin
@api.validate(query=PageQuery, resp=answers(HTTP_200=SupersessionPage), **READ_ROUTE)
def supersessions(query: PageQuery):
    """Every SUPERSEDES edge: the newer memory, the older one it changes, confidence and reason."""
    return _paged(SupersessionPage, _ready_graph().inspection.supersessions(query.limit, query.offset), query)


@blueprint.get("/hygiene/contradictions")
@require_admin
@api.validate(query=LinkQuery, resp=answers(HTTP_200=LinkPage), **READ_ROUTE)
def contradictions(query: LinkQuery):
    """Every CONTRADICTS edge dedup wrote: the two memories, how sure, and why (`written_by=automem`: those
    AutoMem or its clients wrote instead)."""
    page = _ready_graph().inspection.links("contradictions", query.limit, query.offset, query.written_by)
    return _paged(LinkPage, page, query)


@blueprint.get("/hygiene/associations")
@require_admin
@api.validate(query=LinkQuery, resp=answers(HTTP_200=LinkPage), **READ_ROUTE)
def associations(query: LinkQuery):
    """Every DISCOVERED edge the creative task wrote: the two memories, its kind and confidence
    (`written_by=automem`: those AutoMem's own consolidation wrote instead)."""
    page = _ready_graph().inspection.links("associations", query.limit, query.offset, query.written_by)
    return _paged(LinkPage, page, query)


@blueprint.get("/memories/search")
@require_admin
@api.validate(query=SearchQuery, resp=answers(HTTP_200=FoundPage), **READ_ROUTE)
def search(query: SearchQuery):
    """Memories by id, or by text their content holds (any case), with their state: the stored ones newest first,
    then the deleted ones their tombstones keep (with until when a restore brings them back)."""
    page = _ready_graph().inspection.search(query.q, query.limit, query.offset)
    retention = services().settings.consolidation_tombstone_retention_days
    items = [{**item, "restorable_until": restorable_until(item["deleted_at"], retention)
              if item.get("deleted_at") else None} for item in page.items]
    return _reply(FoundPage(items=items, total=page.total, limit=query.limit, offset=query.offset))


@blueprint.get("/memories/<memory_id>/detail")
@require_admin
@api.validate(resp=answers(HTTP_200=MemoryDetail, HTTP_404=ErrorBody), **READ_ROUTE)
@amend(uuid_in_path("memory_id", "the memory's id"))
def memory_detail(memory_id: str):
    """One memory opened: its fields and state, its edges with their kinds (what merged into it, its cluster,
    its contradictions and associations), and its history, each event with the run that made it."""
    addressed = _ready_graph()
    memory_id = parse_uuid(memory_id, "memory_id")
    try:
        memory = addressed.memories.get(memory_id)
        state = memory["state"]
    except Gone as gone:
        # What its tombstone keeps, with when, why and until when a restore brings it back (null: erased).
        kept = addressed.memories.kept(memory_id)
        when = {name: value for name, value in gone.extra.items() if value is not None}
        memory, state = (None if kept is None else {**kept, **when, "state": "deleted"}), "deleted"
    return _reply(MemoryDetail(memory=memory, state=state, edges=addressed.inspection.edges_of(memory_id),
                               events=addressed.inspection.events_of(memory_id)))


@blueprint.get("/memories/restorable")
@require_admin
@api.validate(query=RestorableQuery, resp=answers(HTTP_200=RestorablePage), **READ_ROUTE)
def restorable(query: RestorableQuery):
    """Archived, merged or deleted memories that POST /memory/<id>/restore can bring back (`q`: whose text holds
    it)."""
    page = _ready_graph().inspection.restorable(query.kind, query.limit, query.offset, query.q)
    return _paged(RestorablePage, page, query)


# --- helpers -------------------------------------------------------------------------------------------------

def _ready_graph():
    addressed = graph()
    addressed.stores.ensure_ready()
    return addressed


def _paged(model: type[PageInfo], page, query: BaseModel):
    """One page of a list, answered with the paging the caller asked for."""
    return _reply(model(items=page.items, total=page.total, **query.model_dump()))


def _reply(model: BaseModel):
    return jsonify(model.model_dump(mode="json"))


def _run_summary(run: dict[str, Any], live_run_id: str | None) -> RunSummary:
    state = run.get("state", "running")
    if state == "running" and run.get("id") != live_run_id:
        state = "abandoned"  # recorded as running, but nobody holds the lease for it: its process died
    results = run.get("result") or {}
    outcomes = {task: TaskOutcome(success=report.get("success"), cancelled=bool(report.get("cancelled")),
                                  seconds=report.get("seconds"),
                                  memories_processed=report.get("memories_processed"), error=report.get("error"))
                for task, report in results.items() if isinstance(report, dict)}
    return RunSummary(
        run_id=run["id"], state=state, tasks=run.get("tasks") or [], dry_run=bool(run.get("dry_run")),
        trigger=run.get("trigger"), started_at=run.get("started_at"), finished_at=run.get("finished_at"),
        duration_seconds=_seconds_between(run.get("started_at"), run.get("finished_at")), outcomes=outcomes,
        progress=Progress(**run["progress"]) if run.get("progress") else None, error=run.get("error"),
        counts=run.get("counts"),
    )


def _trend_point(run: dict[str, Any]) -> TrendPoint:
    results = {task: report for task, report in (run.get("result") or {}).items() if isinstance(report, dict)}

    def total(task: str, name: str) -> int:
        return int(results.get(task, {}).get(name) or 0)

    return TrendPoint(
        run_id=run["id"], started_at=run.get("started_at"), trigger=run.get("trigger"),
        state=run.get("state", "running"),
        duration_seconds=_seconds_between(run.get("started_at"), run.get("finished_at")),
        failures=sum(1 for report in results.values() if task_outcome(report) == "failure"),
        merged=total("dedup", "merged"), supersessions=total("dedup", "supersessions_total"),
        contradictions=total("dedup", "contradictions_total"), archived=total("forget", "archived"),
        deleted=total("forget", "deleted"), counts=run.get("counts"))


def _seconds_between(start: str | None, end: str | None) -> float | None:
    seconds = epoch_or_nan(end) - epoch_or_nan(start)
    return None if math.isnan(seconds) else round(seconds, 3)
