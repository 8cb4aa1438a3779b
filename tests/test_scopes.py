"""Scopes on the real embedded stores: two users holding identical memories (identical vectors too) never meet
in an edge, merge, supersession, cluster or summary; without scopes the same data does meet (the test can fail)."""

import json
import uuid

import pytest

from consolidation.memory import IMPORT_NAMESPACE, import_id
from consolidation.scopes import Scoping, scope_codes
from consolidation.service import build_services
from consolidation.settings import Settings, SettingsError, load_settings
from tests.conftest import TOKEN, add_memory, axis, days_ago, make_settings, unit

USERS = ("alice", "bob")
# Each user holds the same memories: restatements, an update, a cluster of notes, an Insight and a Pattern.
RESTATEMENTS = ["We use PostgreSQL for the billing service", "The billing service uses PostgreSQL",
                "we use postgresql for the billing service."]
UPDATE = ("Deploys happen on Tuesday", "Deploys moved from Tuesday to Thursday")


def holdings(services, user: str | None) -> dict[str, list[str]]:
    scope = {"user_id": user} if user else {}
    made = {"restatements": [], "update": [], "notes": [], "insight": []}
    for i, text in enumerate(RESTATEMENTS):
        made["restatements"].append(add_memory(services, vector=unit(axis(0) + 0.01 * axis(5 + i)), content=text,
                                               type="Decision", timestamp=days_ago(10 - i), **scope))
    for days, text in zip((20, 2), UPDATE):
        made["update"].append(add_memory(services, vector=unit(axis(1) + 0.2 * axis(9 - days % 3)), content=text,
                                         type="Context", timestamp=days_ago(days), **scope))
    for i in range(6):  # at least the smallest cluster (5)
        made["notes"].append(add_memory(services, vector=unit(axis(2) + 0.05 * axis(10 + i)), type="Context",
                                        content=f"onboarding checklist item {i}", **scope))
    made["insight"].append(add_memory(services, vector=unit(axis(3) + 0.1 * axis(4)), type="Insight",
                                      content="slow queries come from missing indexes", **scope))
    made["insight"].append(add_memory(services, vector=unit(axis(3)), type="Pattern",
                                      content="dashboards time out on Mondays", **scope))
    return made


def everything(services):
    return services.engine.run(["dedup", "creative", "cluster"])["result"]


def edges(services) -> list[tuple[str, str, str]]:
    rows = services.stores.graph.falkor.execute(
        "MATCH (a)-[r]->(b) RETURN a.id, type(r), b.id", read_only=True)
    return [tuple(row) for row in rows]


def user_of(services) -> dict[str, str | None]:
    rows = services.stores.graph.falkor.execute("MATCH (m:Memory) RETURN m.id, m.user_id", read_only=True)
    return {memory_id: user for memory_id, user in rows}


@pytest.fixture
def scoped(tmp_path, clock):
    services = build_services(make_settings(tmp_path, consolidation_scope_properties="user_id",
                                            consolidation_creative_sample_size=100,
                                            consolidation_creative_kinds="explains"), clock=clock)
    yield services
    services.close()


def test_identical_memories_of_two_users_never_meet(scoped):
    made = {user: holdings(scoped, user) for user in USERS}
    results = everything(scoped)
    owner = user_of(scoped)
    found = edges(scoped)
    assert found, "the run wrote edges"
    for a, relation, b in found:
        assert owner[a] == owner[b], f"{relation} joins {owner[a]} and {owner[b]}"
    relations = {relation for _, relation, _ in found}
    assert {"MERGED_INTO", "SUPERSEDES", "DISCOVERED"} <= relations
    # Within each user the work is done: two restatements merged, the update supersedes, one cluster each.
    assert results["dedup"]["merged"] == 2 * (len(RESTATEMENTS) - 1)
    assert results["dedup"]["supersessions_total"] == 2
    assert results["creative"]["by_kind"] == {"explains": 2}
    assert results["cluster"]["clusters_found"] == 2
    for merge in results["dedup"]["merges"]:
        assert {owner[d] for d in merge["duplicates"]} == {owner[merge["into"]]}
    patterns = scoped.stores.graph.meta_patterns()
    for pattern in patterns:
        assert len({owner[m] for m in pattern.member_ids}) == 1
        assert owner[pattern.id] == owner[next(iter(pattern.member_ids))]  # the summary carries the scope
    assert sorted(owner[p.id] for p in patterns) == sorted(USERS)
    for user in USERS:
        assert owner[made[user]["update"][0]] == user


