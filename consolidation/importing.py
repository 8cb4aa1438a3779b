"""Bulk import from JSONL, the pure part: read every line, then decide what each one does to the stores.

An import creates memories; it never changes a stored one unless an administrator asks (`overwrite`), and it
never brings back a forgotten memory behind its tombstone's back. Every line is read and classified before
anything is written, so an import writes all of its lines or none.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np

from .errors import InvalidInput
from .json_input import parse_json
from .memory import NewMemory, import_id
from .timeutil import parse_iso, to_iso

REPORTED_LINES = 20
TIME_FIELDS = ("timestamp", "last_accessed", "archived_at")
# Stages an import reports progress in: `progress(stage, lines done, lines in the stage)`.
READ, CHECKED, WRITTEN = "read", "checked", "written"
# Often enough for a bar to move smoothly, rarely enough to cost nothing next to parsing a line.
PROGRESS_EVERY = 1000

ImportProgress = Callable[[str, int, int], None]


def no_progress(stage: str, done: int, total: int) -> None:
    """The progress callback of an import nobody watches."""


def throughput(lines: int, seconds: float) -> dict[str, float]:
    """How long an import took and the lines per second it reached (what the command line reports)."""
    elapsed = max(round(seconds, 3), 0.001)  # a clock tick: an instant import still has a finite rate
    return {"elapsed_seconds": elapsed, "lines_per_second": round(lines / elapsed, 1)}


@dataclass(frozen=True)
class ImportLine:
    number: int
    memory: NewMemory

    @property
    def id(self) -> str:
        return self.memory.properties["id"]


@dataclass
class ImportReport:
    """What an import did (or, refused or dry, would do), line by line where a line did not simply create."""

    lines: int = 0
    created: int = 0
    overwritten: int = 0
    skipped: list[dict[str, Any]] = field(default_factory=list)
    conflicts: list[dict[str, Any]] = field(default_factory=list)
    errors: list[dict[str, Any]] = field(default_factory=list)
    dry_run: bool = False

    def add_error(self, line: int, exc: InvalidInput) -> None:
        self.errors.append({"line": line, "field": exc.field, "detail": exc.reason})

    def public(self) -> dict[str, Any]:
        """The report as the API and the CLI show it: counts, and the first lines of each kind."""
        return {
            "lines": self.lines, "created": self.created, "overwritten": self.overwritten,
            "imported": self.created + self.overwritten, "skipped": len(self.skipped),
            "skipped_lines": self.skipped[:REPORTED_LINES], "conflicts": self.conflicts[:REPORTED_LINES],
            "conflicts_total": len(self.conflicts), "errors": self.errors[:REPORTED_LINES],
            "errors_total": len(self.errors), "dry_run": self.dry_run,
        }


@dataclass
class ImportPlan:
    create: list[ImportLine] = field(default_factory=list)
    overwrite: list[ImportLine] = field(default_factory=list)
    # Forgotten memories an administrator imports anew: their tombstones are marked replaced.
    replaces_tombstones: list[str] = field(default_factory=list)


def read_jsonl(data: bytes, report: ImportReport, progress: ImportProgress = no_progress,
               scope_properties: tuple[str, ...] = ()) -> list[tuple[int, dict[str, Any]]]:
    """Each non-blank line as a JSON object with its id (derived from the line and its scope when it has none).

    Lines end at "\\n" only (a trailing "\\r" is dropped): U+2028 and other Unicode line breaks are content.
    """
    raw_lines = data.split(b"\n")
    total = len(raw_lines) - (raw_lines[-1] == b"")  # a final newline ends the last line; it starts none
    progress(READ, 0, total)
    bodies = []
    for number, raw in enumerate(raw_lines, start=1):
        if number % PROGRESS_EVERY == 0:
            progress(READ, min(number, total), total)
        raw = raw.removesuffix(b"\r")
        if not raw.strip():
            continue
        report.lines += 1
        try:
            body = parse_json(raw, field="line")
            if not isinstance(body, dict):
                raise InvalidInput("line", "must be a JSON object")
            body.setdefault("id", import_id(body, scope_properties))
            bodies.append((number, body))
        except InvalidInput as exc:
            report.add_error(number, exc)
    progress(READ, total, total)
    return bodies


def shift_times(bodies: list[tuple[int, dict[str, Any]]], now: datetime, report: ImportReport) -> None:
    """Move every time by one offset so that the newest becomes `now`: a fixture keeps its shape."""
    times = []
    for number, body in bodies:
        # A timestamp is needed; the other times only when given. Whatever is not a readable time string
        # (missing, null, a number) is this line's error, not the service's.
        given = [body.get(name) for name in TIME_FIELDS if name == "timestamp" or body.get(name) is not None]
        try:
            if not all(isinstance(value, str) for value in given):
                raise ValueError("not a time string")
            times.extend(parse_iso(value) for value in given)
        except ValueError:
            report.add_error(number, InvalidInput("timestamp", "every line needs ISO-8601 times to shift them"))
    if report.errors or not times:
        return
    delta = now - max(times)
    for number, body in bodies:
        for name in TIME_FIELDS:
            if isinstance(body.get(name), str):
                try:
                    body[name] = to_iso(parse_iso(body[name]) + delta)
                except OverflowError:
                    report.add_error(number, InvalidInput(name, "shifted to now it falls before year 1"))


def parse_lines(bodies: list[tuple[int, dict[str, Any]]], parse: Callable[[Any], NewMemory],
                report: ImportReport, progress: ImportProgress = no_progress) -> list[ImportLine]:
    """Validate each line; a line repeating an earlier line's id is skipped if it says the same, else refused."""
    lines: list[ImportLine] = []
    first: dict[str, ImportLine] = {}
    progress(CHECKED, 0, len(bodies))
    for done, (number, body) in enumerate(bodies):
        if done and done % PROGRESS_EVERY == 0:
            progress(CHECKED, done, len(bodies))
        try:
            line = ImportLine(number, parse(body))
        except InvalidInput as exc:
            report.add_error(number, exc)
            continue
        earlier = first.get(line.id)
        if earlier is None:
            first[line.id] = line
            lines.append(line)
        elif _same_line(earlier.memory, line.memory):
            report.skipped.append({"line": number, "id": line.id, "reason": f"repeats line {earlier.number}"})
        else:
            report.add_error(number, InvalidInput("id", f"line {earlier.number} has this id with other fields"))
    progress(CHECKED, len(bodies), len(bodies))
    return lines


