"""The request and response models of the HTTP API: what each route validates, and what /openapi.json shows."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import (BaseModel, BeforeValidator, ConfigDict, Field, RootModel, ValidationInfo, field_validator,
                      model_validator)

from ..memory import Fraction
from .. import DEFAULT_TASKS
from ..settings import TASK_NAMES
from ..timeutil import parse_iso

ALL_TASKS = ("full", "all")
TaskChoice = Literal[TASK_NAMES + ALL_TASKS]
TaskName = Literal[TASK_NAMES]


class Strict(BaseModel):
    """A JSON body: unknown fields refused, values of exactly their JSON type (no "true" for true)."""

    model_config = ConfigDict(extra="forbid", strict=True)


# --- requests ------------------------------------------------------------------------------------------------

class ConsolidateRequest(Strict):
    """POST /consolidate: which tasks to run, whether to write anything, whether to answer when done."""

    task: TaskChoice | None = Field(None, description="one task; full, all or omitted: all five in order")
    mode: TaskChoice | None = Field(None, description="AutoMem's name for task (give one of the two)")
    dry_run: bool = Field(False, description="report what would change, write nothing")
    full: bool = Field(False, description="every task reads every memory (a full pass) instead of what changed "
                                          "(or came due) since its last run (see CONSOLIDATION_FULL_PASS_INTERVAL_"
                                          "SECONDS); a dry run is a full pass unless it asks for incremental")
    incremental: bool = Field(False, description="dry run only: preview the next scheduled pass (what changed or "
                                                 "came due) instead of the whole store")
    wait: bool = Field(False, description="answer 200 with the result when done, instead of 202 at once")
    trigger: Literal["api", "cli", "dashboard"] = Field(
        "api", description="who asks, as the run history records it (the CLI and the dashboard name themselves; "
                           "scheduled runs are recorded as schedule)")
    scope: dict[str, str | None] | None = Field(
        None, description="run one scope alone: a value for each of CONSOLIDATION_SCOPE_PROPERTIES, e.g. "
                          '{"user_id": "u-17"} (null: the memories without that property); the schedule '
                          "(last_<task>) is left to whole-graph runs")
    as_of: str | None = Field(
        None, max_length=64, description="an ISO-8601 time, not later than now: compute the run as of then (decay, "
                                         "holds, dwell and forgetting take it as now; memories stored after it "
                                         "are not read); every task a full pass, and the schedule (last_<task>) "
                                         "left to runs at the present time")

    @model_validator(mode="after")
    def _one_pass(self) -> ConsolidateRequest:
        if self.incremental and (self.full or not self.dry_run):
            raise ValueError("incremental previews the next pass: it goes with dry_run=true, without full")
        if self.incremental and self.as_of:
            raise ValueError("as_of reads every memory stored by then: it goes without incremental")
        return self

    @field_validator("as_of")
    @classmethod
    def _a_time(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                parse_iso(value)
            except ValueError:
                raise ValueError("must be an ISO-8601 time such as 2023-05-08T13:56:00+00:00") from None
        return value

    @property
    def moment(self) -> datetime | None:
        """as_of as a time (UTC), or None."""
        return parse_iso(self.as_of) if self.as_of else None

    @field_validator("mode")
    @classmethod
    def _same_as_task(cls, mode: str | None, info: ValidationInfo) -> str | None:
        task = info.data.get("task")
        if mode is not None and task is not None and mode != task:
            raise ValueError("give either task or mode, not both")
        return mode

    @property
    def tasks(self) -> list[str]:
        name = self.task or self.mode
        return list(DEFAULT_TASKS) if name is None or name in ALL_TASKS else [name]


class SchedulerRequest(Strict):
    """POST /consolidate/scheduler: pause or resume the addressed graph's schedule, in every process."""

    paused: bool


class SchedulerAnswer(BaseModel):
    graph: str
    paused: bool
    at: str


