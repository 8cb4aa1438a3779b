"""The pure rules of incremental runs: when a pass is full, how pools are looked up by term, and that the
cluster region a change touches, recomputed alone, gives the clusters of the whole graph."""

from __future__ import annotations

import itertools
from dataclasses import replace
from datetime import timedelta

import numpy as np
import pytest
from hypothesis import given
from hypothesis import settings as hyp_settings
from hypothesis import strategies as st

from consolidation.clusters import cluster_region, region_clusters, touched, within_each
from consolidation.hygiene.facts import read_fact
from consolidation.hygiene.candidate import Candidate
from consolidation.hygiene.changes import ORDER_TOLERANCE_SECONDS, exclusive, match_change, may_change, \
    pool_query, simultaneous_conflicts
from consolidation.hygiene.terms import stored_terms
from consolidation.passes import plan_pass
from consolidation.similarity import BallIndex, Partition, clusters, normalized, pairs_against, similar_pairs_exact
from consolidation.stores.graph import MetaPatternRecord
from consolidation.tasks.dedup_incremental import drive_terms
from tests.conftest import NOW

WEEK = 7 * 86400


def control(**fields):
    return {"watermark_dedup": 41, "rules_dedup": 7, "last_full_dedup": (NOW - timedelta(days=2)).isoformat(),
            **fields}


@pytest.mark.parametrize("task, state, options, expected", [
    ("dedup", control(), {}, 41),
    ("decay", control(), {}, None),  # never incremental
    ("dedup", control(), {"requested_full": True}, None),
    ("dedup", control(), {"scoped": True}, None),
    ("dedup", control(), {"interval": 0}, None),
    ("dedup", control(watermark_dedup=None), {}, None),
    ("dedup", control(rules_dedup=6), {}, None),  # taken under other rules or settings
    ("dedup", control(last_full_dedup=None), {}, None),
    ("dedup", control(last_full_dedup=(NOW - timedelta(days=7)).isoformat()), {}, None),  # exactly the interval
    ("dedup", control(last_full_dedup=(NOW - timedelta(days=6, hours=23)).isoformat()), {}, 41),
    ("dedup", control(watermark_dedup=True), {}, None),  # not a number
])
def test_a_pass_is_full_unless_a_trusted_recent_watermark_allows_less(task, state, options, expected):
    plan = plan_pass(task, state, NOW, options.get("interval", WEEK), 7, options.get("requested_full", False),
                     options.get("scoped", False))
    assert plan.since == expected
    assert plan.name == ("full" if expected is None else "incremental") and plan.reason


def test_the_rarest_terms_reach_every_memory_holding_enough_of_them():
    rng = np.random.default_rng(3)
    vocabulary = [f"t{i}" for i in range(8)]
    counts = {t: int(c) for t, c in zip(vocabulary, rng.integers(0, 100, len(vocabulary)))}
    for size in range(1, 6):
        for terms in itertools.combinations(vocabulary, size):
            for need in range(1, size + 1):
                drive = set(drive_terms(list(terms), need, counts))
                assert len(drive) == size - need + 1
                holdings = (itertools.combinations(terms, k) for k in range(need, size + 1))
                for held in itertools.chain.from_iterable(holdings):
                    assert drive & set(held), (terms, need, held)


CHANGES = ["The deploy window moved from Tuesday to Thursday", "Deploys now happen on Friday",
           "We switched from PostgreSQL to MySQL for billing", "The standup no longer happens on Monday",
           "Backups now run nightly instead of weekly", "Replaced Jenkins with GitHub Actions"]
STATEMENTS = ["The deploy window is Tuesday", "Deploys happen on Monday", "Billing uses PostgreSQL",
              "The standup happens on Monday", "Backups run weekly", "We build with Jenkins", "Deploys are on Tuesday",
              "Jenkins runs our CI builds",
              "The staging deploy window is Tuesday", "Billing runs on PostgreSQL in production"]


def candidate(text: str, *merged: str) -> Candidate:
    return Candidate(text, "Context", read_fact(text), 0.0, 0, 0, content=text, merged_texts=merged)


