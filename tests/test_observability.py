"""Metrics that move with runs, run records that survive outages and dead processes, one-line logs."""

from __future__ import annotations

import json
import logging

from consolidation.errors import StoreUnavailable
from consolidation.logs import JsonFormatter, KeyValueFormatter
from consolidation.tasks import TASKS
from consolidation.timeutil import parse_iso
from tests.conftest import add_memory, metric_samples


def scrape(client) -> dict[tuple, float]:
    answer = client.get("/metrics")
    assert answer.status_code == 200 and answer.content_type.startswith("text/plain")
    return metric_samples(answer.get_data(as_text=True))


def runs(task: str, outcome: str = "success", dry_run: str = "false") -> tuple:
    return ("consolidation_runs_total", (("dry_run", dry_run), ("outcome", outcome), ("task", task)))


def memories(task: str, action: str) -> tuple:
    return ("consolidation_memories_total", (("action", action), ("task", task)))


def test_metrics_counters_move_with_real_and_dry_runs(services, client, auth):
    for _ in range(3):
        add_memory(services, importance=0.8, relevance_score=0.9)
    before = scrape(client)
    assert client.post("/consolidate", json={"task": "decay", "wait": True}, headers=auth).status_code == 200
    assert client.post("/consolidate", json={"task": "decay", "dry_run": True, "wait": True},
                       headers=auth).status_code == 200
    after = scrape(client)

    def moved(key):
        return after.get(key, 0) - before.get(key, 0)

    assert moved(runs("decay")) == 1 and moved(runs("decay", dry_run="true")) == 1
    assert moved(memories("decay", "processed")) == 3  # the dry run counts as a run, not as memories handled
    assert moved(("consolidation_task_duration_seconds_count", (("task", "decay"),))) == 2
    last_decay = parse_iso(services.engine.control.state()["last_decay"]).timestamp()
    assert after[("consolidation_last_success_timestamp_seconds", (("graph", "memories"), ("task", "decay")))] == last_decay
    assert ("consolidation_last_success_timestamp_seconds", (("graph", "memories"), ("task", "cluster"))) not in after  # never ran
    assert after[("consolidation_lease_held", (("graph", "memories"),))] == 0
    assert after[("consolidation_store_up", (("store", "graph"),))] == 1
    assert after[("consolidation_store_memories", (("graph", "memories"), ("store", "vectors")))] == 3
    post = ("consolidation_http_requests_total", (("method", "POST"), ("route", "/consolidate"), ("status", "200")))
    assert moved(post) == 2


def test_a_failing_task_is_counted_as_a_failure(services, client, auth, monkeypatch):
    def broken(ctx, dry_run):
        raise RuntimeError("injected")

    monkeypatch.setitem(TASKS, "creative", broken)
    before = scrape(client)
    answer = client.post("/consolidate", json={"task": "creative", "wait": True}, headers=auth)
    assert answer.status_code == 200 and answer.json["success"] is False
    after = scrape(client)
    assert after[runs("creative", "failure")] - before.get(runs("creative", "failure"), 0) == 1


def test_a_run_left_running_by_a_dead_process_reads_as_abandoned_and_is_marked_so(services):
    engine = services.engine
    engine.runs.create({"id": "dead-run", "state": "running", "tasks": ["decay"], "dry_run": False,
                        "trigger": "manual", "started_at": "2026-05-01T00:00:00+00:00"})
    assert engine.get_run("dead-run")["state"] == "abandoned"  # nobody holds the lease for it
    assert engine.runs.get("dead-run")["state"] == "running"  # reading does not write
    engine.run(["decay"])
    stored = engine.runs.get("dead-run")
    assert stored["state"] == "abandoned" and stored["finished_at"] and "lease expired" in stored["error"]


def test_records_an_outage_kept_from_the_store_are_written_once_it_answers(services, monkeypatch):
    engine = services.engine
    update = engine.runs.update
    failures = []

    def end_of_run_fails_once(run_id, fields):
        if "finished_at" in fields and not failures:
            failures.append(run_id)
            raise StoreUnavailable("graph", "injected outage")
        update(run_id, fields)

    monkeypatch.setattr(engine.runs, "update", end_of_run_fails_once)
    result = engine.run(["decay"])
    assert result["success"] and failures == [result["run_id"]]
    assert engine.get_run(result["run_id"])["state"] == "running"  # the lease is still ours: not abandoned
    assert engine.control.current_lease().run_id == result["run_id"]

    services.scheduler.run_once()  # the next tick writes what was kept back, then runs what is due
    assert engine.runs.get(result["run_id"])["state"] == "succeeded"
    assert engine.control.current_lease() is None


def test_the_lease_expires_by_the_store_clock(services):
    control = services.engine.control
    lease = control.acquire_lease("someone", "run-1", "decay", ttl=30)
    seconds, micros = services.stores.graph.falkor.client.time()  # the server's clock, read independently
    server_now = seconds + micros / 1e6
    assert abs(lease.expires_at - (server_now + 30)) < 1.0
    assert control.current_lease() == lease
    assert control.acquire_lease("someone-else", "run-2", None, ttl=30) is None
    assert control.renew_lease("run-2", None, ttl=30) is False


def access_record() -> logging.LogRecord:
    atoms = {"h": "10.0.0.1", "m": "GET", "U": "/consolidate/status", "s": "200", "b": "512", "M": "3", "q": "x"}
    return logging.LogRecord("gunicorn.access", logging.INFO, __file__, 1, "%(h)s %(m)s", (atoms,), None)


def test_access_lines_get_their_own_fields_and_never_the_query_string():
    line = KeyValueFormatter().format(access_record())
    assert "method=GET path=/consolidate/status status=200 bytes=512 duration_ms=3 remote=10.0.0.1" in line
    event = json.loads(JsonFormatter().format(access_record()))
    assert event["path"] == "/consolidate/status" and event["status"] == "200" and "msg" not in event
    assert "x" not in event.values()


def test_messages_with_spaces_stay_one_parsable_line():
    record = logging.LogRecord("consolidation", logging.WARNING, __file__, 1, "store down\nretrying %s", ("now",),
                               None)
    line = KeyValueFormatter().format(record)
    assert "\n" not in line and 'msg="store down\\nretrying now"' in line