class CancelAnswer(BaseModel):
    run_id: str
    cancel_requested_at: str = Field(description="the run stops at its next safe point (between chunks)")


class ReportQuery(BaseModel):
    model_config = ConfigDict(extra="forbid")

    task: TaskName | None = Field(None, description="the task whose report to open (default: the run's first "
                                                     "task that has a report)")
    limit: int = Field(50, ge=1, le=500, description="items per list, 1..500")
    offset: int = Field(0, ge=0, le=10_000_000, description="items to skip in each list")


class RunQuery(BaseModel):
    """GET /consolidate/runs/<id>: with `task`, that task's report opened too, its lists paged."""

    model_config = ConfigDict(extra="forbid")

    task: TaskName | None = Field(None, description="open this task's report (as /report does)")
    limit: int = Field(50, ge=1, le=500, description="items per list, 1..500")
    offset: int = Field(0, ge=0, le=10_000_000, description="items to skip in each list")


class ReportList(BaseModel):
    items: list[dict[str, Any]]
    total: int = Field(description="how many the task decided (the run record lists the first "
                                   "CONSOLIDATION_REPORT_LIMIT)")
    kept: int = Field(description="how many can be paged to: all of them, unless the list is a sample "
                                  "(kept_apart) or the run's lists went beyond CONSOLIDATION_REPORT_ITEMS_KEPT "
                                  "(newest runs first; then the first CONSOLIDATION_REPORT_LIMIT)")


class RunReport(BaseModel):
    """GET /consolidate/runs/<id>/report: one task's report, its lists paged, and the texts of the memories
    they name."""

    run_id: str
    task: str
    state: str
    dry_run: bool
    report: dict[str, Any] = Field(description="the report's counts and settings (its lists are under lists)")
    lists: dict[str, ReportList] = Field(description="merges, supersessions, contradictions, edges, clusters, "
                                                     "decisions, protections, ... by name")
    texts: dict[str, str | None] = Field(description="memory id -> the start of its text (null: nothing left)")
    limit: int
    offset: int


class TaskSchedule(BaseModel):
    interval_seconds: int
    why_not: str | None = Field(description="why it will not run on schedule (or will change nothing); null: it will")


class SettingsAnswer(BaseModel):
    """GET /consolidate/settings: every setting in force (secrets only as "(set)") and each task's outlook."""

    settings: dict[str, Any]
    tasks: dict[str, TaskSchedule]
    paused: bool


class ReconcileRequest(Strict):
    """POST /reconcile: compare the stores, and optionally repair what differs."""

    repair: bool = Field(False, description="re-embed nodes without vectors, remove vectors without nodes")


def _flag_word(value: Any) -> Any:
    """true/false/1/0 in any case; anything else is refused rather than guessed."""
    if isinstance(value, str):
        word = value.lower()
        if word in ("true", "1"):
            return True
        if word in ("false", "0"):
            return False
        raise ValueError("must be true or false")
    return value


QueryFlag = Annotated[bool, BeforeValidator(_flag_word)]


class ImportQuery(BaseModel):
    """POST /memory/import's query flags (the body is JSONL, one memory per line)."""

    model_config = ConfigDict(extra="forbid")

    dry_run: QueryFlag = Field(False, description="check and report only; nothing is written")
    shift_to_now: QueryFlag = Field(False, description="move every time by one offset so the newest becomes now")
    overwrite: QueryFlag = Field(False, description="replace stored memories (admin token only; audited)")
    skip_bad_lines: QueryFlag = Field(False, description="leave out invalid and conflicting lines (each listed in "
                                                         "the answer) and import the others, instead of nothing")


# --- errors --------------------------------------------------------------------------------------------------

class ErrorBody(BaseModel):
    """Every error: a code, a sentence, and for bad input the field that is wrong."""

    error: str = Field(description="invalid_input, unauthorized, not_found, conflict, run_in_progress, "
                                   "body_too_large, store_unavailable, ...")
    detail: str
    field: str | None = Field(None, description="the field that is wrong (400 only)")


