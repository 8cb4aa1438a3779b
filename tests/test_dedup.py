"""The dedup task on the real stores: merges and their refusals, supersessions, contradictions, exact restores."""

from __future__ import annotations

import json
import math
import uuid
from datetime import timedelta

import numpy as np
import pytest

from consolidation.hygiene.terms import TERMS_VERSION
from consolidation.stores.vectors import VectorPoint
from tests.conftest import NOW, add_memory, axis, days_ago, link, unit, vector_at

BASE, OTHER, THIRD = axis(0), axis(1), axis(2)
NEAR = vector_at(0.97, BASE, OTHER)  # as close as a restatement, or as a look-alike from a real model


def remember(services, text, vector=BASE, memory_type="Decision", **fields) -> str:
    return add_memory(services, vector=vector, content=text, type=memory_type, **fields)


def dedup(services, dry_run=False) -> dict:
    return services.engine.run(["dedup"], dry_run=dry_run)["result"]["dedup"]


def stored(services, memory_id):
    return services.stores.graph.get_memory(memory_id)


def edges(services, relation):
    rows = services.stores.graph.falkor.records(
        f"MATCH (a:Memory)-[r:{relation}]->(b:Memory) RETURN a.id, b.id, properties(r)")
    return [(a, b, dict(props)) for a, b, props in rows]


def test_restatements_merge_into_the_most_connected_memory(services):
    first = remember(services, "Decided to use PostgreSQL for the billing database", access_count=2,
                     importance=0.4, confidence=0.9, tags=["db"], timestamp=days_ago(10), last_accessed=days_ago(5))
    second = remember(services, "we chose postgresql for the billing database!", NEAR, access_count=3,
                      importance=0.8, confidence=0.5, tags=["billing"], timestamp=days_ago(3),
                      last_accessed=days_ago(1))
    friend = remember(services, "The billing team is in Berlin", THIRD, memory_type="Context")
    link(services, second, friend)  # the most connected memory is canonical, even though it is newer

    report = dedup(services)

    assert report["merged"] == 1 and report["merges_total"] == 1
    merge = report["merges"][0]
    assert merge["into"] == second and merge["duplicates"] == [first]
    assert merge["similarity"] == pytest.approx(0.97, abs=1e-4) and "postgresql" in merge["reason"]
    duplicate, canonical = stored(services, first), stored(services, second)
    assert duplicate["archived"] is True and duplicate["merged_into"] == second
    assert canonical["access_count"] == 5 and canonical["importance"] == 0.8 and canonical["confidence"] == 0.9
    assert canonical["last_accessed"] == days_ago(1) and canonical["tags"] == ["billing", "db"]
    assert [(a, b) for a, b, _ in edges(services, "MERGED_INTO")] == [(first, second)]
    assert services.stores.vectors.payloads([first])[first]["archived"] is True
    assert services.engine.status()["store_counts"]["in_sync"]


def test_a_duplicates_edges_move_to_the_canonical_and_remember_where_from(services):
    canonical = remember(services, "Use Redis for session caching", access_count=9)
    duplicate = remember(services, "We picked Redis for session caching", NEAR)
    outgoing, incoming, own = (remember(services, f"A context memory {i}", axis(3 + i), memory_type="Context")
                               for i in range(3))
    link(services, duplicate, outgoing, "RELATES_TO")
    link(services, incoming, duplicate, "LEADS_TO")
    link(services, canonical, own, "MENTIONS")
    link(services, canonical, outgoing, "MENTIONS")  # as connected as the duplicate, and more used: canonical
    assert dedup(services)["merges"][0]["into"] == canonical
    moved = {(a, b, props.get("repointed_from")) for a, b, props in
             edges(services, "RELATES_TO") + edges(services, "LEADS_TO")}
    assert moved == {(canonical, outgoing, duplicate), (incoming, canonical, duplicate),
                     (duplicate, outgoing, None), (incoming, duplicate, None)}
    # The relations a client wrote (not marked ours) stay on the duplicate too, as they were: copied, not moved.
    remaining = services.stores.graph.falkor.execute(
        "MATCH (d:Memory {id: $id})-[r]-(x) RETURN type(r), x.id, r.repointed_from ORDER BY type(r)",
        {"id": duplicate})
    assert remaining == [["LEADS_TO", incoming, None], ["MERGED_INTO", canonical, None],
                         ["RELATES_TO", outgoing, None]]


