"""An approximate nearest-neighbour index over the embedded store's vectors (faiss), filtered by payload marks.

Qdrant Edge answers a search exactly: 165 ms at a million points (bench/recall_bench.py), and its own HNSW build
holds the GIL for the whole build. This index holds a 4-bit product-quantised code of each vector (96 bytes at
384 dimensions; faiss's fast scan reads all of them in ~11 ms at a million, and releases the GIL while it
trains, adds and searches), built in a background thread; its 1,000 best candidates are ranked again exactly
from the store's in-memory vectors. A scan of every code, not an inverted file: cells miss the neighbours of a
query that lies between topics (an inverted file of 8-bit codes probing 64 of 1,000 cells found 0.89 of the
exact ten near stored points and 0.38 for random directions; this finds 0.999 and 0.997). Each memory has an
int64 label: a new one for every new vector, so that a label always stands for one vector, and labels freed by
a delete or a replacement are used again only while no build is going on (a build may still add the old vector
under the old label).

The marks a recall filters on (state, superseded, scope, type) are kept in numpy arrays by label; the codes
propose candidates regardless, the marks keep the allowed ones, and a filter that lets few through asks for
more candidates, or is answered exactly over those few. The store changes the marks and the vectors under its
lock (held only for the in-memory part of a write); a search takes it only to read the marks and the vectors it
ranks, and shares the index's own lock with other searches while faiss searches (adding codes has it alone).
"""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import faiss
import numpy as np

from ..heap import keep_out_of_collections
from .vectors import SearchFilter

log = logging.getLogger(__name__)

# Below this many points the store's exact search is fast enough (Edge measured 3 ms at 30k, 15 ms at 100k).
BUILD_FROM = 20000
TRAINING = 32768  # points the codes are trained on (16 centroids a subspace need few)
# Candidates the codes propose, ranked again exactly from the store's vectors (measured at a million points:
# 1,000 keep recall@10 >= 0.997 even for random directions, whose ten nearest are near-ties; ~11 ms a search).
CANDIDATES = 1000
RERANK = 2  # at least this × the limit asked for
MAX_CANDIDATES = 50000  # more than this (a filter letting few through): the allowed points are ranked exactly
# A filter that lets this few points through is answered exactly over them (a small scope): gathering their
# float vectors costs ~1.5 µs a point, so 2,000 cost ~3 ms, less than a scan of every code.
EXACT_BELOW = 2000
REBUILD_GROWTH = 4.0  # trained again once the store holds this × the points the codes were trained for
REBUILD_STALE = 0.25  # ... or once this share of the codes belongs to points deleted or replaced since
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

    def __len__(self) -> int:
        return len(self._code)

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
        for name in ("scope", "type"):
            codes = self.codes[name]
            getattr(self, name)[labels] = [codes.of(p.get(name)) for p in payloads]
        # A point AutoMem wrote has no state: `archived: true` stands for it, as in the stores' filters.
        states = self.codes["state"]
        self.state[labels] = [states.of("archived" if p.get("state") is None and p.get("archived") is True
                                        else p.get("state")) for p in payloads]
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
            allowed &= self._among("scope", at, [where.scope])
        if where.types is not None:
            allowed &= self._among("type", at, where.types)
        if where.without_states:
            allowed &= ~self._among("state", at, where.without_states)
        if where.without_types:
            allowed &= ~self._among("type", at, where.without_types)
        if where.without_superseded:
            allowed &= ~self.superseded[at]
        return allowed


    def _among(self, name: str, at, values: Sequence[str]) -> np.ndarray:
        """Whether each label's `name` code is one of `values`' codes: a table by code, read at every label (a
        million labels in ~2 ms, a third of np.isin's time)."""
        codes = getattr(self, name)[at]
        table = np.zeros(len(self.codes[name]) + 1, dtype=bool)
        table[self.codes[name].known(values)] = True
        return table[codes]


