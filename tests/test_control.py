"""Administrators steer consolidation: the settings in force (secrets hidden) with why a task will not run,
pausing and resuming the schedule for every process, and cancelling a run at a safe point."""

from __future__ import annotations

from datetime import timedelta

import pytest

from consolidation import engine as engine_module
from consolidation.service import build_services
from consolidation.tasks import TASKS
from tests.conftest import NOW, TOKEN, add_memory, axis, days_ago, make_settings, vector_at


@pytest.fixture
def steered(tmp_path, clock):
    # The scheduler is enabled but not started: the tests tick it by hand.
    services = build_services(make_settings(tmp_path / "data", consolidation_decay_interval_seconds=3600,
                                            consolidation_scheduler_enabled=True,
                                            summarizer_llm_api_key="sk-very-secret-key"), clock=clock)
    yield services
    services.close()


@pytest.fixture
def forgetting(tmp_path, clock):
    """Deletion on, no grace period."""
    services = build_services(make_settings(tmp_path / "data", consolidation_delete_threshold=0.05,
                                            consolidation_grace_period_days=0), clock=clock)
    yield services
    services.close()


def restatements(services, **fields) -> tuple[str, str]:
    """Two memories dedup merges, the first the canonical (more uses)."""
    canonical = add_memory(services, vector=axis(0), content="Use Redis for session caching", access_count=5,
                           type="Decision", **fields)
    duplicate = add_memory(services, vector=vector_at(0.97, axis(0), axis(1)), type="Decision",
                           content="We picked Redis for session caching", **fields)
    return canonical, duplicate


def test_the_settings_in_force_hide_secrets_and_say_why_a_task_will_not_run(steered, client_for):
    client = client_for(steered)
    answer = client.get("/consolidate/settings", headers=client.auth)
    assert answer.status_code == 200
    body = answer.json
    assert body["settings"]["admin_api_token"] == body["settings"]["summarizer_llm_api_key"] == "(set)"
    assert TOKEN not in answer.get_data(as_text=True) and "sk-very-secret-key" not in answer.get_data(as_text=True)
    assert body["settings"]["consolidation_decay_interval_seconds"] == 3600
    assert body["tasks"]["decay"]["why_not"] is None
    assert body["tasks"]["forget"]["why_not"].startswith("off: set CONSOLIDATION_ARCHIVE_THRESHOLD")
    assert body["tasks"]["cluster"]["why_not"] is None  # scheduled every 30 days by default
    assert client.get("/consolidate/settings").status_code == 401


def test_a_paused_schedule_skips_due_tasks_until_resumed(steered, client_for, clock):
    add_memory(steered)
    client = client_for(steered)
    assert "decay" in steered.scheduler.run_once()[0]["tasks"]
    answer = client.post("/consolidate/scheduler", json={"paused": True}, headers=client.auth)
    assert answer.status_code == 200 and answer.json["paused"] is True
    clock.advance(hours=2)
    assert steered.scheduler.run_once() == []  # decay is due, and skipped: the pause is in the graph
    status = client.get("/consolidate/status", headers=client.auth).json
    assert status["paused"] is True and status["graphs"][0]["paused"] is True
    settings = client.get("/consolidate/settings", headers=client.auth).json
    assert "paused" in settings["tasks"]["decay"]["why_not"]
    assert steered.engine.run(["decay"])["success"]  # a run asked by hand still runs
    assert client.post("/consolidate/scheduler", json={"paused": False}, headers=client.auth).status_code == 200
    clock.advance(hours=2)
    assert "decay" in steered.scheduler.run_once()[0]["tasks"]
    actions = [entry["action"] for entry in steered.memories.audit.recent()]
    assert actions[:2] == ["scheduler_resumed", "scheduler_paused"]
    assert client.post("/consolidate/scheduler", json={"paused": "yes"}, headers=client.auth).status_code == 400


