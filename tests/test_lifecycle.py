"""One lifecycle on the real stores: each memory in one state, merged duplicates leave with their canonical,
restores hold and count as a use, the score shown is the score used, previews cover the store, deleted
memories answer 410, overwrites never leave links across scopes, and concurrent restores get one 200."""

import math
import os
import socket
import subprocess
import sys
import threading
from datetime import timedelta

import pytest

from consolidation.errors import Conflict
from consolidation.lifecycle.states import (ACTIVE, ARCHIVED, DELETED, MERGED, TRANSITIONS, check, forgetting,
                                            state_of, violations)
from consolidation.service import build_services
from consolidation.stores.control import LEASE, ControlStore, holder_is_gone
from tests.conftest import add_memory, axis, days_ago, link, make_settings, vector_at

ARCHIVE_BELOW, DELETE_BELOW = 0.1, 0.02


@pytest.fixture
def forgetting_on(tmp_path, clock):
    """Forgetting switched on as an administrator would, with no grace period."""
    settings = make_settings(tmp_path / "data", consolidation_archive_threshold=ARCHIVE_BELOW,
                             consolidation_delete_threshold=DELETE_BELOW, consolidation_grace_period_days=0)
    services = build_services(settings, clock=clock)
    yield services
    services.close()


def run(services, *tasks, dry_run=False, **flags):
    return services.engine.run(list(tasks), dry_run=dry_run, **flags)["result"]


def merged_pair(services, canonical_fields=None, **both):
    """Two restatements dedup merges: the duplicate goes into the canonical (a protected type keeps them out
    of forget unless the test says otherwise)."""
    both = {"type": "Decision", **both}
    canonical = add_memory(services, vector=axis(0), content="Use Redis for session caching", access_count=9,
                           **{**both, **(canonical_fields or {})})
    duplicate = add_memory(services, vector=vector_at(0.97, axis(0), axis(1)),
                           content="We picked Redis for session caching", **both)
    run(services, "dedup")
    assert services.stores.graph.get_memory(duplicate).get("merged_into") == canonical
    return canonical, duplicate


def records_of(services, duplicate):
    return services.stores.graph.falkor.records(
        "MATCH (r:MergeRecord {duplicate_id: $id}) RETURN r.state ORDER BY r.merged_at", {"id": duplicate})


def consistent(services) -> list[str]:
    """Every invariant of the state model, checked over the whole graph."""
    falkor = services.stores.graph.falkor
    memories = [dict(row[0]) for row in falkor.records("MATCH (m:Memory) RETURN properties(m)")]
    records = [dict(row[0]) for row in falkor.records("MATCH (r:MergeRecord) RETURN properties(r)")]
    links = [tuple(row) for row in falkor.execute("MATCH (a:Memory)-[r]->(b:Memory) RETURN type(r), a.id, b.id")]
    scopes = {m["id"]: str(m.get("user_id")) for m in memories}
    return violations(memories, records, links, scopes)


# --- the state model, pure ----------------------------------------------------------------------------------

def test_the_state_of_a_node_follows_its_marks():
    assert state_of({"archived": False}) == ACTIVE
    assert state_of({"archived": True}) == ARCHIVED
    assert state_of({"archived": True, "merged_into": "c"}) == MERGED
    assert TRANSITIONS["restore"].sources == {ARCHIVED, MERGED, DELETED}
    assert TRANSITIONS["delete"].sources == {ACTIVE, ARCHIVED, MERGED}
    with pytest.raises(Conflict, match="is active: restore applies to a memory that is archived, deleted, merged"):
        check("restore", "m", ACTIVE)
    check("restore", "m", MERGED)


def test_violations_name_each_broken_invariant():
    memories = [{"id": "a", "archived": False, "merged_into": "b"}, {"id": "b", "archived": False},
                {"id": "c", "archived": True, "merged_into": "b"}]
    records = [{"duplicate_id": "c", "canonical_id": "b", "state": "deleted", "merged_at": "1"}]
    found = violations(memories, records, [("RELATES_TO", "a", "b")], {"a": "u1", "b": "u2", "c": "u2"})
    assert found == ["a is active but points merged_into b", "a is merged into or superseded by b of another scope",
                     "merge record of c is deleted but the memory is merged", "a is merged without a merge record",
                     "RELATES_TO a -> b spans two scopes"]
    assert violations([{"id": "d", "archived": True, "merged_into": "gone"}],
                      [{"duplicate_id": "d", "canonical_id": "gone", "state": "done", "merged_at": "1"}], [], {}) == \
        ["d is merged into gone, which is not a stored memory of its own"]


