"""Decay on the real embedded stores: scores in the graph and in Qdrant equal the formula worked by hand."""

import math

import pytest

from tests.conftest import NOW, add_memory, days_ago, link, make_settings


def stored(services, memory_id):
    graph = services.stores.graph.get_memory(memory_id)["relevance_score"]
    payload = services.stores.vectors.payloads([memory_id])[memory_id]["relevance_score"]
    return graph, payload


def run_decay(services, dry_run=False):
    return services.engine.run(["decay"], dry_run=dry_run)["result"]["decay"]


def test_scores_match_hand_computed_values(services):
    cases = {
        # fresh, average: 1 * 1 * 1 * 1.0 * 0.85
        add_memory(services, timestamp=NOW.isoformat(), last_accessed=NOW.isoformat()): 0.85,
        # 100 days old, used 10 days ago, importance 0.8, confidence 0.6
        add_memory(services, timestamp=days_ago(100), last_accessed=days_ago(10), importance=0.8, confidence=0.6):
            math.exp(-1.0) * math.exp(-0.5) * 1.3 * 0.88,
        # 40 days old but used three hours ago: the access factor stays 1
        add_memory(services, timestamp=days_ago(40), last_accessed=days_ago(3 / 24)): math.exp(-0.4) * 0.85,
        # top importance and confidence, 60 days old, used 10 days ago
        add_memory(services, timestamp=days_ago(60), last_accessed=days_ago(10), importance=1.0, confidence=1.0):
            math.exp(-0.6) * math.exp(-0.5) * 1.5 * 1.0,
    }
    linked = add_memory(services, timestamp=days_ago(50), last_accessed=days_ago(5))
    capped = add_memory(services, timestamp=NOW.isoformat(), importance=1.0, confidence=1.0)
    # Link partners below the importance threshold (0.3) are not decayed, so their own edges do not matter.
    for _ in range(4):
        link(services, linked, add_memory(services, importance=0.1, relevance_score=0.42))
    for _ in range(3):
        link(services, add_memory(services, importance=0.1, relevance_score=0.42), capped)
    cases[linked] = math.exp(-0.5) * math.exp(-0.25) * (1 + 0.3 * math.log(5)) * 0.85
    cases[capped] = 1.0  # 1 * 1 * (1 + 0.3 ln 4) * 1.5 * 1.0 = 2.12, capped

    report = run_decay(services)

    assert report["memories_processed"] == len(cases)
    for memory_id, expected in cases.items():
        graph, payload = stored(services, memory_id)
        assert graph == pytest.approx(expected, abs=1e-9), memory_id
        assert payload == pytest.approx(expected, abs=1e-9), memory_id


def test_memories_below_the_importance_threshold_and_archived_ones_keep_their_score(services):
    low = add_memory(services, importance=0.29, relevance_score=0.42, timestamp=days_ago(300))
    archived = add_memory(services, archived=True, relevance_score=0.22, timestamp=days_ago(300))
    # Archived above the cap for memories no longer current (0.25: scoring.NOT_CURRENT_RELEVANCE): the full pass
    # brings it down to the cap, not to what the formula gives (~0.04 at 300 days).
    archived_high = add_memory(services, archived=True, relevance_score=0.42, timestamp=days_ago(300))
    counted = add_memory(services, importance=0.3, relevance_score=0.42, timestamp=days_ago(300))
    report = run_decay(services)
    assert report["memories_processed"] == 1 and report["capped_again"] == 1
    assert stored(services, low) == (0.42, 0.42)
    assert stored(services, archived) == (0.22, 0.22)
    assert stored(services, archived_high) == (0.25, 0.25)
    assert stored(services, counted)[0] < 0.1


def test_an_empty_threshold_decays_every_memory(tmp_path, clock):
    from consolidation.service import build_services

    settings = make_settings(tmp_path / "d", consolidation_decay_importance_threshold=None)
    services = build_services(settings, clock=clock)
    try:
        zero = add_memory(services, importance=0.0, confidence=0.0, timestamp=days_ago(60), last_accessed=days_ago(10))
        run_decay(services)
        expected = math.exp(-0.6) * math.exp(-0.5) * 0.5 * 0.7
        assert stored(services, zero)[0] == pytest.approx(expected, abs=1e-9)
    finally:
        services.close()


