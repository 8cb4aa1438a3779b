"""Creative associations on the real stores: each rule makes its edge, and only where it should."""

import numpy as np
import pytest

from consolidation.service import build_services
from tests.conftest import add_memory, axis, days_ago, link, make_settings, vector_at

BASE, OTHER = axis(0), axis(1)


def plant_pair(services, type_a, type_b, similarity, days_apart=30.0, relevance=0.8):
    a = add_memory(services, vector=BASE, type=type_a, timestamp=days_ago(40), relevance_score=relevance)
    b = add_memory(services, vector=vector_at(similarity, BASE, OTHER), type=type_b,
                   timestamp=days_ago(40 - days_apart), relevance_score=relevance)
    return a, b


def edges(services):
    rows = services.stores.graph.falkor.records(
        "MATCH (a:Memory)-[r]->(b:Memory) RETURN a.id, type(r), properties(r), b.id")
    return [(a, relation, dict(props), b) for a, relation, props, b in rows]


def run_creative(services, dry_run=False):
    return services.engine.run(["creative"], dry_run=dry_run)["result"]["creative"]


@pytest.mark.parametrize("types, similarity, days_apart, relation, kind, confidence", [
    (("Insight", "Pattern"), 0.6, 30, "DISCOVERED", "explains", 0.7),
    (("Context", "Preference"), 0.8, 30, "DISCOVERED", "shares_theme", 0.8),
    (("Context", "Context"), 0.1, 3, "DISCOVERED", "parallel_context", 0.5),
])
def test_each_rule_creates_its_edge(tmp_path, clock, types, similarity, days_apart, relation, kind, confidence):
    # Every kind on, parallel_context included (it is off by default: see the next test).
    settings = make_settings(tmp_path / "d", consolidation_creative_kinds="explains,shares_theme,parallel_context")
    services = build_services(settings, clock=clock)
    try:
        check_rule_creates_its_edge(services, types, similarity, days_apart, relation, kind, confidence)
    finally:
        services.close()


def test_parallel_context_is_off_by_default_and_two_decisions_never_contradict(services):
    for memory_type, (base, other), days in (("Context", (2, 3), 37), ("Decision", (4, 5), 10)):
        add_memory(services, vector=axis(base), type=memory_type, timestamp=days_ago(40), relevance_score=0.8)
        add_memory(services, vector=vector_at(0.1, axis(base), axis(other)), type=memory_type,
                   timestamp=days_ago(days), relevance_score=0.8)
    report = run_creative(services)
    assert edges(services) == [] and report["pairs_compared"] == 6 and report["edges_total"] == 0


def check_rule_creates_its_edge(services, types, similarity, days_apart, relation, kind, confidence):
    a, b = plant_pair(services, *types, similarity, days_apart)
    report = run_creative(services)
    found = edges(services)
    assert len(found) == 1
    source, found_relation, props, target = found[0]
    assert (found_relation, props["kind"]) == (relation, kind)
    assert props["confidence"] == pytest.approx(confidence, abs=1e-5)
    assert props["similarity"] == pytest.approx(similarity, abs=1e-5)
    assert props["origin"] == "consolidation" and props["algorithm"] == "creative_association"
    assert props["discovered_at"].startswith("2026-06-01")
    assert {source, target} == {a, b}
    assert report["edges_total"] == 1 and report["by_kind"] == {kind: 1}


@pytest.mark.parametrize("types, similarity, days_apart", [
    (("Decision", "Decision"), 0.3, 30),
    (("Insight", "Pattern"), 0.5, 30),
    (("Context", "Preference"), 0.7, 30),
    (("Context", "Context"), 0.4, 3),
    (("Context", "Context"), 0.1, 8),
])
def test_rules_do_not_fire_at_their_thresholds(services, types, similarity, days_apart):
    plant_pair(services, *types, similarity, days_apart)
    report = run_creative(services)
    assert edges(services) == []
    assert report["pairs_compared"] == 1 and report["edges_total"] == 0


def test_an_insight_explains_a_pattern_in_that_direction(services):
    pattern, insight = plant_pair(services, "Pattern", "Insight", 0.9)
    run_creative(services)
    source, _, props, target = edges(services)[0]
    assert (source, props["kind"], target) == (insight, "explains", pattern)


def test_linked_pairs_and_irrelevant_memories_are_left_alone(services):
    a, b = plant_pair(services, "Context", "Preference", 0.9)
    link(services, b, a)
    # Not above 0.3: never sampled. (A day after the first pair: said together, the two would be one episode.)
    add_memory(services, vector=axis(6), type="Decision", timestamp=days_ago(39), relevance_score=0.3)
    add_memory(services, vector=vector_at(0.1, axis(6), axis(7)), type="Decision", timestamp=days_ago(9),
               relevance_score=0.3)
    report = run_creative(services)
    assert report["memories_processed"] == 2
    assert report["pairs_already_linked"] == 1 and report["pairs_compared"] == 0
    assert [relation for _, relation, _, _ in edges(services)] == ["RELATES_TO"]


def test_dry_run_proposes_without_writing_and_a_rerun_adds_nothing(services):
    plant_pair(services, "Insight", "Pattern", 0.9)  # explains: on by default
    preview = run_creative(services, dry_run=True)
    assert preview["edges_total"] == 1 and edges(services) == []
    run_creative(services)
    again = run_creative(services)
    assert again["edges_total"] == 0 and len(edges(services)) == 1


def test_the_sample_size_setting_bounds_the_sample(tmp_path, clock):
    from consolidation.service import build_services
    from tests.conftest import make_settings

    services = build_services(make_settings(tmp_path / "d", consolidation_creative_sample_size=4), clock=clock)
    try:
        for i in range(10):
            add_memory(services, relevance_score=0.9)
        assert run_creative(services)["memories_processed"] == 4
    finally:
        services.close()


def test_sampling_by_probing_node_ids_is_uniform_over_qualifying_memories(services):
    # 400 relevant memories among 200 irrelevant ones: large enough for the probing path.
    relevant = [add_memory(services, relevance_score=0.9, vector=axis(i % 16)) for i in range(400)]
    for i in range(200):
        add_memory(services, relevance_score=0.1, vector=axis(i % 16))
    counts = dict.fromkeys(relevant, 0)
    for _ in range(200):
        sample = services.stores.graph.sample_memories(0.3, 30)
        assert len(sample) == 30 and len({m.id for m in sample}) == 30
        for memory in sample:
            counts[memory.id] += 1  # KeyError if an irrelevant memory was sampled
    # 200 samples of 30 from 400: each memory is drawn Binomial(200, 0.075) times, mean 15, variance 13.9.
    draws = np.array(list(counts.values()))
    assert draws.min() >= 1 and draws.max() <= 36
    assert 7 <= draws.var() <= 28  # a biased sampler (always the same ids, say) spreads them far wider


def test_sampling_falls_back_when_few_memories_qualify(services):
    few = {add_memory(services, relevance_score=0.9) for _ in range(5)}
    for _ in range(600):
        add_memory(services, relevance_score=0.1)
    assert {m.id for m in services.stores.graph.sample_memories(0.3, 30)} == few
