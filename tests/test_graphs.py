"""Many graphs in one service (FALKORDB_GRAPHS) on the real embedded stores: each graph has its own memories,
collection, control node, lease and schedule; a request names its graph in X-Graph; status shows every graph."""

import json
from types import SimpleNamespace

import pytest

from consolidation.api import create_app
from consolidation.graphs import GraphSelection, parse_collections
from consolidation.service import build_services
from consolidation.settings import SettingsError, load_settings
from tests.conftest import TOKEN, add_memory, axis, make_settings, unit

AUTH = {"Authorization": f"Bearer {TOKEN}"}
RESTATEMENTS = ["We use PostgreSQL for the billing service", "The billing service uses PostgreSQL",
                "we use postgresql for the billing service."]


def on(graph: str) -> dict[str, str]:
    return {**AUTH, "X-Graph": graph}


@pytest.fixture
def many(tmp_path, clock):
    services = build_services(make_settings(tmp_path, falkordb_graphs="team_a,team_b",
                                            qdrant_collections="team_b=vectors_of_b"), clock=clock)
    yield services
    services.close()


@pytest.fixture
def client(many):
    return create_app(many.settings, services=many, start_scheduler=False).test_client()


def graph_names(services) -> list[str]:
    return services.graphs.connection().graph_names()


# --- the selection (pure) ------------------------------------------------------------------------------------

def test_names_and_prefixes_select_graphs_and_collections_follow_the_graph_unless_configured():
    selection = GraphSelection.parse(["team_a", "tenant_*"], "team_a", "memories", {"tenant_x": "x_vectors"})
    assert selection.default == "team_a"
    assert selection.serves("tenant_42") and selection.serves("team_a")
    assert not selection.serves("team_b") and not selection.serves("tenant_../x") and not selection.serves("tenant_")
    assert selection.served(["tenant_1", "other", "team_a", "tenant_0"]) == ["team_a", "tenant_0", "tenant_1"]
    assert selection.collection("team_a") == "memories"  # the default graph keeps QDRANT_COLLECTION
    assert selection.collection("tenant_x") == "x_vectors"
    assert selection.collection("tenant_y") == "tenant_y"
    # Without FALKORDB_GRAPHS the service is exactly what it was: FALKORDB_GRAPH and QDRANT_COLLECTION.
    alone = GraphSelection.parse([], "memories", "vectors", {})
    assert (alone.names, alone.default, alone.collection("memories")) == (("memories",), "memories", "vectors")
    # A list that leaves FALKORDB_GRAPH out has no default graph: requests must name theirs.
    assert GraphSelection.parse(["a", "b"], "memories", "memories", {}).default is None


@pytest.mark.parametrize("environ, named", [
    ({"FALKORDB_GRAPHS": "team/a"}, "FALKORDB_GRAPHS"),
    ({"FALKORDB_GRAPHS": "bad name*"}, "FALKORDB_GRAPHS"),
    ({"QDRANT_COLLECTIONS": "team_a"}, "QDRANT_COLLECTIONS"),
    ({"QDRANT_COLLECTIONS": "a=x,b=x"}, "QDRANT_COLLECTIONS"),
    ({"FALKORDB_GRAPHS": "a,b", "QDRANT_COLLECTIONS": "a=b"}, "collection"),
])
def test_bad_graph_settings_are_refused_at_start_naming_the_setting(tmp_path, environ, named):
    with pytest.raises(SettingsError, match=named):
        load_settings({"ADMIN_API_TOKEN": TOKEN, "DATA_DIR": str(tmp_path), **environ})


def test_collection_pairs_are_parsed_and_checked():
    assert parse_collections("a=x, b = y") == {"a": "x", "b": "y"}
    with pytest.raises(ValueError, match="named twice"):
        parse_collections("a=x,a=y")


# --- one service, several graphs -----------------------------------------------------------------------------

