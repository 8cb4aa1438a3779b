"""What decides (pure): whether two memories state one fact, from their vectors' similarity and the evidence of
their words, with thresholds calibrated for the vector space the similarities come from."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace

from .evidence import Evidence, weigh
from .reading import Reading, read, spelled

# Shared content below this many terms means too little to judge: "You can use it, too." / "You can do it, too."
MIN_SHARED_TERMS = 2


@dataclass(frozen=True, slots=True)
class Thresholds:
    """How similar two memories' vectors must be to state one fact, for one vector space: `same_fact` when
    neither text adds a term, raised by `per_added_term` for each term the fuller one adds and by
    `per_added_share` times the share of its terms that are added; and at least `swapped` when each text has a
    term the other lacks (one may stand in the other's place: "tea" / "coffee", or "jogs" / "trots", which only
    the vectors can tell apart). `grey_margin`: how close to the line a pair is left to the optional model
    judge."""

    same_fact: float
    per_added_term: float
    per_added_share: float
    swapped: float
    grey_margin: float = 0.03
    # Two statements of one named subject this similar state one fact whatever details one adds (a person's
    # "is considering a career in counseling to help others" / "..., particularly working with trans people"),
    # if nothing conflicts and neither is an event told at another time (restates() in merges.py): infinite
    # where no value is known for the vector space.
    restated: float = math.inf

    def describe(self) -> dict[str, float]:
        return {"same_fact": self.same_fact, "per_added_term": self.per_added_term,
                "per_added_share": self.per_added_share, "swapped": self.swapped, "grey_margin": self.grey_margin,
                **({"restated": self.restated} if math.isfinite(self.restated) else {})}

    def needed(self, evidence: Evidence) -> float:
        added = max(len(evidence.only_first), len(evidence.only_second))
        needed = self.same_fact + self.per_added_term * added + self.per_added_share * evidence.added_share
        return max(needed, self.swapped) if evidence.swapped else needed


# Calibrated by `consolidation calibrate` on the public labelled pairs (MRPC train, STS-B train; docs/quality.md):
# for all-MiniLM-L6-v2 vectors (the built-in model's, and what a client's model is taken to be while the service
# embeds with it or with the hashing embedder), and for the hashing embedder's (EMBEDDING_PROVIDER=hash).
CLIENT_THRESHOLDS = Thresholds(0.75, 0.06, 0.1, 0.95, restated=0.9)
BUILT_IN_THRESHOLDS = Thresholds(0.82, 0.0, 0.4, 0.0)
# For a model nobody calibrated (another provider's, unless the settings give its thresholds): only texts that are
# nearly the same merge, whatever the model's scale (0.95 is near-identity for every sentence model we measured),
# and no restatement rule: a wrong merge hides a fact, a missed one costs a slot.
UNCALIBRATED_THRESHOLDS = Thresholds(0.95, 0.02, 0.2, 0.99)


@dataclass(frozen=True, slots=True)
class Verdict:
    """The judge's decision on a pair: `same` (one fact), why, and whether the pair lies in the grey zone. The
    reason is worded only when asked for (millions of pairs are judged, few are reported)."""

    same: bool
    why: Callable[[], str]
    needed: float  # the similarity this pair's words ask for (nan when a veto or too little shared decided)
    grey: bool = False

    @property
    def reason(self) -> str:
        return self.why()

    def saying(self, reason: str) -> Verdict:
        return replace(self, why=lambda: reason)


def judge(first: str, second: str, similarity: float, thresholds: Thresholds) -> Verdict:
    """Whether two texts whose vectors have this cosine state one fact."""
    return decide(read(first), read(second), similarity, thresholds)


def decide(first: Reading, second: Reading, similarity: float, thresholds: Thresholds) -> Verdict:
    """A conflict keeps them apart whatever the vectors say; so does too little in common, or a change
    announcement beside a plain statement (a change is judged as one, see changes.py); otherwise the vectors
    must reach the similarity the words ask for."""
    nan = float("nan")
    if announces(first) != announces(second):
        return Verdict(False, lambda: "kept apart: one announces a change, the other states a fact", nan)
    evidence = weigh(first, second)
    if evidence.conflicts:
        conflict = evidence.conflicts[0]
        return Verdict(False, lambda: f"kept apart: conflicting {conflict.kind} ({_as_written(first, conflict.first)}"
                                      f" / {_as_written(second, conflict.second)})", nan)
    if len(evidence.shared) < MIN_SHARED_TERMS:
        return Verdict(False, lambda: "kept apart: too little in common to judge (shared: "
                                      f"{', '.join(spelled(first, evidence.shared)) or 'nothing'})", nan)
    needed = thresholds.needed(evidence)
    same = similarity >= needed
    grey = abs(similarity - needed) < thresholds.grey_margin
    return Verdict(same, lambda: _reason(first, second, evidence, similarity, needed, same), needed, grey)


def _as_written(reading: Reading, value: str) -> str:
    """A conflicting value as the text writes it: "Production", "not béchamel", "over spaces"."""
    prefix, _, term = value.rpartition(" ") if value.startswith("not ") else ("", "", value)
    role, _, term = term.partition(":") if ":" in term and term.split(":", 1)[0].isupper() else ("", "", term)
    words = spelled(reading, [term])[0]
    return " ".join(part for part in (prefix, role.lower(), words) if part)


def announces(reading: Reading) -> bool:
    """Whether a text announces a change it says something definite about ("moved from X to Y", "no longer X",
    "now X"); a verb alone ("cuts ginger") does not."""
    return reading.fact.change is not None and reading.fact.change.definite


def _reason(first: Reading, second: Reading, evidence: Evidence, similarity: float, needed: float,
            same: bool) -> str:
    """What decided: the similarity against what the words ask for, the words shared and added as the memories
    write them, and that no value conflicts."""
    relation = ">=" if same else "<"
    words = f"shared: {', '.join(spelled(first, evidence.shared))}"
    added = [*spelled(first, evidence.only_first), *spelled(second, evidence.only_second)]
    if added:
        words += f"; only one has: {', '.join(added)}"
    verdict = "one fact" if same else "kept apart"
    return f"{verdict}: similarity {similarity:.3f} {relation} {needed:.3f} needed ({words}; no conflicting value)"