def test_without_scopes_the_same_memories_do_meet(services):
    for user in USERS:
        holdings_made = holdings(services, user)
    results = everything(services)
    owner = user_of(services)
    assert any(owner[a] != owner[b] for a, _, b in edges(services))
    held = sum(len(ids) for ids in holdings_made.values())
    facts = 1 + len(UPDATE) + 6 + 2  # the restatements state one fact; each other memory its own
    assert results["dedup"]["merged"] == 2 * held - facts  # every copy merges with the other user's


def test_memories_missing_the_property_form_a_scope_of_their_own(scoped):
    holdings(scoped, "alice")
    holdings(scoped, None)
    everything(scoped)
    owner = user_of(scoped)
    assert all(owner[a] == owner[b] for a, _, b in edges(scoped))


def test_scope_keys_never_collide():
    # With a plain separator ("a|b", "c") and ("a", "b|c") would be one scope; lengths keep them apart.
    scoping = Scoping(("user_id", "agent_id"))
    expression = scoping.key_expression()
    assert "size(" in expression
    assert list(scope_codes(["3:a|b/1:c", "1:a/3:b|c", "3:a|b/1:c"])) in ([0, 1, 0], [1, 0, 1])


def test_scope_keys_computed_by_the_graph_tell_value_lists_apart(scoped):
    scoped.stores.graph.falkor.execute("CREATE (:Probe {user_id: 'a|b', agent_id: 'c'}), "
                                       "(:Probe {user_id: 'a', agent_id: 'b|c'}), (:Probe {user_id: 'a'})")
    scoping = Scoping(("user_id", "agent_id"))
    keys = [row[0] for row in scoped.stores.graph.falkor.execute(
        f"MATCH (m:Probe) RETURN {scoping.key_expression()}", read_only=True)]
    assert len(set(keys)) == 3


@pytest.mark.parametrize("value, problem", [("user_id,user_id", "named twice"), ("User", "not a property name"),
                                            ("content", "memory field of its own"), ("user-id", "not a property")])
def test_scope_properties_are_checked_at_start(value, problem):
    with pytest.raises(SettingsError, match=problem):
        load_settings({"ADMIN_API_TOKEN": TOKEN, "CONSOLIDATION_SCOPE_PROPERTIES": value})


def test_scope_properties_setting_reads_a_list():
    assert Settings(admin_api_token=TOKEN, consolidation_scope_properties="user_id, agent_id"
                    ).consolidation_scope_properties == ("user_id", "agent_id")


def test_a_run_of_one_scope_touches_only_that_scope(scoped):
    made = {user: holdings(scoped, user) for user in USERS}
    before = scoped.engine.control.state()
    result = scoped.engine.run(["dedup", "creative", "cluster"], scope={"user_id": "alice"})
    assert result["scope"] == {"user_id": "alice"}
    owner = user_of(scoped)
    touched = {owner[x] for a, _, b in edges(scoped) for x in (a, b)}
    assert touched == {"alice"}
    assert result["result"]["dedup"]["memories_processed"] == sum(len(v) for v in made["alice"].values())
    # bob's turn: alice's MetaPattern is outside bob's run, so it is neither matched nor retired.
    alice_patterns = {p.id for p in scoped.stores.graph.meta_patterns()}
    bob = scoped.engine.run(["cluster"], scope={"user_id": "bob"})["result"]["cluster"]
    assert bob["created"] == 1 and bob["retired_total"] == 0
    assert alice_patterns <= {p.id for p in scoped.stores.graph.meta_patterns()}
    # A scope's run leaves the whole graph's schedule alone; its record says which scope it ran.
    assert all(scoped.engine.control.state().get(f"last_{t}") == before.get(f"last_{t}")
               for t in ("dedup", "creative", "cluster"))
    assert scoped.engine.get_run(result["run_id"])["scope"] == {"user_id": "alice"}


