"""Forgetting on the real stores: protections hold, archive and delete reach both stores, deletions are reversible."""

import math
from datetime import timedelta

import pytest

from consolidation.service import build_services
from tests.conftest import add_memory, days_ago, link, make_settings


@pytest.fixture
def forgetful(tmp_path, clock):
    settings = make_settings(tmp_path / "data", consolidation_archive_threshold=0.2,
                             consolidation_delete_threshold=0.05)
    services = build_services(settings, clock=clock)
    yield services
    services.close()


def run_forget(services, dry_run=False):
    return services.engine.run(["forget"], dry_run=dry_run)["results"]["forget"]


def old(**fields):
    """Fields of a memory that is 400 days old and unused: its relevance is about 0."""
    return {"timestamp": days_ago(400), "last_accessed": days_ago(400), "importance": 0.3, **fields}


def decisions_by_id(report):
    return {d["memory_id"]: d for d in report["decisions"] + report["protections"]}


def test_irrelevant_memories_are_archived_or_deleted_in_both_stores(forgetful):
    gone = add_memory(forgetful, **old())
    # 150 days old, used 2 days ago: e^-1.5 * e^-0.1 * 0.85 = 0.17, between the thresholds
    faded = add_memory(forgetful, timestamp=days_ago(150), last_accessed=days_ago(2))
    fresh = add_memory(forgetful, timestamp=days_ago(100), last_accessed=days_ago(0.5))
    report = run_forget(forgetful)
    decisions = decisions_by_id(report)
    assert decisions[gone]["action"] == "delete" and "delete threshold 0.05" in decisions[gone]["reason"]
    assert decisions[faded]["action"] == "archive" and "archive threshold 0.2" in decisions[faded]["reason"]
    assert fresh not in decisions
    assert (report["deleted"], report["archived"], report["kept"]) == (1, 1, 1)
    graph, vectors = forgetful.stores.graph, forgetful.stores.vectors
    assert graph.get_memory(gone) is None and vectors.payloads([gone]) == {}
    archived = graph.get_memory(faded)
    assert archived["archived"] is True and archived["archived_at"].startswith("2026-06-01")
    assert vectors.payloads([faded])[faded]["archived"] is True
    assert graph.get_memory(fresh)["archived"] is False


@pytest.mark.parametrize("fields, reason", [
    ({"timestamp": days_ago(60), "last_accessed": days_ago(60)}, "grace period"),
    ({"importance": 0.7}, "importance"),
    ({"type": "Decision"}, "type Decision is protected"),
    ({"type": "Insight"}, "type Insight is protected"),
    ({"protected": True, "protected_reason": "pinned"}, "protected: pinned"),
])
def test_each_protection_keeps_a_memory(forgetful, fields, reason):
    kept = add_memory(forgetful, **old(**fields))
    report = run_forget(forgetful)
    decision = decisions_by_id(report)[kept]
    assert decision["action"] == "protect" and reason in decision["reason"]
    memory = forgetful.stores.graph.get_memory(kept)
    assert memory is not None and memory["archived"] is False
    assert forgetful.stores.vectors.payloads([kept])[kept]["archived"] is False


def test_thresholds_of_zero_forget_nothing(services):
    memory = add_memory(services, **old())
    report = run_forget(services)
    assert report["decisions"] == [] and report["kept"] == 1
    assert services.stores.graph.get_memory(memory) is not None


def test_a_dry_run_lists_exactly_what_a_real_run_does(forgetful):
    ids = [add_memory(forgetful, **old()), add_memory(forgetful, **old(type="Decision")),
           add_memory(forgetful, timestamp=days_ago(150), last_accessed=days_ago(2))]
    preview = run_forget(forgetful, dry_run=True)
    assert forgetful.stores.graph.count_memories() == 3 and forgetful.stores.vectors.count() == 3
    assert all(not forgetful.stores.graph.get_memory(m)["archived"] for m in ids)
    real = run_forget(forgetful)
    assert preview["decisions"] == real["decisions"]


