"""Requests mean what they say: an Idempotency-Key tied to its request, and the status a client expects for each
case (400 for a bad body, first; 403 for a valid token without the right; 409 for a state conflict; 410 for a
deleted or erased memory, with its true restorable_until)."""

from __future__ import annotations

from datetime import timedelta

from consolidation.timeutil import parse_iso

from conftest import make_settings

AGENT = "agent-token-0123456789abcdef"


def _post(client, auth, content, **fields):
    answer = client.post("/memory", headers=auth, json={"content": content, **fields})
    assert answer.status_code == 201, answer.get_json()
    return answer.get_json()["memory"]["id"]


def _supersede(client, auth, memory_id, body, key=None):
    headers = {**auth, **({"Idempotency-Key": key} if key else {})}
    return client.post(f"/memory/{memory_id}/supersede", headers=headers, json=body)


def test_a_reused_idempotency_key_with_another_body_is_422(client, auth, services):
    old = _post(client, auth, "User lives in Lisbon.")
    first = _supersede(client, auth, old, {"content": "User moved to Porto."}, key="move-1")
    assert first.status_code == 200
    again = _supersede(client, auth, old, {"content": "User moved to Porto."}, key="move-1")
    assert again.status_code == 200 and again.get_json()["repeated"] is True
    assert again.get_json()["superseded_by"] == first.get_json()["superseded_by"]
    other = _supersede(client, auth, old, {"content": "User moved to Berlin."}, key="move-1")
    assert other.status_code == 422 and other.get_json()["error"] == "idempotency_key_reused"
    elsewhere = _supersede(client, auth, _post(client, auth, "User drives a Fiat."),
                           {"content": "User moved to Porto."}, key="move-1")
    assert elsewhere.status_code == 422
    assert services.stores.graph.count_memories() == 3  # Lisbon, Porto, the Fiat: no Berlin


def test_a_retry_after_an_undo_answers_the_state_as_it_is(client, auth):
    old = _post(client, auth, "User lives in Lisbon.")
    _supersede(client, auth, old, {"content": "User moved to Porto."}, key="move-2")
    assert client.post(f"/memory/{old}/supersede/undo", headers=auth).status_code == 200
    retry = _supersede(client, auth, old, {"content": "User moved to Porto."}, key="move-2")
    assert retry.status_code == 200
    body = retry.get_json()
    assert (body["state"], body["superseded_by"], body["repeated"]) == ("active", None, True)
    assert body["undone_at"] is not None
    assert client.get(f"/memory/{old}", headers=auth).get_json()["memory"]["superseded_by"] is None


def test_a_supersede_keeps_the_older_memorys_type_and_tags_unless_given(client, auth):
    old = _post(client, auth, "User lives in Lisbon.", type="Fact", tags=["home"])
    newer = _supersede(client, auth, old, {"content": "User moved to Porto."}).get_json()["superseded_by"]
    stored = client.get(f"/memory/{newer}", headers=auth).get_json()["memory"]
    assert (stored["type"], stored["tags"]) == ("Fact", ["home"])
    again = _supersede(client, auth, newer, {"content": "User moved to Oslo.", "type": "Context", "tags": []})
    latest = client.get(f"/memory/{again.get_json()['superseded_by']}", headers=auth).get_json()["memory"]
    assert (latest["type"], latest["tags"]) == ("Context", [])


def test_by_itself_is_400_and_by_a_deleted_memory_is_410(client, auth):
    old = _post(client, auth, "User works at Acme.")
    gone = _post(client, auth, "User joined Globex.")
    assert client.delete(f"/memory/{gone}", headers=auth).status_code == 200
    itself = _supersede(client, auth, old, {"by": old})
    assert itself.status_code == 400 and itself.get_json()["field"] == "by"
    deleted = _supersede(client, auth, old, {"by": gone})
    assert deleted.status_code == 410 and deleted.get_json()["restorable_until"] is not None


def test_a_bad_body_is_400_before_the_memorys_state_is_409(client, auth):
    old = _post(client, auth, "User lives in Lisbon.")
    assert _supersede(client, auth, old, {"content": "User moved to Porto."}).status_code == 200
    assert _supersede(client, auth, old, {"content": "User moved to Oslo."}).status_code == 409
    malformed = _supersede(client, auth, old, {"content": 42})
    assert malformed.status_code == 400 and malformed.get_json()["field"] == "content"
    assert _supersede(client, auth, old, ["not", "an", "object"]).status_code == 400


def test_a_deleted_memory_says_when_it_stops_being_restorable(client, auth, settings):
    memory = _post(client, auth, "Forget me later.")
    deleted_at = client.delete(f"/memory/{memory}", headers=auth).get_json()["deleted_at"]
    expected = parse_iso(deleted_at) + timedelta(days=settings.consolidation_tombstone_retention_days)
    for answer in (client.delete(f"/memory/{memory}", headers=auth), client.get(f"/memory/{memory}", headers=auth),
                   _supersede(client, auth, memory, {"content": "x"})):
        assert answer.status_code == 410
        assert parse_iso(answer.get_json()["restorable_until"]) == expected


def test_an_erased_memory_is_410_with_nothing_restorable(client, auth):
    memory = _post(client, auth, "Write to dana@x.io about the invoice.")
    newer = _supersede(client, auth, memory, {"content": "Write to help@x.io about the invoice."})
    assert newer.status_code == 200
    done = client.post("/memories/purge", headers=auth, json={"match": "dana@x.io", "dry_run": False,
                                                               "erase": True})
    assert done.status_code == 200 and done.get_json()["deleted"] == 1
    for answer in (client.post(f"/memory/{memory}/supersede/undo", headers=auth),
                   client.post(f"/memory/{memory}/restore", headers=auth),
                   client.get(f"/memory/{memory}", headers=auth)):
        assert answer.status_code == 410, answer.get_json()
        assert answer.get_json()["deletion"] == "erased" and answer.get_json()["restorable_until"] is None


def test_recall_refuses_a_blank_query_and_a_query_beside_an_embedding(client, auth, settings):
    _post(client, auth, "User lives in Lisbon.")
    blank = client.post("/recall", headers=auth, json={"query": "   "})
    assert blank.status_code == 400 and blank.get_json()["field"] == "query"
    both = client.post("/recall", headers=auth, json={"query": "Lisbon", "embedding": [0.1] * settings.vector_size})
    assert both.status_code == 400 and both.get_json()["field"] == "query"


def test_a_valid_agent_token_on_an_admin_route_is_403(tmp_path, clock, client_for):
    from consolidation.service import build_services

    services = build_services(make_settings(tmp_path / "data", api_token=AGENT), clock=clock)
    try:
        client = client_for(services)
        agent = {"Authorization": f"Bearer {AGENT}"}
        for method, route in (("get", "/consolidate/status"), ("post", "/memories/purge"),
                              ("post", "/consolidate")):
            answer = getattr(client, method)(route, headers=agent, json={"match": "x"})
            assert answer.status_code == 403 and answer.get_json()["error"] == "forbidden", route
        wrong = client.get("/consolidate/status", headers={"Authorization": "Bearer not-a-token-at-all"})
        assert wrong.status_code == 401
    finally:
        services.close()

