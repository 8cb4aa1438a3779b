"""Issue 13's reproductions, each against the real stores: no lease leak, imports that cannot overwrite,
hostile input answered with a 400 naming the field, no silent value changes, unsafe setups refused."""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from consolidation.cli import main as cli
from consolidation.errors import StoreMismatch, StoreUnavailable
from consolidation.memory import MAX_COUNT
from consolidation.service import build_services
from tests.conftest import TOKEN, add_memory, days_ago, make_settings

SAMPLE = Path(__file__).resolve().parent.parent / "samples" / "memories.jsonl"
JSON = {"Content-Type": "application/json"}
MEMORY_ID = "5f0c6f7e-0d1b-4c9e-9a51-6f7d1f2e3a4b"


# --- a refused request takes no lease ------------------------------------------------------------------------

@pytest.mark.parametrize("body", [{"wait": "yes"}, {"task": "decay", "wait": 1}, {"dry_run": True, "wait": None}])
def test_a_refused_consolidate_request_takes_no_lease_and_records_no_run(client, auth, services, body):
    assert client.post("/consolidate", json=body, headers=auth).status_code == 400
    assert services.engine.control.current_lease() is None
    assert services.stores.graph.falkor.execute("MATCH (r:ConsolidationServiceRun) RETURN count(r)")[0][0] == 0
    assert client.post("/consolidate", json={"task": "decay", "wait": True}, headers=auth).status_code == 200


# --- imports create; they never overwrite or resurrect behind anyone's back ----------------------------------

def test_reimporting_the_sample_changes_no_stored_memory(services, clock):
    assert services.memories.import_jsonl(SAMPLE.read_bytes(), shift_to_now=True).created == 36
    graph = services.stores.graph
    some = sorted(graph.all_memory_ids())[:3]
    clock.advance(days=2)
    services.memories.record_access(some[0])
    graph.archive([some[1]], clock().isoformat())
    graph.falkor.execute("MATCH (m:Memory {id: $id}) SET m.protected = true, m.protected_reason = 'admin'",
                         {"id": some[2]})
    before = {m["id"]: m for m in graph.get_memories(graph.all_memory_ids())}

    again = services.memories.import_jsonl(SAMPLE.read_bytes(), shift_to_now=True)

    assert (again.created, again.overwritten, len(again.skipped), again.conflicts) == (0, 0, 36, [])
    assert {m["id"]: m for m in graph.get_memories(graph.all_memory_ids())} == before
    assert before[some[0]]["access_count"] >= 1 and before[some[1]]["archived"] and before[some[2]]["protected"]


def test_a_line_with_a_taken_id_and_other_content_is_a_conflict_and_nothing_is_written(client, auth, services):
    add_memory(services, id=MEMORY_ID, content="the stored memory")
    body = "\n".join([json.dumps({"content": "a new one"}), json.dumps({"id": MEMORY_ID, "content": "not the same"})])
    answer = client.post("/memory/import", data=body, headers=auth)
    assert answer.status_code == 409 and answer.json["error"] == "conflict"
    assert answer.json["conflicts"] == [{"line": 2, "id": MEMORY_ID,
                                         "reason": "a memory with other content is stored under this id"}]
    assert answer.json["created"] == 1  # what it would have done; nothing was written
    assert services.stores.graph.count_memories() == 1 and services.stores.vectors.count() == 1
    assert services.stores.graph.get_memory(MEMORY_ID)["content"] == "the stored memory"


def test_a_meta_pattern_cannot_be_replaced_by_an_import_with_either_token(tmp_path, clock, client_for):
    services = build_services(make_settings(tmp_path / "d", api_token="agent-token-abcdefgh"), clock=clock)
    try:
        client = client_for(services)
        add_memory(services, id=MEMORY_ID, type="MetaPattern", content="summary of a cluster")
        line = json.dumps({"id": MEMORY_ID, "content": "replaced summary"})
        agent = {"Authorization": "Bearer agent-token-abcdefgh"}
        assert client.post("/memory/import", data=line, headers=agent).status_code == 409
        assert client.post("/memory/import?overwrite=true", data=line, headers=agent).status_code == 403
        overwrite = client.post("/memory/import?overwrite=true", data=line, headers=client.auth)
        assert overwrite.status_code == 409 and "MetaPattern" in overwrite.json["conflicts"][0]["reason"]
        assert services.stores.graph.get_memory(MEMORY_ID)["content"] == "summary of a cluster"
    finally:
        services.close()