def test_forgetting_is_off_by_default_and_says_how_to_turn_it_on(client, auth):
    status = client.get("/consolidate/status", headers=auth).json
    assert status["forgetting"]["enabled"] is False
    assert status["forgetting"]["note"] == "off: set CONSOLIDATION_ARCHIVE_THRESHOLD / _DELETE_THRESHOLD"
    assert forgetting(0.1, 0.02, 0)["note"].endswith("set CONSOLIDATION_FORGET_INTERVAL_SECONDS")
    assert forgetting(0.1, 0.02, 3600) == {"enabled": True, "archive_threshold": 0.1, "delete_threshold": 0.02,
                                           "delete_after_archived_days": 0.0,
                                           "scheduled": True, "note": "on: archive below 0.1, delete below 0.02"}
    assert forgetting(0.1, 0.02, 3600, 30)["note"] == "on: archive below 0.1, delete below 0.02 after 30 days archived"


# --- merged duplicates ----------------------------------------------------------------------------------------

def test_a_merged_duplicate_is_not_judged_on_its_own_score(forgetting_on):
    canonical, duplicate = merged_pair(forgetting_on)
    payloads = forgetting_on.stores.vectors.payloads([canonical, duplicate])
    assert (payloads[canonical]["state"], payloads[duplicate]["state"]) == ("active", "merged")
    forget = run(forgetting_on, "forget")["forget"]
    assert duplicate not in {d["memory_id"] for d in forget["decisions"] + forget["protections"]}
    assert forgetting_on.stores.graph.get_memory(duplicate).get("merged_into") == canonical
    assert records_of(forgetting_on, duplicate) == [["done"]]
    assert consistent(forgetting_on) == []


def test_a_merged_duplicate_leaves_with_its_canonical_and_both_come_back_as_they_were(forgetting_on, client_for,
                                                                                     clock):
    canonical, duplicate = merged_pair(forgetting_on, {"timestamp": days_ago(400), "last_accessed": days_ago(400),
                                                       "importance": 0.3}, type="Context")
    forget = run(forgetting_on, "forget")["forget"]
    decisions = {d["memory_id"]: d for d in forget["decisions"]}
    assert decisions[canonical]["action"] == decisions[duplicate]["action"] == "delete"
    assert decisions[duplicate]["reason"] == f"merged into {canonical}, which is deleted: leaves with it"
    assert decisions[duplicate]["relevance"] is None
    assert decisions[duplicate]["content"] == "We picked Redis for session caching"
    assert forget["deleted"] == 2 and forget["deleted_with_canonical"] == 1
    assert records_of(forgetting_on, duplicate) == [["deleted"]]
    assert consistent(forgetting_on) == []
    client = client_for(forgetting_on)
    merges = client.get("/hygiene/merges", headers=client.auth).json["items"]
    assert [(m["state"], m["duplicate_content"]) for m in merges] == [("deleted", "We picked Redis for session caching")]

    # Restoring the duplicate undoes the deletion: the canonical comes back first, the duplicate merged into it.
    restored = client.post(f"/memory/{duplicate}/restore", headers=client.auth)
    assert restored.status_code == 200, restored.json
    assert (restored.json["restored_from"], restored.json["state"]) == ("tombstone", "merged")
    assert restored.json["canonical_id"] == canonical and restored.json["restored_with"] == [canonical]
    payloads = forgetting_on.stores.vectors.payloads([canonical, duplicate])
    assert (payloads[canonical]["state"], payloads[duplicate]["state"]) == ("active", "merged")
    memory = client.get(f"/memory/{duplicate}", headers=client.auth).json["memory"]
    assert (memory["state"], memory["archived"], memory["merged_into"]) == ("merged", True, canonical)
    assert records_of(forgetting_on, duplicate) == [["done"]]
    assert client.get(f"/memory/{canonical}", headers=client.auth).json["memory"]["held_until"] == \
        restored.json["held_until"]
    assert consistent(forgetting_on) == []
    # A second restore undoes the merge, as for any merged duplicate; no dedup merges the two again.
    again = client.post(f"/memory/{duplicate}/restore", headers=client.auth)
    assert (again.json["restored_from"], again.json["state"]) == ("merge", "active")
    assert records_of(forgetting_on, duplicate) == [["restored"]]
    clock.advance(days=31)
    run(forgetting_on, "dedup", full=True)
    assert forgetting_on.stores.graph.get_memory(duplicate).get("merged_into") is None
    assert consistent(forgetting_on) == []


