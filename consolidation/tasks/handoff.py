"""One read of every memory for decay and forget in one run: forget judges decay's read as soon as it is made, and
its own pass reads only what that judgement leaves to it.

Reading every memory is mostly the reply (~5 s at a million memories, each task). From decay's read (the
memories it scores), forget (forget.prejudged) keeps only the node ids and due times of those it cannot act on
within `until` (an hour): a few bytes each, so nothing large stays in memory while dedup and clustering run. Its
own pass, if it comes before `until`, reads afresh, as an incremental pass would:
- every memory decay does not score (archived, or under decay's importance threshold: forget keeps their scores);
- every memory decay read that forget could act on by then (below a line with no relationship counted) or that
  is merged into another (forget never acts on a memory it has not read afresh);
- every memory changed or touched after the change number at decay's read (this run's merges, supersessions,
  summaries and deletions among them, and new memories), or used since then (AutoMem's recall stamps no change).
The rest it counts as kept. Their due times come from their relevance alone, before their protections are read:
never later than a full read would give, so an incremental pass reads such a memory at worst early. What another
program changes without a change number after decay's read (an importance, say) is seen by the next full pass,
as it would be had it come a moment after forget's own read: a full pass sees the graph as of the start of its
run.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np

from ..revisits import USE_MARGIN, Lookup
from ..scoring import ScoringInputs
from ..timeutil import to_iso


@dataclass(frozen=True)
class Prejudged:
    """Forget's judgement of decay's read: the memories (node ids) it could not act on before `until`, with the
    time each is next due; those it reads again (`asked`); the change counter and the time before decay's read."""

    node_ids: np.ndarray
    due: np.ndarray
    asked: np.ndarray
    change: int
    taken_at: datetime
    until: datetime

    def lookup(self) -> Lookup:
        """What forget reads afresh: the memories asked for, and every one changed, touched or used since."""
        return Lookup(self.change, to_iso(self.taken_at - USE_MARGIN), self.asked)

    def besides(self, read: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The node ids and due times of the memories judged from decay's read that forget did not read again."""
        left = ~np.isin(self.node_ids, read)
        return self.node_ids[left], self.due[left]


@dataclass
class Handoff:
    """What decay's full pass of a run leaves for forget's later in the same run: `judge` (forget.prejudged) turns
    decay's read into a Prejudged as soon as it is made, and the read itself goes."""

    judge: Callable[[Any, ScoringInputs, np.ndarray], Prejudged]
    prejudged: Prejudged | None = None

    def keep(self, ctx: Any, inputs: ScoringInputs, merged: np.ndarray) -> None:
        """Decay's read (the memories it scores, and which are merged into another), judged at once."""
        self.prejudged = self.judge(ctx, inputs, merged)

    def take(self, now: datetime) -> Prejudged | None:
        """The judgement, if it still holds at `now`; let go of either way."""
        prejudged, self.prejudged = self.prejudged, None
        return prejudged if prejudged is not None and now <= prejudged.until else None


def handed_over(tasks: list[str]) -> bool:
    """Whether a run of these tasks (in order) has decay's read to hand to its forget."""
    return "decay" in tasks and "forget" in tasks[tasks.index("decay") + 1:]