def forgotten(services, clock) -> str:
    memory_id = add_memory(services, id=MEMORY_ID, content="an old fact", timestamp=days_ago(400),
                           last_accessed=days_ago(400))
    services.engine.lifecycle.delete({memory_id: "test"}, clock())
    return memory_id


def test_a_forgotten_memory_is_not_brought_back_by_an_import(client, auth, services, clock):
    memory_id = forgotten(services, clock)
    line = json.dumps({"id": memory_id, "content": "an old fact"})
    answer = client.post("/memory/import", data=line, headers=auth)
    assert answer.status_code == 409 and f"/memory/{memory_id}/restore" in answer.json["conflicts"][0]["reason"]
    assert client.post("/memory", json={"id": memory_id, "content": "an old fact"}, headers=auth).status_code == 409
    assert services.stores.graph.get_memory(memory_id) is None
    assert services.engine.lifecycle.tombstones.latest(memory_id)["state"] == "deleted"
    assert client.post(f"/memory/{memory_id}/restore", headers=auth).status_code == 200


def test_an_admin_overwrite_replaces_is_audited_and_retires_the_tombstone(client, auth, services, clock):
    memory_id = forgotten(services, clock)
    other = add_memory(services, content="before", access_count=7)
    body = "\n".join([json.dumps({"id": memory_id, "content": "an old fact, imported again"}),
                      json.dumps({"id": other, "content": "after"})])
    answer = client.post("/memory/import?overwrite=true", data=body, headers=auth)
    assert answer.status_code == 200, answer.json
    assert (answer.json["created"], answer.json["overwritten"]) == (1, 1)
    replaced = services.stores.graph.get_memory(other)
    assert replaced["content"] == "after" and replaced["access_count"] == 0
    assert services.engine.lifecycle.tombstones.latest(memory_id) is None  # no longer stands for it
    assert client.post(f"/memory/{memory_id}/restore", headers=auth).status_code == 409
    [entry] = services.memories.audit.recent()
    assert entry["action"] == "import_overwrite" and entry["details"]["overwritten"] == [other]
    assert entry["details"]["replaced_tombstones"] == [memory_id]


def test_two_lines_with_one_id_are_refused_unless_they_say_the_same(services):
    same = json.dumps({"id": MEMORY_ID, "content": "one"})
    report = services.memories.import_jsonl(f"{same}\n{same}".encode())
    assert (report.created, report.skipped) == (1, [{"line": 2, "id": MEMORY_ID, "reason": "repeats line 1"}])
    other = json.dumps({"id": str(uuid.uuid4()), "content": "two"})
    clash = json.dumps({"id": json.loads(other)["id"], "content": "three"})
    report = services.memories.import_jsonl(f"{other}\n{clash}".encode())
    assert report.created == 0 and report.errors[0]["line"] == 2 and report.errors[0]["field"] == "id"
    assert services.stores.graph.count_memories() == 1


def test_an_import_that_fails_half_way_leaves_nothing_behind(services, monkeypatch):
    # The fault (a store failing on the second batch) is injected: the real store cannot be made to fail on cue.
    real = services.stores.graph.create_memories
    calls = []

    def second_batch_fails(memories):
        calls.append(len(memories))
        if len(calls) == 2:
            raise StoreUnavailable("graph", "injected failure")
        return real(memories)

    monkeypatch.setattr(services.stores.graph, "create_memories", second_batch_fails)
    keep = add_memory(services, content="kept as it was", access_count=3)
    lines = [json.dumps({"content": f"memory {i}"}) for i in range(700)]
    lines.append(json.dumps({"id": keep, "content": "overwritten"}))
    with pytest.raises(StoreUnavailable):
        services.memories.import_jsonl("\n".join(lines).encode(), overwrite=True)
    assert calls == [500, 200]
    assert services.stores.graph.count_memories() == 1 and services.stores.vectors.count() == 1
    assert services.stores.graph.get_memory(keep)["content"] == "kept as it was"


# --- hostile input: a 400 naming the field, never a 500 ------------------------------------------------------

DEEP = '{"tags": ' + "[" * 5000 + "]" * 5000 + ', "content": "x"}'
HUGE = "1" + "0" * 400


