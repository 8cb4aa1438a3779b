"""An approximate nearest-neighbour index over the embedded store's vectors (faiss IVF), filtered by payload marks.

Qdrant Edge answers a search exactly: 165 ms at a million points (bench/recall_bench.py), and its own HNSW build
holds the GIL for the whole build. This index is faiss's inverted file of 8-bit codes (a quarter of the float vectors' memory;
faiss releases the GIL while it trains, adds and searches), built in a background thread, its candidates ranked
again exactly from the store's in-memory vectors. Each memory has an int64 label: a new one for every new
vector, so that a label always stands for one vector, and labels freed by a delete or a replacement are used
again only while no build is going on (a build may still add the old vector under the old label).

The marks a recall filters on (state, superseded, scope, type) are kept in numpy arrays by label and applied
inside faiss as a bitmap of the labels a filter lets through; a filter that lets few through is answered
exactly over those few. The store serialises every write under its lock; a search takes it only to read the marks
and the vectors it ranks, and takes the index's own lock while faiss searches.
"""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import faiss
import numpy as np

from .vectors import SearchFilter

log = logging.getLogger(__name__)

# Below this many points the store's exact search is fast enough (Edge measured 3 ms at 30k, 15 ms at 100k).
BUILD_FROM = 20000
CELLS_PER_ROOT = 1  # cells = this × √N: ~1,000 points a cell
TRAINING_PER_CELL = 50  # faiss warns below 39 a cell
PROBES = 64  # cells searched for an unfiltered query (recall@10 in bench/recall_bench.py)
CODE_MARGIN = 0.2  # each dimension's 8-bit range: the training sample's, widened by this share on each side
RERANK = 2  # candidates ranked again exactly: this × the limit asked for
# A filter that lets this few points through is answered exactly over them (a small scope). Above it faiss is
# cheaper even when every cell must be searched: its 8-bit codes are scanned at ~0.1 µs a point, the bitmap
# skipping those left out, while gathering float vectors from the store's copy costs ~1.5 µs a point (measured:
# 20,000 gathered 33 ms a search, 1,000,000 codes scanned ~10 ms).
EXACT_BELOW = 2000
REBUILD_GROWTH = 4.0  # built again (more cells) once the store holds this × the points it was built for
ADD_CHUNK = 16384  # vectors read and added at once by a build (24 MB at 384 dimensions)
GROWTH = 1.5
MISSING = 0  # the code of a field a point does not have (or has as no string)

VectorReader = Callable[[Sequence[str]], tuple[list[str], np.ndarray]]


@dataclass(frozen=True)
class IndexSizes:
    """When the cells are built (the store holds this many points) and when a filter is answered exactly (it
    lets at most this many through)."""

    build_from: int = BUILD_FROM
    exact_below: int = EXACT_BELOW


class Codes:
    """Small integers for the strings a payload field takes; MISSING for none."""

    def __init__(self):
        self._code: dict[str, int] = {}

    def of(self, value) -> int:
        if not isinstance(value, str):
            return MISSING
        return self._code.setdefault(value, len(self._code) + 1)

    def known(self, values: Sequence[str]) -> list[int]:
        """The codes of these values (a value never seen has none: nothing carries it)."""
        return [self._code[v] for v in values if v in self._code]


