"""What a purge rewrites besides deleting: memories' texts redacted, and, for an erase, an identifier scrubbed from
every record and edge the service keeps (run reports, tombstones, merge and request records, edge reasons)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .changes import MARK_SUMMARIES, NEXT_CHANGE, STAMP, TOUCH
from .falkor import Falkor
from .fact_terms import TERMS_OF_MEMORY

SCRUB_PAGE = 2000  # records read at once when an erase rewrites them
Rewrite = Callable[[Any], Any]  # a stored value -> the same object (nothing to change) or its replacement


class ErasureStore:
    """The graph writes of a redaction and of an erase's scrub, a page or a chunk at a time."""

    def __init__(self, falkor: Falkor):
        self.falkor = falkor

    def redact(self, rows: Sequence[dict[str, str]]) -> None:
        """Give these memories ({id, content}) their redacted text: a change (dedup reads them again), the
        summaries they are members of marked to be rebuilt, and the fact terms dedup read off the old text gone
        (they are words of it)."""
        self.falkor.write_chunks(MARK_SUMMARIES, [row["id"] for row in rows])
        self.falkor.write_chunks(
            NEXT_CHANGE + "UNWIND $rows AS row MATCH (m:Memory {id: row.id}) "
            f"SET m.content = row.content, {STAMP} WITH m {TERMS_OF_MEMORY}DELETE f", list(rows))

    def scrub_records(self, rewrite: Rewrite, keep: str | None = None) -> int:
        """Rewrite every property of the service's own records (every node but memories: run reports,
        tombstones, merge and request records, audit entries, entities, verdicts) with `rewrite`, a page of nodes
        at a time, except the record whose id is `keep`; returns how many nodes changed."""
        labels = [row[0] for row in self.falkor.records("CALL db.labels()", read_only=True)]
        changed = 0
        for label in sorted(set(labels) - {"Memory", "MetaPattern", TOUCH}):
            after = -1
            while True:
                rows = self.falkor.records(
                    f"MATCH (n:`{label}`) WHERE id(n) > $after AND NOT n:Memory RETURN id(n), properties(n) "
                    "ORDER BY id(n) LIMIT $page", {"after": after, "page": SCRUB_PAGE}, read_only=True)
                rewritten = [[node, fields] for node, props in rows
                             if (keep is None or dict(props).get("id") != keep)
                             and (fields := _rewritten(dict(props), rewrite))]
                self.falkor.write_chunks("UNWIND $rows AS row MATCH (n) WHERE id(n) = row[0] SET n += row[1]",
                                         rewritten)
                changed += len(rewritten)
                if len(rows) < SCRUB_PAGE:
                    break
                after = rows[-1][0]
        return changed

    def scrub_edges(self, rewrite: Rewrite) -> int:
        """Rewrite every property of every edge at a memory (a supersession's or a contradiction's reason quotes
        the texts it judged) with `rewrite`, the memories read a page of node ids at a time; returns how many
        edges changed."""
        rows = self.falkor.scan_records("true", "id(m), id(r), properties(r)", then="MATCH (m)-[r]-()")
        rewritten, seen = [], set()
        for node, edge, props in rows:
            if edge not in seen:
                seen.add(edge)
                if fields := _rewritten(dict(props), rewrite):
                    rewritten.append([node, edge, fields])
        self.falkor.write_chunks("UNWIND $rows AS row MATCH (m)-[r]-() WHERE id(m) = row[0] AND id(r) = row[1] "
                                 "SET r += row[2]", rewritten)
        return len(rewritten)


def _rewritten(props: dict[str, Any], rewrite: Rewrite) -> dict[str, Any]:
    """The properties `rewrite` changes, with their new values."""
    return {name: new for name, old in props.items() if (new := rewrite(old)) is not old}