@pytest.mark.parametrize("path, body, field", [
    ("/memory", DEEP, "body"),
    ("/consolidate", '{"task": ' + "[" * 6000 + "]" * 6000 + "}", "body"),
    ("/memory", '{"content": "x", "timestamp": "0001-01-01T00:00:00+01:00"}', "timestamp"),
    ("/memory", '{"content": "x", "timestamp": "9999-12-31T23:59:59-01:00"}', "timestamp"),
    ("/memory", '{"content": "x", "last_accessed": "0001-01-01T00:30:00+01:00"}', "last_accessed"),
    ("/memory", '{"content": "x", "importance": ' + HUGE + "}", "importance"),
    ("/memory", '{"content": "x", "embedding": [' + HUGE + ", 1" * 15 + "]}", "embedding"),
    ("/memory", '{"content": "x", "confidence": 1e400}', "confidence"),
    ("/memory", '{"content": "a\\ud800b"}', "content"),
    ("/memory", '{"content": "x", "tags": ["ok", "\\udfff"]}', "tags"),
    ("/memory", '{"content": "a\\u0000b"}', "content"),
    ("/memory", '{"content": "x", "protected_reason": "\\u0000"}', "protected_reason"),
    ("/memory", '{"content": "x", "access_count": 9223372036854775808}', "access_count"),
    ("/memory", '{"content": "x", "access_count": ' + str(MAX_COUNT + 1) + "}", "access_count"),
    ("/memory", '{"content": "x", "embedding": [1e39' + ", 0" * 15 + "]}", "embedding"),
    ("/memory", '{"content": "x", "embedding": [1e-46' + ", 1e-46" * 15 + "]}", "embedding"),
    ("/memory", '{"content": "x", "importance": NaN}', "body"),
    ("/memory", '{"\\ud800": 1, "content": "x"}', "body"),
])
def test_hostile_bodies_are_400s_naming_the_field(client, auth, services, path, body, field):
    answer = client.post(path, data=body.encode("utf-8", "surrogatepass"), headers={**auth, **JSON})
    assert answer.status_code == 400, answer.json
    assert answer.json["error"] == "invalid_input" and answer.json["field"] == field and answer.json["detail"]
    assert services.stores.graph.count_memories() == 0 and services.engine.control.current_lease() is None


@pytest.mark.parametrize("line, field", [
    ('{"content": "x", "access_count": 1' + "0" * 4400 + "}", "line"),
    ('{"content": "x", "tags": ' + "[" * 5000 + "]" * 5000 + "}", "line"),
    ('{"content": "a\\ud800"}', "content"),
    ('{"content": "a\\u0000"}', "content"),
    ('{"content": "x", "timestamp": "0001-01-01T00:00:00+01:00"}', "timestamp"),
])
def test_hostile_import_lines_are_400s_naming_line_and_field(client, auth, services, line, field):
    body = json.dumps({"content": "fine"}) + "\n" + line
    answer = client.post("/memory/import", data=body.encode("utf-8", "surrogatepass"), headers=auth)
    assert answer.status_code == 400
    assert answer.json["errors"][0]["line"] == 2 and answer.json["errors"][0]["field"] == field
    assert services.stores.graph.count_memories() == 0


def test_shifting_a_fixture_out_of_the_date_range_is_a_400(client, auth, services):
    body = "\n".join([json.dumps({"content": "old", "timestamp": "0001-01-01T00:00:00+00:00"}),
                      json.dumps({"content": "new", "timestamp": "9999-12-31T00:00:00+00:00"})])
    answer = client.post("/memory/import?shift_to_now=true", data=body, headers=auth)
    assert answer.status_code == 400 and answer.json["errors"][0]["field"] == "timestamp"
    assert client.post("/memory/import?shift_to_now=maybe", data=body, headers=auth).json["field"] == "shift_to_now"


@pytest.mark.parametrize("run_id", ["a%00b", "%ED%A0%80", "x" * 300])
def test_malformed_run_ids_are_400s(client, auth, run_id):
    answer = client.get(f"/consolidate/runs/{run_id}", headers=auth)
    assert answer.status_code == 400 and answer.json["field"] == "run_id"


# --- odd requests to every route: a JSON 4xx naming the problem, and nothing written -------------------------

@pytest.fixture(scope="module")
def odd_target(tmp_path_factory):
    """One store for the whole table: no odd request may change it, so each also checks the ones before it."""
    from consolidation.api import create_app
    from tests.conftest import Clock

    services = build_services(make_settings(tmp_path_factory.mktemp("odd")), clock=Clock())
    client = create_app(services.settings, services=services, start_scheduler=False).test_client()
    names = {"memory": add_memory(services, content="the one stored memory, about dana@x.io")}
    run = client.post("/consolidate", json={"task": "decay", "dry_run": True, "wait": True},
                      headers={"Authorization": f"Bearer {TOKEN}"})
    names["run"] = run.json["run_id"]
    yield client, services, names
    services.close()


