"""Bulk import from JSONL, the pure part: read every line, then decide what each one does to the stores.

An import creates memories; it never changes a stored one unless an administrator asks (`overwrite`), and it
never brings back a forgotten memory behind its tombstone's back. Every line is read and classified before
anything is written, so an import writes all of its lines or none; unless it is asked to skip bad lines
(`skip_bad_lines`): then the invalid and conflicting lines are left out, each reported, and the rest written.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import numpy as np

from .errors import InvalidInput
from .json_input import parse_json
from .memory import NewMemory, import_id, packed_embedding
from .scopes import Scope, other_scope
from .timeutil import parse_iso, to_iso

REPORTED_LINES = 20
TIME_FIELDS = ("timestamp", "last_accessed", "archived_at")
# Stages an import reports progress in: `progress(stage, lines done, lines in the stage)`.
READ, CHECKED, WRITTEN = "read", "checked", "written"
# Often enough for a bar to move smoothly, rarely enough to cost nothing next to parsing a line.
PROGRESS_EVERY = 1000
# A bulk read lets requests in flight go first this often (a line with an embedding takes ~0.3 ms to check):
# a thread reading lines in pure Python shares the GIL with them, and they waited 40-100 ms for it.
GIVE_WAY_EVERY = 50
# A body is cut into lines one at a time and its lines counted a few megabytes at a time: one call over a whole
# import (394 MB at 100k lines with embeddings) held the GIL for 0.4-0.9 s, and the request that came first waited.
COUNT_BYTES = 4 * 1024 * 1024

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
    # Invalid and conflicting lines are left out (and reported) instead of refusing the whole import.
    skip_bad_lines: bool = False
    # Bad lines stopped it: nothing was written (`imported` is 0; the lists name every line that stopped it).
    refused: bool = False

    def add_error(self, line: int, exc: InvalidInput) -> None:
        self.errors.append({"line": line, "field": exc.field, "detail": exc.reason})

    def stops_on(self, bad_lines: list[dict[str, Any]]) -> bool:
        """Whether these invalid or conflicting lines stop the import: unless they are to be skipped."""
        return bool(bad_lines) and not self.skip_bad_lines

    def public(self) -> dict[str, Any]:
        """The report as the API and the CLI show it: counts, and the first lines of each kind (every line
        skipped, when bad lines are: each is the caller's to fix)."""
        shown = None if self.skip_bad_lines else REPORTED_LINES
        return {
            "lines": self.lines, "created": self.created, "overwritten": self.overwritten,
            "imported": 0 if self.refused else self.created + self.overwritten, "skipped": len(self.skipped),
            "skipped_lines": self.skipped[:shown], "conflicts": self.conflicts[:shown],
            "conflicts_total": len(self.conflicts), "errors": self.errors[:shown],
            "errors_total": len(self.errors), "dry_run": self.dry_run, "skip_bad_lines": self.skip_bad_lines,
            "bad_lines_skipped": len(self.errors) + len(self.conflicts) if self.skip_bad_lines else 0,
        }


@dataclass
class ImportPlan:
    create: list[ImportLine] = field(default_factory=list)
    overwrite: list[ImportLine] = field(default_factory=list)
    # Forgotten memories an administrator imports anew: their tombstones are marked replaced.
    replaces_tombstones: list[str] = field(default_factory=list)


def read_jsonl(data: bytes, report: ImportReport, progress: ImportProgress = no_progress,
               scope_properties: tuple[str, ...] = (),
               give_way: Callable[[], None] = lambda: None,
               bound: Scope | None = None) -> list[tuple[int, dict[str, Any]]]:
    """Each non-blank line as a JSON object with its id (derived from the line and its scope when it has none);
    for a scoped caller (`bound`), in its scope (a line naming another is invalid).

    Lines end at "\\n" only (a trailing "\\r" is dropped): U+2028 and other Unicode line breaks are content.
    """
    total = _line_count(data)
    progress(READ, 0, total)
    bodies = []
    for number, raw in enumerate(_lines(data), start=1):
        if number % PROGRESS_EVERY == 0:
            progress(READ, number, total)
        if number % GIVE_WAY_EVERY == 0:
            give_way()
        raw = raw.removesuffix(b"\r")
        if not raw.strip():
            continue
        report.lines += 1
        try:
            body = parse_json(raw, field="line")
            if not isinstance(body, dict):
                raise InvalidInput("line", "must be a JSON object")
            if bound is not None:
                if (named := other_scope(body, bound)) is not None:
                    raise InvalidInput(named, "this token writes only in its own scope")
                body.update(bound)
            body.setdefault("id", import_id(body, scope_properties))
            if "embedding" in body:
                body["embedding"] = packed_embedding(body["embedding"])
            bodies.append((number, body))
        except InvalidInput as exc:
            report.add_error(number, exc)
    progress(READ, total, total)
    return bodies


def _lines(data: bytes) -> Iterator[bytes]:
    """The lines of `data`, one at a time: a final newline ends the last line and starts none."""
    start = 0
    while start < len(data):
        end = data.find(b"\n", start)
        end = len(data) if end < 0 else end
        yield data[start:end]
        start = end + 1


def _line_count(data: bytes) -> int:
    """How many lines `data` holds, counted COUNT_BYTES at a time."""
    newlines = sum(data.count(b"\n", at, at + COUNT_BYTES) for at in range(0, len(data), COUNT_BYTES))
    return newlines + int(bool(data) and not data.endswith(b"\n"))


def shift_times(bodies: list[tuple[int, dict[str, Any]]], now: datetime,
                report: ImportReport) -> list[tuple[int, dict[str, Any]]]:
    """Move every time by one offset so that the newest becomes `now`: a fixture keeps its shape. Returns the
    lines shifted; a line whose times cannot be is an error (and, when bad lines are skipped, left out)."""
    times = {number: _times_of(body) for number, body in bodies}
    for number, found in times.items():
        if found is None:
            report.add_error(number, InvalidInput("timestamp", "every line needs ISO-8601 times to shift them"))
    if report.stops_on(report.errors):
        return bodies
    bodies = [(number, body) for number, body in bodies if times[number] is not None]
    if not bodies:
        return bodies
    delta = now - max(max(times[number]) for number, _ in bodies)
    return [(number, body) for number, body in bodies if _shifted(number, body, delta, report)]


def _times_of(body: dict[str, Any]) -> list[datetime] | None:
    """A line's times: its timestamp, and the others when given; None if one is not a readable time string
    (missing, null, a number): that is the line's error, not the service's."""
    given = [body.get(name) for name in TIME_FIELDS if name == "timestamp" or body.get(name) is not None]
    try:
        if not all(isinstance(value, str) for value in given):
            raise ValueError("not a time string")
        return [parse_iso(value) for value in given]
    except ValueError:
        return None


def _shifted(number: int, body: dict[str, Any], delta: timedelta, report: ImportReport) -> bool:
    """The line's times moved by `delta`; False (the line's error) if one falls out of the date range."""
    for name in TIME_FIELDS:
        if isinstance(body.get(name), str):
            try:
                body[name] = to_iso(parse_iso(body[name]) + delta)
            except OverflowError:
                report.add_error(number, InvalidInput(name, "shifted to now it falls before year 1"))
                return False
    return True


def parse_lines(bodies: list[tuple[int, dict[str, Any]]], parse: Callable[[Any], NewMemory],
                report: ImportReport, progress: ImportProgress = no_progress,
                give_way: Callable[[], None] = lambda: None) -> list[ImportLine]:
    """Validate each line; a line repeating an earlier line's id is skipped if it says the same, else refused."""
    lines: list[ImportLine] = []
    first: dict[str, ImportLine] = {}
    progress(CHECKED, 0, len(bodies))
    for done, (number, body) in enumerate(bodies):
        if done and done % PROGRESS_EVERY == 0:
            progress(CHECKED, done, len(bodies))
        if done % GIVE_WAY_EVERY == 0:
            give_way()
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
