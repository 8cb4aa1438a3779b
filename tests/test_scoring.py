"""The relevance formula against values worked out by hand, one factor at a time."""

import math

import numpy as np
import pytest

from consolidation.scoring import changed, clean_fraction, days_until_below, distribution, relevance_scores


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


def test_the_time_a_score_falls_below_a_target_is_worked_out_by_hand():
    # 10 days old, used 20 hours ago, 0 relationships, importance and confidence 0.5: 0.85 e^-0.01 age while the
    # use is recent. Target 0.75: the age must pass ln(0.85 / 0.75) / 0.01 = 12.52 days, but after 4 hours the
    # use is a day old and the score steps down to 0.85 e^(-0.01 * 10.17 - 0.05 * 1) = 0.731 < 0.75.
    def days(target, age, since, ageing=1.0, unused=1.0, relationships=0.0):
        return float(days_until_below(np.array([target]), np.array([age]), np.array([since]), np.array([ageing]),
                                      np.array([unused]), np.array([relationships]), np.array([0.5]),
                                      np.array([0.5]))[0])

    assert days(0.75, 10, 20 / 24) == pytest.approx(4 / 24)
    # Target 0.78: reached while the use is still recent, at age ln(0.85 / 0.78) / 0.01 = 8.59: already below.
    assert days(0.78, 10, 20 / 24) == 0.0
    # Target 0.70, used 5 days ago: 0.85 e^(-0.1 - 0.25) = 0.599 already; target 0.5 from there: ln(0.599 / 0.5)
    # shrinks at 0.06 a day.
    assert days(0.5, 10, 5) == pytest.approx(math.log(0.85 * math.exp(-0.35) / 0.5) / 0.06)
    # Times that do not grow (unknown): never, unless below already; a target of 0 is never passed below.
    assert days(0.5, 0, 0, ageing=0.0, unused=0.0) == math.inf
    assert days(0.9, 0, 0, ageing=0.0, unused=0.0) == 0.0
    assert days(0.0, 10, 5) == math.inf


def test_the_time_a_score_falls_below_a_target_is_never_late_and_at_most_a_step_early():
    """Against the formula itself, stepped forward 0.01 days at a time over 400 days."""
    rng = np.random.default_rng(7)
    n = 400
    age = rng.uniform(0, 300, n)
    since = np.minimum(age, rng.uniform(0, 3, n) * rng.choice([1, 40], n))
    ageing, unused = rng.choice([0.0, 1.0], n, p=[0.1, 0.9]), rng.choice([0.0, 1.0], n, p=[0.1, 0.9])
    relationships, importance, confidence = rng.integers(0, 20, n).astype(float), rng.random(n), rng.random(n)
    target = rng.uniform(0.001, 1.0, n)
    found = days_until_below(target, age, since, ageing, unused, relationships, importance, confidence)
    steps = np.arange(0, 400.005, 0.01)
    for k in range(n):
        later = relevance_scores(age[k] + ageing[k] * steps, since[k] + unused[k] * steps,
                                 np.full_like(steps, relationships[k]), np.full_like(steps, importance[k]),
                                 np.full_like(steps, confidence[k]))
        below = np.flatnonzero(later < target[k])
        first = steps[below[0]] if below.size else math.inf
        assert found[k] <= first + 1e-9
        assert first - found[k] <= 0.01 + 1e-9 or found[k] > 399.99