def store_state(services) -> tuple:
    """Every node and edge kind with its count, every memory's fields, the vector count."""
    falkor, graph = services.stores.graph.falkor, services.stores.graph
    nodes = falkor.execute("MATCH (n) RETURN labels(n)[0], count(n) ORDER BY labels(n)[0]")
    edges = falkor.execute("MATCH ()-[r]->() RETURN type(r), count(r) ORDER BY type(r)")
    return nodes, edges, graph.get_memories(sorted(graph.all_memory_ids())), services.stores.vectors.count()


PLAIN = {"Content-Type": "text/plain"}
DEEP_BODY = b'{"query": ' + b"[" * 100 + b"]" * 100 + b"}"
ODD_REQUESTS = [
    # path segments: NUL, control characters, bytes that are not UTF-8, too long, slashes and dots
    pytest.param("POST", "/entities/a%00b/unmerge", None, {}, 400, "entity_id", id="nul-entity-id-was-500"),
    pytest.param("DELETE", "/memory/{memory}%00", None, {}, 400, "memory_id", id="nul-memory-id-delete"),
    pytest.param("POST", "/memory/%00/supersede", b'{"content": "x"}', {}, 400, "memory_id", id="nul-supersede"),
    pytest.param("GET", "/memories/%1b%5b31m/detail", None, {}, 400, "memory_id", id="escape-in-id"),
    pytest.param("GET", "/consolidate/runs/%01/report", None, {}, 400, "run_id", id="control-in-run-id"),
    pytest.param("POST", "/memory/" + "x" * 300 + "/restore", None, {}, 400, "id", id="long-id"),
    pytest.param("POST", "/consolidate/runs/..%2Fx/cancel", None, {}, 404, None, id="slash-in-run-id"),
    pytest.param("DELETE", "/memory/..", None, {}, 400, "id", id="dots-as-id"),
    pytest.param("GET", "//memory//{memory}", None, {}, 404, None, id="double-slashes-were-an-html-redirect"),
    # query parameters: not UTF-8, NUL, given twice, numbers out of range or not integers
    pytest.param("GET", "/memories/search?q=%ff", None, {}, 400, "q", id="q-not-utf8-was-searched-as-%FF"),
    pytest.param("GET", "/memories/restorable?%ff=1", None, {}, 400, "\\xff", id="name-not-utf8"),
    pytest.param("GET", "/memories/restorable?q=%ED%A0%80", None, {}, 400, "q", id="surrogate-in-q"),
    pytest.param("GET", "/memories/restorable?q=a%00", None, {}, 400, "q", id="nul-in-q"),
    pytest.param("GET", "/consolidate/runs?limit=1&limit=2", None, {}, 400, "limit", id="limit-twice"),
    pytest.param("GET", "/memories/search?q=a&q=b", None, {}, 400, "q", id="q-twice"),
    pytest.param("GET", "/consolidate/trends?limit=99999999999999999999", None, {}, 400, "limit", id="huge-limit"),
    pytest.param("GET", "/hygiene/merges?offset=-1", None, {}, 400, "offset", id="negative-offset"),
    pytest.param("GET", "/hygiene/contradictions?limit=1.5", None, {}, 400, "limit", id="float-limit"),
    pytest.param("GET", "/clusters?limit=ten", None, {}, 400, "limit", id="word-limit"),
    pytest.param("GET", "/hygiene/supersessions?limit=%D9%A3", None, {}, 400, "limit", id="arabic-digit-limit"),
    pytest.param("GET", "/hygiene/entity-merges?offset=1e3", None, {}, 400, "offset", id="exponent-offset"),
    pytest.param("GET", "/consolidate/runs/{run}/report?limit=0", None, {}, 400, "limit", id="report-limit-0"),
    pytest.param("GET", "/hygiene/associations?written_by=me", None, {}, 400, "written_by", id="unknown-author"),
    pytest.param("POST", "/memory/import?dry_run=true&dry_run=false", b'{"content": "x"}', {}, 400, "dry_run",
                 id="import-flag-twice"),
    pytest.param("POST", "/memory/import?skip_bad_lines=maybe", b'{"content": "x"}', {}, 400, "skip_bad_lines",
                 id="import-skip-not-a-flag"),
    # JSON bodies: null, arrays, strings, repeated keys, wrong types, bad numbers, NUL, surrogates, depth
    pytest.param("POST", "/consolidate", b"null", {}, 400, "body", id="null-was-a-real-run-of-every-task"),
    pytest.param("POST", "/consolidate", b'{"dry_run": true, "dry_run": false}', {}, 400, "body",
                 id="repeated-key-was-a-real-run"),
    pytest.param("POST", "/memories/purge", b'{"match": "dana@x.io", "dry_run": true, "dry_run": false}', {},
                 400, "body", id="purge-repeated-key"),
    pytest.param("POST", "/recall", b"null", {}, 400, "body", id="recall-null"),
    pytest.param("POST", "/recall", b'["query"]', {}, 400, "body", id="recall-array"),
    pytest.param("POST", "/recall", b'"dark mode"', {}, 400, "body", id="recall-string"),
    pytest.param("POST", "/recall", b"", {}, 400, "body", id="recall-empty-json"),
    pytest.param("POST", "/recall", b'{"query": "x"}', PLAIN, 400, "body", id="recall-text-plain"),
    pytest.param("POST", "/recall", b"query=x", {"Content-Type": "application/x-www-form-urlencoded"}, 400,
                 "body", id="recall-form"),
    pytest.param("POST", "/recall", b'{"query": "caf\xe9"}', {}, 400, "body", id="recall-latin1-bytes"),
    pytest.param("POST", "/recall", DEEP_BODY, {}, 400, "query", id="recall-too-deep"),
    pytest.param("POST", "/recall", b'{"query": "\\ud800"}', {}, 400, "query", id="recall-surrogate"),
    pytest.param("POST", "/recall", b'{"query": "a\\u0000"}', {}, 400, "query", id="recall-nul"),
    pytest.param("POST", "/recall", b'{"query": "x", "k": 1e400}', {}, 400, "k", id="k-infinite"),
    pytest.param("POST", "/recall", b'{"query": "x", "k": 99999999999999999999}', {}, 400, "k", id="k-huge"),
    pytest.param("POST", "/recall", b'{"query": "x", "k": -1}', {}, 400, "k", id="k-negative"),
    pytest.param("POST", "/recall", b'{"query": "x", "k": 2.5}', {}, 400, "k", id="k-float"),
    pytest.param("POST", "/recall", b'{"query": "x", "k": "5"}', {}, 400, "k", id="k-string"),
    pytest.param("POST", "/recall", b'{"query": "x", "scope": "u-1"}', {}, 400, "scope", id="scope-string"),
    pytest.param("POST", "/recall", b'{"query": ["x"]}', {}, 400, "query", id="query-array"),
    pytest.param("POST", "/memories/purge", b'{"match": 1}', {}, 400, "match", id="purge-match-number"),
    pytest.param("POST", "/memories/purge", b'{"match": "dana\\u0000"}', {}, 400, "match", id="purge-nul"),
    pytest.param("POST", "/memories/purge", b'{"match": "dana", "dry_run": "false"}', {}, 400, "dry_run",
                 id="purge-dry-run-string"),
    pytest.param("POST", "/memory/{memory}/supersede", b"[]", {}, 400, "body", id="supersede-array"),
    pytest.param("POST", "/memory/{memory}/supersede", b'{"by": "../x"}', {}, 400, "by", id="supersede-by-path"),
    pytest.param("POST", "/memory/{memory}/supersede", b'{"content": "x\\u0000"}', {}, 400, "content",
                 id="supersede-nul"),
    pytest.param("POST", "/memory/{memory}/supersede", b'{"content": "y"}', {"Idempotency-Key": "a\x00b"}, 400,
                 "Idempotency-Key", id="nul-idempotency-key-was-500"),
    pytest.param("DELETE", "/memory/{memory}", None, {"X-Graph": "../other"}, 400, "X-Graph", id="graph-path"),
    pytest.param("POST", "/memory/import", b'{"content": "x", "content": "y"}', {}, 400, "line",
                 id="import-repeated-key"),
]