def test_each_graph_has_its_own_memories_collection_and_schedule(many, client, tmp_path):
    made = {}
    for graph in ("team_a", "team_b"):
        for text in RESTATEMENTS:
            answer = client.post("/memory", json={"content": text, "type": "Decision"}, headers=on(graph))
            assert answer.status_code == 201, answer.get_json()
            made.setdefault(graph, []).append(answer.get_json()["memory"]["id"])
    # A memory is found in its own graph only.
    assert client.get(f"/memory/{made['team_a'][0]}", headers=on("team_a")).status_code == 200
    assert client.get(f"/memory/{made['team_a'][0]}", headers=on("team_b")).status_code == 404
    # Each graph's vectors live in its own collection (team_b's as configured, team_a's after its name).
    assert (tmp_path / "qdrant" / "team_a").is_dir() and (tmp_path / "qdrant" / "vectors_of_b").is_dir()
    assert [many.graphs.get(g).stores.vectors.count() for g in ("team_a", "team_b")] == [3, 3]

    ran = client.post("/consolidate", json={"task": "dedup", "wait": True}, headers=on("team_a")).get_json()
    assert ran["graph"] == "team_a" and ran["result"]["dedup"]["merged"] == 2
    # The same three restatements in team_b were not merged by team_a's run.
    assert client.get("/hygiene/merges", headers=on("team_a")).get_json()["total"] > 0
    assert client.get("/hygiene/merges", headers=on("team_b")).get_json()["total"] == 0
    status_b = client.get("/consolidate/status", headers=on("team_b")).get_json()
    status_a = client.get("/consolidate/status", headers=on("team_a")).get_json()
    assert status_b["graph"] == "team_b" and status_b["last_dedup"] is None and status_b["history"] == []
    assert status_a["last_dedup"] is not None and status_a["store_counts"]["graph_memories"] == 3
    run = client.get(f"/consolidate/runs/{ran['run_id']}", headers=on("team_a")).get_json()
    assert run["graph"] == "team_a" and run["state"] == "succeeded"
    assert client.get(f"/consolidate/runs/{ran['run_id']}", headers=on("team_b")).status_code == 404


def test_without_a_default_graph_a_request_must_name_one_and_status_shows_every_graph(many, client):
    refused = client.post("/memory", json={"content": "which graph?"}, headers=AUTH)
    assert refused.status_code == 400
    assert refused.get_json()["field"] == "X-Graph" and "X-Graph" in refused.get_json()["detail"]
    unknown = client.get("/consolidate/status", headers=on("team_c"))
    assert unknown.status_code == 404 and unknown.get_json()["error"] == "unknown_graph"
    for impossible in ("team a", "x" * 65, "tenant_\u00e9", "-team"):
        refused = client.get("/consolidate/status", headers=on(impossible))
        assert refused.status_code == 400 and refused.get_json()["field"] == "X-Graph", impossible

    client.post("/consolidate", json={"task": "decay", "wait": True}, headers=on("team_b"))
    overview = client.get("/consolidate/status", headers=AUTH).get_json()
    assert "last_decay" not in overview and overview["scheduler"]["enabled"] is False
    by_graph = {entry["graph"]: entry for entry in overview["graphs"]}
    assert set(by_graph) == {"team_a", "team_b"}
    assert by_graph["team_b"]["last"]["decay"] is not None and by_graph["team_a"]["last"]["decay"] is None
    assert by_graph["team_b"]["collection"] == "vectors_of_b" and by_graph["team_a"]["collection"] == "team_a"


def test_a_run_holds_only_its_own_graphs_lease(many):
    team_a, team_b = many.graphs.get("team_a"), many.graphs.get("team_b")
    held = team_a.engine.begin(["decay"], dry_run=False, trigger="api")
    try:
        # team_a is busy; team_b is not: its run goes ahead at once.
        assert team_b.engine.run(["decay"])["success"] is True
        with pytest.raises(Exception, match="in progress"):
            team_a.engine.begin(["decay"], dry_run=False, trigger="api")
    finally:
        team_a.engine.execute(held)


def test_the_scheduler_runs_each_graphs_due_tasks_once(many, clock):
    for graph in ("team_a", "team_b"):
        add_memory(SimpleNamespace(settings=many.settings, stores=many.graphs.get(graph).stores),
                   vector=unit(axis(0)))
    first = many.scheduler.run_once()
    assert sorted(run["graph"] for run in first) == ["team_a", "team_b"]
    assert all(run["tasks"] == ["decay", "dedup", "creative", "cluster"] for run in first)
    assert many.scheduler.run_once() == []  # nothing is due again within the interval, on either graph
    clock.advance(days=1, seconds=1)
    assert sorted((run["graph"], tuple(run["tasks"])) for run in many.scheduler.run_once()) == [
        ("team_a", ("decay", "dedup")), ("team_b", ("decay", "dedup"))]


# --- graphs under a prefix -----------------------------------------------------------------------------------

@pytest.fixture
def tenants(tmp_path, clock):
    services = build_services(make_settings(tmp_path, falkordb_graphs="tenant_*"), clock=clock)
    yield services
    services.close()