class Cells:
    """One trained faiss index of 4-bit product-quantised codes (fast scan: every point's code read at each
    search, in SIMD registers) and which labels it holds."""

    def __init__(self, sample: np.ndarray, points: int):
        dimension = sample.shape[1]
        quantizer = faiss.IndexPQFastScan(dimension, _subspaces(dimension), 4, faiss.METRIC_INNER_PRODUCT)
        self.index = faiss.IndexIDMap(quantizer)
        self.index.train(np.ascontiguousarray(sample, dtype=np.float32))
        self.built_for = points
        self.held = np.zeros(0, dtype=bool)
        self.stale = 0  # codes of labels removed since the build

    @property
    def size(self) -> int:
        return int(self.index.ntotal)

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
        """Forget the labels it holds among these. Their codes stay in faiss until the next build: removing a code
        compacts every code after it (~0.1 s at a million, with searches waiting), while a stale code only
        proposes a candidate the marks or the exact ranking then turn down."""
        held = labels[self.holds(labels)]
        self.held[held] = False
        self.stale += int(held.size)

    def nearest(self, unit: np.ndarray, count: int) -> np.ndarray:
        """The labels of the `count` codes nearest `unit` (any label, allowed or not). On the calling thread
        alone (OpenMP's thread count is per thread): one query gains nothing from a second core (11.4 against
        ~10 ms at a million) and would wait at each barrier for a core a run keeps busy."""
        faiss.omp_set_num_threads(1)
        _, found = self.index.search(unit[None, :].astype(np.float32), min(count, max(1, self.size)))
        return found[0][found[0] >= 0]


class SharedLock:
    """Many holders sharing, or one alone; one waiting to be alone lets no new sharer in (writes are not starved).
    Searches of the cells share it: faiss searches concurrently but must not search while codes are added. With
    one plain lock every search waited for the one before it: a request stalled elsewhere (a graph read behind a
    run's write) queued the next ones behind it, 20-60 ms each, during a full run at a million."""

    def __init__(self):
        self._changed = threading.Condition()
        self._sharing = 0
        self._alone = False
        self._waiting_alone = 0

    @contextmanager
    def shared(self) -> Iterator[None]:
        with self._changed:
            while self._alone or self._waiting_alone:
                self._changed.wait()
            self._sharing += 1
        try:
            yield
        finally:
            with self._changed:
                self._sharing -= 1
                self._changed.notify_all()

    @contextmanager
    def alone(self) -> Iterator[None]:
        with self._changed:
            self._waiting_alone += 1
            while self._alone or self._sharing:
                self._changed.wait()
            self._waiting_alone -= 1
            self._alone = True
        try:
            yield
        finally:
            with self._changed:
                self._alone = False
                self._changed.notify_all()


def _subspaces(dimension: int) -> int:
    """Two dimensions a code of 4 bits (384 -> 192 codes, 96 bytes a point): measured at a million points, 1,000
    candidates re-ranked exactly keep recall@10 at 0.999 for queries near stored points and 0.997 for random
    directions (one code per 4 dimensions: 0.96 / 0.74)."""
    return dimension // 2 if dimension % 2 == 0 else dimension