@pytest.mark.parametrize("method, path, body, headers, status, field", ODD_REQUESTS)
def test_odd_requests_are_json_errors_naming_the_problem_and_change_nothing(odd_target, method, path, body,
                                                                          headers, status, field):
    client, services, names = odd_target
    before = store_state(services)
    sent = {"Authorization": f"Bearer {TOKEN}", **JSON, **headers}
    answer = client.open(path.format(**names), method=method, data=body, headers=sent)
    assert answer.status_code == status, answer.get_data()[:300]
    assert answer.content_type == "application/json" and answer.json["error"] and answer.json["detail"]
    assert answer.json.get("field") == field
    services.engine.wait_for_background()
    assert store_state(services) == before


@pytest.mark.parametrize("path", ["/memory/\xff", "/memories/caf\xe9/detail", "/entities/\xc0\xaf/unmerge"])
def test_path_bytes_that_are_not_utf8_are_refused_naming_the_parameter(odd_target, path):
    # What a server puts in PATH_INFO for %FF (the test client would read it as U+FFFD before the app does).
    client, services, _ = odd_target
    method = "POST" if path.endswith("unmerge") else "GET"
    answer = client.open("/x", method=method, headers={"Authorization": f"Bearer {TOKEN}"},
                         environ_overrides={"PATH_INFO": path})
    assert answer.status_code == 400 and "UTF-8" in answer.json["detail"]
    assert answer.json["field"] in ("memory_id", "entity_id")


