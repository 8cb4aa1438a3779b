"""Episodes: what a scope stated together is linked (same_episode), and a recall gives its last place to the partner."""

import uuid
from datetime import timedelta

import numpy as np
import pytest

from consolidation.episodes import BLOCK, closest_partners, episode_links, episodes_of
from consolidation.service import build_services
from tests.conftest import NOW, add_memory, axis, make_settings, unit, vector_at

HOUR = 3600.0


def links_of(scope_keys, seconds, vectors, span=HOUR, least=0.5):
    found = episode_links(scope_keys, np.asarray(seconds, float), np.stack([unit(v) for v in vectors]), span, least)
    return {(int(a), int(b)): round(float(s), 4) for a, b, s in zip(found.first, found.second, found.similarity)}


def test_each_memory_is_linked_to_its_closest_partner_of_its_episode():
    # 0 and 1 at cosine 0.8, 0 and 2 at 0.6, so 1 and 2 at 0.8 * 0.6 = 0.48: 0's closest is 1, 1's is 0, 2's is 0.
    vectors = [axis(0), vector_at(0.8, axis(0), axis(1)), vector_at(0.6, axis(0), axis(2))]
    assert links_of([""] * 3, [0, 10, 20], vectors) == {(0, 1): 0.8, (0, 2): 0.6}
    assert links_of([""] * 3, [0, 10, 20], vectors, least=0.7) == {(0, 1): 0.8}


def test_other_scopes_later_hours_and_unknown_times_make_no_episode():
    same = [axis(0)] * 4
    assert links_of(["a", "b", "a", "a"], [0, 0, 2 * HOUR, np.nan], same) == {}
    # The span counts from an episode's first memory: 0 s and 3000 s are one episode, 6000 s opens the next.
    assert links_of([""] * 3, [0, 3000, 6000], same) == {(0, 1): 1.0}


def test_a_bulk_moment_is_cut_into_blocks_each_memory_still_finding_a_partner():
    count = BLOCK * 2 + 1  # the last is alone in its block: it gets no partner
    rng = np.random.default_rng(3)
    base = axis(0)
    vectors = [unit(base + 0.2 * rng.standard_normal(16)) for _ in range(count)]
    found = links_of([""] * count, [0.0] * count, vectors)
    linked = {i for pair in found for i in pair}
    assert linked == set(range(count - 1))
    assert all(b - a < BLOCK for a, b in found)  # no pair across two blocks


@pytest.fixture
def episodic(tmp_path, clock):
    services = build_services(make_settings(tmp_path / "d"), clock=clock)
    yield services
    services.close()


def at(minutes: float) -> str:
    return (NOW - timedelta(days=3) + timedelta(minutes=minutes)).isoformat()


def same_episode_edges(services):
    rows = services.stores.graph.falkor.records(
        "MATCH (a:Memory)-[r:DISCOVERED {kind: 'same_episode'}]->(b:Memory) RETURN a.id, b.id, r.similarity")
    return {frozenset((a, b)): s for a, b, s in rows}


def test_creative_links_what_was_said_together_once(episodic):
    talk = add_memory(episodic, vector=axis(0), timestamp=at(0), relevance_score=0.1)  # below 0.3: linked anyway
    beside = add_memory(episodic, vector=vector_at(0.7, axis(0), axis(1)), timestamp=at(5))
    add_memory(episodic, vector=vector_at(0.9, axis(0), axis(2)), timestamp=at(240))  # hours later: no episode
    add_memory(episodic, vector=axis(5), timestamp=at(1))  # said then, about something else (cosine 0)
    preview = episodic.engine.run(["creative"], dry_run=True)["result"]["creative"]
    assert preview["by_kind"] == {"same_episode": 1} and same_episode_edges(episodic) == {}
    report = episodic.engine.run(["creative"])["result"]["creative"]
    assert report["by_kind"] == {"same_episode": 1}
    assert same_episode_edges(episodic) == {frozenset((talk, beside)): pytest.approx(0.7, abs=1e-5)}
    again = episodic.engine.run(["creative"])["result"]["creative"]
    assert "same_episode" not in again["by_kind"] and len(same_episode_edges(episodic)) == 1


def test_the_kind_is_off_when_left_out_of_the_kinds(tmp_path, clock):
    services = build_services(make_settings(tmp_path / "d", consolidation_creative_kinds="explains"), clock=clock)
    try:
        add_memory(services, vector=axis(0), timestamp=at(0))
        add_memory(services, vector=axis(0), timestamp=at(1))
        services.engine.run(["creative"])
        assert same_episode_edges(services) == {}
    finally:
        services.close()


def recall(client, auth, vector, **body):
    answer = client.post("/recall", headers=auth, json={"embedding": [float(x) for x in vector], **body})
    assert answer.status_code == 200, answer.get_json()
    return answer.get_json()["results"]


@pytest.fixture
def recalled(tmp_path, clock):
    """Ten memories nearer the query than a partner said with the best of them (cosine 0.6 to the best)."""
    from consolidation.api import create_app

    services = build_services(make_settings(tmp_path / "d"), clock=clock)
    query = axis(0)
    best = add_memory(services, vector=query, timestamp=at(0))
    others = [add_memory(services, vector=vector_at(0.9 - 0.01 * i, query, axis(2 + i)), timestamp=at(600 + i * 120))
              for i in range(9)]
    partner = add_memory(services, vector=vector_at(0.6, query, axis(14)), timestamp=at(2))
    services.engine.run(["creative"])
    client = create_app(services.settings, services=services, start_scheduler=False).test_client()
    yield client, query, best, others, partner
    services.close()


