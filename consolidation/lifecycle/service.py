"""The lifecycle's transitions that span both stores: crash-safe deletion, restore (of an archived, merged or
deleted memory), what a memory is now, and reconciling the graph with the vector store."""

from __future__ import annotations

import base64
import logging
import time
import uuid
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

import numpy as np

from ..embedding import Embedder
from ..errors import Conflict, Gone, NotFound
from ..memory import MAX_COUNT, graph_float
from ..stores.embedding_models import EmbeddingModels
from ..stores.graph import GraphStore
from ..stores.hygiene import HygieneStore
from ..stores.tombstones import TombstoneStore
from ..stores.vectors import VectorPoint, VectorStore, payload_of
from ..scoring import stored_relevance
from ..timeutil import to_iso
from .merging import settle_unmerged, unmerge, unmerged_from_tombstone
from .states import ACTIVE, DELETED, MERGED, check, held_until, restorable_until, state_of

log = logging.getLogger(__name__)


class Lifecycle:
    """Deletes memories so that a crash at any point leaves them intact or completably deleted, and undoes it."""

    def __init__(self, graph: GraphStore, vectors: VectorStore, tombstones: TombstoneStore, hygiene: HygieneStore,
                 embedder: Embedder):
        self.graph = graph
        self.vectors = vectors
        self.tombstones = tombstones
        self.hygiene = hygiene
        self.embedder = embedder
        self.models = EmbeddingModels(graph.falkor)  # which model made each memory's vector

    def delete(self, reasons: dict[str, str], now: datetime) -> int:
        """Tombstone (pending), then delete the vectors, then the nodes; returns how many were deleted. The
        merged duplicates of a canonical among them leave with it (their merge records say 'deleted'; a restore
        of either brings both back as they were)."""
        reasons = dict(reasons)
        for duplicate, canonical in self.hygiene.merged_into_any(list(reasons)).items():
            reasons.setdefault(duplicate, f"merged into {canonical}, which is deleted: leaves with it")
        snapshots = self.tombstones.snapshot(list(reasons))
        if not snapshots:
            return 0
        with_vectors, matrix = self.vectors.vectors(list(snapshots))
        vectors = dict(zip(with_vectors, matrix))
        self.tombstones.write_pending([
            _tombstone(memory_id, reasons[memory_id], snapshot, vector=vectors.get(memory_id), now=now)
            for memory_id, snapshot in snapshots.items()
        ])
        # From here on the deletion is decided: a crash leaves pending tombstones that complete_pending() finishes.
        self._finish(list(snapshots), now)
        return len(snapshots)

    def complete_pending(self, now: datetime) -> int:
        """Finish deletions a crash interrupted (vector and node removal are both idempotent)."""
        pending = self.tombstones.pending_ids()
        if pending:
            self._finish(pending, now)
            log.info("consolidation forget completed interrupted deletions count=%d", len(pending))
        return len(pending)

    def _finish(self, ids: list[str], now: datetime) -> None:
        self.hygiene.mark_left(ids, to_iso(now))
        self.vectors.delete(ids)
        self.tombstones.finish(ids)

    def has_pending(self) -> bool:
        """Whether a crash left a deletion or a merge half done."""
        return bool(self.tombstones.pending_ids()) or self.hygiene.has_pending()

    # --- restoring -------------------------------------------------------------------------------

    def restore(self, memory_id: str, now: datetime, hold_days: float) -> dict[str, Any]:
        """Bring back an archived, merged or deleted memory as it was before: an archived or merged one as an
        active memory of its own; a deleted one from its tombstone with the edges whose ends exist, and with
        what its deletion took along (a canonical's duplicates, merged into it again; a duplicate's canonical
        and the other duplicates, when they left together). A restore is an administrator's decision that
        holds: it counts as a use of the memory (or of the canonical a duplicate is back in), its relevance is
        recomputed at once, and no automatic run archives, deletes or merges it until `held_until`. Of
        concurrent restores of one memory, one succeeds; the others: Conflict."""
        existing = self.graph.get_memory(memory_id)
        if existing is None:
            result = self._restore_deleted(memory_id, now)
        else:
            state = state_of(existing)
            check("restore", memory_id, state)
            result = self._restore_merged(memory_id, now) if state == MERGED else self._restore_archived(memory_id, now)
        used = memory_id if result.get("state", ACTIVE) == ACTIVE else result["canonical_id"]
        until = held_until(now, hold_days)
        self.graph.hold_as_used(used, to_iso(now), until, MAX_COUNT)
        self.rescore([used], now)
        return {"state": ACTIVE, **result, "held_until": until}

    def _restore_archived(self, memory_id: str, now: datetime) -> dict[str, Any]:
        if not self.graph.unarchive(memory_id, to_iso(now)):
            raise Conflict(f"memory {memory_id} was restored meanwhile by another request", state=ACTIVE)
        self.vectors.set_archived([memory_id], False)  # state: active
        return {"memory_id": memory_id, "restored_from": "archive", "edges_restored": 0}

    def _restore_merged(self, memory_id: str, now: datetime) -> dict[str, Any]:
        restored = unmerge(self.hygiene, memory_id, to_iso(now))
        if restored is None:
            raise Conflict(f"memory {memory_id} is merged but no merge of it is left to undo (another request "
                           "is restoring it, or its record is gone)", state=MERGED)
        self.vectors.set_archived([memory_id], False)
        # As it was before its merge: superseded then, or not (a supersession lent by its canonical is gone).
        self.vectors.set_superseded([memory_id], restored["memory"].get("superseded_by") is not None)
        return {"memory_id": memory_id, "restored_from": "merge", "canonical_id": restored["canonical_id"],
                "edges_restored": restored["edges_restored"]}

    def _restore_deleted(self, memory_id: str, now: datetime) -> dict[str, Any]:
        tombstone = self._claimed(memory_id, now)
        canonical_id = tombstone["memory"]["properties"].get("merged_into")
        if canonical_id:
            return self._restore_duplicate(tombstone, canonical_id, now)
        result = self._restore_from(tombstone, now)
        return {**result, "restored_with": self._duplicates_back(memory_id, tombstone["deleted_at"], now)}

    def _claimed(self, memory_id: str, now: datetime) -> dict[str, Any]:
        """The memory's newest deleted tombstone, claimed for this restore; Conflict when another restore has
        it, Gone when the memory was erased, NotFound when nothing of it is kept."""
        tombstone = self.tombstones.claim_deleted(memory_id, to_iso(now), now.timestamp())
        if tombstone is not None:
            return tombstone
        # The tombstone first: a restore marks it restored only after the node is back.
        if self.tombstones.latest(memory_id) or self.graph.existing_ids([memory_id]):
            raise Conflict(f"memory {memory_id} is being restored, or was restored meanwhile, by another request")
        self._gone_if_erased(memory_id, None)
        raise NotFound(f"memory {memory_id} has no tombstone (never existed, or its retention period ended)")

    def _restore_duplicate(self, tombstone: dict[str, Any], canonical_id: str, now: datetime) -> dict[str, Any]:
        """A deleted duplicate: back in its canonical when that is stored (or was deleted with it, and comes
        back first, with its other duplicates); a memory of its own when its canonical is gone for good."""
        memory_id, deleted_at = tombstone["memory_id"], tombstone["deleted_at"]
        canonical = self.graph.get_memory(canonical_id)
        left_together = canonical is None and self.tombstones.deleted_at_of([canonical_id]).get(canonical_id) == deleted_at
        if left_together:
            restored = self._restore_from(self._claimed(canonical_id, now), now)
            others = self._duplicates_back(canonical_id, deleted_at, now, claimed=tombstone)
            return {**restored, "memory_id": memory_id, "state": MERGED, "canonical_id": canonical_id,
                    "restored_with": [canonical_id, *(o for o in others if o != memory_id)]}
        if canonical is not None and state_of(canonical) != MERGED and self._remerge(tombstone, now):
            return {"memory_id": memory_id, "restored_from": "tombstone", "state": MERGED,
                    "canonical_id": canonical_id, "edges_restored": 1, "edges_lost": 0, "restored_with": []}
        return {**self._restore_from(tombstone, now), "restored_with": []}

    def _duplicates_back(self, canonical_id: str, deleted_at: str, now: datetime,
                         claimed: dict[str, Any] | None = None) -> list[str]:
        """The duplicates deleted with this canonical (at `deleted_at`) merged into it again (`claimed`: the
        tombstone of one of them this restore holds already); their ids."""
        leaving = self.hygiene.left_with(canonical_id)
        deleted = self.tombstones.deleted_at_of(leaving)
        back = []
        for duplicate_id in sorted(leaving):
            if claimed is not None and duplicate_id == claimed["memory_id"]:
                tombstone = claimed
            elif deleted.get(duplicate_id) == deleted_at:
                tombstone = self.tombstones.claim_deleted(duplicate_id, to_iso(now), now.timestamp())
            else:
                continue
            if tombstone is not None and self._remerge(tombstone, now):
                back.append(duplicate_id)
        return back

    def _remerge(self, tombstone: dict[str, Any], now: datetime) -> bool:
        """A claimed duplicate's tombstone back as the merged duplicate it was (its merge record 'done' again,
        its MERGED_INTO edge back); False, leaving the tombstone claimed, when no merge record is left."""
        memory_id, at = tombstone["memory_id"], to_iso(now)
        record = self.hygiene.claim("deleted", memory_id, at)
        if record is None:
            return False
        properties = tombstone["memory"]["properties"]
        self.vectors.upsert([VectorPoint(memory_id, self._vector_of(tombstone, properties),
                                         payload_of(properties, self.graph.scoping))])
        self.tombstones.restore_node(properties, tombstone["memory"]["labels"], tombstone["edges"], merged=True)
        self.hygiene.mark_merged(record["id"])
        self.tombstones.mark_restored(tombstone["id"], at)
        return True

    def _vector_of(self, tombstone: dict[str, Any], properties: dict[str, Any]) -> np.ndarray:
        vector = decode_vector(tombstone.get("vector"))
        return vector if vector is not None else self.embedder.embed([properties.get("content") or ""])[0]

    def _restore_from(self, tombstone: dict[str, Any], now: datetime) -> dict[str, Any]:
        """A claimed tombstone back as an active memory of its own, with the edges whose other end exists (a
        duplicate whose canonical is gone: its merge undone)."""
        memory_id, at = tombstone["memory_id"], to_iso(now)
        properties, edges = tombstone["memory"]["properties"], tombstone["edges"]
        record = None
        if properties.get("merged_into"):
            record, properties, edges = unmerged_from_tombstone(self.hygiene, memory_id, properties, edges, at)
        else:
            properties = {**properties, "archived": False, "archived_at": None, "archived_reason": None,
                          "restored_at": at, "last_accessed": at}
        self.vectors.upsert([VectorPoint(memory_id, self._vector_of(tombstone, properties),
                                         payload_of(properties, self.graph.scoping))])
        restored_edges = self.tombstones.restore_node(properties, tombstone["memory"]["labels"], edges)
        if record is not None:
            settle_unmerged(self.hygiene, record, at)
        self.tombstones.mark_restored(tombstone["id"], at)
        # A canonical's MERGED_INTO edges come back with its duplicates (_duplicates_back), not here.
        kept = [edge for edge in edges if edge["type"] != "MERGED_INTO"]
        return {"memory_id": memory_id, "restored_from": "tombstone", "edges_restored": restored_edges,
                "edges_lost": len(kept) - restored_edges}

    def rescore(self, ids: Sequence[str], now: datetime) -> dict[str, float]:
        """Write these memories' relevance as the decay formula gives it now, capped for those no longer current
        (graph and Qdrant payload); returns each score as the graph keeps it. Called whenever memories stop or
        start again being current: a merge, a supersession, an archive, and their undoing."""
        inputs = self.graph.scoring_inputs_of(ids)
        if not len(inputs):
            return {}
        scores = stored_relevance(inputs, now)
        self.vectors.set_relevance(inputs.ids, scores)
        self.graph.write_scores(inputs.node_ids, inputs.ids, scores)
        return {memory_id: graph_float(score) for memory_id, score in zip(inputs.ids, scores.tolist())}

    def mirror_validity(self, ids: Sequence[str] | None = None) -> int:
        """Write these memories' validity end (t_invalid, None: none) into their payload as the graph has it:
        AutoMem's recall reads it there, not in the graph. With no ids, every memory that has one. Returns how
        many."""
        ends = self.graph.validity_ends(ids)
        self.vectors.set_fields(list(ends), [{"t_invalid": end} for end in ends.values()])
        return len(ends)

    def record_use(self, memory_id: str, now: datetime) -> dict[str, Any] | None:
        """One more use, and the relevance it gives, written at once (the score shown is the score used)."""
        memory = self.graph.record_access(memory_id, to_iso(now), MAX_COUNT)
        if memory is None:
            return None
        scores = self.rescore([memory_id], now)
        return {**memory, "relevance_score": scores.get(memory_id, memory.get("relevance_score"))}

    # --- what a memory is now --------------------------------------------------------------------

    def describe(self, memory_id: str, retention_days: float,
                 bound: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The memory with its `state` (and `held_until`); Gone for a deleted or erased one, NotFound if nothing
        is known of it, or if it is in another scope than `bound` (a scoped caller's)."""
        memory = self.graph.get_memory(memory_id)
        if memory is not None and self.graph.scoping.sees(memory, bound):
            return {**memory, "state": state_of(memory), "merged_into": memory.get("merged_into"),
                    "superseded_by": memory.get("superseded_by"), "held_until": memory.get("held_until")}
        if memory is not None:
            raise NotFound(f"memory {memory_id} does not exist")
        tombstone = self.tombstones.latest(memory_id)
        if tombstone is None:
            self._gone_if_erased(memory_id, bound)
            raise NotFound(f"memory {memory_id} does not exist")
        if bound is not None and not self.graph.scoping.sees(self.tombstones.kept(memory_id) or {}, bound):
            raise NotFound(f"memory {memory_id} does not exist")
        deleted_at = tombstone["deleted_at"]
        raise Gone(f"memory {memory_id} was deleted at {deleted_at}; POST /memory/{memory_id}/restore brings it "
                   "back until restorable_until", state=DELETED, deleted_at=deleted_at, reason=tombstone["reason"],
                   restorable_until=restorable_until(deleted_at, retention_days), deletion=tombstone["state"])

    def _gone_if_erased(self, memory_id: str, bound: Mapping[str, Any] | None) -> None:
        """Gone (410, nothing restorable) for a memory erased on request. An erased tombstone keeps no scope, so
        a scoped caller is told nothing of it."""
        erased_at = self.tombstones.erased_at(memory_id)
        if erased_at is not None and bound is None:
            raise Gone(f"memory {memory_id} was erased on request at {erased_at}: nothing of it is kept, and it "
                       "cannot be restored", state=DELETED, deleted_at=erased_at, deletion="erased",
                       restorable_until=None)

    def detach_from_scope(self, memory_ids: Sequence[str], now: datetime) -> None:
        """Before memories move to another scope: undo what links them to the old one. Duplicates merged into
        them come back as memories of their own; every edge to another memory goes, and with a SUPERSEDES edge
        the superseded_by mark it stands for."""
        for duplicate_id in self.hygiene.merged_into_any(memory_ids):
            self._restore_merged(duplicate_id, now)
        current_again = self.graph.unlink(memory_ids)
        self.vectors.set_superseded(current_again, False)
        self.mirror_validity(current_again)
        self.rescore(current_again, now)

    def purge_expired(self, now: datetime, retention_days: float) -> int:
        """Expire tombstones past the retention period: those memories can no longer be restored."""
        return self.tombstones.purge((now - timedelta(days=retention_days)).timestamp())

    def reconcile(self, repair: bool, now: datetime, recheck_seconds: float = 2.0, limit: int = 100
                  ) -> dict[str, Any]:
        """Find (and optionally repair) nodes without vectors and vectors without nodes; work a crash left
        pending is counted apart."""
        completed = self.complete_pending(now) if repair else 0
        graph_ids = set(self.graph.all_memory_ids())
        vector_ids = set(self.vectors.ids())
        # A node whose deletion is under way (or was left by a crash) lost its vector first: pending, not orphaned.
        pending = self.tombstones.pending_among(sorted(graph_ids - vector_ids))
        without_vectors = sorted(graph_ids - vector_ids - pending)
        without_nodes = sorted(vector_ids - graph_ids)
        if without_nodes and recheck_seconds > 0:
            # An ingest writes the vector a moment before the node: only what stays orphaned is an orphan.
            time.sleep(recheck_seconds)
            appeared = self.graph.existing_ids(without_nodes)
            without_nodes = [memory_id for memory_id in without_nodes if memory_id not in appeared]
        refreshed = 0
        if repair:
            self._embed_missing(without_vectors)
            self.vectors.delete(without_nodes)
            refreshed = self._refresh_marks(now)
        return {
            "graph_memories": len(graph_ids),
            "vector_points": len(vector_ids),
            "nodes_without_vectors": without_vectors[:limit],
            "nodes_without_vectors_total": len(without_vectors),
            "vectors_without_nodes": without_nodes[:limit],
            "vectors_without_nodes_total": len(without_nodes),
            "interrupted_deletions_completed": completed,
            "pending_deletions": len(self.tombstones.pending_ids()),
            "pending_merges": self.hygiene.pending_count(),
            "payload_marks_refreshed": refreshed,
            "repaired": repair,
        }

    def _refresh_marks(self, now: datetime) -> int:
        """Write every memory's state, supersession, scope and validity end into its payload, as the graph has
        them, and cap the score of those no longer current (points written before the payload carried them, or
        a mirror a crash cut short)."""
        ids, archived, merged, superseded, scopes = self.graph.lifecycle_marks()
        groups = {"merged": merged, "archived": archived & ~merged, "active": ~archived & ~merged}
        for state, chosen in groups.items():
            self.vectors.set_archived([i for i, c in zip(ids, chosen) if c], state != "active", state=state)
        for flag in (True, False):
            self.vectors.set_superseded([i for i, marked in zip(ids, superseded) if bool(marked) == flag], flag)
        by_scope: dict[str, list[str]] = {}
        for memory_id, scope in zip(ids, scopes):
            by_scope.setdefault(scope, []).append(memory_id)
        for scope, members in by_scope.items():
            self.vectors.set_scopes(members, scope)
        # Supersessions and merges made before the payload carried t_invalid and the capped score.
        self.mirror_validity()
        self.rescore([i for i, gone in zip(ids, archived | merged | superseded) if gone], now)
        return len(ids)

    def _embed_missing(self, ids: Sequence[str]) -> None:
        """A node that lost its vector gets one from the configured embedder of its content."""
        for start in range(0, len(ids), 500):
            self.embed_again(ids[start : start + 500])

    def embed_again(self, ids: Sequence[str]) -> int:
        """These memories' vectors made again from their texts by the configured embedder: vectors first, then
        the nodes say which model made them (a crash between leaves them to be made again, never a node naming
        a model its vector is not of). Returns how many there were."""
        memories = self.graph.get_memories(ids)
        vectors = self.embedder.embed([m.get("content") or "" for m in memories])
        for memory in memories:
            memory["embedding_model"] = self.embedder.model
        self.vectors.upsert([VectorPoint(m["id"], v, payload_of(m, self.graph.scoping))
                             for m, v in zip(memories, vectors)])
        made = [m["id"] for m in memories]
        self.models.mark_made_by(made, self.embedder.model)
        self.graph.mark_changed(made)  # a new vector: new neighbours
        return len(made)


def _tombstone(memory_id: str, reason: str, snapshot: dict[str, Any], *, vector, now: datetime) -> dict[str, Any]:
    return {
        "id": str(uuid.uuid4()),
        "memory_id": memory_id,
        "reason": reason,
        "deleted_at": to_iso(now),
        "deleted_epoch": now.timestamp(),
        "memory": {"properties": snapshot["properties"], "labels": snapshot["labels"]},
        "edges": snapshot["edges"],
        "vector": None if vector is None else base64.b64encode(np.asarray(vector, np.float32).tobytes()).decode(),
    }


def decode_vector(encoded: str | None) -> np.ndarray | None:
    if not encoded:
        return None
    return np.frombuffer(base64.b64decode(encoded), dtype=np.float32)