def plan_import(lines: list[ImportLine], stored: dict[str, dict[str, Any]], tombstoned: dict[str, dict[str, Any]],
                overwrite: bool, report: ImportReport, scope_properties: tuple[str, ...] = ()) -> ImportPlan:
    """What each valid line does, given the memories and open tombstones the stores hold for its id."""
    plan = ImportPlan()
    for line in lines:
        current, tombstone = stored.get(line.id), tombstoned.get(line.id)
        if current is not None:
            if current.get("type") == "MetaPattern":
                _conflict(report, line, "is a cluster summary (MetaPattern); an import cannot replace it")
            elif overwrite:
                plan.overwrite.append(line)
            elif not _same_scope(current, line.memory.properties, scope_properties):
                _conflict(report, line, f"a memory of another scope ({', '.join(scope_properties)}) is stored "
                                        "under this id")
            elif _same_memory(current, line.memory.properties):
                report.skipped.append({"line": line.number, "id": line.id,
                                       "reason": "already stored (an import never overwrites; the stored fields stay)"})
            else:
                _conflict(report, line, "a memory with other content is stored under this id")
        elif tombstone is not None and tombstone["state"] in ("pending", "restoring"):
            _conflict(report, line, f"this memory is being {'deleted' if tombstone['state'] == 'pending' else 'restored'}")
        elif tombstone is not None and not overwrite:
            _conflict(report, line, f"this memory was forgotten at {tombstone['deleted_at']}; "
                                    f"POST /memory/{line.id}/restore brings it back")
        else:
            plan.create.append(line)
            if tombstone is not None:
                plan.replaces_tombstones.append(line.id)
    return plan


def _conflict(report: ImportReport, line: ImportLine, reason: str) -> None:
    report.conflicts.append({"line": line.number, "id": line.id, "reason": reason})


def _same_memory(stored: dict[str, Any], given: dict[str, Any]) -> bool:
    """The same memory: consolidation changes scores, uses and flags over time, never content or type."""
    return stored.get("content") == given["content"] and (stored.get("type") or "Memory") == given["type"]


def _same_scope(stored: dict[str, Any], given: dict[str, Any], scope_properties: tuple[str, ...]) -> bool:
    """One scope: every scope property equal, missing on both counting as equal (an import never moves a memory
    to another user's memories, nor skips a user's line because another user holds the same text)."""
    return all(stored.get(name) == given.get(name) for name in scope_properties)


def _same_line(first: NewMemory, second: NewMemory) -> bool:
    if first.properties != second.properties:
        return False
    if first.embedding is None or second.embedding is None:
        return first.embedding is None and second.embedding is None
    return bool(np.array_equal(first.embedding, second.embedding))
