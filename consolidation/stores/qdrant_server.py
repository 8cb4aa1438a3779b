"""The production vector store: a Qdrant server (or anything qdrant-client speaks to) via qdrant-client."""

from __future__ import annotations

import functools
from collections.abc import Sequence

import httpx
import numpy as np
from qdrant_client import QdrantClient, models
from qdrant_client.http.exceptions import ResponseHandlingException, UnexpectedResponse

from ..errors import StoreMismatch, StoreUnavailable
from .falkor import chunked
from .vectors import (ARCHIVED, INDEXED_FIELDS, UPSERT_CHUNK, Hit, SearchFilter, VectorPoint, archive_marks, as_matrix,
                      in_order)

SCROLL_PAGE = 2000
PAYLOAD_BATCH = 1000
TIMEOUT_SECONDS = 30


def _outages_are_unavailable(method):
    """Connection failures and server-side errors of Qdrant become StoreUnavailable."""

    @functools.wraps(method)
    def wrapper(*args, **kwargs):
        try:
            return method(*args, **kwargs)
        except (ResponseHandlingException, httpx.TransportError, ConnectionError) as exc:
            raise StoreUnavailable("vectors", f"Qdrant is unreachable ({exc})") from exc
        except UnexpectedResponse as exc:
            if exc.status_code is not None and exc.status_code >= 500:
                raise StoreUnavailable("vectors", f"Qdrant answered {exc.status_code}") from exc
            raise

    return wrapper