def test_a_prefix_serves_existing_graphs_and_a_write_creates_a_new_one(tenants):
    client = create_app(tenants.settings, services=tenants, start_scheduler=False).test_client()
    assert tenants.graphs.names() == []
    # A read of a graph that does not exist is a 404, and leaves no empty graph behind.
    assert client.get("/consolidate/status", headers=on("tenant_new")).status_code == 404
    assert client.get("/clusters", headers=on("tenant_new")).status_code == 404
    assert "tenant_new" not in graph_names(tenants)
    # A graph outside the prefix is never served, not even by a write.
    assert client.post("/memory", json={"content": "x"}, headers=on("other")).status_code == 404
    created = client.post("/memory", json={"content": "the first memory"}, headers=on("tenant_new"))
    assert created.status_code == 201 and "tenant_new" in graph_names(tenants)
    # A graph another process (or the agent itself) made on the server is discovered and consolidated.
    tenants.graphs.connection().for_graph("tenant_made_elsewhere").execute("CREATE (:Seed)")
    tenants.graphs.connection().for_graph("unrelated").execute("CREATE (:Seed)")
    runs = tenants.scheduler.run_once()
    assert sorted(run["graph"] for run in runs) == ["tenant_made_elsewhere", "tenant_new"]
    overview = client.get("/consolidate/status", headers=AUTH).get_json()
    assert [entry["graph"] for entry in overview["graphs"]] == ["tenant_made_elsewhere", "tenant_new"]


def test_new_graphs_take_the_admin_token_and_stop_at_the_cap(tmp_path, clock):
    settings = make_settings(tmp_path, falkordb_graphs="tenant_*", falkordb_graphs_max=2,
                             api_token="memory-api-token-0123456789")
    services = build_services(settings, clock=clock)
    try:
        client = create_app(settings, services=services, start_scheduler=False).test_client()
        agent = {"Authorization": "Bearer memory-api-token-0123456789"}
        refused = client.post("/memory", json={"content": "x"}, headers={**agent, "X-Graph": "tenant_a"})
        assert refused.status_code == 403 and refused.get_json()["error"] == "forbidden"
        assert graph_names(services) == []
        for name in ("tenant_a", "tenant_b"):
            assert client.post("/memory", json={"content": "x"}, headers=on(name)).status_code == 201
        # Existing graphs take the agent's writes; a third graph is over the cap, for the admin too.
        written = client.post("/memory", json={"content": "y"}, headers={**agent, "X-Graph": "tenant_a"})
        assert written.status_code == 201
        over = client.post("/memory", json={"content": "x"}, headers=on("tenant_c"))
        assert over.status_code == 409 and over.get_json()["error"] == "graph_limit"
        assert graph_names(services) == ["tenant_a", "tenant_b"]
    finally:
        services.close()
    anyone = build_services(make_settings(tmp_path / "any", falkordb_graphs="tenant_*", graph_creation="any",
                                          api_token="memory-api-token-0123456789"), clock=clock)
    try:
        client = create_app(anyone.settings, services=anyone, start_scheduler=False).test_client()
        made = client.post("/memory", json={"content": "x"}, headers={
            "Authorization": "Bearer memory-api-token-0123456789", "X-Graph": "tenant_a"})
        assert made.status_code == 201
    finally:
        anyone.close()


def test_a_refused_or_dry_write_makes_no_graph(tenants):
    client = create_app(tenants.settings, services=tenants, start_scheduler=False).test_client()
    jsonl = {**AUTH, "Content-Type": "application/x-ndjson"}
    refused = [client.post("/memory", json={"content": 5}, headers=on("tenant_typo1")),
               client.post("/memory/import", data=b'{"content": ""}\n', headers={**jsonl, "X-Graph": "tenant_typo2"})]
    assert [answer.status_code for answer in refused] == [400, 400]
    assert refused[1].get_json()["errors_total"] == 1
    dry = client.post("/memory/import?dry_run=true", data=b'{"content": "a"}\n{"content": "b"}\n',
                      headers={**jsonl, "X-Graph": "tenant_dry"})
    assert dry.status_code == 200 and (dry.get_json()["created"], dry.get_json()["dry_run"]) == (2, True)
    for name in ("tenant_typo1", "tenant_typo2", "tenant_dry"):
        assert client.get("/consolidate/status", headers=on(name)).status_code == 404, name
    assert graph_names(tenants) == [] and tenants.graphs.names() == []
    # The same import, not dry, makes the graph and writes both lines.
    done = client.post("/memory/import", data=b'{"content": "a"}\n{"content": "b"}\n',
                       headers={**jsonl, "X-Graph": "tenant_dry"})
    assert done.status_code == 200 and done.get_json()["created"] == 2
    assert graph_names(tenants) == ["tenant_dry"]


def test_the_openapi_documents_the_graph_header_on_every_graph_route(client):
    document = client.get("/openapi.json").get_json()
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            headers = [p["name"] for p in operation.get("parameters", []) if p["in"] == "header"]
            about_a_graph = path.startswith(("/memory", "/memories", "/consolidate", "/clusters", "/hygiene",
                                             "/reconcile", "/reembed", "/entities", "/recall"))
            assert ("X-Graph" in headers) == about_a_graph, (method, path)
            if about_a_graph:
                assert "404" in operation["responses"], (method, path)


