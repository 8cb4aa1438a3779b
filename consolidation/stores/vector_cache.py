"""An in-memory copy of the embedded store's vectors, kept in step by the store, saved across clean restarts.

Qdrant Edge hands vectors back as Python lists, about 60 µs a point: reading 100k vectors costs 6-8 s, more
than half of clustering's budget. Only one process can open an Edge shard, and every write goes through
EdgeVectorStore, so the store can keep this copy exact. A crash leaves no saved copy (the file is removed
when it is loaded), and the next bulk read rebuilds it from the shard.

A bulk read hands out a read-only view of the matrix, not a copy: at a million memories a copy is 1.5 GB
and seconds of page faults, in every task. The rows are kept in the order the tasks ask for them (a large
request in another order reorders them once), and a write into rows a live view can see copies the matrix
first, so that what a task was handed never changes under it.
"""

from __future__ import annotations

import ctypes
import os
import sys
from collections.abc import Sequence
from itertools import repeat
from pathlib import Path

import numpy as np

from ..similarity import normalized

GROWTH = 1.5
REORDER_CHUNK = 65536
COPY_ROWS = 8192  # rows copied at once when the matrix is copied whole (12 MB at 384 dimensions: a few ms)
# A request for at least this share of the rows is handed a view, the rows reordered first when a slice cannot
# show them (another order, or rows between them left out: archived memories keep their vectors); a smaller
# request is copied.
REORDER_SHARE = 0.5


