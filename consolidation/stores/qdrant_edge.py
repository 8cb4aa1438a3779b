"""The embedded vector store: a Qdrant Edge shard in the data directory (chosen by measurement, see docs)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import qdrant_edge as qe

from ..errors import StoreMismatch, StoreUnavailable
from .falkor import chunked
from .vectors import UPSERT_CHUNK, VectorPoint, as_matrix, in_order

log = logging.getLogger(__name__)
SCROLL_PAGE = 10000


class EdgeVectorStore:
    """A Qdrant Edge shard opened by this process alone (Edge refuses a second process on the same folder)."""

    def __init__(self, directory: Path, vector_size: int):
        self.vector_size = vector_size
        self.directory = directory
        self._shard = _open_shard(directory, vector_size)
        # Edge's update path is internally locked, but flush/close must not race a write.
        self._lock = threading.RLock()

    def upsert(self, points: Sequence[VectorPoint]) -> None:
        for part in chunked(points, UPSERT_CHUNK):
            batch = [qe.Point(p.id, np.asarray(p.vector, dtype=np.float32).tolist(), p.payload) for p in part]
            self._update(qe.UpdateOperation.upsert_points(batch))

    def vectors(self, ids: Sequence[str]) -> tuple[list[str], np.ndarray]:
        records = self._shard.retrieve(list(ids), with_payload=False, with_vector=True) if ids else []
        return in_order(ids, {str(r.id): r.vector for r in records}, self.vector_size)

    def payloads(self, ids: Sequence[str]) -> dict[str, dict]:
        records = self._shard.retrieve(list(ids), with_payload=True, with_vector=False) if ids else []
        return {str(r.id): dict(r.payload or {}) for r in records}

    def all_vectors(self) -> tuple[list[str], np.ndarray]:
        ids: list[str] = []
        parts = []
        offset = None
        while True:
            records, offset = self._shard.scroll(
                qe.ScrollRequest(offset=offset, limit=SCROLL_PAGE, with_payload=False, with_vector=True)
            )
            ids.extend(str(r.id) for r in records)
            parts.append(as_matrix([r.vector for r in records], self.vector_size))
            if offset is None:
                break
        return ids, np.concatenate(parts) if parts else as_matrix([], self.vector_size)

    def set_relevance(self, ids: Sequence[str], scores: Sequence[float]) -> None:
        # Edge sets one payload per call; a distinct score per point means one call per point (~25 µs each).
        for memory_id, score in zip(ids, scores):
            self._update_if_present(qe.UpdateOperation.set_payload([memory_id], {"relevance_score": float(score)}))

    def set_archived(self, ids: Sequence[str], archived: bool) -> None:
        present = self._present(ids)
        keep = [memory_id for memory_id in ids if memory_id in present]
        if keep:
            self._update(qe.UpdateOperation.set_payload(keep, {"archived": archived}))

    def delete(self, ids: Sequence[str]) -> None:
        for part in chunked(list(ids), UPSERT_CHUNK * 4):
            self._update(qe.UpdateOperation.delete_points(list(part)))

    def count(self) -> int:
        return self._shard.info().points_count

    def ids(self) -> list[str]:
        found: list[str] = []
        offset = None
        while True:
            records, offset = self._shard.scroll(
                qe.ScrollRequest(offset=offset, limit=SCROLL_PAGE, with_payload=False, with_vector=False)
            )
            found.extend(str(r.id) for r in records)
            if offset is None:
                return found

    def ping(self) -> None:
        if self._shard is None:
            raise StoreUnavailable("vectors", "the embedded Qdrant is closed")

    def close(self) -> None:
        with self._lock:
            if self._shard is not None:
                self._shard.flush()
                self._shard.close()
                self._shard = None

    def _present(self, ids: Sequence[str]) -> set[str]:
        records = self._shard.retrieve(list(ids), with_payload=False, with_vector=False) if ids else []
        return {str(r.id) for r in records}

    def _update_if_present(self, operation) -> None:
        try:
            self._update(operation)
        except Exception as exc:  # Edge reports a missing point as a plain Exception
            if not str(exc).startswith("No point with id"):
                raise

    def _update(self, operation) -> None:
        with self._lock:
            if self._shard is None:
                raise StoreUnavailable("vectors", "the embedded Qdrant is closed")
            self._shard.update(operation)


def _open_shard(directory: Path, vector_size: int):
    config = qe.EdgeConfig(vectors=qe.EdgeVectorParams(size=vector_size, distance=qe.Distance.Cosine))
    try:
        if directory.exists() and any(directory.iterdir()):
            return qe.EdgeShard.load(str(directory), config)
        directory.mkdir(parents=True, exist_ok=True)
        return qe.EdgeShard.create(str(directory), config)
    except Exception as exc:  # Edge raises plain Exception with a message; sort the known ones out
        message = str(exc)
        if "Incompatible" in message or "incompatible" in message:
            raise StoreMismatch(
                f"the embedded Qdrant at {directory} holds vectors of another size than VECTOR_SIZE={vector_size}: "
                f"{message}"
            ) from exc
        if "WouldBlock" in message or "lock" in message.lower():
            raise StoreUnavailable(
                "vectors",
                f"another process holds the embedded Qdrant at {directory}; embedded stores belong to one "
                "process (stop the running service, or use QDRANT_URL with a Qdrant server)",
            ) from exc
        raise StoreUnavailable("vectors", f"the embedded Qdrant at {directory} did not open: {message}") from exc
