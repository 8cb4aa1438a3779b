"""The relevance formula of decay, as pure vectorised functions."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import numpy as np

from .timeutil import SECONDS_PER_DAY, days_between

AGE_DECAY_PER_DAY = 0.01
ACCESS_DECAY_PER_DAY = 0.05
RELATIONSHIP_WEIGHT = 0.3
RECENT_ACCESS_DAYS = 1.0
DEFAULT_IMPORTANCE = 0.5
DEFAULT_CONFIDENCE = 0.5
# Clustering and creative look only at memories scored above this; a score crossing it is a change (stores/changes).
CANDIDATE_RELEVANCE = 0.3
# The most a memory that is no longer current (merged, superseded, archived) keeps as its stored relevance_score.
# AutoMem's creative and cluster passes select `relevance_score > 0.3` and never look at archived, merged_into or
# superseded_by: below 0.3 they leave such a memory out (0.25, not 0.3: a `>=` or a rounding stays out too). Above
# AutoMem's archive (0.2) and delete (0.05) thresholds, so a reader trusting the stored score to forget by never
# archives or deletes a memory only for being history (AutoMem's own forget recomputes the score and ignores it).
NOT_CURRENT_RELEVANCE = 0.25


@dataclass
class ScoringInputs:
    """Per-memory columns the relevance formula and the forgetting rules need (NaN where missing)."""

    ids: list[str]
    node_ids: np.ndarray  # FalkorDB's internal ids, for direct writes back in the same run
    created: np.ndarray  # epoch seconds
    last_accessed: np.ndarray
    importance: np.ndarray
    confidence: np.ndarray
    relevance: np.ndarray
    relationship_counts: np.ndarray
    superseded: np.ndarray  # a newer memory superseded it: it decays as if unused since it was made
    current: np.ndarray  # neither archived, merged nor superseded: its score is not capped (as_stored)

    def __len__(self) -> int:
        return len(self.ids)


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
    connectedness = _connectedness(relationship_counts)
    importance_factor = 0.5 + importance
    confidence_factor = 0.7 + 0.3 * confidence
    return np.minimum(1.0, age * access * connectedness * importance_factor * confidence_factor)


def days_until_below(
    target: np.ndarray,
    age_days: np.ndarray,
    days_since_access: np.ndarray,
    ageing: np.ndarray,
    unused: np.ndarray,
    relationship_counts: np.ndarray,
    importance: np.ndarray,
    confidence: np.ndarray,
) -> np.ndarray:
    """Days from now until relevance_scores first falls below `target` if nothing but time changes: 0 if it is
    below already, inf if it never will. `ageing` / `unused` (0 or 1) say whether the age / the days since the
    last access grow with time (they stay 0 for a memory whose times are unknown).

    With the other factors fixed, ln(relevance) falls linearly: 0.01 a day while the last access is at most a
    day old, then one step down and 0.01 + 0.05 a day. The cap at 1.0 never matters for a target up to 1.
    """
    fixed = np.log(_connectedness(relationship_counts) * (0.5 + importance) * (0.7 + 0.3 * confidence))
    with np.errstate(divide="ignore", invalid="ignore"):
        floor = np.log(np.where(target > 0, target, np.nan))  # nothing falls below a target <= 0
    age_rate = AGE_DECAY_PER_DAY * ageing
    recent_room = fixed - AGE_DECAY_PER_DAY * age_days - floor
    while_recent = _days_to_use_up(recent_room, age_rate)
    recent_ends = _days_to_use_up(RECENT_ACCESS_DAYS - days_since_access, unused)
    later = _days_to_use_up(recent_room - ACCESS_DECAY_PER_DAY * days_since_access,
                            age_rate + ACCESS_DECAY_PER_DAY * unused)
    days = np.where(while_recent <= recent_ends, while_recent, np.maximum(recent_ends, later))
    return np.where(np.isnan(floor), np.inf, np.where(target > 1.0, 0.0, days))


def current_relevance(inputs: ScoringInputs, now: datetime) -> np.ndarray:
    """The formula applied at `now`; a missing creation time counts as now, a missing access as the creation,
    and a superseded memory's uses no longer count: it decays as if unused since it was made."""
    return relevance_scores(**_formula_inputs(inputs, now)[0])


def as_stored(relevance: np.ndarray, current: np.ndarray) -> np.ndarray:
    """The score a memory keeps: its relevance while it is current, at most NOT_CURRENT_RELEVANCE once it is not
    (a lower score stays as it is: the cap never lifts one)."""
    return np.where(current, relevance, np.minimum(relevance, NOT_CURRENT_RELEVANCE))


def stored_relevance(inputs: ScoringInputs, now: datetime) -> np.ndarray:
    """current_relevance as it is written: capped for the memories that are not current."""
    return as_stored(current_relevance(inputs, now), inputs.current)


def relevance_due(inputs: ScoringInputs, now: datetime, target: np.ndarray) -> np.ndarray:
    """The epoch second each memory's relevance first falls below `target` if only time passes (inf: never),
    a second early so rounding never makes it late."""
    known, (ageing, unused) = _formula_inputs(inputs, now)
    days = days_until_below(target, ageing=ageing, unused=unused, **known)
    return now.timestamp() + days * SECONDS_PER_DAY - 1.0


def _formula_inputs(inputs: ScoringInputs, now: datetime) -> tuple[dict[str, np.ndarray], tuple[np.ndarray, ...]]:
    """The formula's inputs at `now`, and whether the age and the days since the last access grow with time (a
    time taken as `now` stays now)."""
    unknown_creation = np.isnan(inputs.created)
    created = np.where(unknown_creation, now.timestamp(), inputs.created)
    use_unknown = np.isnan(inputs.last_accessed) | inputs.superseded
    accessed = np.where(use_unknown, created, inputs.last_accessed)
    known = {
        "age_days": days_between(created, now),
        "days_since_access": days_between(accessed, now),
        "relationship_counts": inputs.relationship_counts,
        "importance": clean_fraction(inputs.importance, DEFAULT_IMPORTANCE),
        "confidence": clean_fraction(inputs.confidence, DEFAULT_CONFIDENCE),
    }
    ageing = (~unknown_creation).astype(np.float64)
    return known, (ageing, np.where(use_unknown & unknown_creation, 0.0, 1.0))


def _days_to_use_up(room: np.ndarray, rate: np.ndarray) -> np.ndarray:
    """Days until `room` shrinking by `rate` a day is gone (strictly below 0): 0 if it is gone, inf if it
    never shrinks."""
    with np.errstate(divide="ignore", invalid="ignore"):
        days = np.where(rate > 0, room / rate, np.inf)
    return np.where(room < 0, 0.0, np.maximum(days, 0.0))


def _connectedness(relationship_counts: np.ndarray) -> np.ndarray:
    return 1.0 + RELATIONSHIP_WEIGHT * np.log1p(relationship_counts)


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
