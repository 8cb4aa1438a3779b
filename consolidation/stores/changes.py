"""Change markers: each write that matters to dedup, cluster or creative stamps what it touches with the next
number of a sequence kept on the control node, so "changed since a watermark" is one indexed read.

What counts as a change: a memory created, its content or fields overwritten (import), archived or deleted
(forget), merged or un-merged (dedup, restore), superseded, restored, re-embedded (reconcile), or its relevance
crossing the line above which clustering and creative consider it. What does not: a score that moves on the
same side of that line, or a use (access count, last access): they change daily for everyone, and would make
every memory look changed.

Why a sequence and not a clock: FalkorDB runs write queries one at a time, so a number taken from the control
node inside the writing query is ordered exactly like the writes. A reader that sees the counter at N has seen
every write numbered N or less; a write still running gets N + 1 or more and is found by the next reader. A
wall-clock stamp taken while a query runs can be older than a reader's watermark yet commit after it, and be
missed for good.
"""

from __future__ import annotations

from .control import control_node

# The property holding the number of a memory's (or a tombstone's) last change.
CHANGE = "change_seq"

# The property holding the number of the last write that added or took away one of a memory's relationships
# without changing the memory: decay and forget count relationships, so they read such a memory again; for dedup
# and clustering (which compare contents) it is no change. The number comes from the same sequence.
TOUCH = "touch_seq"

# Prefix of a write query: takes the next number as `change` (one per query, so one per written chunk).
NEXT_CHANGE = (f"MERGE {control_node('chg')} SET chg.{CHANGE} = coalesce(chg.{CHANGE}, 0) + 1 "
               f"WITH chg.{CHANGE} AS change ")

# Stamp the memory bound to `m` (as a SET item).
STAMP = f"m.{CHANGE} = change"



def touch(*variables: str) -> str:
    """SET items stamping these nodes (a null one is left alone) as touched by the write numbered `change`."""
    return ", ".join(f"{variable}.{TOUCH} = change" for variable in variables)


# Before the memory bound to `m` is detached and deleted, its neighbours lose a relationship: they are touched.
TOUCH_NEIGHBOURS = (f"WITH m, change OPTIONAL MATCH (m)--(x) WITH m, change, collect(x) AS xs "
                    f"FOREACH (y IN xs | SET {touch('y')})")

# What the service keeps on a memory node for itself (its change number, and the fact terms dedup stores so an
# incremental run finds memories by term): not the memory's fields, so reads of a memory leave them out.
BOOKKEEPING = frozenset({CHANGE, TOUCH, "fact_terms", "fact_anchors", "fact_least", "fact_stamp"})


def without_bookkeeping(properties: dict) -> dict:
    return {name: value for name, value in properties.items() if name not in BOOKKEEPING}


def changed_after(variable: str = "m", stamp: str = CHANGE) -> str:
    """A condition true for a node changed (or, with stamp=TOUCH, touched) after the `$since` watermark (an
    indexed range read)."""
    return f"{variable}.{stamp} > $since"
