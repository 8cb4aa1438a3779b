"""The worker process's loop (Worker: queued runs and the schedule, apart from the web server; its command line
is `consolidation worker`, in cli.py) and the serving process's supervisor of the worker child it starts beside it
(ChildWorker)."""

from __future__ import annotations

import logging
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..demand import Demand
from ..errors import StoreUnavailable
from ..heartbeat import Heartbeat
from ..settings import child_environment
from ..stores.control import new_holder
from ..timeutil import to_iso, utc_now
from .queue import QueuedRun, RunQueue
from .vectors import VectorServer

if TYPE_CHECKING:
    from ..registry import GraphRegistry
    from ..settings import Settings
    from .scheduler import ConsolidationScheduler

log = logging.getLogger(__name__)

BEAT_SECONDS = 6.0  # a worker's heartbeat lives this long; renewed every third of it, even during a run
POP_WAIT_SECONDS = 1.0  # the longest a worker waits on the queue before it looks at its parent and the clock
RESTART_SECONDS = (1, 2, 5, 10, 30)  # how long the supervisor waits before restarting a child that died
STOP_SECONDS = 30.0
# The child shares the machine with the process serving HTTP: it runs at a lower CPU priority, and its numeric
# libraries (OpenBLAS, faiss's OpenMP) on one thread, so a run never takes every core from the requests.
CHILD_NICENESS = 10
ONE_THREAD = {name: "1" for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}


@dataclass(frozen=True)
class WorkerLinks:
    """How a worker child reaches what its parent holds: the embedded FalkorDB's socket, the vector server."""

    falkordb_socket: str | None = None
    vectors_socket: Path | None = None
    authkey: bytes | None = None


class Worker:
    """A worker's loop: runs queued over HTTP as they come, the schedule every tick, a heartbeat meanwhile."""

    def __init__(self, settings: Settings, graphs: GraphRegistry, scheduler: ConsolidationScheduler,
                 parent_pid: int | None = None):
        self.settings, self.graphs, self.scheduler = settings, graphs, scheduler
        self.queue = RunQueue(graphs.connection())
        self.holder = new_holder()
        self.parent_pid = parent_pid
        self.started_at = to_iso(utc_now())
        self.runs = 0
        self._stop = threading.Event()

    def stop(self) -> None:
        self._stop.set()

    def run(self) -> None:
        settings, scheduler = self.settings, self.scheduler
        self._beat()
        heartbeat = Heartbeat("worker-heartbeat", BEAT_SECONDS, self._beat, lambda: None)
        heartbeat.start()
        log.info("consolidation worker started holder=%s parent=%s", self.holder, self.parent_pid)
        next_tick = time.monotonic() + settings.consolidation_tick_seconds
        if self.parent_pid is not None:
            threading.Thread(target=self._follow_parent, name="parent-watch", daemon=True).start()
        try:
            while not self._stop.is_set() and self._parent_alive():
                queued = self._pop(min(POP_WAIT_SECONDS, max(0.0, next_tick - time.monotonic())))
                if queued is not None:
                    self._run_queued(queued)
                if time.monotonic() >= next_tick:
                    if settings.consolidation_scheduler_enabled:
                        scheduler.run_once()
                    next_tick = time.monotonic() + settings.consolidation_tick_seconds
        finally:
            heartbeat.stop()
            try:
                self.queue.leave(self.holder)
            except StoreUnavailable:
                pass
            log.info("consolidation worker stopped holder=%s runs=%s", self.holder, self.runs)

    def _beat(self) -> bool:
        scheduler = self.scheduler
        facts: dict[str, Any] = {
            "holder": self.holder, "pid": os.getpid(), "started_at": self.started_at, "runs": self.runs,
            "scheduler_enabled": self.settings.consolidation_scheduler_enabled,
            "last_tick_at": to_iso(scheduler.last_tick_at) if scheduler.last_tick_at else None,
            "last_error": scheduler.last_error}
        self.queue.beat(self.holder, facts, BEAT_SECONDS)
        return True

    def _pop(self, wait_seconds: float) -> QueuedRun | None:
        try:
            return self.queue.pop(wait_seconds)
        except StoreUnavailable as exc:
            log.warning("consolidation worker cannot read the run queue detail=%s", exc.detail)
            self._stop.wait(POP_WAIT_SECONDS)
            return None

    def _run_queued(self, queued: QueuedRun) -> None:
        try:
            engine = self.graphs.get(queued.graph, create=False).engine
            run = engine.begin_queued(queued.run_id, waiting=lambda: not self._stop.is_set())
            if run is None:
                if self._stop.is_set():
                    self.queue.push(queued)  # still queued: for the next worker
                return
            self.runs += 1
            engine.execute(run)
        except Exception:  # the loop must survive anything a run throws; the record says what happened
            log.exception("consolidation worker could not run graph=%s run=%s", queued.graph, queued.run_id)

    def _follow_parent(self) -> None:
        """A child ends with its parent, even in the middle of a run: what it holds (the embedded stores, the
        vectors it is fed) went with the parent, and a run stopped anywhere is completed or abandoned by the
        rules of a crash (records first, the lease expires)."""
        while not self._stop.wait(1.0):
            if not self._parent_alive():
                log.error("consolidation worker's parent is gone; stopping now parent=%s", self.parent_pid)
                os._exit(3)

    def _parent_alive(self) -> bool:
        return self.parent_pid is None or os.getppid() == self.parent_pid


