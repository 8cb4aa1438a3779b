"""Purges on request: every memory of a scope holding an identifier, previewed (each memory's text, state and
whether it says more, a page at a time), then deleted or redacted; with erase, the identifier and the deleted
texts leave every record the service keeps. Guarded: a match that is no identifier, or that would take a large
share of its scope, runs only with the count its preview found. The RequestRecord written before the first step
keeps a keyed digest of the match, never the match; a crash's restart finds the identifier again in the texts
that still hold it."""

from __future__ import annotations

import logging
import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ..embedding import Embedder
from ..errors import Conflict, InvalidInput
from ..identifiers import (REDACTED_MARK, comparable, digest, holds, identifier_kind, identifier_pattern,
                           recovered, redacted, says_more, scrubbed)
from ..memory import BUILT_IN_EMBEDDER, EMBEDDED_BY
from ..stores.audit import AuditLog
from ..stores.erasure import ErasureStore
from ..stores.requests import RequestRecords
from ..stores.vectors import VectorPoint, payload_of
from ..timeutil import to_iso
from .service import Lifecycle
from .states import ACTIVE, DELETED, state_of

log = logging.getLogger(__name__)
PURGE = "purge"
LISTED = 100  # memory ids an answer lists (its page of memories aside)
# Without expected_count, a purge may take at most MAX_SHARE of its scope's memories, unless it takes no more
# than FEWEST_GUARDED: an identifier names one person or account, and a match held by a tenth of a store is a
# word many texts share more likely than the identifier of one of them.
MAX_SHARE = 0.10
FEWEST_GUARDED = 3


@dataclass(frozen=True)
class PurgeAsk:
    """A purge as asked: the match, what to do, the count its preview found, the scope and the page to list."""

    match: str
    dry_run: bool = True
    erase: bool = False
    redact: bool = False
    expected_count: int | None = None
    scope: dict[str, str | None] | None = None
    offset: int = 0
    limit: int = 50


@dataclass(frozen=True)
class Found:
    """What holds the identifier in the scope: memories (by id, with their texts), active summaries quoting it,
    deleted memories whose tombstones keep it, and how many memories the scope has."""

    texts: dict[str, str]
    summaries: list[str]
    deleted: list[str]
    scope_memories: int

    @property
    def matched(self) -> int:
        return len(self.texts)


