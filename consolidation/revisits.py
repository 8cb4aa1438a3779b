"""When decay or forget next has to look at each memory, kept in this process between runs (pure).

Decay rewrites a score only when it moved by more than epsilon, and forget acts only when a relevance fell below
a threshold and nothing protects the memory. While a memory's inputs stay as they are, both happen at a time
known in advance (scoring.days_until_below). A pass that read a memory keeps that time; a later pass reads the
memories whose time came, and those whose inputs may have moved since the pass that kept the times: changed or
touched (a change number after it) or used (a last access after it). It then does exactly what a full pass would.

The times live in this process, not in the graph: writing one more property on every memory would cost a full
pass as much as its own writes. A process without them (started anew, or another replica took the last pass)
takes a full pass, which keeps them.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

import numpy as np

# Uses are found by comparing ISO-8601 texts, which orders UTC times (as this service and AutoMem write them)
# correctly; this margin covers another writer's clock running a little behind. A use written with another
# offset may compare as older than it is and be missed: it only raises the score, so the memory's old due time
# comes earlier than its true one, and the pass that reads it then sees the use (forget never acts on a
# memory it has not read afresh). Until then, its stored score is lower than a full pass would write.
USE_MARGIN = timedelta(minutes=15)
# Touch nodes are kept this much longer than the full-pass interval (for clocks that disagree), then dropped:
# due times older than the interval are not used, so no pass needs them.
TOUCH_MARGIN = timedelta(days=1)


def touches_expire_before(now: datetime, full_pass_interval_seconds: float) -> float:
    """The time (ms since the epoch, as Touch nodes carry it) before which Touch nodes are no longer needed."""
    return (now - timedelta(seconds=full_pass_interval_seconds) - TOUCH_MARGIN).timestamp() * 1000


@dataclass(frozen=True)
class Lookup:
    """The memories an incremental decay or forget reads: changed or touched after the change number `since`,
    used at or after `used_since` (ISO time), or named by internal node id (those due)."""

    since: int
    used_since: str
    node_ids: np.ndarray


@dataclass(frozen=True)
class Dues:
    """Memories by internal node id with the epoch second each is next due; which changes the times have seen
    (the change counter at the start of the pass that kept them) and when that pass ran."""

    node_ids: np.ndarray
    due: np.ndarray
    change: int
    taken_at: datetime

    @classmethod
    def kept(cls, node_ids: np.ndarray, due: np.ndarray, change: int, taken_at: datetime) -> Dues:
        """A full pass's times (a memory that is never due is left out)."""
        finite = np.isfinite(due)
        return cls(np.asarray(node_ids, np.int64)[finite], np.asarray(due, np.float64)[finite], change, taken_at)

    def due_by(self, moment: datetime) -> np.ndarray:
        """The node ids due at `moment`."""
        return self.node_ids[self.due <= moment.timestamp()]

    def used_since(self) -> datetime:
        return self.taken_at - USE_MARGIN

    def updated(self, read: np.ndarray, node_ids: np.ndarray, due: np.ndarray, change: int,
                taken_at: datetime) -> Dues:
        """After an incremental pass: the memories it read (`read`, node ids) get the times it found for those
        still there (`node_ids`, `due`); the others keep theirs."""
        keep = ~np.isin(self.node_ids, np.asarray(read, np.int64))
        fresh = Dues.kept(node_ids, due, change, taken_at)
        return Dues(np.concatenate([self.node_ids[keep], fresh.node_ids]),
                    np.concatenate([self.due[keep], fresh.due]), change, taken_at)