class ChildWorker:
    """The worker child of a serving process: started beside it, restarted if it dies, stopped with it. With
    embedded vectors it is fed through a VectorServer; with embedded FalkorDB it attaches to its socket."""

    def __init__(self, settings: Settings, graphs: GraphRegistry, demand: Demand | None = None):
        self.settings, self.graphs = settings, graphs
        self.demand = demand or Demand()  # the requests in flight: the vector server's calls wait for them
        self.process: subprocess.Popen | None = None
        self.restarts = 0
        self._stopping = threading.Event()
        self._directory: str | None = None
        self._server: VectorServer | None = None
        self._links = WorkerLinks()

    def start(self) -> None:
        settings, graphs = self.settings, self.graphs
        authkey = secrets.token_bytes(32)
        vectors_socket = None
        if settings.qdrant_url is None:
            # A short path (Unix socket paths end at 107 bytes), this user's only.
            self._directory = tempfile.mkdtemp(prefix="consolidation-")
            vectors_socket = Path(self._directory) / "vectors.sock"
            self._server = VectorServer(vectors_socket, authkey, lambda name: graphs.get(name).stores.vectors,
                                        self.demand)
        falkordb_socket = graphs.connection().socket_path if settings.falkordb_host is None else None
        self._links = WorkerLinks(falkordb_socket, vectors_socket, authkey)
        self._spawn()
        threading.Thread(target=self._supervise, name="worker-supervisor", daemon=True).start()

    def stop(self, timeout: float = STOP_SECONDS) -> None:
        """Ask the child to stop (it finishes the run it is in), kill it after `timeout`, close the server."""
        self._stopping.set()
        process = self.process
        if process is not None and process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        if self._server is not None:
            self._server.close()
        if self._directory is not None:
            shutil.rmtree(self._directory, ignore_errors=True)

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None else None

    def _spawn(self) -> None:
        links = self._links
        command = [sys.executable, "-m", "consolidation", "worker", "--parent-pid", str(os.getpid())]
        if links.falkordb_socket:
            command += ["--falkordb-socket", links.falkordb_socket]
        if links.vectors_socket:
            command += ["--vectors-socket", str(links.vectors_socket)]
        # The environment passed on whole (the child reads its settings from it), its numeric libraries capped.
        process = subprocess.Popen(command, stdin=subprocess.PIPE, env=child_environment(ONE_THREAD))
        assert process.stdin is not None
        process.stdin.write((links.authkey or b"").hex().encode() + b"\n")  # the key never shows in `ps`
        process.stdin.close()
        self.process = process
        log.info("consolidation worker child started pid=%s", process.pid)

    def _supervise(self) -> None:
        while not self._stopping.is_set():
            process = self.process
            if process is None or process.poll() is None:
                self._stopping.wait(1.0)
                continue
            if self._stopping.is_set():
                return
            delay = RESTART_SECONDS[min(self.restarts, len(RESTART_SECONDS) - 1)]
            log.error("consolidation worker child exited code=%s; restarting in %ss", process.returncode, delay)
            if self._stopping.wait(delay):
                return
            self.restarts += 1
            self._spawn()