@pytest.mark.parametrize("text, look_alike, conflict, values", [
    ("Staging deploys happen on Tuesday", "Production deploys happen on Tuesday", "environment",
     ("Staging", "Production")),
    ("The cache TTL is 5 minutes", "The cache TTL is 15 minutes", "number", ("5", "15")),
    ("User likes dark mode in the editor", "User does not like dark mode in the editor", "negation", ("not",)),
    ("Prefer tabs over spaces", "Prefer spaces over tabs", "relation side", ("over spaces", "over tabs")),
])
def test_a_look_alike_is_never_merged_even_with_the_same_vector(services, text, look_alike, conflict, values):
    a = remember(services, text)
    b = remember(services, look_alike)  # identical vectors: only the text can tell them apart
    report = dedup(services)
    assert report["merged"] == 0 and not stored(services, a)["archived"] and not stored(services, b)["archived"]
    assert report["kept_apart_total"] == 1
    reason = report["kept_apart"][0]["reason"]  # the conflict, in the memories' own words
    assert f"conflicting {conflict}" in reason and all(value in reason for value in values)


def test_memories_of_different_types_are_never_merged(services):
    remember(services, "Use PostgreSQL for billing", memory_type="Decision")
    remember(services, "Use PostgreSQL for billing", memory_type="Context")
    assert dedup(services)["merged"] == 0


def test_a_protected_memory_is_never_archived_by_a_merge(services):
    protected = remember(services, "Use Kafka for the event bus", protected=True)
    busy = remember(services, "We chose Kafka for the event bus", NEAR, access_count=50)
    third = remember(services, "Kafka was picked for the event bus", NEAR)
    report = dedup(services)
    assert report["merges"][0]["into"] == protected and set(report["merges"][0]["duplicates"]) == {busy, third}
    assert not stored(services, protected)["archived"]
    both = remember(services, "Use Kafka for the event bus!", protected=True)
    assert dedup(services)["merged"] == 0 and not stored(services, both)["archived"]


def test_below_the_similarity_threshold_nothing_is_merged(services):
    remember(services, "Use Grafana for dashboards")
    remember(services, "We chose Grafana for dashboards", vector_at(0.5, BASE, OTHER))
    assert dedup(services)["merged"] == 0


def test_a_newer_change_supersedes_the_statement_it_changes(services, clock):
    old = remember(services, "Production deploys happen on Tuesday", memory_type="Context", timestamp=days_ago(30),
                   last_accessed=clock().isoformat(), access_count=10)
    look_alike = remember(services, "Staging deploys happen on Tuesday", THIRD, memory_type="Context",
                          timestamp=days_ago(30))
    new = remember(services, "Production deploys moved from Tuesday to Thursday", vector_at(0.8, BASE, OTHER),
                   memory_type="Context", timestamp=days_ago(2))
    before = services.engine.run(["decay"])["result"]["decay"]["average_after"]

    report = dedup(services)

    assert [(s["newer"], s["older"]) for s in report["supersessions"]] == [(new, old)]
    assert report["supersessions"][0]["confidence"] == 0.9 and report["contradictions"] == []
    assert stored(services, old)["superseded_by"] == new and stored(services, look_alike).get("superseded_by") is None
    # A filtered vector search can leave the superseded memory out: the payload says so.
    payloads = services.stores.vectors.payloads([old, look_alike, new])
    assert [payloads[i]["superseded"] for i in (old, look_alike, new)] == [True, False, False]
    [(newer, older, props)] = edges(services, "SUPERSEDES")
    assert (newer, older) == (new, old) and props["reason"] and props["confidence"] == 0.9
    # Superseded, it decays as if unused since it was made (30 days), though it was used today. Its two edges
    # (SUPERSEDES, and the EVOLVED_INTO that mirrors it for AutoMem) count as relationships, as AutoMem counts them.
    services.engine.run(["decay"])
    assert stored(services, old)["relevance_score"] < before
    assert stored(services, old)["relevance_score"] == pytest.approx(
        np.exp(-0.01 * 30) * np.exp(-0.05 * 30) * (1 + 0.3 * np.log(3)) * 1.0 * 0.85, abs=1e-4)


def test_a_change_recorded_before_the_statement_it_changes_contradicts_it(services):
    change = remember(services, "Design reviews moved from Friday to Monday", memory_type="Context",
                      timestamp=days_ago(10))
    statement = remember(services, "Design reviews are held on Friday", vector_at(0.8, BASE, OTHER),
                         memory_type="Context", timestamp=days_ago(7))
    report = dedup(services)
    assert report["supersessions"] == []
    [contradiction] = report["contradictions"]
    assert {contradiction["a"], contradiction["b"]} == {change, statement}
    assert contradiction["confidence"] == 0.6 and "before the memory it changes" in contradiction["reason"]
    assert len(edges(services, "CONTRADICTS")) == 1


