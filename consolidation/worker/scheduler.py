"""The scheduler: every tick, for each served graph, catch up on what an outage interrupted, then run what is due
(on its own daemon thread inline; a worker process calls its tick between queued runs)."""

from __future__ import annotations

import logging
import random
import threading
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..cadence import due_tasks
from ..errors import StoreUnavailable
from ..stores.control import ControlStore
from ..timeutil import utc_now

if TYPE_CHECKING:
    from ..registry import GraphRegistry, GraphServices

log = logging.getLogger(__name__)


class ConsolidationScheduler:
    """A daemon thread that waits on an Event between ticks, so stop() ends it at once; run_once is the tick."""

    def __init__(self, graphs: GraphRegistry, tick_seconds: float, clock: Callable[[], datetime] = utc_now):
        self.graphs = graphs
        self.tick_seconds = tick_seconds
        self.clock = clock
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.last_tick_at: datetime | None = None
        self.last_error: str | None = None

    def start(self) -> None:
        if self.alive:
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, name="consolidation-scheduler", daemon=True)
        self._thread.start()
        log.info("consolidation scheduler started tick_seconds=%s", self.tick_seconds)

    def stop(self, timeout: float | None = 30.0) -> None:
        """Ask the thread to end and wait for it; a run in progress finishes its current task first."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None
        log.info("consolidation scheduler stopped")

    @property
    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def run_once(self, now: datetime | None = None) -> list[dict[str, Any]]:
        """One tick over every graph; the runs it made. Replicas sharing the graphs take them in their own
        random order, so while one runs a graph (holding its lease) the others go on to other due graphs."""
        self.last_tick_at = now or self.clock()
        errors: list[str] = []
        try:
            names = self.graphs.refresh()
        except StoreUnavailable as exc:
            names = [graph.name for graph in self.graphs.opened()]
            errors.append(f"graph list: {exc.detail}")
        names = random.sample(names, len(names))
        results = []
        for name in names:
            if self._stop.is_set():
                break
            result = self._tick_graph(name, now, errors)
            if result is not None:
                results.append(result)
        self.last_error = "; ".join(errors) or None
        self.graphs.close_idle()
        return results

    def _wants_attention(self, name: str, now: datetime) -> bool:
        """Whether a graph not open here has a task due or work a crash left pending: read from FalkorDB alone,
        so a tick over a thousand quiet graphs opens none of their vector stores."""
        store = ControlStore(self.graphs.connection().for_graph(name))
        control = store.state()
        settings = self.graphs.settings
        if not control.get("scheduler_paused") and due_tasks(control, settings.task_intervals, now,
                                                                settings.consolidation_tick_seconds):
            return True
        return store.work_left_pending()

    def _tick_graph(self, name: str, now: datetime | None, errors: list[str]) -> dict[str, Any] | None:
        """One graph's part of a tick; a store that is down or still loading is waited for, never recorded."""
        graph: GraphServices | None = None
        try:
            if not self.graphs.is_open(name) and not self._wants_attention(name, now or self.clock()):
                return None  # a closed graph with nothing due or pending stays closed
            graph = self.graphs.get(name)
            engine = graph.engine
            engine.stores.ensure_ready()
            engine.flush_unrecorded()
            engine.watch_automem()
            engine.complete_interrupted()
            return engine.run_due(now)
        except StoreUnavailable as exc:
            errors.append(self._named(name, exc.detail))
            if graph is not None:
                graph.stores.mark_stale()
            log.warning("consolidation tick skipped: store unavailable graph=%s store=%s detail=%s", name,
                        exc.store, exc.detail)
        except Exception as exc:  # the thread must survive anything a tick throws
            errors.append(self._named(name, f"{type(exc).__name__}: {exc}"))
            log.exception("consolidation tick failed graph=%s", name)
        return None

    def _named(self, name: str, detail: str) -> str:
        # One graph (the usual deployment): the error as it always read; several: which graph it concerns.
        return detail if len(self.graphs.names()) <= 1 else f"{name}: {detail}"

    def _loop(self) -> None:
        # No run at start-up: the first look at the schedule is one tick after the thread starts.
        while not self._stop.wait(self.tick_seconds):
            self.run_once()