class Marks:
    """What a filter reads, by label: alive, state, superseded, scope and type codes."""

    def __init__(self):
        self.alive = np.zeros(0, dtype=bool)
        self.superseded = np.zeros(0, dtype=bool)
        self.state = np.zeros(0, dtype=np.int32)
        self.scope = np.zeros(0, dtype=np.int32)
        self.type = np.zeros(0, dtype=np.int32)
        self.codes = {"state": Codes(), "scope": Codes(), "type": Codes()}

    def grow(self, labels: int) -> None:
        if labels <= self.alive.size:
            return
        size = max(1024, int(labels * GROWTH))
        for name in ("alive", "superseded", "state", "scope", "type"):
            old = getattr(self, name)
            grown = np.zeros(size, dtype=old.dtype)
            grown[:old.size] = old
            setattr(self, name, grown)

    def set(self, labels: np.ndarray, payloads: Sequence[dict]) -> None:
        """The marks of whole payloads (a point written again loses the fields its new payload lacks)."""
        for name in ("state", "scope", "type"):
            codes = self.codes[name]
            getattr(self, name)[labels] = [codes.of(p.get(name)) for p in payloads]
        self.superseded[labels] = [p.get("superseded") is True for p in payloads]

    def update(self, labels: np.ndarray, marks: dict) -> None:
        """Set the fields in `marks` (the others stay)."""
        for name in ("state", "scope", "type"):
            if name in marks:
                getattr(self, name)[labels] = self.codes[name].of(marks[name])
        if "superseded" in marks:
            self.superseded[labels] = marks["superseded"] is True

    def allowed(self, where: SearchFilter, at) -> np.ndarray:
        """Which of the labels `at` (a slice or an array of labels) `where` lets through, as Qdrant reads the
        store's filter: a point without a field fails a condition that requires it (scope, types) and passes one
        that excludes values."""
        allowed = self.alive[at].copy()
        if where.scope is not None:
            allowed &= np.isin(self.scope[at], self.codes["scope"].known([where.scope]))
        if where.types is not None:
            allowed &= np.isin(self.type[at], self.codes["type"].known(where.types))
        if where.without_states:
            allowed &= ~np.isin(self.state[at], self.codes["state"].known(where.without_states))
        if where.without_types:
            allowed &= ~np.isin(self.type[at], self.codes["type"].known(where.without_types))
        if where.without_superseded:
            allowed &= ~self.superseded[at]
        return allowed