def test_unrelated_decisions_never_contradict_and_a_second_run_changes_nothing(services):
    remember(services, "Adopt trunk based development", axis(5))
    remember(services, "Use PostgreSQL for billing", axis(6))
    remember(services, "We chose PostgreSQL for billing", vector_at(0.97, axis(6), axis(7)))
    remember(services, "Deploys happen on Tuesday", axis(8), memory_type="Context", timestamp=days_ago(20))
    remember(services, "Deploys moved from Tuesday to Thursday", vector_at(0.8, axis(8), axis(9)),
             memory_type="Context", timestamp=days_ago(1))
    first = dedup(services)
    assert (first["merged"], first["supersessions_total"], first["contradictions_total"]) == (1, 1, 0)
    second = dedup(services)
    assert (second["merged"], second["supersessions_total"], second["contradictions_total"]) == (0, 0, 0)
    assert len(edges(services, "SUPERSEDES")) == 1 and edges(services, "CONTRADICTS") == []


def test_a_dry_run_reports_and_writes_nothing(services):
    a = remember(services, "Use Sentry for error tracking")
    remember(services, "We chose Sentry for error tracking", NEAR)
    report = dedup(services, dry_run=True)
    assert report["merged"] == 1 and not stored(services, a)["archived"]
    assert services.stores.graph.falkor.execute("MATCH (r:MergeRecord) RETURN count(r)")[0][0] == 0
    assert services.engine.control.state().get("last_dedup") is None


def snapshot(services, memory_id):
    memory = dict(stored(services, memory_id))
    rows = services.stores.graph.falkor.execute(
        "MATCH (m:Memory {id: $id})-[r]-(o:Memory) RETURN type(r), id(startNode(r)) = id(m), o.id", {"id": memory_id})
    return memory, sorted(map(tuple, rows))


def test_a_restore_undoes_a_merge_exactly_and_sticks(services, client, auth, clock):
    canonical = remember(services, "Use Terraform for provisioning", access_count=4, importance=0.3,
                         tags=["infra"], last_accessed=days_ago(9))
    duplicate = remember(services, "We chose Terraform for provisioning", NEAR, access_count=2, importance=0.9,
                         tags=["ops"], last_accessed=days_ago(2))
    other = remember(services, "The ops team owns provisioning", THIRD, memory_type="Context")
    link(services, duplicate, other)
    link(services, canonical, other, "MENTIONS")
    canonical_before, duplicate_before = snapshot(services, canonical), snapshot(services, duplicate)
    assert dedup(services)["merged"] == 1
    clock.advance(hours=1)

    answer = client.post(f"/memory/{duplicate}/restore", headers=auth)

    assert answer.status_code == 200
    assert answer.json["restored_from"] == "merge" and answer.json["canonical_id"] == canonical
    assert snapshot(services, canonical)[1] == canonical_before[1]
    assert {k: v for k, v in snapshot(services, canonical)[0].items() if k != "distinct_from"} == canonical_before[0]
    restored, restored_edges = snapshot(services, duplicate)
    assert restored_edges == duplicate_before[1]
    assert restored["last_accessed"] == restored["restored_at"] == clock().isoformat()  # a use, a fresh grace
    assert restored["access_count"] == 3 and restored["held_until"] == (clock() + timedelta(days=30)).isoformat()
    # Rescored at once: an hour old, used now, one edge, importance 0.9: over the cap of 1.
    assert restored["relevance_score"] == min(1.0, (1 + 0.3 * math.log(2)) * 1.4 * 0.85)
    changed = ("last_accessed", "restored_at", "distinct_from", "access_count", "held_until", "relevance_score")
    assert {k: v for k, v in restored.items() if k not in changed} == \
        {k: v for k, v in duplicate_before[0].items() if k not in changed}
    assert restored["distinct_from"] == [canonical]
    assert services.stores.vectors.payloads([duplicate])[duplicate]["archived"] is False
    assert services.engine.status()["store_counts"]["in_sync"]
    assert client.get(f"/memory/{duplicate}", headers=auth).json["memory"]["merged_into"] is None
    # The next scheduled dedup does not merge that pair again.
    clock.advance(days=1)
    assert "dedup" in services.scheduler.run_once()[0]["tasks"]
    assert not stored(services, duplicate)["archived"]


