"""The similarity graph of one run, computed once and shared by the tasks that need it (dedup, then cluster)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from .settings import Settings
from .similarity import INDEX, Pairs, similar_pairs_within


class NeighbourGraph:
    """Pairs of memories with cosine >= a threshold, kept for the rest of the run.

    The first task to ask computes the graph at the lowest threshold any task uses; a later task asking for a
    subset of those memories at a threshold at least as high gets its pairs from the copy. Vectors do not
    change within a run (merges archive memories, they do not re-embed them), so the copy stays exact.
    """

    def __init__(self, settings: Settings):
        self.settings = settings
        self._position: dict[str, int] = {}
        self._pairs = Pairs.empty()
        self._threshold: float | None = None

    def pairs(self, ids: Sequence[str], unit: np.ndarray, threshold: float,
              progress: Callable[[int, int], None], scopes: np.ndarray | None = None) -> Pairs:
        """Pairs i < j (indexes into `ids`) with cosine >= threshold, within one scope (`scopes`: a code per
        memory; None: all one scope). A memory's scope does not change within a run, so the copy stays exact."""
        if self._threshold is None or threshold < self._threshold or not all(i in self._position for i in ids):
            self._compute(ids, unit, threshold, progress, scopes)
        return self._subset(ids, threshold)

    def _compute(self, ids: Sequence[str], unit: np.ndarray, threshold: float, progress, scopes) -> None:
        settings = self.settings
        self._threshold = min(threshold, settings.consolidation_cluster_similarity,
                              settings.consolidation_dedup_similarity)
        self._pairs = similar_pairs_within(unit, scopes, self._threshold, settings.consolidation_cluster_exact_limit,
                                           settings.consolidation_cluster_probe_cells, progress=progress)
        self._position = {memory_id: index for index, memory_id in enumerate(ids)}

    def _subset(self, ids: Sequence[str], threshold: float) -> Pairs:
        """The stored pairs among `ids` above `threshold`, renumbered to positions in `ids`."""
        renumber = np.full(len(self._position), -1, dtype=INDEX)
        stored = np.fromiter((self._position[i] for i in ids), dtype=np.int64, count=len(ids))
        renumber[stored] = np.arange(len(ids), dtype=INDEX)
        rows, cols = renumber[self._pairs.rows], renumber[self._pairs.cols]
        keep = (rows >= 0) & (cols >= 0) & (self._pairs.similarities >= threshold)
        rows, cols = rows[keep], cols[keep]
        return Pairs(np.minimum(rows, cols), np.maximum(rows, cols), self._pairs.similarities[keep])
