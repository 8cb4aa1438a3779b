"""The vector store interface the engine sees, whichever Qdrant runs behind it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from ..scopes import Scoping

# What a filtered vector search can read without the graph: a memory's score, type, where it is in its
# lifecycle (state: active / archived / merged; superseded: a newer memory changed it) and its scope (the key
# Scoping.key_of gives; "" with no scope properties). Beside them what AutoMem's recall filters a vector hit on
# (archived, t_valid, t_invalid: a superseded memory is invalid from its newer one's time) and what its creative
# and cluster passes select on (relevance_score, capped for a memory no longer current: scoring.as_stored).
# A point AutoMem wrote has no state: `archived: true` stands for it (SearchFilter).
PAYLOAD_FIELDS = ("relevance_score", "archived", "type", "state", "superseded", "scope", "t_valid", "t_invalid")
# The payload fields a recall filters on, indexed in both stores so that a filtered search stays a graph walk.
INDEXED_FIELDS = {"state": "keyword", "superseded": "bool", "scope": "keyword", "type": "keyword"}
UPSERT_CHUNK = 256
ARCHIVED = "archived"  # the state an archive sets (lifecycle.states.ARCHIVED; stores do not import lifecycle)


@dataclass(frozen=True)
class VectorPoint:
    """One memory's embedding and the payload mirrored from the graph."""

    id: str
    vector: np.ndarray
    payload: dict = field(default_factory=dict)


@dataclass(frozen=True)
class SearchFilter:
    """What a recall may see: points of one scope (None: any), without these states and types, only these
    types (None: any), and not superseded when `current`. A point without a field passes a condition on it
    unless the condition requires the field (scope, types); one without `state` (AutoMem wrote it) is in state
    'archived' when its payload says `archived: true`."""

    scope: str | None = None
    without_states: tuple[str, ...] = ()
    without_types: tuple[str, ...] = ()
    types: tuple[str, ...] | None = None
    without_superseded: bool = False


@dataclass(frozen=True)
class Hit:
    """A point a search found: its id, cosine similarity to the query and payload."""

    id: str
    similarity: float
    payload: dict


class VectorStore(Protocol):
    """One Qdrant collection of memory embeddings; point id = memory id, payload mirrors the graph."""

    vector_size: int

    def upsert(self, points: Sequence[VectorPoint]) -> None:
        """Insert or replace points."""

    def vectors(self, ids: Sequence[str]) -> tuple[list[str], np.ndarray]:
        """The ids among `ids` that have a vector, and their vectors as a float32 matrix, in that order."""

    def all_vectors(self) -> tuple[list[str], np.ndarray]:
        """Every point's id and vector."""

    def payloads(self, ids: Sequence[str]) -> dict[str, dict]:
        """The payload of each of these points that exists, by id."""

    def set_relevance(self, ids: Sequence[str], scores: Sequence[float]) -> None:
        """Mirror new relevance scores into the payload; ids without a point are skipped."""

    def set_archived(self, ids: Sequence[str], archived: bool, state: str | None = None) -> None:
        """Mirror an archive, a merge (state 'merged') or a restore into the payload; ids without a point are
        skipped."""

    def set_superseded(self, ids: Sequence[str], superseded: bool) -> None:
        """Mirror a supersession (or its undoing) into the payload; ids without a point are skipped."""

    def set_fields(self, ids: Sequence[str], fields: Sequence[dict]) -> None:
        """Set each point's own payload fields (one dict per id; its other fields stay); ids without a point are
        skipped."""

    def search(self, vector: np.ndarray, limit: int, where: SearchFilter, with_payloads: bool = True) -> list[Hit]:
        """The `limit` points most similar to `vector` (cosine) among those `where` lets through, best first
        (approximate: the store's HNSW index, exact while a segment is small); hits carry an empty payload
        unless `with_payloads` (reading them is a second store call a caller may not need)."""

    def set_scopes(self, ids: Sequence[str], scope: str) -> None:
        """Mirror one scope key into the payload of these points; ids without a point are skipped."""

    def delete(self, ids: Sequence[str]) -> None:
        """Remove points; ids without a point are ignored."""

    def count(self) -> int:
        """How many points the collection holds."""

    def ids(self) -> list[str]:
        """Every point id."""

    def ping(self) -> None:
        """Raise StoreUnavailable if the store cannot answer."""

    def close(self) -> None:
        """Release the store (flush embedded data to disk)."""


def as_matrix(rows: Sequence[Sequence[float]], vector_size: int) -> np.ndarray:
    """Stack vectors into a float32 matrix, (0, vector_size) when there are none."""
    if not rows:
        return np.zeros((0, vector_size), dtype=np.float32)
    return np.asarray(rows, dtype=np.float32)


def in_order(asked: Sequence[str], found: dict[str, Sequence[float]], vector_size: int) -> tuple[list[str], np.ndarray]:
    """The found vectors in the order they were asked for, skipping ids that have none."""
    ids = [memory_id for memory_id in asked if memory_id in found]
    return ids, as_matrix([found[memory_id] for memory_id in ids], vector_size)


def payload_of(memory: dict, scoping: Scoping) -> dict:
    """The payload a memory's point carries: the graph fields the vector side filters on."""
    archived = bool(memory.get("archived", False))
    return {
        "scope": scoping.key_of(memory),
        "relevance_score": memory.get("relevance_score"),
        "archived": archived,
        "type": memory.get("type"),
        "state": "merged" if memory.get("merged_into") else "archived" if archived else "active",
        "superseded": memory.get("superseded_by") is not None,
        "t_valid": memory.get("t_valid"),
        "t_invalid": memory.get("t_invalid"),
        "embedding_model": memory.get("embedding_model"),  # None: a client's vector, of the store's model
    }


def stated(payload: dict) -> dict:
    """The payload, with state 'archived' if it has no state but says `archived: true` (AutoMem archived it), as
    SearchFilter reads it; any other payload as it is."""
    if payload.get("state") is None and payload.get("archived") is True:
        return {**payload, "state": ARCHIVED}
    return payload


def archive_marks(archived: bool, state: str | None) -> dict:
    """The payload fields an archive, a merge or a restore sets."""
    return {"archived": archived, "state": state or ("archived" if archived else "active")}
