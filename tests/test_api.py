"""The HTTP API: authentication, the error shape, consolidation runs and status, the ingest routes."""

import sys
import time

import pytest

from consolidation.api import REQUEST_SWITCH_SECONDS, create_app
from tests.conftest import TOKEN, add_memory

ADMIN_ROUTES = [("post", "/consolidate"), ("get", "/consolidate/status"), ("post", "/reconcile"),
                ("get", "/consolidate/runs/x"), ("post", "/memory/00000000-0000-4000-8000-000000000000/restore")]


@pytest.mark.parametrize("method, path", ADMIN_ROUTES)
@pytest.mark.parametrize("headers", [{}, {"Authorization": "Bearer wrong-token-wrong-token"},
                                     {"Authorization": f"Basic {TOKEN}"}, {"X-Admin-Token": "nope"}])
def test_admin_routes_refuse_missing_or_wrong_tokens(client, method, path, headers):
    response = getattr(client, method)(path, headers=headers)
    assert response.status_code == 401
    assert response.json["error"] == "unauthorized" and response.json["detail"]


@pytest.mark.parametrize("method, path", ADMIN_ROUTES[:2])
def test_a_token_in_the_query_string_is_refused_even_when_right(client, method, path):
    response = getattr(client, method)(f"{path}?token={TOKEN}")
    assert response.status_code == 401 and "query string" in response.json["detail"]
    response = getattr(client, method)(f"{path}?token={TOKEN}", headers={"Authorization": f"Bearer {TOKEN}"})
    assert response.status_code == 401