def test_a_restored_memory_is_not_forgotten_again_by_the_next_scheduled_forget(tmp_path, clock):
    from consolidation.service import build_services
    from tests.conftest import make_settings

    settings = make_settings(tmp_path / "d", consolidation_delete_threshold=0.05,
                             consolidation_forget_interval_seconds=86400)
    services = build_services(settings, clock=clock)
    try:
        old = add_memory(services, timestamp=days_ago(400), last_accessed=days_ago(400), importance=0.1,
                         relevance_score=0.01)
        assert "forget" in services.scheduler.run_once()[0]["tasks"]
        assert stored(services, old) is None
        services.memories.restore(old)
        clock.advance(days=1, minutes=1)
        assert "forget" in services.scheduler.run_once()[0]["tasks"]
        memory = stored(services, old)
        assert memory is not None and memory["last_accessed"] == memory["restored_at"]
    finally:
        services.close()


def test_get_memory_always_shows_merged_into_and_superseded_by(client, auth, services):
    memory = remember(services, "Use S3 for backups")
    shown = client.get(f"/memory/{memory}", headers=auth).json["memory"]
    assert shown["merged_into"] is None and shown["superseded_by"] is None


def test_a_merge_a_crash_interrupted_is_completed_under_the_lease(services, monkeypatch):
    from consolidation.stores.hygiene import HygieneStore

    canonical = remember(services, "Use Stripe for card payments", access_count=3)
    duplicate = remember(services, "We picked Stripe for card payments", NEAR)
    monkeypatch.setattr(HygieneStore, "_apply", lambda self, records: None)  # the fault: died after the records
    dedup(services)
    monkeypatch.undo()
    assert not stored(services, duplicate)["archived"] and services.engine.lifecycle.has_pending()
    held = services.engine.begin(["decay"], dry_run=True, trigger="test")  # a live run holds the lease
    services.engine.complete_interrupted()
    assert not stored(services, duplicate)["archived"]
    services.engine.execute(held)
    assert services.engine.complete_interrupted() == 1
    assert stored(services, duplicate)["merged_into"] == canonical and not services.engine.lifecycle.has_pending()
    assert dedup(services)["merged"] == 0


def test_the_full_run_shares_one_neighbour_graph_between_dedup_and_cluster(services, monkeypatch):
    import consolidation.neighbours as neighbours

    calls = []
    real = neighbours.similar_pairs_within
    monkeypatch.setattr(neighbours, "similar_pairs_within", lambda *a, **k: calls.append(1) or real(*a, **k))
    for i in range(6):
        add_memory(services, vector=unit(BASE + 0.05 * axis(3 + i)), content=f"a note about topic {i}")
    result = services.engine.run(["dedup", "cluster"])
    assert result["result"]["cluster"]["clusters_found"] == 1 and len(calls) == 1


def test_a_new_memory_is_written_with_the_fact_terms_a_dedup_pass_would_store(services, client, auth, monkeypatch):
    """Terms are kept like an index, on write: a dedup pass stores them only for memories written without them
    (by another program), and stores the same terms the write did."""
    from consolidation.stores.hygiene import HygieneStore

    text = "Deploys moved from Tuesday to Thursday for the payments API"
    ours = client.post("/memory", json={"content": text, "type": "Decision", "embedding": list(map(float, BASE))},
                       headers=auth).json["memory"]["id"]
    foreign = "0b5c0d4e-58a4-4d0e-9a83-2f1d6f0a7c11"
    services.stores.vectors.upsert([VectorPoint(foreign, OTHER, {})])
    services.stores.graph.falkor.execute(
        "CREATE (:Memory {id: $id, content: $text, type: 'Decision', timestamp: $now})",
        {"id": foreign, "text": text, "now": days_ago(1)})

    def terms_of(memory_id):
        rows = services.stores.graph.falkor.records(
            "MATCH (m:Memory {id: $id}) OPTIONAL MATCH (f:FactTerms {memory_id: m.id}) "
            "RETURN f.terms, f.anchors, f.least, m.fact_stamp, m.change_seq", {"id": memory_id})
        return rows[0]

    terms, anchors, least, stamp, change = terms_of(ours)
    # By hand: the change's subject and new value are terms; the old value it names is the anchor.
    assert {"deploy", "thursday", "CHANGE"} <= set(terms) and anchors == ["tuesday"]
    assert stamp == f"{TERMS_VERSION}:{change}"
    assert terms_of(foreign)[0] is None
    written = []
    real = HygieneStore.write_terms
    monkeypatch.setattr(HygieneStore, "write_terms", lambda self, rows: written.extend(rows) or real(self, rows))

    dedup(services)

    assert [row["id"] for row in written] == [foreign]
    assert terms_of(foreign)[:3] == [terms, anchors, least]
    foreign_stamp, foreign_change = terms_of(foreign)[3:]
    assert foreign_stamp == f"{TERMS_VERSION}:{foreign_change}"
    assert dedup(services)["merged"] == 0 and not written[1:]


