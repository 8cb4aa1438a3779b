"""The store's embedding model against the configured one: known, recorded, and no text work across two models."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .errors import EmbeddingModelMismatch
from .stores.embedding_models import EmbeddingModels

# How long a process trusts what it read of the record: a reembed on another replica is seen within this.
CACHE_SECONDS = 2.0


@dataclass(frozen=True)
class ModelState:
    store_model: str
    known: bool  # False: no vector names its model (AutoMem's or a client's), so it counts as the configured one
    configured_model: str
    moving_to: str | None  # a reembed began moving the store to this model and has not finished

    @property
    def matches(self) -> bool:
        return self.store_model == self.configured_model and self.moving_to is None

    def public(self) -> dict[str, Any]:
        return {"store_model": self.store_model, "store_model_known": self.known,
                "configured_model": self.configured_model, "matches": self.matches,
                "reembed_in_progress_to": self.moving_to}


class VectorSpace:
    """Answers which model the store is embedded with; refuses text work when the configured model is another."""

    def __init__(self, models: EmbeddingModels, configured_model: str,
                 clock: Callable[[], float] = time.monotonic):
        self.models, self.configured_model, self.clock = models, configured_model, clock
        self._read: tuple[float, ModelState] | None = None
        self._looked_at_memories = False
        self._lock = threading.Lock()

    def state(self) -> ModelState:
        with self._lock:
            if self._read is not None and self.clock() - self._read[0] < CACHE_SECONDS:
                return self._read[1]
        state = self._state()
        with self._lock:
            self._read = (self.clock(), state)
        return state

    def state_from(self, control: dict[str, Any]) -> ModelState:
        """The state as the control fields a caller has just read say it (status reads them anyway), without a
        query of its own: a store with no recorded model is what this process last found it to be."""
        recorded, moving = control.get("embedding_model"), control.get("reembed_target")
        if recorded is not None:
            return ModelState(recorded, True, self.configured_model, moving)
        with self._lock:
            last = self._read
        return last[1] if last is not None else self.state()

    def _state(self) -> ModelState:
        recorded, moving = self.models.recorded()
        if recorded is None and not self._looked_at_memories:
            # A store written before its model was recorded: what its memories name is recorded now. Looked for
            # once per process (a scan when none names one): later records come from the control node.
            self._looked_at_memories = True
            recorded = self.models.named_by_memories()
            if recorded is not None:
                self.models.record(recorded, moving)
        if recorded is None:
            return ModelState(self.configured_model, False, self.configured_model, moving)
        return ModelState(recorded, True, self.configured_model, moving)

    def check_text_work(self, what: str) -> None:
        """EmbeddingModelMismatch when `what` (a text recall, a text write) would put the configured model's
        vector beside another model's."""
        state = self.state()
        if state.matches:
            return
        if state.moving_to is not None and state.moving_to == self.configured_model:
            detail = (f"{what} needs the store's vectors to be one model's: a reembed to {state.moving_to} has not "
                      f"finished (run `consolidation reembed` or POST /admin/reembed again)")
        else:
            detail = (f"{what} would be embedded by {self.configured_model}, but the store's vectors were made by "
                      f"{state.store_model}: their similarities would mean nothing. Send vectors of "
                      f"{state.store_model} (`embedding`), configure that model again, or move the store to "
                      f"{self.configured_model} with `consolidation reembed`")
        raise EmbeddingModelMismatch(state.store_model, self.configured_model, detail)

    def record_use(self) -> None:
        """Before the service writes a vector of its own: a store with no recorded model takes the configured one."""
        state = self.state()
        if not state.known:
            self.models.record(self.configured_model, state.moving_to)
            self.forget()

    def forget(self) -> None:
        """Read the record again at the next question (and what the memories name: a test's store may change)."""
        with self._lock:
            self._read = None
            self._looked_at_memories = False
