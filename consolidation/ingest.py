"""The memory service behind the ingest API and the bulk import: validate, embed, write vector then node."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from datetime import datetime
from typing import Any

import numpy as np

from .demand import Demand
from .embedding import Embedder
from .vector_space import VectorSpace
from .heap import collection_paused
from .errors import Conflict, InvalidInput, NotFound
from .importing import (
    WRITTEN, ImportLine, ImportPlan, ImportProgress, ImportReport, no_progress, parse_lines, plan_import, read_jsonl,
    shift_times,
)
from .lifecycle import Lifecycle
from .lifecycle.requests import Requests
from .lifecycle.states import state_of
from .memory import NewMemory, parse_embedding, parse_memory, parse_memory_id
from .recall import CURRENT, Recall, RecallQuery
from .scopes import Scope, bound_body, within_bound
from .settings import Settings
from .stores import Stores
from .stores.audit import AuditLog
from .stores.vectors import VectorPoint, payload_of
from .timeutil import to_iso, utc_now

log = logging.getLogger(__name__)
IMPORT_BATCH = 500
# While requests wait, an import writes a few memories at a time and lets the requests in flight go first before
# each batch: embedding 500 texts holds the GIL for ~100 ms, and status requests during an import of 100k had a
# p99 of 100 ms behind it.
IMPORT_BATCH_WAITING = 50


class MemoryChecks:
    """A write's own validation, which needs no store: the memory service runs it first, and a write to a graph
    that does not exist yet runs it before the graph is made, so that a refused write leaves no graph behind."""

    def __init__(self, settings: Settings, clock: Callable[[], datetime] = utc_now):
        self.settings = settings
        self.clock = clock

    def memory(self, body: Any, importing: bool = False, now: datetime | None = None) -> NewMemory:
        return parse_memory(body, vector_size=self.settings.vector_size,
                            max_content_chars=self.settings.max_content_chars, now=now or self.clock(),
                            importing=importing, scope_properties=self.settings.consolidation_scope_properties)

    def import_lines(self, data: bytes, report: ImportReport, shift_to_now: bool,
                     progress: ImportProgress = no_progress,
                     give_way: Callable[[], None] = lambda: None, bound: Scope | None = None) -> list[ImportLine]:
        """Every line read and checked (`give_way` now and then); what is wrong goes into the report's errors,
        in line order."""
        bodies = read_jsonl(data, report, progress, self.settings.consolidation_scope_properties, give_way,
                            bound)
        if shift_to_now and not report.stops_on(report.errors):
            bodies = shift_times(bodies, self.clock(), report)
        # One moment for the whole import: two identical lines without times are one memory, filled in alike.
        now = self.clock()
        lines = parse_lines(bodies, lambda body: self.memory(body, importing=True, now=now), report, progress,
                            give_way)
        report.errors.sort(key=lambda error: error["line"])
        return lines

    def import_writing_nothing(self, data: bytes, *, shift_to_now: bool = False, overwrite: bool = False,
                               dry_run: bool = False, skip_bad_lines: bool = False,
                               bound: Scope | None = None) -> ImportReport | None:
        """The report of an import into an empty graph when it writes nothing (a refused line, every line
        skipped, or a dry run); None when it would write."""
        report = ImportReport(dry_run=dry_run, skip_bad_lines=skip_bad_lines)
        lines = self.import_lines(data, report, shift_to_now, bound=bound)
        report.refused = report.stops_on(report.errors)
        if report.refused:
            return report
        if not dry_run and (lines or not report.errors):
            return None
        plan = plan_import(lines, {}, {}, overwrite, report, self.settings.consolidation_scope_properties)
        report.created, report.overwritten = len(plan.create), len(plan.overwrite)
        return report

    def import_gate(self, data: bytes, flags: dict[str, Any]) -> ImportGate:
        return ImportGate(self, data, flags)


class ImportGate:
    """What an import into a graph that does not exist yet asks before the graph is made (GraphRegistry.to_write):
    called, it says whether the import writes; when it does not, `report` is what it would have answered."""

    def __init__(self, checks: MemoryChecks, data: bytes, flags: dict[str, Any]):
        self.checks, self.data, self.flags = checks, data, flags
        self.report: ImportReport | None = None

    def __call__(self) -> bool:
        self.report = self.checks.import_writing_nothing(self.data, **self.flags)
        return self.report is None


class MemoryService:
    """Creates, reads, touches, imports and restores memories; both stores are written or neither is."""

    def __init__(self, settings: Settings, stores: Stores, embedder: Embedder, lifecycle: Lifecycle,
                 refresh_summaries: Callable[[], int], clock: Callable[[], datetime] = utc_now,
                 demand: Demand | None = None, *, space: VectorSpace):
        self.settings = settings
        self.stores = stores
        self.embedder = embedder
        self.space = space  # the store's model against the configured one: the engine's, one per graph
        self.demand = demand or Demand()  # the requests waiting: a bulk import gives way to them
        self.lifecycle = lifecycle
        self.clock = clock
        self.checks = MemoryChecks(settings, clock)
        self.audit = AuditLog(stores.graph.falkor)
        self.requests = Requests(lifecycle, self.checks.memory, embedder, refresh_summaries, clock,
                                 settings.record_key, settings.consolidation_tombstone_retention_days,
                                 self.space.check_text_work)
        self.recall = Recall(stores.graph, stores.vectors, settings.recall_associated_similarity)

    def recall_query(self, body: dict[str, Any], bound: Scope | None = None) -> RecallQuery:
        """A recall request's query, its text embedded by the configured embedder unless it sent an embedding;
        a scoped caller's recall is of its own scope."""
        self.stores.ensure_ready()
        query, embedding = body.get("query"), parse_embedding(body.get("embedding"), self.settings.vector_size)
        if query is not None and embedding is not None:
            raise InvalidInput("query", "give a query (text) or an embedding, not both")
        if embedding is None:
            if query is None or not query.strip():
                raise InvalidInput("query", "give a query with words in it (text), or an embedding")
            self.space.check_text_work("a recall by text")
            embedding = self.embedder.embed([query])[0]
        scope = within_bound(body.get("scope"), bound, "scope")
        key = None if scope is None else self.stores.graph.scoping.within(scope).key_of(scope)
        types = tuple(body["types"]) if body.get("types") else None
        associated = body.get("associated")
        return RecallQuery(embedding, body.get("k", 10), body.get("state", CURRENT), key, types,
                           bool(body.get("include_summaries")),
                           self.settings.recall_associated if associated is None else bool(associated))

    def create(self, body: Any, bound: Scope | None = None) -> dict[str, Any]:
        memory = self.checks.memory(bound_body(body, bound))
        memory_id = memory.properties["id"]
        self.stores.ensure_ready()
        if self.stores.graph.existing_ids([memory_id]):
            raise Conflict(f"memory {memory_id} already exists")
        tombstone = self.lifecycle.tombstones.open_states([memory_id]).get(memory_id)
        if tombstone is not None:
            raise Conflict(f"memory {memory_id} was forgotten ({tombstone['state']}); "
                           f"POST /memory/{memory_id}/restore brings it back")
        if memory_id not in self._write_new([memory]):
            raise Conflict(f"memory {memory_id} already exists")
        return {**memory.properties, "state": state_of(memory.properties)}

    def get(self, memory_id: str, bound: Scope | None = None) -> dict[str, Any]:
        """The memory with its state (Gone, with when and why, for a deleted one)."""
        self.stores.ensure_ready()
        return self.lifecycle.describe(parse_memory_id(memory_id), self.settings.consolidation_tombstone_retention_days,
                                       bound)

    def kept(self, memory_id: str) -> dict[str, Any] | None:
        """A deleted memory's fields as its tombstone keeps them (None: nothing kept, or never deleted)."""
        return self.lifecycle.tombstones.kept(parse_memory_id(memory_id))

    def record_access(self, memory_id: str, bound: Scope | None = None) -> dict[str, Any]:
        self.stores.ensure_ready()
        self.get(memory_id, bound)  # 404 for another scope's memory, 410 for a deleted one
        memory = self.lifecycle.record_use(parse_memory_id(memory_id), self.clock())
        if memory is None:
            raise NotFound(f"memory {memory_id} does not exist")
        return memory

    def restore(self, memory_id: str) -> dict[str, Any]:
        self.stores.ensure_ready()
        return self.lifecycle.restore(parse_memory_id(memory_id), self.clock(),
                                      self.settings.consolidation_restore_hold_days)

    def import_jsonl(self, data: bytes, *, shift_to_now: bool = False, overwrite: bool = False,
                     dry_run: bool = False, skip_bad_lines: bool = False,
                     progress: ImportProgress = no_progress, bound: Scope | None = None) -> ImportReport:
        """Read and classify every line, then write all of them or none; or, skipping bad lines, the valid
        lines that conflict with nothing stored (see importing.py)."""
        report = ImportReport(dry_run=dry_run, skip_bad_lines=skip_bad_lines)
        # Every line read stays alive to the end, a list of numbers each: full cycle collections walked all of
        # them, up to 0.5 s each at 60k lines with embeddings, while requests waited for the GIL.
        with collection_paused():
            return self._import(data, report, shift_to_now, overwrite, dry_run, progress, bound)

    def _import(self, data: bytes, report: ImportReport, shift_to_now: bool, overwrite: bool, dry_run: bool,
                progress: ImportProgress, bound: Scope | None) -> ImportReport:
        lines = self.checks.import_lines(data, report, shift_to_now, progress,
                                         lambda: self.demand.give_way(bulk=True), bound)
        # Classified against the stores even when invalid lines refuse the import: its report names every
        # line that stops it, the conflicting ones too.
        self.stores.ensure_ready()
        ids = [line.id for line in lines]
        stored = {m["id"]: m for m in self.stores.graph.get_memories(ids)}
        tombstoned = self.lifecycle.tombstones.open_states([i for i in ids if i not in stored])
        plan = plan_import(lines, stored, tombstoned, overwrite, report,
                           self.settings.consolidation_scope_properties)
        report.refused = report.stops_on(report.errors + report.conflicts)
        if report.stops_on(report.errors):
            return report  # refused for invalid lines: the counts stay 0, the lists name every line that stops it
        if report.refused or dry_run:
            report.created, report.overwritten = len(plan.create), len(plan.overwrite)
            return report
        self._apply(plan, stored, report, progress)
        return report

    def _apply(self, plan: ImportPlan, stored: dict[str, dict[str, Any]], report: ImportReport,
               progress: ImportProgress) -> None:
        """Write the plan; if a store fails half-way, undo what this import wrote, then raise."""
        created: set[str] = set()
        previous_vectors = dict(zip(*self.stores.vectors.vectors([line.id for line in plan.overwrite])))
        total, written = len(plan.create) + len(plan.overwrite), 0
        progress(WRITTEN, 0, total)
        try:
            self._unmerge([stored[line.id] for line in plan.overwrite], plan.overwrite)
            for batch in self._batches(plan.create):
                created |= self._write_new([line.memory for line in batch])
                written += len(batch)
                progress(WRITTEN, written, total)
            for batch in self._batches(plan.overwrite):
                self._replace([line.memory for line in batch])
                written += len(batch)
                progress(WRITTEN, written, total)
        except Exception:
            self._undo(created, [stored[line.id] for line in plan.overwrite], previous_vectors)
            raise
        taken = [line for line in plan.create if line.id not in created]
        for line in taken:  # created by someone else between our check and our write
            report.conflicts.append({"line": line.number, "id": line.id, "reason": "created meanwhile by another request"})
        report.created, report.overwritten = len(created), len(plan.overwrite)
        now = to_iso(self.clock())
        self.lifecycle.tombstones.mark_replaced([i for i in plan.replaces_tombstones if i in created], now)
        if plan.overwrite or plan.replaces_tombstones:
            overwritten = [line.id for line in plan.overwrite]
            self.audit.record("import_overwrite", now, overwritten=overwritten[:1000], count=len(overwritten),
                              replaced_tombstones=plan.replaces_tombstones[:1000])
            log.warning("memory import overwrote memories count=%d replaced_tombstones=%d", len(overwritten),
                        len(plan.replaces_tombstones))

    def _batches(self, lines: list[ImportLine]) -> Iterator[list[ImportLine]]:
        """The lines a batch at a time: IMPORT_BATCH while nobody waits; while someone does, after the requests
        in flight (even when the import is a request itself), IMPORT_BATCH_WAITING."""
        done = 0
        while done < len(lines):
            self.demand.give_way(bulk=True)
            size = IMPORT_BATCH_WAITING if self.demand.waiting() else IMPORT_BATCH
            yield lines[done:done + size]
            done += size

    def _unmerge(self, replaced: list[dict[str, Any]], lines: list[ImportLine]) -> None:
        """Undo the merge of each merged duplicate an overwrite replaces, as a restore does (its edges back, the
        canonical's fields without it): the line is a memory of its own, and a merge left in place would go on
        lending the canonical its old text, and carry the canonical's supersessions over to it. A memory the
        line moves to another scope first loses every link to its old one."""
        now = self.clock()
        for memory in replaced:
            if memory.get("merged_into"):
                self.lifecycle.restore(memory["id"], now, self.settings.consolidation_restore_hold_days)
        scopes = self.settings.consolidation_scope_properties
        moving = [line.id for line, memory in zip(lines, replaced)
                  if any(memory.get(name) != line.memory.properties.get(name) for name in scopes)]
        if moving:
            self.lifecycle.detach_from_scope(moving, now)

    def _undo(self, created: set[str], previous: list[dict[str, Any]], vectors: dict[str, np.ndarray]) -> None:
        try:
            self.stores.vectors.delete(sorted(created))
            self.stores.graph.remove_memories(sorted(created))
            self.stores.vectors.upsert([VectorPoint(m["id"], vectors[m["id"]], payload_of(m, self.stores.graph.scoping))
                                        for m in previous if m["id"] in vectors])
            self.stores.graph.replace_memories(previous)
        except Exception:
            log.exception("memory import could not undo a failed import created=%d overwritten=%d; "
                          "POST /reconcile finds what is left", len(created), len(previous))

    def _points(self, memories: list[NewMemory]) -> list[VectorPoint]:
        """Each memory's vector: its own embedding, or the configured embedder's of its content (recorded)."""
        missing = [m for m in memories if m.embedding is None]
        if missing:
            self.space.check_text_work("a memory without an embedding")
            self.space.record_use()
            for memory in missing:
                memory.properties["embedding_model"] = self.embedder.model
        embedded = iter(self.embedder.embed([m.properties["content"] for m in missing])) if missing else iter(())
        return [VectorPoint(m.properties["id"], m.embedding if m.embedding is not None else next(embedded),
                            payload_of(m.properties, self.stores.graph.scoping)) for m in memories]

    def _write_new(self, memories: list[NewMemory]) -> set[str]:
        """Vectors first, then nodes; a vector whose node was not created (failure, or a taken id) is taken out."""
        points = self._points(memories)
        existed = self.stores.graph.existing_ids([p.id for p in points])
        points = [p for p in points if p.id not in existed]
        self.stores.vectors.upsert(points)
        try:
            created = self.stores.graph.create_memories(
                [m.properties for m in memories if m.properties["id"] not in existed])
        except Exception:
            self.stores.vectors.delete([p.id for p in points])
            raise
        self.stores.vectors.delete([p.id for p in points if p.id not in created])
        return created

    def _replace(self, memories: list[NewMemory]) -> None:
        self.stores.vectors.upsert(self._points(memories))
        self.stores.graph.replace_memories([m.properties for m in memories])
