"""An in-memory copy of the embedded store's vectors, kept in step by the store, saved across clean restarts.

Qdrant Edge hands vectors back as Python lists, about 60 µs a point: reading 100k vectors costs 6-8 s, more
than half of clustering's budget. Only one process can open an Edge shard, and every write goes through
EdgeVectorStore, so the store can keep this copy exact. A crash leaves no saved copy (the file is removed
when it is loaded), and the next bulk read rebuilds it from the shard.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ..similarity import normalized

GROWTH = 1.5


class VectorCache:
    """Unit vectors by id in one growable float32 matrix; freed rows are reused."""

    def __init__(self, vector_size: int):
        self.vector_size = vector_size
        self._row_of: dict[str, int] = {}
        self._ids: list[str | None] = []
        self._matrix = np.zeros((0, vector_size), dtype=np.float32)
        self._free: list[int] = []

    def __len__(self) -> int:
        return len(self._row_of)

    def put(self, ids: Sequence[str], vectors: np.ndarray) -> None:
        """Insert or replace; vectors are stored normalised, as the cosine store returns them."""
        unit = normalized(vectors)
        for memory_id, vector in zip(ids, unit):
            row = self._row_of.get(memory_id)
            if row is None:
                row = self._free.pop() if self._free else self._append_row()
                self._row_of[memory_id] = row
                self._ids[row] = memory_id
            self._matrix[row] = vector

    def drop(self, ids: Sequence[str]) -> None:
        for memory_id in ids:
            row = self._row_of.pop(memory_id, None)
            if row is not None:
                self._ids[row] = None
                self._free.append(row)

    def get(self, ids: Sequence[str]) -> tuple[list[str], np.ndarray]:
        """The cached ids among `ids`, in that order, and a copy of their vectors."""
        found = [memory_id for memory_id in ids if memory_id in self._row_of]
        rows = np.fromiter((self._row_of[memory_id] for memory_id in found), dtype=np.int64, count=len(found))
        return found, self._matrix[rows]

    def all(self) -> tuple[list[str], np.ndarray]:
        rows = np.fromiter(self._row_of.values(), dtype=np.int64, count=len(self._row_of))
        return list(self._row_of), self._matrix[rows]

    def ids(self) -> list[str]:
        return list(self._row_of)

    def save(self, path: Path) -> None:
        """Write atomically (temp file + rename): a crash mid-save leaves no half file to load."""
        ids, matrix = self.all()
        temporary = path.with_suffix(".tmp.npz")
        np.savez(temporary, ids=np.array(ids, dtype="U36"), vectors=matrix)
        os.replace(temporary, path)

    @classmethod
    def load_once(cls, path: Path, vector_size: int, expected_count: int) -> VectorCache | None:
        """Load a saved copy and delete the file; None if absent, unreadable, or not matching the store."""
        if not path.exists():
            return None
        try:
            with np.load(path) as saved:
                ids, vectors = [str(i) for i in saved["ids"]], saved["vectors"]
        except (OSError, ValueError, KeyError):
            ids, vectors = [], None
        finally:
            path.unlink(missing_ok=True)
        if vectors is None or len(ids) != expected_count or vectors.shape[1:] != (vector_size,):
            return None
        cache = cls(vector_size)
        cache._ids, cache._matrix = list(ids), np.ascontiguousarray(vectors, dtype=np.float32)
        cache._row_of = {memory_id: row for row, memory_id in enumerate(ids)}
        return cache

    def _append_row(self) -> int:
        row = len(self._ids)
        if row >= self._matrix.shape[0]:
            grown = np.zeros((max(64, int(self._matrix.shape[0] * GROWTH)), self.vector_size), dtype=np.float32)
            grown[: self._matrix.shape[0]] = self._matrix
            self._matrix = grown
        self._ids.append(None)
        return row