def test_a_run_is_cancelled_at_a_safe_point_and_its_other_tasks_do_not_start(steered, client_for, monkeypatch):
    client = client_for(steered)
    monkeypatch.setattr(engine_module, "PROGRESS_WRITE_SECONDS", 0.0)
    reached = []

    def long_task(ctx, dry_run):
        ctx.progress(0, 10)
        run_id = steered.engine.control.current_lease().run_id
        asked = client.post(f"/consolidate/runs/{run_id}/cancel", headers=client.auth)
        assert asked.status_code == 200
        ctx.progress(5, 10)  # the next safe point
        reached.append("past the safe point")
        return {"memories_processed": 10}

    monkeypatch.setitem(TASKS, "decay", long_task)
    result = steered.engine.run(["decay", "dedup", "forget"])
    assert reached == [] and result["state"] == "cancelled" and result["success"] is False
    assert result["result"]["decay"]["cancelled"] and "between chunks" in result["result"]["decay"]["error"]
    assert all(result["result"][task]["error"].endswith("before it started") for task in ("dedup", "forget"))
    record = client.get(f"/consolidate/runs/{result['run_id']}", headers=client.auth).json
    assert record["state"] == "cancelled" and record["cancel_requested_at"]
    # A cancelled task is no failure: nothing is counted for the retry backoff, and nothing recorded as done.
    control = steered.engine.control.state()
    assert not control.get("failures_decay") and not control.get("last_decay")
    # ... nor drawn or counted as one: the history marks its tasks cancelled, the trends count no failure.
    (listed,) = client.get("/consolidate/runs", headers=client.auth).json["items"]
    assert listed["state"] == "cancelled" and all(o["cancelled"] and o["success"] is False
                                                  for o in listed["outcomes"].values())
    points = client.get("/consolidate/trends", headers=client.auth).json["points"]
    assert [(p["run_id"], p["failures"]) for p in points] == [(result["run_id"], 0)]
    metrics = client.get("/metrics").get_data(as_text=True)
    assert 'consolidation_runs_total{dry_run="false",outcome="cancelled",task="decay"}' in metrics
    again = client.post(f"/consolidate/runs/{result['run_id']}/cancel", headers=client.auth)
    assert again.status_code == 409 and again.json["state"] == "cancelled"
    unknown = client.post("/consolidate/runs/00000000-0000-4000-8000-000000000000/cancel", headers=client.auth)
    assert unknown.status_code == 404
    assert [e["action"] for e in steered.memories.audit.recent()][0] == "run_cancel_requested"


def test_memories_are_found_by_id_or_text_and_links_are_listed_with_their_texts(steered, client_for):
    client = client_for(steered)
    first = add_memory(steered, content="The billing database is PostgreSQL 15")
    second = add_memory(steered, content="The billing database is MySQL 8", archived=True)
    lunch = add_memory(steered, content="Lunch is at noon")
    steered.stores.graph.falkor.execute(
        "MATCH (a:Memory {id: $a}), (b:Memory {id: $b}) CREATE (a)-[:CONTRADICTS {confidence: 0.9, "
        "reason: 'conflicting database', detected_at: '2026-06-01T12:00:00+00:00', "
        "written_by: 'consolidation-service'}]->(b)", {"a": first, "b": second})
    steered.stores.graph.create_associations("DISCOVERED", [{"a": first, "b": lunch, "props": {
        "kind": "shares_theme", "confidence": 0.8, "discovered_at": "2026-06-01T12:00:00+00:00"}}])

    found = client.get("/memories/search", query_string={"q": "BILLING database"}, headers=client.auth).json
    assert found["total"] == 2 and {m["memory_id"]: m["state"] for m in found["items"]} == \
        {first: "active", second: "archived"}
    by_id = client.get("/memories/search", query_string={"q": first}, headers=client.auth).json
    assert [m["memory_id"] for m in by_id["items"]] == [first]
    paged = client.get("/memories/search", query_string={"q": "billing", "limit": 1, "offset": 1},
                       headers=client.auth).json
    assert paged["total"] == 2 and len(paged["items"]) == 1
    assert client.get("/memories/search", headers=client.auth).status_code == 400

    # A deleted memory is found through its tombstone, by text and by id, after the stored ones: with its text,
    # when it was deleted and until when a restore brings it back (retention 30 days by default).
    gone = add_memory(steered, content='The billing café says "closed" on Sundays')
    assert client.delete(f"/memory/{gone}", headers=client.auth).status_code == 200
    found = client.get("/memories/search", query_string={"q": "billing"}, headers=client.auth).json
    assert found["total"] == 3 and [m["state"] for m in found["items"]][-1] == "deleted"
    deleted = found["items"][-1]
    assert deleted["memory_id"] == gone and deleted["content"] == 'The billing café says "closed" on Sundays'
    assert deleted["deleted_at"] == NOW.isoformat() and deleted["restorable_until"] == "2026-07-01T12:00:00+00:00"
    for q in (gone, 'CAFÉ says "closed"'.lower(), 'says "closed"'):
        hits = client.get("/memories/search", query_string={"q": q}, headers=client.auth).json["items"]
        assert [h["memory_id"] for h in hits] == [gone], q
    # Paging runs on from the stored ones into the deleted ones.
    last = client.get("/memories/search", query_string={"q": "billing", "limit": 2, "offset": 2},
                      headers=client.auth).json
    assert last["total"] == 3 and [m["memory_id"] for m in last["items"]] == [gone]

    (contradiction,) = client.get("/hygiene/contradictions", headers=client.auth).json["items"]
    assert (contradiction["from_content"], contradiction["to_content"]) == (
        "The billing database is PostgreSQL 15", "The billing database is MySQL 8")
    assert contradiction["reason"] == "conflicting database" and contradiction["confidence"] == 0.9
    (association,) = client.get("/hygiene/associations", headers=client.auth).json["items"]
    assert association["kind"] == "shares_theme" and association["detected_at"] == "2026-06-01T12:00:00+00:00"
    assert association["to_content"] == "Lunch is at noon"


