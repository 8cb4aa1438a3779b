"""Updates and forgetting on request: supersede a memory (splitting a compound one), undo that, forget one,
purge every memory holding an identifier (and erase its text). Each writes a RequestRecord before its first
step and finishes from it, so a crash leaves the request to be finished, never half done."""

from __future__ import annotations

import base64
import logging
import uuid
from collections.abc import Callable
from datetime import datetime
from typing import Any

import numpy as np

from ..embedding import Embedder
from ..errors import Conflict, InvalidInput, NotFound
from ..hygiene.compound import survivors
from ..identifiers import holds, identifier_pattern, scrubbed
from ..memory import BUILT_IN_EMBEDDER, EMBEDDED_BY, parse_uuid
from ..stores.audit import AuditLog
from ..stores.requests import RequestRecords
from ..stores.vectors import VectorPoint, payload_of
from ..timeutil import to_iso
from .service import Lifecycle, decode_vector
from .states import ACTIVE, check, state_of

log = logging.getLogger(__name__)
SUPERSEDE, PURGE = "supersede", "purge"
# What a survivor of a split keeps of the memory it came from (its text is its own).
KEPT_FIELDS = ("type", "importance", "confidence", "tags", "timestamp", "protected", "protected_reason",
               EMBEDDED_BY)
LISTED = 100  # memories a purge lists by id


