"""Tokens bound to scopes (API_TOKENS): such a token reads, recalls, writes and forgets only its own scope's
memories; another scope's memory is a 404, as if it did not exist; the admin token and the unbound API_TOKEN see
every scope."""

from __future__ import annotations

import json

import pytest

from consolidation.service import build_services
from consolidation.settings import Settings, SettingsError, load_settings

from conftest import TOKEN, make_settings

U1, U2, UNBOUND = "token-of-user-one-0123", "token-of-user-two-0123", "unbound-agent-token-0123"


@pytest.fixture
def scoped(tmp_path, clock, client_for):
    settings = make_settings(tmp_path / "data", consolidation_scope_properties="user_id", api_token=UNBOUND,
                             api_tokens=json.dumps({U1: {"user_id": "u1"}, U2: {"user_id": "u2"}}))
    services = build_services(settings, clock=clock)
    yield client_for(services), services
    services.close()


def _as(token):
    return {"Authorization": f"Bearer {token}"}


def _write(client, token, content, **fields):
    answer = client.post("/memory", headers=_as(token), json={"content": content, **fields})
    assert answer.status_code == 201, answer.get_json()
    return answer.get_json()["memory"]


def test_a_scoped_token_writes_in_its_scope_and_never_in_another(scoped):
    client, _ = scoped
    assert _write(client, U1, "User one likes tea")["user_id"] == "u1"
    assert _write(client, U1, "User one likes jazz", user_id="u1")["user_id"] == "u1"
    refused = client.post("/memory", headers=_as(U1), json={"content": "sneaky", "user_id": "u2"})
    assert refused.status_code == 403 and refused.get_json()["error"] == "forbidden"
    lines = "\n".join(json.dumps(line) for line in ({"content": "imported by one"},
                                                     {"content": "into two", "user_id": "u2"}))
    imported = client.post("/memory/import", headers=_as(U1), data=lines)
    assert imported.status_code == 400 and imported.get_json()["field"] == "user_id"
    assert client.post("/memory/import?skip_bad_lines=true", headers=_as(U1), data=lines).get_json()["created"] == 1


def test_another_scopes_memory_is_not_found_through_a_scoped_token(scoped):
    client, services = scoped
    theirs = _write(client, U2, "User two lives in Oslo")["id"]
    mine = _write(client, U1, "User one lives in Rome")["id"]
    for method, route, body in (("get", f"/memory/{theirs}", None), ("post", f"/memory/{theirs}/access", None),
                                ("post", f"/memory/{theirs}/supersede", {"content": "User two moved to Bergen"}),
                                ("post", f"/memory/{theirs}/supersede/undo", None),
                                ("delete", f"/memory/{theirs}", None),
                                ("post", f"/memory/{mine}/supersede", {"by": theirs})):
        answer = getattr(client, method)(route, headers=_as(U1), json=body)
        assert answer.status_code == 404, (route, answer.get_json())
    assert services.stores.graph.get_memory(theirs)["access_count"] == 0
    assert services.stores.graph.get_memory(theirs).get("superseded_by") is None
    # Deleted by its own token: still nothing to the other scope's (a 404, not a 410 saying it was there).
    assert client.delete(f"/memory/{theirs}", headers=_as(U2)).status_code == 200
    assert client.get(f"/memory/{theirs}", headers=_as(U1)).status_code == 404
    assert client.get(f"/memory/{theirs}", headers=_as(U2)).status_code == 410
    # Its own memory, through its own token: every route works.
    assert client.post(f"/memory/{mine}/access", headers=_as(U1)).status_code == 200
    assert client.post(f"/memory/{mine}/supersede", headers=_as(U1),
                       json={"content": "User one moved to Milan"}).status_code == 200


def test_a_scoped_token_recalls_only_its_scope(scoped):
    client, _ = scoped
    _write(client, U1, "User one lives in Rome")
    _write(client, U2, "User two lives in Rome")
    recalled = client.post("/recall", headers=_as(U1), json={"query": "who lives in Rome", "k": 10}).get_json()
    assert [r["content"] for r in recalled["results"]] == ["User one lives in Rome"]
    other = client.post("/recall", headers=_as(U1), json={"query": "Rome", "scope": {"user_id": "u2"}})
    assert other.status_code == 403
    for token in (TOKEN, UNBOUND):  # the admin and the unbound agent token see every scope
        everyone = client.post("/recall", headers=_as(token), json={"query": "who lives in Rome", "k": 10})
        assert len(everyone.get_json()["results"]) == 2


def test_a_scoped_token_cannot_call_admin_routes(scoped):
    client, _ = scoped
    assert client.get("/consolidate/status", headers=_as(U1)).status_code == 403
    assert client.post("/memories/purge", headers=_as(U1), json={"match": "Rome"}).status_code == 403


@pytest.mark.parametrize(("tokens", "problem"), [
    ('{"short": {"user_id": "u1"}}', "at least 16 characters"),
    ('{"token-of-user-one-0123": {"agent_id": "a"}}', "each of user_id"),
    ('["token-of-user-one-0123"]', "JSON object"),
    ('{"' + TOKEN + '": {"user_id": "u1"}}', "not the admin token"),
])
def test_bad_token_bindings_are_refused_at_start_without_showing_a_token(tmp_path, tokens, problem):
    with pytest.raises(SettingsError) as refused:
        load_settings({"ADMIN_API_TOKEN": TOKEN, "DATA_DIR": str(tmp_path), "API_TOKENS": tokens,
                       "CONSOLIDATION_SCOPE_PROPERTIES": "user_id"})
    assert problem in str(refused.value) and "token-of-user-one" not in str(refused.value)
    with pytest.raises(ValueError, match="names none"):
        Settings(admin_api_token=TOKEN, api_tokens='{"token-of-user-one-0123": {"user_id": "u1"}}')
