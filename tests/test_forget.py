"""Forgetting on the real stores: protections hold, archive and delete reach both stores, deletions are reversible."""

import math
from datetime import timedelta

import pytest

from consolidation.service import build_services
from consolidation.settings import load_settings
from tests.conftest import NOW, TOKEN, add_memory, days_ago, link, make_settings


def run_forget(services, dry_run=False):
    return services.engine.run(["forget"], dry_run=dry_run)["result"]["forget"]


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


# --- archive first, delete after the dwell -------------------------------------------------------------------

DWELL = 30  # CONSOLIDATION_DELETE_AFTER_ARCHIVED_DAYS, the default


@pytest.fixture
def as_the_readme_says(tmp_path, clock):
    """The README's thresholds, with the default dwell before a deletion."""
    settings = make_settings(tmp_path / "data", consolidation_archive_threshold=0.1,
                             consolidation_delete_threshold=0.02, consolidation_delete_after_archived_days=DWELL)
    services = build_services(settings, clock=clock)
    yield services
    services.close()


def fading_store(services) -> dict[str, str]:
    """Memories on each side of the lines, some archived already (with and without an archive time)."""
    return {
        "unused_a": add_memory(services, **old()),  # about 3e-11: far below the delete line
        "unused_b": add_memory(services, **old()),
        # 200 days old, used 10 days ago: e^-2 * e^-0.5 * 0.85 = 0.070, between the lines; 29 days later
        # e^-2.29 * e^-1.95 * 0.85 = 0.012, below the delete line
        "faded": add_memory(services, timestamp=days_ago(200), last_accessed=days_ago(10)),
        "archived_recently": add_memory(services, **old(archived=True, archived_at=days_ago(10))),
        "archived_long_ago": add_memory(services, **old(archived=True, archived_at=days_ago(45))),
        "archived_undated": add_memory(services, **old(archived=True)),  # imported so: no archived_at
        "decision": add_memory(services, **old(type="Decision")),
    }


def at(moment) -> str:
    return moment.isoformat()


def test_the_dwell_is_thirty_days_unless_set():
    assert load_settings({"ADMIN_API_TOKEN": TOKEN}).consolidation_delete_after_archived_days == 30
    assert load_settings({"ADMIN_API_TOKEN": TOKEN, "CONSOLIDATION_DELETE_AFTER_ARCHIVED_DAYS": "0"}) \
        .consolidation_delete_after_archived_days == 0


def test_a_first_run_archives_and_deletes_only_what_was_archived_for_the_dwell(as_the_readme_says):
    ids = fading_store(as_the_readme_says)
    report = run_forget(as_the_readme_says)
    decisions = decisions_by_id(report)
    assert {name for name, i in ids.items() if decisions.get(i, {}).get("action") == "archive"} == \
        {"unused_a", "unused_b", "faded"}
    assert "delete threshold 0.02: archived first" in decisions[ids["unused_a"]]["reason"]
    assert "archive threshold 0.1" in decisions[ids["faded"]]["reason"]
    assert decisions[ids["archived_long_ago"]]["action"] == "delete"
    assert "archived 45.0 days >= 30" in decisions[ids["archived_long_ago"]]["reason"]
    assert decisions[ids["decision"]]["action"] == "protect"
    assert (report["archived"], report["deleted"], report["protected"]) == (3, 1, 1)
    assert {item["memory_id"] for item in report["awaiting_deletion"]} == \
        {ids["archived_recently"], ids["archived_undated"]}
    assert report["awaiting_deletion_total"] == 2 and report["kept"] == 0
    graph, vectors = as_the_readme_says.stores.graph, as_the_readme_says.stores.vectors
    assert graph.get_memory(ids["archived_long_ago"]) is None and vectors.payloads([ids["archived_long_ago"]]) == {}
    for name in ("unused_a", "unused_b", "faded"):
        memory = graph.get_memory(ids[name])
        assert memory["archived"] is True and memory["archived_at"] == at(NOW), name
        assert vectors.payloads([ids[name]])[ids[name]]["archived"] is True
    # The memory archived without a time gets one now: its dwell counts from the run that found it.
    assert graph.get_memory(ids["archived_undated"])["archived_at"] == at(NOW)
    assert graph.get_memory(ids["archived_recently"])["archived_at"] == days_ago(10)


def test_after_the_dwell_the_archived_memories_are_deleted(as_the_readme_says, clock):
    ids = fading_store(as_the_readme_says)
    run_forget(as_the_readme_says)
    graph = as_the_readme_says.stores.graph
    clock.advance(days=DWELL - 1)  # archived_recently has now been archived 10 + 29 days; the rest 29
    report = run_forget(as_the_readme_says)
    assert {d["memory_id"] for d in report["decisions"] if d["action"] == "delete"} == {ids["archived_recently"]}
    waiting = {item["memory_id"] for item in report["awaiting_deletion"]}
    assert waiting == {ids[name] for name in ("unused_a", "unused_b", "faded", "archived_undated")}
    clock.advance(hours=12)  # within the dwell nothing is due: an incremental pass reads none of them
    report = run_forget(as_the_readme_says)
    assert (report["pass"], report["memories_processed"], report["deleted"]) == ("incremental", 0, 0)
    clock.advance(hours=12)
    report = run_forget(as_the_readme_says)
    # The due times the last full pass kept bring the memories whose dwell ended into this incremental one.
    assert report["pass"] == "incremental"
    gone = {name for name, i in ids.items() if graph.get_memory(i) is None}
    assert gone == {"archived_long_ago", "archived_recently", "unused_a", "unused_b", "faded", "archived_undated"}
    assert report["deleted"] == 4 and report["awaiting_deletion"] == []
    assert as_the_readme_says.stores.vectors.payloads([ids["faded"]]) == {}


