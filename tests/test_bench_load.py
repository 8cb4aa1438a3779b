"""The benchmark's own store: its generator's columns are what they stand for, and its load writes every memory,
vector and edge, each edge once."""

from __future__ import annotations

from datetime import datetime, timedelta

import numpy as np
import pytest

from consolidation.service import build_services
from tests.conftest import NOW, bench_module


@pytest.fixture(scope="module")
def dataset():
    return bench_module("dataset")


def test_times_are_spelled_as_datetime_spells_now_minus_the_days(dataset):
    days = np.array([0.0, 1.5, 20.123456789, 364.9999999, 1e-7])
    expected = [(NOW - timedelta(days=float(d))).isoformat() for d in days]
    assert dataset._iso_before(NOW, days) == expected


def test_generated_edges_join_two_memories_mostly_of_one_topic(dataset):
    data = dataset.generate(3000, NOW, seed=3)
    place = {m["id"]: i for i, m in enumerate(data.memories)}
    ends = np.array([[place[a], place[b]] for a, b in data.edges])
    assert (ends[:, 0] != ends[:, 1]).all()
    assert 2 * 3000 * 0.99 <= len(data.edges) <= 2 * 3000  # two a memory, less the few drawn onto itself
    topics = data.topics[ends]
    within = ((topics[:, 0] == topics[:, 1]) & (topics[:, 0] >= 0)).mean()
    # Half the edges (the first of each memory) stay in a planted topic (80 % of memories) 70 % of the time.
    assert 0.5 * 0.8 * 0.7 - 0.03 <= within <= 0.5 * 0.8 * 0.7 + 0.03
    ages = np.array([(NOW - datetime.fromisoformat(m["timestamp"])).total_seconds() / 86400 for m in data.memories])
    assert ages.min() >= 0 and 18 <= ages.mean() <= 22  # exponential, 20 days on average (capped at a year)


def test_the_load_writes_every_memory_and_every_edge_once(tmp_path):
    bench = bench_module("consolidation_bench")
    data = bench.generate(2500, NOW)
    bench.load_store(2500, tmp_path, step=700)  # parts of 700, the last one short
    services = build_services(bench.bench_settings(tmp_path))
    try:
        falkor = services.stores.graph.falkor
        # The edge's id is returned: without it, FalkorDB returns two edges between the same memories once.
        stored = falkor.execute("MATCH (a:Memory)-[r:RELATES_TO]->(b:Memory) RETURN a.id, b.id, id(r)",
                                read_only=True)
        assert sorted((a, b) for a, b, _ in stored) == sorted(map(tuple, data.edges))
        assert falkor.execute("MATCH (m:Memory) RETURN count(m)", read_only=True)[0][0] == 2500
        ids, _ = services.stores.vectors.vectors([m["id"] for m in data.memories])
        assert sorted(ids) == sorted(m["id"] for m in data.memories)
    finally:
        services.close()
