"""The embedded vector store: a Qdrant Edge shard in the data directory (chosen by measurement, see docs)."""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import qdrant_edge as qe

from ..errors import StoreMismatch, StoreUnavailable
from ..similarity import normalized
from .falkor import chunked
from .vector_cache import VectorCache
from .vector_index import IndexSizes, VectorIndex
from .vectors import (INDEXED_FIELDS, UPSERT_CHUNK, Hit, SearchFilter, VectorPoint, archive_marks, as_matrix, in_order,
                      stated)

log = logging.getLogger(__name__)
SCROLL_PAGE = 10000
# Reading more vectors than this at once builds the in-memory copy instead of converting Edge's lists.
BULK_READ = 2000
# How long a search waits for the recall index being built before it takes Edge's exact search.
BUILD_WAIT_SECONDS = 30.0
# Edge holds the GIL through an update: one setting marks on 10,000 points held it 60-77 ms (every request
# thread of the process stopped meanwhile), 1,000 about 6 ms.
MARKS_PER_UPDATE = 1000
# Payloads read back at once when the store opens, for the recall index (under the lock: writes wait that long).
REGISTER_PAGE = 1000


class EdgeVectorStore:
    """A Qdrant Edge shard opened by this process alone (Edge refuses a second process on the same folder).

    It keeps an exact in-memory copy of the vectors (VectorCache) for bulk reads, since converting Edge's
    results to numpy is the slow part of reading many vectors, and an approximate index over that copy for
    recall (VectorIndex, built in the background; Edge's exact search answers until it is built).
    """

    def __init__(self, directory: Path, vector_size: int, index_sizes: IndexSizes = IndexSizes()):
        self.vector_size = vector_size
        self.directory = directory
        self._cache_file = directory.parent / f"{directory.name}.vectors.npz"
        self._shard, created = _open_shard(directory, vector_size)
        self.store_id = _store_id(directory.parent / f"{directory.name}.store_id")
        # Writes are serialised under `_writing`: the shard's update, then the copy's and the index's change,
        # so the copy never drifts from the shard. `_lock` guards only the copy and the index: a search waits
        # for the in-memory part of a write (microseconds to a few ms), never for Edge's own update (a worker
        # child's payload writes held one lock for both, and requests waited behind them up to 118 ms).
        self._writing = threading.RLock()
        self._lock = threading.RLock()
        self._index_payload()
        if created:
            self._cache: VectorCache | None = VectorCache(vector_size)
        else:
            self._cache = VectorCache.load_once(self._cache_file, vector_size, self.count())
        self.index = VectorIndex(self._cached_vectors, self._lock, index_sizes)
        self.index.start(self._register_points)

    def upsert(self, points: Sequence[VectorPoint]) -> None:
        for part in chunked(points, UPSERT_CHUNK):
            matrix = np.asarray([p.vector for p in part], dtype=np.float32)
            # A point AutoMem archived gets its state: Edge cannot match `archived: true` in a filter (a bool
            # arrives as 1 and matches nothing), so the state condition must cover it.
            payloads = [stated(p.payload) for p in part]
            batch = [qe.Point(p.id, row.tolist(), payload) for p, row, payload in zip(part, matrix, payloads)]
            ids = [p.id for p in part]
            with self._writing:
                self._update(qe.UpdateOperation.upsert_points(batch))
                with self._lock:
                    if self._cache is not None:
                        self._cache.put(ids, matrix)
                    self.index.put(ids, normalized(matrix), payloads)

    def vectors(self, ids: Sequence[str]) -> tuple[list[str], np.ndarray]:
        if self._cache is None and len(ids) > BULK_READ:
            self._build_cache()
        with self._lock:
            if self._cache is not None:
                return self._cache.get(ids)
        return self._retrieved(ids)

    def _retrieved(self, ids: Sequence[str]) -> tuple[list[str], np.ndarray]:
        records = self._shard.retrieve(list(ids), with_payload=False, with_vector=True) if ids else []
        return in_order(ids, {str(r.id): r.vector for r in records}, self.vector_size)

    def all_vectors(self) -> tuple[list[str], np.ndarray]:
        if self._cache is None:
            self._build_cache()
        with self._lock:
            return self._cache.all()

    def payloads(self, ids: Sequence[str]) -> dict[str, dict]:
        records = self._shard.retrieve(list(ids), with_payload=True, with_vector=False) if ids else []
        return {str(r.id): dict(r.payload or {}) for r in records}

    def set_relevance(self, ids: Sequence[str], scores: Sequence[float]) -> None:
        # Edge sets one payload per call; a distinct score per point means one call per point (~15 µs each).
        for memory_id, score in zip(ids, scores):
            self._update_if_present(qe.UpdateOperation.set_payload([memory_id], {"relevance_score": float(score)}))

    def set_archived(self, ids: Sequence[str], archived: bool, state: str | None = None) -> None:
        self._set_marks(ids, archive_marks(archived, state))

    def set_superseded(self, ids: Sequence[str], superseded: bool) -> None:
        self._set_marks(ids, {"superseded": superseded})

    def set_scopes(self, ids: Sequence[str], scope: str) -> None:
        self._set_marks(ids, {"scope": scope})

    def set_fields(self, ids: Sequence[str], fields: Sequence[dict]) -> None:
        present = self._present(ids)
        for memory_id, own in zip(ids, fields):  # one call per point, as set_relevance
            if memory_id in present:
                with self._writing:
                    self._update(qe.UpdateOperation.set_payload([memory_id], own))
                    with self._lock:
                        self.index.mark([memory_id], own)

    def search(self, vector: np.ndarray, limit: int, where: SearchFilter, with_payloads: bool = True) -> list[Hit]:
        self.ping()
        unit = normalized(np.asarray(vector, np.float32)[None, :])[0]
        found = self.index.search(unit, limit, where)
        if found is None and self.index.coming(self.count()) and self.index.wait_built(BUILD_WAIT_SECONDS):
            found = self.index.search(unit, limit, where)
        if found is None:
            return self._exact_search(vector, limit, where, with_payloads)
        if not with_payloads:  # recall reads the graph for each hit, which leaves out a point deleted meanwhile
            return [Hit(memory_id, similarity, {}) for memory_id, similarity in found]
        payloads = self.payloads([memory_id for memory_id, _ in found])
        # A point deleted since it was found has no payload any more: it is left out, as a later search would.
        return [Hit(memory_id, similarity, payloads[memory_id]) for memory_id, similarity in found
                if memory_id in payloads]

    def _exact_search(self, vector: np.ndarray, limit: int, where: SearchFilter,
                      with_payloads: bool = True) -> list[Hit]:
        request = qe.SearchRequest(query=qe.Query.Nearest(np.asarray(vector, np.float32).tolist()), limit=limit,
                                   filter=_edge_filter(where), with_payload=with_payloads, with_vector=False)
        with self._writing:  # the shard is not closed meanwhile
            if self._shard is None:
                raise StoreUnavailable("vectors", "the embedded Qdrant is closed")
            found = self._shard.search(request)
        return [Hit(str(p.id), float(p.score), dict(p.payload or {})) for p in found]

    def _index_payload(self) -> None:
        """Index the payload fields a recall filters on (once per shard: Edge keeps its indexes)."""
        present = self._shard.info().payload_schema or {}
        kinds = {"keyword": qe.PayloadSchemaType.Keyword, "bool": qe.PayloadSchemaType.Bool}
        for name, kind in INDEXED_FIELDS.items():
            if name not in present:
                self._update(qe.UpdateOperation.create_field_index(name, kinds[kind]))

    def _set_marks(self, ids: Sequence[str], marks: dict) -> None:
        present = self._present(ids)
        keep = [memory_id for memory_id in ids if memory_id in present]
        for part in chunked(keep, MARKS_PER_UPDATE):
            with self._writing:
                self._update(qe.UpdateOperation.set_payload(list(part), marks))
                with self._lock:
                    self.index.mark(list(part), marks)

    def delete(self, ids: Sequence[str]) -> None:
        for part in chunked(list(ids), UPSERT_CHUNK * 4):
            with self._writing:
                self._update(qe.UpdateOperation.delete_points(list(part)))
                with self._lock:
                    if self._cache is not None:
                        self._cache.drop(part)
                    self.index.drop(part)

    def count(self) -> int:
        # The in-memory copy is exact (every write updates both under the lock): counting it never waits for
        # the shard, whose own lock an update or a segment optimisation may hold (status asks at every call).
        cache = getattr(self, "_cache", None)  # None too while the store is being opened
        return len(cache) if cache is not None else self._shard.info().points_count

    def ids(self) -> list[str]:
        with self._lock:
            if self._cache is not None:
                return self._cache.ids()
        found: list[str] = []
        for records in self._scroll(with_vector=False):
            found.extend(str(r.id) for r in records)
        return found

    def ping(self) -> None:
        if self._shard is None:
            raise StoreUnavailable("vectors", "the embedded Qdrant is closed")

    def close(self) -> None:
        self.index.stop()  # before the lock: a build takes it to read
        with self._writing, self._lock:
            if self._shard is None:
                return
            self._shard.flush()
            self._shard.close()
            self._shard = None
            if self._cache is not None:
                self._cache.save(self._cache_file)

    def _cached_vectors(self, ids: Sequence[str]) -> tuple[list[str], np.ndarray]:
        """The unit vectors of these ids from the in-memory copy (the index reads them under the lock), a piece at
        a time: asked for most of its rows at once, the copy would reorder them, not a cost for a search.
        Without the copy (a crash left none), read from the shard: building the copy here would take the write
        lock under `_lock`, the reverse of the writes' order."""
        if self._cache is None:
            found, matrix = self._retrieved(ids)
            return found, normalized(matrix)
        parts = [self._cache.get(ids[start:start + BULK_READ]) for start in range(0, len(ids), BULK_READ)]
        if not parts:
            return [], np.zeros((0, self.vector_size), dtype=np.float32)
        return [i for found, _ in parts for i in found], np.concatenate([matrix for _, matrix in parts])

    def _register_points(self, stop: threading.Event) -> None:
        """Hand the recall index the payload of every point the shard held when it opened (a page at a time,
        under the lock, so that no write falls between a page read and its registration)."""
        offset = None
        while not stop.is_set():
            with self._writing:
                if self._shard is None:
                    return
                records, offset = self._shard.scroll(
                    qe.ScrollRequest(offset=offset, limit=REGISTER_PAGE, with_payload=True, with_vector=False))
                with self._lock:
                    ids = [str(r.id) for r in records]
                    self.index.register(self._cache.own(ids) if self._cache is not None else ids,
                                        [dict(r.payload or {}) for r in records])
            if offset is None:
                return

    def _build_cache(self) -> None:
        """Read every vector once (slow: Edge returns lists) into the in-memory copy."""
        with self._writing, self._lock:
            if self._cache is not None:
                return
            cache = VectorCache(self.vector_size)
            for records in self._scroll(with_vector=True):
                cache.put([str(r.id) for r in records], as_matrix([r.vector for r in records], self.vector_size))
            self._cache = cache
            log.info("vector cache built points=%d", len(cache))

    def _scroll(self, with_vector: bool):
        offset = None
        while True:
            records, offset = self._shard.scroll(
                qe.ScrollRequest(offset=offset, limit=SCROLL_PAGE, with_payload=False, with_vector=with_vector)
            )
            yield records
            if offset is None:
                return

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
        with self._writing:
            if self._shard is None:
                raise StoreUnavailable("vectors", "the embedded Qdrant is closed")
            self._shard.update(operation)


