"""Beside AutoMem on one store: our records and edges carry our mark, AutoMem's are read as AutoMem's (shown,
never counted, pruned or rewritten by us), its summary nodes are summaries, and its own consolidation writing
to the store is detected and said.

AutoMem's writes are replayed with its own Cypher (verygoodplugins/automem at 8ff266e): run records and their
pruning from automem/consolidation/runtime_helpers.py (persist_consolidation_run, load_control_record), DISCOVERED
and CONTRADICTS edges and MetaMemory summaries from consolidation.py (MemoryConsolidator.consolidate), a
client's association from automem/api/memory.py (associate)."""

from __future__ import annotations

import logging
import uuid
from datetime import timedelta

import pytest

from consolidation.other_engine import TURN_OFF, automem_consolidation
from consolidation.service import build_services
from consolidation.stores.authors import MARKS_VERSION, OURS
from tests.conftest import NOW, add_memory, axis, days_ago, make_settings

AUTOMEM_TASK_FIELDS = ("decay_last_run", "creative_last_run", "cluster_last_run", "forget_last_run",
                       "identity_last_run", "full_last_run")


def automem_run(services, mode: str, started_at: str, dry_run: bool = False, keep: int = 20) -> None:
    """AutoMem's persist_consolidation_run: the run record, its control node's last run, then its pruning."""
    falkor = services.stores.graph.falkor
    falkor.execute("CREATE (r:ConsolidationRun {id: $id, mode: $mode, task: $mode, success: true, "
                   "dry_run: $dry_run, started_at: $at, completed_at: $at, result: '{}'})",
                   {"id": uuid.uuid4().hex, "mode": mode, "dry_run": dry_run, "at": started_at})
    falkor.execute(f"MERGE (c:ConsolidationControl {{id: 'global'}}) SET c.{mode}_last_run = $at", {"at": started_at})
    falkor.execute("MATCH (r:ConsolidationRun) WITH r ORDER BY r.started_at DESC SKIP $keep DELETE r", {"keep": keep})


def automem_control(services, made_at: str) -> None:
    """AutoMem's load_control_record on every scheduler tick: the node, each field set once to when it was made."""
    sets = ", ".join(f"c.{field} = coalesce(c.{field}, $now)" for field in AUTOMEM_TASK_FIELDS)
    services.stores.graph.falkor.execute(f"MERGE (c:ConsolidationControl {{id: 'global'}}) SET {sets}",
                                         {"now": made_at})


def automem_summary(services, members: list[str]) -> str:
    """AutoMem's cluster step: a Memory:MetaMemory node (no vector) and plain SUMMARIZES edges."""
    meta_id = str(uuid.uuid4())
    falkor = services.stores.graph.falkor
    falkor.execute("CREATE (m:Memory:MetaMemory {id: $id, content: 'Meta-pattern: Context cluster', "
                   "type: 'MetaPattern', confidence: 0.8, cluster_size: $size, timestamp: $at, "
                   "relevance_score: 0.9})", {"id": meta_id, "size": len(members), "at": days_ago(300)})
    for member in members:
        falkor.execute("MATCH (meta:MetaMemory {id: $meta}) MATCH (m:Memory {id: $member}) "
                       "CREATE (meta)-[:SUMMARIZES]->(m)", {"meta": meta_id, "member": member})
    return meta_id


def automem_edge(services, relation: str, a: str, b: str) -> None:
    """AutoMem's creative step: DISCOVERED with origin and kind, CONTRADICTS (from CONTRASTS_WITH) without."""
    extra = ", r.origin = 'consolidation', r.kind = 'shares_theme'" if relation == "DISCOVERED" else ""
    services.stores.graph.falkor.execute(
        f"MATCH (m1:Memory {{id: $a}}) MATCH (m2:Memory {{id: $b}}) MERGE (m1)-[r:{relation}]->(m2) "
        f"SET r.updated_at = $at, r.confidence = 0.6, r.similarity = 0.7{extra}", {"a": a, "b": b, "at": days_ago(1)})


def relations(services, a: str, b: str) -> dict[str, str | None]:
    rows = services.stores.graph.falkor.execute(
        "MATCH (a:Memory {id: $a})-[r]->(b:Memory {id: $b}) RETURN type(r), r.written_by", {"a": a, "b": b})
    return {relation: written_by for relation, written_by in rows}


@pytest.fixture
def client(services, client_for):
    return client_for(services)


# --- run records ---------------------------------------------------------------------------------------------

