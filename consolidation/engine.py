"""The consolidation engine: runs tasks one run at a time across all processes, and records what happened."""

from __future__ import annotations

import logging
import math
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from .revisits import Dues, touches_expire_before
from .embedding import Embedder
from .reembedding import reembed
from . import metrics
from .errors import Conflict, InvalidInput, NotFound, RunCancelled, RunInProgress, StoreUnavailable
from .heartbeat import Heartbeat
from .lifecycle import Lifecycle
from .lifecycle.states import forgetting
from .heap import collection_paused, release_free_memory
from .neighbours import NeighbourGraph
from .passes import INCREMENTAL_TASKS, plan_pass
from .other_engine import automem_consolidation
from .settings import TASK_NAMES, Settings
from .stores import Stores
from .stores.changes import CHANGE
from .stores.control import ControlStore, Watermark, new_holder
from .stores.embedding_models import EmbeddingModels
from .stores.audit import AuditLog
from .stores.automem import AutomemRecords
from .stores.inspection import InspectionStore
from .stores.report_pages import ReportPages
from .stores.runs import RunStore
from .stores.hygiene import HygieneStore
from .stores.tombstones import TombstoneStore
from .subjects import KeptSubjects
from .summaries import Summarizer
from .reports import filed
from .tasks import TASKS, TaskContext, incremental_version
from .tasks.forget import prejudged as forget_prejudged
from .tasks.handoff import Handoff, handed_over
from .tasks.cluster import refresh as refresh_summaries
from .timeutil import epoch_or_nan, parse_iso, to_iso, utc_now
from .cadence import due_tasks, next_due
from .vector_space import VectorSpace

log = logging.getLogger(__name__)
AS_OF_TOLERANCE = timedelta(minutes=1)  # a run as of a time may name now, by a clock a little ahead
PROGRESS_WRITE_SECONDS = 1.0
CANCELLED_DURING = "cancelled by an administrator; stopped between chunks (what it wrote is whole)"
CANCELLED_BEFORE = "cancelled by an administrator before it started"
RUNS_KEPT = 100
QUEUED_LEASE_WAIT_SECONDS = 0.5  # how often a worker looks again for the lease a queued run waits for
AUTOMEM_CHECK_SECONDS = 600.0  # how often the scheduler looks for AutoMem's own consolidation (status: always)


@dataclass
class Run:
    """One consolidation run: which tasks, why, and how far it got."""

    id: str
    tasks: list[str]
    dry_run: bool
    trigger: str
    started_at: datetime
    current_task: str | None = None
    progress: dict[str, Any] = field(default_factory=dict)
    results: dict[str, Any] = field(default_factory=dict)
    lease_lost: bool = False
    scope: dict[str, str] | None = None  # a run of one scope; None: every memory
    graph: str | None = None
    full: bool = False  # the caller asked for full passes (dedup, creative, cluster otherwise may be incremental)
    cancelled: bool = False  # an administrator asked it to stop; it stopped at a safe point
    paged_bytes: int = 0  # what its tasks kept of their report lists, to be paged (stores/report_pages.py)
    handoff: Handoff | None = None  # forget's judgement of decay's read, for its forget (while it runs)
    as_of: datetime | None = None  # computed as of this time (None: now): the memories stored by then, that "now"

    @property
    def partial(self) -> bool:
        """A run of one scope, or as of another time: not the whole graph now, so it leaves the schedule, the
        watermarks and the due times to the runs that are."""
        return bool(self.scope) or self.as_of is not None

    def record(self) -> dict[str, Any]:
        return {"id": self.id, "graph": self.graph, "state": "running", "tasks": self.tasks, "dry_run": self.dry_run,
                "trigger": self.trigger, "started_at": to_iso(self.started_at),
                **({"scope": self.scope} if self.scope else {}), **({"full": True} if self.full else {}),
                **({"as_of": to_iso(self.as_of)} if self.as_of else {})}


