"""A thread that renews a claim in the graph (the run lease, a store binding) every third of its lifetime."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

log = logging.getLogger(__name__)


class Heartbeat:
    """Calls `renew()` every ttl/3 until stopped; `renew()` returning False means the claim was lost for good."""

    def __init__(self, name: str, ttl: float, renew: Callable[[], bool], on_lost: Callable[[], None]):
        self.name, self.ttl, self.renew, self.on_lost = name, ttl, renew, on_lost
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()

    def _loop(self) -> None:
        while not self._stop.wait(self.ttl / 3):
            try:
                if not self.renew():
                    log.error("consolidation lost its claim heartbeat=%s", self.name)
                    self.on_lost()
                    return
            except Exception:  # a store hiccup: try again next time, the claim outlives a few misses
                log.warning("consolidation could not renew its claim heartbeat=%s", self.name)