def test_automems_pruning_leaves_our_runs_and_we_list_only_ours(services, client):
    ours = services.engine.run(["decay"])["run_id"]
    for hour in range(21):  # newer than ours: AutoMem keeps its newest 20 and deletes the rest, of any origin
        automem_run(services, "decay", (NOW + timedelta(hours=hour + 1)).isoformat())
    assert client.get(f"/consolidate/runs/{ours}", headers=client.auth).status_code == 200
    listed = client.get("/consolidate/runs", headers=client.auth).get_json()
    assert [run["run_id"] for run in listed["items"]] == [ours] and listed["total"] == 1
    services.engine.runs.prune(0)  # ours beyond none: AutoMem's records are not ours to prune
    count = services.stores.graph.falkor.execute("MATCH (r:ConsolidationRun) RETURN count(r)")[0][0]
    assert int(count) == 20


# --- AutoMem's summaries -------------------------------------------------------------------------------------

@pytest.fixture
def forgetful(tmp_path, clock):
    services = build_services(make_settings(tmp_path / "data", consolidation_archive_threshold=0.2,
                                            consolidation_delete_threshold=0.05), clock=clock)
    yield services
    services.close()


def test_automems_summaries_are_summaries_not_memories(forgetful, client_for):
    members = [add_memory(forgetful, vector=axis(i), timestamp=days_ago(10)) for i in range(3)]
    meta = automem_summary(forgetful, members)
    graph, vectors = forgetful.stores.graph, forgetful.stores.vectors
    client = client_for(forgetful)

    forgetful.engine.run(["decay", "forget"])
    stored = graph.get_memory(meta)
    assert stored["relevance_score"] == 0.9 and stored.get("archived") is None  # neither decayed nor forgotten
    counts = client.get("/consolidate/status", headers=client.auth).get_json()["store_counts"]
    assert counts == {"graph_memories": 3, "vector_points": 3, "in_sync": True, "difference": 0}
    assert graph.count_memories() == 3
    report = client.post("/reconcile", json={"repair": True}, headers=client.auth).get_json()
    assert report["nodes_without_vectors_total"] == 0 and report["graph_memories"] == 3
    assert vectors.payloads([meta]) == {}  # never embedded by a repair


# --- edges ---------------------------------------------------------------------------------------------------

def test_automems_edges_are_shown_as_theirs_and_never_counted_as_ours(services, client):
    a, b, c, d = (add_memory(services, vector=axis(i)) for i in range(4))
    automem_edge(services, "DISCOVERED", a, b)
    automem_edge(services, "CONTRADICTS", c, d)
    services.stores.graph.create_associations("DISCOVERED", [{"a": b, "b": c, "props": {
        "kind": "shares_theme", "confidence": 0.9, "similarity": 0.9, "discovered_at": NOW.isoformat(),
        "origin": "consolidation", "algorithm": "test"}}])
    services.engine.lifecycle.hygiene.contradict([{"a": a, "b": b, "confidence": 0.8, "reason": "Tuesday vs "
                                                   "Thursday"}], NOW.isoformat())
    assert relations(services, a, b) == {"DISCOVERED": None, "CONTRADICTS": OURS}
    for route, ours, theirs in (("associations", (b, c), (a, b)), ("contradictions", (a, b), (c, d))):
        page = client.get(f"/hygiene/{route}", headers=client.auth).get_json()
        assert page["total"] == 1 and [(i["from_id"], i["to_id"], i["written_by"]) for i in page["items"]] == [
            (*ours, OURS)]
        page = client.get(f"/hygiene/{route}?written_by=automem", headers=client.auth).get_json()
        assert page["total"] == 1 and [(i["from_id"], i["to_id"], i["written_by"]) for i in page["items"]] == [
            (*theirs, "automem")]
    edges = client.get(f"/memories/{a}/detail", headers=client.auth).get_json()["edges"]
    assert sorted((e["relation"], e["written_by"]) for e in edges) == [("CONTRADICTS", OURS),
                                                                       ("DISCOVERED", "automem")]


def test_undoing_a_supersession_takes_only_our_edges(services):
    old, new = add_memory(services, vector=axis(0)), add_memory(services, vector=axis(1))
    # A client told AutoMem the older memory evolved into the newer one (POST /associate).
    services.stores.graph.falkor.execute(
        "MATCH (m1:Memory {id: $old}) MATCH (m2:Memory {id: $new}) MERGE (m1)-[r:EVOLVED_INTO]->(m2) "
        "SET r.strength = 0.5, r.updated_at = $at, r.reason = 'renamed'", {"old": old, "new": new, "at": days_ago(1)})
    services.engine.lifecycle.hygiene.supersede([{"newer": new, "older": old, "confidence": 0.9, "reason": "r"}],
                                                NOW.isoformat())
    assert relations(services, new, old) == {"SUPERSEDES": OURS} and relations(services, old, new) == {
        "EVOLVED_INTO": None}  # the client's edge stood already: it stays the client's
    services.stores.graph.unsupersede(new, old)
    assert relations(services, new, old) == {} and relations(services, old, new) == {"EVOLVED_INTO": None}