@pytest.mark.parametrize("announcement", CHANGES)
def test_a_statement_a_change_matches_answers_its_pool_query(announcement):
    """pool_query only narrows what match_change would look at: nothing it matches is left out, whatever else
    the statements say (qualifiers, extra words)."""
    change = read_fact(announcement).change
    assert change is not None
    query = pool_query(change)
    matched = 0
    for text in STATEMENTS + [f"{t}, as the team agreed" for t in STATEMENTS]:
        statement = read_fact(text).statement
        if match_change(change, statement, text, announcement) is not None:
            matched += 1
            stored = stored_terms(candidate(text))
            assert may_change(change, frozenset(stored.terms), stored.least), text
            assert query.required <= statement and len(query.counted & statement) >= query.need
    assert matched  # the case is not trivial


def test_stored_terms_cover_every_text_a_memory_stands_for():
    merged = candidate("Use Redis for sessions", "The standup moved from Monday to Wednesday")
    terms, anchors, least = stored_terms(merged)
    assert {"redi", "session", "standup", "wednesday"} <= set(terms)
    assert anchors == ["monday"]  # a change naming its old value is found by it
    assert least == 2  # the fewest words of its statements: "standup wednesday"


# --- clusters: the region a change touches, recomputed alone, gives the whole graph's clusters ---------------


def planted(rng, topics=6, size=8, loners=20, dim=48):
    centres = normalized(rng.standard_normal((topics, dim)))
    # A spread per member, so pairwise cosines straddle the threshold: clusters with loose ends.
    members = [normalized(c + rng.uniform(0.3, 0.7, (size, 1)) * rng.standard_normal((size, dim)) / np.sqrt(dim))
               for c in centres]
    return np.concatenate(members + [normalized(rng.standard_normal((loners, dim)))])


def full_clusters(unit, threshold, min_size):
    found = similar_pairs_exact(unit, threshold)
    return {frozenset(g.tolist()) for g in clusters(unit.shape[0], found.rows, found.cols, min_size)}


@pytest.mark.parametrize("seed", range(6))
def test_the_touched_region_gives_the_clusters_a_full_pass_finds(seed):
    rng = np.random.default_rng(seed)
    threshold, min_size = 0.75, 4
    before = planted(rng)
    old = full_clusters(before, threshold, min_size)
    ids = [f"m{i}" for i in range(before.shape[0])]
    records = [MetaPatternRecord(f"p{k}", frozenset(ids[i] for i in group), len(group))
               for k, group in enumerate(sorted(old, key=min))]
    # Changes: new memories near existing ones (some bridging), some removed, one moved elsewhere.
    added = normalized(before[rng.choice(before.shape[0], 6)] + 0.5 * rng.standard_normal((6, before.shape[1])) /
                       np.sqrt(before.shape[1]))
    after = np.concatenate([before, added])
    removed = set(rng.choice(before.shape[0], 5, replace=False).tolist())
    moved = int(rng.integers(before.shape[0]))
    after[moved] = normalized(rng.standard_normal((1, after.shape[1])))[0]
    keep = [i for i in range(after.shape[0]) if i not in removed]
    unit, names = after[keep], [f"m{i}" for i in keep]
    position = {name: p for p, name in enumerate(names)}
    changed = {position[f"m{i}"] for i in list(range(before.shape[0], after.shape[0])) + [moved] if i not in removed}
    entries = touched(records, position, changed, min_size)
    region = cluster_region(sorted(changed), entries, unit.shape[0],
                            lambda p: pairs_against(unit[p], unit, threshold),
                            within_each(lambda p: similar_pairs_exact(unit[p], threshold)), most_searched=unit.shape[0])
    reached = {r.id for r in region.patterns}
    recomputed = {frozenset(g.tolist()) for g in region_clusters(region, min_size)}
    kept = {frozenset(position[m] for m in r.member_ids) for r in records if r.id not in reached}
    assert recomputed | kept == full_clusters(unit, threshold, min_size)
    assert recomputed.isdisjoint(kept)
    assert old and recomputed and kept and region.members.size < unit.shape[0]  # the case is not trivial