class RunInProgressBody(ErrorBody):
    run_id: str | None = Field(None, description="the run holding the lease")
    task: str | None = None


class StoreUnavailableBody(ErrorBody):
    """503: a store (`store`) or the embedding provider (`provider`) cannot answer now."""

    store: Literal["graph", "vectors"] | None = None
    provider: str | None = Field(None, description="the embedding provider that failed (embedding_unavailable)")


class ConflictBody(ErrorBody):
    """409: the request conflicts with the store's state; embedding_model_mismatch names both models."""

    store_model: str | None = None
    configured_model: str | None = None


# --- consolidation -------------------------------------------------------------------------------------------

class RunStarted(BaseModel):
    run_id: str
    graph: str
    state: Literal["running", "queued"] = Field(
        description="running in this process, or queued for a worker process (CONSOLIDATION_WORKER)")
    tasks: list[str]
    dry_run: bool
    scope: dict[str, str | None] | None = None
    as_of: str | None = None
    status_url: str = Field(description="GET it to follow the run")


class Progress(BaseModel):
    task: str | None = None
    processed: int | None = None
    total: int | None = None
    elapsed_seconds: float | None = None


class RunRecord(BaseModel):
    """A run as recorded in the graph: queued (for a worker), running, succeeded, failed, cancelled or
    abandoned. The one shape of a run: GET /consolidate/runs/<id>, POST /consolidate with wait (once it ended),
    the command line and status's current run answer these fields, null where not set."""

    run_id: str
    graph: str | None = Field(None, description="the graph the run consolidated (none in older records)")
    state: Literal["queued", "running", "succeeded", "failed", "abandoned", "cancelled"]
    success: bool = Field(description="it succeeded (state succeeded): what clients of POST /consolidate's "
                                      "earlier answer check")
    tasks: list[str]
    dry_run: bool
    full: bool = Field(False, description="every task was asked for a full pass (a dry run is one unless "
                                          "incremental)")
    trigger: str
    started_at: str
    finished_at: str | None = None
    duration_seconds: float | None = Field(None, description="from start to finish; null until it ends")
    cancel_requested_at: str | None = Field(None, description="when an administrator asked it to stop")
    queued_at: str | None = Field(None, description="when it was queued for a worker process (then started_at is "
                                                    "when a worker began it)")
    holder: str | None = Field(None, description="the process that ran it (host:pid:…)")
    counts: dict[str, int] | None = Field(None, description="memories by state after a real whole-graph run")
    opened: RunReport | None = Field(None, description="with ?task=: that task's report, its lists paged")
    current_task: str | None = None
    progress: Progress | dict[str, Any] | None = None
    result: dict[str, dict[str, Any]] | None = Field(
        None, description="each task's report by name, as it ended: counts, and the first "
                          "CONSOLIDATION_REPORT_LIMIT items of each list with <list>_total (every item: "
                          "GET /consolidate/runs/<id>/report, paged)")
    error: str | None = None
    scope: dict[str, str | None] | None = Field(None, description="the one scope the run was limited to")
    as_of: str | None = Field(None, description="the time the run was computed as of (none: when it ran)")


class HistoryEntry(BaseModel):
    task: str
    ran_at: str
    memories_processed: int
    duration_seconds: float
    success: bool
    run_id: str | None = None
    trigger: str | None = None
    error: str | None = None
    full_pass: bool | None = Field(None, description="dedup, creative, cluster: whether it read every memory "
                                                     "(else what changed since its last run)")


class Lease(BaseModel):
    holder: str
    run_id: str
    task: str | None
    expires_at: float = Field(description="seconds since the epoch, on FalkorDB's clock")


class StoreCounts(BaseModel):
    graph_memories: int
    vector_points: int
    in_sync: bool
    difference: int


