"""Change markers: each write that matters to dedup, cluster or creative stamps what it touches with the next
number of a sequence kept on the control node, so "changed since a watermark" is one indexed read.

What counts as a change: a memory created, its content or fields overwritten (import), archived or deleted
(forget), merged or un-merged (dedup, restore), superseded, restored, re-embedded (reconcile), or its relevance
crossing the line above which clustering and creative consider it. What does not: a score that moves on the
same side of that line, or a use (access count, last access): they change daily for everyone, and would make
every memory look changed. A relationship added or taken away (which decay and forget count) is a touch, not
a change: the write leaves a Touch node naming the memories at its ends, numbered from the same sequence.

Why a sequence and not a clock: FalkorDB runs write queries one at a time, so a number taken from the control
node inside the writing query is ordered exactly like the writes. A reader that sees the counter at N has seen
every write numbered N or less; a write still running gets N + 1 or more and is found by the next reader. A
wall-clock stamp taken while a query runs can be older than a reader's watermark yet commit after it, and be
missed for good.
"""

from __future__ import annotations

from .control import control_node
from .fact_terms import LEGACY_PROPERTIES, TERMS_OF_MEMORY

# The property holding the number of a memory's (or a tombstone's) last change.
CHANGE = "change_seq"

# A write that adds or takes away relationships without changing the memories at their ends leaves one node of
# this label naming those memories (by internal id) with its change number: decay and forget count
# relationships, so they read those memories again; for dedup and clustering (which compare contents) it is no
# change. One node per written chunk, not a property set on each memory: a cluster's first MetaPattern write
# would otherwise set one on every member (15 µs each, 15 s at a million memories).
TOUCH = "Touch"

# Prefix of a write query: takes the next number as `change` (one per query, so one per written chunk).
NEXT_CHANGE = (f"MERGE {control_node('chg')} SET chg.{CHANGE} = coalesce(chg.{CHANGE}, 0) + 1 "
               f"WITH chg.{CHANGE} AS change ")

# Stamp the memory bound to `m` (as a SET item).
STAMP = f"m.{CHANGE} = change"


def touched(*lists: str, counting: str | None = None) -> str:
    """The end of a write query: a Touch node with the internal ids in these Cypher lists (aggregations over the
    written rows, like ids_of), stamped with the write's change number and time (ms). With `counting` (an
    aggregation), the query returns it (no row if nothing was touched)."""
    count = f"{counting} AS counted, " if counting else ""
    return (f"WITH change, {count}{' + '.join(lists)} AS touched WHERE size(touched) > 0 "
            f"CREATE (:{TOUCH} {{change: change, nodes: touched, at: timestamp()}})"
            + (" RETURN counted" if counting else ""))


def ids_of(*variables: str) -> str:
    """The internal ids of the nodes bound to these variables over all rows (a null one left out)."""
    return " + ".join(f"collect(DISTINCT id({variable}))" for variable in variables)


# The end of a query that detaches and deletes the memory bound to `m`: its neighbours lose a relationship, and its
# own node id is touched too, so a pass that judged it from an earlier read looks again and finds it gone; its
# stored fact terms go with it.
DELETE_TOUCHING_NEIGHBOURS = ("OPTIONAL MATCH (m)--(x) WITH change, m, collect(id(x)) AS neighbours "
                              "WITH change, m, neighbours + CASE WHEN m IS NULL THEN [] ELSE [id(m)] END AS neighbours "
                              + TERMS_OF_MEMORY + "DETACH DELETE m, f "
                              "WITH change, collect(neighbours) AS lists "
                              + touched("reduce(acc = [], part IN lists | acc + part)"))

# A summary one of whose members leaves (superseded, merged, archived, deleted) is rebuilt from the members still
# current. The mark is set before the member leaves: a crash in between leaves a rebuild to do (harmless when the
# member stayed), never a summary that still quotes a memory no longer current.
MEMBERS_LEFT = "members_left"
MARK_SUMMARIES = ("UNWIND $rows AS id MATCH (:Memory {id: id})<-[:SUMMARIZES]-(p:MetaPattern) "
                  f"SET p.{MEMBERS_LEFT} = true")

# What the service keeps on a memory node for itself (its change number, the stamp of the fact terms dedup stores
# beside it, and where older versions stored the terms themselves): not the memory's fields, so reads of a memory
# leave them out.
BOOKKEEPING = frozenset({CHANGE, "fact_stamp", MEMBERS_LEFT, *LEGACY_PROPERTIES})


def without_bookkeeping(properties: dict) -> dict:
    return {name: value for name, value in properties.items() if name not in BOOKKEEPING}


def changed_after(variable: str = "m") -> str:
    """A condition true for a node changed after the `$since` watermark (an indexed range read)."""
    return f"{variable}.{CHANGE} > $since"
