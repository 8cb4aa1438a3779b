"""A memory's one state, the transitions between states as a table, and the invariants every store must keep."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from ..errors import Conflict
from ..timeutil import parse_iso, to_iso

ACTIVE, ARCHIVED, MERGED, DELETED = "active", "archived", "merged", "deleted"
STATES = (ACTIVE, ARCHIVED, MERGED, DELETED)
UNCHANGED = "unchanged"  # a transition that marks a memory without moving it (supersede)
GONE = "gone"  # past the retention period: nothing left to restore


@dataclass(frozen=True)
class Transition:
    """What moves a memory from one of `sources` to `target`, and who does it."""

    name: str
    sources: frozenset[str]
    target: str
    by: str


def _transition(name: str, sources: Iterable[str], target: str, by: str) -> Transition:
    return Transition(name, frozenset(sources), target, by)


# The whole lifecycle. A merged memory is archived too (out of recall) and carries merged_into; superseded is a
# mark (superseded_by) an active or archived memory carries, not a state of its own.
TRANSITIONS: dict[str, Transition] = {t.name: t for t in (
    _transition("archive", [ACTIVE], ARCHIVED, "forget, below the archive threshold, or below the delete threshold "
                "before the dwell (or a cluster summary retired)"),
    _transition("merge", [ACTIVE], MERGED, "dedup: a duplicate goes into its canonical (MergeRecord 'done')"),
    _transition("supersede", [ACTIVE, ARCHIVED], UNCHANGED, "dedup: a newer memory changes it (superseded_by)"),
    _transition("delete", [ACTIVE, ARCHIVED, MERGED], DELETED,
                "forget, below the delete threshold once archived for CONSOLIDATION_DELETE_AFTER_ARCHIVED_DAYS "
                "(0: at once, active too); a merged duplicate leaves with its canonical (MergeRecord 'deleted'); "
                "a tombstone keeps it"),
    _transition("restore", [ARCHIVED, MERGED, DELETED], ACTIVE,
                "an administrator: a use, held for CONSOLIDATION_RESTORE_HOLD_DAYS (MergeRecord 'restored'); a deleted "
                "duplicate comes back merged into its canonical, as it was (MergeRecord 'done')"),
    _transition("expire", [DELETED], GONE, "forget, once the tombstone is older than the retention period"),
)}

# The state of a duplicate each MergeRecord state stands for ('pending': the merge is being written).
RECORD_STATES = {"done": MERGED, "deleted": DELETED}


def state_of(memory: Mapping[str, Any]) -> str:
    """The state of a stored memory node (a deleted one has no node: its tombstone says DELETED)."""
    if memory.get("merged_into"):
        return MERGED
    return ARCHIVED if memory.get("archived") else ACTIVE


def check(transition: str, memory_id: str, state: str) -> None:
    """Conflict unless the transition may start from this state."""
    allowed = TRANSITIONS[transition]
    if state not in allowed.sources:
        starts = ", ".join(sorted(allowed.sources))
        raise Conflict(f"memory {memory_id} is {state}: {transition} applies to a memory that is {starts}",
                       state=state)


def held(memory: Mapping[str, Any], now: datetime) -> bool:
    """Whether a restore still holds the memory out of every automatic archive, delete and merge."""
    until = memory.get("held_until")
    return bool(until) and parse_iso(str(until)) > now


def held_until(now: datetime, hold_days: float) -> str:
    return to_iso(now + timedelta(days=hold_days))


def restorable_until(deleted_at: str, retention_days: float) -> str:
    return to_iso(parse_iso(deleted_at) + timedelta(days=retention_days))


def violations(memories: Iterable[Mapping[str, Any]], records: Iterable[Mapping[str, Any]],
               links: Iterable[tuple[str, str, str]], scope_of: Mapping[str, str]) -> list[str]:
    """Every broken invariant, in words (empty when the lifecycle is consistent).

    `memories` are the stored nodes' properties, `records` the MergeRecords (the newest per duplicate decides),
    `links` (relation, from id, to id) the edges between memories, `scope_of` each memory's scope key.
    - merged if and only if merged_into is set, and then archived: nothing active points merged_into anywhere;
      a merged memory's canonical is stored and not merged itself (a duplicate leaves with its canonical);
    - a merge record's state is its duplicate's state ('done': merged, 'deleted': no node), and a merged
      memory's newest record is 'done';
    - no merge, supersession or edge spans two scopes;
    - supersessions form chains (chain_violations).
    """
    nodes = {m["id"]: m for m in memories}
    links = list(links)
    return _node_violations(nodes, scope_of) + _record_violations(nodes, records) + chain_violations(nodes, links) + [
        f"{relation} {start} -> {end} spans two scopes" for relation, start, end in links
        if start in scope_of and end in scope_of and scope_of[start] != scope_of[end]]


def chain_violations(nodes: Mapping[str, Mapping[str, Any]], links: Iterable[tuple[str, str, str]]) -> list[str]:
    """What breaks the chains supersessions form (`nodes` by id, `links` (relation, from id, to id)):
    - a SUPERSEDES edge between stored memories leaves its target marked superseded_by, and AutoMem's mirror
      (EVOLVED_INTO the other way) beside it;
    - a memory marked superseded_by a stored memory has a SUPERSEDES edge from it, or from the memory it was
      merged into (a merge hands its edges to the canonical), to itself or to its own canonical;
    - no memory supersedes itself, and following superseded_by (and merged_into) never comes back to the start:
      the newest fact of a chain is one memory."""
    links = list(links)
    edges = {(start, end) for relation, start, end in links if relation == "SUPERSEDES"}
    mirrors = {(end, start) for relation, start, end in links if relation == "EVOLVED_INTO"}
    found = [f"SUPERSEDES {n} -> {o} but {o} is not marked superseded" for n, o in sorted(edges)
             if n in nodes and o in nodes and not nodes[o].get("superseded_by")]
    found += [f"SUPERSEDES {n} -> {o} has no EVOLVED_INTO beside it" for n, o in sorted(edges - mirrors)
              if n in nodes and o in nodes]

    def canonical(memory_id: str) -> str:
        return (nodes.get(memory_id) or {}).get("merged_into") or memory_id

    for memory_id, memory in sorted(nodes.items()):
        newer = memory.get("superseded_by")
        if not newer:
            continue
        if newer == memory_id:
            found.append(f"{memory_id} supersedes itself")
            continue
        if newer in nodes and not {(newer, memory_id), (canonical(newer), memory_id), (newer, canonical(memory_id)),
                                     (canonical(newer), canonical(memory_id))} & edges:
            found.append(f"{memory_id} is marked superseded by {newer} with no SUPERSEDES edge between them")
        seen, current = {memory_id}, canonical(newer)
        while current in nodes and nodes[current].get("superseded_by"):
            if current in seen:
                found.append(f"the supersession chain from {memory_id} comes back to {current}")
                break
            seen.add(current)
            current = canonical(nodes[current]["superseded_by"])
    return found


def _node_violations(nodes: Mapping[str, Mapping[str, Any]], scope_of: Mapping[str, str]) -> list[str]:
    found = []
    for memory_id, memory in nodes.items():
        canonical = memory.get("merged_into")
        if canonical and not memory.get("archived"):
            found.append(f"{memory_id} is active but points merged_into {canonical}")
        if canonical and (canonical not in nodes or nodes[canonical].get("merged_into")):
            found.append(f"{memory_id} is merged into {canonical}, which is not a stored memory of its own")
        target = canonical or memory.get("superseded_by")
        if target and target in scope_of and scope_of[target] != scope_of.get(memory_id):
            found.append(f"{memory_id} is merged into or superseded by {target} of another scope")
    return found


def _record_violations(nodes: Mapping[str, Mapping[str, Any]], records: Iterable[Mapping[str, Any]]) -> list[str]:
    newest: dict[str, Mapping[str, Any]] = {}
    for record in records:
        kept = newest.get(record["duplicate_id"])
        if kept is None or str(record.get("merged_at")) >= str(kept.get("merged_at")):
            newest[record["duplicate_id"]] = record
    found = []
    for duplicate_id, record in newest.items():
        node = nodes.get(duplicate_id)
        actual = DELETED if node is None else state_of(node)
        expected = RECORD_STATES.get(record["state"])
        if expected is not None and actual != expected:
            found.append(f"merge record of {duplicate_id} is {record['state']} but the memory is {actual}")
        if expected is None and actual == MERGED:
            found.append(f"{duplicate_id} is merged but its newest merge record is {record['state']}")
    return found + [f"{memory_id} is merged without a merge record" for memory_id, node in nodes.items()
                    if state_of(node) == MERGED and memory_id not in newest]


def forgetting(archive_threshold: float, delete_threshold: float, interval_seconds: int,
               delete_after_archived_days: float = 0.0) -> dict[str, Any]:
    """Whether forgetting is on (as rules.ForgetPolicy.enabled), in words an administrator can act on (both
    thresholds 0: off, as the reference design ships it), with how long a memory stays archived before deletion."""
    enabled = archive_threshold > 0 or delete_threshold > 0
    if not enabled:
        note = "off: set CONSOLIDATION_ARCHIVE_THRESHOLD / _DELETE_THRESHOLD"
    elif interval_seconds <= 0:
        note = "on for runs asked by hand; not scheduled: set CONSOLIDATION_FORGET_INTERVAL_SECONDS"
    else:
        note = f"on: archive below {archive_threshold:g}, delete below {delete_threshold:g}"
        if delete_after_archived_days > 0:
            note += f" after {delete_after_archived_days:g} days archived"
    return {"enabled": enabled, "archive_threshold": archive_threshold, "delete_threshold": delete_threshold,
            "delete_after_archived_days": delete_after_archived_days,
            "scheduled": enabled and interval_seconds > 0, "note": note}