def test_the_right_token_is_accepted_in_either_header(client):
    assert client.get("/consolidate/status", headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 200
    assert client.get("/consolidate/status", headers={"X-Admin-Token": TOKEN}).status_code == 200


def test_health_needs_no_token_and_reports_both_stores(client):
    response = client.get("/health")
    assert response.status_code == 200
    assert response.json["stores"] == {"graph": {"ok": True}, "vectors": {"ok": True}}
    assert response.json["status"] == "ok"


def test_consolidate_with_wait_returns_the_whole_result(client, auth, services):
    add_memory(services)
    response = client.post("/consolidate", json={"wait": True}, headers=auth)
    assert response.status_code == 200
    body = response.json
    assert body["tasks"] == ["decay", "dedup", "creative", "cluster", "forget"] and body["success"] is True
    assert body["state"] == "succeeded" and set(body["result"]) == {"decay", "dedup", "creative", "cluster", "forget"}
    assert all("seconds" in r and r["success"] for r in body["result"].values())


@pytest.mark.parametrize("body", [{"task": "decay"}, {"task": "forget", "dry_run": True}, {}])
def test_a_waited_run_answers_the_same_fields_as_its_record(client, auth, services, body):
    add_memory(services)
    waited = client.post("/consolidate", json={**body, "wait": True}, headers=auth).json
    record = client.get(f"/consolidate/runs/{waited['run_id']}", headers=auth).json
    assert set(waited) == set(record)
    # The fields AutoMem-era clients check are fields of the record itself, and agree with its state.
    assert record["success"] is waited["success"] is True and record["state"] == "succeeded"
    assert record["result"] == waited["result"] and record["duration_seconds"] == waited["duration_seconds"]
    assert "results" not in record and "cancelled" not in record


def test_consolidate_without_wait_answers_202_and_the_run_can_be_followed(client, auth, services):
    add_memory(services)
    response = client.post("/consolidate", json={"task": "decay"}, headers=auth)
    assert response.status_code == 202
    run_id = response.json["run_id"]
    assert response.json["status_url"] == f"/consolidate/runs/{run_id}"
    for _ in range(100):
        run = client.get(response.json["status_url"], headers=auth).json
        if run["state"] != "running":
            break
        time.sleep(0.05)
    assert run["state"] == "succeeded" and run["result"]["decay"]["memories_processed"] == 1


@pytest.mark.parametrize("body", [{"mode": "full"}, {"task": "all"}, {}])
def test_full_runs_have_every_spelling(client, auth, body):
    response = client.post("/consolidate", json={**body, "wait": True, "dry_run": True}, headers=auth)
    assert response.status_code == 200 and len(response.json["result"]) == 5


@pytest.mark.parametrize("body, field", [
    ({"task": "sleep"}, "task"), ({"mode": "nap"}, "mode"), ({"dry_run": "yes"}, "dry_run"),
    ({"task": "decay", "mode": "cluster"}, "mode"), ({"tasks": ["decay"]}, "tasks"), ([1, 2], "body"),
])
def test_consolidate_rejects_bad_input_naming_the_field(client, auth, body, field):
    response = client.post("/consolidate", json=body, headers=auth)
    assert response.status_code == 400
    assert response.json["error"] == "invalid_input" and response.json["field"] == field


def test_malformed_json_is_a_400(client, auth):
    response = client.post("/consolidate", data="{not json", headers={**auth, "Content-Type": "application/json"})
    assert response.status_code == 400 and response.json["field"] == "body"


def test_a_second_run_while_one_is_in_progress_gets_409_with_its_id(client, auth, services):
    running = services.engine.begin(["decay"], dry_run=False, trigger="test")
    try:
        response = client.post("/consolidate", json={"wait": True}, headers=auth)
        assert response.status_code == 409
        assert response.json["error"] == "run_in_progress" and response.json["run_id"] == running.id
        status = client.get("/consolidate/status", headers=auth).json
        assert status["current_run"]["run_id"] == running.id and status["current_run"]["state"] == "running"
    finally:
        services.engine.execute(running)
    assert client.post("/consolidate", json={"wait": True}, headers=auth).status_code == 200


def test_status_shows_last_runs_next_due_history_and_store_counts(client, auth, services):
    add_memory(services)
    client.post("/consolidate", json={"task": "decay", "wait": True}, headers=auth)
    status = client.get("/consolidate/status", headers=auth).json
    assert status["last_decay"].startswith("2026-06-01") and status["last_forget"] is None
    assert status["next_due"]["decay"].startswith("2026-06-02") and status["next_due"]["forget"] is None
    entry = status["history"][0]
    assert entry["task"] == "decay" and entry["success"] is True and entry["memories_processed"] == 1
    assert {"ran_at", "duration_seconds", "run_id"} <= set(entry)
    assert status["store_counts"] == {"graph_memories": 1, "vector_points": 1, "in_sync": True, "difference": 0}
    assert status["scheduler"]["alive"] is False and status["current_run"] is None


def test_unknown_routes_and_methods_answer_in_the_json_shape(client, auth):
    assert client.get("/nope").json["error"] == "not_found"
    response = client.get("/consolidate", headers=auth)
    assert response.status_code == 405 and response.json["error"] == "method_not_allowed"
    assert client.get("/consolidate/runs/5f0c6f7e-0d1b-4c9e-9a51-6f7d1f2e3a4b", headers=auth).status_code == 404
    malformed = client.get("/consolidate/runs/missing", headers=auth)
    assert malformed.status_code == 400 and malformed.json["field"] == "run_id"


def test_an_oversized_body_is_413(tmp_path, clock, client_for):
    from consolidation.service import build_services
    from tests.conftest import make_settings

    services = build_services(make_settings(tmp_path / "d", max_request_bytes=2048), clock=clock)
    try:
        client = client_for(services)
        response = client.post("/memory", json={"content": "x" * 5000}, headers=client.auth)
        assert response.status_code == 413 and response.json["error"] == "body_too_large"
    finally:
        services.close()


def test_the_app_lets_a_waiting_request_thread_have_the_gil_sooner(settings, services):
    """A run's Python holds the GIL; a status request waits for it at each store round trip (bench: p99)."""
    previous = sys.getswitchinterval()
    try:
        create_app(settings, services=services, start_scheduler=False)
        assert REQUEST_SWITCH_SECONDS < 0.005  # Python's default
        assert sys.getswitchinterval() == pytest.approx(REQUEST_SWITCH_SECONDS)
    finally:
        sys.setswitchinterval(previous)
