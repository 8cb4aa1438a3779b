"""The memory service behind the ingest API and the bulk import: validate, embed, write vector then node."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from .embedding import Embedder
from .errors import Conflict, InvalidInput, NotFound
from .lifecycle import Lifecycle
from .memory import NewMemory, import_id, parse_memory, parse_memory_id
from .settings import Settings
from .stores import Stores
from .stores.falkor import chunked
from .stores.vectors import VectorPoint, payload_of
from .timeutil import parse_iso, to_iso, utc_now

log = logging.getLogger(__name__)
IMPORT_BATCH = 500
MAX_REPORTED_ERRORS = 20
TIME_FIELDS = ("timestamp", "last_accessed", "archived_at")


@dataclass
class ImportReport:
    lines: int = 0
    imported: int = 0
    errors: list[dict[str, Any]] = field(default_factory=list)


class MemoryService:
    """Creates, reads, touches, imports and restores memories; both stores are written or neither is."""

    def __init__(self, settings: Settings, stores: Stores, embedder: Embedder, lifecycle: Lifecycle,
                 clock: Callable[[], datetime] = utc_now):
        self.settings = settings
        self.stores = stores
        self.embedder = embedder
        self.lifecycle = lifecycle
        self.clock = clock

    def create(self, body: Any) -> dict[str, Any]:
        memory = self._parse(body, importing=False)
        memory_id = memory.properties["id"]
        self.stores.ensure_ready()
        if self.stores.graph.existing_ids([memory_id]):
            raise Conflict(f"memory {memory_id} already exists")
        self._write([memory])
        return memory.properties

    def get(self, memory_id: str) -> dict[str, Any]:
        self.stores.ensure_ready()
        memory = self.stores.graph.get_memory(parse_memory_id(memory_id))
        if memory is None:
            raise NotFound(f"memory {memory_id} does not exist")
        return memory

    def record_access(self, memory_id: str) -> dict[str, Any]:
        self.stores.ensure_ready()
        memory = self.stores.graph.record_access(parse_memory_id(memory_id), to_iso(self.clock()))
        if memory is None:
            raise NotFound(f"memory {memory_id} does not exist")
        return memory

    def restore(self, memory_id: str) -> dict[str, Any]:
        self.stores.ensure_ready()
        return self.lifecycle.restore(parse_memory_id(memory_id), self.clock())

    def import_lines(self, lines: Iterable[str], shift_to_now: bool = False) -> ImportReport:
        """Validate every line first; write nothing unless all are valid, then write in batches.

        With shift_to_now, every time in the file moves by the same amount so that the newest one becomes
        now: a fixture keeps its shape (ages, gaps between uses) whenever it is loaded.
        """
        report = ImportReport()
        bodies = []
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            report.lines += 1
            try:
                bodies.append((number, _json_object(line)))
            except InvalidInput as exc:
                _add_error(report, number, exc)
        if shift_to_now and not report.errors:
            _shift_times(report, bodies, self.clock())
        memories = []
        for number, body in bodies:
            try:
                memories.append(self._parse(body, importing=True))
            except InvalidInput as exc:
                _add_error(report, number, exc)
        if report.errors:
            report.errors.sort(key=lambda error: error["line"])
            return report
        self.stores.ensure_ready()
        for batch in chunked(memories, IMPORT_BATCH):
            self._write(batch)
            report.imported += len(batch)
        return report

    def _parse(self, body: Any, importing: bool) -> NewMemory:
        return parse_memory(body, vector_size=self.settings.vector_size,
                            max_content_chars=self.settings.max_content_chars, now=self.clock(),
                            importing=importing)

    def _write(self, memories: list[NewMemory]) -> None:
        """Vectors first, then nodes; if the nodes fail, vectors of memories that did not exist are taken out."""
        ids = [m.properties["id"] for m in memories]
        existed = self.stores.graph.existing_ids(ids)
        missing = [m for m in memories if m.embedding is None]
        embedded = dict(zip((m.properties["id"] for m in missing),
                            self.embedder.embed([m.properties["content"] for m in missing]))) if missing else {}
        self.stores.vectors.upsert([
            VectorPoint(m.properties["id"], embedded.get(m.properties["id"], m.embedding), payload_of(m.properties))
            for m in memories
        ])
        try:
            self.stores.graph.upsert_memories([m.properties for m in memories])
        except Exception:
            self.stores.vectors.delete([memory_id for memory_id in ids if memory_id not in existed])
            raise


def _json_object(line: str) -> dict[str, Any]:
    """One JSONL line as an object, with the id it will have (derived from the line when it has none)."""
    try:
        body = json.loads(line)
    except json.JSONDecodeError as exc:
        raise InvalidInput("line", f"is not valid JSON ({exc.msg} at column {exc.colno})") from None
    if not isinstance(body, dict):
        raise InvalidInput("line", "must be a JSON object")
    if "id" not in body:
        body["id"] = import_id(body)
    return body


def _add_error(report: ImportReport, line: int, exc: InvalidInput) -> None:
    if len(report.errors) < MAX_REPORTED_ERRORS:
        report.errors.append({"line": line, "field": exc.field, "detail": exc.reason})
    else:
        report.errors[-1] = {"line": line, "field": exc.field, "detail": "... and more invalid lines"}


def _shift_times(report: ImportReport, bodies: list[tuple[int, dict[str, Any]]], now: datetime) -> None:
    times = []
    for number, body in bodies:
        try:
            times.extend(parse_iso(body[name]) for name in TIME_FIELDS if name == "timestamp" or body.get(name))
        except (KeyError, TypeError, ValueError):
            _add_error(report, number, InvalidInput("timestamp", "every line needs ISO-8601 times to shift them"))
    if report.errors or not times:
        return
    delta = now - max(times)
    for _, body in bodies:
        for name in TIME_FIELDS:
            if isinstance(body.get(name), str):
                body[name] = to_iso(parse_iso(body[name]) + delta)