# The tasks that compare memories' vectors with each other: never while a reembed leaves two models' in the store.
COMPARES_VECTORS = ("dedup", "creative", "cluster", "entities")


class HalfMoved(Exception):
    """The store holds vectors of two models until a reembed finishes."""


class ConsolidationEngine:
    """Owns the tasks, the run lease and the records; the API and the scheduler both go through it."""

    def __init__(self, settings: Settings, stores: Stores, embedder: Embedder, summarizer: Summarizer,
                 clock: Callable[[], datetime] = utc_now):
        self.settings = settings
        self.stores = stores
        self.clock = clock
        self.summarizer = summarizer
        falkor = stores.graph.falkor
        # Which model made the store's vectors, against the configured one (text work across two is refused).
        self.space = VectorSpace(EmbeddingModels(falkor), embedder.model)
        self.graph_name = falkor.graph_name
        self.control = ControlStore(falkor)
        self.runs = RunStore(falkor)
        self.pages = ReportPages(falkor)
        self.audit = AuditLog(falkor)
        self.lifecycle = Lifecycle(stores.graph, stores.vectors, TombstoneStore(falkor), HygieneStore(falkor, stores.graph.scoping),
                                   embedder)
        # The similarity graph, kept between runs: a task re-searches only the vectors that changed since.
        self.neighbours = NeighbourGraph(settings)
        # When decay and forget next need each memory (revisits.py), kept by this process's last pass of each.
        self.dues: dict[str, Dues] = {}
        # Who each memory is about, as clustering last read it here: a pass reads again only the changed texts.
        self.subjects = KeptSubjects()
        self.holder = new_holder()
        self._background: list[threading.Thread] = []
        self._background_lock = threading.Lock()
        self._unrecorded: list[tuple[str, Callable[[], None]]] = []
        self._unrecorded_lock = threading.Lock()
        self._running = 0  # runs executing now in this process
        self._automem_consolidating = False  # what the log last said of AutoMem's own consolidation
        self._automem_checked = -math.inf  # monotonic time of the scheduler's last look

    # --- running ---------------------------------------------------------------------------------

    def begin(self, tasks: Sequence[str], dry_run: bool, trigger: str, scope: dict[str, str] | None = None,
              full: bool = False, incremental: bool = False, as_of: datetime | None = None) -> Run:
        """Take the run lease and record a new run; RunInProgress if another run holds the lease. `scope`
        limits the run to the memories of one scope (checked before the lease is taken); `full` makes every
        task a full pass. A dry run is a preview of the whole store (a full pass) unless it asks for the
        `incremental` pass the schedule would take next."""
        run = self.plan(tasks, dry_run, trigger, scope, full, incremental, as_of)
        self._lease(run)
        self._open_record(run)
        return run

    def plan(self, tasks: Sequence[str], dry_run: bool, trigger: str, scope: dict[str, str] | None = None,
             full: bool = False, incremental: bool = False, as_of: datetime | None = None) -> Run:
        """A run as asked (its scope and time checked), not begun: no lease, no record. A run `as_of` a time
        (not later than now) reads the memories stored by then and takes that time as now."""
        if scope is not None:
            self.stores.graph.scoping.within(scope)
        now = self.clock()
        if as_of is not None and as_of > now + AS_OF_TOLERANCE:
            raise InvalidInput("as_of", f"must not be later than now ({to_iso(now)})")
        return Run(str(uuid.uuid4()), list(tasks), dry_run, trigger, now, graph=self.graph_name,
                   scope=scope, full=full or (dry_run and not incremental) or as_of is not None, as_of=as_of)

    def begin_queued(self, run_id: str, waiting: Callable[[], bool]) -> Run | None:
        """Begin a run a serving process queued (a worker's side): take the lease, waiting while another run
        holds it and `waiting()` says to go on, then mark the record running. None if the run is no longer
        queued (cancelled, or begun by another worker)."""
        while True:
            record = self.runs.get(run_id)
            if record is None or record.get("state") != "queued":
                return None
            as_of = parse_iso(record["as_of"]) if record.get("as_of") else None
            run = Run(run_id, list(record["tasks"]), bool(record["dry_run"]), record["trigger"], self.clock(),
                      graph=self.graph_name, scope=record.get("scope"), full=bool(record.get("full")), as_of=as_of)
            self.stores.ensure_ready()
            try:
                self._take_lease(run)
                break
            except RunInProgress:
                if not waiting():
                    return None
                time.sleep(QUEUED_LEASE_WAIT_SECONDS)
        if not self.runs.start_queued(run.id, to_iso(run.started_at), self.holder):
            self.control.release_lease(run.id)  # cancelled between our two looks
            return None
        self.runs.abandon_running(except_id=run.id, at=to_iso(run.started_at))
        return run

    def execute(self, run: Run) -> dict[str, Any]:
        """Run the tasks of a begun run in order, keeping the lease alive, then record and release it."""
        keeper = self._lease_keeper(run)
        keeper.start()
        with self._background_lock:
            self._running += 1
        try:
            self._mark_unmarked(run)
            self._drop_old_touches(run)
            run.handoff = Handoff(forget_prejudged) if handed_over(run.tasks) else None
            for task in run.tasks:
                if run.lease_lost:
                    run.results[task] = {"success": False, "error": "run lease lost to another process"}
                    continue
                if run.cancelled or self._cancel_asked(run):
                    run.cancelled = True
                    run.results[task] = {"success": False, "cancelled": True, "error": CANCELLED_BEFORE}
                    continue
                run.current_task = task
                run.results[task] = self._run_task(run, task)
        finally:
            keeper.stop()
            run.handoff = None
            result = self._finish(run)
            with self._background_lock:
                self._running -= 1
        return result

    def run(self, tasks: Sequence[str], dry_run: bool = False, trigger: str = "manual",
            scope: dict[str, str] | None = None, full: bool = False, incremental: bool = False,
            as_of: datetime | None = None) -> dict[str, Any]:
        return self.execute(self.begin(tasks, dry_run, trigger, scope, full, incremental, as_of))

    def execute_in_background(self, run: Run) -> threading.Thread:
        """Execute a begun run on its own thread, so an HTTP request can answer at once."""
        thread = threading.Thread(target=self.execute, args=(run,), name=f"run-{run.id[:8]}", daemon=True)
        with self._background_lock:
            self._background = [t for t in self._background if t.is_alive()] + [thread]
        thread.start()
        return thread

    def busy(self) -> bool:
        """Whether a run started here is still going (its graph must stay open)."""
        with self._background_lock:
            return any(thread.is_alive() for thread in self._background) or self._running > 0

    def wait_for_background(self, timeout: float | None = None) -> None:
        """Let runs started in the background finish (used at shutdown)."""
        with self._background_lock:
            threads = list(self._background)
        for thread in threads:
            thread.join(timeout)

    def reconcile(self, repair: bool) -> dict[str, Any]:
        """Compare the stores; a repair holds the run lease so it never races a consolidation's own writes."""
        if not repair:
            self.stores.ensure_ready()
            return self.lifecycle.reconcile(repair=False, now=self.clock())
        with self._lease_alone("reconcile"):
            return self.lifecycle.reconcile(repair=True, now=self.clock())

    def reembed(self, dry_run: bool, progress: Callable[[int, int], None] = lambda done, total: None
                ) -> dict[str, Any]:
        """Move the store to the configured model under the run lease (kept alive however long it takes), so no
        run reads vectors of two models and only one process re-embeds."""
        if dry_run:
            self.stores.ensure_ready()
            return reembed(self.space, self.lifecycle, True, progress)
        with self._lease_alone("reembed") as run:
            keeper = self._lease_keeper(run)
            keeper.start()
            try:
                return reembed(self.space, self.lifecycle, False, progress, stop=lambda: run.lease_lost)
            finally:
                keeper.stop()

    def complete_interrupted(self) -> int:
        """Finish deletions and merges a crash left pending, under the run lease: a live forget or dedup
        elsewhere has pending records too, and finishing them behind its back would race its own steps."""
        if not self.lifecycle.has_pending():
            return 0
        try:
            with self._lease_alone("recovery"):
                return self.lifecycle.complete_pending(self.clock()) + len(self.lifecycle.hygiene.complete_pending())
        except RunInProgress:
            return 0  # the holder (its own task) or a later tick completes them

    def refresh_summaries(self) -> int:
        """Rebuild the summaries a request took a member from (superseded, forgotten, purged): outside a run."""
        ctx = TaskContext(self.settings, self.stores.graph, self.lifecycle.hygiene, self.stores.vectors,
                          self.lifecycle, self.summarizer, now=self.clock(), neighbours=self.neighbours)
        return refresh_summaries(ctx)

    def run_due(self, now: datetime | None = None) -> dict[str, Any] | None:
        """Run whatever is due, once across all processes: the due check is repeated under the lease."""
        now = now or self.clock()
        intervals, tick = self.settings.task_intervals, self.settings.consolidation_tick_seconds
        control = self.control.state()
        if control.get("scheduler_paused") or not due_tasks(control, intervals, now, tick):
            return None
        try:
            run = self._leased_run([], dry_run=False, trigger="schedule")
        except RunInProgress:
            return None
        # Another process may have run the same tasks (or paused the schedule) since our first look.
        control = self.control.state()
        run.tasks = [] if control.get("scheduler_paused") else due_tasks(control, intervals, now, tick)
        if not run.tasks:
            self.control.release_lease(run.id)
            return None
        self._open_record(run)
        return self.execute(run)

    def cancel(self, run_id: str) -> dict[str, Any]:
        """Ask a running run (of any process) to stop at its next safe point; NotFound / Conflict otherwise."""
        at = to_iso(self.clock())
        if not self.runs.request_cancel(run_id, at):
            run = self.get_run(run_id)
            if run is None:
                raise NotFound(f"no consolidation run {run_id}")
            raise Conflict(f"run {run_id} is {run['state']}: only a running run can be cancelled", state=run["state"])
        self.audit.record("run_cancel_requested", at, run_id=run_id)
        return {"run_id": run_id, "cancel_requested_at": at}

    def pause(self, paused: bool) -> dict[str, Any]:
        """Pause or resume this graph's schedule for every process (runs asked by hand still run)."""
        at = to_iso(self.clock())
        self.control.set_paused(paused, at)
        self.audit.record("scheduler_paused" if paused else "scheduler_resumed", at)
        return {"graph": self.graph_name, "paused": paused, "at": at}

    def _cancel_asked(self, run: Run) -> bool:
        try:
            return self.runs.cancel_requested(run.id)
        except Exception:  # a store hiccup: the next safe point asks again
            return False

    # --- reading ---------------------------------------------------------------------------------

    def status(self) -> dict[str, Any]:
        reading = self.control.status_reading()
        control, lease, current = reading.state, reading.lease, reading.current_run
        now = self.clock()
        return {
            "graph": self.graph_name,
            **{f"last_{task}": control.get(f"last_{task}") for task in TASK_NAMES},
            "next_due": self._next_due(control, now),
            "history": control["history"],
            "current_run": _public_run(current) if current else None,
            "lease": _public_lease(lease),
            "store_counts": self._counts(reading.memory_count),
            "paused": bool(control.get("scheduler_paused")), "paused_at": control.get("scheduler_paused_at"),
            "forgetting": forgetting(self.settings.consolidation_archive_threshold,
                                     self.settings.consolidation_delete_threshold,
                                     self.settings.consolidation_forget_interval_seconds,
                                     self.settings.consolidation_delete_after_archived_days),
            "automem": self.automem(reading.automem),
            "embedding": self.space.state_from(control).public(),
        }

    def automem(self, traces: tuple[list, list] | None = None) -> dict[str, Any]:
        """Whether AutoMem's own consolidation writes to this graph too, and how to turn it off; the log says
        so once when it starts to (and once when it stops), not on every look."""
        read = traces if traces is not None else AutomemRecords(self.stores.graph.falkor).read()
        found = automem_consolidation(*read, self.clock())
        if found["consolidating"] != self._automem_consolidating:
            self._automem_consolidating = found["consolidating"]
            if found["consolidating"]:
                log.warning("consolidation sees another engine graph=%s detail=%s", self.graph_name,
                            found["warning"])
            else:
                log.info("consolidation no longer sees AutoMem's own consolidation graph=%s", self.graph_name)
        return found

    def watch_automem(self) -> None:
        """The scheduler's look for AutoMem's own consolidation, every AUTOMEM_CHECK_SECONDS at most."""
        if time.monotonic() - self._automem_checked >= AUTOMEM_CHECK_SECONDS:
            self._automem_checked = time.monotonic()
            self.automem()

    def schedule(self, status: dict[str, Any] | None = None) -> dict[str, Any]:
        """This graph's line in the overview of every graph: last successes, next due times, the run going on
        (from its `status` when the caller has just read it: one round trip less)."""
        if status is None:
            control, lease = self.control.state_and_lease()
            status = {**{f"last_{task}": control.get(f"last_{task}") for task in TASK_NAMES},
                      "next_due": self._next_due(control, self.clock()), "lease": _public_lease(lease),
                      "paused": bool(control.get("scheduler_paused"))}
        lease = status["lease"]
        return {"graph": self.graph_name, "last": {task: status[f"last_{task}"] for task in TASK_NAMES},
                "next_due": status["next_due"], "paused": status["paused"],
                "current_run": {key: lease[key] for key in ("run_id", "task", "holder")} if lease else None}

    def get_run(self, run_id: str) -> dict[str, Any] | None:
        """A run's record; one still marked running without the lease was left by a process that died."""
        run = self.runs.get(run_id)
        if run and run.get("state") == "running":
            lease = self.control.current_lease()
            if lease is None or lease.run_id != run_id:
                run = self.runs.get(run_id)  # it may have finished between the two reads
                if run and run.get("state") == "running":
                    run["state"] = "abandoned"
        return _public_run(run) if run else None

    def flush_unrecorded(self) -> None:
        """Write the run records that a store outage kept us from writing, oldest first."""
        with self._unrecorded_lock:
            pending, self._unrecorded = self._unrecorded, []
        for index, (what, write) in enumerate(pending):
            try:
                write()
            except StoreUnavailable:
                with self._unrecorded_lock:
                    self._unrecorded[:0] = pending[index:]
                return
            except Exception:
                log.exception("consolidation could not write a deferred record what=%s", what)
        if pending:
            log.info("consolidation wrote deferred records count=%s", len(pending))

    # --- internals -------------------------------------------------------------------------------

    def _leased_run(self, tasks: Sequence[str], dry_run: bool, trigger: str) -> Run:
        run = self.plan(tasks, dry_run, trigger)
        self._lease(run)
        return run

    def _lease(self, run: Run) -> None:
        """The lease for a planned run, once the stores answer; RunInProgress if another run holds it."""
        self.stores.ensure_ready()
        self.flush_unrecorded()  # may release a lease an outage kept us from releasing
        self._take_lease(run)

    def _take_lease(self, run: Run) -> None:
        """The run lease for `run`; RunInProgress naming the run that holds it otherwise."""
        ttl = self.settings.consolidation_lease_seconds
        first = run.tasks[0] if run.tasks else None
        if self.control.acquire_lease(self.holder, run.id, first, ttl) is None:
            holder = self.control.current_lease()
            raise RunInProgress(holder.run_id if holder else None, holder.task if holder else None)

    @contextmanager
    def _lease_alone(self, trigger: str) -> Iterator[Run]:
        """Hold the run lease around work that is not a recorded run (repair, recovery)."""
        run = self._leased_run([], dry_run=False, trigger=trigger)
        try:
            yield run
        finally:
            self.control.release_lease(run.id)

    def _lease_keeper(self, run: Run) -> Heartbeat:
        ttl = self.settings.consolidation_lease_seconds

        def lost() -> None:
            run.lease_lost = True

        return Heartbeat(f"lease-{run.id[:8]}", ttl, lambda: self.control.renew_lease(run.id, run.current_task, ttl),
                         lost)

    def _open_record(self, run: Run) -> None:
        try:
            # We hold the lease, so a run still recorded as running belongs to a process that died.
            self.runs.abandon_running(except_id=run.id, at=to_iso(run.started_at))
            self.runs.create({**run.record(), "holder": self.holder})
        except Exception:
            self.control.release_lease(run.id)
            raise

    def _run_task(self, run: Run, task: str) -> dict[str, Any]:
        graph, hygiene = self.stores.graph, self.lifecycle.hygiene
        if run.scope:
            graph, hygiene = graph.within(run.scope), hygiene.within(run.scope)
        if run.as_of is not None:
            graph, hygiene = graph.stored_by(to_iso(run.as_of)), hygiene.stored_by(to_iso(run.as_of))
        control = self.control.state()  # at the task's start: its watermark, and the change counter now
        now = run.as_of or self.clock()
        plan = plan_pass(task, control, now, self.settings.consolidation_full_pass_interval_seconds,
                         incremental_version(task, self.settings), run.full, bool(run.scope))
        ctx = TaskContext(self.settings, graph, hygiene, self.stores.vectors, self.lifecycle, self.summarizer,
                          now=now, neighbours=self.neighbours, progress=ProgressWriter(self.runs, run, task),
                          since=plan.since, change_counter=int(control.get(CHANGE) or 0), dues=self.dues,
                          subjects=self.subjects, handoff=run.handoff)
        started = time.monotonic()
        try:
            if task in COMPARES_VECTORS and control.get("reembed_target") is not None:
                raise HalfMoved(f"a reembed to {control['reembed_target']} has not finished: {task} compares no "
                                "vectors of two models (run `consolidation reembed` to finish it)")
            # The task may fall back to a full pass (its report then says so, overriding the plan's words).
            with collection_paused():
                report = {"pass": plan.name, "pass_reason": plan.reason, **TASKS[task](ctx, run.dry_run),
                          "success": True}
                # A clustering later in this run rebuilds every summary from the current members anyway.
                later = run.tasks[run.tasks.index(task) + 1:] if task in run.tasks else []
                rebuilt = 0 if run.dry_run or "cluster" in later else refresh_summaries(ctx)
                if rebuilt:
                    report["summaries_rebuilt"] = rebuilt
        except RunCancelled:  # at a safe point (between chunks): what was written is whole
            run.cancelled = True
            report = {"pass": plan.name, "success": False, "cancelled": True, "error": CANCELLED_DURING}
        except HalfMoved as exc:
            report = {"pass": plan.name, "success": False, "error": str(exc)}
        except Exception as exc:  # a failing task is recorded and retried later; it must not end the run
            log.exception("consolidation %s failed run=%s", task, run.id)
            report = {"pass": plan.name, "success": False, "error": f"{type(exc).__name__}: {exc}"}
        report = self._filed(run, task, report)
        release_free_memory()
        report["seconds"] = round(time.monotonic() - started, 3)
        metrics.record_task(task, report, run.dry_run)
        log.info("consolidation %s done graph=%s processed=%s seconds=%.3f success=%s dry_run=%s pass=%s run=%s",
                 task, run.graph, report.get("memories_processed", 0), report["seconds"], report["success"],
                 run.dry_run, report["pass"], run.id)
        # The schedule is the whole graph's: one scope's run leaves it; a cancelled task is no failure to retry.
        if not run.dry_run and not run.partial and not report.get("cancelled"):
            self._record(run, task, ctx.now, report, _watermark(task, control, report, ctx.now, self.settings))
        return report

    def _filed(self, run: Run, task: str, report: dict[str, Any]) -> dict[str, Any]:
        """The task's report as the run record keeps it; its whole lists kept apart, to be paged, within what the
        run may still keep of CONSOLIDATION_REPORT_KEPT_BYTES."""
        report, lists = filed(report, self.settings.consolidation_report_limit)
        most = self.settings.consolidation_report_kept_bytes - run.paged_bytes
        try:
            run.paged_bytes += self.pages.save(run.id, task, lists, most)
        except Exception:  # the report still lists its first items; only paging past them is lost
            log.exception("consolidation could not keep the report's lists task=%s run=%s", task, run.id)
        return report

    def _mark_unmarked(self, run: Run) -> None:
        """Before a whole-graph run, give the memories another program wrote a change marker, so the tasks'
        watermarks cover them from now on (a dry run writes nothing: its tasks count them as changed)."""
        if run.dry_run or run.partial:
            return
        try:
            marked = self.stores.graph.mark_unmarked()
        except Exception:  # the tasks still treat unmarked memories as changed; the next run marks them
            log.exception("consolidation could not mark unmarked memories run=%s", run.id)
            return
        if marked:
            log.info("consolidation marked memories written without a change marker count=%s run=%s", marked,
                     run.id)

    def _drop_old_touches(self, run: Run) -> None:
        """Let go of the Touch nodes no incremental decay or forget can need any more (revisits.py)."""
        if run.dry_run or run.partial:
            return
        try:
            self.stores.graph.drop_touches(
                touches_expire_before(self.clock(), self.settings.consolidation_full_pass_interval_seconds))
        except Exception:  # they only take room; the next run drops them
            log.exception("consolidation could not drop old touches run=%s", run.id)

    def _record(self, run: Run, task: str, ran_at: datetime, report: dict[str, Any],
                watermark: Watermark | None = None) -> None:
        entry = {"task": task, "ran_at": to_iso(ran_at), "memories_processed": report.get("memories_processed", 0),
                 "duration_seconds": report["seconds"], "success": report["success"], "run_id": run.id,
                 "trigger": run.trigger}
        if task in INCREMENTAL_TASKS:
            entry["full_pass"] = report.get("pass") == "full"
        if not report["success"]:
            entry["error"] = report["error"]
        limit = self.settings.consolidation_history_limit
        self._write_or_defer(f"history of {task}", lambda: self.control.record_task(task, entry, limit, watermark))

    def _finish(self, run: Run) -> dict[str, Any]:
        finished = self.clock()
        success = all(r.get("success") for r in run.results.values())
        state = "cancelled" if run.cancelled else "succeeded" if success else "failed"
        summary = {"state": state, "finished_at": to_iso(finished),
                   "result": run.results, "progress": run.progress, **self._state_counts(run)}

        def close_record() -> None:
            self.runs.update(run.id, summary)
            self.runs.prune(RUNS_KEPT)
            self.control.release_lease(run.id)  # after the record: a finished run never looks abandoned
            self.pages.prune(self.settings.consolidation_report_kept_bytes)

        self._write_or_defer("end of run", close_record)
        # The record as GET /consolidate/runs/<id> shows it, from what this process knows (the store may be down).
        return _public_run({**run.record(), "holder": self.holder, "current_task": run.current_task, **summary})

    def _write_or_defer(self, what: str, write: Callable[[], None]) -> None:
        """Write a record now; if the store is down, keep it for the first tick after it is back.
        (An unreleased lease meanwhile expires on its own, so nobody waits for the store to return.)"""
        try:
            write()
        except StoreUnavailable as exc:
            log.warning("consolidation will write a record when the store is back what=%s detail=%s", what,
                        exc.detail)
            with self._unrecorded_lock:
                self._unrecorded.append((what, write))
        except Exception:
            log.exception("consolidation could not write a record what=%s", what)

    def _next_due(self, control: dict[str, Any], now: datetime) -> dict[str, str | None]:
        intervals, tick = self.settings.task_intervals, self.settings.consolidation_tick_seconds
        result = {}
        for task in TASK_NAMES:
            due = next_due(task, control, intervals[task], tick)
            result[task] = None if due is None else to_iso(max(due, now))
        return result

    def _state_counts(self, run: Run) -> dict[str, Any]:
        """After a real whole-graph run: how many memories are in each state (the trends are drawn from them)."""
        if run.dry_run or run.partial:
            return {}
        try:
            return {"counts": InspectionStore(self.stores.graph.falkor).state_counts()}
        except Exception:  # a trend point is informative; the run's record matters more
            log.warning("consolidation could not count memory states run=%s", run.id)
            return {}

    def _counts(self, graph: int) -> dict[str, Any]:
        vectors = self.stores.vectors.count()
        return {"graph_memories": graph, "vector_points": vectors, "in_sync": graph == vectors,
                "difference": graph - vectors}