class WorkerState(BaseModel):
    """A worker process, as its last heartbeat (every 2 s, kept 6 s) described it."""

    holder: str
    pid: int
    started_at: str
    runs: int = Field(description="runs asked over HTTP it has run")
    scheduler_enabled: bool
    last_tick_at: str | None
    last_error: str | None


class SchedulerState(BaseModel):
    enabled: bool
    runs_in: Literal["inline", "child", "external"] = Field(
        "inline", description="where runs compute (CONSOLIDATION_WORKER): this process, or worker processes")
    alive: bool = Field(description="inline: this process's scheduler thread; else: whether any worker is alive")
    tick_seconds: float
    last_tick_at: str | None
    last_error: str | None
    workers: list[WorkerState] | None = Field(None, description="the worker processes alive (child, external)")


class GraphSchedule(BaseModel):
    """One graph in the status overview: when each task last succeeded and is next due, and any run going on."""

    graph: str
    collection: str
    last: dict[str, str | None]
    next_due: dict[str, str | None]
    paused: bool = Field(False, description="its schedule is paused (POST /consolidate/scheduler)")
    current_run: dict[str, str | None] | None


class Forgetting(BaseModel):
    """Whether forget archives or deletes anything (off by default: both thresholds 0), and how to change it."""

    enabled: bool
    archive_threshold: float
    delete_threshold: float
    delete_after_archived_days: float = Field(
        description="days a memory stays archived before it may be deleted (0: deleted at once)")
    scheduled: bool = Field(description="on and given an interval (CONSOLIDATION_FORGET_INTERVAL_SECONDS)")
    note: str = Field(description='e.g. "off: set CONSOLIDATION_ARCHIVE_THRESHOLD / _DELETE_THRESHOLD"')


class AutomemConsolidation(BaseModel):
    """Whether AutoMem's own consolidation writes to the same graph (two engines on one store fight), read from
    its run records and its control node, and the settings on AutoMem's side that turn it off."""

    present: bool = Field(description="AutoMem has left run records or its control node in this graph")
    consolidating: bool = Field(description="AutoMem's own consolidation ran here within the last 8 days")
    tasks: list[str] = Field(description="its tasks seen running: decay, creative, cluster, forget, identity")
    last_run_at: str | None = Field(description="when it last ran (null: not within 8 days)")
    turn_off: list[str] = Field(description="the settings on AutoMem's side that turn its consolidation off")
    warning: str | None = Field(description="the warning to give while it consolidates (null: none)")


class EmbeddingState(BaseModel):
    """The store's embedding model against the one this service is configured with."""

    store_model: str = Field(description="the model the store's vectors were made by (as recorded, or named by "
                                         "its memories)")
    store_model_known: bool = Field(description="false: no vector names its model (AutoMem's, a client's): it "
                                                "counts as the configured model")
    configured_model: str = Field(description="the model EMBEDDING_PROVIDER embeds texts with")
    matches: bool = Field(description="false: text recalls and text writes answer 409 embedding_model_mismatch "
                                      "until `consolidation reembed` moves the store")
    reembed_in_progress_to: str | None = Field(description="a reembed began moving the store to this model and "
                                                           "has not finished (null: none)")


class ReembedRequest(Strict):
    """POST /reembed: move the store to the configured embedding model."""

    dry_run: bool = Field(False, description="count what would be re-embedded, write nothing")


class ReembedReport(BaseModel):
    dry_run: bool
    store_model: str = Field(description="the store's model before")
    configured_model: str
    memories_to_reembed: int
    from_models: dict[str, int] = Field(description="how many of those each model made ('(none named)': a "
                                                    "client's or AutoMem's vector)")
    reembedded: int | None = None
    finished: bool | None = Field(None, description="false: the lease was lost before the end; run it again")
    store_model_now: str | None = None


