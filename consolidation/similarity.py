"""The similarity graph of memory vectors (pairs with cosine >= threshold) and its connected components."""

from __future__ import annotations

from typing import NamedTuple

import faiss
import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

# Bytes of similarity scores computed at once: bounds memory whatever the number of vectors.
BLOCK_BYTES = 64 * 1024 * 1024
POINTS_PER_CELL = 200
TRAINING_POINTS_PER_CELL = 39  # the fewest faiss accepts without warning
KMEANS_ITERATIONS = 6
# Besides its own cell, each point is also compared with this many next-nearest cells (when its cell was not).
POINT_PROBES = 4
# Above this many coarse cells (the square root of the cells), cells are found in two levels; and each vector is
# compared with the cells of this many nearest coarse cells (its own first).
MIN_COARSE_CELLS = 32
COARSE_PROBES = 12


# Pairs looked up at once by Pairs.union (bounds its temporary arrays).
UNION_CHUNK = 1 << 20
# Positions of vectors in pair arrays: 4 bytes each, since millions of pairs are held at once.
INDEX = np.int32


class Pairs(NamedTuple):
    """Similar pairs i < j as parallel arrays (of INDEX), with each pair's cosine."""

    rows: np.ndarray
    cols: np.ndarray
    similarities: np.ndarray

    @classmethod
    def empty(cls) -> Pairs:
        return cls(np.zeros(0, INDEX), np.zeros(0, INDEX), np.zeros(0, np.float32))

    @classmethod
    def joined(cls, parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]]) -> Pairs:
        if not parts:
            return cls.empty()
        return cls(*(np.concatenate(column) for column in zip(*parts)))

    @classmethod
    def distinct_pairs(cls, first: np.ndarray, second: np.ndarray, similarities: np.ndarray, n: int) -> Pairs:
        """Pairs found in either order, possibly more than once and possibly of a vector with itself: each pair
        of two vectors (over n) once, as i < j."""
        distinct = first != second
        found = cls(np.minimum(first, second)[distinct], np.maximum(first, second)[distinct], similarities[distinct])
        return found.deduplicated(n)

    def union(self, other: Pairs, n: int) -> Pairs:
        """These pairs (each once, as a neighbour graph holds them) and those of the other's not among them, after
        them (both i < j over n points). Only the other's are sorted: each of these is looked up among them, a
        chunk at a time, since sorting millions of pairs cost seconds and a gigabyte at a million memories."""
        theirs = other.deduplicated(n)
        if theirs.rows.size == 0:
            return self
        keys = theirs.rows.astype(np.int64) * n + theirs.cols
        held = np.zeros(keys.size, dtype=bool)
        for start in range(0, self.rows.size, UNION_CHUNK):
            mine = self.rows[start:start + UNION_CHUNK].astype(np.int64) * n + self.cols[start:start + UNION_CHUNK]
            at = np.minimum(np.searchsorted(keys, mine), keys.size - 1)
            held[at[keys[at] == mine]] = True
        fresh = ~held
        return Pairs.joined([self, Pairs(theirs.rows[fresh], theirs.cols[fresh], theirs.similarities[fresh])])

    def first(self, count: int, n: int) -> Pairs:
        """The `count` pairs of the lowest (i, j), in that order (a report's sample, whatever order these are in)."""
        if self.rows.size > count:
            # The first `count` pairs all lie in rows up to the count-th lowest row: only those are ordered (the
            # (i, j) key of every pair and its partition took ~370 MB at 23M pairs).
            lowest = np.partition(self.rows, count - 1)[count - 1] if count > 0 else -1
            within = np.flatnonzero(self.rows <= lowest)
        else:
            within = np.arange(self.rows.size)
        keys = self.rows[within].astype(np.int64) * n + self.cols[within]
        chosen = within[np.argsort(keys, kind="stable")[:count]]
        return Pairs(self.rows[chosen], self.cols[chosen], self.similarities[chosen])

    def deduplicated(self, n: int) -> Pairs:
        """Each pair (i < j over n points) once."""
        _, unique = np.unique(self.rows.astype(np.int64) * n + self.cols, return_index=True)
        return Pairs(self.rows[unique], self.cols[unique], self.similarities[unique])


