"""What every task receives: the settings, the stores, the moment of the run, its pass and a progress callback."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np

from ..revisits import Dues
from ..lifecycle import Lifecycle
from ..neighbours import NeighbourGraph
from ..settings import Settings
from ..stores.graph import GraphStore
from ..stores.hygiene import HygieneStore
from ..stores.vectors import VectorStore
from ..subjects import KeptSubjects
from ..summaries import Summarizer
from .handoff import Handoff


def _ignore_progress(processed: int, total: int) -> None:
    return None


@dataclass
class TaskContext:
    settings: Settings
    graph: GraphStore
    hygiene: HygieneStore
    vectors: VectorStore
    lifecycle: Lifecycle
    summarizer: Summarizer
    now: datetime
    neighbours: NeighbourGraph
    progress: Callable[[int, int], None] = field(default=_ignore_progress)
    # An incremental pass: the watermark, whose later changes (and their neighbourhood) the task works on.
    # None: a full pass over every memory.
    since: int | None = None
    # The change counter at the task's start, and the due times decay and forget keep in this process.
    change_counter: int = 0
    dues: dict[str, Dues] = field(default_factory=dict)
    # Who each memory is about, as clustering last read it in this process (by change number and vector).
    subjects: KeptSubjects = field(default_factory=KeptSubjects)
    # Forget's judgement of decay's full read, for forget later in the same run (tasks/handoff.py); None: no
    # such pair in the run.
    handoff: Handoff | None = None


def positions_in(listed: Sequence[str], ids: Sequence[str]) -> np.ndarray:
    """Where each of `ids` is in `listed` (every one of them is): a listing read from the graph lined up with
    the vectors read for it, which leave out memories without one."""
    if len(listed) == len(ids) and list(listed) == list(ids):  # every one had a vector: no lookups
        return np.arange(len(ids), dtype=np.int64)
    position = dict(zip(listed, range(len(listed))))
    return np.fromiter(map(position.__getitem__, ids), dtype=np.int64, count=len(ids))


def capped(name: str, items: list[Any], limit: int) -> dict[str, Any]:
    """A long list in a report: `name` holds the first `limit` items and `name_total` says how many there were."""
    return {name: items[:limit], f"{name}_total": len(items)}