def test_the_scope_of_memories_without_the_property_runs_alone(scoped):
    made = {user: holdings(scoped, user) for user in ("alice", None)}
    result = scoped.engine.run(["dedup", "creative", "cluster"], scope={"user_id": None})
    assert result["scope"] == {"user_id": None} and all(r["success"] for r in result["result"].values())
    owner = user_of(scoped)
    touched = {owner[x] for a, _, b in edges(scoped) for x in (a, b)}
    assert touched == {None} and result["result"]["dedup"]["merged"] > 0
    assert result["result"]["dedup"]["memories_processed"] == sum(len(v) for v in made[None].values())


def test_a_null_scope_value_names_the_memories_without_the_property(scoped_client, auth):
    client, _ = scoped_client
    done = client.post("/consolidate", json={"task": "dedup", "wait": True, "dry_run": True,
                                             "scope": {"user_id": None, "agent_id": "a1"}}, headers=auth)
    assert done.status_code == 200 and done.get_json()["scope"] == {"user_id": None, "agent_id": "a1"}


@pytest.mark.parametrize("scope", [{"user_id": ""}, {"agent_id": "x"}, {"user_id": 5}, "alice",
                                   {"user_id": "a", "agent_id": "b"}, {"user_id": "tab\there"}])
def test_a_bad_scope_is_refused_before_the_lease(scoped, scope):
    from consolidation.errors import InvalidInput

    with pytest.raises(InvalidInput) as refused:
        scoped.engine.begin(["dedup"], dry_run=True, trigger="test", scope=scope)
    assert refused.value.field == "scope"
    assert scoped.engine.control.current_lease() is None


def test_a_scope_cannot_be_named_without_scopes_configured(services):
    from consolidation.errors import InvalidInput

    with pytest.raises(InvalidInput, match="no scopes are configured"):
        services.engine.run(["dedup"], scope={"user_id": "alice"})


@pytest.fixture
def scoped_client(tmp_path, clock):
    from consolidation.api import create_app

    services = build_services(make_settings(tmp_path, consolidation_scope_properties="user_id,agent_id"),
                              clock=clock)
    app = create_app(services.settings, services, start_scheduler=False)
    yield app.test_client(), services
    services.close()


def test_the_api_takes_returns_and_checks_scope_properties(scoped_client, auth):
    client, services = scoped_client
    created = client.post("/memory", json={"content": "Alice prefers tea", "user_id": "alice", "agent_id": "a1"},
                          headers=auth)
    assert created.status_code == 201, created.get_json()
    memory_id = created.get_json()["memory"]["id"]
    shown = client.get(f"/memory/{memory_id}", headers=auth).get_json()["memory"]
    assert (shown["user_id"], shown["agent_id"]) == ("alice", "a1")
    for bad in (5, "", "line\nbreak", ["alice"], " ", " alice", "alice\u3000"):
        refused = client.post("/memory", json={"content": "x", "user_id": bad}, headers=auth)
        assert refused.status_code == 400 and refused.get_json()["field"] == "user_id", bad
    unknown = client.post("/memory", json={"content": "x", "user": "alice"}, headers=auth).get_json()
    assert unknown["field"] == "user" and "agent_id" in unknown["detail"] and "user_id" in unknown["detail"]
    line = b'{"content": "Bob prefers coffee", "user_id": "bob"}\n'
    imported = client.post("/memory/import", data=line, headers={**auth, "Content-Type": "application/x-ndjson"})
    assert imported.status_code == 200, imported.get_json()
    owners = services.stores.graph.falkor.execute("MATCH (m:Memory) RETURN m.user_id", read_only=True)
    assert sorted(row[0] for row in owners) == ["alice", "bob"]


