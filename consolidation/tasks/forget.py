"""Controlled forgetting: archive, then delete, only unprotected memories whose relevance fell below a threshold
(judging every memory in a full pass; in an incremental one, those whose turn could have come). A memory below the
delete line is archived first and deleted once archived for CONSOLIDATION_DELETE_AFTER_ARCHIVED_DAYS. A merged
duplicate leaves with its canonical; a memory a restore holds stays."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, replace
from datetime import timedelta
from typing import Any

import numpy as np

from ..memory import graph_float
from ..rules import ForgetDecision, ForgetPolicy, deletable_from, forget_decisions, forget_due
from ..scoring import DEFAULT_IMPORTANCE, ScoringInputs, as_stored, changed, current_relevance, relevance_due
from ..revisits import Lookup
from ..stores.graph import ForgetInputs
from ..timeutil import SECONDS_PER_DAY, days_between, iso_texts, to_iso
from .context import TaskContext
from .dues import fell_back, keep_dues, lookup_for, worth_seeking
from .handoff import Prejudged


DECISION_TEXT_CHARS = 120
# How far ahead forget's judgement of decay's read holds (tasks/handoff.py): the memories that could fall below a
# line before then are read again in forget's pass; a forget later than that reads every memory afresh.
HANDOFF_HOURS = 1.0


def policy_of(settings) -> ForgetPolicy:
    return ForgetPolicy(
        archive_threshold=settings.consolidation_archive_threshold,
        delete_threshold=settings.consolidation_delete_threshold,
        grace_period_days=settings.consolidation_grace_period_days,
        protected_importance=settings.consolidation_protected_importance,
        protected_types=frozenset(settings.consolidation_protected_types),
        delete_after_archived_days=settings.consolidation_delete_after_archived_days,
    )


@dataclass
class Judgement:
    """What one pass decided: the memories to archive and delete (with their reasons), every decision listed
    (`acting`: archive and delete, a merged duplicate leaving with its canonical among them; `shielded`: below a
    line but protected), the archived memories waiting out the dwell before their deletion, and which stored
    scores it rewrites."""

    acting: list[ForgetDecision]
    shielded: list[ForgetDecision]
    to_archive: dict[str, str]
    to_delete: dict[str, str]
    leaving: int
    rescored: np.ndarray  # positions whose stored score the pass rewrites with `stored`
    relevance: np.ndarray
    stored: np.ndarray  # the relevance as written: capped for a memory not current (archived now among them)
    grace_from: np.ndarray
    scoring: ScoringInputs
    position: dict[str, int]  # each memory read by id
    archived_since: np.ndarray  # epoch second each is archived since, after this pass (NaN: active or merged)
    undated: np.ndarray  # positions of archived memories without a readable archived_at: dated now
    deletable_at: np.ndarray  # epoch second each unprotected memory below the delete line may go (NaN: none)
    awaiting: np.ndarray  # positions of archived memories below the delete line within the dwell, soonest first


def run(ctx: TaskContext, dry_run: bool) -> dict[str, Any]:
    settings = ctx.settings
    completed = 0 if dry_run else ctx.lifecycle.complete_pending(ctx.now)
    lookup, fallback = lookup_for(ctx, "forget")
    policy = policy_of(settings)
    read, kept_ids, kept_due = _read(ctx, lookup)
    inputs = _counted(ctx, policy, read)
    count = len(inputs.scoring) + kept_ids.size
    ctx.progress(0, count)
    judged = judge(ctx, policy, inputs)
    limit = settings.consolidation_report_limit
    # Every decision is listed (the engine keeps the lists to be paged, the run record their first `limit`), those
    # first ones with their texts, read before anything is deleted; a page of the report reads the others' texts.
    listed = {"decisions": _public(ctx, judged, judged.acting, limit),
              "protections": _public(ctx, judged, judged.shielded, limit),
              "awaiting_deletion": _public(ctx, judged, _awaiting(policy, judged, ctx.now), limit)}
    purged = 0
    if not dry_run:
        _apply(ctx, judged)
        purged = ctx.lifecycle.purge_expired(ctx.now, settings.consolidation_tombstone_retention_days)
        keep_dues(ctx, "forget", lookup, np.concatenate([kept_ids, inputs.scoring.node_ids]),
                  np.concatenate([kept_due, _due(ctx, policy, inputs, judged)]))
    ctx.progress(count, count)
    awaiting = int(judged.awaiting.size)
    return {
        **fell_back(fallback),
        **_switch(policy),
        "memories_processed": count,
        "archived": len(judged.to_archive),
        "deleted": len(judged.to_delete),
        "deleted_with_canonical": judged.leaving,
        "protected": len(judged.shielded),
        "awaiting_deletion_total": awaiting,
        "kept": max(0, count - len(judged.acting) - len(judged.shielded) - awaiting),
        "interrupted_deletions_completed": completed,
        "tombstones_purged": purged,
        "decisions": listed["decisions"], "decisions_total": len(judged.acting),
        "protections": listed["protections"], "protections_total": len(judged.shielded),
        "awaiting_deletion": listed["awaiting_deletion"],
    }


def _switch(policy: ForgetPolicy) -> dict[str, Any]:
    """Whether forgetting is on, and with what dwell; when off, a note that says so (a report of only "kept N"
    reads as if nothing were below a line)."""
    switch = {"forgetting_enabled": policy.enabled, "delete_after_archived_days": policy.delete_after_archived_days}
    if not policy.enabled:
        switch["forgetting_note"] = ("forgetting is off: CONSOLIDATION_ARCHIVE_THRESHOLD and "
                                     "CONSOLIDATION_DELETE_THRESHOLD are both 0, so nothing is archived or deleted; "
                                     "set them to turn it on")
    return switch


def prejudged(ctx: TaskContext, inputs: ScoringInputs, merged: np.ndarray) -> Prejudged:
    """Forget's judgement of decay's read (tasks/handoff.py): the memories decay scores that forget may act on
    within HANDOFF_HOURS (below a line with no relationship counted, as _counted reads them, or merged), to be
    read again, and for the others the time their relevance falls below the line: no later than the due time a
    read of their protections would give (rules.forget_due), so at worst an incremental pass reads one early."""
    policy = policy_of(ctx.settings)
    uncounted = replace(inputs, relationship_counts=np.zeros(len(inputs)))
    line = np.full(len(inputs), max(policy.archive_threshold, policy.delete_threshold))
    until = ctx.now + timedelta(hours=HANDOFF_HOURS)
    # Relevance only falls while nothing else changes: below the line by `until`, or below it now.
    asked = (current_relevance(uncounted, until) < line) | merged
    due = relevance_due(uncounted, ctx.now, line)
    return Prejudged(inputs.node_ids[~asked], due[~asked], inputs.node_ids[asked], ctx.change_counter, ctx.now, until)


def _read(ctx: TaskContext, lookup: Lookup | None) -> tuple[ForgetInputs, np.ndarray, np.ndarray]:
    """The memories this pass judges, and the node ids and due times of those judged from decay's read in the
    same run (tasks/handoff.py) and not read again: a full pass reads every memory, or what that judgement
    left (every memory decay does not score, those it may act on, and those changed, touched or used since)."""
    earlier = ctx.handoff.take(ctx.now) if lookup is None and ctx.handoff is not None else None
    if earlier is None or not worth_seeking(earlier.asked.size, earlier.asked.size + earlier.node_ids.size):
        return ctx.graph.forget_inputs(lookup), np.zeros(0, np.int64), np.zeros(0)
    again = earlier.lookup()
    touched = ctx.graph.touched_since(again.since)  # before the read: a later touch is in what it reads
    inputs = ctx.graph.forget_inputs_beside_decay(again, ctx.settings.consolidation_decay_importance_threshold)
    return (inputs, *earlier.besides(np.concatenate([touched, inputs.scoring.node_ids])))


def _counted(ctx: TaskContext, policy: ForgetPolicy, inputs: ForgetInputs) -> ForgetInputs:
    """The inputs with the relationship counts of the memories they can matter for: those whose relevance without
    any relationship is below a line, and those whose stored score forget keeps (_scored_by_forget). Relevance
    only grows with relationships, so for the others a count of 0 changes no decision; it only makes their due
    (_due) early, and the pass that reads them then reads their counts if they matter by then."""
    lowest = current_relevance(inputs.scoring, ctx.now)
    line = max(policy.archive_threshold, policy.delete_threshold)
    rows = np.flatnonzero((lowest < line) | _scored_by_forget(ctx, inputs, inputs.archived))
    if rows.size:
        scoring = inputs.scoring
        scoring.relationship_counts[rows] = ctx.graph.relationship_counts(scoring.node_ids[rows],
                                                                          [scoring.ids[i] for i in rows])
    return inputs


def judge(ctx: TaskContext, policy: ForgetPolicy, inputs: ForgetInputs) -> Judgement:
    """The decisions on these memories now. Each is judged by its relevance now, which is written wherever the
    memory is archived or deleted now, or its stored score is stale and decay does not keep it (_scored_by_forget),
    so a decision's relevance is what GET /memory shows (capped, scoring.as_stored, once the memory is archived
    or otherwise no longer current: the decision itself reads the uncapped relevance)."""
    scoring = inputs.scoring
    relevance = current_relevance(scoring, ctx.now)
    # A restore starts a fresh grace period: the age that protects a memory counts from the later of the two.
    grace_from = np.fmax(scoring.created, inputs.restored)
    archived_since, undated = _archived_since(inputs, ctx.now.timestamp())
    decisions = forget_decisions(
        policy, scoring.ids, relevance, inputs.archived, days_between(grace_from, ctx.now),
        scoring.importance, inputs.types, inputs.protected, inputs.protected_reasons,
        merged=inputs.merged, days_held=(inputs.held_until - ctx.now.timestamp()) / SECONDS_PER_DAY,
        days_archived=days_between(archived_since, ctx.now),
    )
    acting = [d for d in decisions if d.action != "protect"]
    at = {memory_id: i for i, memory_id in enumerate(scoring.ids)}
    archiving = np.zeros(len(scoring), bool)
    archiving[[at[d.memory_id] for d in acting if d.action == "archive"]] = True
    stored = as_stored(relevance, scoring.current & ~archiving)
    stale = changed(scoring.relevance, stored, ctx.settings.consolidation_score_epsilon) & \
        _scored_by_forget(ctx, inputs, inputs.archived)
    shown = np.where(stale, stored, scoring.relevance)
    shielded = [replace(d, relevance_score=float(shown[at[d.memory_id]])) for d in decisions if d.action == "protect"]
    deleted = [d.memory_id for d in acting if d.action == "delete"]
    # A merged duplicate is out of recall already: it leaves with its canonical, restorable as long as it is.
    leaving = [ForgetDecision(duplicate, "delete", f"merged into {canonical}, which is deleted: leaves with it",
                              float("nan"))
               for duplicate, canonical in ctx.hygiene.merged_into_any(deleted).items()]
    acted = np.zeros(len(scoring), bool)
    acted[[at[d.memory_id] for d in acting]] = True
    rescored = np.flatnonzero(stale | acted) if policy.enabled else np.zeros(0, np.int64)
    shielding = np.zeros(len(scoring), bool)
    shielding[[at[d.memory_id] for d in shielded]] = True
    archived_since = np.where(archiving, ctx.now.timestamp(), archived_since)
    deletable_at = _deletable(policy, relevance, archived_since, ~inputs.merged & ~shielding, ctx.now.timestamp())
    # Below the delete line, archived (before this pass) and neither protected nor deleted now: the dwell.
    waiting = np.flatnonzero(np.isfinite(deletable_at) & inputs.archived & ~acted)
    return Judgement(
        acting=acting + leaving, shielded=shielded,
        to_archive={d.memory_id: d.reason for d in acting if d.action == "archive"},
        to_delete={d.memory_id: d.reason for d in acting + leaving if d.action == "delete"},
        leaving=len(leaving), rescored=rescored, relevance=relevance, stored=stored, grace_from=grace_from,
        scoring=scoring, position=at, archived_since=archived_since,
        undated=np.flatnonzero(undated & ~acted) if policy.enabled else np.zeros(0, np.int64),
        deletable_at=deletable_at, awaiting=waiting[np.argsort(deletable_at[waiting], kind="stable")])


def _deletable(policy: ForgetPolicy, relevance: np.ndarray, archived_since: np.ndarray, judged_alone: np.ndarray,
               now: float) -> np.ndarray:
    """The epoch second from which each memory below the delete line, unprotected and judged on its own score
    (`judged_alone`), may be deleted (NaN for the others): its archive time plus the dwell, or now for an active
    one (without a dwell, deleted at once)."""
    since = np.where(np.isnan(archived_since), now, archived_since)
    return np.where((relevance < policy.delete_threshold) & judged_alone, deletable_from(policy, since), np.nan)


def _archived_since(inputs, now: float) -> tuple[np.ndarray, np.ndarray]:
    """The epoch second each archived memory was archived (NaN: active or merged, whose own score decides
    nothing), and which carry no readable archived_at: their dwell counts from now, the time forget found them
    archived (a real run records it), so none is deleted before it was seen archived for the whole dwell."""
    archived = inputs.archived & ~inputs.merged
    undated = archived & np.isnan(inputs.archived_at)
    return np.where(archived, np.where(undated, now, inputs.archived_at), np.nan), undated


def _apply(ctx: TaskContext, judged: Judgement) -> None:
    rows, scoring = judged.rescored, judged.scoring
    if rows.size:  # the score shown is the score used
        ids = [scoring.ids[i] for i in rows]
        ctx.vectors.set_relevance(ids, judged.stored[rows])
        ctx.graph.write_scores(scoring.node_ids[rows], ids, judged.stored[rows])
    if judged.to_archive:
        ctx.graph.archive(list(judged.to_archive), to_iso(ctx.now), judged.to_archive)
        ctx.vectors.set_archived(list(judged.to_archive), True)
    if judged.undated.size:
        ctx.graph.date_archives(scoring.node_ids[judged.undated], [scoring.ids[i] for i in judged.undated],
                                to_iso(ctx.now))
    ctx.lifecycle.delete(judged.to_delete, ctx.now)


def _awaiting(policy: ForgetPolicy, judged: Judgement, now) -> list[ForgetDecision]:
    """The archived memories waiting out the dwell before their deletion, soonest first."""
    rows = judged.awaiting
    days = days_between(judged.archived_since[rows], now)
    return [ForgetDecision(
        judged.scoring.ids[i], "await",
        f"relevance {judged.relevance[i]:.4f} < delete threshold {policy.delete_threshold}, archived "
        f"{archived:.1f} of the {policy.delete_after_archived_days:g} days before it may be deleted",
        float(judged.relevance[i])) for i, archived in zip(rows.tolist(), days.tolist())]


def _public(ctx: TaskContext, judged: Judgement, decisions: list[ForgetDecision],
            with_text: int) -> list[dict[str, Any]]:
    """Each decision as a report shows it: the first `with_text` with the start of the memory's text (at a million
    decisions, reading every text would take longer than the pass), the relevance it was judged by
    (null for a duplicate leaving with its canonical: its own score decided nothing) and, below the delete line
    and unprotected, when it may be deleted (`deletable_at`: its archive time, or now if archived now, plus
    the dwell)."""
    texts = ctx.graph.memory_contents([d.memory_id for d in decisions[:with_text]])
    deletable = _deletable_texts(judged, decisions)
    return [{"memory_id": d.memory_id, "action": d.action, "reason": d.reason,
             "relevance": None if np.isnan(d.relevance_score) else graph_float(d.relevance_score),
             "deletable_at": deletable[i],
             **({"content": (texts.get(d.memory_id) or "")[:DECISION_TEXT_CHARS]} if i < with_text else {})}
            for i, d in enumerate(decisions)]


def _deletable_texts(judged: Judgement, decisions: list[ForgetDecision]) -> list[str | None]:
    """Each decision's deletable_at as the report spells it (None: not below the delete line, protected, or a
    duplicate leaving with its canonical, which may not have been read)."""
    rows = np.fromiter((judged.position.get(d.memory_id, -1) for d in decisions), np.int64, len(decisions))
    moments = np.full(rows.size, np.nan)
    moments[rows >= 0] = judged.deletable_at[rows[rows >= 0]]
    return iso_texts(moments)


def _scored_by_forget(ctx: TaskContext, inputs, archived: np.ndarray) -> np.ndarray:
    """The memories whose score decay does not keep current, forget does: archived ones, and those under
    decay's importance threshold (a merged memory's score decides nothing)."""
    eager = ctx.settings.consolidation_decay_importance_threshold
    importance = np.nan_to_num(inputs.scoring.importance, nan=DEFAULT_IMPORTANCE)
    unscored = archived | (importance < eager) if eager is not None else archived
    return unscored & ~inputs.merged


def _due(ctx: TaskContext, policy: ForgetPolicy, inputs, judged: Judgement) -> np.ndarray:
    """rules.forget_due for each memory read, as it is after this pass: the threshold that applies is the
    archive one until it is archived (the higher one, if the delete threshold is set above it), then the delete
    one, once the dwell since it was archived is over; a memory deleted now is never due. A memory whose score
    only forget keeps current (archived, or under decay's importance threshold) is due too when its stored score
    goes stale."""
    scoring, now = inputs.scoring, ctx.now
    archived = inputs.archived | _marked(judged, judged.to_archive)
    threshold = np.where(archived, policy.delete_threshold, max(policy.archive_threshold, policy.delete_threshold))
    due = forget_due(policy, relevance_due(scoring, now, threshold), judged.grace_from, scoring.importance,
                     inputs.types, inputs.protected, inputs.held_until, judged.archived_since)
    if policy.enabled:
        stored = scoring.relevance.copy()
        stored[judged.rescored] = judged.stored[judged.rescored]
        epsilon = ctx.settings.consolidation_score_epsilon
        due = np.where(_scored_by_forget(ctx, inputs, archived),
                       np.fmin(due, relevance_due(scoring, now, stored - epsilon)), due)
    gone = _marked(judged, judged.to_delete)
    return np.where(gone | inputs.merged, np.inf, due)


def _marked(judged: Judgement, chosen: Collection[str]) -> np.ndarray:
    """Which of the memories judged are among `chosen` (ids; one not judged, such as a duplicate leaving with
    its canonical from outside a scope's run, is left out)."""
    marked = np.zeros(len(judged.scoring), bool)
    marked[[judged.position[i] for i in chosen if i in judged.position]] = True
    return marked
