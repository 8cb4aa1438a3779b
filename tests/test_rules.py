"""The creative association rules at their thresholds, and forgetting's order (archive, then delete after the
dwell) and protections."""

import numpy as np
import pytest

from consolidation.rules import ForgetPolicy, association_for, forget_decisions, forget_due

DAY = 86400.0
FAR_APART = 30 * DAY


@pytest.mark.parametrize("similarity", [0.0, 0.29, 0.5])
def test_two_unrelated_decisions_are_never_called_contradicting(similarity):
    # AutoMem's rule (both Decision, sim < 0.3 -> CONTRADICTS) is gone: it only ever linked unrelated decisions.
    assert association_for("Decision", "Decision", similarity, FAR_APART) is None


@pytest.mark.parametrize("types", [("Insight", "Pattern"), ("Pattern", "Insight")])
@pytest.mark.parametrize("similarity, fires", [(0.51, True), (0.5, False)])
def test_an_insight_explains_a_similar_pattern(types, similarity, fires):
    result = association_for(*types, similarity, FAR_APART)
    assert (result is not None and result.kind == "explains") is fires
    if fires:
        assert result.relation == "DISCOVERED" and result.confidence == 0.7


@pytest.mark.parametrize("similarity, fires", [(0.71, True), (0.7, False)])
def test_different_types_share_a_theme_above_point_seven(similarity, fires):
    result = association_for("Context", "Preference", similarity, FAR_APART)
    assert (result is not None and result.kind == "shares_theme") is fires
    if fires:
        assert result.confidence == pytest.approx(similarity)


def test_same_types_never_share_a_theme():
    assert association_for("Context", "Context", 0.95, FAR_APART) is None


@pytest.mark.parametrize("apart, similarity, fires", [
    (6.9 * DAY, 0.39, True), (-6.9 * DAY, 0.39, True), (7.0 * DAY, 0.39, False), (2 * DAY, 0.4, False),
    (None, 0.1, False),
])
def test_unrelated_memories_of_the_same_week_are_parallel_context(apart, similarity, fires):
    result = association_for("Context", "Context", similarity, apart)
    assert (result is not None and result.kind == "parallel_context") is fires
    if fires:
        assert result.confidence == 0.5


def test_the_first_matching_rule_wins():
    # Two decisions in the same week with low similarity: parallel context, never a contradiction.
    assert association_for("Decision", "Decision", 0.1, DAY).kind == "parallel_context"
    # Insight and Pattern above 0.7: explains (rule 2) before shares_theme (rule 3).
    assert association_for("Insight", "Pattern", 0.9, FAR_APART).kind == "explains"


POLICY = ForgetPolicy(archive_threshold=0.2, delete_threshold=0.05, grace_period_days=90,
                      protected_importance=0.7, protected_types=frozenset({"Decision", "Insight"}))


def decide(relevance, age=200.0, importance=0.3, memory_type="Context", protected=False, archived=False,
           reason=None):
    return forget_decisions(POLICY, ["m"], np.array([relevance]), np.array([archived]), np.array([age]),
                            np.array([importance]), [memory_type], np.array([protected]), [reason])


def test_irrelevant_unprotected_memories_are_archived_then_deleted():
    assert decide(0.1)[0].action == "archive"
    assert "archive threshold 0.2" in decide(0.1)[0].reason
    assert decide(0.01)[0].action == "delete"
    assert decide(0.01, archived=True)[0].action == "delete"


def test_relevant_memories_and_already_archived_ones_above_delete_get_no_decision():
    assert decide(0.5) == []
    assert decide(0.1, archived=True) == []


@pytest.mark.parametrize("kwargs, reason", [
    ({"age": 89.0}, "grace period 90"),
    ({"age": np.nan}, "unknown age"),
    ({"importance": 0.7}, "importance 0.70 >= 0.7"),
    ({"memory_type": "Decision"}, "type Decision is protected"),
    ({"memory_type": "Insight"}, "type Insight is protected"),
    ({"protected": True, "reason": "user pinned it"}, "protected: user pinned it"),
])
def test_each_protection_stops_forgetting_and_says_why(kwargs, reason):
    decision = decide(0.01, **kwargs)[0]
    assert decision.action == "protect"
    assert reason in decision.reason