class VectorIndex:
    """Labels, marks and the faiss cells for the store's vectors; `search` answers None until the cells are built
    (the store's exact search answers meanwhile)."""

    def __init__(self, vectors: VectorReader, lock: threading.RLock, sizes: IndexSizes = IndexSizes()):
        self.sizes = sizes
        self._vectors = vectors  # the store's exact unit vectors by id, read under `lock`
        self._lock = lock  # the store's: every write to the index comes under it
        self._search_lock = SharedLock()  # searches share the cells; a change to them has them alone
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
        # The last filter searched with what it let through: (filter, allowed, count); None once a write changes
        # the marks or the labels.
        self._allowed_for: tuple[SearchFilter, np.ndarray, int] | None = None

    def __len__(self) -> int:
        return len(self._label_of)

    @property
    def built(self) -> bool:
        return self._live is not None

    # --- kept in step by the store's writes (under its lock) ---------------------------------------

    def put(self, ids: Sequence[str], unit: np.ndarray, payloads: Sequence[dict]) -> None:
        """New or replaced points: each gets a new label (a label stands for one vector)."""
        self._allowed_for = None
        self._retire([self._label_of[i] for i in ids if i in self._label_of])
        labels = self._new_labels(ids)
        self._marks.set(labels, payloads)
        if self._live is not None:
            with self._search_lock.alone():
                self._live.add(unit, labels)
        self._build_if_due()

    def register(self, ids: Sequence[str], payloads: Sequence[dict]) -> None:
        """Points the store held before it opened (read back by the store); ids put since are newer, kept."""
        fresh = [(i, p) for i, p in zip(ids, payloads) if i not in self._label_of]
        self._allowed_for = None
        if fresh:
            self._marks.set(self._new_labels([i for i, _ in fresh]), [p for _, p in fresh])

    def drop(self, ids: Sequence[str]) -> None:
        self._allowed_for = None
        self._retire([self._label_of[i] for i in ids if i in self._label_of])
        self._build_if_due()

    def mark(self, ids: Sequence[str], marks: dict) -> None:
        """Payload fields set on existing points (an archive, a supersession, a scope)."""
        self._allowed_for = None
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
            with self._search_lock.alone():
                self._live.remove(retired)
        # A build going on may have read the old vector: its label must not stand for another until it ends.
        (self._retired if self._building else self._free).extend(labels)

    # --- search ----------------------------------------------------------------------------------

    def search(self, unit: np.ndarray, limit: int, where: SearchFilter) -> list[tuple[str, float]] | None:
        """The `limit` points most similar to unit vector `unit` that `where` lets through, best first, with their
        exact cosines; None while the codes are not built."""
        live = self._live
        if live is None:
            return None
        allowed, count = self._allowed(where)
        # A filter letting a share of the points through asks for that many times more candidates, so that about
        # as many allowed ones come back; past MAX_CANDIDATES the allowed points are ranked exactly instead.
        wanted = math.ceil(max(CANDIDATES, RERANK * limit) * max(1, live.size) / max(1, count))
        if count <= self.sizes.exact_below or wanted > MAX_CANDIDATES:
            candidates = np.flatnonzero(allowed)
        else:
            with self._search_lock.shared():
                found = live.nearest(unit, wanted)
            # A label given out after `allowed` was read (a write in between) is left for the next search.
            inside = found[found < allowed.size]
            candidates = np.unique(inside[allowed[inside]])
        return self._ranked(candidates, unit, limit, where)

    def _allowed(self, where: SearchFilter) -> tuple[np.ndarray, int]:
        """Which labels `where` lets through, and how many: computed once while no write changes the marks
        (every label read: ~5 ms at a million, as much as a third of a search)."""
        with self._lock:
            cached = self._allowed_for
            if cached is not None and cached[0] == where:
                return cached[1], cached[2]
            allowed = self._marks.allowed(where, slice(0, len(self._id_of)))
            count = int(np.count_nonzero(allowed))
            self._allowed_for = (where, allowed, count)
            return allowed, count

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

    def coming(self, points: int) -> bool:
        """Whether codes are being prepared for a store of `points` and not yet published: a search is better
        off waiting for them (~8 s at a million) than queueing behind the store's exact search, which at a
        million takes 165 ms and holds the store's lock the preparation needs (under 20 requests a second the
        build took 570 s, the requests 200 s)."""
        return self._live is None and not self._stop.is_set() and points >= self.sizes.build_from and \
            (not self._prepared or self._building)

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
        return len(self._label_of) >= REBUILD_GROWTH * self._live.built_for or \
            self._live.stale > REBUILD_STALE * max(1, self._live.size)

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
        sample = np.random.default_rng(labels.size).choice(labels, min(labels.size, TRAINING), replace=False)
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
            with self._search_lock.alone():
                previous, self._live = self._live, cells
            self._built.set()
        log.info("vector index built points=%d codes=%d (before: %s)", labels.size, cells.size,
                 previous.built_for if previous else None)
        # The labels and the store's copy are the process's largest containers, and all there is to them now.
        keep_out_of_collections()

    def _read(self, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The labels among these still alive and their vectors (read together under the store's lock)."""
        with self._lock:
            alive = labels[self._marks.alive[labels]]
            found, vectors = self._vectors([self._id_of[label] for label in alive.tolist()])
        if len(found) != alive.size:
            raise RuntimeError("the store's vectors and the index's labels drifted")
        return alive, vectors