def test_a_run_opens_to_its_decisions_with_the_texts_they_name(forgetting, clock, client_for):
    services = forgetting
    client = client_for(services)
    canonical, duplicate = restatements(services)
    old = add_memory(services, content="an old note nobody reads", timestamp=days_ago(400),
                     last_accessed=days_ago(400), importance=0.3)
    real = services.engine.run(["dedup", "forget"])
    opened = client.get(f"/consolidate/runs/{real['run_id']}/report", query_string={"task": "dedup"},
                        headers=client.auth)
    assert opened.status_code == 200, opened.json
    (merge,) = opened.json["lists"]["merges"]["items"]
    assert merge["into"] == canonical and merge["duplicates"] == [duplicate]
    assert opened.json["texts"][canonical] == "Use Redis for session caching"
    assert opened.json["texts"][duplicate] == "We picked Redis for session caching"
    assert opened.json["report"]["merged"] == 1 and opened.json["dry_run"] is False
    record = client.get(f"/consolidate/runs/{real['run_id']}", query_string={"task": "dedup"},
                        headers=client.auth).json
    assert record["state"] == "succeeded" and record["opened"] == opened.json  # the same, on the run itself
    forget = client.get(f"/consolidate/runs/{real['run_id']}/report", query_string={"task": "forget"},
                        headers=client.auth).json
    (decision,) = forget["lists"]["decisions"]["items"]
    assert decision["memory_id"] == old and forget["texts"][old] == "an old note nobody reads"  # a tombstone's
    dry = services.engine.run(["dedup"], dry_run=True)
    page = client.get(f"/consolidate/runs/{dry['run_id']}/report", query_string={"task": "dedup", "limit": 1},
                      headers=client.auth).json
    assert page["dry_run"] is True and page["limit"] == 1
    missing = client.get(f"/consolidate/runs/{dry['run_id']}/report", query_string={"task": "cluster"},
                         headers=client.auth)
    assert missing.status_code == 404 and "ran dedup" in missing.json["detail"]
    # Without a task, the run's first task's report: the default a caller means, not a 400.
    first = client.get(f"/consolidate/runs/{real['run_id']}/report", headers=client.auth)
    assert first.status_code == 200 and first.json["task"] == "dedup"
    assert first.json["lists"] == opened.json["lists"]