class Requests:
    """Supersede, undo, forget and purge, as an agent or an administrator asks them."""

    def __init__(self, lifecycle: Lifecycle, new_memory: Callable[[Any], Any], embedder: Embedder,
                 refresh_summaries: Callable[[], int], clock: Callable[[], datetime]):
        self.lifecycle = lifecycle
        self.graph = lifecycle.graph
        self.vectors = lifecycle.vectors
        self.new_memory = new_memory  # body -> NewMemory, validated as POST /memory validates it
        self.embedder = embedder
        # Summaries a request took a member from are rebuilt before the request is settled (a crash first: the
        # pending request is finished again at start-up, this step with it).
        self.refresh_summaries = refresh_summaries
        self.clock = clock
        self.records = RequestRecords(self.graph.falkor)
        self.audit = AuditLog(self.graph.falkor)

    # --- supersede -----------------------------------------------------------------------------------------

    def supersede(self, older_id: str, body: Any, key: str | None, requester: str) -> dict[str, Any]:
        """The older memory superseded by a new memory (body: a memory) or an existing one (body: {"by": id})."""
        if key is not None:
            found = self.records.find(_key(SUPERSEDE, key))
            if found is not None:
                return self._repeat(found, older_id)
        older = self._current(older_id)
        if not isinstance(body, dict):
            raise InvalidInput("body", "must be a JSON object: a new memory, or {\"by\": \"<memory id>\"}")
        created, newer_id, newer_content, embedding = self._newer(older, body)
        kept = survivors(older.get("content") or "", newer_content)
        plan = {"created": created, "embedding": _encoded(embedding),
                "survivors": [{"id": str(uuid.uuid4()), "content": text} for text in kept]}
        record_id = str(uuid.uuid4())
        record = self.records.begin({"id": record_id, "key": _key(SUPERSEDE, key or record_id), "kind": SUPERSEDE,
                                     "memory_id": older_id, "newer_id": newer_id, "requester": requester,
                                     "at": to_iso(self.clock()), "plan": plan})
        if record["id"] != record_id:  # a concurrent retry with the same key began first
            return self._repeat(record, older_id)
        return self._finish_supersede(record)

    def _repeat(self, record: dict[str, Any], older_id: str) -> dict[str, Any]:
        if record.get("kind") != SUPERSEDE or record.get("memory_id") != older_id:
            raise Conflict("this Idempotency-Key was used for another request")
        if record["state"] == "pending":
            return self._finish_supersede(record)
        return {**record["answer"], "repeated": True}

    def _current(self, memory_id: str) -> dict[str, Any]:
        """The memory to supersede: it exists, may be superseded, and nothing superseded it yet."""
        memory = self.graph.get_memory(memory_id)
        if memory is None:
            self.lifecycle.describe(memory_id, 0)  # NotFound, or Gone for a deleted memory
        check(SUPERSEDE, memory_id, state_of(memory))
        if memory.get("superseded_by"):
            raise Conflict(f"memory {memory_id} is already superseded by {memory['superseded_by']}; supersede "
                           "the newest memory of its chain (recall finds it)", state=state_of(memory))
        return memory

    def _newer(self, older: dict[str, Any], body: dict[str, Any]) -> tuple[dict | None, str, str, np.ndarray | None]:
        """(the new memory's properties or None, its id, its content, the embedding sent)."""
        if "by" in body:
            if set(body) != {"by"}:
                raise InvalidInput("by", "give either {\"by\": id} or a new memory, not both")
            newer_id = parse_uuid(body["by"], "by")
            newer = self.graph.get_memory(newer_id)
            if newer is None or newer_id == older["id"]:
                raise NotFound(f"memory {newer_id} does not exist" if newer is None else
                               "a memory cannot supersede itself")
            if state_of(newer) != ACTIVE or newer.get("superseded_by"):
                raise Conflict(f"memory {newer_id} is not current ({state_of(newer)}, superseded_by "
                               f"{newer.get('superseded_by')}): only a current memory supersedes another")
            if self.graph.scoping.key_of(newer) != self.graph.scoping.key_of(older):
                raise InvalidInput("by", "the newer memory belongs to another scope")
            return None, newer_id, newer.get("content") or "", None
        scope = {name: older[name] for name in self.graph.scoping.properties if older.get(name) is not None}
        for name, value in scope.items():
            if body.get(name, value) != value:
                raise InvalidInput(name, "a memory is superseded within its scope: leave it out or give the "
                                         "older memory's value")
        memory = self.new_memory({**scope, **body})
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
            self._write(props, vector)

    def _write(self, props: dict[str, Any], vector: np.ndarray) -> None:
        """Vector first, then node (a crash between leaves a vector reconcile removes, or the record repeats)."""
        self.vectors.upsert([VectorPoint(props["id"], np.asarray(vector, np.float32),
                                         payload_of(props, self.graph.scoping))])
        self.graph.create_memories([props])

    def undo_supersede(self, older_id: str, requester: str) -> dict[str, Any]:
        """Undo the latest supersession asked for this memory: it is current again; what the request created (the
        new memory, the survivors of a split) is forgotten (restorable, as any forgotten memory)."""
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

    def forget(self, memory_id: str, requester: str) -> dict[str, Any]:
        """Delete one memory on request: a tombstone keeps it restorable for the retention period."""
        memory = self.graph.get_memory(memory_id)
        if memory is None:
            self.lifecycle.describe(memory_id, 0)  # NotFound, or Gone when it is already deleted
        check("delete", memory_id, state_of(memory))
        at = self.clock()
        self.lifecycle.delete({memory_id: f"forgotten on request ({requester})"}, at)
        self.refresh_summaries()
        self.audit.record("forget", to_iso(at), memory_id=memory_id, requested_by=requester)
        return {"memory_id": memory_id, "state": "deleted", "deleted_at": to_iso(at)}

    def purge(self, match: Any, dry_run: bool, erase: bool, requester: str,
              scope: dict[str, str | None] | None = None) -> dict[str, Any]:
        """Every memory of the scope (None: of the graph) holding `match` as a whole identifier: listed (dry
        run), or deleted; with `erase`, its text is removed from every place that kept it."""
        if not isinstance(match, str):
            raise InvalidInput("match", "must be a string: the identifier to purge")
        pattern = identifier_pattern(match)
        ids, contents, summaries = (self.graph.within(scope) if scope is not None else self.graph).contents_in_scope()
        found = [(i, bool(s)) for i, c, s in zip(ids, contents, summaries) if c and holds(c, pattern)]
        # An active summary quoting the identifier is rebuilt once its members holding it are gone (and deleted
        # only if its text still holds it then); any other memory holding it is deleted.
        deleting = sorted(i for i, summary in found if not summary)
        quoting = sorted(i for i, summary in found if summary)
        answer = {"dry_run": dry_run, "erase": erase, "matched": len(deleting), "memory_ids": deleting[:LISTED],
                  "summaries_quoting": len(quoting)}
        if dry_run:
            return answer
        record_id = str(uuid.uuid4())
        record = self.records.begin({"id": record_id, "key": _key(PURGE, record_id), "kind": PURGE,
                                     "memory_id": None, "requester": requester, "at": to_iso(self.clock()),
                                     # The identifier waits here only while the purge is under way.
                                     "plan": {"ids": deleting, "summaries": quoting, "erase": erase,
                                              "match": match}})
        return self._finish_purge(record)

    def _finish_purge(self, record: dict[str, Any]) -> dict[str, Any]:
        plan, at = record["plan"], self.clock()
        pattern = identifier_pattern(plan["match"])
        present = self.graph.existing_ids(plan["ids"])
        self.lifecycle.delete({i: "purged on request" for i in plan["ids"] if i in present}, at)
        self.refresh_summaries()
        still = sorted(i for i, text in self.graph.memory_contents(plan.get("summaries", [])).items()
                       if holds(text, pattern))
        self.lifecycle.delete({i: "purged on request: the summary still quoted it" for i in still}, at)
        gone = plan["ids"] + still
        if plan["erase"]:
            self._erase(gone, pattern, record["id"])
        answer = {"dry_run": False, "erase": plan["erase"], "matched": len(plan["ids"]),
                  "memory_ids": plan["ids"][:LISTED], "summaries_quoting": len(plan.get("summaries", [])),
                  "summaries_deleted": len(still), "deleted": len(gone)}
        self.records.settle(record["id"], "done", {"answer": answer, "plan": {**plan, "match": None},
                                                   "done_at": to_iso(at)})
        self.audit.record(PURGE, to_iso(at), requested_by=record["requester"], memories=len(gone),
                          erase=plan["erase"])
        if plan["erase"]:
            self.graph.falkor.rewrite_files()  # what the graph no longer holds leaves its files too
        return answer

    def _erase(self, ids: list[str], pattern, record_id: str) -> None:
        """The text of these memories out of their tombstones and merge records, and the identifier out of every
        other record the service keeps (run reports, other tombstones' edges, request plans, entities)."""
        self.lifecycle.tombstones.erase(ids)
        self.lifecycle.hygiene.erase_records(ids)
        # This request's own record keeps the identifier until it is settled (a crash before: erased again).
        self.graph.scrub_records(lambda value: scrubbed(value, pattern), keep=record_id)

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
                self._finish_purge(record)
        return len(pending)


def _key(kind: str, key: str) -> str:
    return f"{kind}:{key}"


def _encoded(vector: np.ndarray | None) -> str | None:
    return None if vector is None else base64.b64encode(np.asarray(vector, np.float32).tobytes()).decode()
