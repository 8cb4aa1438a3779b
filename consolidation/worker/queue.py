"""The queue of runs asked over HTTP and the workers' heartbeats: plain Redis keys on the FalkorDB server."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

from ..stores.falkor import Falkor

QUEUE_KEY = "consolidation:run-queue"
WORKER_KEY = "consolidation:worker:"


@dataclass(frozen=True)
class QueuedRun:
    """A run an administrator asked for, recorded (state queued) in `graph`, waiting for a worker."""

    graph: str
    run_id: str


class RunQueue:
    """One list for every graph of the server: the serving processes push, the workers pop (one pop gets an
    item, so one worker runs it; the run lease still decides when). Workers announce themselves with keys that
    expire, which is how the serving processes know one is there."""

    def __init__(self, falkor: Falkor):
        self.falkor = falkor
        self._seen: tuple[float, list[dict[str, Any]]] | None = None  # (monotonic time, workers) last read

    def push(self, run: QueuedRun) -> None:
        self.falkor.command("RPUSH", QUEUE_KEY, json.dumps({"graph": run.graph, "run_id": run.run_id}))

    def pop(self, wait_seconds: float) -> QueuedRun | None:
        """The oldest queued run, waiting up to `wait_seconds` (whole seconds or less) for one."""
        reply = self.falkor.command("BLPOP", QUEUE_KEY, max(wait_seconds, 0.01))
        if not reply:
            return None
        item = json.loads(reply[1])
        return QueuedRun(item["graph"], item["run_id"])

    def beat(self, holder: str, facts: dict[str, Any], ttl_seconds: float) -> None:
        """Say this worker is alive for the next `ttl_seconds`, with what it last did."""
        self.falkor.command("SET", WORKER_KEY + holder, json.dumps(facts), "PX", int(ttl_seconds * 1000))

    def leave(self, holder: str) -> None:
        self.falkor.command("DEL", WORKER_KEY + holder)

    def workers(self, max_age_seconds: float = 0.0) -> list[dict[str, Any]]:
        """The workers alive now (their last heartbeat has not expired), by name; a list read less than
        `max_age_seconds` ago is answered again (heartbeats are seconds apart, and each read is two round trips
        that wait behind a run's writes)."""
        seen = self._seen
        if seen is not None and time.monotonic() - seen[0] < max_age_seconds:
            return seen[1]
        workers = self._read_workers()
        self._seen = (time.monotonic(), workers)
        return workers

    def _read_workers(self) -> list[dict[str, Any]]:
        keys, cursor = [], "0"
        while True:
            cursor, found = self.falkor.command("SCAN", cursor, "MATCH", WORKER_KEY + "*", "COUNT", 1000)
            keys += found
            if str(cursor) == "0":
                break
        keys.sort()
        values = self.falkor.command("MGET", *keys) if keys else []
        return [json.loads(value) for value in values if value]
