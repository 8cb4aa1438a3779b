"""The ConsolidationControl node: last-run times, bounded history, retry state and the run lease."""

from __future__ import annotations

import json
import os
import socket
import uuid
from dataclasses import dataclass
from typing import Any

from ..settings import TASK_NAMES
from .authors import AUTOMEM_SUMMARY_LABEL, RUN_LABEL
from .automem import Traces, parse_traces, traces_clause
from .falkor import Falkor
from .runs import decode_run, encode_run



def control_node(variable: str) -> str:
    """The pattern of the singleton control node, bound to `variable` (other stores' queries reach it too)."""
    return f"({variable}:ConsolidationControl {{id: 'singleton'}})"


CONTROL = control_node("c")


@dataclass(frozen=True)
class Watermark:
    """What a successful whole-graph run of an incremental task leaves for the next one: the change sequence
    at its start (every change up to it was seen), the version of the rules its stored state follows, and
    when it was a full pass (None: it was incremental)."""

    sequence: int
    version: int
    full_pass_at: str | None


@dataclass(frozen=True)
class Lease:
    """Who holds the right to run consolidation, for which run, until when (epoch seconds)."""

    holder: str
    run_id: str
    task: str | None
    expires_at: float


@dataclass(frozen=True)
class StatusReading:
    """What a status request reads from the graph: control fields, live lease, the leased run's record (None:
    none), how many memory nodes there are."""

    state: dict[str, Any]
    lease: Lease | None
    current_run: dict[str, Any] | None
    memory_count: int
    automem: Traces  # AutoMem's own consolidation's traces (stores/automem.py)


PENDING_RECORDS = ("Tombstone", "MergeRecord", "EntityMerge")  # work a crash can leave half done


class ControlStore:
    """Reads and writes the singleton control node that makes the schedule survive restarts."""

    def __init__(self, falkor: Falkor):
        self.falkor = falkor

    def ensure(self) -> None:
        self.falkor.execute(f"MERGE {CONTROL} ON CREATE SET c.history = '[]'")

    def state(self) -> dict[str, Any]:
        """All control fields, with `history` decoded to a list (newest first)."""
        return self.state_and_lease()[0]

    def work_left_pending(self) -> bool:
        """Whether a crash left work half done on this graph: a deletion, a merge or an entity merge still
        pending (the scheduler finishes them at its next tick)."""
        for label in PENDING_RECORDS:
            rows = self.falkor.execute(f"MATCH (r:{label} {{state: 'pending'}}) RETURN count(r)", read_only=True)
            if rows and int(rows[0][0] or 0) > 0:
                return True
        return False

    def state_and_lease(self) -> tuple[dict[str, Any], Lease | None]:
        """The control fields and the live lease, in one round trip."""
        rows = self.falkor.records(f"MATCH {CONTROL} RETURN properties(c), timestamp() / 1000.0", read_only=True)
        return _state_and_lease(rows[0] if rows else None)

    def status_reading(self) -> StatusReading:
        """The control fields, the live lease, the record of the run holding it, the count of memory nodes and
        AutoMem's consolidation traces, in one round trip. Status is polled during long runs, whose writes hold the server: every round trip
        may wait behind one, so status makes one (the count comes from the label statistics, not a scan; AutoMem's
        summaries, which have no vector, are not counted)."""
        rows = self.falkor.records(
            "CALL db.meta.stats() YIELD labels "
            f"WITH coalesce(labels['Memory'], 0) - coalesce(labels['{AUTOMEM_SUMMARY_LABEL}'], 0) AS memories "
            + traces_clause("memories") +
            f"OPTIONAL MATCH {CONTROL} WITH memories, automem_runs, automem_controls, c "
            f"OPTIONAL MATCH (r:{RUN_LABEL} {{id: c.lease_run_id}}) "
            "RETURN properties(c), timestamp() / 1000.0, properties(r), memories, automem_runs, automem_controls",
            read_only=True)
        row = rows[0]
        state, lease = _state_and_lease(row if row[0] is not None else None)
        record = row[2] if lease is not None else None
        return StatusReading(state, lease, decode_run(dict(record)) if record else None, int(row[3]),
                             parse_traces(row[4], row[5]))

    def record_task(self, task: str, entry: dict[str, Any], history_limit: int,
                    watermark: Watermark | None = None) -> None:
        """Prepend a history entry; on success set last_<task> (and the task's watermark, when given), on
        failure count it for the retry backoff."""
        if task not in TASK_NAMES:
            raise ValueError(f"unknown task {task}")
        self.ensure()
        history = [entry, *self.state()["history"]][:history_limit]
        params: dict[str, Any] = {"history": json.dumps(history), "ran_at": entry["ran_at"]}
        if entry["success"]:
            # A record written late (after a store outage) must not move last_<task> backwards.
            update = (f"c.last_{task} = {_latest(f'c.last_{task}', '$ran_at')}, "
                      f"c.failures_{task} = 0, c.last_failure_{task} = null")
            if watermark is not None:
                update += _watermark_update(task, watermark, params)
        else:
            update = f"c.failures_{task} = coalesce(c.failures_{task}, 0) + 1, c.last_failure_{task} = $ran_at"
        self.falkor.execute(f"MATCH {CONTROL} SET c.history = $history, {update}", params)

    def set_paused(self, paused: bool, at: str) -> None:
        """Pause or resume this graph's schedule (every process reads it before a scheduled run)."""
        self.ensure()
        self.falkor.execute(f"MATCH {CONTROL} SET c.scheduler_paused = $paused, c.scheduler_paused_at = $at",
                            {"paused": paused, "at": at if paused else None})

    # --- the lease: who may run consolidation now -------------------------------------------------------

    def acquire_lease(self, holder: str, run_id: str, task: str | None, ttl: float) -> Lease | None:
        """Take the lease if it is free, expired, already ours, or held by a process of this host that no
        longer exists (a crash: waiting for the expiry would only delay recovery); None if someone else
        holds it."""
        self.ensure()
        expires_at = LEASE.take(self.falkor, run_id, ttl, holder=holder, task=task)
        if expires_at is None:
            current = self.current_lease()
            if current is not None and holder_is_gone(current.holder):
                expires_at = LEASE.take(self.falkor, run_id, ttl, previous=current.run_id, holder=holder, task=task)
        return Lease(holder, run_id, task, expires_at) if expires_at is not None else None

    def renew_lease(self, run_id: str, task: str | None, ttl: float) -> bool:
        """Extend our lease (and say which task runs now); False if it was lost to another holder."""
        return LEASE.renew(self.falkor, run_id, ttl, task=task)

    def release_lease(self, run_id: str) -> None:
        LEASE.release(self.falkor, run_id)

    def queue_run(self, run: dict[str, Any], since: str) -> str | None:
        """Record `run` as queued for a worker, unless the lease is held or another run queued at or after
        `since` still waits: that run's id then (None: recorded). One query, so of concurrent requests one
        queues and the others see it (or see the lease a worker took for it meanwhile)."""
        self.ensure()
        rows = self.falkor.records(
            f"MATCH {CONTROL} WITH c, timestamp() / 1000.0 AS now "
            f"OPTIONAL MATCH (q:{RUN_LABEL} {{state: 'queued'}}) WHERE q.queued_at >= $since "
            "WITH c, now, collect(q.id) AS waiting "
            "WITH waiting, CASE WHEN c.lease_expires_at >= now THEN c.lease_run_id ELSE null END AS holder "
            "FOREACH (_ IN CASE WHEN size(waiting) = 0 AND holder IS NULL THEN [1] ELSE [] END | "
            f"CREATE (r:{RUN_LABEL}) SET r = $props) RETURN waiting, holder",
            {"since": since, "props": encode_run({**run, "state": "queued", "queued_at": run["started_at"]})})
        waiting, holder = rows[0] if rows else ([], None)
        return holder or (waiting[0] if waiting else None)

    def current_lease(self) -> Lease | None:
        """The lease if someone holds it and it has not expired."""
        return self.state_and_lease()[1]