def test_restoring_a_merged_duplicate_gives_an_active_memory_and_a_restored_record(forgetting_on, client_for,
                                                                                   clock):
    canonical, duplicate = merged_pair(forgetting_on)
    client = client_for(forgetting_on)
    assert client.post(f"/memory/{duplicate}/restore", headers=client.auth).json["restored_from"] == "merge"
    memory = client.get(f"/memory/{duplicate}", headers=client.auth).json["memory"]
    assert (memory["state"], memory["archived"], memory["merged_into"]) == ("active", False, None)
    assert records_of(forgetting_on, duplicate) == [["restored"]]
    clock.advance(days=31)
    run(forgetting_on, "dedup", full=True)
    assert forgetting_on.stores.graph.get_memory(duplicate).get("merged_into") is None
    assert consistent(forgetting_on) == []


def test_restoring_a_canonical_never_brings_back_what_was_merged_into_it(forgetting_on, client_for, clock):
    canonical, duplicate = merged_pair(forgetting_on)
    newer = add_memory(forgetting_on, vector=vector_at(0.98, axis(0), axis(2)), type="Decision", access_count=50,
                       content="Redis is what we use for session caching")
    for _ in range(3):  # the most connected memory is the canonical
        link(forgetting_on, newer, add_memory(forgetting_on, vector=axis(5 + _), content=f"another topic {_}"))
    run(forgetting_on, "dedup", full=True)  # the old canonical goes into the newer one; its duplicate follows
    graph = forgetting_on.stores.graph
    assert graph.get_memory(canonical)["merged_into"] == newer and graph.get_memory(duplicate)["merged_into"] == newer
    client = client_for(forgetting_on)
    for memory_id in (duplicate, canonical):
        assert client.post(f"/memory/{memory_id}/restore", headers=client.auth).status_code == 200
    edges = graph.falkor.execute("MATCH (:Memory {id: $id})-[r:MERGED_INTO]-() RETURN count(r)", {"id": duplicate})
    assert edges[0][0] == 0
    assert consistent(forgetting_on) == []
    clock.advance(days=31)  # past the holds: dedup may merge again, and never leaves an active memory merged
    run(forgetting_on, "dedup", full=True)
    assert consistent(forgetting_on) == []


# --- restores hold ----------------------------------------------------------------------------------------------

def test_a_restore_holds_through_forget_and_is_a_use(forgetting_on, client_for, clock):
    faded = [add_memory(forgetting_on, timestamp=days_ago(400), last_accessed=days_ago(400), importance=0.3,
                        access_count=2) for _ in range(5)]
    assert run(forgetting_on, "forget")["forget"]["deleted"] == 5
    client = client_for(forgetting_on)
    for memory_id in faded:
        answer = client.post(f"/memory/{memory_id}/restore", headers=client.auth)
        assert answer.status_code == 200 and answer.json["held_until"] == (clock() + timedelta(days=30)).isoformat()
    # 400 days old, used now, no edges, importance 0.3, confidence 0.5: under the delete line, and held.
    expected = math.exp(-4.0) * 1.0 * 1.0 * 0.8 * 0.85
    memory = client.get(f"/memory/{faded[0]}", headers=client.auth).json["memory"]
    assert memory["access_count"] == 3 and memory["last_accessed"] == clock().isoformat()
    assert memory["relevance_score"] == pytest.approx(expected, rel=1e-9) and expected < DELETE_BELOW
    assert memory["held_until"] == (clock() + timedelta(days=30)).isoformat()

    clock.advance(days=29)
    forget = run(forgetting_on, "forget", full=True)["forget"]
    assert forget["deleted"] == forget["archived"] == 0
    assert {d["reason"] for d in forget["protections"]} == {"restored: held 1.0 more days"}
    assert run(forgetting_on, "dedup", "forget")["forget"]["deleted"] == 0
    clock.advance(days=2)
    assert run(forgetting_on, "forget")["forget"]["deleted"] == 5  # the hold ended: the incremental pass sees it


