"""Clustering on the real stores: one stable MetaPattern per cluster, updated or retired, never duplicated."""

import pytest

from consolidation.clusters import NAMED_SUBJECT_MARGIN
from consolidation.service import build_services
from tests.conftest import add_memory, axis, days_ago, make_settings, vector_at

BASE = axis(0)


def plant_cluster(services, size, start_axis=1, base=BASE, memory_type="Decision", similarity=0.95,
                  content="Use PostgreSQL for billing, note {i}", **fields):
    # Each member is at `similarity` s from the base along its own orthogonal axis: s² between members.
    return [add_memory(services, vector=vector_at(similarity, base, axis(start_axis + i)), type=memory_type,
                       content=content.format(i=i), timestamp=days_ago(10 + i), **fields)
            for i in range(size)]


def patterns(services):
    rows = services.stores.graph.falkor.records(
        "MATCH (p:MetaPattern) OPTIONAL MATCH (p)-[:SUMMARIZES]->(m) "
        "RETURN p.id, properties(p), collect(m.id) ORDER BY p.id")
    return [(pid, dict(props), set(members)) for pid, props, members in rows]


def run_cluster(services, dry_run=False):
    return services.engine.run(["cluster"], dry_run=dry_run)["result"]["cluster"]


def test_a_planted_cluster_becomes_one_meta_pattern_and_a_rerun_adds_none(services):
    members = plant_cluster(services, 6)
    loners = [add_memory(services, vector=axis(10 + i)) for i in range(3)]
    report = run_cluster(services)
    found = patterns(services)
    assert len(found) == 1
    pattern_id, props, summarized = found[0]
    assert summarized == set(members)
    assert props["cluster_size"] == 6 and props["dominant_type"] == "Decision"
    assert props["temporal_span_days"] == pytest.approx(5.0)
    assert props["type"] == "MetaPattern" and props["created_at"] and props["archived"] is False
    assert "6 related memories (Decision ×6)" in props["content"]
    assert "“Use PostgreSQL for billing, note" in props["content"]
    assert report["clusters_found"] == 1 and report["created"] == 1
    assert report["clusters"][0]["meta_pattern_id"] == pattern_id
    assert set(report["clusters"][0]["member_ids"]) == set(members)
    assert not set(loners) & summarized
    # The summary is a memory too: its vector is in Qdrant, near the members.
    ids, vectors = services.stores.vectors.vectors([pattern_id])
    assert ids == [pattern_id] and float(vectors[0] @ BASE) > 0.95

    again = run_cluster(services)
    assert patterns(services) == found
    assert again["created"] == 0 and again["unchanged"] == 1 and again["clusters_found"] == 1


def test_a_grown_cluster_updates_its_meta_pattern(services):
    members = plant_cluster(services, 6)
    run_cluster(services)
    (pattern_id, _, _), = patterns(services)
    newcomer = add_memory(services, vector=vector_at(0.95, BASE, axis(8)), type="Insight")
    report = run_cluster(services)
    (same_id, props, summarized), = patterns(services)
    assert same_id == pattern_id
    assert summarized == set(members) | {newcomer}
    assert props["cluster_size"] == 7 and report["updated"] == 1 and report["created"] == 0


def test_a_dissolved_cluster_retires_its_meta_pattern(services):
    members = plant_cluster(services, 6)
    run_cluster(services)
    services.stores.graph.archive(members[:3], days_ago(0))
    report = run_cluster(services)
    (pattern_id, props, summarized), = patterns(services)
    assert report["retired"] == [pattern_id] and report["clusters_found"] == 0
    assert props["archived"] is True and props["retired_at"] and summarized == set()
    assert services.stores.vectors.payloads([pattern_id])[pattern_id]["archived"] is True


def test_small_groups_make_no_cluster(services):
    plant_cluster(services, 4)
    report = run_cluster(services)
    assert patterns(services) == [] and report["clusters_found"] == 0


def test_memories_whose_scores_decayed_are_clustered_unless_the_setting_says_only_relevant_ones(services, tmp_path):
    faded = plant_cluster(services, 6, relevance_score=0.0)
    run_cluster(services)
    assert [members for _, _, members in patterns(services)] == [set(faded)]

    relevant_only = build_services(make_settings(tmp_path / "other", consolidation_cluster_low_relevance=False))
    try:
        plant_cluster(relevant_only, 6, relevance_score=0.3)  # the line is "above 0.3", as AutoMem's
        kept = plant_cluster(relevant_only, 5, start_axis=7, base=axis(15), relevance_score=0.31)
        run_cluster(relevant_only)
        assert [members for _, _, members in patterns(relevant_only)] == [set(kept)]
    finally:
        relevant_only.close()


