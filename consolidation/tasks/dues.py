"""Incremental decay and forget: which memories a pass reads, and the due times it keeps for the next one."""

from __future__ import annotations

import numpy as np

from ..revisits import Dues, Lookup
from ..timeutil import to_iso
from .context import TaskContext

# With more of the memories due than this share, seeking each by node id costs more than reading them all.
SEEK_SHARE = 0.25
SEEK_FLOOR = 1000  # seeking fewer than this is quick, whatever share of the memories they are
NO_DUES = "no due times are kept in this process (it started after the last pass, or another replica took it)"
STALE_DUES = "the due times kept are older than CONSOLIDATION_FULL_PASS_INTERVAL_SECONDS"
MOSTLY_DUE = "more than a quarter of the memories are due: reading them all is faster"


def lookup_for(ctx: TaskContext, task: str) -> tuple[Lookup | None, str | None]:
    """What an incremental pass of `task` reads, or None for a full pass with the reason it became one (None
    when the plan was full already)."""
    if ctx.since is None:
        return None, None
    dues = ctx.dues.get(task)
    if dues is None:
        return None, NO_DUES
    if (ctx.now - dues.taken_at).total_seconds() > ctx.settings.consolidation_full_pass_interval_seconds:
        return None, STALE_DUES
    due = dues.due_by(ctx.now)
    if not worth_seeking(due.size, dues.node_ids.size):
        return None, MOSTLY_DUE
    return Lookup(dues.change, to_iso(dues.used_since()), due), None


def worth_seeking(asked: int, memories: int) -> bool:
    """Whether reading `asked` of the memories by node id beats reading every one."""
    return asked <= SEEK_SHARE * memories or asked <= SEEK_FLOOR


def keep_dues(ctx: TaskContext, task: str, lookup: Lookup | None, node_ids: np.ndarray, due: np.ndarray) -> None:
    """After a real whole-graph pass at the time it runs: the due times it found (for every memory, or for those it read)."""
    if ctx.graph.scoping.only or ctx.graph.scoping.until:  # one scope's pass, or one as of a time: the other
        return  # memories' times would be lost, and the times kept are as of the run's time
    if lookup is None:
        ctx.dues[task] = Dues.kept(node_ids, due, ctx.change_counter, ctx.now)
    else:
        read = np.concatenate([lookup.node_ids, np.asarray(node_ids, np.int64)])
        ctx.dues[task] = ctx.dues[task].updated(read, node_ids, due, ctx.change_counter, ctx.now)


def fell_back(reason: str | None) -> dict[str, str]:
    """The report's words when a planned incremental pass became a full one."""
    return {"pass": "full", "pass_reason": reason} if reason else {}
