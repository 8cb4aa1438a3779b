"""Controlled forgetting: archive, then delete, only unprotected memories whose relevance fell below a threshold
(judging every memory in a full pass; in an incremental one, those whose turn could have come)."""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np

from ..rules import ForgetDecision, ForgetPolicy, forget_decisions, forget_due
from ..timeutil import days_between, to_iso
from .context import TaskContext, capped
from .decay import current_relevance, relevance_due
from .dues import fell_back, keep_dues, lookup_for


def policy_of(settings) -> ForgetPolicy:
    return ForgetPolicy(
        archive_threshold=settings.consolidation_archive_threshold,
        delete_threshold=settings.consolidation_delete_threshold,
        grace_period_days=settings.consolidation_grace_period_days,
        protected_importance=settings.consolidation_protected_importance,
        protected_types=frozenset(settings.consolidation_protected_types),
    )


def run(ctx: TaskContext, dry_run: bool) -> dict[str, Any]:
    settings = ctx.settings
    completed = 0 if dry_run else ctx.lifecycle.complete_pending()
    lookup, fallback = lookup_for(ctx, "forget")
    inputs = ctx.graph.forget_inputs(lookup)
    scoring = inputs.scoring
    ctx.progress(0, len(scoring))
    # Forgetting judges each memory by its relevance now, not by a stored score decay may not have refreshed.
    relevance = current_relevance(scoring, ctx.now)
    # A restore starts a fresh grace period: the age that protects a memory counts from the later of the two.
    grace_from = np.fmax(scoring.created, inputs.restored)
    policy = policy_of(settings)
    decisions = forget_decisions(
        policy, scoring.ids, relevance, inputs.archived, days_between(grace_from, ctx.now),
        scoring.importance, inputs.types, inputs.protected, inputs.protected_reasons,
    )
    to_archive = [d.memory_id for d in decisions if d.action == "archive"]
    to_delete = {d.memory_id: d.reason for d in decisions if d.action == "delete"}
    purged = 0
    if not dry_run:
        if to_archive:
            ctx.graph.archive(to_archive, to_iso(ctx.now))
            ctx.vectors.set_archived(to_archive, True)
        ctx.lifecycle.delete(to_delete, ctx.now)
        purged = ctx.lifecycle.purge_expired(ctx.now, settings.consolidation_tombstone_retention_days)
        keep_dues(ctx, "forget", lookup, scoring.node_ids,
                  _due(policy, inputs, grace_from, ctx.now, set(to_archive), set(to_delete)))
    ctx.progress(len(scoring), len(scoring))
    counts = Counter(d.action for d in decisions)
    return {
        **fell_back(fallback),
        "memories_processed": len(scoring),
        "archived": counts["archive"],
        "deleted": counts["delete"],
        "protected": counts["protect"],
        "kept": len(scoring) - len(decisions),
        "interrupted_deletions_completed": completed,
        "tombstones_purged": purged,
        **capped("decisions", [_public(d) for d in decisions], settings.consolidation_report_limit),
    }


def _public(decision: ForgetDecision) -> dict[str, Any]:
    return {"memory_id": decision.memory_id, "action": decision.action, "reason": decision.reason,
            "relevance_score": round(decision.relevance_score, 6)}


def _due(policy: ForgetPolicy, inputs, grace_from: np.ndarray, now, archived_now: set[str],
         deleted_now: set[str]) -> np.ndarray:
    """rules.forget_due for each memory read, as it is after this pass: the threshold that applies is the
    archive one until it is archived (the higher one, if the delete threshold is set above it), then the delete
    one; a memory deleted now is never due."""
    scoring = inputs.scoring
    archived = inputs.archived | np.fromiter((i in archived_now for i in scoring.ids), bool, len(scoring))
    threshold = np.where(archived, policy.delete_threshold, max(policy.archive_threshold, policy.delete_threshold))
    due = forget_due(policy, relevance_due(scoring, now, threshold), grace_from, scoring.importance, inputs.types,
                     inputs.protected)
    gone = np.fromiter((i in deleted_now for i in scoring.ids), bool, len(scoring))
    return np.where(gone, np.inf, due)
