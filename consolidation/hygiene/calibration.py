"""Thresholds for one vector space from labelled pairs (pure): precision / recall curves of the judge and of a plain
cosine rule, and the thresholds that give the most recall at a wanted precision on every set at once."""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from .judge import MIN_SHARED_TERMS, Thresholds, announces
from .evidence import weigh
from .reading import read

SAME_FACT_GRID = tuple(round(0.50 + 0.01 * i, 2) for i in range(49))
# The neighbour search's default threshold: a model whose same-fact similarity is lower needs a lower one.
DEFAULT_SEARCH = 0.75
PER_ADDED_TERM_GRID = (0.0, 0.01, 0.02, 0.03, 0.04, 0.05, 0.06, 0.08)
PER_ADDED_SHARE_GRID = (0.0, 0.1, 0.2, 0.3, 0.4)
SWAPPED_GRID = (0.0, 0.86, 0.88, 0.9, 0.92, 0.93, 0.94, 0.95, 0.96)


@dataclass(frozen=True, slots=True)
class LabelledPair:
    first: str
    second: str
    similarity: float  # the two texts' vectors' cosine, in the vector space being calibrated
    same: bool  # labelled one fact (a paraphrase)


@dataclass(frozen=True, slots=True)
class Score:
    """A rule's merges on one set: precision at an even mix of same and different pairs (each different pair
    weighs same / different, so sets of any mix compare), recall, and the counts they come from."""

    precision: float
    recall: float
    merged_same: int
    merged_different: int


class PairSet:
    """Labelled pairs with their evidence read once, so that many thresholds are tried in numpy. `even_mix`:
    precision as if same and different pairs were equally many (public pair sets, drawn that way); otherwise
    as counted (a memory set, every similar pair of which is in it)."""

    def __init__(self, name: str, pairs: Sequence[LabelledPair], even_mix: bool = True):
        self.name = name
        self.similarity = np.array([p.similarity for p in pairs], dtype=np.float64)
        self.same = np.array([p.same for p in pairs], dtype=bool)
        added_terms, added_share, swapped, open_ = [], [], [], []
        for pair in pairs:
            first, second = read(pair.first), read(pair.second)
            evidence = weigh(first, second)
            open_.append(not evidence.conflicts and len(evidence.shared) >= MIN_SHARED_TERMS
                         and announces(first) == announces(second))
            added_terms.append(max(len(evidence.only_first), len(evidence.only_second)))
            added_share.append(evidence.added_share)
            swapped.append(evidence.swapped > 0)
        self.open = np.array(open_, dtype=bool)  # no veto: the vectors decide
        self.added_terms = np.array(added_terms, dtype=np.float64)
        self.added_share = np.array(added_share, dtype=np.float64)
        self.swapped = np.array(swapped, dtype=bool)
        self.weight = self.same.sum() / max(1, (~self.same).sum()) if even_mix else 1.0

    def judged(self, thresholds: Thresholds) -> Score:
        needed = thresholds.same_fact + thresholds.per_added_term * self.added_terms + \
            thresholds.per_added_share * self.added_share
        needed = np.where(self.swapped, np.maximum(needed, thresholds.swapped), needed)
        return self.score(self.open & (self.similarity >= needed))

    def cosine(self, threshold: float) -> Score:
        return self.score(self.similarity >= threshold)

    def score(self, merged: np.ndarray) -> Score:
        right, wrong = int((merged & self.same).sum()), int((merged & ~self.same).sum())
        precision = right / (right + wrong * self.weight) if right + wrong else 1.0
        return Score(precision, right / max(1, int(self.same.sum())), right, wrong)

    def cosine_at(self, precision: float) -> tuple[float, Score]:
        """The plain cosine rule with the most recall at this precision: its threshold and score."""
        best = (math.inf, self.score(np.zeros_like(self.same)))
        for threshold in np.unique(self.similarity)[::-1]:
            score = self.cosine(float(threshold))
            if score.precision >= precision and score.recall > best[1].recall:
                best = (float(threshold), score)
        return best


