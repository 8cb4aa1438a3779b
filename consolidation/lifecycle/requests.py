"""Updates and forgetting on request: supersede a memory (splitting a compound one), undo that, forget one; a
purge is purge.py's. A supersede writes a RequestRecord before its first step and finishes from it, so a crash
leaves the request to be finished, never half done."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import logging
import uuid
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

import numpy as np

from ..embedding import Embedder
from ..errors import Conflict, IdempotencyKeyReused, InvalidInput, NotFound
from ..hygiene.compound import survivors
from ..memory import BUILT_IN_EMBEDDER, EMBEDDED_BY, parse_uuid
from ..stores.audit import AuditLog
from ..stores.requests import RequestRecords
from ..stores.vectors import VectorPoint, payload_of
from ..timeutil import to_iso
from .proposals import Proposals
from .purge import Purges
from .service import Lifecycle, decode_vector
from .states import ACTIVE, DELETED, check, state_of

log = logging.getLogger(__name__)
SUPERSEDE = "supersede"
# What a survivor of a split keeps of the memory it came from (its text is its own).
# What a newer memory takes of the one it supersedes unless the request gives it (its scope it always takes).
INHERITED = ("type", "tags")
KEPT_FIELDS = ("type", "importance", "confidence", "tags", "timestamp", "protected", "protected_reason",
               EMBEDDED_BY, "embedding_model")


class Requests:
    """Supersede, undo and forget as an agent or an administrator asks them; purges (purge.py) beside them.
    `bound`, where a method takes it, is the scope a scoped token is bound to: another scope's memory is not
    found, as if it did not exist."""

    def __init__(self, lifecycle: Lifecycle, new_memory: Callable[[Any], Any], embedder: Embedder,
                 refresh_summaries: Callable[[], int], clock: Callable[[], datetime], record_key: bytes,
                 retention_days: float, text_work: Callable[[str], None] = lambda what: None):
        self.lifecycle = lifecycle
        self.graph = lifecycle.graph
        self.vectors = lifecycle.vectors
        self.new_memory = new_memory  # body -> NewMemory, validated as POST /memory validates it
        self.embedder = embedder
        self.text_work = text_work  # raises when the configured model may not embed text for this store
        # Summaries a request took a member from are rebuilt before the request is settled (a crash first: the
        # pending request is finished again at start-up, this step with it).
        self.refresh_summaries = refresh_summaries
        self.clock = clock
        self.record_key = record_key  # the key of the requests' fingerprints (settings, never a store)
        self.retention_days = retention_days  # how long a deleted memory stays restorable (410's answer)
        self.records = RequestRecords(self.graph.falkor)
        self.audit = AuditLog(self.graph.falkor)
        self.purges = Purges(lifecycle, embedder, refresh_summaries, clock, record_key)
        self.proposals = Proposals(lifecycle, refresh_summaries, clock)

    # --- supersede -----------------------------------------------------------------------------------------

    def supersede(self, older_id: str, body: Any, key: str | None, requester: str,
                  bound: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The older memory superseded by a new memory (body: a memory) or an existing one (body: {"by": id}).
        The body is checked first (400), then the key (422 when it came with another request), then the
        memories' states (404, 409, 410)."""
        by = _checked_body(body, older_id, self.new_memory)
        fingerprint = _fingerprint(self.record_key, older_id, body)
        if key is not None:
            found = self.records.find(_key(SUPERSEDE, key))
            if found is not None:
                return self._repeat(found, older_id, fingerprint, bound)
        older = self._current(older_id, bound)
        created, newer_id, newer_content, embedding = self._newer(older, body, by, bound)
        if created is not None and embedding is None:
            self.text_work("a superseding memory without an embedding")
            created["embedding_model"] = self.embedder.model
        kept = survivors(older.get("content") or "", newer_content)
        plan = {"created": created, "embedding": _encoded(embedding),
                "survivors": [{"id": str(uuid.uuid4()), "content": text} for text in kept]}
        record_id = str(uuid.uuid4())
        record = self.records.begin({"id": record_id, "key": _key(SUPERSEDE, key or record_id), "kind": SUPERSEDE,
                                     "memory_id": older_id, "newer_id": newer_id, "requester": requester,
                                     "at": to_iso(self.clock()), "plan": plan, "fingerprint": fingerprint})
        if record["id"] != record_id:  # a concurrent retry with the same key began first
            return self._repeat(record, older_id, fingerprint, bound)
        return self._finish_supersede(record)

    def _repeat(self, record: dict[str, Any], older_id: str, fingerprint: str,
                bound: Mapping[str, Any] | None) -> dict[str, Any]:
        """What a retry with a known Idempotency-Key answers: the first answer, or, after an undo, the memory's
        state as it is now."""
        same = record.get("kind") == SUPERSEDE and record.get("memory_id") == older_id and (
            record.get("fingerprint") in (None, fingerprint))  # records of older versions kept no fingerprint
        if not same:
            raise IdempotencyKeyReused("this Idempotency-Key was used for another request (another memory or "
                                       "another body): use a new key for a new request")
        self._visible(older_id, bound)
        if record["state"] == "pending":
            return self._finish_supersede(record)
        if record["state"] == "undone":
            memory = self.graph.get_memory(older_id)
            state = DELETED if memory is None else "superseded" if memory.get("superseded_by") else state_of(memory)
            return {"memory_id": older_id, "state": state, "created": False, "survivors": [], "repeated": True,
                    "superseded_by": (memory or {}).get("superseded_by"), "undone_at": record.get("undone_at")}
        return {**record["answer"], "repeated": True}

    def _visible(self, memory_id: str, bound: Mapping[str, Any] | None) -> dict[str, Any]:
        """The stored memory as the caller may see it: NotFound (another scope's, or never stored), Gone (410:
        deleted or erased, with restorable_until)."""
        memory = self.graph.get_memory(memory_id)
        if memory is None or not self.graph.scoping.sees(memory, bound):
            self.lifecycle.describe(memory_id, self.retention_days, bound)  # raises
        return memory

    def _current(self, memory_id: str, bound: Mapping[str, Any] | None) -> dict[str, Any]:
        """The memory to supersede: it exists, may be superseded, and nothing superseded it yet."""
        memory = self._visible(memory_id, bound)
        check(SUPERSEDE, memory_id, state_of(memory))
        if memory.get("superseded_by"):
            raise Conflict(f"memory {memory_id} is already superseded by {memory['superseded_by']}; supersede "
                           "the newest memory of its chain (recall finds it)", state=state_of(memory))
        return memory

    def _newer(self, older: dict[str, Any], body: dict[str, Any], by: str | None,
               bound: Mapping[str, Any] | None) -> tuple[dict | None, str, str, np.ndarray | None]:
        """(the new memory's properties or None, its id, its content, the embedding sent)."""
        if by is not None:
            newer = self._visible(by, bound)
            if state_of(newer) != ACTIVE or newer.get("superseded_by"):
                raise Conflict(f"memory {by} is not current ({state_of(newer)}, superseded_by "
                               f"{newer.get('superseded_by')}): only a current memory supersedes another")
            if self.graph.scoping.key_of(newer) != self.graph.scoping.key_of(older):
                raise InvalidInput("by", "the newer memory belongs to another scope")
            return None, by, newer.get("content") or "", None
        scope = {name: older[name] for name in self.graph.scoping.properties if older.get(name) is not None}
        for name, value in scope.items():
            if body.get(name, value) != value:
                raise InvalidInput(name, "a memory is superseded within its scope: leave it out or give the "
                                         "older memory's value")
        # What the request leaves out of what it is, it is as the older memory was: its type and tags.
        inherited = {name: older[name] for name in INHERITED if older.get(name) is not None}
        memory = self.new_memory({**inherited, **scope, **body})
        if self.graph.existing_ids([memory.properties["id"]]):
            raise Conflict(f"memory {memory.properties['id']} already exists")
        return memory.properties, memory.properties["id"], memory.properties["content"], memory.embedding

    def _finish_supersede(self, record: dict[str, Any]) -> dict[str, Any]:
        """Every step, each safe to repeat: the new memory, the survivors, the supersession, the payload."""
        plan, older_id, newer_id = record["plan"], record["memory_id"], record["newer_id"]
        at = to_iso(self.clock())
        if plan["created"] is not None and not self.graph.existing_ids([newer_id]):
            vector = decode_vector(plan["embedding"])
            if vector is None:
                vector = self.embedder.embed([plan["created"]["content"]])[0]
            self._write(plan["created"], vector)
        older = self.graph.get_memory(older_id)
        if older is not None:
            self._split(older, plan["survivors"])
            self.lifecycle.hygiene.supersede([{"newer": newer_id, "older": older_id, "confidence": 1.0,
                                               "reason": f"superseded on request ({record['requester']})"}],
                                             at, origin="request")
            superseded = [older_id, *self.lifecycle.hygiene.merged_into_any([older_id])]
            self.vectors.set_superseded(superseded, True)
            self.lifecycle.mirror_validity([older_id])
            self.lifecycle.rescore(superseded, self.clock())
        self.refresh_summaries()
        answer = {"memory_id": older_id, "superseded_by": newer_id, "created": plan["created"] is not None,
                  "survivors": [s["id"] for s in plan["survivors"]], "state": "superseded"}
        self.records.settle(record["id"], "done", {"answer": answer, "done_at": at})
        self.audit.record(SUPERSEDE, at, memory_id=older_id, superseded_by=newer_id, requested_by=record["requester"],
                          survivors=answer["survivors"])
        return answer

    def _split(self, older: dict[str, Any], parts: list[dict[str, Any]]) -> None:
        """The facts of a compound memory the newer one leaves standing, each a memory of its own. A survivor
        keeps the older memory's vector when a client embedded it (the client's model is not ours to run)."""
        missing = [p for p in parts if p["id"] not in self.graph.existing_ids([p["id"] for p in parts])]
        if not missing:
            return
        built_in = older.get(EMBEDDED_BY) == BUILT_IN_EMBEDDER
        if built_in:
            vectors = self.embedder.embed([p["content"] for p in missing])
        else:
            _, matrix = self.vectors.vectors([older["id"]])
            vectors = [matrix[0]] * len(missing) if len(matrix) else self.embedder.embed([p["content"] for p in missing])
        now = to_iso(self.clock())
        for part, vector in zip(missing, vectors):
            props = {**{k: older[k] for k in KEPT_FIELDS if older.get(k) is not None},
                     **{name: older[name] for name in self.graph.scoping.properties if older.get(name) is not None},
                     "id": part["id"], "content": part["content"], "split_from": older["id"], "created_at": now,
                     "last_accessed": now, "access_count": 0, "relevance_score": older.get("relevance_score"),
                     "archived": False}
            if built_in:  # made again from its own text, by the configured model
                props["embedding_model"] = self.embedder.model
            self._write(props, vector)

    def _write(self, props: dict[str, Any], vector: np.ndarray) -> None:
        """Vector first, then node (a crash between leaves a vector reconcile removes, or the record repeats)."""
        self.vectors.upsert([VectorPoint(props["id"], np.asarray(vector, np.float32),
                                         payload_of(props, self.graph.scoping))])
        self.graph.create_memories([props])

    def undo_supersede(self, older_id: str, requester: str,
                       bound: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Undo the latest supersession asked for this memory: it is current again; what the request created (the
        new memory, the survivors of a split) is forgotten (restorable, as any forgotten memory)."""
        self._visible(older_id, bound)
        record = self.records.of_memory(SUPERSEDE, older_id, "done")
        if record is None:
            raise NotFound(f"no supersession of memory {older_id} asked over the API is left to undo")
        at = self.clock()
        self.graph.unsupersede(record["newer_id"], older_id)
        memory = self.graph.get_memory(older_id)
        if memory is not None and not memory.get("superseded_by"):
            current_again = [older_id, *self.lifecycle.hygiene.merged_into_any([older_id])]
            self.vectors.set_superseded(current_again, False)
            self.lifecycle.mirror_validity([older_id])
            self.lifecycle.rescore(current_again, at)
        plan = record["plan"]
        made = [s["id"] for s in plan["survivors"]] + ([record["newer_id"]] if plan["created"] else [])
        present = self.graph.existing_ids(made)
        self.lifecycle.delete({m: "undone supersession" for m in made if m in present}, at)
        self.refresh_summaries()
        self.records.settle(record["id"], "undone", {"undone_at": to_iso(at)})
        self.audit.record("undo_supersede", to_iso(at), memory_id=older_id, requested_by=requester, forgotten=made)
        return {"memory_id": older_id, "state": state_of(memory) if memory else None, "forgotten": sorted(present)}

    # --- forgetting ----------------------------------------------------------------------------------------

    def forget(self, memory_id: str, requester: str, bound: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Delete one memory on request: a tombstone keeps it restorable for the retention period."""
        memory = self._visible(memory_id, bound)
        check("delete", memory_id, state_of(memory))
        at = self.clock()
        self.lifecycle.delete({memory_id: f"forgotten on request ({requester})"}, at)
        self.refresh_summaries()
        self.audit.record("forget", to_iso(at), memory_id=memory_id, requested_by=requester)
        return {"memory_id": memory_id, "state": "deleted", "deleted_at": to_iso(at)}

    # --- after a crash -------------------------------------------------------------------------------------

    def has_pending(self) -> bool:
        return self.records.has_pending()

    def complete_pending(self) -> int:
        """Finish the requests a crash interrupted (each step is safe to repeat)."""
        pending = self.records.pending()
        for record in pending:
            if record["kind"] == SUPERSEDE:
                self._finish_supersede(record)
            else:
                self.purges.finish(record)
        return len(pending)


def _checked_body(body: Any, older_id: str, new_memory: Callable[[Any], Any]) -> str | None:
    """The body checked as it stands, before any store is read: the id of the newer memory it names
    ({"by": id}), or None for a new memory (validated here as POST /memory validates it)."""
    if not isinstance(body, dict):
        raise InvalidInput("body", "must be a JSON object: a new memory, or {\"by\": \"<memory id>\"}")
    if "by" not in body:
        new_memory(body)
        return None
    if set(body) != {"by"}:
        raise InvalidInput("by", "give either {\"by\": id} or a new memory, not both")
    by = parse_uuid(body["by"], "by")
    if by == older_id:
        raise InvalidInput("by", "a memory cannot supersede itself")
    return by


def _fingerprint(key: bytes, older_id: str, body: Any) -> str:
    """What identifies a supersede request, to tell a retry from another request under the same key: a keyed
    hash of the memory and the body (the record keeps no copy of a body, which may name what an erase removes)."""
    canonical = json.dumps({"memory": older_id, "body": body}, sort_keys=True, ensure_ascii=False)
    return hmac.new(key, canonical.encode(), hashlib.sha256).hexdigest()


def _key(kind: str, key: str) -> str:
    return f"{kind}:{key}"


def _encoded(vector: np.ndarray | None) -> str | None:
    return None if vector is None else base64.b64encode(np.asarray(vector, np.float32).tobytes()).decode()
