"""How a serving process has a run computed (registry.Runner): on its own thread (inline), or queued for a worker
process."""

from __future__ import annotations

import time
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from ..demand import Demand
from ..engine import ConsolidationEngine, Run
from ..errors import NoWorker, RunInProgress
from ..timeutil import to_iso
from .queue import QueuedRun, RunQueue

FINISHED = frozenset({"succeeded", "failed", "cancelled", "abandoned"})
POLL_SECONDS = 0.1
# A worker child takes a few seconds to start: a run asked meanwhile waits this long for one to announce itself.
WORKER_START_SECONDS = 30.0


class InlineRuns:
    """Runs computed in this process: a request with wait runs it on its own thread."""

    def __init__(self, engine: ConsolidationEngine):
        self.engine = engine

    def start(self, tasks, dry_run, trigger, scope, full, incremental, as_of=None) -> Run:
        return self.engine.begin(tasks, dry_run, trigger=trigger, scope=scope, full=full, incremental=incremental,
                                 as_of=as_of)

    def wait(self, run: Run) -> dict[str, Any]:
        return self.engine.execute(run)

    def detach(self, run: Run) -> str:
        self.engine.execute_in_background(run)
        return "running"


class QueuedRuns:
    """Runs computed by worker processes: recorded as queued in the graph, pushed on the run queue, and
    followed through their record (progress and cancel work as for any run)."""

    def __init__(self, engine: ConsolidationEngine, queue: RunQueue, demand: Demand | None = None):
        self.engine, self.queue = engine, queue
        self.demand = demand or Demand()

    def start(self, tasks, dry_run, trigger, scope, full, incremental, as_of=None) -> Run:
        """Queue a run; RunInProgress (409) while another runs or waits, NoWorker (503) if no worker is alive."""
        engine = self.engine
        run = engine.plan(tasks, dry_run, trigger, scope, full, incremental, as_of)
        engine.stores.ensure_ready()
        lease = engine.control.current_lease()
        if lease is not None:
            raise RunInProgress(lease.run_id, lease.task)
        self._await_a_worker()
        # A run queued longer ago than a lease lasts lost its worker on the way (it died holding the item).
        stale = run.started_at - timedelta(seconds=engine.settings.consolidation_lease_seconds)
        other = engine.control.queue_run(run.record(), since=to_iso(stale))
        if other is not None:
            raise RunInProgress(other)
        self.queue.push(QueuedRun(engine.graph_name, run.id))
        return run

    def wait(self, run: Run) -> dict[str, Any]:
        """The finished run's record, as an inline run answers it; the request only sleeps meanwhile, counted
        out of the demand (a worker's run would otherwise give way to the very request waiting for it)."""
        with self.demand.aside():
            while True:
                record = self.engine.get_run(run.id) or {}
                if record.get("state") in FINISHED:
                    return record
                if record.get("state") == "queued" and not self.queue.workers():
                    self._await_a_worker()
                time.sleep(POLL_SECONDS)

    def detach(self, run: Run) -> str:
        return "queued"

    def _await_a_worker(self) -> None:
        deadline = time.monotonic() + WORKER_START_SECONDS
        while not self.queue.workers():
            if time.monotonic() > deadline:
                raise NoWorker("no consolidation worker is alive to run it: CONSOLIDATION_WORKER=external needs "
                               "`consolidation worker` running beside the service (child: the service restarts "
                               "its own; see its log)")
            time.sleep(POLL_SECONDS * 5)