def _edge_filter(where: SearchFilter):
    """The SearchFilter as an Edge Filter (None when it lets everything through)."""
    must, must_not = [], []
    if where.scope is not None:
        must.append(qe.FieldCondition("scope", match=qe.MatchValue(where.scope)))
    if where.types is not None:
        must.append(qe.FieldCondition("type", match=qe.MatchAny(list(where.types))))
    if where.without_states:
        must_not.append(qe.FieldCondition("state", match=qe.MatchAny(list(where.without_states))))
    if where.without_types:
        must_not.append(qe.FieldCondition("type", match=qe.MatchAny(list(where.without_types))))
    if where.without_superseded:
        must_not.append(qe.FieldCondition("superseded", match=qe.MatchValue(True)))
    return qe.Filter(must=must or None, must_not=must_not or None) if must or must_not else None


def embedded_store_id(directory: Path) -> str | None:
    """The lasting name of the embedded store in `directory`, if one was ever opened there."""
    try:
        return str(uuid.UUID((directory.parent / f"{directory.name}.store_id").read_text().strip()))
    except (OSError, ValueError):
        return None


def _store_id(path: Path) -> str:
    """A lasting name for this shard, so the graph can tell one process's embedded store from another's."""
    try:
        return str(uuid.UUID(path.read_text().strip()))
    except (OSError, ValueError):
        store_id = str(uuid.uuid4())
        path.write_text(store_id + "\n")
        return store_id


def _open_shard(directory: Path, vector_size: int):
    """The shard and whether it was created just now."""
    # Vectors stay on disk (memory-mapped): bulk reads come from the in-memory copy, so keeping Edge's own
    # copy in RAM as well would double the memory for nothing (measured: 240 MB -> 80 MB at 100k on reopen).
    vectors = qe.EdgeVectorParams(size=vector_size, distance=qe.Distance.Cosine, memory=qe.Memory.Cold)
    config = qe.EdgeConfig(vectors=vectors)
    try:
        if directory.exists() and any(directory.iterdir()):
            return qe.EdgeShard.load(str(directory), config), False
        directory.mkdir(parents=True, exist_ok=True)
        return qe.EdgeShard.create(str(directory), config), True
    except Exception as exc:  # Edge raises plain Exception with a message; sort the known ones out
        message = str(exc)
        if "ncompatible" in message:
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