def _no_progress(done: int, total: int) -> None:
    return None


def normalized(matrix: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (zero rows stay zero), as float32; rows already unit are not copied."""
    matrix = np.asarray(matrix, dtype=np.float32)
    norms = np.sqrt(np.einsum("ij,ij->i", matrix, matrix))[:, None]
    if np.all(np.abs(norms - 1.0) < 1e-4):
        return matrix
    return matrix / np.where(norms == 0, 1.0, norms)


def similar_pairs(unit: np.ndarray, threshold: float, exact_limit: int, probe_cells: int,
                  seed: int = 0, progress=_no_progress) -> Pairs:
    """Pairs i < j with cosine >= threshold: exact up to `exact_limit` vectors, by cells above that.
    `progress(vectors done, vectors)` is called as the comparison goes."""
    if unit.shape[0] <= exact_limit:
        return similar_pairs_exact(unit, threshold, progress)
    return similar_pairs_by_cells(unit, threshold, probe_cells, seed, progress)


def similar_pairs_within(unit: np.ndarray, groups: np.ndarray | None, threshold: float, exact_limit: int,
                         probe_cells: int, progress=_no_progress) -> Pairs:
    """similar_pairs, but only between vectors of one group (a scope). Each group is searched on its own: a
    crowd of close vectors in other groups could otherwise take the places of a group's own neighbours."""
    n = unit.shape[0]
    if groups is None or n == 0 or np.all(groups == groups[0]):
        return similar_pairs(unit, threshold, exact_limit, probe_cells, progress=progress)
    order = np.argsort(groups, kind="stable")
    parts, done = [], 0
    for members in np.split(order, np.flatnonzero(np.diff(groups[order])) + 1):
        progress(done, n)
        done += members.size
        if members.size < 2:
            continue
        found = similar_pairs(unit[members], threshold, exact_limit, probe_cells)
        first, second = members[found.rows], members[found.cols]
        parts.append((np.minimum(first, second).astype(INDEX), np.maximum(first, second).astype(INDEX),
                      found.similarities))
    return Pairs.joined(parts)


class Partition:
    """Vectors sorted by group once, so that each group's vectors are one contiguous block (no copy per search)."""

    def __init__(self, unit: np.ndarray, groups: np.ndarray):
        self.order = np.argsort(groups, kind="stable")
        self.keys = groups[self.order]
        self.sorted = unit[self.order]

    def members(self, group: int) -> tuple[np.ndarray, np.ndarray]:
        """The positions of a group's vectors and the vectors themselves (a view)."""
        low, high = np.searchsorted(self.keys, group), np.searchsorted(self.keys, group, side="right")
        return self.order[low:high], self.sorted[low:high]


def pairs_against(queries: np.ndarray, unit: np.ndarray, threshold: float, query_groups: np.ndarray | None = None,
                  groups: Partition | None = None) -> Pairs:
    """Every pair (k, j) of a query vector k and a vector j of `unit` with cosine >= threshold, within one group
    when the vectors are partitioned: an incremental run's search of what changed against everything, exact, by
    blocked matrix products. Each group's queries meet only that group's vectors, so the work is the sum over
    groups of queries x vectors. `rows` are query numbers and `cols` vector positions (a query that is one of
    the vectors finds itself too: the caller knows which to drop)."""
    if groups is None:
        return _pairs_against(queries, unit, threshold)
    parts = []
    for group in np.unique(query_groups).tolist():
        asking = np.flatnonzero(query_groups == group)
        positions, vectors = groups.members(group)
        if positions.size == 0:
            continue
        found = _pairs_against(queries[asking], vectors, threshold)
        parts.append((asking[found.rows].astype(INDEX), positions[found.cols].astype(INDEX), found.similarities))
    return Pairs.joined(parts)


def _pairs_against(queries: np.ndarray, unit: np.ndarray, threshold: float) -> Pairs:
    n = unit.shape[0]
    block = max(1, BLOCK_BYTES // (4 * max(n, 1)))
    parts = []
    for start in range(0, queries.shape[0], block):
        stop = min(queries.shape[0], start + block)
        scores = queries[start:stop] @ unit.T
        rows, cols = np.nonzero(scores >= threshold)
        parts.append(((rows + start).astype(INDEX), cols.astype(INDEX), scores[rows, cols]))
    return Pairs.joined(parts)


def similar_pairs_exact(unit: np.ndarray, threshold: float, progress=_no_progress) -> Pairs:
    """Every pair i < j with cosine >= threshold, by blocked matrix products over the upper triangle."""
    n = unit.shape[0]
    block = max(64, BLOCK_BYTES // (4 * max(n, 1)))
    parts = []
    for start in range(0, n, block):
        progress(start, n)
        stop = min(n, start + block)
        scores = unit[start:stop] @ unit[start:].T
        # Keep only the strict upper triangle: column index (offset by start) greater than row index.
        scores[np.tril_indices(stop - start, 0, scores.shape[1])] = -np.inf
        block_rows, block_cols = np.nonzero(scores >= threshold)
        parts.append(((block_rows + start).astype(INDEX), (block_cols + start).astype(INDEX),
                      scores[block_rows, block_cols]))
    return Pairs.joined(parts)


class Cells(NamedTuple):
    """The k-means cells a graph was built with, kept to place vectors that change later."""

    centroids: np.ndarray
    nearest: np.ndarray  # each vector's own cell and its POINT_PROBES next-nearest, as INDEX
    partners: list[list[int]]  # each cell and the later-numbered cells it is compared with


def similar_pairs_by_cells(unit: np.ndarray, threshold: float, probe_cells: int, seed: int = 0,
                           progress=_no_progress) -> Pairs:
    """Approximate: split the vectors into k-means cells (faiss; in two levels above about 200k vectors, see
    _cells), then compare each cell exactly, by matrix products, with itself and the `probe_cells` cells whose
    centroids are nearest. Each point belongs to one cell, so each cell pair is compared once and no pair is
    found twice. Recall is measured in bench/.
    """
    return similar_pairs_and_cells(unit, threshold, probe_cells, seed, progress)[0]


def similar_pairs_and_cells(unit: np.ndarray, threshold: float, probe_cells: int, seed: int = 0,
                            progress=_no_progress) -> tuple[Pairs, Cells]:
    """similar_pairs_by_cells, and the cells it used."""
    n = unit.shape[0]
    centroids, nearest = _cells(unit, max(2, n // POINTS_PER_CELL), seed)
    cells = centroids.shape[0]
    members = _members_by_cell(nearest[:, 0], cells)
    partners = _cell_partners(centroids, probe_cells)
    parts = []
    done = 0
    for cell, compared in enumerate(partners):
        progress(done, n)
        done += members[cell].size
        if members[cell].size == 0:
            continue
        others = np.concatenate([members[p] for p in compared])
        parts.extend(_block_pairs(unit, members[cell], others, threshold, diagonal=compared[0] == cell))
    first, second, similarities = Pairs.joined(parts)
    by_cells = Pairs(np.minimum(first, second), np.maximum(first, second), similarities)
    pairs = _with_boundary_pairs(unit, by_cells, nearest, members, partners, threshold)
    return pairs, Cells(centroids, nearest.astype(INDEX), partners)


def pairs_of_changed(unit: np.ndarray, changed: np.ndarray, cells: Cells, threshold: float) -> tuple[Pairs, Cells]:
    """The pairs touching the `changed` vectors (positions in `unit`), found as similar_pairs_and_cells would
    find them with the same cells: a changed vector is placed in its nearest cells, then compared with the cells
    its own cell is compared with, with its next-nearest cells, and with every vector whose next-nearest cells
    hold its own. `cells.nearest` must hold the current positions' cells (any row for a changed vector); the
    returned Cells hold the changed vectors' too. The cost grows with the changed vectors, not with all."""
    nearest = cells.nearest.copy()
    if changed.size == 0:
        return Pairs.empty(), cells._replace(nearest=nearest)
    nearest[changed] = _nearest(unit[changed], cells.centroids, nearest.shape[1])[1]
    count = cells.centroids.shape[0]
    members = _members_by_cell(nearest[:, 0].astype(np.int64), count)
    compared = _compared_cells(cells.partners)
    asked = [(k, cell) for k, home in enumerate(nearest[changed, 0].tolist()) for cell in compared[home]]
    asked += [(k, cell) for k, row in enumerate(nearest[changed, 1:].tolist()) for cell in row if cell >= 0]
    queries, targets = (np.array(column, np.int64) for column in zip(*asked))
    parts = []
    for cell, asking in enumerate(_members_by_cell(targets, count)):
        if asking.size and members[cell].size:
            parts.extend(_block_pairs(unit, changed[queries[asking]], members[cell], threshold, diagonal=False))
    # The other way round: vectors that compare themselves with a changed vector's own cell.
    probed = nearest[:, 1:].ravel().astype(np.int64)
    probing_rows = np.repeat(np.arange(unit.shape[0]), nearest.shape[1] - 1)[probed >= 0]
    probing = _members_by_cell(probed[probed >= 0], count)
    for cell, asking in enumerate(_members_by_cell(nearest[changed, 0].astype(np.int64), count)):
        if asking.size and probing[cell].size:
            parts.extend(_block_pairs(unit, changed[asking], probing_rows[probing[cell]], threshold, diagonal=False))
    return Pairs.distinct_pairs(*Pairs.joined(parts), unit.shape[0]), cells._replace(nearest=nearest)


def _compared_cells(partners: list[list[int]]) -> list[set[int]]:
    """For each cell, every cell the build compared it with (partners are listed on the lower-numbered side)."""
    compared: list[set[int]] = [set() for _ in partners]
    for low, higher in enumerate(partners):
        for high in higher:
            compared[low].add(high)
            compared[high].add(low)
    return compared


def _with_boundary_pairs(unit: np.ndarray, by_cells: Pairs, nearest: np.ndarray, members: list[np.ndarray],
                         partners: list[list[int]], threshold: float) -> Pairs:
    """Add the pairs the cell comparison misses: a point near a cell's border is also compared with the
    members of its next-nearest cells when its own cell was not compared with them. Near-duplicates in
    vectors with no cluster structure (random-looking embeddings) fall on either side of a border as often as
    not, and cell-to-cell probing alone missed about 3 % of pairs at cosine 0.98 in the 100k benchmark."""
    cells = len(members)
    compared = np.array(sorted(low * cells + high for low, p in enumerate(partners) for high in p), np.int64)
    own = nearest[:, 0].astype(np.int64)
    parts = []
    for column in range(1, nearest.shape[1]):
        other = nearest[:, column].astype(np.int64)
        key = np.minimum(own, other) * cells + np.maximum(own, other)
        missing = np.flatnonzero((other >= 0) & ~np.isin(key, compared))
        for cell, queries in enumerate(_members_by_cell(other[missing], cells)):
            if queries.size and members[cell].size:
                parts.extend(_block_pairs(unit, missing[queries], members[cell], threshold, diagonal=False))
    if not parts:
        return by_cells
    first, second, similarities = Pairs.joined(parts)
    # The cells compared here were not compared before, so only a pair found from both of its sides repeats.
    across = Pairs(np.minimum(first, second), np.maximum(first, second), similarities).deduplicated(unit.shape[0])
    return Pairs.joined([by_cells, across])


def _members_by_cell(assignment: np.ndarray, cells: int) -> list[np.ndarray]:
    order = np.argsort(assignment, kind="stable")
    bounds = np.concatenate(([0], np.cumsum(np.bincount(assignment, minlength=cells))))
    return [order[bounds[c] : bounds[c + 1]] for c in range(cells)]


def _cells(unit: np.ndarray, cells: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """About `cells` spherical k-means cells, found in two levels when there are many: coarse cells, each split
    into cells of about POINTS_PER_CELL vectors. Returns the cells' centroids and each vector's 1 + POINT_PROBES
    nearest cells, nearest first. One level compares every vector with every centroid, n x cells, which grows
    with the square of n (at a million vectors 43 s to train and as long to assign); two levels compare a
    vector with the coarse centroids and with the cells of its COARSE_PROBES nearest coarse cells."""
    coarse = int(np.sqrt(cells))
    if coarse < MIN_COARSE_CELLS:
        centroids = _kmeans(unit, cells, seed)
        return centroids, _nearest(unit, centroids, 1 + POINT_PROBES)[1]
    near_coarse = _nearest(unit, _kmeans(unit, coarse, seed), COARSE_PROBES)[1]
    parts = [_kmeans(unit[members], max(1, round(members.size / POINTS_PER_CELL)), seed) if members.size
             else np.zeros((0, unit.shape[1]), np.float32) for members in _members_by_cell(near_coarse[:, 0], coarse)]
    firsts = np.concatenate(([0], np.cumsum([part.shape[0] for part in parts])))
    centroids = np.concatenate(parts)
    width = 1 + POINT_PROBES
    probes = near_coarse.shape[1]  # COARSE_PROBES, or every coarse cell when there are fewer
    scores = np.full((unit.shape[0], probes * width), -np.inf, dtype=np.float32)
    found = np.full(scores.shape, -1, dtype=np.int64)
    for probe in range(probes):
        for cell, members in enumerate(_members_by_cell(near_coarse[:, probe], coarse)):
            if members.size and parts[cell].shape[0]:
                similarity, nearest = _nearest(unit[members], parts[cell], width)
                columns = probe * width + np.arange(nearest.shape[1])
                scores[members[:, None], columns] = similarity
                found[members[:, None], columns] = nearest + firsts[cell]
    best = np.argsort(-scores, axis=1, kind="stable")[:, :width]
    return centroids, np.take_along_axis(found, best, axis=1)


def _kmeans(vectors: np.ndarray, cells: int, seed: int) -> np.ndarray:
    """Unit centroids of `cells` spherical k-means cells, trained on a sample of TRAINING_POINTS_PER_CELL each."""
    n, dim = vectors.shape
    if cells >= n:
        return np.ascontiguousarray(vectors, dtype=np.float32)
    if cells == 1:
        return normalized(vectors.astype(np.float64).mean(axis=0, keepdims=True))
    sample = np.random.default_rng(seed).choice(n, min(n, TRAINING_POINTS_PER_CELL * cells), replace=False)
    kmeans = faiss.Kmeans(dim, cells, niter=KMEANS_ITERATIONS, spherical=True, seed=seed, verbose=False)
    kmeans.train(np.ascontiguousarray(vectors[np.sort(sample)]))
    return kmeans.centroids


def _nearest(vectors: np.ndarray, centroids: np.ndarray, count: int) -> tuple[np.ndarray, np.ndarray]:
    """Each vector's `count` nearest centroids by cosine (at most as many as there are), nearest first: their
    cosines and their numbers."""
    index = faiss.IndexFlatIP(centroids.shape[1])
    index.add(np.ascontiguousarray(centroids, dtype=np.float32))
    return index.search(np.ascontiguousarray(vectors, dtype=np.float32), min(count, centroids.shape[0]))


def _cell_partners(centroids: np.ndarray, probe_cells: int) -> list[list[int]]:
    """For each cell, itself and the later-numbered cells it must be compared with (symmetric, no repeats)."""
    cells = centroids.shape[0]
    nearest = _nearest(centroids, centroids, max(1, probe_cells))[1]
    partners: list[set[int]] = [{c} for c in range(cells)]
    for cell in range(cells):
        for other in nearest[cell].tolist():
            low, high = min(cell, other), max(cell, other)
            partners[low].add(high)
    return [sorted(p) for p in partners]


def _block_pairs(unit: np.ndarray, rows: np.ndarray, columns: np.ndarray, threshold: float, diagonal: bool):
    """Pairs between `rows` and `columns` above the threshold; when the columns start with the rows' own cell,
    only pairs above that block's diagonal count. Rows are taken in slices that keep the scores within
    BLOCK_BYTES."""
    step = max(1, BLOCK_BYTES // (4 * max(1, columns.size)))
    right = unit[columns]
    own = rows.size if diagonal else 0
    for start in range(0, rows.size, step):
        stop = min(rows.size, start + step)
        scores = unit[rows[start:stop]] @ right.T
        if own:
            # Row k (global start + k) of the own block keeps only columns after it.
            scores[:, :own][np.tril_indices(stop - start, start, own)] = -np.inf
        a, b = np.nonzero(scores >= threshold)
        yield rows[start + a].astype(INDEX), columns[b].astype(INDEX), scores[a, b]


def clusters(n: int, rows: np.ndarray, cols: np.ndarray, min_size: int) -> list[np.ndarray]:
    """Connected components with at least `min_size` members, largest first, as arrays of row indices."""
    if n == 0:
        return []
    graph = coo_matrix((np.ones(len(rows), dtype=np.int8), (rows, cols)), shape=(n, n))
    count, labels = connected_components(graph, directed=False)
    sizes = np.bincount(labels, minlength=count)
    big = np.flatnonzero(sizes >= min_size)
    order = np.argsort(labels, kind="stable")
    starts = np.concatenate(([0], np.cumsum(sizes)))
    found = [order[starts[label] : starts[label + 1]] for label in big]
    return sorted(found, key=len, reverse=True)


class BallIndex:
    """Vectors partly grouped into balls (a centre and the widest angle from it to a member): a search skips
    every ball no query can reach at the threshold, since on the sphere angle(q, m) >= angle(q, c) - angle(m, c),
    and compares the rest exactly, so it finds the same pairs as comparing everything, with far fewer products.
    Vectors in no ball are always compared. Clustering's MetaPatterns make good balls: tight, and most memories
    are in one."""

    MARGIN = 1e-6  # radians: float rounding never prunes a ball that holds a pair

    def __init__(self, unit: np.ndarray, balls: list[np.ndarray], groups: np.ndarray | None = None):
        self.unit, self.groups = unit, groups
        self.balls = [members for members in balls if members.size]
        inside = np.zeros(unit.shape[0], dtype=bool)
        for members in self.balls:
            inside[members] = True
        self.loose = np.flatnonzero(~inside)
        self.loose_vectors = unit[self.loose]
        centres = [unit[members].astype(np.float64).mean(axis=0) for members in self.balls]
        self.centres = normalized(np.array(centres)) if centres else np.zeros((0, unit.shape[1]))
        self.radii = np.array([np.arccos(np.clip((unit[members] @ centre).min(), -1, 1))
                               for members, centre in zip(self.balls, self.centres)])

    def search(self, queries: np.ndarray, threshold: float, query_groups: np.ndarray | None = None) -> Pairs:
        """pairs_against(queries, unit, threshold, query_groups, groups): pairs (query number, position)."""
        parts = [self._search(queries, np.arange(queries.shape[0]), self.loose, self.loose_vectors, threshold,
                              query_groups)]
        if self.balls:
            reach = np.arccos(np.clip(threshold, -1, 1)) + self.radii + self.MARGIN
            angles = np.arccos(np.clip(queries.astype(np.float64) @ self.centres.T, -1, 1))
            for ball in np.flatnonzero((angles <= reach).any(axis=0)).tolist():
                asking = np.flatnonzero(angles[:, ball] <= reach[ball])
                members = self.balls[ball]
                parts.append(self._search(queries, asking, members, self.unit[members], threshold, query_groups))
        return Pairs.joined(parts)

    def _search(self, queries, asking, positions, vectors, threshold, query_groups):
        found = _pairs_against(queries[asking], vectors, threshold)
        rows, cols = asking[found.rows], positions[found.cols]
        if self.groups is not None:  # within one group only (a scope)
            keep = query_groups[rows] == self.groups[cols]
            rows, cols, similarities = rows[keep], cols[keep], found.similarities[keep]
        else:
            similarities = found.similarities
        return rows.astype(INDEX), cols.astype(INDEX), similarities