# --- values are stored exactly as accepted -------------------------------------------------------------------

def test_an_import_line_with_invalid_utf8_is_refused_not_replaced(client, auth, services):
    answer = client.post("/memory/import", data=b'{"content": "ok"}\n{"content": "caf\xe9"}', headers=auth)
    assert answer.status_code == 400 and answer.json["errors"][0]["line"] == 2
    assert "UTF-8" in answer.json["errors"][0]["detail"] and services.stores.graph.count_memories() == 0


def test_unicode_line_separators_stay_inside_their_line(client, auth, services):
    content = "first\u2028second\u2029third\x85fourth\x0bfifth"
    answer = client.post("/memory/import", data=json.dumps({"content": content}, ensure_ascii=False).encode(),
                         headers=auth)
    assert answer.status_code == 200 and answer.json["lines"] == 1 and answer.json["created"] == 1
    [memory_id] = services.stores.graph.all_memory_ids()
    assert services.stores.graph.get_memory(memory_id)["content"] == content


def test_control_characters_other_than_nul_are_stored_exactly(client, auth):
    content = "".join(chr(i) for i in range(1, 32)) + "\x7f\u2028\U0001F600 end"
    created = client.post("/memory", json={"content": content, "tags": ["\x1b[31m"]}, headers=auth).json["memory"]
    fetched = client.get(f"/memory/{created['id']}", headers=auth).json["memory"]
    assert fetched["content"] == content and fetched["tags"] == ["\x1b[31m"]


def test_a_use_count_at_the_limit_never_wraps(client, auth):
    created = client.post("/memory", json={"content": "x", "access_count": MAX_COUNT}, headers=auth).json["memory"]
    touched = client.post(f"/memory/{created['id']}/access", headers=auth).json["memory"]
    assert touched["access_count"] == MAX_COUNT


def test_an_embedding_is_stored_as_the_unit_vector_of_what_was_sent(client, auth, services):
    sent = [3e38] * 2 + [0.0] * 14  # a float32 norm of these would overflow
    created = client.post("/memory", json={"content": "x", "embedding": sent}, headers=auth).json["memory"]
    _, vectors = services.stores.vectors.vectors([created["id"]])
    assert np.allclose(vectors[0], [2 ** -0.5] * 2 + [0.0] * 14, atol=1e-6)



def test_imported_embeddings_are_checked_as_numbers_and_stored_as_unit_vectors(client, auth, services):
    """An import packs each line's embedding as it reads it: what it refuses and what it stores are the same as
    for a memory posted alone."""
    whole_numbers = [3, 4] + [0] * 14
    lines = [{"content": "whole numbers", "embedding": whole_numbers},
             {"content": "a boolean", "embedding": [True] + [0.5] * 15},
             {"content": "a string", "embedding": ["0.5"] + [0.5] * 15},
             {"content": "too large", "embedding": [0.5] * 3 + [1e39] + [0.5] * 12},
             {"content": "too small", "embedding": [1e-46] + [0.5] * 15}]
    body = "\n".join(json.dumps(line) for line in lines)
    refused = client.post("/memory/import", data=body, headers=auth)
    assert refused.status_code == 400
    assert [(e["line"], e["field"]) for e in refused.json["errors"]] == [(n, "embedding") for n in (2, 3, 4, 5)]
    assert "value 3 (1e+39) is outside the float32 range" in refused.json["errors"][2]["detail"]
    alone = [client.post("/memory", json=line, headers=auth) for line in lines[1:]]
    assert [(a.status_code, a.json["field"]) for a in alone] == [(400, "embedding")] * 4
    assert client.post("/memory/import", data=json.dumps(lines[0]), headers=auth).json["created"] == 1
    (only,) = services.stores.graph.all_memory_ids()  # nothing refused was written
    _, vectors = services.stores.vectors.vectors([only])
    assert np.allclose(vectors[0], [0.6, 0.8] + [0.0] * 14, atol=1e-7)  # (3, 4) / 5


# --- unsafe setups and the lease ------------------------------------------------------------------------------

