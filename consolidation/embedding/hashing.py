"""The embedder that needs no model (EMBEDDING_PROVIDER=hash): feature hashing of the words texts share."""

from __future__ import annotations

import zlib
from collections import Counter
from collections.abc import Sequence

import numpy as np

from ..hygiene.facts import content_words, read_fact

# Weights per feature family: the content terms carry what a text says, the terms tagged with the side of a
# relation they are on ("tabs over spaces") its direction, bigrams the order of its words, character trigrams
# spelling variants (typos, compounds).
FAMILY_WEIGHTS = {"k": 1.0, "r": 0.5, "b": 0.3, "c": 0.15}


class HashingEmbedder:
    """Feature hashing of a text's content terms (facts.py), their bigrams and character trigrams.

    Restatements of one fact share their content terms, so they land close together whatever their framing,
    word order or inflection. Deterministic across processes and machines (CRC32, not Python's salted
    hash), so the same text always gets the same vector and tests can reason about similarities.
    """

    model = "hash"

    def __init__(self, dimension: int):
        self.dimension = dimension

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        matrix = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            matrix[row] = self._embed_one(text)
        return matrix

    def _embed_one(self, text: str) -> np.ndarray:
        vector = np.zeros(self.dimension, dtype=np.float64)
        for feature, weight in _features(text).items():
            code = zlib.crc32(feature.encode("utf-8"))
            sign = 1.0 if code & 0x80000000 else -1.0
            vector[code % self.dimension] += sign * weight
        norm = np.linalg.norm(vector)
        if norm == 0.0:
            # An empty or all-stopword text still needs a valid unit vector; one fixed axis keeps it deterministic.
            vector[0] = 1.0
            norm = 1.0
        return (vector / norm).astype(np.float32)


def _features(text: str) -> dict[str, float]:
    """Weighted features; term frequency is sublinear (1 + ln tf) so repetition does not dominate."""
    words = content_words(text)
    counts: Counter = Counter({"k:" + term: 1 for term, _ in words})
    counts.update("r:" + term for term in read_fact(text).terms if ":" in term)
    counts.update(f"b:{first} {second}" for (first, _), (second, _) in zip(words, words[1:]))
    for _, written in words:
        padded = f"<{written}>"
        counts.update("c:" + padded[i : i + 3] for i in range(len(padded) - 2))
    return {feature: FAMILY_WEIGHTS[feature[0]] * (1.0 + np.log(n)) for feature, n in counts.items()}