def test_numbered_notes_recorded_at_one_moment_are_neither_merged_nor_contradicting(services):
    """An import writes notes that differ only in their numbers at one moment: serial numbers name notes, they
    are not values of one thing, so no two contradict (the rule used to link every two differing in one)."""
    rng = np.random.default_rng(3)
    lines = [{"content": f"old note {k} about topic {rng.integers(8)} and detail {rng.integers(4)}",
              "type": "Context", "timestamp": days_ago(1)} for k in range(300)]
    assert services.memories.import_jsonl("\n".join(map(json.dumps, lines)).encode()).created == 300
    for _ in range(2):
        report = services.engine.run(["dedup"], full=True)["result"]["dedup"]
        assert report["merged"] == 0 and report["contradictions_total"] == 0
    assert edges(services, "CONTRADICTS") == []


def test_what_one_run_writes_is_bounded_and_the_rest_counted(services):
    """Six closing times recorded at one moment: every two conflict (15 pairs); a memory takes at most
    CONTRADICTIONS_PER_MEMORY edges and the report counts the pairs left out."""
    from consolidation.tasks.dedup import CONTRADICTIONS_PER_MEMORY

    when = days_ago(2)
    ids = [remember(services, f"The gym closes at {hour} pm", vector_at(0.9, BASE, axis(3 + hour)),
                    memory_type="Fact", timestamp=when) for hour in range(5, 11)]
    report = dedup(services)
    written = edges(services, "CONTRADICTS")
    per_memory = {i: sum(i in (a, b) for a, b, _ in written) for i in ids}
    assert max(per_memory.values()) <= CONTRADICTIONS_PER_MEMORY
    assert len(written) == report["contradictions_total"] and len(written) + report["contradictions_left_out"] == 15
    assert report["contradictions_left_out"] > 0
    again = dedup(services)  # a memory already at its bound takes no more on a later run
    assert again["contradictions_total"] == 0 and len(edges(services, "CONTRADICTS")) == len(written)


def test_a_memory_says_whether_the_built_in_embedder_made_its_vector(client, auth):
    made = client.post("/memory", json={"content": "Backups run at 2 am"}, headers=auth).json["memory"]
    sent = client.post("/memory", json={"content": "Backups run at 3 am", "embedding": [1.0] + [0.0] * 15},
                       headers=auth).json["memory"]
    assert client.get(f"/memory/{made['id']}", headers=auth).json["memory"]["embedded_by"] == "built-in"
    assert "embedded_by" not in client.get(f"/memory/{sent['id']}", headers=auth).json["memory"]


def test_candidates_hold_the_strings_kept_between_runs_not_the_ones_each_read_returns(services):
    """Each id, text, type and scope read from a store is a new string: a million of each took ~0.3 GB beside
    the ones the vector copy and the fact cache already hold. Candidates hold those instead."""
    from consolidation.hygiene.facts import read_fact
    from consolidation.stores.hygiene import HygieneStore
    from consolidation.tasks.context import positions_in
    from consolidation.tasks.dedup import candidates_of

    for i in range(3):
        add_memory(services, content=f"note {i} about the billing service", type="Decision")
    hygiene = HygieneStore(services.stores.graph.falkor, services.stores.graph.scoping)
    first_read = hygiene.inputs()
    ids, _ = services.stores.vectors.vectors(first_read.ids)
    kept = [read_fact(text).text for text in first_read.contents]
    inputs = hygiene.inputs()  # a second read: equal strings, new objects
    candidates = candidates_of(inputs, positions_in(inputs.ids, ids), ids)
    assert [c.id for c in candidates] == ids and all(c.id is i for c, i in zip(candidates, ids))
    assert sorted(c.content for c in candidates) == sorted(kept)
    assert all(any(c.content is k for k in kept) for c in candidates)
    assert all(c.content is not text for c in candidates for text in inputs.contents)
    assert len({id(c.type) for c in candidates}) == 1 and len({id(c.scope) for c in candidates}) == 1
    assert [c.created for c in candidates] == [NOW.timestamp()] * 3  # each time read as epoch seconds at once