def test_trends_follow_the_runs_and_the_history_filters(forgetting, clock, client_for):
    services = forgetting
    client = client_for(services)
    restatements(services)
    for _ in range(3):
        add_memory(services, timestamp=days_ago(400), last_accessed=days_ago(400), importance=0.3)
    for tasks, dry_run in ((["dedup"], False), (["forget"], True), (["forget"], False)):
        services.engine.run(tasks, dry_run=dry_run)
        clock.advance(minutes=1)
    points = client.get("/consolidate/trends", headers=client.auth).json["points"]
    assert [(p["merged"], p["deleted"]) for p in points] == [(1, 0), (0, 3)]  # the dry run is no point
    # 5 memories: after dedup one merged, 4 active; after forget 3 of those deleted.
    assert points[0]["counts"] == {"active": 4, "archived": 0, "merged": 1, "deleted": 0}
    assert points[1]["counts"] == {"active": 1, "archived": 0, "merged": 1, "deleted": 3}
    assert all(p["failures"] == 0 and p["duration_seconds"] is not None for p in points)
    # One point asked for is the newest run (a limit of 1 is a question, not an error).
    (newest,) = client.get("/consolidate/trends?limit=1", headers=client.auth).json["points"]
    assert newest["run_id"] == points[-1]["run_id"]

    def history(**filters):
        return client.get("/consolidate/runs", query_string=filters, headers=client.auth).json

    assert history(task="forget")["total"] == 2 and history(task="dedup")["total"] == 1
    assert history(trigger="manual")["total"] == 3 and history(trigger="schedule")["total"] == 0
    assert history(state="succeeded")["total"] == 3 and history(state="failed")["items"] == []
    assert client.get("/consolidate/runs?task=nope", headers=client.auth).status_code == 400


def test_a_memory_opens_with_its_edges_and_its_history_by_run(forgetting, clock, client_for):
    services = forgetting
    client = client_for(services)
    canonical, duplicate = restatements(services, timestamp=days_ago(1))
    merged = services.engine.run(["dedup"])
    before = client.get(f"/memories/{canonical}/detail", headers=client.auth).json
    assert [(e["relation"], e["outgoing"], e["other_id"], e["other_content"]) for e in before["edges"]] == \
        [("MERGED_INTO", False, duplicate, "We picked Redis for session caching")]
    # The canonical's history names the duplicate merged into it, with the text the merge recorded and why.
    merged_in = before["events"][-1]
    assert (merged_in["event"], merged_in["run_id"], merged_in["other_id"]) == ("merged in", merged["run_id"],
                                                                              duplicate)
    assert merged_in["other_content"] == "We picked Redis for session caching" and "similarity" in merged_in["detail"]
    clock.advance(minutes=5)
    assert client.post(f"/memory/{duplicate}/restore", headers=client.auth).status_code == 200

    opened = client.get(f"/memories/{canonical}/detail", headers=client.auth).json
    assert opened["state"] == "active" and opened["memory"]["content"] == "Use Redis for session caching"
    assert [(e["event"], e["other_id"]) for e in opened["events"]] == [
        ("created", None), ("merged in", duplicate), ("merge undone", duplicate)]
    detail = client.get(f"/memories/{duplicate}/detail", headers=client.auth).json
    events = [(e["event"], e["run_id"]) for e in detail["events"]]
    assert events == [("created", None), ("merged", merged["run_id"]), ("restored", None)]
    assert detail["events"][1]["other_id"] == canonical
    assert detail["state"] == "active"
    gone = add_memory(services, content="an old note", timestamp=days_ago(400), last_accessed=days_ago(400),
                      importance=0.3)
    link_run = services.engine.run(["forget"])
    deleted = client.get(f"/memories/{gone}/detail", headers=client.auth).json
    # Opened through its tombstone: the text it kept, when and why it went, until when a restore brings it back
    # (the clock's now + the 30 days' default retention).
    kept = deleted["memory"]
    assert deleted["state"] == "deleted" and kept["content"] == "an old note" and kept["id"] == gone
    assert kept["state"] == "deleted" and kept["deleted_at"] == clock.now.isoformat()
    assert kept["restorable_until"] == (clock.now + timedelta(days=30)).isoformat() and "relevance" in kept["reason"]
    assert deleted["events"][-1]["event"] == "deleted" and deleted["events"][-1]["run_id"] == link_run["run_id"]
    assert client.get("/memories/00000000-0000-4000-8000-000000000000/detail",
                      headers=client.auth).status_code == 404
