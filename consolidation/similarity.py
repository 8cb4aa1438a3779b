"""The similarity graph of memory vectors (pairs with cosine >= threshold) and its connected components."""

from __future__ import annotations

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

# Bytes of similarity scores computed at once: bounds memory whatever the number of vectors.
BLOCK_BYTES = 64 * 1024 * 1024


def normalized(matrix: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (zero rows stay zero), as float32."""
    matrix = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.where(norms == 0, 1.0, norms)


def similar_pairs_exact(unit: np.ndarray, threshold: float) -> tuple[np.ndarray, np.ndarray]:
    """Every pair i < j with cosine >= threshold, by blocked matrix products over the upper triangle."""
    n = unit.shape[0]
    block = max(64, BLOCK_BYTES // (4 * max(n, 1)))
    rows, cols = [], []
    for start in range(0, n, block):
        stop = min(n, start + block)
        scores = unit[start:stop] @ unit[start:].T
        # Keep only the strict upper triangle: column index (offset by start) greater than row index.
        scores[np.tril_indices(stop - start, 0, scores.shape[1])] = -np.inf
        block_rows, block_cols = np.nonzero(scores >= threshold)
        rows.append(block_rows + start)
        cols.append(block_cols + start)
    if not rows:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    return np.concatenate(rows), np.concatenate(cols)


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
