"""Pure decision rules: which association a pair of memories gets, and what forgetting does to each memory."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .timeutil import SECONDS_PER_DAY

WEEK_SECONDS = 7 * 86400.0


@dataclass(frozen=True)
class Association:
    """An edge the creative task proposes between two memories."""

    relation: str  # the edge label: DISCOVERED
    kind: str
    confidence: float


def association_for(type_a: str, type_b: str, similarity: float, seconds_apart: float | None) -> Association | None:
    """The first rule that fires for a pair without an edge, or None.

    Insight with Pattern and sim > 0.5 -> explains (0.7); different types and sim > 0.7 -> shares_theme
    (confidence = sim); created less than 7 days apart and sim < 0.4 -> parallel_context (0.5).
    AutoMem's "two Decisions with sim < 0.3 contradict" is gone: it marks unrelated decisions as contradicting
    (every such edge was false on the labelled set). Contradictions come from dedup, between memories about
    the same subject.
    """
    if {type_a, type_b} == {"Insight", "Pattern"} and similarity > 0.5:
        return Association("DISCOVERED", "explains", 0.7)
    if type_a != type_b and similarity > 0.7:
        return Association("DISCOVERED", "shares_theme", round(float(similarity), 6))
    if seconds_apart is not None and abs(seconds_apart) < WEEK_SECONDS and similarity < 0.4:
        return Association("DISCOVERED", "parallel_context", 0.5)
    return None


@dataclass(frozen=True)
class ForgetPolicy:
    """The thresholds and protections of controlled forgetting (0 disables a threshold)."""

    archive_threshold: float
    delete_threshold: float
    grace_period_days: float
    protected_importance: float
    protected_types: frozenset[str]
    # Days a memory stays archived before it may be deleted: a memory below the delete line is archived first,
    # so a wrong threshold shows in the archive (and is undone by a restore) before anything is deleted. 0: one
    # below the delete line is deleted at once, active or archived.
    delete_after_archived_days: float = 0.0

    @property
    def enabled(self) -> bool:
        """Whether forgetting archives or deletes anything (both thresholds 0: off, the default)."""
        return self.archive_threshold > 0 or self.delete_threshold > 0

    @property
    def archives_first(self) -> bool:
        """Whether a memory below the delete line is archived, and deleted only after the dwell."""
        return self.delete_after_archived_days > 0


@dataclass(frozen=True)
class ForgetDecision:
    memory_id: str
    action: str  # archive, delete or protect (a report's await: archived, waiting out the dwell)
    reason: str
    relevance_score: float


def forget_decisions(
    policy: ForgetPolicy,
    ids: Sequence[str],
    relevance: np.ndarray,
    archived: np.ndarray,
    age_days: np.ndarray,
    importance: np.ndarray,
    types: Sequence[str],
    protected: np.ndarray,
    protected_reasons: Sequence[str | None],
    *,
    merged: np.ndarray | None = None,
    days_held: np.ndarray | None = None,
    days_archived: np.ndarray | None = None,
) -> list[ForgetDecision]:
    """One decision for every memory below a threshold: delete, archive, or protect (with the protection).
    A merged memory is never judged on its own score (it leaves with its canonical); one a restore holds
    (`days_held` > 0 still) is protected. With a dwell (policy.archives_first), a memory below the delete line is
    archived, and deleted only once `days_archived` (NaN: unknown, so not yet) reaches the dwell; until then an
    archived one gets no decision (awaiting_deletion lists it)."""
    count = len(ids)
    merged = np.zeros(count, bool) if merged is None else merged
    days_held = np.full(count, np.nan) if days_held is None else days_held
    days_archived = np.full(count, np.nan) if days_archived is None else days_archived
    below_delete = (relevance < policy.delete_threshold) & ~merged
    below_archive = (relevance < policy.archive_threshold) & ~archived & ~merged
    # Without a dwell what is below the delete line goes at once; with one, only after the dwell in the archive.
    deletable = (archived & (days_archived >= policy.delete_after_archived_days) if policy.archives_first
                 else np.ones(count, bool))
    decisions = []
    for i in np.flatnonzero(below_delete | below_archive):
        shield = (f"restored: held {days_held[i]:.1f} more days" if days_held[i] > 0 else
                  _protection(policy, age_days[i], importance[i], types[i], protected[i], protected_reasons[i]))
        score = float(relevance[i])
        if shield:
            decisions.append(ForgetDecision(ids[i], "protect", shield, score))
        elif below_delete[i] and deletable[i]:
            decisions.append(ForgetDecision(ids[i], "delete", _delete_reason(policy, score, days_archived[i]), score))
        elif not archived[i]:
            decisions.append(ForgetDecision(ids[i], "archive", _archive_reason(policy, score, below_delete[i]), score))
    return decisions


def _delete_reason(policy: ForgetPolicy, score: float, days_archived: float) -> str:
    reason = f"relevance {score:.4f} < delete threshold {policy.delete_threshold}"
    if policy.archives_first:
        reason += f", archived {days_archived:.1f} days >= {policy.delete_after_archived_days:g}"
    return reason


def _archive_reason(policy: ForgetPolicy, score: float, below_delete: bool) -> str:
    if below_delete:  # only with a dwell: otherwise it would be deleted
        return (f"relevance {score:.4f} < delete threshold {policy.delete_threshold}: archived first, deletable "
                f"after {policy.delete_after_archived_days:g} days archived")
    return f"relevance {score:.4f} < archive threshold {policy.archive_threshold}"


def _protection(policy: ForgetPolicy, age_days, importance, memory_type, protected, protected_reason) -> str | None:
    """Why a memory must not be forgotten, or None if nothing protects it."""
    if protected:
        return f"protected: {protected_reason}" if protected_reason else "protected flag is set"
    if importance >= policy.protected_importance:
        return f"importance {importance:.2f} >= {policy.protected_importance}"
    if memory_type in policy.protected_types:
        return f"type {memory_type} is protected"
    if np.isnan(age_days) or age_days < policy.grace_period_days:
        age = "unknown age" if np.isnan(age_days) else f"{age_days:.1f} days old"
        return f"{age} < grace period {policy.grace_period_days:g} days"
    return None


def forget_due(policy: ForgetPolicy, below_at: np.ndarray, grace_from: np.ndarray, importance: np.ndarray,
               types: Sequence[str], protected: np.ndarray, held_until: np.ndarray | None = None,
               archived_since: np.ndarray | None = None) -> np.ndarray:
    """The epoch second each memory could first be forgotten if only time passes (inf: never): when its
    relevance is below its threshold (`below_at`), the grace period counted from `grace_from` is over, a
    restore's hold (`held_until`, NaN: none) has ended, and an archived memory (`archived_since`, NaN: active)
    has been archived for the dwell (deletable_from). The protections of _protection that time does not end
    (flag, importance, type, an unknown age) make it never."""
    grace_ends = grace_from + policy.grace_period_days * SECONDS_PER_DAY
    for_good = protected | (np.nan_to_num(importance, nan=-1.0) >= policy.protected_importance) | \
        np.fromiter((t in policy.protected_types for t in types), bool, len(types)) | np.isnan(grace_ends)
    ends = np.fmax(below_at, grace_ends)
    if held_until is not None:
        ends = np.fmax(ends, held_until)  # fmax: a NaN (never held) leaves the other
    if archived_since is not None:
        ends = np.fmax(ends, deletable_from(policy, archived_since))
    return np.where(for_good, np.inf, ends)


def deletable_from(policy: ForgetPolicy, archived_since: np.ndarray) -> np.ndarray:
    """The epoch second from which each archived memory (archived at `archived_since`) may be deleted."""
    return archived_since + policy.delete_after_archived_days * SECONDS_PER_DAY