class VectorBindingStore:
    """Which embedded vector store the graph is paired with, claimed like the lease.

    A graph on a FalkorDB server can be reached by several processes; if each brings its own embedded Qdrant,
    their vector stores drift apart (one's forget leaves the other's vectors orphaned). The claim makes a
    second such process visible before it writes anything.
    """

    def __init__(self, falkor: Falkor):
        self.falkor = falkor

    def claim(self, store_id: str, holder: str, ttl: float) -> str | None:
        """Claim the graph for this vector store; None if claimed, else the holder of the live claim."""
        ControlStore(self.falkor).ensure()
        if BINDING.take(self.falkor, store_id, ttl, holder=holder) is not None:
            return None
        rows = self.falkor.execute(f"MATCH {CONTROL} RETURN c.vectors_holder", read_only=True)
        return str(rows[0][0]) if rows else "another process"

    def renew(self, store_id: str, ttl: float) -> bool:
        return BINDING.renew(self.falkor, store_id, ttl)

    def other_holder(self, store_id: str) -> str | None:
        """The holder of a live claim by another vector store, if there is one (nothing is claimed)."""
        rows = self.falkor.execute(
            f"MATCH {CONTROL} WITH c, timestamp() / 1000.0 AS now WHERE c.vectors_expires_at >= now "
            "AND c.vectors_store_id <> $store_id RETURN c.vectors_holder", {"store_id": store_id}, read_only=True)
        return str(rows[0][0]) if rows else None

    def release(self, store_id: str) -> None:
        BINDING.release(self.falkor, store_id)