def test_a_restored_memory_is_never_merged_away_during_its_hold(forgetting_on, client_for):
    faded = add_memory(forgetting_on, vector=axis(2), content="Deploys run every Friday at noon",
                       timestamp=days_ago(400), last_accessed=days_ago(400), importance=0.3)
    run(forgetting_on, "forget")
    client = client_for(forgetting_on)
    assert client.post(f"/memory/{faded}/restore", headers=client.auth).status_code == 200
    newer = add_memory(forgetting_on, vector=vector_at(0.99, axis(2), axis(3)), content="Deploys run every Friday at noon.",
                       access_count=50)
    run(forgetting_on, "dedup", full=True)
    assert forgetting_on.stores.graph.get_memory(faded).get("merged_into") is None
    assert forgetting_on.stores.graph.get_memory(newer).get("merged_into") == faded  # it may be a canonical


# --- the score shown is the score used --------------------------------------------------------------------------

def test_a_use_rescores_and_forget_decides_on_the_score_it_shows(forgetting_on, client_for, clock):
    # Importance 0.2 is under decay's importance threshold (0.3): decay never rescores it.
    memory_id = add_memory(forgetting_on, timestamp=days_ago(300), last_accessed=days_ago(300), importance=0.2,
                           relevance_score=0.0, content="a note about lunch")
    client = client_for(forgetting_on)
    for _ in range(10):
        client.post(f"/memory/{memory_id}/access", headers=client.auth)
    shown = client.get(f"/memory/{memory_id}", headers=client.auth).json["memory"]
    expected = math.exp(-3.0) * 1.0 * 1.0 * 0.7 * 0.85  # 300 days old, used now
    assert shown["relevance_score"] == pytest.approx(expected, rel=1e-9)
    clock.advance(days=2)  # unused for two days: the score falls
    run(forgetting_on, "decay")
    (decision,) = run(forgetting_on, "forget")["forget"]["decisions"]
    shown = client.get(f"/memory/{memory_id}", headers=client.auth).json["memory"]
    assert decision["memory_id"] == memory_id and decision["action"] == "archive"
    assert decision["relevance"] == shown["relevance_score"]
    assert decision["relevance"] == pytest.approx(math.exp(-3.02) * math.exp(-0.1) * 0.7 * 0.85, rel=1e-9)
    assert decision["content"] == "a note about lunch"
    assert decision["reason"] == f"relevance {decision['relevance']:.4f} < archive threshold {ARCHIVE_BELOW}"
    archived = client.get("/memories/restorable?kind=archived", headers=client.auth).json["items"]
    assert archived[0]["reason"] == decision["reason"]


# --- previews ----------------------------------------------------------------------------------------------------

def test_a_preview_covers_the_store_and_matches_the_run_after_it(forgetting_on, clock):
    for days in range(0, 400, 10):
        add_memory(forgetting_on, timestamp=days_ago(days), last_accessed=days_ago(days), importance=0.3)
    run(forgetting_on, "decay", "forget")  # a watermark: the next real run is incremental
    for days in (410, 420):
        add_memory(forgetting_on, timestamp=days_ago(days), last_accessed=days_ago(days), importance=0.3)
    clock.advance(days=5)  # within the full-pass interval: the schedule's next pass is incremental
    stored = forgetting_on.stores.graph.count_memories()
    preview = run(forgetting_on, "forget", dry_run=True)["forget"]
    assert preview["pass"] == "full" and preview["memories_processed"] == stored
    incremental = run(forgetting_on, "forget", dry_run=True, incremental=True)["forget"]
    assert incremental["pass"] == "incremental" and incremental["memories_processed"] < stored
    real = run(forgetting_on, "forget")["forget"]
    assert real["pass"] == "incremental"
    assert preview["decisions"] and sorted(preview["decisions"], key=lambda d: d["memory_id"]) == \
        sorted(real["decisions"], key=lambda d: d["memory_id"])


def test_incremental_goes_with_a_dry_run_only(client, auth):
    answer = client.post("/consolidate", json={"incremental": True}, headers=auth)
    assert answer.status_code == 400 and "dry_run" in answer.json["detail"]


# --- deleted memories answer 410 ---------------------------------------------------------------------------------

