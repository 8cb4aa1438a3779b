"""The similarity graph of one graph's memories, kept between runs: a later run re-searches only what changed."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import cache
from itertools import repeat

import numpy as np

from .scopes import scope_codes
from .settings import Settings
from .similarity import INDEX, UNION_CHUNK, Cells, Pairs, Partition, pairs_against, pairs_of_changed, \
    similar_pairs_and_cells, similar_pairs_within

# Changed vectors are re-searched while, since the graph was last built whole, they are at most this share of
# the memories; past it the graph is built again, since cells trained on older vectors fit new ones less well.
REBUILD_SHARE = 0.1
# Memories left out of the graph whose pairs are kept (as a share of those in it), the most recent first.
DEPARTED_SHARE = 0.1
FINGERPRINT_ROWS = 8192  # rows hashed at once (the hash works on 8-byte integers: bounds its memory)


@dataclass(frozen=True)
class _Left:
    """A memory an update of the graph left out (archived, merged or deleted), with the pairs it had then."""

    fingerprint: int  # of its vector and scope, as the graph held them
    others: list[str]  # the other ends of its pairs, by id
    similarities: np.ndarray

    def at_least(self, threshold: float) -> tuple[list[str], np.ndarray]:
        keep = self.similarities >= threshold
        return [other for other, kept in zip(self.others, keep.tolist()) if kept], self.similarities[keep]


@dataclass(frozen=True)
class _Built:
    """A graph as built: over which memories (their vectors' and scopes' fingerprints), at which threshold."""

    threshold: float
    names: list[str]  # the memories' ids, by position
    position: dict[str, int]
    fingerprints: np.ndarray
    pairs: Pairs
    cells: Cells | None  # the cells, when one scope was searched by cells; None when searched exactly
    changed_since_built: int
    scoped: bool  # built with scope keys (they are part of the fingerprints)
    build: int  # which build of this process's graph (an update keeps the number; a rebuild takes the next)
    # The memories updates left out since the graph was built, by id: an incremental dedup finds the group a
    # removed memory was in through its pairs (an exact search of its vector costs 5 ms at a million memories).
    departed: dict[str, _Left] = field(default_factory=dict)


class NeighbourGraph:
    """Pairs of memories with cosine >= a threshold, computed at the lowest threshold any task uses and kept.

    A task asking for memories whose vectors (and scopes) are those the graph was built over, at a threshold
    at least as high, gets its pairs from the copy: the cluster task after dedup in one run, or a task in a
    later run when nothing changed. When some changed (a fingerprint of each vector and scope tells), only
    their pairs are searched again, in the cells the graph was built with; the rest are kept.
    """

    def __init__(self, settings: Settings):
        self.settings = settings
        self._lock = threading.Lock()
        self._built: _Built | None = None
        self._builds = 0
        self._settled: dict[str, tuple[int, int]] = {}  # task -> (change number, build)

    def pairs(self, ids: Sequence[str], unit: np.ndarray, threshold: float,
              progress: Callable[[int, int], None], scope_keys: Sequence[str] | None = None) -> Pairs:
        """Pairs i < j (indexes into `ids`) with cosine >= threshold, within one scope (`scope_keys`: a key per
        memory; None: all one scope)."""
        with self._lock:
            prints = fingerprints(unit, scope_keys)
            built = self._built
            if built is None or threshold < built.threshold:
                self._built = self._build(ids, unit, prints, scope_keys, progress, threshold)
            else:
                old = _positions(built, ids, missing=-1)
                changed = _changed(built, old, prints)
                # Memories that left are let go too: a graph still holding them costs every later call a
                # million lookups and a renumbering at 1M (once, it costs one renumbering), and an incremental
                # dedup finds their pairs among the departed.
                if changed.size or len(ids) < len(built.names):
                    self._built = self._update(built, ids, old, unit, prints, scope_keys, changed, progress)
            return _subset(self._built, ids, threshold)

    def former_pairs(self, memory_ids: Sequence[str], unit: np.ndarray, scope_keys: Sequence[str] | None,
                     threshold: float) -> dict[str, tuple[list[str], np.ndarray]]:
        """For memories that left the store (their ids, unit vectors and scope keys): the memories the kept graph
        paired them with at `threshold` or above, by id, with the similarities. Only those it holds with that
        vector and scope are answered (still, when no update has left them out yet, or among those updates let
        go); the others must be searched."""
        with self._lock:
            built = self._built
        if built is None or threshold < built.threshold or not len(memory_ids):
            return {}
        prints = fingerprints(unit, scope_keys if built.scoped else None)
        answered: dict[str, _Left] = {}
        held: dict[int, str] = {}  # still in the graph with that vector: position -> id
        for memory_id, fingerprint in zip(memory_ids, prints.tolist()):
            position, left = built.position.get(memory_id), built.departed.get(memory_id)
            if position is not None and int(built.fingerprints[position]) == fingerprint:
                held[position] = memory_id
            elif position is None and left is not None and left.fingerprint == fingerprint:
                answered[memory_id] = left
        if held:
            found = _pairs_of(built, np.array(list(held), dtype=np.int64))
            answered.update((held[position], left) for position, left in found.items())
        return {memory_id: left.at_least(threshold) for memory_id, left in answered.items()}

    def settle(self, task: str, change: int) -> None:
        """Note that `task` stored what it computed from the graph as it is now, at change number `change`."""
        with self._lock:
            if self._built is not None:
                self._settled[task] = (change, self._built.build)

    def settled(self, task: str) -> int | None:
        """The change number at which `task` last stored what it computed from this graph, if the graph was not
        built again since (a new build may pair the unchanged memories otherwise); None if it never did."""
        with self._lock:
            change, build = self._settled.get(task, (None, None))
            return change if self._built is not None and build == self._built.build else None

    def kept_size(self, threshold: float) -> int:
        """How many memories the kept graph covers, if it can give pairs at `threshold` (else 0): a task then
        searches only the vectors that changed since (or, past the rebuild share, builds it again: still
        cheaper than searching that many exactly)."""
        with self._lock:
            built = self._built
        return len(built.position) if built is not None and threshold >= built.threshold else 0

    def _build(self, ids, unit, prints, scope_keys, progress, threshold: float) -> _Built:
        settings = self.settings
        lowest = min(threshold, settings.consolidation_cluster_similarity,
                     settings.consolidation_dedup_similarity)
        codes = _codes(scope_keys)
        one_scope = _one_scope(codes)
        cells = None
        if one_scope and unit.shape[0] > settings.consolidation_cluster_exact_limit:
            pairs, cells = similar_pairs_and_cells(unit, lowest, settings.consolidation_cluster_probe_cells,
                                                   progress=progress)
        else:
            pairs = similar_pairs_within(unit, None if one_scope else codes, lowest,
                                         settings.consolidation_cluster_exact_limit,
                                         settings.consolidation_cluster_probe_cells, progress=progress)
        self._builds += 1
        return _Built(lowest, list(ids), dict(zip(ids, range(len(ids)))), prints, pairs, cells,
                      0, scope_keys is not None, self._builds)

    def _update(self, built: _Built, ids, old: np.ndarray, unit, prints, scope_keys, changed: np.ndarray,
                progress) -> _Built:
        """The graph over `ids` (`old`: their positions in the built one, -1 for new): the built pairs between
        unchanged memories, and the changed ones searched."""
        codes = _codes(scope_keys)
        departed = _departures(built, old)
        if self._must_rebuild(built, changed.size, len(ids), codes):
            return replace(self._build(ids, unit, prints, scope_keys, progress, built.threshold), departed=departed)
        unchanged = np.ones(len(ids), dtype=bool)
        unchanged[changed] = False
        cells = built.cells
        if cells is not None:
            nearest = np.zeros((len(ids), cells.nearest.shape[1]), dtype=INDEX)
            nearest[unchanged] = cells.nearest[old[unchanged]]
            found, cells = pairs_of_changed(unit, changed, cells._replace(nearest=nearest), built.threshold)
        else:
            found = _exact_pairs_of_changed(unit, changed, codes, built.threshold)
        renumber = np.full(len(built.position), -1, dtype=INDEX)
        renumber[old[unchanged]] = np.flatnonzero(unchanged)
        position = dict(zip(ids, range(len(ids))))
        return _Built(built.threshold, list(ids), position, prints, _renumbered(built.pairs, renumber, then=found),
                      cells, built.changed_since_built + changed.size, built.scoped, built.build, departed)

    def _must_rebuild(self, built: _Built, changed: int, memories: int, codes: np.ndarray | None) -> bool:
        """Past the rebuild share; or the scopes are now searched another way: one scope's cells cannot serve
        several scopes, and an exact graph is not kept up to date once a scope among several is searched by
        cells (exact searches of its changes would cost as much as a build)."""
        if built.changed_since_built + changed > REBUILD_SHARE * memories:
            return True
        if _one_scope(codes):
            return False
        return built.cells is not None or \
            int(np.bincount(codes).max()) > self.settings.consolidation_cluster_exact_limit


def _departures(built: _Built, old: np.ndarray) -> dict[str, _Left]:
    """The memories left out of the graph so far, those this update leaves out (`old`: the positions it keeps)
    added; the oldest are forgotten past DEPARTED_SHARE of the memories (a removed memory the graph no longer
    knows is searched exactly)."""
    gone = np.ones(len(built.position), dtype=bool)
    gone[old[old >= 0]] = False
    departed = dict(built.departed)
    leaving = np.flatnonzero(gone)
    for position, left in _pairs_of(built, leaving).items():
        departed.pop(built.names[position], None)  # a memory that left again: its latest pairs, as the newest
        departed[built.names[position]] = left
    for memory_id in list(departed)[: max(0, len(departed) - int(DEPARTED_SHARE * max(1, old.size)))]:
        del departed[memory_id]
    return departed


def _pairs_of(built: _Built, positions: np.ndarray) -> dict[int, _Left]:
    """The built pairs of these positions (one pass over every pair), seen from each of them."""
    if not positions.size:
        return {}
    wanted = np.zeros(len(built.position), dtype=bool)
    wanted[positions] = True
    pairs = built.pairs
    # Started empty, of the pairs' own types: a graph with no pair yet has no chunk to add.
    ends, others, similarities = [pairs.rows[:0]], [pairs.cols[:0]], [pairs.similarities[:0]]
    for start in range(0, pairs.rows.size, UNION_CHUNK):
        rows, cols = pairs.rows[start:start + UNION_CHUNK], pairs.cols[start:start + UNION_CHUNK]
        similarity = pairs.similarities[start:start + UNION_CHUNK]
        for mine, theirs in ((rows, cols), (cols, rows)):
            hit = wanted[mine]
            ends.append(mine[hit])
            others.append(theirs[hit])
            similarities.append(similarity[hit])
    end, other, similarity = (np.concatenate(column) for column in (ends, others, similarities))
    order = np.argsort(end, kind="stable")
    end, other, similarity = end[order], other[order], similarity[order]
    bounds = np.searchsorted(end, positions, side="left"), np.searchsorted(end, positions, side="right")
    return {int(p): _Left(int(built.fingerprints[p]), [built.names[o] for o in other[low:high].tolist()],
                          similarity[low:high])
            for p, low, high in zip(positions.tolist(), *(b.tolist() for b in bounds))}


def fingerprints(unit: np.ndarray, scope_keys: Sequence[str] | None) -> np.ndarray:
    """A 64-bit hash of each vector's exact bits and its scope: equal when neither changed."""
    bits = np.ascontiguousarray(unit, dtype=np.float32).view(np.uint32)
    if bits.shape[1] % 2 == 0:
        bits = bits.view(np.uint64)  # two components a word: half the multiplications
    weights = _hash_weights(bits.shape[1])
    prints = np.empty(bits.shape[0], dtype=np.uint64)

    def hash_rows(start: int) -> None:
        prints[start:start + FINGERPRINT_ROWS] = (bits[start:start + FINGERPRINT_ROWS] * weights).sum(axis=1)

    with ThreadPoolExecutor(max_workers=2, thread_name_prefix="fingerprints") as pool:  # numpy lets go of the GIL
        list(pool.map(hash_rows, range(0, bits.shape[0], FINGERPRINT_ROWS)))
    if scope_keys is not None:
        prints ^= np.fromiter((hash(key) & 0xFFFFFFFFFFFFFFFF for key in scope_keys), np.uint64,
                              count=len(scope_keys))
    return prints


