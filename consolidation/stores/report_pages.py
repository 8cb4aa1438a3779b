"""Every item of the run reports' lists, kept beside the run records a chunk a node, read back a page at a time."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

from .authors import RUN_LABEL
from .falkor import Falkor

# A run record keeps the first CONSOLIDATION_REPORT_LIMIT items of each list: the history, the status and
# POST /consolidate's answer read it whole, so it stays small. Every item is kept here instead, so that a report
# pages to its last one. An item takes what its JSON takes in the graph: 206 bytes for a forget decision (its id,
# action, reason, relevance and when it may be deleted; the memory's text is read when its page is opened), about
# 3.7 KB for a cluster with its first 100 member ids. A forget deciding on every one of a million memories keeps
# 206 MB (docs/http.md, "Report lists page to their last item"), so what is kept over every run is bounded by
# CONSOLIDATION_REPORT_KEPT_BYTES (256 MB): the newest runs keep their lists, older ones then page through what
# their records keep.
PAGE_LABEL = "ConsolidationServiceReportPage"
# Items a node holds: 206 KB of forget decisions; a page of 500 reads at most two nodes.
ITEMS_PER_NODE = 1000
# Nodes a write creates: on a graph of a million memories a write took 20-27 ms whether it created one node or
# four (1,000 nodes: 20.5 s one a write, 5.0-6.7 s four); more would hold the whole server longer at a time.
NODES_PER_WRITE = 4


class ReportPages:
    """Report lists by run, task and list name, stored in order in chunks (`start`: the first item's position)."""

    def __init__(self, falkor: Falkor):
        self.falkor = falkor

    def save(self, run_id: str, task: str, lists: Mapping[str, list[dict[str, Any]]], most_bytes: int) -> int:
        """Keep these lists of a task's report within `most_bytes` (a list that would go beyond keeps its first
        whole chunks, the lists after it none); returns the bytes kept."""
        kept, batch = 0, []
        for node in _nodes(lists, max(most_bytes, 0)):  # encoded as written: a million items are 206 MB of JSON
            kept += node["bytes"]
            batch.append(node)
            if len(batch) == NODES_PER_WRITE:
                self._create(run_id, task, batch)
                batch = []
        if batch:
            self._create(run_id, task, batch)
        return kept

    def _create(self, run_id: str, task: str, nodes: list[dict[str, Any]]) -> None:
        self.falkor.execute(f"UNWIND $nodes AS node CREATE (p:{PAGE_LABEL}) SET p = node, p.run_id = $run, "
                            "p.task = $task", {"nodes": nodes, "run": run_id, "task": task})

    def read(self, run_id: str, task: str, limit: int, offset: int) -> dict[str, tuple[int, list[dict[str, Any]]]]:
        """Each kept list of the task's report: how many items it keeps, and at most `limit` of them from
        `offset` on (only the chunks holding those are read)."""
        rows = self.falkor.records(
            f"MATCH (p:{PAGE_LABEL} {{run_id: $run}}) WHERE p.task = $task "
            "RETURN p.list, p.start, p.count, "
            "CASE WHEN p.start + p.count > $offset AND p.start < $end THEN p.items END ORDER BY p.start",
            {"run": run_id, "task": task, "offset": offset, "end": offset + limit}, read_only=True)
        kept: dict[str, int] = {}
        read: dict[str, tuple[int, list[dict[str, Any]]]] = {}  # list -> the first chunk read's start, the items
        for name, start, count, items in rows:
            kept[name] = kept.get(name, 0) + int(count)
            if items is not None:
                first, held = read.get(name, (int(start), []))
                read[name] = (first, held + json.loads(items))
        pages = {}
        for name, count in kept.items():
            first, held = read.get(name, (offset, []))
            pages[name] = (count, held[offset - first:offset - first + limit])
        return pages

    def prune(self, most_bytes: int) -> None:
        """Keep the lists of the newest runs while they hold at most `most_bytes` in all; those of older runs,
        and of runs no longer kept, go."""
        rows = self.falkor.records(
            f"MATCH (p:{PAGE_LABEL}) OPTIONAL MATCH (r:{RUN_LABEL} {{id: p.run_id}}) "
            "RETURN p.run_id, r.started_at, sum(p.bytes)", read_only=True)
        dropped = [run_id for run_id, started, _ in rows if started is None]
        held = 0
        for run_id, _, size in sorted((row for row in rows if row[1] is not None), key=lambda row: row[1],
                                      reverse=True):
            held += int(size)
            if held > most_bytes:
                dropped.append(run_id)
        if dropped:
            self.falkor.execute(f"MATCH (p:{PAGE_LABEL}) WHERE p.run_id IN $runs DELETE p", {"runs": dropped})


def _nodes(lists: Mapping[str, list[dict[str, Any]]], most_bytes: int) -> Iterator[dict[str, Any]]:
    """The lists' chunks as nodes' properties, as many whole ones as `most_bytes` holds, in order."""
    left = most_bytes
    for name, items in lists.items():
        for start in range(0, len(items), ITEMS_PER_NODE):
            chunk = items[start:start + ITEMS_PER_NODE]
            # Escaped as run records are (an erase finds an identifier alike), without spaces (5 % smaller).
            encoded = json.dumps(chunk, separators=(",", ":"))
            if len(encoded) > left:
                return
            left -= len(encoded)
            yield {"list": name, "start": start, "count": len(chunk), "bytes": len(encoded), "items": encoded}