def test_a_deleted_memory_is_gone_not_missing(forgetting_on, client_for, clock):
    memory_id = add_memory(forgetting_on, timestamp=days_ago(400), last_accessed=days_ago(400), importance=0.3)
    run(forgetting_on, "forget")
    client = client_for(forgetting_on)
    answer = client.get(f"/memory/{memory_id}", headers=client.auth)
    assert answer.status_code == 410
    assert answer.json["error"] == "gone" and answer.json["state"] == "deleted"
    assert answer.json["deleted_at"] == clock().isoformat()
    assert answer.json["restorable_until"] == (clock() + timedelta(days=30)).isoformat()
    assert answer.json["reason"].endswith(f"< delete threshold {DELETE_BELOW}")
    unknown = client.get("/memory/00000000-0000-4000-8000-000000000000", headers=client.auth)
    assert unknown.status_code == 404


# --- concurrent restores ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["archived", "merged", "deleted"])
def test_of_ten_concurrent_restores_one_succeeds(forgetting_on, client_for, kind):
    if kind == "merged":
        _, memory_id = merged_pair(forgetting_on)
    else:
        days = 400 if kind == "deleted" else 200
        memory_id = add_memory(forgetting_on, timestamp=days_ago(days), last_accessed=days_ago(days), importance=0.3)
        run(forgetting_on, "forget")
    clients = [client_for(forgetting_on) for _ in range(10)]
    start, answers = threading.Barrier(10), []

    def restore(client):
        start.wait()
        answers.append(client.post(f"/memory/{memory_id}/restore", headers=client.auth).status_code)

    threads = [threading.Thread(target=restore, args=(c,)) for c in clients]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(answers) == [200] + [409] * 9
    memory = forgetting_on.stores.graph.get_memory(memory_id)
    assert memory["access_count"] == 1 and state_of(memory) == ACTIVE
    assert consistent(forgetting_on) == []


# --- overwrites that move a memory to another scope ---------------------------------------------------------------

def test_an_overwrite_into_another_scope_first_unlinks_the_old_one(tmp_path, clock, client_for):
    services = build_services(make_settings(tmp_path / "data", consolidation_scope_properties="user_id"),
                              clock=clock)
    try:
        canonical, duplicate = merged_pair(services, user_id="u1")
        friend = add_memory(services, user_id="u1")
        link(services, canonical, friend)
        client = client_for(services)
        line = ('{"id": "%s", "content": "Use Redis for session caching", "type": "Decision", "user_id": "u2", '
                '"timestamp": "2026-06-01T12:00:00+00:00"}' % canonical)
        answer = client.post("/memory/import?overwrite=true", data=line, headers=client.auth)
        assert answer.status_code == 200, answer.json
        moved = services.stores.graph.get_memory(canonical)
        assert moved["user_id"] == "u2"
        back = services.stores.graph.get_memory(duplicate)
        assert back.get("merged_into") is None and state_of(back) == ACTIVE
        assert records_of(services, duplicate) == [["restored"]]
        assert consistent(services) == []
        run(services, "dedup", "creative", "cluster", "forget", full=True)
        assert services.stores.graph.get_memory(duplicate).get("merged_into") is None
        assert consistent(services) == []
    finally:
        services.close()


# --- recovery does not wait for a dead process ---------------------------------------------------------------------

def dead_pid() -> int:
    finished = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    return int(finished.stdout)


def test_a_lease_held_by_a_dead_local_process_is_taken_over_at_once(services):
    falkor = services.stores.graph.falkor
    ControlStore(falkor).ensure()
    host = socket.gethostname()
    gone = f"{host}:{dead_pid()}:abcdef"
    assert holder_is_gone(gone) and not holder_is_gone(f"{host}:{os.getpid()}:{services.engine.holder[-6:]}")
    assert not holder_is_gone(f"another-host:{dead_pid()}:abcdef")
    assert LEASE.take(falkor, "dead-run", 600, holder=gone, task="forget") is not None
    assert services.engine.run(["decay"])["success"]  # no RunInProgress: the holder is gone

    LEASE.take(falkor, "remote-run", 600, holder=f"another-host:{dead_pid()}:abcdef", task="forget")
    with pytest.raises(Exception, match="in progress"):
        services.engine.run(["decay"])


