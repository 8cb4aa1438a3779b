"""Memory hygiene: merge memories stating one fact, and mark which newer memory supersedes (or, with no clear
order, contradicts) an older one. The rules are in hygiene/; this module reads, decides and writes."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from functools import partial
from typing import Any

import numpy as np

from ..hygiene.candidate import Candidate
from ..hygiene.changes import Contradiction, Supersession, changes_over_time, simultaneous_conflicts
from ..hygiene.facts import read_fact
from ..hygiene.judge import BUILT_IN_THRESHOLDS, CLIENT_THRESHOLDS, UNCALIBRATED_THRESHOLDS, Thresholds
from ..hygiene.merges import Judged, Merge, PairJudge, duplicate_groups, exact_cosine, fact_ids, with_same_facts
from ..hygiene.replacement import PROPOSED, proposed, shortfall
from ..hygiene.model_judge import REPLACES, SAME_FACT, GreyPair, Question, model_judge_from, pair_key
from ..hygiene.terms import TERMS_VERSION, stored_terms, terms_stamp
from ..hygiene.updates import Settled, Vectors, plain_updates, statement_groups, subjects_concerned
from ..lifecycle.merging import merge
from ..similarity import Pairs, normalized
from ..stores.hygiene import HygieneInputs
from ..stores.proposals import SUPERSESSION, ProposalStore
from ..stores.verdicts import VerdictCache
from ..timeutil import to_iso
from .context import TaskContext, positions_in

# What one run may write: contradictions per memory (earlier runs' counted) and in all; the rest are counted.
CONTRADICTIONS_PER_MEMORY = 3
CONTRADICTIONS_PER_RUN = 1000
# An incremental pass relies on the terms stored by earlier runs: a new version of them needs a full pass.
INCREMENTAL_VERSION = TERMS_VERSION
# Shared by every memory with no distinct_from: an empty frozenset is not a singleton, and a million of them
# took 216 MB.
NONE_APART: frozenset[str] = frozenset()


def run(ctx: TaskContext, dry_run: bool) -> dict[str, Any]:
    completed = [] if dry_run else ctx.hygiene.complete_pending()
    inputs = ctx.hygiene.inputs().holding(to_iso(ctx.now))
    ids, matrix = ctx.vectors.vectors(inputs.ids)
    ctx.progress(0, len(ids))
    unit = normalized(matrix)
    # Work in FalkorDB or numpy / faiss (which release the GIL) overlaps the Python: the neighbour graph with
    # reading every text, then storing the fact terms and writing the merges with the rules that follow them.
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="dedup-background") as background:
        at = positions_in(inputs.ids, ids)
        graph = background.submit(ctx.neighbours.pairs, ids, unit, ctx.settings.consolidation_dedup_similarity,
                                  ctx.progress, [inputs.scopes[i] for i in at])
        candidates = candidates_of(inputs, at, ids)
        facts = fact_ids(candidates)
        # The graph's own pairs are let go once joined: at a million memories each copy is a quarter gigabyte.
        pairs = with_same_facts(graph.result(), candidates, facts, unit, ctx.settings.consolidation_dedup_similarity)
        del graph
        writes = [] if dry_run else [background.submit(
            store_terms, ctx, candidates, inputs.changes[at], [inputs.stamps[i] for i in at]),
            background.submit(ctx.hygiene.sweep_orphan_terms)]
        del inputs, at
        judge = pair_judge(ctx.settings)
        judged, asked, judge = find_merges(ctx, partial(judge_all, ctx, candidates, pairs, unit), judge, dry_run)
        merges = judged.merges
        similar, apart_total = len(pairs.rows), len(judged.kept_apart.rows)
        # Only the report's sample of these is shown, and paged: they are not decisions, at a million memories
        # each list of pairs is 250 MB, and wording each one's reason would take longer than the pass.
        kept_apart = judged.kept_apart.first(ctx.settings.consolidation_report_limit, len(candidates))
        del pairs, judged
        if not dry_run:
            writes.append(background.submit(write_merges, ctx, merges))
        active = after_merges(candidates, merges)
        vectors = Vectors(unit, {c.id: index for index, c in enumerate(candidates)})
        supersessions, contradictions = changes_of(active, vectors)
        supersessions, proposals, asked_plain = with_plain_updates(
            ctx, active, statement_groups(active, subjects_concerned(active)), vectors, supersessions, contradictions,
            restated_times(candidates, merges), dry_run)
        for written in writes:
            written.result()  # raises what the write raised; the merges are in before links are read
        supersessions, contradictions = new_links(ctx, supersessions, contradictions)
        contradictions, left_out = bounded(ctx, contradictions)
        if not dry_run:
            write_links(ctx, supersessions, contradictions, {c.id: c.created for c in candidates})
        proposals = propose(ctx, proposals, dry_run)
    ctx.progress(len(ids), len(ids))
    report = report_of(ctx, len(ids), similar, merges, supersessions, contradictions, (kept_apart, apart_total),
                       candidates, len(completed), judge)
    return {**report, **asked, **asked_plain, **proposals, "contradictions_left_out": left_out}


def pair_judge(settings) -> PairJudge:
    """The judge of a run: the hashing embedder's thresholds for two memories it embedded, a sentence model's
    (calibrated defaults, or the deployment's own settings) for the others; CONSOLIDATION_DEDUP_VECTORS may say
    that every vector is one or the other."""
    client = client_thresholds(settings)
    space = settings.consolidation_dedup_vectors
    if space == "auto":
        return PairJudge(client, BUILT_IN_THRESHOLDS)
    chosen = BUILT_IN_THRESHOLDS if space == "built-in" else client
    return PairJudge(chosen, chosen)


# The providers whose texts' vectors are all-MiniLM-L6-v2's (builtin), or which leave client vectors taken to be
# (hash): the calibrated thresholds hold.
CALIBRATED_PROVIDERS = ("builtin", "hash")


def client_thresholds(settings) -> Thresholds:
    """The calibrated thresholds for a client model, with whichever ones the settings give instead."""
    given = {"same_fact": settings.consolidation_dedup_same_fact_similarity,
             "per_added_term": settings.consolidation_dedup_similarity_per_added_term,
             "per_added_share": settings.consolidation_dedup_similarity_per_added_share,
             "swapped": settings.consolidation_dedup_swapped_similarity}
    # The calibration holds for all-MiniLM-L6-v2; under another provider's model the conservative line holds
    # until the deployment calibrates its own.
    calibrated = settings.chosen_embedding_provider in CALIBRATED_PROVIDERS
    return replace(CLIENT_THRESHOLDS if calibrated else UNCALIBRATED_THRESHOLDS,
                   **{name: value for name, value in given.items() if value is not None})


def judge_all(ctx: TaskContext, candidates: list[Candidate], pairs: Pairs, unit: np.ndarray,
              judge: PairJudge) -> Judged:
    """duplicate_groups over every candidate and similar pair of a full pass."""
    return duplicate_groups(candidates, *pairs, judge, similarity=lambda a, b: exact_cosine(unit, a, b),
                            connections=ctx.hygiene.connections)


def find_merges(ctx: TaskContext, judged_by: Callable[[PairJudge], Judged], judge: PairJudge,
                dry_run: bool) -> tuple[Judged, dict[str, Any], PairJudge]:
    """The merges `judged_by` finds with this judge, (when a model judge is set up and there are grey pairs)
    what the model was asked, and the judge that decided: the model is asked once, and its verdicts then decide
    those pairs."""
    judged = judged_by(judge)
    asked = ask_model(ctx, judged.grey, SAME_FACT, "model_judge", dry_run)
    if asked is None:
        return judged, {}, judge
    settled, report = asked
    if settled.verdicts:
        judge = replace(judge, settled=settled.verdicts, settled_key=settled.key)
        judged = judged_by(judge)
    return judged, report, judge


def ask_model(ctx: TaskContext, grey: list[GreyPair], question: Question, name: str,
              dry_run: bool) -> tuple[Settled, dict[str, Any]] | None:
    """The model judge's verdicts on these grey pairs (by the key of each pair of texts) and what it was asked,
    for the report under `name`; None when there are none or no model is set up. A dry run lists the pairs it
    would ask (`<name>_would_ask`)."""
    model = model_judge_from(ctx.settings, VerdictCache(ctx.graph.falkor), question=question) if grey else None
    if model is None:
        return None
    outcome = model.settle(grey, dry_run=dry_run)
    report = {name: {**outcome.counts(), "model": model.model},
              f"{name}_would_ask": [{"first": p.first, "second": p.second, "similarity": round(p.similarity, 6)}
                                    for p in outcome.would_ask]}
    return Settled(outcome.verdicts, lambda first, second: pair_key(model.model, first, second, question)), report


def changes_of(active: list[Candidate], vectors: Vectors) -> tuple[list[Supersession], list[Contradiction]]:
    """changes.py's supersessions and contradictions among the memories the merges leave (pure: links an earlier
    run made are still among them, see new_links)."""
    supersessions, contradictions = changes_over_time(active, vectors)
    return supersessions, contradictions + simultaneous_conflicts(active, vectors)


def with_plain_updates(ctx: TaskContext, active: Sequence[Candidate], groups: dict, vectors: Vectors,
                       supersessions: list[Supersession], contradictions: list[Contradiction],
                       restated: dict[str, float], dry_run: bool) -> tuple[list[Supersession], list[Supersession], dict[str, Any]]:
    """changes.py's supersessions and those stated in plain words (hygiene/updates.py) among the statements of
    `groups`, which follow the supersessions already written into or out of them; grey pairs go to the model
    judge when one is set up (asked once, then the rules run again with its verdicts). Returns the supersessions
    to apply, those proposed for review (their evidence falls short: hygiene/replacement.py) and what the model
    was asked, for the report."""
    supersessions, proposals = weighed_changes(supersessions, active)
    members = sorted({s.id for group in groups.values() for s in group})
    decided = [(s.newer, s.older) for s in supersessions] + ctx.hygiene.supersessions_among(members)
    found = plain_updates(groups, vectors, decided, restated)
    asked = ask_model(ctx, found.grey, REPLACES, "supersession_model_judge", dry_run)
    report = {}
    if asked is not None:
        settled, report = asked
        if settled.verdicts:
            found = plain_updates(groups, vectors, decided, restated, settled)
    proposals = proposals + apart_from(found.proposals, contradictions)
    confirmed, proposals, asked_proposals = settled_proposals(ctx, proposals, active, dry_run)
    return (supersessions + apart_from(found.supersessions, contradictions) + confirmed, proposals,
            {**report, **asked_proposals})


def settled_proposals(ctx: TaskContext, proposals: list[Supersession], active: Sequence[Candidate],
                      dry_run: bool) -> tuple[list[Supersession], list[Supersession], dict[str, Any]]:
    """The proposals the model judge settles, when one is set up: the ones it says replace the older statement
    are applied (the reason says who decided), the ones it says do not are dropped, and what it cannot answer
    (no verdict, a failure, a dry run) stays for review. Returns (applied, still proposed, the report's part)."""
    if not proposals or not ctx.settings.consolidation_dedup_model_judge:
        return [], proposals, {}  # the usual case: no texts looked up at all
    wanted = {i for p in proposals for i in (p.older, p.newer)}
    texts = {c.id: c.content for c in active if c.id in wanted}
    asked = [p for p in proposals if p.older in texts and p.newer in texts]
    grey = [GreyPair(texts[p.older], texts[p.newer], p.confidence, False) for p in asked]
    settled = ask_model(ctx, grey, REPLACES, "proposal_model_judge", dry_run) if grey else None
    if settled is None:
        return [], proposals, {}
    verdicts, report = settled
    said = {id(p): verdicts.get(texts[p.older], texts[p.newer]) for p in asked}
    applied = [replace(p, reason=p.reason.replace(PROPOSED, "; the rules' evidence fell short: ")
                       + "; the model judge said it replaces it") for p in asked if said[id(p)] is True]
    return applied, [p for p in proposals if said.get(id(p)) is None], report


def weighed_changes(supersessions: list[Supersession], active: Sequence[Candidate]
                    ) -> tuple[list[Supersession], list[Supersession]]:
    """changes.py's supersessions (each a change naming the value it replaces) split by what their texts allow
    (hygiene/replacement.py): applied, or proposed for review."""
    wanted = {i for s in supersessions for i in (s.newer, s.older)}
    texts = {c.id: c.content for c in active if c.id in wanted} if wanted else {}
    applied, proposals = [], []
    for found in supersessions:
        why = shortfall(found.rule, texts.get(found.newer, ""), texts.get(found.older, ""), 0) \
            if found.newer in texts and found.older in texts else None
        if why is None:
            applied.append(found)
        elif why:
            proposals.append(proposed(found, why))
    return applied, proposals


def restated_times(candidates: Sequence[Candidate], merges: Sequence[Merge]) -> dict[str, float]:
    """When each canonical's fact was last stated: by itself or by a duplicate this run merges into it."""
    created = {c.id: c.created for c in candidates}
    return {m.into: max(created.get(i, math.nan) for i in (m.into, *m.duplicates)) for m in merges}


def apart_from(supersessions: list[Supersession], contradictions: list[Contradiction]) -> list[Supersession]:
    """The supersessions of pairs the rules do not also call a contradiction (that verdict stands)."""
    contradicted = {frozenset((c.a, c.b)) for c in contradictions}
    return [s for s in supersessions if frozenset((s.newer, s.older)) not in contradicted]


def store_terms(ctx: TaskContext, candidates: list[Candidate], changes: np.ndarray,
                stamps: list[str | None]) -> int:
    """Store the fact terms of each memory whose stored ones were read from another text (or none yet), so an
    incremental run finds it by term (hygiene.stored_terms). `changes` and `stamps` are the candidates' change
    numbers (NaN: unmarked) and the stamps of their stored terms. Returns how many were stored."""
    rows = []
    for candidate, change, stamp in zip(candidates, changes.tolist(), stamps):
        if math.isnan(change) or stamp == terms_stamp(change):
            continue  # unmarked memories are marked by the next run, and stored then
        terms, anchors, least = stored_terms(candidate)
        rows.append({"id": candidate.id, "change": int(change), "terms": terms, "anchors": anchors or None,
                     "least": least, "stamp": terms_stamp(change)})
    ctx.hygiene.write_terms(rows)
    return len(rows)


def candidates_of(inputs: HygieneInputs, at: np.ndarray, ids: Sequence[str] | None = None) -> list[Candidate]:
    """The inputs at these positions, read as facts. `ids`: theirs, as the vector copy holds them (each id and
    text read from a store is a new string; candidates keep the strings held between runs instead, ~180 MB at a
    million memories)."""
    created = inputs.created.tolist()
    apart, merged = inputs.distinct_from, inputs.merged_texts

    def candidate(i: int, memory_id: str) -> Candidate:
        fact = read_fact(inputs.contents[i])
        distinct = apart.get(memory_id)
        return Candidate(memory_id, inputs.types[i], fact, created[i], inputs.connections[i],
                         inputs.access_counts[i], inputs.protected[i], frozenset(distinct) if distinct else NONE_APART,
                         inputs.superseded[i], fact.text, tuple(merged[memory_id]) if memory_id in merged else (),
                         inputs.scopes[i], inputs.built_in[i])

    positions = at.tolist()
    return list(map(candidate, positions, ids if ids is not None else [inputs.ids[i] for i in positions]))


def after_merges(candidates: list[Candidate], merges: list[Merge]) -> list[Candidate]:
    """The memories still active after the merges, each canonical standing for what was merged into it."""
    by_id = {c.id: c for c in candidates}
    gone = {d for m in merges for d in m.duplicates}
    taken = {m.into: tuple(by_id[d].content for d in m.duplicates) for m in merges}
    return [replace(c, merged_texts=c.merged_texts + taken[c.id]) if c.id in taken else c
            for c in candidates if c.id not in gone]


def new_links(ctx: TaskContext, supersessions: list[Supersession],
              contradictions: list[Contradiction]) -> tuple[list[Supersession], list[Contradiction]]:
    """Leave out pairs already linked by an earlier run (a second run changes nothing)."""
    linked = ctx.hygiene.linked_pairs([(s.newer, s.older) for s in supersessions] +
                                      [(c.a, c.b) for c in contradictions])
    superseding = {frozenset((s.newer, s.older)) for s in supersessions}
    taken = linked | superseding  # once: a set rebuilt per contradiction made a rerun quadratic
    return ([s for s in supersessions if frozenset((s.newer, s.older)) not in linked],
            [c for c in contradictions if frozenset((c.a, c.b)) not in taken])


def propose(ctx: TaskContext, proposals: list[Supersession], dry_run: bool) -> dict[str, Any]:
    """The supersessions whose evidence falls short, recorded for review (once: a pair proposed, accepted or
    rejected before is left as it is); the report's part about them."""
    rows = [{"newer": s.newer, "older": s.older, "reason": s.reason, "rule": s.rule} for s in proposals]
    made = 0 if dry_run or not rows else ProposalStore(ctx.graph.falkor).propose(SUPERSESSION, rows, to_iso(ctx.now))
    limit = ctx.settings.consolidation_report_limit
    return {"proposals": rows[:limit], "proposals_total": len(rows), "proposals_new": made}


def bounded(ctx: TaskContext, contradictions: list[Contradiction]) -> tuple[list[Contradiction], int]:
    """The contradictions a run writes: the surest first (then by ids), at most CONTRADICTIONS_PER_MEMORY edges
    on any memory (those earlier runs wrote count) and CONTRADICTIONS_PER_RUN in all; and how many are left
    out. Whatever the rules find, an import of thousands of look-alike notes cannot flood the graph."""
    if not contradictions:
        return [], 0
    edges = Counter(ctx.hygiene.contradiction_counts(sorted({m for c in contradictions for m in (c.a, c.b)})))
    kept = []
    for found in sorted(contradictions, key=lambda c: (-c.confidence, c.a, c.b)):
        if len(kept) < CONTRADICTIONS_PER_RUN and edges[found.a] < CONTRADICTIONS_PER_MEMORY and \
                edges[found.b] < CONTRADICTIONS_PER_MEMORY:
            kept.append(found)
            edges[found.a] += 1
            edges[found.b] += 1
    return kept, len(contradictions) - len(kept)


def write_merges(ctx: TaskContext, merges: list[Merge]) -> None:
    if merges:
        archived = merge(ctx.hygiene, merges, to_iso(ctx.now))
        ctx.vectors.set_archived(archived, True, state="merged")
        ctx.lifecycle.rescore(archived, ctx.now)  # capped: no longer current


def write_links(ctx: TaskContext, supersessions: list[Supersession], contradictions: list[Contradiction],
                created: dict[str, float]) -> None:
    now = to_iso(ctx.now)
    # The newest change of a memory is written last, so its superseded_by names the latest word on it.
    ordered = sorted(supersessions, key=lambda s: _sortable(created.get(s.newer, math.nan)))
    ctx.hygiene.supersede([{"newer": s.newer, "older": s.older, "confidence": s.confidence, "reason": s.reason}
                           for s in ordered], now)
    olders = sorted({s.older for s in supersessions})
    # What was merged into an older memory is marked superseded with it (HygieneStore.supersede).
    superseded = olders + list(ctx.hygiene.merged_into_any(olders))
    ctx.vectors.set_superseded(superseded, True)
    ctx.lifecycle.mirror_validity(olders)  # the t_invalid supersede set, where AutoMem's recall reads it
    ctx.lifecycle.rescore(superseded, ctx.now)  # capped: no longer current
    ctx.hygiene.contradict([{"a": c.a, "b": c.b, "confidence": c.confidence, "reason": c.reason}
                            for c in contradictions], now)


def _sortable(epoch: float) -> float:
    return -math.inf if math.isnan(epoch) else epoch


def report_of(ctx, processed, similar, merges, supersessions, contradictions, kept_apart: tuple[Pairs, int],
              candidates, completed, judge: PairJudge) -> dict[str, Any]:
    """The task's report; `kept_apart`: the look-alike pairs (or a sample holding the report's first ones) and
    how many there are."""
    limit = ctx.settings.consolidation_report_limit
    apart, apart_total = kept_apart
    return {
        "memories_processed": processed,
        "similar_pairs": similar,
        "merged": sum(len(m.duplicates) for m in merges),
        "merges": [{"into": m.into, "duplicates": list(m.duplicates), "similarity": m.similarity,
                    "reason": m.reason} for m in merges],
        "supersessions": [{"newer": s.newer, "older": s.older, "confidence": s.confidence, "reason": s.reason}
                          for s in supersessions],
        "contradictions": [{"a": c.a, "b": c.b, "confidence": c.confidence, "reason": c.reason}
                           for c in contradictions],
        "kept_apart": [_apart(candidates, int(a), int(b), float(similarity), judge) for a, b, similarity in
                       zip(*apart.first(limit, len(candidates)))],
        "judge": judge.describe(),
        "kept_apart_total": int(apart_total),
        "interrupted_merges_completed": completed,
    }


def _apart(candidates: list[Candidate], a: int, b: int, similarity: float, judge: PairJudge) -> dict[str, Any]:
    """A pair of one type with similar vectors that the judge kept apart, and why."""
    first, second = candidates[a], candidates[b]
    return {"a": first.id, "b": second.id, "similarity": round(similarity, 6),
            "reason": judge.verdict(first, second, similarity).reason}