def test_interrupted_deletions_are_finished_only_under_the_run_lease(services, clock):
    memory_id = add_memory(services, timestamp=days_ago(400))
    lifecycle = services.engine.lifecycle
    lifecycle.tombstones.write_pending([{"id": str(uuid.uuid4()), "memory_id": memory_id, "reason": "test",
                                         "deleted_at": clock().isoformat(), "deleted_epoch": clock().timestamp(),
                                         "memory": {}, "edges": [], "vector": None}])
    running = services.engine.begin(["forget"], dry_run=True, trigger="test")  # a live run holds the lease
    services.scheduler.run_once()
    assert lifecycle.tombstones.pending_ids() == [memory_id] and services.stores.graph.get_memory(memory_id)
    services.engine.execute(running)
    services.scheduler.run_once()
    assert lifecycle.tombstones.pending_ids() == [] and services.stores.graph.get_memory(memory_id) is None


def test_a_second_process_with_its_own_embedded_qdrant_on_a_shared_graph_is_refused(tmp_path, clock):
    from tests.processes import FalkorServer

    server = FalkorServer(tmp_path / "falkordb").start()
    lease = 3
    shared = {"falkordb_host": "127.0.0.1", "falkordb_port": server.port, "consolidation_lease_seconds": lease}
    try:
        first = build_services(make_settings(tmp_path / "one", **shared), clock=clock)
        with pytest.raises(StoreMismatch, match="share the vector store"):
            build_services(make_settings(tmp_path / "two", **shared), clock=clock)
        # As if the first process died: its claim stays behind, unrenewed.
        first.stores.binding._heartbeat.stop()
        first.stores.binding._heartbeat = None
        first.close()
        restarted = build_services(make_settings(tmp_path / "one", **shared), clock=clock)  # same store: at once
        restarted.stores.binding._heartbeat.stop()
        restarted.stores.binding._heartbeat = None
        restarted.close()
        with pytest.raises(StoreMismatch):
            build_services(make_settings(tmp_path / "two", **shared), clock=clock)
        time.sleep(lease + 0.5)  # the dead claim expires on the server's clock
        second = build_services(make_settings(tmp_path / "two", **shared), clock=clock)
        second.close()
        build_services(make_settings(tmp_path / "one", **shared), clock=clock).close()  # released on close
    finally:
        server.kill()


def test_health_without_a_token_names_the_down_store_but_not_its_details(client, auth, services):
    services.stores.vectors.close()
    anonymous = client.get("/health")
    assert anonymous.status_code == 503
    assert anonymous.json["stores"] == {"graph": {"ok": True}, "vectors": {"ok": False}}
    admin = client.get("/health", headers=auth).json["stores"]["vectors"]
    assert admin["ok"] is False and "closed" in admin["detail"]


# --- the command line -----------------------------------------------------------------------------------------

@pytest.fixture
def cli_env(tmp_path, monkeypatch):
    """The CLI's environment with the token only in DATA_DIR/admin_token, as `make run` leaves it."""
    data_dir = tmp_path / "cli"
    data_dir.mkdir()
    (data_dir / "admin_token").write_text(TOKEN + "\n")
    monkeypatch.delenv("ADMIN_API_TOKEN", raising=False)
    monkeypatch.setenv("DATA_DIR", str(data_dir))
    monkeypatch.setenv("VECTOR_SIZE", "16")
    monkeypatch.setenv("EMBEDDING_PROVIDER", "hash")
    return data_dir


def test_local_commands_use_the_saved_token(cli_env):
    imported = CliRunner().invoke(cli, ["import", str(SAMPLE)])
    assert imported.exit_code == 0, imported.output
    assert "imported 36 memories" in imported.output and "created 36" in imported.output
    again = CliRunner().invoke(cli, ["import", str(SAMPLE)])
    assert again.exit_code == 0 and "imported 0 memories" in again.output and "skipped 36" in again.output
    ran = CliRunner().invoke(cli, ["consolidate", "--task", "decay", "--dry-run"])
    assert ran.exit_code == 0 and json.loads(ran.stdout)["result"]["decay"]["memories_processed"] == 36


def test_import_over_url_with_one_bad_line_after_2000_good_ones_writes_nothing(cli_env, tmp_path, client, serve,
                                                                              services):
    url = serve(client.application)
    path = tmp_path / "big.jsonl"
    good = [json.dumps({"content": f"memory number {i}"}) for i in range(2100)]
    path.write_text("\n".join(good[:2050] + ['{"content": "x", "importance": 7}'] + good[2050:]))
    refused = CliRunner().invoke(cli, ["import", str(path), "--url", url])
    assert refused.exit_code == 1
    assert "big.jsonl:2051: importance" in refused.output and "nothing imported" in refused.output
    assert services.stores.graph.count_memories() == 0
    path.write_text("\n".join(good))
    accepted = CliRunner().invoke(cli, ["import", str(path), "--url", url])
    assert accepted.exit_code == 0 and "imported 2100 memories" in accepted.output
    assert services.stores.graph.count_memories() == 2100