class VectorCache:
    """Unit vectors by id in one growable float32 matrix; freed rows are reused."""

    def __init__(self, vector_size: int):
        self.vector_size = vector_size
        self._row_of: dict[str, int] = {}
        self._ids: list[str | None] = []
        self._matrix = np.zeros((0, vector_size), dtype=np.float32)
        self._free: list[int] = []
        self._lent_rows = 0  # views handed out show rows below this (while any is alive)

    def __len__(self) -> int:
        return len(self._row_of)

    def put(self, ids: Sequence[str], vectors: np.ndarray) -> None:
        """Insert or replace; vectors are stored normalised, as the cosine store returns them."""
        unit = normalized(vectors)
        # While a view is out (a task's, or the matrix being sent to the worker child), new ids take new rows:
        # reusing a freed row under the view would copy the whole matrix first (1.5 GB at a million, seconds
        # with the GIL held, in a request that adds one memory).
        reuse = bool(self._free) and not (self._lent_rows > 0 and sys.getrefcount(self._matrix) > 2)
        self._unshare(max((self._row_of.get(i, -1) for i in ids), default=-1), reuse)
        for memory_id, vector in zip(ids, unit):
            row = self._row_of.get(memory_id)
            if row is None:
                row = self._free.pop() if reuse and self._free else self._append_row()
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
        """The cached ids among `ids`, in that order, and their vectors (read-only: a view when they are most
        of the rows, stored in that order once reordered if need be; a copy when they are few)."""
        return self._lend(*self._rows(ids))

    def _lend(self, found: list[str], rows: np.ndarray) -> tuple[list[str], np.ndarray]:
        """The vectors of `rows` (the rows of the ids `found`): see get."""
        # A few rows are copied: cheap, and a view of them would make the next write copy the whole matrix.
        large = rows.size > 0 and rows.size >= REORDER_SHARE * len(self._row_of)
        if large and not _consecutive(rows) and self._reorder(rows):
            rows = np.arange(rows.size)
        if large and _consecutive(rows):
            vectors = self._matrix[rows[0]:rows[-1] + 1]
            self._lent_rows = max(self._lent_rows, int(rows[-1]) + 1)
        else:
            vectors = self._matrix[rows]
        vectors.flags.writeable = False
        return found, vectors

    def _rows(self, ids: Sequence[str]) -> tuple[list[str], np.ndarray]:
        """The cached ids among `ids` (as this copy's own strings: see own) and their rows (looked up by C-level
        maps: a million ids in 0.1 s)."""
        rows = np.fromiter(map(self._row_of.get, ids, repeat(-1, len(ids))), dtype=np.int64, count=len(ids))
        if rows.size and rows.min() < 0:
            rows = rows[rows >= 0]
        return list(map(self._ids.__getitem__, rows.tolist())), rows

    def own(self, ids: Sequence[str]) -> list[str]:
        """These ids, each as this copy's own string where it holds the id. An id read from a store is a new
        string each time it is read; what keeps ids between runs (the recall index, the neighbour graph) keeps
        these instead, so a million ids are held once (~75 MB a copy)."""
        rows, held = self._row_of.get, self._ids
        return [memory_id if (row := rows(memory_id)) is None else held[row] for memory_id in ids]

    def all(self) -> tuple[list[str], np.ndarray]:
        """Every cached id and its vector (get for every id, without looking each one up: at a million ids
        the lookups held the GIL for 300 ms, the rows read from the map 20 ms)."""
        ids = list(self._row_of)
        return self._lend(ids, np.fromiter(self._row_of.values(), dtype=np.int64, count=len(ids)))

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
        # Room to grow from the start: the first memory added would otherwise copy every row (and the spare rows
        # take no memory until written).
        cache._ids = list(ids)
        cache._matrix = _with_room(np.asarray(vectors, dtype=np.float32), len(ids), max(64, int(len(ids) * GROWTH)))
        cache._row_of = dict(zip(ids, range(len(ids))))
        return cache

    def _reorder(self, rows: np.ndarray) -> bool:
        """Store `rows` first, in that order, then the other live rows (free rows dropped). False (nothing done)
        if a row is asked for twice."""
        asked = np.zeros(len(self._ids), dtype=bool)
        asked[rows] = True
        if int(asked.sum()) != rows.size:
            return False
        others = np.fromiter((row for row in self._row_of.values() if not asked[row]), dtype=np.int64)
        order = np.concatenate([rows, others])
        if sys.getrefcount(self._matrix) <= 2:  # this attribute and the call's argument: no view is alive
            self._permute_in_place(rows, others)
        else:  # into a new matrix, so that the views of the old one stay as they were
            matrix = np.empty((max(64, int(order.size * (GROWTH + 1) / 2)), self.vector_size), dtype=np.float32)
            for start in range(0, order.size, REORDER_CHUNK):  # a chunk at a time: no second full-size temporary
                part = order[start:start + REORDER_CHUNK]
                matrix[start:start + part.size] = self._matrix[part]
            self._matrix = matrix
        self._ids = list(map(self._ids.__getitem__, order.tolist()))
        self._row_of = dict(zip(self._ids, range(len(self._ids))))
        self._free, self._lent_rows = [], 0
        return True

    def _permute_in_place(self, rows: np.ndarray, others: np.ndarray) -> None:
        """Move `rows` to the top, in that order, and `others` after them, in the matrix itself: a second matrix
        would double 1.5 GB at a million memories.

        Going up, a row wanted below its place is read before anything overwrites it, and only rows wanted above
        their place are put aside first; going down, the reverse. The direction with fewer rows to put aside is
        taken: a request in the stored order with gaps (archived memories left out) goes up with none, and one
        with new memories in the middle (rows appended at the end) goes down with only those. The rest move as
        runs of consecutive rows, a slice at a time: such a request is a few thousand runs, and slices copy
        several times faster than gathering rows one by one."""
        targets = np.arange(rows.size)
        upward = int(np.count_nonzero(rows < targets)) <= int(np.count_nonzero(rows > targets))
        moving = rows < targets if upward else rows > targets
        aside = self._matrix[rows[moving]]
        aside_at = np.cumsum(moving) - moving  # where each target's row is in `aside`, if it was put aside
        kept_apart = self._matrix[others]
        runs = _runs(rows, moving)
        for start, end in runs if upward else reversed(runs):
            if moving[start]:
                self._matrix[start:end] = aside[aside_at[start]:aside_at[start] + end - start]
            else:
                self._move(int(rows[start]), start, end - start)
        self._matrix[rows.size:rows.size + others.size] = kept_apart

    def _move(self, source: int, target: int, count: int) -> None:
        """Copy `count` rows from `source` to `target` within the matrix. memmove copies overlapping rows
        correctly without a temporary; numpy would copy an overlapping slice through one as large as the slice."""
        row_bytes = self._matrix.strides[0]
        base = self._matrix.ctypes.data
        ctypes.memmove(base + target * row_bytes, base + source * row_bytes, count * row_bytes)

    def _unshare(self, highest_row: int, reusing: bool) -> None:
        """Before writing rows up to `highest_row` (-1: no existing row) or reusing freed ones: copy the matrix
        if a view of those rows may still be alive (each live view holds a reference to the matrix it shows)."""
        touches_lent = 0 <= highest_row < self._lent_rows or (reusing and self._lent_rows > 0)
        if touches_lent and sys.getrefcount(self._matrix) > 2:  # this attribute and the call's argument
            self._matrix, self._lent_rows = _with_room(self._matrix, len(self._ids), self._matrix.shape[0]), 0
        elif sys.getrefcount(self._matrix) <= 2:
            self._lent_rows = 0

    def _append_row(self) -> int:
        row = len(self._ids)
        if row >= self._matrix.shape[0]:
            self._matrix = _with_room(self._matrix, row, max(64, int(self._matrix.shape[0] * GROWTH)))
        self._ids.append(None)
        return row


def _with_room(matrix: np.ndarray, used: int, rows: int) -> np.ndarray:
    """A new matrix of `rows` rows holding the first `used` rows of `matrix`. Copied a slice at a time: numpy
    holds the GIL while it copies, and one copy of a million rows (1.5 GB) held every request of the process
    for seconds; between slices the other threads get it. The rows after `used` are left unwritten, so they
    take no memory until used."""
    grown = np.empty((rows, matrix.shape[1]), dtype=np.float32)
    for start in range(0, used, COPY_ROWS):
        grown[start:min(start + COPY_ROWS, used)] = matrix[start:min(start + COPY_ROWS, used)]
    return grown


def _runs(rows: np.ndarray, moving: np.ndarray) -> list[tuple[int, int]]:
    """The stretches [start, end) of `rows` that are consecutive rows, all put aside or none."""
    breaks = np.flatnonzero((np.diff(rows) != 1) | (moving[1:] != moving[:-1])) + 1
    bounds = [0, *breaks.tolist(), rows.size]
    return list(zip(bounds[:-1], bounds[1:]))


def _consecutive(rows: np.ndarray) -> bool:
    """Rows r, r + 1, ..., in order: a slice shows them without a copy."""
    return rows.size > 0 and int(rows[-1]) - int(rows[0]) == rows.size - 1 and bool(np.all(np.diff(rows) == 1))