class Status(BaseModel):
    """GET /consolidate/status: the addressed graph's last successes, next due times, history, current run and
    store counts; every served graph's schedule; this process's scheduler. With several graphs and no default,
    a request naming none gets only `graphs` and `scheduler`."""

    graph: str | None = None
    last_decay: str | None = None
    last_dedup: str | None = None
    last_creative: str | None = None
    last_cluster: str | None = None
    last_entities: str | None = None
    last_forget: str | None = None
    next_due: dict[str, str | None] | None = None
    history: list[HistoryEntry] | None = None
    current_run: RunRecord | None = None
    lease: Lease | None = None
    store_counts: StoreCounts | None = None
    forgetting: Forgetting | None = None
    paused: bool | None = Field(None, description="the addressed graph's schedule is paused: no scheduled run "
                                                  "starts (runs asked by hand still do)")
    paused_at: str | None = None
    automem: AutomemConsolidation | None = None
    embedding: EmbeddingState | None = None
    graphs: list[GraphSchedule]
    scheduler: SchedulerState


class ReconcileReport(BaseModel):
    graph_memories: int
    vector_points: int
    nodes_without_vectors: list[str]
    nodes_without_vectors_total: int
    vectors_without_nodes: list[str]
    vectors_without_nodes_total: int
    interrupted_deletions_completed: int
    pending_deletions: int = Field(description="deletions under way or left by a crash (not orphans: a forget "
                                               "or the restart completes them)")
    pending_merges: int = Field(description="merges under way or left by a crash")
    payload_marks_refreshed: int = Field(0, description="with repair: points whose state and supersession marks "
                                                        "were rewritten from the graph")
    repaired: bool


# --- memories ------------------------------------------------------------------------------------------------

class StoredMemory(BaseModel):
    """A memory as stored: every property of its node (a store shared with AutoMem may hold more)."""

    model_config = ConfigDict(extra="allow")

    id: str
    content: str
    type: str | None = None
    importance: Fraction | None = None
    confidence: Fraction | None = None
    relevance_score: float | None = None
    tags: list[str] | None = None
    timestamp: str | None = None
    last_accessed: str | None = None
    access_count: int | None = None
    protected: bool | None = None
    protected_reason: str | None = None
    archived: bool | None = None
    archived_at: str | None = None
    merged_into: str | None = None
    superseded_by: str | None = None
    state: Literal["active", "archived", "merged"] | None = Field(
        None, description="active; archived (out of recall); merged (into merged_into, archived too). A deleted "
                          "memory answers 410 instead")
    held_until: str | None = Field(None, description="after a restore: until when no automatic run archives, "
                                                     "deletes or merges it")
    embedding_model: str | None = Field(None, description="the model that made its vector, when the service "
                                                          "embedded its text (null: the client's vector)")


class MemoryAnswer(BaseModel):
    memory: StoredMemory


class DeletedMemory(ErrorBody):
    """410: the memory was deleted; its tombstone can bring it back until restorable_until."""

    state: Literal["deleted"]
    deleted_at: str
    reason: str | None = None
    restorable_until: str | None = Field(description="until when a restore brings it back (null: erased)")
    deletion: Literal["pending", "deleted", "restoring", "erased"] = Field(
        description="deleted; pending while the deletion finishes; restoring while a restore is under way; "
                    "erased on request (nothing kept)")


class Restored(BaseModel):
    memory_id: str
    state: Literal["active", "merged"] = Field(description="what it is after the restore: merged for a deleted "
                                                          "duplicate back in its canonical")
    held_until: str = Field(description="until when no automatic run archives, deletes or merges it (or its "
                                        "canonical, for a duplicate back in it)")
    restored_with: list[str] | None = Field(None, description="what came back with it: the duplicates deleted "
                                                              "with a canonical, or a duplicate's canonical")
    restored_from: Literal["archive", "tombstone", "merge"]
    edges_restored: int
    edges_lost: int | None = Field(None, description="edges whose other end is gone (tombstone restores)")
    canonical_id: str | None = Field(None, description="what it had been merged into (merge restores)")


class LineNote(BaseModel):
    line: int
    id: str
    reason: str


class LineError(BaseModel):
    line: int
    field: str
    detail: str