class QdrantServerStore:
    """One collection on a Qdrant server; also works with qdrant-client's local mode (used in tests)."""

    def __init__(self, client: QdrantClient, collection: str, vector_size: int):
        self.client = client
        self.collection = collection
        self.vector_size = vector_size

    @classmethod
    def connect(cls, url: str, api_key: str | None, collection: str, vector_size: int) -> QdrantServerStore:
        return cls(QdrantClient(url=url, api_key=api_key, timeout=TIMEOUT_SECONDS), collection, vector_size)

    @_outages_are_unavailable
    def ensure_collection(self) -> None:
        """Create the collection if missing; refuse one whose vectors have another size."""
        if not self.client.collection_exists(self.collection):
            self.client.create_collection(
                self.collection,
                vectors_config=models.VectorParams(size=self.vector_size, distance=models.Distance.COSINE),
            )
            self._index_payload(set())
            return
        params = self.client.get_collection(self.collection).config.params.vectors
        size = params.size if isinstance(params, models.VectorParams) else None
        if size != self.vector_size:
            raise StoreMismatch(
                f"Qdrant collection {self.collection!r} holds vectors of size {size}, "
                f"but VECTOR_SIZE={self.vector_size}; use another QDRANT_COLLECTION or fix VECTOR_SIZE"
            )
        self._index_payload(set(self.client.get_collection(self.collection).payload_schema or {}))

    def _index_payload(self, present: set[str]) -> None:
        """Index the payload fields a recall filters on (a collection made before recall gets them now)."""
        kinds = {"keyword": models.PayloadSchemaType.KEYWORD, "bool": models.PayloadSchemaType.BOOL}
        for name, kind in INDEXED_FIELDS.items():
            if name not in present:
                self.client.create_payload_index(self.collection, name, field_schema=kinds[kind], wait=True)

    @_outages_are_unavailable
    def upsert(self, points: Sequence[VectorPoint]) -> None:
        for part in chunked(points, UPSERT_CHUNK):
            structs = [models.PointStruct(id=p.id, vector=np.asarray(p.vector, np.float32).tolist(),
                                          payload=p.payload) for p in part]
            self.client.upsert(self.collection, points=structs, wait=True)

    @_outages_are_unavailable
    def vectors(self, ids: Sequence[str]) -> tuple[list[str], np.ndarray]:
        records = self.client.retrieve(self.collection, list(ids), with_vectors=True, with_payload=False) if ids else []
        return in_order(ids, {str(r.id): r.vector for r in records}, self.vector_size)

    @_outages_are_unavailable
    def payloads(self, ids: Sequence[str]) -> dict[str, dict]:
        records = self.client.retrieve(self.collection, list(ids), with_vectors=False, with_payload=True) if ids else []
        return {str(r.id): dict(r.payload or {}) for r in records}

    @_outages_are_unavailable
    def all_vectors(self) -> tuple[list[str], np.ndarray]:
        ids: list[str] = []
        rows: list[list[float]] = []
        for record in self._scroll(with_vectors=True):
            ids.append(str(record.id))
            rows.append(record.vector)
        return ids, as_matrix(rows, self.vector_size)

    @_outages_are_unavailable
    def set_relevance(self, ids: Sequence[str], scores: Sequence[float]) -> None:
        present = set(self._existing(ids))
        operations = [
            models.SetPayloadOperation(
                set_payload=models.SetPayload(payload={"relevance_score": float(score)}, points=[memory_id])
            )
            for memory_id, score in zip(ids, scores)
            if memory_id in present
        ]
        for part in chunked(operations, PAYLOAD_BATCH):
            self.client.batch_update_points(self.collection, update_operations=list(part), wait=True)

    @_outages_are_unavailable
    def set_archived(self, ids: Sequence[str], archived: bool, state: str | None = None) -> None:
        self._set_marks(ids, archive_marks(archived, state))

    @_outages_are_unavailable
    def set_superseded(self, ids: Sequence[str], superseded: bool) -> None:
        self._set_marks(ids, {"superseded": superseded})

    @_outages_are_unavailable
    def set_scopes(self, ids: Sequence[str], scope: str) -> None:
        self._set_marks(ids, {"scope": scope})

    @_outages_are_unavailable
    def set_fields(self, ids: Sequence[str], fields: Sequence[dict]) -> None:
        present = set(self._existing(ids))
        operations = [models.SetPayloadOperation(set_payload=models.SetPayload(payload=own, points=[memory_id]))
                      for memory_id, own in zip(ids, fields) if memory_id in present]
        for part in chunked(operations, PAYLOAD_BATCH):
            self.client.batch_update_points(self.collection, update_operations=list(part), wait=True)

    @_outages_are_unavailable
    def search(self, vector: np.ndarray, limit: int, where: SearchFilter, with_payloads: bool = True) -> list[Hit]:
        found = self.client.query_points(self.collection, query=np.asarray(vector, np.float32).tolist(),
                                         limit=limit, query_filter=_server_filter(where), with_payload=with_payloads,
                                         with_vectors=False).points
        return [Hit(str(p.id), float(p.score), dict(p.payload or {})) for p in found]

    def _set_marks(self, ids: Sequence[str], marks: dict) -> None:
        present = self._existing(ids)
        for part in chunked(present, PAYLOAD_BATCH):
            self.client.set_payload(self.collection, payload=marks, points=list(part), wait=True)

    @_outages_are_unavailable
    def delete(self, ids: Sequence[str]) -> None:
        for part in chunked(list(ids), PAYLOAD_BATCH):
            self.client.delete(self.collection, points_selector=models.PointIdsList(points=list(part)), wait=True)

    @_outages_are_unavailable
    def count(self) -> int:
        return self.client.count(self.collection, exact=True).count

    @_outages_are_unavailable
    def ids(self) -> list[str]:
        return [str(record.id) for record in self._scroll(with_vectors=False)]

    @_outages_are_unavailable
    def ping(self) -> None:
        self.client.collection_exists(self.collection)

    def close(self) -> None:
        self.client.close()

    def _existing(self, ids: Sequence[str]) -> list[str]:
        found = []
        for part in chunked(list(ids), PAYLOAD_BATCH):
            records = self.client.retrieve(self.collection, list(part), with_vectors=False, with_payload=False)
            found.extend(str(r.id) for r in records)
        return found

    def _scroll(self, with_vectors: bool):
        offset = None
        while True:
            records, offset = self.client.scroll(
                self.collection, limit=SCROLL_PAGE, offset=offset, with_vectors=with_vectors, with_payload=False
            )
            yield from records
            if offset is None:
                return


def _server_filter(where: SearchFilter) -> models.Filter | None:
    """The SearchFilter as a qdrant-client Filter (None when it lets everything through)."""
    must, must_not = [], []
    if where.scope is not None:
        must.append(models.FieldCondition(key="scope", match=models.MatchValue(value=where.scope)))
    if where.types is not None:
        must.append(models.FieldCondition(key="type", match=models.MatchAny(any=list(where.types))))
    if where.without_states:
        must_not.append(models.FieldCondition(key="state", match=models.MatchAny(any=list(where.without_states))))
    if ARCHIVED in where.without_states:  # a point AutoMem archived: no state, `archived: true`
        archived = models.FieldCondition(key="archived", match=models.MatchValue(value=True))
        # The state condition first: it is indexed, and settles every point we wrote.
        must_not.append(models.Filter(must=[models.IsEmptyCondition(is_empty=models.PayloadField(key="state")),
                                            archived]))
    if where.without_types:
        must_not.append(models.FieldCondition(key="type", match=models.MatchAny(any=list(where.without_types))))
    if where.without_superseded:
        must_not.append(models.FieldCondition(key="superseded", match=models.MatchValue(value=True)))
    return models.Filter(must=must or None, must_not=must_not or None) if must or must_not else None