def test_what_we_wrote_before_the_mark_is_marked_once_and_automems_is_left_alone(services, client):
    a, b, c, d = (add_memory(services, vector=axis(i)) for i in range(4))
    falkor = services.stores.graph.falkor
    # Ours as the service wrote them before the mark: a contradiction, an association, a run record.
    falkor.execute("MATCH (a:Memory {id: $a}), (b:Memory {id: $b}) CREATE (a)-[:CONTRADICTS {confidence: 0.8, "
                   "reason: 'r', detected_at: $at, origin: 'consolidation'}]->(b), (b)-[:DISCOVERED {kind: "
                   "'shares_theme', discovered_at: $at, origin: 'consolidation', algorithm: 'v1'}]->(a)",
                   {"a": a, "b": b, "at": NOW.isoformat()})
    old_run = str(uuid.uuid4())
    falkor.execute("CREATE (:ConsolidationRun {id: $id, state: 'succeeded', tasks: '[\"decay\"]', "
                   "trigger: 'api', started_at: $at, finished_at: $at})", {"id": old_run, "at": NOW.isoformat()})
    automem_edge(services, "DISCOVERED", c, d)
    automem_edge(services, "CONTRADICTS", d, c)
    automem_run(services, "decay", NOW.isoformat())
    falkor.execute("MATCH (c:ConsolidationControl {id: 'singleton'}) SET c.marks_version = null")

    services.stores.mark_stale()
    services.stores.ensure_ready()
    assert relations(services, a, b) == {"CONTRADICTS": OURS} and relations(services, b, a) == {"DISCOVERED": OURS}
    assert relations(services, c, d) == {"DISCOVERED": None} and relations(services, d, c) == {"CONTRADICTS": None}
    assert client.get(f"/consolidate/runs/{old_run}", headers=client.auth).status_code == 200
    labels = falkor.execute("MATCH (r) WHERE r.started_at IS NOT NULL RETURN r.id = $id, labels(r)", {"id": old_run})
    assert sorted(map(tuple, labels)) == [("false", "[ConsolidationRun]"), ("true", "[ConsolidationServiceRun]")]
    marked = falkor.execute("MATCH (c:ConsolidationControl {id: 'singleton'}) RETURN c.marks_version")
    assert int(marked[0][0]) == MARKS_VERSION


# --- one engine at a time ------------------------------------------------------------------------------------

def test_status_and_the_log_say_when_automems_consolidation_writes_here(services, client, clock, caplog):
    def automem():
        return client.get("/consolidate/status", headers=client.auth).get_json()["automem"]

    assert automem()["present"] is False and automem()["warning"] is None
    automem_control(services, days_ago(30))  # its scheduler runs, and nothing of it has run since
    assert (automem()["present"], automem()["consolidating"]) == (True, False)

    caplog.set_level(logging.INFO, logger="consolidation.engine")
    automem_run(services, "decay", (NOW - timedelta(hours=3)).isoformat())
    seen = automem()
    assert seen["consolidating"] is True and seen["tasks"] == ["decay"]
    assert seen["last_run_at"] == (NOW - timedelta(hours=3)).isoformat()
    assert "CONSOLIDATION_DECAY_INTERVAL_SECONDS=0" in seen["warning"] and seen["turn_off"] == list(TURN_OFF.values())
    automem()
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING and "another engine" in r.getMessage()]
    assert len(warnings) == 1  # once, not on every request

    clock.advance(days=9)  # turned off on AutoMem's side: its last run ages out
    assert automem()["consolidating"] is False


def test_automems_control_node_speaks_when_its_run_records_are_gone():
    made, ran = NOW - timedelta(days=40), NOW - timedelta(days=1)
    control = {"id": "global", **{field: made.isoformat() for field in AUTOMEM_TASK_FIELDS},
               "creative_last_run": ran.isoformat()}
    found = automem_consolidation([], [control], NOW)
    assert (found["consolidating"], found["tasks"]) == (True, ["creative"])
    # Only made (every field at one time): no task ran. A dry run, or an old one, is no sign either.
    only_made = {**control, "creative_last_run": made.isoformat()}
    assert automem_consolidation([], [only_made], NOW)["consolidating"] is False
    runs = [{"mode": "full", "started_at": ran.isoformat(), "dry_run": True},
            {"mode": "decay", "started_at": (NOW - timedelta(days=20)).isoformat(), "dry_run": False}]
    assert automem_consolidation(runs, [control], NOW)["consolidating"] is False
    full = automem_consolidation([{**runs[0], "dry_run": False}], [], NOW)
    assert full["tasks"] == sorted(TURN_OFF)


def test_the_dashboard_shows_the_warning_status_gives(client):
    page = client.get("/dashboard/").get_data(as_text=True)
    assert 'id="automem-warning"' in page
    script = client.get("/dashboard/static/main.js").get_data(as_text=True)
    assert "status.automem" in script