class ImportReport(BaseModel):
    """What an import did, or (dry run, refused) would do; the first 20 lines of each kind are listed (every
    line, with skip_bad_lines)."""

    lines: int
    created: int
    overwritten: int
    imported: int
    skipped: int
    skipped_lines: list[LineNote]
    conflicts: list[LineNote]
    conflicts_total: int
    errors: list[LineError]
    errors_total: int
    dry_run: bool
    skip_bad_lines: bool
    bad_lines_skipped: int = Field(description="invalid and conflicting lines left out (skip_bad_lines)")


class ImportRefusedBody(ImportReport, ErrorBody):
    """An import with invalid lines (400) or conflicts (409): nothing was written; the report says why."""


class ImportRefused(RootModel[ImportRefusedBody | ErrorBody]):
    """A refused import: with its report when the lines were read, else (bad flags, no token) a plain error."""

    model_config = ConfigDict(title="ImportRefused")


# --- health --------------------------------------------------------------------------------------------------

class StoreHealth(BaseModel):
    ok: bool
    detail: str | None = Field(None, description="why it is down (admin token only)")


class Health(BaseModel):
    status: Literal["ok", "degraded"]
    stores: dict[str, StoreHealth]
    embedded: bool
    scheduler_alive: bool


# --- recall, updates and forgetting on request --------------------------------------------------------------

class RecallRequest(Strict):
    """POST /recall: what the agent would recall for a query."""

    query: str | None = Field(None, min_length=1, max_length=10_000,
                              description="text, embedded by the configured embedder (give this or embedding)")
    embedding: list[float] | None = Field(None, description="the query's vector: VECTOR_SIZE numbers, from the "
                                                            "model that embedded the memories")
    k: int = Field(10, ge=1, le=100, description="how many memories to answer")
    state: Literal["current", "history"] = Field(
        "current", description="current: what is true now (superseded hits replaced by the newest memory of "
                               "their chain; archived, merged and deleted ones left out); history: every stored "
                               "hit, marked")
    scope: dict[str, str | None] | None = Field(None, description="one scope: a value for each of "
                                                                  "CONSOLIDATION_SCOPE_PROPERTIES (none: all)")
    types: list[Annotated[str, Field(min_length=1, max_length=64)]] | None = Field(
        None, max_length=20, description="only memories of these types")
    include_summaries: bool = Field(False, description="let cluster summaries (MetaPattern) answer too")
    associated: bool | None = Field(
        None, description="current mode, k >= 5: give the last place to what was said with the best answer (its "
                          "closest same_episode partner), when that answer matches the query well; default "
                          "RECALL_ASSOCIATED")

    @model_validator(mode="after")
    def _asks_something(self):
        if self.query is None and self.embedding is None:
            raise ValueError("give a query (text) or an embedding")
        return self


class RecalledMemory(BaseModel):
    id: str
    content: str | None
    type: str
    similarity: float = Field(description="cosine similarity of this memory to the query")
    relevance: float | None = Field(description="its relevance_score")
    state: str
    superseded: bool
    timestamp: str | None = None
    replaces: list[str] | None = Field(None, description="current mode: the superseded hits this memory stands "
                                                         "for (the newest memory of their chain)")
    ranked_by_similarity: float | None = Field(None, description="current mode: the best similarity among it "
                                                                 "and what it replaces (the order of the answer)")
    superseded_by: str | None = None
    merged_into: str | None = None
    associated_with: str | None = Field(None, description="current mode: the answer this one was said with (a "
                                                          "same_episode association), when that gave it its place")


class RecallAnswer(BaseModel):
    state: Literal["current", "history"]
    results: list[RecalledMemory]


