"""Crash-safe deletion, restore (of an archived, deleted or merged memory), and reconciling the graph with the
vector store."""

from __future__ import annotations

import base64
import logging
import time
import uuid
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

import numpy as np

from .embedding import Embedder
from .errors import Conflict, NotFound
from .stores.graph import GraphStore
from .stores.hygiene import HygieneStore
from .stores.tombstones import TombstoneStore
from .stores.vectors import VectorPoint, VectorStore, payload_of
from .timeutil import to_iso

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

    def delete(self, reasons: dict[str, str], now: datetime) -> int:
        """Tombstone (pending), then delete the vectors, then the nodes; returns how many were deleted."""
        snapshots = self.tombstones.snapshot(list(reasons))
        if not snapshots:
            return 0
        with_vectors, matrix = self.vectors.vectors(list(snapshots))
        vectors = dict(zip(with_vectors, matrix))
        self.tombstones.write_pending([
            _tombstone(memory_id, reasons[memory_id], snapshot, vectors.get(memory_id), now)
            for memory_id, snapshot in snapshots.items()
        ])
        # From here on the deletion is decided: a crash leaves pending tombstones that complete_pending() finishes.
        self.vectors.delete(list(snapshots))
        self.tombstones.finish(list(snapshots))
        return len(snapshots)

    def complete_pending(self) -> int:
        """Finish deletions a crash interrupted (vector and node removal are both idempotent)."""
        pending = self.tombstones.pending_ids()
        if pending:
            self.vectors.delete(pending)
            self.tombstones.finish(pending)
            log.info("consolidation forget completed interrupted deletions count=%d", len(pending))
        return len(pending)

    def has_pending(self) -> bool:
        """Whether a crash left a deletion or a merge half done."""
        return bool(self.tombstones.pending_ids()) or self.hygiene.has_pending()

    def restore(self, memory_id: str, now: datetime) -> dict[str, Any]:
        """Bring back an archived or merged memory, or a deleted one from its tombstone with the edges whose ends
        still exist. A restore is an administrator's decision that sticks: it counts as a use and starts a
        fresh grace period (restored_at), and a merged memory is kept apart from its canonical from then on."""
        existing = self.graph.get_memory(memory_id)
        if existing is not None:
            if not existing.get("archived"):
                raise Conflict(f"memory {memory_id} is neither archived, merged nor forgotten")
            if existing.get("merged_into"):
                return self._restore_merged(memory_id, now)
            self.graph.unarchive(memory_id, to_iso(now))
            self.vectors.set_archived([memory_id], False)
            return {"memory_id": memory_id, "restored_from": "archive", "edges_restored": 0}
        tombstone = self.tombstones.latest_deleted(memory_id)
        if tombstone is None:
            raise NotFound(f"memory {memory_id} has no tombstone (never existed, or its retention period ended)")
        properties = tombstone["memory"]["properties"]
        vector = decode_vector(tombstone.get("vector"))
        if vector is None:
            vector = self.embedder.embed([properties.get("content") or ""])[0]
        restored_props = {**properties, "archived": False}
        self.vectors.upsert([VectorPoint(memory_id, vector, payload_of(restored_props))])
        edges = self.tombstones.restore_node(tombstone, to_iso(now))
        self.tombstones.mark_restored(tombstone["id"], to_iso(now))
        return {
            "memory_id": memory_id,
            "restored_from": "tombstone",
            "edges_restored": edges,
            "edges_lost": len(tombstone["edges"]) - edges,
        }

    def _restore_merged(self, memory_id: str, now: datetime) -> dict[str, Any]:
        restored = self.hygiene.restore(memory_id, to_iso(now))
        if restored is None:
            raise Conflict(f"memory {memory_id} is merged but no record of its merge is left to undo it")
        self.vectors.set_archived([memory_id], False)
        return {"memory_id": memory_id, "restored_from": "merge", "canonical_id": restored["canonical_id"],
                "edges_restored": restored["edges_restored"]}

    def purge_expired(self, now: datetime, retention_days: float) -> int:
        return self.tombstones.purge((now - timedelta(days=retention_days)).timestamp())

    def reconcile(self, repair: bool, recheck_seconds: float = 2.0, limit: int = 100) -> dict[str, Any]:
        """Find (and optionally repair) nodes without vectors and vectors without nodes."""
        completed = self.complete_pending() if repair else 0
        graph_ids = set(self.graph.all_memory_ids())
        vector_ids = set(self.vectors.ids())
        without_vectors = sorted(graph_ids - vector_ids)
        without_nodes = sorted(vector_ids - graph_ids)
        if without_nodes and recheck_seconds > 0:
            # An ingest writes the vector a moment before the node: only what stays orphaned is an orphan.
            time.sleep(recheck_seconds)
            appeared = self.graph.existing_ids(without_nodes)
            without_nodes = [memory_id for memory_id in without_nodes if memory_id not in appeared]
        if repair:
            self._embed_missing(without_vectors)
            self.vectors.delete(without_nodes)
        return {
            "graph_memories": len(graph_ids),
            "vector_points": len(vector_ids),
            "nodes_without_vectors": without_vectors[:limit],
            "nodes_without_vectors_total": len(without_vectors),
            "vectors_without_nodes": without_nodes[:limit],
            "vectors_without_nodes_total": len(without_nodes),
            "interrupted_deletions_completed": completed,
            "repaired": repair,
        }

    def _embed_missing(self, ids: Sequence[str]) -> None:
        """A node that lost its vector gets one from the built-in embedder of its content."""
        for start in range(0, len(ids), 500):
            part = ids[start : start + 500]
            memories = self.graph.get_memories(part)
            vectors = self.embedder.embed([m.get("content") or "" for m in memories])
            self.vectors.upsert([VectorPoint(m["id"], v, payload_of(m)) for m, v in zip(memories, vectors)])
            self.graph.mark_changed([m["id"] for m in memories])  # a new vector: new neighbours


def _tombstone(memory_id: str, reason: str, snapshot: dict[str, Any], vector, now: datetime) -> dict[str, Any]:
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