def test_disabled_thresholds_decide_nothing():
    off = ForgetPolicy(0.0, 0.0, 90, 0.7, frozenset())
    result = forget_decisions(off, ["a"], np.array([0.0]), np.array([False]), np.array([500.0]),
                              np.array([0.0]), ["Context"], np.array([False]), [None])
    assert result == []


# The README's thresholds with the default dwell: a memory below the delete line is archived first.
DWELLING = ForgetPolicy(archive_threshold=0.1, delete_threshold=0.02, grace_period_days=90,
                        protected_importance=0.7, protected_types=frozenset({"Decision", "Insight"}),
                        delete_after_archived_days=30)


def decide_with_dwell(relevance, archived=False, days_archived=np.nan, memory_type="Context"):
    return forget_decisions(DWELLING, ["m"], np.array([relevance]), np.array([archived]), np.array([400.0]),
                            np.array([0.3]), [memory_type], np.array([False]), [None],
                            days_archived=np.array([days_archived]))


def test_with_a_dwell_an_active_memory_below_the_delete_line_is_archived_not_deleted():
    decision = decide_with_dwell(1e-8)[0]
    assert decision.action == "archive"
    assert decision.reason == ("relevance 0.0000 < delete threshold 0.02: archived first, deletable after 30 "
                               "days archived")
    assert decide_with_dwell(0.05)[0].reason == "relevance 0.0500 < archive threshold 0.1"


@pytest.mark.parametrize("days_archived, action", [(0.0, None), (29.99, None), (np.nan, None), (30.0, "delete"),
                                                   (400.0, "delete")])
def test_an_archived_memory_is_deleted_only_after_the_dwell(days_archived, action):
    decisions = decide_with_dwell(1e-8, archived=True, days_archived=days_archived)
    assert [d.action for d in decisions] == ([action] if action else [])  # an unknown archive time: not yet
    if action:
        assert decisions[0].reason == f"relevance 0.0000 < delete threshold 0.02, archived {days_archived:.1f} " \
                                      "days >= 30"


def test_an_archived_memory_above_the_delete_line_stays_whatever_its_dwell():
    assert decide_with_dwell(0.05, archived=True, days_archived=400.0) == []


def test_protections_hold_through_the_dwell():
    decision = decide_with_dwell(1e-8, archived=True, days_archived=400.0, memory_type="Decision")[0]
    assert decision.action == "protect" and "type Decision is protected" in decision.reason


def test_without_a_dwell_a_memory_below_the_delete_line_goes_at_once_active_or_archived():
    assert POLICY.delete_after_archived_days == 0 and not POLICY.archives_first
    assert decide(0.01)[0].action == "delete"
    undated = forget_decisions(POLICY, ["m"], np.array([0.01]), np.array([True]), np.array([200.0]),
                               np.array([0.3]), ["Context"], np.array([False]), [None],
                               days_archived=np.array([np.nan]))
    assert undated[0].action == "delete"


def due_with_dwell(below_at, archived_since, grace_from=0.0, memory_type="Context", held_until=np.nan):
    return forget_due(DWELLING, np.array([below_at]), np.array([grace_from]), np.array([0.3]), [memory_type],
                      np.array([False]), np.array([held_until]), np.array([archived_since]))[0]


def test_an_archived_memory_comes_due_when_its_dwell_ends_or_its_relevance_falls_whichever_is_later():
    archived = 1000 * DAY
    assert due_with_dwell(below_at=900 * DAY, archived_since=archived) == archived + 30 * DAY
    assert due_with_dwell(below_at=2000 * DAY, archived_since=archived) == 2000 * DAY
    assert due_with_dwell(below_at=900 * DAY, archived_since=np.nan) == 900 * DAY  # active: no dwell
    # The grace period and a restore's hold still count, and what protects for good still makes it never.
    assert due_with_dwell(below_at=0.0, archived_since=archived, grace_from=archived) == archived + 90 * DAY
    assert due_with_dwell(below_at=0.0, archived_since=archived, held_until=archived + 40 * DAY) == \
        archived + 40 * DAY
    assert due_with_dwell(below_at=0.0, archived_since=archived, memory_type="Insight") == np.inf


def test_without_a_dwell_an_archived_memory_comes_due_when_its_relevance_falls():
    due = forget_due(POLICY, np.array([900 * DAY]), np.array([0.0]), np.array([0.3]), ["Context"],
                     np.array([False]), None, np.array([500 * DAY]))
    assert due[0] == 900 * DAY