class Cells:
    """One trained faiss inverted file and which labels it holds."""

    def __init__(self, sample: np.ndarray, points: int):
        dimension = sample.shape[1]
        cells = max(1, min(int(CELLS_PER_ROOT * math.sqrt(points)), sample.shape[0] // TRAINING_PER_CELL))
        self.index = faiss.IndexIVFScalarQuantizer(faiss.IndexFlatIP(dimension), dimension, cells,
                                                   faiss.ScalarQuantizer.QT_8bit, faiss.METRIC_INNER_PRODUCT)
        # Each dimension's codes span the sample's range and a margin: a later vector beyond the range would be
        # clipped, its similarity misjudged enough to drop it from the candidates (seen on small samples).
        self.index.sq.rangestat = faiss.ScalarQuantizer.RS_minmax
        self.index.sq.rangestat_arg = CODE_MARGIN
        # Labels removed one by one (a replaced or deleted memory) are found through a hash map, not a scan.
        self.index.set_direct_map_type(faiss.DirectMap.Hashtable)
        self.index.train(sample)
        self.built_for = points
        self.held = np.zeros(0, dtype=bool)

    @property
    def cells(self) -> int:
        return self.index.nlist

    def add(self, vectors: np.ndarray, labels: np.ndarray) -> None:
        if labels.size:
            self.index.add_with_ids(np.ascontiguousarray(vectors, dtype=np.float32), labels.astype(np.int64))
            if labels.max() >= self.held.size:
                held = np.zeros(max(1024, int((labels.max() + 1) * GROWTH)), dtype=bool)
                held[:self.held.size] = self.held
                self.held = held
            self.held[labels] = True

    def holds(self, labels: np.ndarray) -> np.ndarray:
        inside = labels < self.held.size
        inside[inside] = self.held[labels[inside]]
        return inside

    def remove(self, labels: np.ndarray) -> None:
        """Remove the labels it holds among these."""
        held = labels[self.holds(labels)]
        if held.size:
            self.index.remove_ids(faiss.IDSelectorArray(held.size, faiss.swig_ptr(held.astype(np.int64))))
            self.held[held] = False


class VectorIndex:
    """Labels, marks and the faiss cells for the store's vectors; `search` answers None until the cells are built
    (the store's exact search answers meanwhile)."""

    def __init__(self, vectors: VectorReader, lock: threading.RLock, sizes: IndexSizes = IndexSizes()):
        self.sizes = sizes
        self._vectors = vectors  # the store's exact unit vectors by id, read under `lock`
        self._lock = lock  # the store's: every write to the index comes under it
        self._search_lock = threading.Lock()  # faiss must not search cells while they change
        self._label_of: dict[str, int] = {}
        self._id_of: list[str | None] = []
        self._marks = Marks()
        self._free: list[int] = []
        self._retired: list[int] = []  # freed while a build goes on: used again once it ends
        self._live: Cells | None = None
        self._prepared = False  # the points the store held when it opened are registered
        self._building = False
        self._builder: threading.Thread | None = None
        self._stop = threading.Event()
        self._built = threading.Event()

    def __len__(self) -> int:
        return len(self._label_of)

    @property
    def built(self) -> bool:
        return self._live is not None

    # --- kept in step by the store's writes (under its lock) ---------------------------------------

    def put(self, ids: Sequence[str], unit: np.ndarray, payloads: Sequence[dict]) -> None:
        """New or replaced points: each gets a new label (a label stands for one vector)."""
        self._retire([self._label_of[i] for i in ids if i in self._label_of])
        labels = self._new_labels(ids)
        self._marks.set(labels, payloads)
        if self._live is not None:
            with self._search_lock:
                self._live.add(unit, labels)
        self._build_if_due()

    def register(self, ids: Sequence[str], payloads: Sequence[dict]) -> None:
        """Points the store held before it opened (read back by the store); ids put since are newer, kept."""
        fresh = [(i, p) for i, p in zip(ids, payloads) if i not in self._label_of]
        if fresh:
            self._marks.set(self._new_labels([i for i, _ in fresh]), [p for _, p in fresh])

    def drop(self, ids: Sequence[str]) -> None:
        self._retire([self._label_of[i] for i in ids if i in self._label_of])

    def mark(self, ids: Sequence[str], marks: dict) -> None:
        """Payload fields set on existing points (an archive, a supersession, a scope)."""
        self._marks.update(self._labels(ids), marks)

    def _labels(self, ids: Sequence[str]) -> np.ndarray:
        return np.fromiter((self._label_of[i] for i in ids if i in self._label_of), dtype=np.int64)

    def _new_labels(self, ids: Sequence[str]) -> np.ndarray:
        reused = [self._free.pop() for _ in range(min(len(ids), len(self._free)))]
        first = len(self._id_of)
        labels = np.array(reused + list(range(first, first + len(ids) - len(reused))), dtype=np.int64)
        self._marks.grow(first + len(ids) - len(reused))
        self._id_of.extend([None] * (len(ids) - len(reused)))
        for memory_id, label in zip(ids, labels.tolist()):
            self._label_of[memory_id] = label
            self._id_of[label] = memory_id
        self._marks.alive[labels] = True
        return labels

    def _retire(self, labels: list[int]) -> None:
        if not labels:
            return
        retired = np.array(labels, dtype=np.int64)
        self._marks.alive[retired] = False
        for label in labels:
            del self._label_of[self._id_of[label]]
            self._id_of[label] = None
        if self._live is not None:
            with self._search_lock:
                self._live.remove(retired)
        # A build going on may have read the old vector: its label must not stand for another until it ends.
        (self._retired if self._building else self._free).extend(labels)

    # --- search ----------------------------------------------------------------------------------

    def search(self, unit: np.ndarray, limit: int, where: SearchFilter) -> list[tuple[str, float]] | None:
        """The `limit` points most similar to unit vector `unit` that `where` lets through, best first, with their
        exact cosines; None while the cells are not built."""
        live = self._live
        if live is None:
            return None
        with self._lock:
            allowed = self._marks.allowed(where, slice(0, len(self._id_of)))
            alive = len(self._label_of)
        count = int(np.count_nonzero(allowed))
        if count <= self.sizes.exact_below:
            candidates = np.flatnonzero(allowed)
        else:
            candidates = self._probe(live, unit, limit, allowed, alive / count)
        return self._ranked(candidates, unit, limit, where)

    def _probe(self, live: Cells, unit: np.ndarray, limit: int, allowed: np.ndarray, widen: float) -> np.ndarray:
        """The allowed labels faiss finds nearest, RERANK × limit of them. A filter that lets a share of the
        points through searches that many times more cells, so that about as many allowed points are seen."""
        bitmap = np.packbits(allowed, bitorder="little")
        chosen = faiss.IDSelectorBitmap(bitmap.size, faiss.swig_ptr(bitmap))
        params = faiss.SearchParametersIVF(sel=chosen, nprobe=min(live.cells, math.ceil(PROBES * widen)))
        with self._search_lock:
            _, found = live.index.search(unit[None, :], RERANK * limit, params=params)
        return found[0][found[0] >= 0]

    def _ranked(self, labels: np.ndarray, unit: np.ndarray, limit: int, where: SearchFilter):
        """The labels ranked by exact cosine from the store's vectors. Checked against the filter again: a label
        freed and given to another point since the bitmap was made would otherwise slip through."""
        with self._lock:
            labels = labels[self._marks.allowed(where, labels)]
            found, vectors = self._vectors([self._id_of[label] for label in labels.tolist()])
        similarities = vectors @ unit
        best = np.argsort(-similarities, kind="stable")[:limit]
        return [(found[i], float(similarities[i])) for i in best.tolist()]

    # --- building --------------------------------------------------------------------------------

    def start(self, prepare: Callable[[threading.Event], None]) -> None:
        """In a background thread: `prepare` (the store registers the points it held when it opened, stopping
        when the event is set), then the cells if the store is large enough."""
        self._builder = threading.Thread(target=self._prepare_and_build, args=(prepare,), name="vector-index",
                                         daemon=True)
        self._builder.start()

    def stop(self) -> None:
        """Stop a build (after the faiss step in progress) and wait for it."""
        self._stop.set()
        builder = self._builder
        if builder is not None and builder is not threading.current_thread():
            builder.join()

    def wait_built(self, timeout: float | None = None) -> bool:
        return self._built.wait(timeout)

    def _prepare_and_build(self, prepare: Callable[[threading.Event], None]) -> None:
        try:
            prepare(self._stop)
        except Exception:  # the exact search goes on serving; the log says why
            log.exception("vector index not prepared")
            return
        with self._lock:
            self._prepared = not self._stop.is_set()
            due = self._due()
            self._building = due
        if due:
            self._build_logged()

    def _due(self) -> bool:
        if not self._prepared or self._stop.is_set() or self._building:
            return False
        if self._live is None:
            return len(self._label_of) >= max(1, self.sizes.build_from)
        return len(self._label_of) >= REBUILD_GROWTH * self._live.built_for

    def _build_if_due(self) -> None:
        if self._due():
            self._building = True
            self._builder = threading.Thread(target=self._build_logged, name="vector-index", daemon=True)
            self._builder.start()

    def _build_logged(self) -> None:
        try:
            self._build()
        except Exception:  # a failed build leaves the exact search serving; the log says why
            log.exception("vector index not built")
        finally:
            with self._lock:
                self._building = False
                self._free.extend(self._retired)  # in no cells now: removed from the live ones when retired
                self._retired = []

    def _build(self) -> None:
        """Train cells on a sample, add every point a chunk at a time (the store's lock held only to read each
        chunk), then, under the lock, add what came meanwhile, remove what went, and publish."""
        with self._lock:
            labels = np.flatnonzero(self._marks.alive[:len(self._id_of)])
        wanted = max(1, int(CELLS_PER_ROOT * math.sqrt(labels.size)))
        sample = np.random.default_rng(labels.size).choice(labels, min(labels.size, TRAINING_PER_CELL * wanted),
                                                           replace=False)
        cells = Cells(self._read(np.sort(sample))[1], labels.size)
        for start in range(0, labels.size, ADD_CHUNK):
            if self._stop.is_set():
                return
            added, vectors = self._read(labels[start:start + ADD_CHUNK])
            cells.add(vectors, added)
        with self._lock:
            alive = np.flatnonzero(self._marks.alive[:len(self._id_of)])
            added, vectors = self._read(alive[~cells.holds(alive)])
            cells.add(vectors, added)
            cells.remove(np.array(self._retired, dtype=np.int64))
            with self._search_lock:
                previous, self._live = self._live, cells
            self._built.set()
        log.info("vector index built points=%d cells=%d (before: %s)", labels.size, cells.cells,
                 previous.built_for if previous else None)

    def _read(self, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The labels among these still alive and their vectors (read together under the store's lock)."""
        with self._lock:
            alive = labels[self._marks.alive[labels]]
            found, vectors = self._vectors([self._id_of[label] for label in alive.tolist()])
        if len(found) != alive.size:
            raise RuntimeError("the store's vectors and the index's labels drifted")
        return alive, vectors