class Purges:
    """Preview and purge memories holding an identifier, as an administrator asks."""

    def __init__(self, lifecycle: Lifecycle, embedder: Embedder, refresh_summaries: Callable[[], int],
                 clock: Callable[[], datetime], record_key: bytes):
        self.lifecycle = lifecycle
        self.graph = lifecycle.graph
        self.embedder = embedder
        self.refresh_summaries = refresh_summaries
        self.clock = clock
        self.record_key = record_key  # the digests' key: from the settings, never in a store
        self.records = RequestRecords(self.graph.falkor)
        self.audit = AuditLog(self.graph.falkor)
        self.erasure = ErasureStore(self.graph.falkor)

    def purge(self, ask: PurgeAsk, requester: str) -> dict[str, Any]:
        """A dry run's preview, or the purge done (after its guard)."""
        pattern = identifier_pattern(ask.match)
        found = self._found(pattern, ask.scope)
        redacting = sorted(i for i, text in found.texts.items() if ask.redact and says_more(text, pattern))
        deleting = sorted(set(found.texts) - set(redacting))
        refusal = refused(ask, identifier_kind(ask.match), found.matched, found.scope_memories)
        if ask.dry_run:
            return {**self._counts(ask, found, deleting, redacting), **self._page(ask, found, redacting, pattern),
                    "identifier": identifier_kind(ask.match), "refused": refusal.detail if refusal else None}
        if refusal is not None:
            raise refusal
        plan = {"ids": deleting, "deleted": found.deleted if ask.erase else [], "summaries": found.summaries,
                "redactions": [{"id": i, "content": redacted(found.texts[i], pattern, REDACTED_MARK)}
                               for i in redacting],
                "erase": ask.erase, "digest": digest(ask.match, self.record_key), "length": len(comparable(ask.match))}
        record = self.records.begin({"id": (record_id := str(uuid.uuid4())), "key": f"{PURGE}:{record_id}",
                                     "kind": PURGE, "memory_id": None, "requester": requester,
                                     "at": to_iso(self.clock()), "plan": plan})
        return self.finish(record, pattern)

    def _found(self, pattern: re.Pattern[str], scope: dict[str, str | None] | None) -> Found:
        graph = self.graph.within(scope) if scope is not None else self.graph
        ids, contents, summaries = graph.contents_in_scope()
        holding = [(i, c, s) for i, c, s in zip(ids, contents, summaries) if c and holds(c, pattern)]
        key = graph.scoping.key_of(scope) if scope is not None else None
        deleted = sorted(memory_id for memory_id, props in self.lifecycle.tombstones.deleted_memories()
                         if (key is None or graph.scoping.key_of(props) == key)
                         and holds(str(props.get("content") or ""), pattern))
        return Found({i: c for i, c, s in holding if not s}, sorted(i for i, _, s in holding if s), deleted, len(ids))

    def _counts(self, ask: PurgeAsk, found: Found, deleting: list[str], redacting: list[str]) -> dict[str, Any]:
        return {"dry_run": ask.dry_run, "erase": ask.erase, "redact": ask.redact, "matched": found.matched,
                "scope_memories": found.scope_memories, "memory_ids": sorted(found.texts)[:LISTED],
                "deleting": len(deleting), "redacting": len(redacting), "summaries_quoting": len(found.summaries),
                "deleted_holding": len(found.deleted)}

    def _page(self, ask: PurgeAsk, found: Found, redacting: list[str], pattern: re.Pattern[str]) -> dict[str, Any]:
        """One page of the memories holding it, as they are: text, state, and what the purge would do."""
        ids = sorted(found.texts)[ask.offset:ask.offset + ask.limit]
        stored = {m["id"]: m for m in self.graph.get_memories(ids)}
        listed = [{"id": i, "content": found.texts[i], "type": stored.get(i, {}).get("type") or "Memory",
                   "state": shown_state(stored[i]) if i in stored else DELETED,
                   "superseded_by": stored.get(i, {}).get("superseded_by"),
                   "merged_into": stored.get(i, {}).get("merged_into"),
                   "says_more": says_more(found.texts[i], pattern),
                   "action": "redact" if i in redacting else "delete"} for i in ids]
        following = ask.offset + len(ids)
        return {"memories": listed, "offset": ask.offset, "limit": ask.limit,
                "next_offset": following if following < found.matched else None}

    # --- the purge, step by step (each safe to repeat) -------------------------------------------------------

    def finish(self, record: dict[str, Any], pattern: re.Pattern[str] | None = None) -> dict[str, Any]:
        """Delete, scrub, redact, rebuild, erase, in an order that keeps the identifier findable (for a restart,
        which has only its digest) in some text until the last step that needs it."""
        plan, at = record["plan"], self.clock()
        pattern = pattern or self._recovered(plan)
        present = self.graph.existing_ids(plan["ids"])
        self.lifecycle.delete({i: "purged on request" for i in plan["ids"] if i in present}, at)
        if plan["erase"] and pattern is not None:
            self.lifecycle.hygiene.erase_records(plan["ids"] + plan["deleted"])
            self._scrub(pattern, record["id"])
        self._redact(plan["redactions"])
        self.refresh_summaries()
        still = sorted(i for i, text in self.graph.memory_contents(plan["summaries"]).items()
                       if pattern is not None and holds(text, pattern))
        self.lifecycle.delete({i: "purged on request: the summary still quoted it" for i in still}, at)
        gone = plan["ids"] + still
        if plan["erase"]:
            # With the summaries an earlier attempt deleted (before a crash): their tombstones quote it too.
            left = self.graph.existing_ids(plan["summaries"])
            self.lifecycle.tombstones.erase(gone + plan["deleted"] + [i for i in plan["summaries"] if i not in left])
            self.graph.falkor.forget_query_log()
        answer = {"dry_run": False, "erase": plan["erase"], "redact": bool(plan["redactions"]),
                  "matched": len(plan["ids"]) + len(plan["redactions"]), "memory_ids": plan["ids"][:LISTED],
                  "deleted": len(gone), "redacted": len(plan["redactions"]),
                  "redacted_ids": [r["id"] for r in plan["redactions"]][:LISTED],
                  "summaries_quoting": len(plan["summaries"]), "summaries_deleted": len(still),
                  "deleted_erased": len(plan["deleted"])}
        # The redacted texts hold no identifier, but they are texts: the settled record keeps ids and counts.
        self.records.settle(record["id"], "done", {"answer": answer, "done_at": to_iso(at), "plan": {
            **plan, "redactions": [{"id": r["id"]} for r in plan["redactions"]]}})
        self.audit.record(PURGE, to_iso(at), requested_by=record["requester"], memories=len(gone),
                          redacted=len(plan["redactions"]), erase=plan["erase"])
        if plan["erase"]:
            self.graph.falkor.rewrite_files()  # what the graph no longer holds leaves its files too
        return answer

    def _recovered(self, plan: dict[str, Any]) -> re.Pattern[str] | None:
        """The identifier of an interrupted purge, found again by its digest in the texts that may still hold it
        (the memories not yet deleted or redacted, their tombstones, the summaries); None when none does: every
        step that needed it was done before the crash."""
        ids = plan["ids"] + [r["id"] for r in plan["redactions"]] + plan["summaries"] + plan["deleted"]
        texts = [*self.graph.memory_contents(ids).values(), *self.lifecycle.tombstones.contents_of(ids)]
        found = recovered(texts, plan["digest"], plan["length"], self.record_key)
        if found is None:
            log.info("purge resumed after a restart: its identifier is in none of its memories' texts any more")
        return None if found is None else identifier_pattern(found)

    def _scrub(self, pattern: re.Pattern[str], record_id: str) -> None:
        """The identifier out of every record and edge: run reports, tombstones (those erased next among them),
        merge and request records, entities, edges' reasons."""
        self.erasure.scrub_records(lambda value: scrubbed(value, pattern), keep=record_id)
        self.erasure.scrub_edges(lambda value: scrubbed(value, pattern))

    def _redact(self, redactions: list[dict[str, str]]) -> None:
        """Each memory's text without the identifier; a vector the service made is made again from it (a
        client's vector stays: its model is not ours to run)."""
        if not redactions:
            return
        self.erasure.redact(redactions)
        memories = [m for m in self.graph.get_memories([r["id"] for r in redactions])
                    if m.get(EMBEDDED_BY) == BUILT_IN_EMBEDDER]
        if memories:
            vectors = self.embedder.embed([m.get("content") or "" for m in memories])
            self.lifecycle.vectors.upsert([VectorPoint(m["id"], v, payload_of(m, self.graph.scoping))
                                           for m, v in zip(memories, vectors)])


