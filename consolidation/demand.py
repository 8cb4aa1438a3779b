"""Whether anyone is waiting on the stores: requests being answered, counted in a small file every process serving
the same data directory maps, so that runs and bulk writes go at full speed while nobody waits and give way while
someone does."""

from __future__ import annotations

import fcntl
import logging
import mmap
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np

log = logging.getLogger(__name__)

FILE_NAME = "requests-in-flight"
# One slot a process: its pid, its requests being answered, and when its last one ended (CLOCK_MONOTONIC,
# one clock for the whole machine). A killed process's slot is read as empty, and taken by the next process.
SLOT = np.dtype([("pid", "<i8"), ("in_flight", "<i8"), ("last_left", "<f8")])
SLOTS = 128
# A request that just ended is followed by the next within a second at any steady rate a client keeps (a
# dashboard polls every few seconds, a load of 20/s every 50 ms): writes stay paced between them, instead of
# starting a long chunk the next request would wait behind.
LINGER_SECONDS = 1.0
# The longest a run's next store call waits for requests in flight: a run can wait, a request's client is
# waiting; but a request that lasts (an import) must not stop the run.
GIVE_WAY_SECONDS = 0.05
GIVE_WAY_STEP_SECONDS = 0.001


_opened: dict[Path, Demand] = {}
_opening = threading.Lock()


class Demand:
    """Requests being answered now, here and in every process that maps the same file (`path`; None: this
    process's requests only). The web layer counts them in and out; writers ask whether anyone waits."""

    @classmethod
    def at(cls, directory: Path) -> Demand:
        """The demand of every process serving `directory`: one object a process (its apps and stores share it)."""
        path = (directory / FILE_NAME).resolve()
        with _opening:
            if path not in _opened:
                _opened[path] = cls(path)
            return _opened[path]

    def __init__(self, path: Path | None = None):
        self.path = path
        self._slots = self._map(path)
        self._mine: int | None = None  # this process's slot
        self._pid = 0
        self._lock = threading.Lock()
        self._thread = threading.local()  # whether the calling thread is answering a request itself

    @staticmethod
    def _map(path: Path | None) -> np.ndarray:
        if path is None:
            return np.zeros(SLOTS, dtype=SLOT)
        path.parent.mkdir(parents=True, exist_ok=True)
        descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            with _locked(descriptor):
                if os.fstat(descriptor).st_size < SLOTS * SLOT.itemsize:
                    os.ftruncate(descriptor, SLOTS * SLOT.itemsize)
            shared = mmap.mmap(descriptor, SLOTS * SLOT.itemsize)
        finally:
            os.close(descriptor)  # the mapping keeps the file
        return np.frombuffer(shared, dtype=SLOT, count=SLOTS)

    def enter(self) -> None:
        """A request of the calling thread begins."""
        self._thread.inside = getattr(self._thread, "inside", 0) + 1
        with self._lock:
            self._slots["in_flight"][self._own_slot()] += 1

    def leave(self) -> None:
        """That request has been answered."""
        self._thread.inside = max(0, getattr(self._thread, "inside", 0) - 1)
        with self._lock:
            mine = self._own_slot()
            self._slots["in_flight"][mine] = max(0, int(self._slots["in_flight"][mine]) - 1)
            self._slots["last_left"][mine] = time.monotonic()

    @contextmanager
    def aside(self) -> Iterator[None]:
        """The calling thread's request waits on something that is no store call (a run it asked for): counted
        out meanwhile, and in again after."""
        inside = self._inside()
        for _ in range(inside):
            self.leave()
        try:
            yield
        finally:
            for _ in range(inside):
                self.enter()

    def in_flight(self) -> int:
        """Requests being answered now by any process, the calling thread's own left out."""
        return self._others(self._live())

    def waiting(self) -> bool:
        """Whether anyone waits on the stores: a request in flight, or one that ended under LINGER_SECONDS ago."""
        live = self._live()
        return self._others(live) > 0 or bool((live["last_left"] > time.monotonic() - LINGER_SECONDS).any())

    def _others(self, live: np.ndarray) -> int:
        """The requests in flight in these slots, the calling thread's own left out."""
        return int(live["in_flight"].sum()) - self._inside()

    def give_way(self, bulk: bool = False) -> None:
        """Wait (at most GIVE_WAY_SECONDS) while requests are in flight: for a run's store calls, never a
        request's own, unless it is a `bulk` one (an import) that the others should not queue behind."""
        if self._inside() and not bulk:
            return
        deadline = time.monotonic() + GIVE_WAY_SECONDS
        while self.in_flight() > 0 and time.monotonic() < deadline:
            time.sleep(GIVE_WAY_STEP_SECONDS)

    def inside_request(self) -> bool:
        """Whether the calling thread is answering a request (its own store calls never give way)."""
        return self._inside() > 0

    def _inside(self) -> int:
        return getattr(self._thread, "inside", 0)

    def _live(self) -> np.ndarray:
        """The slots of processes alive now (a copy: other processes write the file meanwhile)."""
        slots = self._slots[self._slots["pid"] != 0].copy()
        if len(slots) == 0:
            return slots
        own = os.getpid()
        alive = np.array([pid == own or _alive(int(pid)) for pid in slots["pid"]], dtype=bool)
        return slots[alive]

    def _own_slot(self) -> int:
        """This process's slot (claimed on first use, and again in a forked child)."""
        pid = os.getpid()
        if self._mine is None or self._pid != pid:
            self._mine, self._pid = self._claim(pid), pid
        return self._mine

    def _claim(self, pid: int) -> int:
        if self.path is None:
            self._slots[0] = (pid, 0, 0.0)
            return 0
        descriptor = os.open(self.path, os.O_RDWR)
        try:
            with _locked(descriptor):
                pids = self._slots["pid"]
                free = [index for index, holder in enumerate(pids)
                        if holder == 0 or not _alive(int(holder))]
                if not free:
                    raise RuntimeError(f"all {SLOTS} slots of {self.path} are taken by live processes")
                self._slots[free[0]] = (pid, 0, 0.0)
                return free[0]
        finally:
            os.close(descriptor)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process by that pid: alive
    return True


class _locked:
    """An exclusive lock on an open file, between processes (the slots are claimed under it)."""

    def __init__(self, descriptor: int):
        self.descriptor = descriptor

    def __enter__(self) -> None:
        fcntl.flock(self.descriptor, fcntl.LOCK_EX)

    def __exit__(self, *exc) -> None:
        fcntl.flock(self.descriptor, fcntl.LOCK_UN)