def test_import_over_url_skipping_bad_lines_writes_every_chunk_s_good_lines(cli_env, tmp_path, client, serve,
                                                                            services):
    url = serve(client.application)
    path = tmp_path / "big.jsonl"
    good = [json.dumps({"content": f"memory number {i}"}) for i in range(2100)]
    bad = {5: '{"content": 1}', 2051: "{broken", 2099: json.dumps({"id": MEMORY_ID, "content": "other fields"})}
    good[10] = json.dumps({"id": MEMORY_ID, "content": "first fields"})  # line 11: line 2100 repeats its id
    path.write_text("\n".join(bad.get(i, line) for i, line in enumerate(good)))
    dry = CliRunner().invoke(cli, ["import", str(path), "--url", url, "--skip-bad-lines", "--dry-run"])
    assert dry.exit_code == 3 and json.loads(dry.stdout)["imported"] == 2097
    assert services.stores.graph.count_memories() == 0
    result = CliRunner().invoke(cli, ["import", str(path), "--url", url, "--skip-bad-lines"])
    assert result.exit_code == 3, result.output
    report = json.loads(result.stdout)
    assert (report["lines"], report["imported"], report["bad_lines_skipped"]) == (2100, 2097, 3)
    assert [e["line"] for e in report["errors"]] == [6, 2052, 2100]
    assert "big.jsonl:2100: skipped: id: line 11 has this id with other fields" in result.stderr
    assert "skipped 3 bad line(s)" in result.stderr
    assert services.stores.graph.count_memories() == 2097
    assert services.stores.graph.get_memory(MEMORY_ID)["content"] == "first fields"


def test_consolidate_over_url_follows_the_run_to_its_end(cli_env, client, serve, services):
    add_memory(services)
    result = CliRunner().invoke(cli, ["consolidate", "--task", "decay", "--url", serve(client.application)])
    assert result.exit_code == 0, result.output
    run = json.loads(result.stdout)
    assert run["state"] == "succeeded" and run["result"]["decay"]["memories_processed"] == 1


# --- the embedded FalkorDB's log: compacted at shutdown so the next start does not replay every write -------

def test_shutdown_compacts_a_grown_log_and_the_next_start_loads_the_snapshot(tmp_path, monkeypatch):
    from consolidation.stores import embedded_falkor, falkor

    monkeypatch.setattr(embedded_falkor, "LOG_COMPACTION_BYTES", 1024)  # a few hundred memories' queries grow it past this
    settings = make_settings(tmp_path)
    log_dir = tmp_path / "falkordb" / "appendonlydir"

    def replayed_log_bytes() -> int:  # the write queries a start would replay: the incremental part of the log
        return sum(f.stat().st_size for f in log_dir.glob("*.incr.aof"))

    connection = falkor.Falkor.connect(settings)
    connection.write_chunks("UNWIND $rows AS row CREATE (:Memory {id: row})", [f"m{i}" for i in range(500)])
    assert replayed_log_bytes() > 1024
    connection.close()
    assert replayed_log_bytes() == 0 and list(log_dir.glob("*.base.rdb"))
    reopened = falkor.Falkor.connect(settings)
    try:
        assert reopened.execute("MATCH (m:Memory) RETURN count(m)", read_only=True)[0][0] == 500
    finally:
        reopened.close()


def test_a_replica_with_its_own_embedded_qdrant_under_a_prefix_is_refused_at_start(tmp_path, clock):
    from tests.processes import FalkorServer

    server = FalkorServer(tmp_path / "falkordb").start()
    shared = {"falkordb_host": "127.0.0.1", "falkordb_port": server.port, "falkordb_graphs": "tenant_*",
              "falkordb_graph": "tenant_default"}
    try:
        first = build_services(make_settings(tmp_path / "one", **shared), clock=clock)
        first.graphs.get("tenant_a")  # made and claimed by the first process's embedded Qdrant
        with pytest.raises(StoreMismatch, match="tenant_a"):
            build_services(make_settings(tmp_path / "two", **shared), clock=clock)  # refused before any request
        first.close()  # released: the graph is free to be paired again
        build_services(make_settings(tmp_path / "two", **shared), clock=clock).close()
    finally:
        server.kill()