def test_consolidate_runs_one_scope_named_in_the_body(scoped_client, auth):
    client, _ = scoped_client
    scope = {"user_id": "alice", "agent_id": "a1"}
    done = client.post("/consolidate", json={"task": "dedup", "wait": True, "scope": scope}, headers=auth)
    assert done.status_code == 200 and done.get_json()["scope"] == scope
    record = client.get(f"/consolidate/runs/{done.get_json()['run_id']}", headers=auth).get_json()
    assert record["scope"] == scope
    refused = client.post("/consolidate", json={"task": "dedup", "scope": {"user_id": "alice"}}, headers=auth)
    assert refused.status_code == 400 and refused.get_json()["field"] == "scope"
    assert client.get("/consolidate/status", headers=auth).get_json()["lease"] is None


def _import(client, auth, lines: list[dict], status: int = 200) -> dict:
    data = "".join(json.dumps(line) + "\n" for line in lines).encode()
    answer = client.post("/memory/import", data=data, headers={**auth, "Content-Type": "application/x-ndjson"})
    assert answer.status_code == status, answer.get_json()
    return answer.get_json()


def test_an_import_keeps_two_users_identical_lines_apart(scoped_client, auth):
    client, services = scoped_client
    line = {"content": "Zed likes tea", "timestamp": "2026-01-02T03:04:05+00:00"}
    first = _import(client, auth, [{**line, "user_id": "zed", "agent_id": "a"}])
    # Another user's identical line, alone and then beside a third user's in one file: each is a memory.
    second = _import(client, auth, [{**line, "user_id": "yan", "agent_id": "a"}])
    both = _import(client, auth, [{**line, "user_id": "xi", "agent_id": "a"}, {**line, "user_id": "wu", "agent_id": "a"}])
    assert (first["created"], second["created"], both["created"]) == (1, 1, 2), (second, both)
    owners = services.stores.graph.falkor.execute("MATCH (m:Memory) RETURN m.user_id, m.content", read_only=True)
    assert sorted(owners) == [[user, line["content"]] for user in ("wu", "xi", "yan", "zed")]
    # The same user's line again changes nothing.
    again = _import(client, auth, [{**line, "user_id": "zed", "agent_id": "a"}])
    assert (again["created"], again["skipped"]) == (0, 1)


def test_an_import_refuses_an_id_held_by_another_users_memory(scoped_client, auth):
    client, services = scoped_client
    memory_id = "5f0c6f7e-0d1b-4c9e-9a51-6f7d1f2e3a4b"
    _import(client, auth, [{"id": memory_id, "content": "Zed likes tea", "user_id": "zed", "agent_id": "a"}])
    for scope in ({"user_id": "yan", "agent_id": "a"}, {}):
        report = _import(client, auth, [{"id": memory_id, "content": "Zed likes tea", **scope}], status=409)
        assert report["conflicts_total"] == 1 and "scope" in report["conflicts"][0]["reason"], report
        assert report["skipped"] == 0 and report["created"] == 0
    assert services.stores.graph.get_memory(memory_id)["user_id"] == "zed"


def test_an_unscoped_lines_derived_id_is_the_one_it_had_before_scopes():
    line = {"content": "Zed likes tea", "timestamp": "2026-01-02T03:04:05+00:00", "type": "Memory"}
    # The id derivation as it stood before scopes: uuid5 of type, timestamp and content.
    expected = str(uuid.uuid5(IMPORT_NAMESPACE, f"Memory\n{line['timestamp']}\n{line['content']}"))
    assert import_id(line, ("user_id",)) == import_id(line) == expected
    assert import_id({**line, "user_id": "zed"}, ("user_id",)) != expected
    assert import_id({**line, "user_id": "zed"}, ("user_id",)) != import_id({**line, "user_id": "yan"}, ("user_id",))


def test_the_openapi_document_lists_the_scope_properties_where_bodies_take_them(scoped_client, auth, client):
    scoped, _ = scoped_client
    for app_client, expected in ((scoped, {"user_id", "agent_id"}), (client, set())):
        paths = app_client.get("/openapi.json").get_json()["paths"]
        memory = paths["/memory"]["post"]["requestBody"]["content"]["application/json"]["schema"]
        line = paths["/memory/import"]["post"]["requestBody"]["content"]["application/x-ndjson"]["schema"]["items"]
        for schema in (memory, line):
            assert {"user_id", "agent_id"} & set(schema["properties"]) == expected
            assert all(schema["properties"][name]["type"] == "string" for name in expected)
