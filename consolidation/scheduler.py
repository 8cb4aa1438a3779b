"""The background scheduler thread: every tick, catch up on what an outage interrupted, then run what is due."""

from __future__ import annotations

import logging
import threading
from datetime import datetime
from typing import Any

from .engine import ConsolidationEngine
from .errors import StoreUnavailable

log = logging.getLogger(__name__)


class ConsolidationScheduler:
    """A daemon thread that waits on an Event between ticks, so stop() ends it at once; run_once is the tick."""

    def __init__(self, engine: ConsolidationEngine, tick_seconds: float):
        self.engine = engine
        self.tick_seconds = tick_seconds
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

    def run_once(self, now: datetime | None = None) -> dict[str, Any] | None:
        """One tick; a store that is down or still loading is waited for, never recorded as a run."""
        self.last_tick_at = now or self.engine.clock()
        try:
            self.engine.stores.ensure_ready()
            self.engine.flush_unrecorded()
            self.engine.complete_interrupted()
            result = self.engine.run_due(now)
            self.last_error = None
            return result
        except StoreUnavailable as exc:
            self.last_error = exc.detail
            self.engine.stores.mark_stale()
            log.warning("consolidation tick skipped: store unavailable store=%s detail=%s", exc.store, exc.detail)
        except Exception as exc:  # the thread must survive anything a tick throws
            self.last_error = f"{type(exc).__name__}: {exc}"
            log.exception("consolidation tick failed")
        return None

    def _loop(self) -> None:
        # No run at start-up: the first look at the schedule is one tick after the thread starts.
        while not self._stop.wait(self.tick_seconds):
            self.run_once()