class Superseded(BaseModel):
    memory_id: str
    state: str = Field(description="superseded; for a retry after an undo, the memory's state as it is now")
    superseded_by: str | None = Field(description="the newer memory (made by this request when created is true); "
                                                  "after an undo, what supersedes it now (null: nothing)")
    undone_at: str | None = Field(None, description="a retry after an undo: when the supersession was undone")
    created: bool
    survivors: list[str] = Field(description="a compound memory's facts the newer one leaves standing, each "
                                             "now a memory of its own")
    repeated: bool | None = Field(None, description="true when an earlier request with this Idempotency-Key "
                                                    "did it; nothing was done again")


class SupersessionUndone(BaseModel):
    memory_id: str
    state: str | None
    forgotten: list[str] = Field(description="what the supersession had created (forgotten again, restorable)")


class Forgotten(BaseModel):
    memory_id: str
    state: Literal["deleted"]
    deleted_at: str


class PurgeRequest(Strict):
    """POST /memories/purge: every memory holding an identifier."""

    match: str = Field(min_length=1, max_length=256, description="the identifier (an e-mail, a URL or domain, a "
                                                                 "phone number, a number of 4 digits or more, a "
                                                                 "code, a name written with capitals), matched "
                                                                 "whole, case and Unicode forms folded")
    dry_run: bool = Field(True, description="preview what would go, change nothing (the default)")
    erase: bool = Field(False, description="a privacy request: the text leaves every place that kept it "
                                           "(tombstones, merge records, run reports, edges' reasons, the store's "
                                           "files); erased memories cannot be restored")
    redact: bool = Field(False, description="a memory that says more than the identifier keeps its text with "
                                            "the identifier replaced by [redacted] instead of being deleted (its "
                                            "vector made again where the service embedded it)")
    expected_count: int | None = Field(None, ge=0, le=10_000_000, description="the count the preview found: "
                                       "needed when the match is not an identifier, or holds more than a tenth "
                                       "of the scope's memories; a different count now is a 409")
    scope: dict[str, str | None] | None = Field(None, description="only this scope (none: the whole graph)")
    offset: int = Field(0, ge=0, le=10_000_000, description="the preview's page: memories to skip")
    limit: int = Field(50, ge=1, le=500, description="the preview's page: memories to list, 1..500")


class PurgedMemory(BaseModel):
    id: str
    content: str
    type: str
    state: Literal["active", "superseded", "archived", "merged", "deleted"] = Field(
        description="as recall sees it: superseded is active but replaced by a newer memory")
    superseded_by: str | None
    merged_into: str | None
    says_more: bool = Field(description="the text states something besides the identifier (another fact, "
                                        "another identifier): redact keeps the rest")
    action: Literal["delete", "redact"]


class PurgeAnswer(BaseModel):
    dry_run: bool
    erase: bool
    redact: bool
    matched: int = Field(description="memories holding the identifier")
    memory_ids: list[str] = Field(description="the first 100 by id")
    summaries_quoting: int = Field(description="active cluster summaries quoting the identifier: rebuilt from "
                                               "their members once those holding it are gone")
    scope_memories: int | None = Field(None, description="preview: the memories of the scope")
    deleting: int | None = Field(None, description="preview: how many the purge would delete")
    redacting: int | None = Field(None, description="preview: how many it would redact")
    deleted_holding: int | None = Field(None, description="preview: deleted (restorable) memories whose "
                                                          "tombstone holds it, erased too with erase")
    identifier: str | None = Field(None, description="preview: what kind of identifier the match is (null: "
                                                     "none, so the purge needs expected_count)")
    refused: str | None = Field(None, description="preview: why the purge would be refused as asked (null: it "
                                                  "would run)")
    memories: list[PurgedMemory] | None = Field(None, description="preview: one page of the memories holding "
                                                                  "it, by id")
    offset: int | None = None
    limit: int | None = None
    next_offset: int | None = Field(None, description="preview: the next page's offset (null: last page)")
    summaries_deleted: int | None = Field(None, description="summaries still quoting it after the rebuild")
    deleted: int | None = None
    redacted: int | None = None
    redacted_ids: list[str] | None = None
    deleted_erased: int | None = Field(None, description="deleted memories whose tombstones were erased")