@cache
def _hash_weights(size: int) -> np.ndarray:
    """Fixed odd 64-bit weights, one per vector component."""
    return np.random.default_rng(7).integers(1, 2**63, size=size, dtype=np.uint64) | np.uint64(1)


def _changed(built: _Built, old: np.ndarray, prints: np.ndarray) -> np.ndarray:
    """Positions of memories the graph was not built over (`old` -1), or whose vector or scope changed since."""
    known = old >= 0
    same = np.zeros(old.size, dtype=bool)
    same[known] = built.fingerprints[old[known]] == prints[known]
    return np.flatnonzero(~same)


def _exact_pairs_of_changed(unit: np.ndarray, changed: np.ndarray, codes: np.ndarray | None,
                            threshold: float) -> Pairs:
    """The pairs touching the changed vectors, each compared with every vector of its scope."""
    groups = None if codes is None else Partition(unit, codes)
    found = pairs_against(unit[changed], unit, threshold, None if codes is None else codes[changed], groups)
    return Pairs.distinct_pairs(changed[found.rows].astype(INDEX), found.cols, found.similarities, unit.shape[0])


def _codes(scope_keys: Sequence[str] | None) -> np.ndarray | None:
    return scope_codes(list(scope_keys)) if scope_keys is not None else None


def _one_scope(codes: np.ndarray | None) -> bool:
    return codes is None or codes.size == 0 or bool(np.all(codes == codes[0]))