def test_report_has_averages_and_distribution(services):
    add_memory(services, relevance_score=0.9, timestamp=NOW.isoformat())  # -> 0.85 high
    add_memory(services, relevance_score=0.5, timestamp=days_ago(400), last_accessed=days_ago(400))  # -> ~0
    report = run_decay(services)
    assert report["average_before"] == pytest.approx(0.7)
    assert report["average_after"] == pytest.approx((0.85 + 0.85 * math.exp(-4) * math.exp(-20)) / 2, abs=1e-6)
    assert report["distribution"] == {"high": 1, "medium": 0, "low": 0, "archive": 1}


def test_dry_run_writes_nothing(services):
    memory = add_memory(services, relevance_score=0.42, timestamp=days_ago(30))
    report = run_decay(services, dry_run=True)
    assert report["scores_changed"] == 1
    assert stored(services, memory) == (0.42, 0.42)
    assert services.engine.control.state().get("last_decay") is None
    assert services.engine.control.state()["history"] == []


def test_changes_within_epsilon_are_not_rewritten_and_never_drift_beyond_it(services, clock):
    memory = add_memory(services, timestamp=days_ago(10), last_accessed=days_ago(10))
    run_decay(services)
    first = stored(services, memory)[0]
    clock.advance(minutes=5)  # 5 minutes change the score by about 1e-4 * 0.06: far below epsilon
    report = run_decay(services)
    assert report["scores_changed"] == 0
    assert stored(services, memory)[0] == first
    true_now = math.exp(-0.01 * (10 + 5 / 1440)) * math.exp(-0.05 * (10 + 5 / 1440)) * 0.85
    assert abs(first - true_now) <= services.settings.consolidation_score_epsilon
    clock.advance(days=1)
    assert run_decay(services)["scores_changed"] == 1


def test_decay_is_idempotent(services):
    ids = [add_memory(services, timestamp=days_ago(d), last_accessed=days_ago(d / 2)) for d in (1, 20, 70)]
    run_decay(services)
    first = [stored(services, m) for m in ids]
    run_decay(services)
    assert [stored(services, m) for m in ids] == first


def test_after_every_run_each_stored_score_is_within_epsilon_of_the_formula(services, clock):
    rng = __import__("numpy").random.default_rng(3)
    cases = []
    for _ in range(60):
        age, idle = float(rng.uniform(0, 200)), float(rng.uniform(0, 30))
        importance, confidence = float(rng.uniform(0.3, 1)), float(rng.uniform(0, 1))
        memory_id = add_memory(services, timestamp=days_ago(age), last_accessed=days_ago(min(age, idle)),
                               importance=importance, confidence=confidence)
        cases.append((memory_id, age, min(age, idle), importance, confidence))
    epsilon = services.settings.consolidation_score_epsilon
    for step in range(6):
        run_decay(services)
        elapsed = step * 0.3  # days since NOW, in steps of about seven hours
        for memory_id, age, idle, importance, confidence in cases:
            access = 1.0 if idle + elapsed <= 1 else math.exp(-0.05 * (idle + elapsed))
            truth = min(1.0, math.exp(-0.01 * (age + elapsed)) * access * (0.5 + importance)
                        * (0.7 + 0.3 * confidence))
            assert abs(stored(services, memory_id)[0] - truth) <= epsilon + 1e-12
        clock.advance(hours=7.2)


def test_reads_over_every_memory_page_through_node_ids(services, monkeypatch):
    """Full-graph reads go a page of node ids at a time; across page borders every memory is read once."""
    from consolidation.stores import falkor

    monkeypatch.setattr(falkor, "SCAN_PAGE", 3)
    ids = [add_memory(services, importance=0.2 if i % 2 else 0.9) for i in range(10)]
    services.stores.graph.falkor.execute("CREATE (:ConsolidationRun {id: 'between'})")  # a non-memory node id
    ids += [add_memory(services, importance=0.9) for _ in range(4)]
    assert sorted(services.stores.graph.all_memory_ids()) == sorted(ids)
    important = services.stores.graph.scoring_inputs(0.5).ids
    assert sorted(important) == sorted(ids[0:10:2] + ids[10:])  # the filter holds in every page
