"""The CLI's side of a running service: import in checked chunks and run consolidation over HTTP."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import httpx

from .errors import GRAPH_HEADER, ServiceError
from .importing import CHECKED, REPORTED_LINES, WRITTEN, ImportProgress, no_progress

CHUNK_LINES = 2000
CHUNK_BYTES = 4 * 1024 * 1024
POLL_SECONDS = 0.5
UNFINISHED = ("queued", "running")  # a queued run waits for a worker: follow it until it has ended


class RemoteError(ServiceError):
    """The service refused a request or could not be reached."""


class RemoteService:
    def __init__(self, url: str, token: str, graph: str | None = None, timeout: float = 300):
        # Every request names the graph, when one is given: the status URL a run answers with is the graph's too.
        headers = {"Authorization": f"Bearer {token}", **({GRAPH_HEADER: graph} if graph else {})}
        self.client = httpx.Client(base_url=url.rstrip("/"), timeout=timeout, headers=headers)

    def close(self) -> None:
        self.client.close()

    def memory_count(self) -> int:
        return self._json("GET", "/consolidate/status")["store_counts"]["graph_memories"]

    def import_jsonl(self, data: bytes, *, shift_to_now: bool, overwrite: bool, dry_run: bool,
                     skip_bad_lines: bool = False, progress: ImportProgress = no_progress) -> dict[str, Any]:
        """All or nothing across chunks: every chunk is checked (a dry run) before the first one is written.

        Only a failure of the service itself between chunks can leave part of a file written; the report then
        says exactly how many lines were written and where it stopped. Progress counts the (non-blank) lines
        of the chunks the service has checked, then of those it has written. Skipping bad lines, each chunk is
        written as it comes (import_skipping).
        """
        chunks = split_chunks(data)
        if shift_to_now and len(chunks) > 1:
            raise RemoteError(f"--shift-to-now with --url takes one request: at most {CHUNK_LINES} lines, "
                              f"{CHUNK_BYTES // 2**20} MB")
        total = sum(1 for line in data.split(b"\n") if line.strip())
        if skip_bad_lines:
            return self.import_skipping(data, chunks, total, shift_to_now, overwrite, dry_run, progress)
        checks, done = [], 0
        progress(CHECKED, 0, total)
        for first, chunk in chunks:
            checks.append(self._import(chunk, first, shift_to_now, overwrite, True))
            done += checks[-1]["lines"]
            progress(CHECKED, done, total)
        checked = _merged(checks)
        if len(chunks) > 1:
            reported = {error["line"] for error in checked["errors"]}
            repeated = [error for error in _repeated_ids(data) if error["line"] not in reported]
            checked["errors"] += repeated
            checked["errors_total"] += len(repeated)
        if dry_run:
            return _totals(checked, dry_run=True)
        if checked["errors"] or checked["conflicts"]:  # refused: the counts are what was written, nothing
            return _totals({**checked, "created": 0, "overwritten": 0, "imported": 0, "skipped": 0,
                            "skipped_lines": []}, dry_run=False)
        written, done = [], 0
        progress(WRITTEN, 0, total)
        for first, chunk in chunks:
            report = self._import(chunk, first, shift_to_now, overwrite, False)
            written.append(report)
            done += report["lines"]
            progress(WRITTEN, done, total)
            if report["errors"] or report["conflicts"]:
                return {**_totals(_merged(written), dry_run=False), "stopped_at_line": first}
        return _totals(_merged(written), dry_run=False)

    def import_skipping(self, data: bytes, chunks: list[tuple[int, bytes]], total: int, shift_to_now: bool,
                        overwrite: bool, dry_run: bool, progress: ImportProgress) -> dict[str, Any]:
        """Each chunk written (or checked) with its bad lines left out: no chunk waits for the others. A line
        repeating an earlier line's id with other fields is left out here (sent blank: the numbers stay), as
        the service leaves it out within one request."""
        repeated = _repeated_ids(data) if len(chunks) > 1 else []
        chunks = _blanked(chunks, {error["line"] for error in repeated})
        stage, reports, done = (CHECKED if dry_run else WRITTEN), [], 0
        progress(stage, 0, total)
        for first, chunk in chunks:
            reports.append(self._import(chunk, first, shift_to_now, overwrite, dry_run, skip_bad_lines=True))
            done += reports[-1]["lines"]
            progress(stage, done, total)
        merged = _merged(reports)
        merged["errors"] = sorted(merged["errors"] + repeated, key=lambda error: error["line"])
        for key in ("lines", "errors_total", "bad_lines_skipped"):
            merged[key] += len(repeated)
        progress(stage, total, total)
        return _totals(merged, dry_run=dry_run, skip_bad_lines=True)

    def consolidate(self, tasks: list[str] | None, dry_run: bool, progress: Callable[[dict], None],
                    full_pass: bool = False, incremental: bool = False, as_of: str | None = None) -> dict[str, Any]:
        """Start a run (202) and follow it until it ends; the run's record is the result."""
        body: dict[str, Any] = {"dry_run": dry_run, "trigger": "cli", **({"full": True} if full_pass else {}),
                                **({"incremental": True} if incremental else {}), **({"as_of": as_of} if as_of else {})}
        if tasks:
            body["task"] = tasks[0]
        started = self._json("POST", "/consolidate", json=body)
        while True:
            run = self._json("GET", started["status_url"])
            if run.get("state") not in UNFINISHED:
                return run
            progress(run)
            time.sleep(POLL_SECONDS)

    def _import(self, chunk: bytes, first: int, shift_to_now: bool, overwrite: bool, dry_run: bool,
                skip_bad_lines: bool = False) -> dict:
        params = {"shift_to_now": _flag(shift_to_now), "overwrite": _flag(overwrite), "dry_run": _flag(dry_run),
                  # Only when asked: a service older than the flag still takes every other import.
                  **({"skip_bad_lines": "true"} if skip_bad_lines else {})}
        reply = self._request("POST", "/memory/import", content=chunk, params=params,
                              headers={"Content-Type": "application/x-ndjson"})
        body = _body(reply)
        if reply.status_code not in (200, 400, 409) or "lines" not in body:
            raise RemoteError(_describe(reply, body))
        for entry in body["errors"] + body["conflicts"] + body["skipped_lines"]:
            entry["line"] += first - 1
        return body

    def _json(self, method: str, path: str, **kwargs) -> dict[str, Any]:
        reply = self._request(method, path, **kwargs)
        body = _body(reply)
        if reply.status_code >= 300:
            raise RemoteError(_describe(reply, body))
        return body

    def _request(self, method: str, path: str, **kwargs) -> httpx.Response:
        try:
            return self.client.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            raise RemoteError(f"cannot reach the service at {self.client.base_url}: {exc}") from None