def test_a_recall_gives_its_last_place_to_the_best_answers_partner(recalled, auth):
    client, query, best, others, partner = recalled
    results = recall(client, auth, query, k=10)
    assert [r["id"] for r in results] == [best, *others[:8], partner]
    assert results[-1]["associated_with"] == best and results[-1]["similarity"] == pytest.approx(0.6, abs=1e-5)
    assert all(r.get("associated_with") is None for r in results[:-1])


def test_no_association_when_asked_not_to_for_small_k_or_a_weak_best_answer(recalled, auth):
    client, query, best, others, partner = recalled
    assert [r["id"] for r in recall(client, auth, query, k=10, associated=False)] == [best, *others]
    assert [r["id"] for r in recall(client, auth, query, k=4)] == [best, *others[:3]]
    weak = vector_at(0.4, query, axis(15))  # the best answer is 0.4 from this query: below 0.5
    assert partner not in [r["id"] for r in recall(client, auth, weak, k=10)][-1:]


def test_a_superseded_partner_takes_no_place(recalled, auth):
    client, query, best, others, partner = recalled
    newer = client.post(f"/memory/{partner}/supersede", headers=auth,
                        json={"content": "the new value", "embedding": [float(x) for x in axis(15)]})
    assert newer.status_code in (200, 201), newer.get_json()
    assert [r["id"] for r in recall(client, auth, query, k=10)] == [best, *others]


def test_the_episodes_a_change_touches_give_every_link_naming_a_changed_memory():
    # An incremental pass reads the vectors of the touched episodes only: its links must be the full links that
    # name a changed memory, computed independently over the whole population.
    rng = np.random.default_rng(11)
    count = 400
    scope_keys = [f"s{k % 3}" for k in range(count)]
    seconds = np.sort(rng.uniform(0, 40 * HOUR, count))
    vectors = np.stack([unit(v) for v in rng.standard_normal((count, 16))])
    changed = np.zeros(count, dtype=bool)
    changed[rng.choice(count, 12, replace=False)] = True
    whole = episode_links(scope_keys, seconds, vectors, HOUR, 0.0)
    expected = {(int(a), int(b)) for a, b in zip(whole.first, whole.second) if changed[a] or changed[b]}
    touched = episodes_of(scope_keys, seconds, HOUR).touching(changed)
    rows = touched.members()
    assert 0 < rows.size < count
    number = np.full(count, -1, dtype=np.int64)
    number[rows] = np.arange(rows.size)
    found = closest_partners(touched.renumbered(number), vectors[rows], 0.0)
    got = {(int(rows[a]), int(rows[b])) for a, b in zip(found.first, found.second)
           if changed[rows[a]] or changed[rows[b]]}
    assert got == expected


def test_a_memory_without_a_vector_is_in_its_episode_but_compared_with_nothing():
    # Rows 0, 1, 2 are one episode; row 1 has no vector (numbered -1): 0 and 2 are each other's closest.
    episodes = episodes_of([""] * 3, np.array([0.0, 10.0, 20.0]), HOUR)
    found = closest_partners(episodes.renumbered(np.array([0, -1, 1])), np.stack([axis(0), axis(0)]), 0.5)
    assert (found.first.tolist(), found.second.tolist()) == ([0], [1])


def test_episodes_in_parts_keep_every_episode_whole_and_each_part_within_its_size():
    rng = np.random.default_rng(4)
    seconds = np.sort(rng.uniform(0, 40 * HOUR, 600))
    episodes = episodes_of(["u"] * 600, seconds, HOUR)
    sizes = [stop - start for start, stop in episodes.blocks]
    parts = episodes.parts(50)
    assert [block for part in parts for block in part.blocks] == episodes.blocks  # all, in order, once
    for part in parts:
        held = sum(stop - start for start, stop in part.blocks)
        # At most 50, unless a single episode is larger on its own.
        assert held <= 50 or len(part.blocks) == 1
    # Greedy: a part and the next episode together would pass the size.
    assert all(sum(stop - start for start, stop in part.blocks) + (nxt.blocks[0][1] - nxt.blocks[0][0]) > 50
               for part, nxt in zip(parts, parts[1:]))
    assert sum(sizes) == sum(part.members().size for part in parts)


def test_creative_reads_the_episodes_a_part_at_a_time_with_the_same_links(tmp_path, clock, monkeypatch):
    from consolidation.tasks import creative

    def edges_with_part(part: int, where: str) -> dict:
        monkeypatch.setattr(creative, "EPISODE_PART", part)
        services = build_services(make_settings(tmp_path / where), clock=clock)
        try:
            rng = np.random.default_rng(9)
            for k in range(40):  # four talks of ten memories, one topic each with noise
                add_memory(services, id=str(uuid.UUID(int=k + 1)), timestamp=at(k % 10 + 120 * (k // 10)),
                           vector=unit(axis(k // 10) + 0.6 * rng.standard_normal(axis(0).size) / np.sqrt(axis(0).size)))
            report = services.engine.run(["creative"])["result"]["creative"]
            return same_episode_edges(services), report["by_kind"]["same_episode"]
        finally:
            services.close()

    whole, count = edges_with_part(10_000, "whole")
    parted, parted_count = edges_with_part(3, "parted")  # smaller than one talk: a part per episode
    assert count >= 10 and parted == pytest.approx(whole) and parted_count == count
