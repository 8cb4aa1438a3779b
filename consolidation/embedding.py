"""Text embedders: a pluggable interface and a built-in deterministic one that needs no model download."""

from __future__ import annotations

import re
import zlib
from collections import Counter
from collections.abc import Sequence
from typing import Protocol

import numpy as np

WORD = re.compile(r"[^\W_]+", re.UNICODE)
STOPWORDS = frozenset(
    "a an and are as at be been but by for from has have in into is it its of on or our so that the their "
    "then there these they this to was we were will with i you he she my your his her them us".split()
)
# Weights per feature family: whole words carry the topic, bigrams the phrasing, trigrams spelling variants.
FAMILY_WEIGHTS = {"w": 1.0, "b": 0.6, "c": 0.25}


class Embedder(Protocol):
    """Turns texts into unit-length vectors of a fixed dimension."""

    dimension: int

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """An (len(texts), dimension) float32 matrix of L2-normalised rows."""
        ...


class HashingEmbedder:
    """Feature hashing of words, word bigrams and character trigrams: similar texts get similar vectors.

    Deterministic across processes and machines (CRC32, not Python's salted hash), so the same text
    always gets the same vector and tests can reason about similarities.
    """

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
    words = [w for w in WORD.findall(text.lower()) if w not in STOPWORDS]
    counts: Counter = Counter()
    for word in words:
        counts["w:" + word] += 1
        padded = f"<{word}>"
        counts.update("c:" + padded[i : i + 3] for i in range(len(padded) - 2))
    counts.update(f"b:{first} {second}" for first, second in zip(words, words[1:]))
    return {feature: FAMILY_WEIGHTS[feature[0]] * (1.0 + np.log(n)) for feature, n in counts.items()}