def _subset(built: _Built, ids: Sequence[str], threshold: float) -> Pairs:
    """The built pairs among `ids` above `threshold`, renumbered to positions in `ids`."""
    if threshold <= built.threshold and _in_built_order(built, ids):
        return Pairs(*(_read_only(column) for column in built.pairs))  # what was built, as it was built
    renumber = np.full(len(built.position), -1, dtype=INDEX)
    renumber[_positions(built, ids)] = np.arange(len(ids), dtype=INDEX)
    return _renumbered(built.pairs, renumber, threshold if threshold > built.threshold else None)


def _positions(built: _Built, ids: Sequence[str], missing: int | None = None) -> np.ndarray:
    """Where each of `ids` is in the built graph (`missing` for one it does not hold; None: it holds them all).
    Asked for the memories it was built over, in that order (the cluster task after dedup), no lookups."""
    if _in_built_order(built, ids):
        return np.arange(len(ids), dtype=np.int64)
    if missing is None:
        return np.fromiter(map(built.position.__getitem__, ids), dtype=np.int64, count=len(ids))
    return np.fromiter(map(built.position.get, ids, repeat(missing, len(ids))), dtype=np.int64, count=len(ids))


def _in_built_order(built: _Built, ids: Sequence[str]) -> bool:
    """`ids` are the memories the graph holds, in its order."""
    return len(ids) == len(built.names) and list(ids) == built.names