@dataclass(frozen=True)
class Claim:
    """A compare-and-set claim on the control node: `<prefix>_<key>` names its owner, `<prefix>_expires_at`
    ends it unless renewed. FalkorDB runs write queries one at a time, so taking it is atomic; times are the
    server's own clock (timestamp(), in ms), so processes with skewed clocks agree on when a claim expires."""

    prefix: str
    key: str
    fields: tuple[str, ...]

    def take(self, falkor: Falkor, owner: str, ttl: float, previous: str | None = None,
             **values: Any) -> float | None:
        """Take the claim if free, expired, already the owner's, or still the `previous` owner's (one known
        to be dead); its expiry (epoch seconds) or None."""
        p = self.prefix
        assigned = ", ".join(f"c.{p}_{name} = ${name}" for name in self.fields)
        rows = falkor.execute(
            f"MATCH {CONTROL} WITH c, timestamp() / 1000.0 AS now "
            f"WHERE c.{p}_expires_at IS NULL OR c.{p}_expires_at < now OR c.{p}_{self.key} IN [$owner, $previous] "
            f"SET c.{p}_{self.key} = $owner, {assigned}, c.{p}_expires_at = now + $ttl RETURN c.{p}_expires_at",
            {**{name: values.get(name) for name in self.fields}, "owner": owner, "previous": previous,
             "ttl": float(ttl)},
        )
        return float(rows[0][0]) if rows else None

    def renew(self, falkor: Falkor, owner: str, ttl: float, **values: Any) -> bool:
        """Extend the owner's claim (updating any of its fields); False if it was lost."""
        assigned = "".join(f", c.{self.prefix}_{name} = ${name}" for name in values)
        rows = falkor.execute(
            f"MATCH {CONTROL} WHERE c.{self.prefix}_{self.key} = $owner "
            f"SET c.{self.prefix}_expires_at = timestamp() / 1000.0 + $ttl{assigned} RETURN c.{self.prefix}_{self.key}",
            {**values, "owner": owner, "ttl": float(ttl)},
        )
        return bool(rows)

    def release(self, falkor: Falkor, owner: str) -> None:
        cleared = ", ".join(f"c.{self.prefix}_{name} = null" for name in (self.key, *self.fields, "expires_at"))
        falkor.execute(f"MATCH {CONTROL} WHERE c.{self.prefix}_{self.key} = $owner SET {cleared}", {"owner": owner})


LEASE = Claim("lease", "run_id", ("holder", "task"))

# The holders this process made and still uses (an engine per graph): one of our pid not among them was an
# earlier process with the same pid (a container restarted), so it is gone.
_LIVE_HOLDERS: set[str] = set()


def new_holder() -> str:
    """A name for a lease holder of this process: host, pid and a random part."""
    holder = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"
    _LIVE_HOLDERS.add(holder)
    return holder


def holder_is_gone(holder: str | None) -> bool:
    """Whether a lease holder was a process of this host that no longer exists. A holder on another host, or
    one whose name cannot be read, is never judged gone here: its lease ends by expiry."""
    host, _, rest = (holder or "").partition(":")
    pid_text = rest.partition(":")[0]
    if host != socket.gethostname() or not pid_text.isdigit():
        return False
    pid = int(pid_text)
    if pid == os.getpid():
        return holder not in _LIVE_HOLDERS
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False  # a process of another user has the pid: alive, as far as we can tell
    return _zombie(pid)


def _zombie(pid: int) -> bool:
    """A process killed but not yet reaped by its parent still has its pid: it is gone all the same."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as stat:
            return stat.read().rpartition(")")[2].split()[0] == "Z"
    except (OSError, IndexError):
        return False
BINDING = Claim("vectors", "store_id", ("holder",))


def _latest(stored: str, given: str) -> str:
    """The later of a stored value and a given one (ISO times and sequence numbers both compare in order)."""
    return f"CASE WHEN {stored} > {given} THEN {stored} ELSE {given} END"


def _watermark_update(task: str, watermark: Watermark, params: dict[str, Any]) -> str:
    params.update(sequence=watermark.sequence, version=watermark.version, full_at=watermark.full_pass_at)
    update = (f", c.watermark_{task} = {_latest(f'c.watermark_{task}', '$sequence')}, "
              f"c.rules_{task} = $version")
    if watermark.full_pass_at is not None:
        update += f", c.last_full_{task} = {_latest(f'c.last_full_{task}', '$full_at')}"
    return update


def _decode_history(raw: Any) -> list[dict[str, Any]]:
    if not raw:
        return []
    try:
        history = json.loads(raw) if isinstance(raw, str) else list(raw)
    except (TypeError, ValueError):
        return []
    return [entry for entry in history if isinstance(entry, dict)]


def _state_and_lease(row: list[Any] | None) -> tuple[dict[str, Any], Lease | None]:
    """The control fields (history decoded) and the live lease, from a row of properties(c) and the server's
    time in epoch seconds."""
    props, server_now = (dict(row[0]), row[1]) if row else ({}, 0.0)
    props["history"] = _decode_history(props.get("history"))
    expires_at = props.get("lease_expires_at")
    # The server's clock decides expiry, as it does when the lease is taken: replicas' clocks may differ.
    live = expires_at is not None and expires_at >= server_now
    lease = Lease(props.get("lease_holder"), props.get("lease_run_id"), props.get("lease_task"),
                  expires_at) if live else None
    return props, lease