def test_pending_deletions_are_not_orphans_and_a_restart_completes_them(tmp_path, clock):
    settings = make_settings(tmp_path / "data")
    services = build_services(settings, clock=clock)
    doomed = [add_memory(services) for _ in range(3)]
    lifecycle = services.engine.lifecycle
    snapshots = lifecycle.tombstones.snapshot(doomed)
    lifecycle.tombstones.write_pending([{"id": f"t{i}", "memory_id": m, "reason": "test", "deleted_at": clock().isoformat(),
                                         "deleted_epoch": clock().timestamp(), "memory": snapshots[m], "edges": [],
                                         "vector": None} for i, m in enumerate(doomed)])
    services.stores.vectors.delete(doomed)  # as a kill -9 right after the vectors went would leave it
    report = lifecycle.reconcile(repair=False, now=clock(), recheck_seconds=0)
    assert report["nodes_without_vectors_total"] == 0 and report["pending_deletions"] == 3
    services.close()
    restarted = build_services(settings, clock=clock)
    try:
        assert restarted.engine.lifecycle.tombstones.pending_ids() == []
        assert restarted.stores.graph.existing_ids(doomed) == set()
        client_report = restarted.engine.reconcile(repair=False)
        assert client_report["pending_deletions"] == 0 and client_report["nodes_without_vectors_total"] == 0
    finally:
        restarted.close()


def test_a_repair_writes_every_memorys_state_into_its_payload(forgetting_on, client_for):
    from consolidation.stores.vectors import VectorPoint

    canonical, duplicate = merged_pair(forgetting_on)
    faded = add_memory(forgetting_on, content="an archived note", vector=axis(7))
    # Points written before the payload carried the marks, and an archive the mirror missed.
    for memory_id in (canonical, duplicate, faded):
        _, vector = forgetting_on.stores.vectors.vectors([memory_id])
        forgetting_on.stores.vectors.upsert([VectorPoint(memory_id, vector[0], {"relevance_score": 0.5})])
    forgetting_on.stores.graph.archive([faded], "2026-06-01T12:00:00+00:00")
    client = client_for(forgetting_on)
    report = client.post("/reconcile", json={"repair": True}, headers=client.auth).json
    assert report["payload_marks_refreshed"] == 3
    payloads = forgetting_on.stores.vectors.payloads([canonical, duplicate, faded])
    assert [(payloads[i]["state"], payloads[i]["superseded"]) for i in (canonical, duplicate, faded)] == [
        ("active", False), ("merged", False), ("archived", False)]


def test_chain_violations_name_each_broken_supersession():
    from consolidation.lifecycle.states import chain_violations

    nodes = {m["id"]: m for m in [
        {"id": "a", "superseded_by": "b"}, {"id": "b", "superseded_by": "c"}, {"id": "c"},  # a chain, whole
        {"id": "d", "superseded_by": "e"}, {"id": "e", "superseded_by": "d"},  # a cycle
        {"id": "f"}, {"id": "g", "superseded_by": "g"},  # an edge unmarked; a memory superseding itself
        {"id": "h", "superseded_by": "c"},  # marked with no edge
        {"id": "i", "superseded_by": "j"}, {"id": "j", "merged_into": "k"}, {"id": "k"},  # a merged superseder
    ]}
    links = [("SUPERSEDES", "b", "a"), ("EVOLVED_INTO", "a", "b"), ("SUPERSEDES", "c", "b"), ("EVOLVED_INTO", "b", "c"),
             ("SUPERSEDES", "e", "d"), ("EVOLVED_INTO", "d", "e"), ("SUPERSEDES", "d", "e"), ("EVOLVED_INTO", "e", "d"),
             ("SUPERSEDES", "c", "f"), ("SUPERSEDES", "k", "i"), ("EVOLVED_INTO", "i", "k")]
    assert chain_violations(nodes, links) == [
        "SUPERSEDES c -> f but f is not marked superseded", "SUPERSEDES c -> f has no EVOLVED_INTO beside it",
        "the supersession chain from d comes back to d", "the supersession chain from e comes back to e",
        "g supersedes itself", "h is marked superseded by c with no SUPERSEDES edge between them"]
    # Kept whole, the chains break nothing: i's superseder was merged into k, which holds its edge now.
    kept = {key: value for key, value in nodes.items() if key not in ("d", "e", "f", "g", "h")}
    assert chain_violations(kept, [link for link in links if not {"d", "e", "f"} & set(link[1:])]) == []
