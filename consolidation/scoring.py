"""The relevance formula of decay, as pure vectorised functions."""

from __future__ import annotations

import numpy as np

AGE_DECAY_PER_DAY = 0.01
ACCESS_DECAY_PER_DAY = 0.05
RELATIONSHIP_WEIGHT = 0.3
RECENT_ACCESS_DAYS = 1.0
DEFAULT_IMPORTANCE = 0.5
DEFAULT_CONFIDENCE = 0.5
# Clustering and creative look only at memories scored above this; a score crossing it is a change (stores/changes).
CANDIDATE_RELEVANCE = 0.3


def relevance_scores(
    age_days: np.ndarray,
    days_since_access: np.ndarray,
    relationship_counts: np.ndarray,
    importance: np.ndarray,
    confidence: np.ndarray,
) -> np.ndarray:
    """relevance = age * access * relationships * importance * confidence, capped at 1.0.

    age = exp(-0.01 d), access = 1 within a day of the last access else exp(-0.05 d'),
    relationships = 1 + 0.3 ln(1 + n), importance = 0.5 + i, confidence = 0.7 + 0.3 c.
    """
    age = np.exp(-AGE_DECAY_PER_DAY * age_days)
    access = np.where(
        days_since_access <= RECENT_ACCESS_DAYS, 1.0, np.exp(-ACCESS_DECAY_PER_DAY * days_since_access)
    )
    connectedness = 1.0 + RELATIONSHIP_WEIGHT * np.log1p(relationship_counts)
    importance_factor = 0.5 + importance
    confidence_factor = 0.7 + 0.3 * confidence
    return np.minimum(1.0, age * access * connectedness * importance_factor * confidence_factor)


def clean_fraction(values: np.ndarray, default: float) -> np.ndarray:
    """Missing (NaN) values become `default`; the rest are clipped into 0..1."""
    return np.clip(np.where(np.isnan(values), default, values), 0.0, 1.0)


def distribution(scores: np.ndarray) -> dict[str, int]:
    """How many scores fall in each bucket: high > 0.7 >= medium >= 0.3 > low >= 0.1 > archive."""
    return {
        "high": int(np.count_nonzero(scores > 0.7)),
        "medium": int(np.count_nonzero((scores >= 0.3) & (scores <= 0.7))),
        "low": int(np.count_nonzero((scores >= 0.1) & (scores < 0.3))),
        "archive": int(np.count_nonzero(scores < 0.1)),
    }


def changed(before: np.ndarray, after: np.ndarray, epsilon: float) -> np.ndarray:
    """Which scores must be rewritten: a missing old score, or a change larger than epsilon."""
    return np.isnan(before) | (np.abs(after - before) > epsilon)
