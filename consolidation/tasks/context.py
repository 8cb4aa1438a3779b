"""What every task receives: the settings, the stores, the moment of the run, its pass and a progress callback."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ..lifecycle import Lifecycle
from ..neighbours import NeighbourGraph
from ..settings import Settings
from ..stores.graph import GraphStore
from ..stores.hygiene import HygieneStore
from ..stores.vectors import VectorStore
from ..summaries import Summarizer


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


def capped(name: str, items: list[Any], limit: int) -> dict[str, Any]:
    """A long list in a report: `name` holds the first `limit` items and `name_total` says how many there were."""
    return {name: items[:limit], f"{name}_total": len(items)}