def _renumbered(pairs: Pairs, renumber: np.ndarray, threshold: float | None = None,
                then: Pairs | None = None) -> Pairs:
    """The pairs both of whose ends `renumber` maps (to >= 0), renumbered and as i < j, at or above `threshold`
    if one is given, followed by `then`. A chunk at a time into arrays sized for all: at a million memories a
    graph holds over 20M pairs, and whole-array steps took a gigabyte of temporaries. (The part of those arrays
    left unfilled is never touched, so it takes no memory.) Each half of the pairs is done on its own thread
    (numpy lets go of the GIL): at a million memories that halves 1 s, spent on every update of the graph."""
    extra = then.rows.size if then is not None else 0
    total = pairs.rows.size
    out = Pairs(np.empty(total + extra, INDEX), np.empty(total + extra, INDEX),
                np.empty(total + extra, pairs.similarities.dtype))
    middle = total // 2 // UNION_CHUNK * UNION_CHUNK  # the second half starts on a chunk
    if middle:
        with ThreadPoolExecutor(max_workers=2, thread_name_prefix="renumber") as pool:
            first, second = pool.map(lambda bounds: _renumber_range(pairs, renumber, threshold, out, *bounds),
                                     ((0, middle), (middle, total)))
        for start in range(0, second, UNION_CHUNK):  # down to where the first half ends (never past a source)
            size = min(UNION_CHUNK, second - start)
            for column in out:
                column[first + start:first + start + size] = column[middle + start:middle + start + size]
        count = first + second
    else:
        count = _renumber_range(pairs, renumber, threshold, out, 0, total)
    if extra:
        for column, added in zip(out, then):
            column[count:count + extra] = added
        count += extra
    return Pairs(*(column[:count] for column in out))


def _renumber_range(pairs: Pairs, renumber: np.ndarray, threshold: float | None, out: Pairs, start: int,
                    end: int) -> int:
    """_renumbered() for pairs [start, end), written into `out` from `start` on; returns how many it kept."""
    count = start
    for chunk in range(start, end, UNION_CHUNK):
        part = slice(chunk, min(end, chunk + UNION_CHUNK))
        first, second = renumber[pairs.rows[part]], renumber[pairs.cols[part]]
        keep = (first >= 0) & (second >= 0)
        if threshold is not None:
            keep &= pairs.similarities[part] >= threshold
        first, second = first[keep], second[keep]
        kept = count + first.size
        np.minimum(first, second, out=out.rows[count:kept])
        np.maximum(first, second, out=out.cols[count:kept])
        out.similarities[count:kept] = pairs.similarities[part][keep]
        count = kept
    return count - start


def _read_only(array: np.ndarray) -> np.ndarray:
    view = array.view()
    view.flags.writeable = False
    return view
