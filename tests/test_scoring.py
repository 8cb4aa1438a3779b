"""The relevance formula against values worked out by hand, one factor at a time."""

import math

import numpy as np
import pytest

from consolidation.scoring import changed, clean_fraction, distribution, relevance_scores


def score(age, since_access, relationships, importance, confidence):
    return float(relevance_scores(np.array([age]), np.array([since_access]), np.array([relationships]),
                                  np.array([importance]), np.array([confidence]))[0])


def test_fresh_memory_keeps_only_importance_and_confidence():
    # age 1, access 1, relationships 1 -> (0.5 + 0.5) * (0.7 + 0.3 * 0.5) = 0.85
    assert score(0, 0, 0, 0.5, 0.5) == pytest.approx(0.85)


def test_old_memory_decays_by_age_and_disuse():
    # 100 days old, last used 10 days ago: e^-1 * e^-0.5 * 1 * 1.3 * 0.88
    expected = 0.36787944 * 0.60653066 * 1.3 * 0.88
    assert score(100, 10, 0, 0.8, 0.6) == pytest.approx(expected, rel=1e-6)


def test_access_within_a_day_counts_as_fully_fresh():
    # 30 days old, accessed 20 hours ago: access factor 1, age e^-0.3
    assert score(30, 20 / 24, 0, 0.5, 0.5) == pytest.approx(0.74081822 * 0.85, rel=1e-6)
    # just over a day: the access factor drops to e^-0.05*1.5
    assert score(30, 1.5, 0, 0.5, 0.5) == pytest.approx(0.74081822 * 0.92774349 * 0.85, rel=1e-6)


def test_relationships_slow_decay_logarithmically():
    # 60 days old, accessed 5 days ago, 9 relationships: 1 + 0.3 ln 10 = 1.69077553
    expected = 0.54881164 * 0.77880078 * 1.69077553 * 1.0 * 0.85
    assert score(60, 5, 9, 0.5, 0.5) == pytest.approx(expected, rel=1e-6)


def test_importance_and_confidence_extremes():
    # importance 0 halves, importance 1 multiplies by 1.5; confidence 0 gives 0.7, confidence 1 gives 1.0
    base = math.exp(-0.6) * math.exp(-0.05 * 10)  # 60 days old, accessed 10 days ago
    assert score(60, 10, 0, 0.0, 0.0) == pytest.approx(base * 0.5 * 0.7, rel=1e-6)
    assert score(60, 10, 0, 1.0, 1.0) == pytest.approx(base * 1.5 * 1.0, rel=1e-6)


def test_score_is_capped_at_one():
    # fresh, 20 relationships, top importance and confidence: 1 * 1 * 1.913 * 1.5 * 1.0 > 1
    assert score(0, 0, 20, 1.0, 1.0) == 1.0


def test_missing_values_take_the_defaults_and_out_of_range_values_are_clipped():
    values = clean_fraction(np.array([np.nan, 1.7, -0.2, 0.3]), 0.5)
    assert values.tolist() == pytest.approx([0.5, 1.0, 0.0, 0.3])


def test_distribution_buckets_follow_the_design_bounds():
    scores = np.array([0.95, 0.71, 0.7, 0.3, 0.29, 0.1, 0.099, 0.0])
    assert distribution(scores) == {"high": 2, "medium": 2, "low": 2, "archive": 2}


def test_only_changes_beyond_epsilon_are_rewritten():
    before = np.array([0.5, 0.5, np.nan, 0.2])
    after = np.array([0.5004, 0.4990, 0.3, 0.2])
    assert changed(before, after, 0.0005).tolist() == [False, True, True, False]