def shown_state(memory: dict[str, Any]) -> str:
    """A memory's state as a reader of a preview needs it: superseded apart from active (recall no longer
    answers it)."""
    state = state_of(memory)
    return "superseded" if memory.get("superseded_by") and state == ACTIVE else state


def refused(ask: PurgeAsk, kind: str | None, matched: int, scope_memories: int) -> InvalidInput | Conflict | None:
    """Why this purge may not run as asked (None: it may). With expected_count, only a count that is not what
    the store holds now stops it; without, a match that is no identifier, or one taking more than MAX_SHARE of
    the scope's memories (and more than FEWEST_GUARDED)."""
    if ask.expected_count is not None:
        if ask.expected_count != matched:
            return Conflict(f"expected_count is {ask.expected_count}, but {matched} memories hold it now: preview "
                            "it again (dry_run) and repeat with that count", matched=matched)
        return None
    if kind is None:
        return InvalidInput("match", f"{ask.match!r} is not an identifier (an e-mail, a URL or domain, a phone "
                                     "number, a number of 4 digits or more, a code of letters and digits, or a "
                                     "name written with capitals, not a function word): its preview (dry_run) "
                                     f"counts what it matches ({matched} memories); repeat with expected_count "
                                     "set to that count")
    if matched > FEWEST_GUARDED and matched > MAX_SHARE * scope_memories:
        return Conflict(f"this purge would take {matched} of the scope's {scope_memories} memories, more than "
                        f"{MAX_SHARE:.0%}: if that is meant, repeat it with expected_count {matched}",
                        matched=matched, scope_memories=scope_memories)
    return None