def test_a_cluster_holds_one_persons_statements(services):
    # Ten turns at 0.9025 from each other, five said by Maria and five by John: two clusters, not one.
    maria = plant_cluster(services, 5, content="Maria: the shelter needs volunteers, note {i}")
    john = plant_cluster(services, 5, start_axis=6, content="John: the shelter needs volunteers, note {i}")
    report = run_cluster(services)
    assert sorted(map(frozenset, (m for _, _, m in patterns(services))), key=sorted) == sorted(
        [frozenset(maria), frozenset(john)], key=sorted)
    assert report["clusters_found"] == 2


@pytest.mark.parametrize("content, clustered", [
    ("Use PostgreSQL for billing, note {i}", True),  # names nobody: the configured line, 0.75
    ("Caroline uses PostgreSQL for billing, note {i}", False),  # one name: the line and the margin
])
def test_statements_naming_one_person_need_the_margin_above_the_line(services, content, clustered):
    # Pairwise 0.88² = 0.7744: above the line of 0.75, below 0.75 + the margin.
    assert 0.75 < 0.88 ** 2 < 0.75 + NAMED_SUBJECT_MARGIN
    members = plant_cluster(services, 5, similarity=0.88, content=content)
    run_cluster(services)
    assert [m for _, _, m in patterns(services)] == ([set(members)] if clustered else [])


def test_two_separate_clusters_get_two_meta_patterns(services):
    first = plant_cluster(services, 5, start_axis=1)
    second = plant_cluster(services, 5, start_axis=7, base=axis(15), memory_type="Pattern")
    run_cluster(services)
    groups = sorted((props["dominant_type"], members) for _, props, members in patterns(services))
    assert groups == [("Decision", set(first)), ("Pattern", set(second))]


def test_dry_run_reports_the_clusters_and_writes_nothing(services):
    members = plant_cluster(services, 6)
    report = run_cluster(services, dry_run=True)
    assert patterns(services) == []
    assert services.stores.vectors.count() == 6
    assert report["clusters"][0]["action"] == "create" and report["clusters"][0]["meta_pattern_id"] is None
    assert set(report["clusters"][0]["member_ids"]) == set(members)


@pytest.mark.parametrize("exact_limit", [100000, 0], ids=["exact", "cells"])
def test_clusters_recover_planted_topics(tmp_path, clock, exact_limit):
    import numpy as np
    from sklearn.metrics import adjusted_rand_score

    from consolidation.service import build_services
    from tests.conftest import make_settings

    rng = np.random.default_rng(42)
    dim, topics, size, noise = 64, 10, 20, 50
    centres = rng.standard_normal((topics, dim))
    truth = np.concatenate([np.repeat(np.arange(topics), size), -1 - np.arange(noise)])  # noise: own labels
    spread = rng.uniform(0.35, 0.75, truth.size)[:, None]  # member-to-member cosines 0.64..0.89
    vectors = np.where(truth[:, None] >= 0,
                       centres[np.maximum(truth, 0)] + spread * rng.standard_normal((truth.size, dim)) / np.sqrt(dim),
                       rng.standard_normal((truth.size, dim)))
    services = build_services(make_settings(tmp_path / "d", vector_size=dim, consolidation_cluster_exact_limit=exact_limit),
                              clock=clock)
    try:
        ids = [add_memory(services, vector=v, type="Context") for v in vectors]
        report = run_cluster(services)
        predicted = {memory_id: -1 - i for i, memory_id in enumerate(ids)}  # unclustered: a cluster of its own
        for number, (_, _, members) in enumerate(patterns(services)):
            for memory_id in members:
                predicted[memory_id] = number
        score = adjusted_rand_score(truth, [predicted[m] for m in ids])
        assert report["clusters_found"] == topics
        assert score >= 0.95, score
    finally:
        services.close()


def test_members_asked_for_by_id_or_read_with_every_memory_get_the_same_details(services, monkeypatch):
    """Past a share of the graph, member details are read by a scan of every memory instead of id lookups."""
    graph = services.stores.graph
    ids = [add_memory(services, vector=axis(i), type="Decision" if i % 2 else "Fact", importance=0.1 * i,
                      timestamp=days_ago(i), content=f"note {i}") for i in range(8)]
    asked = ids[:3] + ["no-such-memory"]
    monkeypatch.setattr("consolidation.stores.graph.SCAN_INSTEAD_SHARE", 1.0)  # by id
    by_id = graph.memory_details(asked), graph.memory_contents(asked)
    monkeypatch.setattr("consolidation.stores.graph.SCAN_INSTEAD_SHARE", 0.0)  # every memory read
    scanned = graph.memory_details(asked), graph.memory_contents(asked)
    assert by_id == scanned
    assert set(by_id[0]) == set(ids[:3]) and by_id[1][ids[2]] == "note 2"
    assert by_id[0][ids[1]]["type"] == "Decision" and by_id[0][ids[1]]["importance"] == pytest.approx(0.1)