def split_chunks(data: bytes) -> list[tuple[int, bytes]]:
    """The file in chunks of whole lines, each with the number of its first line."""
    lines = data.split(b"\n")
    chunks, start, size = [], 0, 0
    for index, line in enumerate(lines):
        if index > start and (index - start >= CHUNK_LINES or size + len(line) > CHUNK_BYTES):
            chunks.append((start + 1, b"\n".join(lines[start:index])))
            start, size = index, 0
        size += len(line) + 1
    chunks.append((start + 1, b"\n".join(lines[start:])))
    return chunks


def _repeated_ids(data: bytes) -> list[dict[str, Any]]:
    """An explicit id on two lines that differ (the service checks this within one request, not across them)."""
    seen: dict[str, tuple[int, bytes]] = {}
    errors = []
    for number, line in enumerate(data.split(b"\n"), start=1):
        try:
            memory_id = json.loads(line).get("id")
        except (ValueError, AttributeError):
            continue
        if not isinstance(memory_id, str):
            continue
        earlier = seen.setdefault(memory_id.lower(), (number, line.strip()))
        if earlier[0] != number and earlier[1] != line.strip():
            errors.append({"line": number, "field": "id", "detail": f"line {earlier[0]} has this id with other fields"})
    return errors


def _blanked(chunks: list[tuple[int, bytes]], numbers: set[int]) -> list[tuple[int, bytes]]:
    """The chunks with these lines (numbered in the file) made blank: the service skips a blank line."""
    if not numbers:
        return chunks
    return [(first, b"\n".join(b"" if first + offset in numbers else line
                                for offset, line in enumerate(chunk.split(b"\n")))) for first, chunk in chunks]


def _merged(reports: list[dict[str, Any]]) -> dict[str, Any]:
    merged: dict[str, Any] = {"lines": 0, "created": 0, "overwritten": 0, "imported": 0, "skipped": 0,
                              "skipped_lines": [], "conflicts": [], "errors": [], "conflicts_total": 0,
                              "errors_total": 0, "bad_lines_skipped": 0}
    for report in reports:
        for key in ("lines", "created", "overwritten", "imported", "skipped", "conflicts_total", "errors_total",
                    "bad_lines_skipped"):
            merged[key] += report.get(key, 0)  # bad_lines_skipped: not from a service older than the flag
        for key in ("skipped_lines", "conflicts", "errors"):
            merged[key] += report[key]
    return merged


def _totals(report: dict[str, Any], dry_run: bool, skip_bad_lines: bool = False) -> dict[str, Any]:
    """A merged report in the shape of one import's (ImportReport.public): the lists cut to the first lines of
    each kind, with their totals (every line, skipping bad lines)."""
    shown = None if skip_bad_lines else REPORTED_LINES
    return {**report, "conflicts": report["conflicts"][:shown], "errors": report["errors"][:shown],
            "skipped_lines": report["skipped_lines"][:shown], "dry_run": dry_run, "skip_bad_lines": skip_bad_lines}


def _body(reply: httpx.Response) -> dict[str, Any]:
    try:
        body = reply.json()
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}


def _describe(reply: httpx.Response, body: dict[str, Any]) -> str:
    return f"the service answered {reply.status_code}: {body.get('detail') or reply.text[:200]}"


def _flag(value: bool) -> str:
    return "true" if value else "false"