def fit(sets: Sequence[PairSet], precision: dict[str, float], floor: float = 0.0,
        grid: Iterable[tuple[float, float, float, float]] | None = None) -> tuple[Thresholds, dict[str, Score]]:
    """The thresholds with the most recall (the mean over the sets) among those reaching every set's wanted
    precision; `floor`: the lowest same-fact similarity (the neighbour search's threshold)."""
    grid = grid or itertools.product(SAME_FACT_GRID, PER_ADDED_TERM_GRID, PER_ADDED_SHARE_GRID, SWAPPED_GRID)
    best, best_gain, best_scores = None, -1.0, {}
    for same_fact, per_term, per_share, swapped in grid:
        if same_fact < floor:
            continue
        thresholds = Thresholds(same_fact, per_term, per_share, swapped)
        scores = {s.name: s.judged(thresholds) for s in sets}
        if any(scores[name].precision < wanted for name, wanted in precision.items()):
            continue
        gain = sum(score.recall for score in scores.values()) / len(scores)
        if gain > best_gain:
            best, best_gain, best_scores = thresholds, gain, scores
    if best is None:
        raise ValueError("no thresholds reach the wanted precision on every set")
    return best, best_scores


def curve(pair_set: PairSet, thresholds: Thresholds, offsets: Sequence[float]) -> list[tuple[float, Score]]:
    """The judge's precision and recall as its same-fact similarity moves by each offset (a PR curve)."""
    return [(offset, pair_set.judged(replace(thresholds, same_fact=thresholds.same_fact + offset)))
            for offset in offsets]


def calibrate_from_lines(lines: Sequence[str], precision: float) -> dict:
    """`consolidation calibrate`: labelled pairs with their vectors (JSON lines) -> the settings that reach the
    precision with the most recall, and how they and the plain cosine rule score on each set."""
    by_set: dict[str, list[LabelledPair]] = {}
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        pair = labelled_pair(line, number)
        by_set.setdefault(pair[0], []).append(pair[1])
    if not by_set:
        raise ValueError("no pairs: the file is empty")
    sets = [PairSet(name, pairs) for name, pairs in sorted(by_set.items())]
    thresholds, scores = fit(sets, {s.name: precision for s in sets})
    report = {}
    for pair_set in sets:
        threshold, cosine = pair_set.cosine_at(precision)
        judged = scores[pair_set.name]
        report[pair_set.name] = {
            "pairs": len(pair_set.same), "same": int(pair_set.same.sum()),
            "judge": {"precision": round(float(judged.precision), 4), "recall": round(judged.recall, 4)},
            "cosine_rule": {"threshold": None if math.isinf(threshold) else round(threshold, 4),
                            "precision": round(float(cosine.precision), 4), "recall": round(cosine.recall, 4)}}
    search = min(DEFAULT_SEARCH, math.floor(thresholds.same_fact * 100 + 1e-9) / 100)
    return {"settings": {"CONSOLIDATION_DEDUP_VECTORS": "client", "CONSOLIDATION_DEDUP_SIMILARITY": search,
                         "CONSOLIDATION_DEDUP_SAME_FACT_SIMILARITY": thresholds.same_fact,
                         "CONSOLIDATION_DEDUP_SIMILARITY_PER_ADDED_TERM": thresholds.per_added_term,
                         "CONSOLIDATION_DEDUP_SIMILARITY_PER_ADDED_SHARE": thresholds.per_added_share,
                         "CONSOLIDATION_DEDUP_SWAPPED_SIMILARITY": thresholds.swapped},
            "sets": report}


def labelled_pair(line: str, number: int) -> tuple[str, LabelledPair]:
    """(set name, pair) from one line of a calibration file; ValueError naming the line and what is wrong."""
    try:
        row = json.loads(line)
        first, second = np.asarray(row["a_embedding"], float), np.asarray(row["b_embedding"], float)
        same = row["same"] if "same" in row else {"pos": True, "neg": False}[row["label"]]
        if not isinstance(row["a"], str) or not isinstance(row["b"], str) or not isinstance(same, bool):
            raise TypeError("a and b must be texts, same a boolean")
        if first.ndim != 1 or first.shape != second.shape or not first.size:
            raise ValueError("a_embedding and b_embedding must be lists of numbers of one length")
        norms = np.linalg.norm(first) * np.linalg.norm(second)
        if not norms:
            raise ValueError("an embedding is all zeros")
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"line {number}: {type(exc).__name__}: {exc} (expected a, b, same or label, a_embedding, "
                         "b_embedding)") from None
    return str(row.get("set", "pairs")), LabelledPair(row["a"], row["b"], float(first @ second / norms), same)