def test_the_cli_works_on_the_graph_it_is_given(tmp_path):
    from click.testing import CliRunner

    from consolidation.cli import main as cli

    env = {"ADMIN_API_TOKEN": TOKEN, "DATA_DIR": str(tmp_path / "cli"), "VECTOR_SIZE": "16", "EMBEDDING_PROVIDER": "hash",
           "FALKORDB_GRAPHS": "team_a,team_b"}
    sample = tmp_path / "two.jsonl"
    sample.write_text('{"content": "first note"}\n{"content": "second note"}\n')
    refused = CliRunner().invoke(cli, ["import", str(sample)], env=env)
    assert refused.exit_code != 0 and "--graph" in refused.output
    assert CliRunner().invoke(cli, ["import", str(sample), "--graph", "team_b"], env=env).exit_code == 0
    ran = CliRunner().invoke(cli, ["consolidate", "--task", "decay", "--graph", "team_b"], env=env)
    assert ran.exit_code == 0, ran.output
    result = json.loads(ran.stdout)
    assert result["graph"] == "team_b" and result["result"]["decay"]["memories_processed"] == 2
    empty = CliRunner().invoke(cli, ["consolidate", "--task", "decay", "--graph", "team_a"], env=env)
    assert json.loads(empty.stdout)["result"]["decay"]["memories_processed"] == 0


def test_the_cli_makes_a_new_graph_only_for_an_import_that_writes(tmp_path):
    from click.testing import CliRunner

    from consolidation.cli import main as cli

    env = {"ADMIN_API_TOKEN": TOKEN, "DATA_DIR": str(tmp_path / "cli"), "VECTOR_SIZE": "16", "EMBEDDING_PROVIDER": "hash",
           "FALKORDB_GRAPHS": "tenant_*"}
    good, bad = tmp_path / "good.jsonl", tmp_path / "bad.jsonl"
    good.write_text('{"content": "first note"}\n{"content": "second note"}\n')
    bad.write_text('{"content": "first note"}\n{"content": 5}\n')
    refused = CliRunner().invoke(cli, ["import", str(bad), "--graph", "tenant_bad"], env=env)
    dry = CliRunner().invoke(cli, ["import", str(good), "--dry-run", "--graph", "tenant_dry"], env=env)
    assert refused.exit_code != 0 and dry.exit_code == 0, (refused.output, dry.output)
    assert json.loads(dry.stdout)["created"] == 2
    services = build_services(load_settings(env))
    try:
        assert graph_names(services) == []
    finally:
        services.close()
    assert CliRunner().invoke(cli, ["import", str(good), "--graph", "tenant_dry"], env=env).exit_code == 0
    services = build_services(load_settings(env))
    try:
        assert graph_names(services) == ["tenant_dry"]
        assert services.graphs.get("tenant_dry").stores.graph.count_memories() == 2
    finally:
        services.close()


def native_threads() -> int:
    import os

    return len(os.listdir("/proc/self/task"))


def test_many_graphs_keep_a_bounded_number_open_and_quiet_ones_closed(tmp_path, clock, monkeypatch):
    from consolidation import registry as registry_module

    monkeypatch.setattr(registry_module, "MIN_OPEN_SECONDS", 0.0)
    services = build_services(make_settings(tmp_path, falkordb_graphs="tenant_*", falkordb_graph="tenant_0",
                                            falkordb_graphs_open_max=3, consolidation_decay_interval_seconds=0,
                                            consolidation_dedup_interval_seconds=0,
                                            consolidation_creative_interval_seconds=0,
                                            consolidation_cluster_interval_seconds=0), clock=clock)
    try:
        client = create_app(services.settings, services=services, start_scheduler=False).test_client()
        baseline = native_threads()
        ids = {}
        for index in range(12):
            answer = client.post("/memory", json={"content": f"tenant note {index}"}, headers=on(f"tenant_{index}"))
            assert answer.status_code == 201, answer.json
            ids[index] = answer.json["memory"]["id"]
            assert len(services.graphs.opened()) <= 3
        # Each embedded collection holds threads: with three open at most, twelve graphs cost what three do.
        assert native_threads() - baseline <= 3 * 10
        # A closed graph opens again when asked for, its memory intact.
        assert client.get(f"/memory/{ids[0]}", headers=on("tenant_0")).json["memory"]["content"] == "tenant note 0"
        # A tick over quiet graphs (nothing scheduled, nothing pending) opens none of them.
        services.graphs.close_idle()
        open_before = {graph.name for graph in services.graphs.opened()}
        services.scheduler.run_once()
        assert {graph.name for graph in services.graphs.opened()} <= open_before | {"tenant_0"}
        assert len(services.graphs.names()) == 12
    finally:
        services.close()