def test_a_deleted_memory_is_restored_with_its_fields_vector_and_surviving_edges(forgetful, client_for):
    gone = add_memory(forgetful, **old(content="the old memory", tags=["a", "b"], access_count=7))
    keeper = add_memory(forgetful, type="Decision")
    lost = add_memory(forgetful, type="Decision")
    link(forgetful, gone, keeper, "RELATES_TO")
    link(forgetful, lost, gone, "DISCOVERED")
    original = forgetful.stores.graph.get_memory(gone)
    _, vector_before = forgetful.stores.vectors.vectors([gone])
    run_forget(forgetful)
    assert forgetful.stores.graph.get_memory(gone) is None
    forgetful.stores.graph.falkor.execute("MATCH (m:Memory {id: $id}) DETACH DELETE m", {"id": lost})

    client = client_for(forgetful)
    response = client.post(f"/memory/{gone}/restore", headers=client.auth)
    assert response.status_code == 200, response.json
    assert response.json["edges_restored"] == 1 and response.json["edges_lost"] == 1
    restored = forgetful.stores.graph.get_memory(gone)
    # Exactly as it was, except that the restore counts as a use, starts a fresh grace period, holds it for
    # the restore hold (30 days by default) and rescores it at once: 400 days old, used now, one edge,
    # importance 0.3, confidence 0.5.
    now = forgetful.engine.clock()
    assert restored["restored_at"] == restored["last_accessed"] == now.isoformat()
    assert restored["held_until"] == (now + timedelta(days=30)).isoformat()
    assert restored["access_count"] == 8
    expected = math.exp(-0.01 * 400) * 1.0 * (1 + 0.3 * math.log(2)) * (0.5 + 0.3) * (0.7 + 0.3 * 0.5)
    assert restored["relevance_score"] == pytest.approx(expected, rel=1e-9)
    assert forgetful.stores.vectors.payloads([gone])[gone]["relevance_score"] == pytest.approx(expected, rel=1e-6)
    changed = ("restored_at", "last_accessed", "held_until", "access_count", "relevance_score")
    assert {k: v for k, v in restored.items() if k not in changed} == \
        {k: v for k, v in original.items() if k not in changed}
    _, vector_after = forgetful.stores.vectors.vectors([gone])
    assert vector_after[0] == pytest.approx(vector_before[0], abs=1e-6)
    rows = forgetful.stores.graph.falkor.execute(
        "MATCH (a:Memory {id: $id})-[r]-(b) RETURN type(r), b.id", {"id": gone})
    assert rows == [["RELATES_TO", keeper]]
    assert client.post(f"/memory/{gone}/restore", headers=client.auth).status_code == 409


def test_an_archived_memory_is_restored_by_unarchiving(forgetful, client_for):
    faded = add_memory(forgetful, timestamp=days_ago(150), last_accessed=days_ago(2))
    run_forget(forgetful)
    client = client_for(forgetful)
    assert client.post(f"/memory/{faded}/restore", headers=client.auth).json["restored_from"] == "archive"
    assert forgetful.stores.graph.get_memory(faded)["archived"] is False
    assert forgetful.stores.vectors.payloads([faded])[faded]["archived"] is False


def test_restore_of_an_unknown_memory_is_404(forgetful, client_for):
    client = client_for(forgetful)
    response = client.post("/memory/00000000-0000-4000-8000-000000000000/restore", headers=client.auth)
    assert response.status_code == 404 and response.json["error"] == "not_found"


def test_tombstones_are_purged_after_the_retention_period(forgetful, clock, client_for):
    gone = add_memory(forgetful, **old())
    run_forget(forgetful)
    clock.advance(days=31)
    report = run_forget(forgetful)
    assert report["tombstones_purged"] == 1
    client = client_for(forgetful)
    assert client.post(f"/memory/{gone}/restore", headers=client.auth).status_code == 404