def test_without_a_dwell_a_memory_below_the_delete_line_is_deleted_at_once(tmp_path, clock):
    settings = make_settings(tmp_path / "data", consolidation_archive_threshold=0.1,
                             consolidation_delete_threshold=0.02, consolidation_delete_after_archived_days=0)
    services = build_services(settings, clock=clock)
    try:
        gone = add_memory(services, **old())
        lately_archived = add_memory(services, **old(archived=True, archived_at=days_ago(1)))
        report = run_forget(services)
        decisions = decisions_by_id(report)
        assert decisions[gone]["action"] == decisions[lately_archived]["action"] == "delete"
        assert decisions[gone]["deletable_at"] == at(NOW)  # active: from now
        assert decisions[lately_archived]["deletable_at"] == days_ago(1)  # its archive time, no dwell added
        assert (report["archived"], report["deleted"], report["awaiting_deletion"]) == (0, 2, [])
        assert services.stores.graph.get_memory(gone) is None
    finally:
        services.close()


def test_the_preview_says_when_each_archived_memory_may_be_deleted(as_the_readme_says, clock):
    ids = fading_store(as_the_readme_says)
    preview = run_forget(as_the_readme_says, dry_run=True)
    decisions = decisions_by_id(preview)
    # deletable_at = archive time + 30 days: now for those archived now (or found archived without a time).
    in_dwell = at(NOW + timedelta(days=DWELL))
    assert decisions[ids["unused_a"]]["deletable_at"] == decisions[ids["unused_b"]]["deletable_at"] == in_dwell
    assert decisions[ids["faded"]]["deletable_at"] is None  # above the delete line: archived only
    assert decisions[ids["archived_long_ago"]]["deletable_at"] == at(NOW - timedelta(days=45 - DWELL))
    assert decisions[ids["decision"]]["deletable_at"] is None  # protected
    awaiting = [(item["memory_id"], item["action"], item["deletable_at"]) for item in preview["awaiting_deletion"]]
    assert awaiting == [(ids["archived_recently"], "await", at(NOW + timedelta(days=DWELL - 10))),
                        (ids["archived_undated"], "await", in_dwell)]  # soonest first
    assert "archived 10.0 of the 30 days" in preview["awaiting_deletion"][0]["reason"]
    assert as_the_readme_says.stores.graph.get_memory(ids["archived_undated"]).get("archived_at") is None  # dry
    real = run_forget(as_the_readme_says)
    assert (real["decisions"], real["awaiting_deletion"]) == (preview["decisions"], preview["awaiting_deletion"])
    # Later, the memories archived by that run wait out their dwell, dated from that run.
    clock.advance(days=12)
    later = run_forget(as_the_readme_says, dry_run=True)
    dates = {item["memory_id"]: item["deletable_at"] for item in later["awaiting_deletion"]}
    assert dates[ids["unused_a"]] == dates[ids["archived_undated"]] == in_dwell
    assert dates[ids["archived_recently"]] == at(NOW + timedelta(days=DWELL - 10))


def test_a_report_while_forgetting_is_off_says_so(services, client_for):
    add_memory(services, **old())
    preview = run_forget(services, dry_run=True)
    assert preview["forgetting_enabled"] is False and preview["kept"] == 1
    assert preview["forgetting_note"].startswith("forgetting is off")
    assert "CONSOLIDATION_ARCHIVE_THRESHOLD" in preview["forgetting_note"]
    client = client_for(services)
    ran = client.post("/consolidate", json={"task": "forget", "wait": True}, headers=client.auth)
    assert ran.status_code == 200, ran.json
    opened = client.get(f"/consolidate/runs/{ran.json['run_id']}/report?task=forget", headers=client.auth).json
    assert opened["report"]["forgetting_enabled"] is False
    assert opened["report"]["forgetting_note"].startswith("forgetting is off")


def test_a_report_while_forgetting_is_on_says_so_without_a_note(as_the_readme_says):
    report = run_forget(as_the_readme_says, dry_run=True)
    assert report["forgetting_enabled"] is True and report["delete_after_archived_days"] == DWELL
    assert "forgetting_note" not in report


def test_relationships_count_wherever_they_can_change_a_decision_or_a_score_forget_keeps(forgetful):
    # 150 days old, used 2 days ago: e^-1.5 * e^-0.1 * 0.85 = 0.1716 alone, below the archive line (0.2); three
    # relationships lift it by 1 + 0.3 ln 4 to 0.2430, above it.
    faded = {"timestamp": days_ago(150), "last_accessed": days_ago(2)}
    alone, lifted = add_memory(forgetful, **faded), add_memory(forgetful, **faded)
    # Archived, 140 days old, used half a day ago: e^-1.4 * 0.85 = 0.2096 alone, above both lines; with three
    # relationships 0.2968, stored capped at 0.25 (an archived memory's score is forget's to keep current).
    shelved = add_memory(forgetful, timestamp=days_ago(140), last_accessed=days_ago(0.5), archived=True,
                         archived_at=days_ago(1), relevance_score=0.9)
    for memory in (lifted, shelved):
        for _ in range(3):
            link(forgetful, memory, add_memory(forgetful))
    report = run_forget(forgetful)
    decisions = decisions_by_id(report)
    assert decisions[alone]["action"] == "archive" and decisions[alone]["relevance"] == pytest.approx(0.1716, abs=1e-4)
    assert lifted not in decisions and shelved not in decisions
    graph = forgetful.stores.graph
    assert graph.get_memory(lifted)["archived"] is False
    assert graph.get_memory(shelved)["relevance_score"] == pytest.approx(0.25)
    assert forgetful.stores.vectors.payloads([shelved])[shelved]["relevance_score"] == pytest.approx(0.25)