class ProgressWriter:
    """A task's progress callback: kept in memory, written to the run record at most once a second."""

    def __init__(self, runs: RunStore, run: Run, task: str):
        self.runs, self.run, self.task = runs, run, task
        self.started = time.monotonic()
        self.last_write = 0.0

    def __call__(self, processed: int, total: int) -> None:
        now = time.monotonic()
        self.run.progress = {"task": self.task, "processed": processed, "total": total,
                             "elapsed_seconds": round(now - self.started, 3)}
        if now - self.last_write >= PROGRESS_WRITE_SECONDS or processed >= total:
            self.last_write = now
            try:
                asked = self.runs.update_progress(self.run.id, {"progress": self.run.progress,
                                                                 "current_task": self.task})
            except Exception:  # progress is informative; losing one update must not fail the task
                log.warning("consolidation could not write progress run=%s", self.run.id)
                return
            if asked:  # a task reports progress between chunks only: a safe point to stop at
                raise RunCancelled(self.run.id)


def _public_lease(lease) -> dict[str, Any] | None:
    if lease is None:
        return None
    return {"holder": lease.holder, "run_id": lease.run_id, "task": lease.task, "expires_at": lease.expires_at}


def _watermark(task: str, control: dict[str, Any], report: dict[str, Any], ran_at: datetime,
               settings: Settings) -> Watermark | None:
    """What a successful run of an incremental task leaves for its next run: the change counter as it was at
    the task's start (changes written during the task are seen next time), and when it was a full pass."""
    if task not in INCREMENTAL_TASKS or not report["success"]:
        return None
    full = report.get("pass") == "full"
    return Watermark(int(control.get(CHANGE) or 0), incremental_version(task, settings),
                     to_iso(ran_at) if full else None)


# The fields of a run as every answer shows it (GET /consolidate/runs/<id>, POST /consolidate with wait, the
# CLI, status's current run): one shape, a field not set yet is null.
RUN_FIELDS = ("graph", "state", "tasks", "dry_run", "trigger", "scope", "full", "as_of", "started_at", "queued_at",
              "finished_at", "cancel_requested_at", "holder", "current_task", "progress", "counts", "error", "result")


def _public_run(run: dict[str, Any]) -> dict[str, Any]:
    """A run record as answered: every field of RUN_FIELDS, and two read from them that clients of the earlier
    answer of POST /consolidate check: `success` (it succeeded) and `duration_seconds` (null until it ends)."""
    seconds = epoch_or_nan(run.get("finished_at")) - epoch_or_nan(run.get("started_at"))
    return {"run_id": run.get("id"), **{name: run.get(name) for name in RUN_FIELDS},
            "full": bool(run.get("full")), "dry_run": bool(run.get("dry_run")),
            "duration_seconds": None if math.isnan(seconds) else round(seconds, 3),
            "success": run.get("state") == "succeeded"}