@pytest.mark.parametrize("seed", range(3))
def test_searches_find_every_pair_comparing_everything_finds(seed):
    """Grouped (a partition per kind or scope) and pruned (clusters as balls) searches against the plain one."""
    rng = np.random.default_rng(seed)
    unit = planted(rng, topics=8, size=12, loners=40)
    groups = rng.integers(0, 3, unit.shape[0])
    found = similar_pairs_exact(unit, 0.75)
    balls = clusters(unit.shape[0], found.rows, found.cols, 4)
    queries = rng.choice(unit.shape[0], 40, replace=False)

    def pairs(found):
        return set(zip(found.rows.tolist(), found.cols.tolist()))

    everything = pairs_against(unit[queries], unit, 0.75)
    assert everything.rows.size > 40 and balls  # the case is not trivial
    assert pairs(BallIndex(unit, balls).search(unit[queries], 0.75)) == pairs(everything)
    within = {(q, j) for q, j in pairs(everything) if groups[queries[q]] == groups[j]}
    assert pairs(pairs_against(unit[queries], unit, 0.75, groups[queries], Partition(unit, groups))) == within
    assert pairs(BallIndex(unit, balls, groups).search(unit[queries], 0.75, groups[queries])) == within


def _conflicts_by_every_pair(candidates, related):
    """The simultaneous-conflict rule as its definition reads, every two memories compared in timeline order."""
    timed = sorted((c.created, i) for i, c in enumerate(candidates))
    found = []
    for position, (when, i) in enumerate(timed):
        for later, j in timed[position + 1:]:
            a, b = candidates[i], candidates[j]
            if later - when > ORDER_TOLERANCE_SECONDS or a.type != b.type or a.fact.change or b.fact.change:
                continue
            only_a, only_b = a.fact.key - b.fact.key, b.fact.key - a.fact.key
            if len(only_a) == len(only_b) == 1 and "NOT" not in only_a | only_b and a.scope == b.scope \
                    and exclusive(next(iter(only_a)), a.content) and exclusive(next(iter(only_b)), b.content) \
                    and related(a, b):
                found.append(tuple(sorted((a.id, b.id))))
    return found


SAME_MOMENT_TEXTS = ["The office closes at 2 pm", "The office closes at 3 pm", "The office does not close at 3 pm",
                     "The office opens at 3 pm", "The shop closes at 2 pm", "Deploys run on Monday",
                     "Deploys run on Tuesday", "Deploys now run on Friday", "The office closes at 2 pm on Friday"]


@hyp_settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(SAME_MOMENT_TEXTS), st.sampled_from([0.0, 30.0, 59.0, 61.0, 200.0]),
                          st.sampled_from(["Context", "Decision"]), st.sampled_from(["", "u1"])),
                min_size=2, max_size=14),
       st.integers(0, 2**16))
def test_simultaneous_conflicts_found_through_the_key_index_are_those_of_every_pair(rows, unrelated_seed):
    """Through the index of keys without one term, the rule finds exactly the pairs, in the order, a comparison
    of every pair finds."""
    candidates = [replace(candidate(text), id=f"m{k}", type=kind, created=when, scope=scope)
                  for k, (text, when, kind, scope) in enumerate(rows)]

    def related(a, b):  # some pairs unrelated, the same way for both
        return hash((a.id, b.id, unrelated_seed)) % 5 != 0

    expected = _conflicts_by_every_pair(candidates, related)
    assert [(c.a, c.b) for c in simultaneous_conflicts(candidates, related)] == expected


def test_a_lone_plain_statement_among_announcements_is_no_simultaneous_conflict():
    """One entry to file (a one-term key beside changes recorded at the same moment) pairs with nothing."""
    lone = replace(candidate("Deploys"), id="m0", created=0.0)
    changes = [replace(candidate("Deploys now run on Friday"), id=f"m{k}", created=0.0) for k in range(1, 70)]
    assert lone.fact.change is None and len(lone.fact.key) == 1 and changes[0].fact.change is not None
    assert simultaneous_conflicts([lone, *changes], lambda a, b: True) == []
