"""The ingest API and the JSONL import: every field checked, nothing half-written, imports idempotent."""

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from consolidation.cli import main as cli
from tests.conftest import NOW, TOKEN, days_ago, make_settings

SAMPLE = Path(__file__).resolve().parent.parent / "samples" / "memories.jsonl"


def post(client, auth, body):
    return client.post("/memory", json=body, headers=auth)


def test_a_memory_is_stored_with_defaults_and_a_built_in_embedding(client, auth, services):
    response = post(client, auth, {"content": "User prefers dark mode", "type": "Preference", "tags": ["ui"]})
    assert response.status_code == 201
    memory = response.json["memory"]
    assert memory["importance"] == 0.5 and memory["confidence"] == 0.5 and memory["access_count"] == 0
    assert memory["timestamp"] == NOW.isoformat() and memory["last_accessed"] == NOW.isoformat()
    assert memory["relevance_score"] == pytest.approx(0.85)  # fresh: 1 * 1 * 1 * 1.0 * 0.85
    assert memory["archived"] is False and memory["tags"] == ["ui"] and memory["state"] == "active"
    fetched = client.get(f"/memory/{memory['id']}", headers=auth).json["memory"]
    assert fetched == {**{k: v for k, v in memory.items() if v is not None}, "merged_into": None,
                       "superseded_by": None, "held_until": None}
    ids, vectors = services.stores.vectors.vectors([memory["id"]])
    assert ids == [memory["id"]] and np.linalg.norm(vectors[0]) == pytest.approx(1.0, abs=1e-5)


def test_a_given_embedding_is_used(client, auth, services):
    embedding = [0.0] * 16
    embedding[3] = 2.0
    memory = post(client, auth, {"content": "x", "embedding": embedding}).json["memory"]
    _, vectors = services.stores.vectors.vectors([memory["id"]])
    assert vectors[0].tolist() == pytest.approx([0.0] * 3 + [1.0] + [0.0] * 12)


@pytest.mark.parametrize("body, field", [
    ({}, "content"), ({"content": ""}, "content"), ({"content": 5}, "content"),
    ({"content": "x" * 20001}, "content"),
    ({"content": "x", "importance": 1.2}, "importance"), ({"content": "x", "importance": -0.1}, "importance"),
    ({"content": "x", "importance": "high"}, "importance"), ({"content": "x", "confidence": True}, "confidence"),
    ({"content": "x", "type": "not a type!"}, "type"), ({"content": "x", "type": "MetaPattern"}, "type"),
    ({"content": "x", "tags": "a,b"}, "tags"), ({"content": "x", "tags": [1]}, "tags"),
    ({"content": "x", "timestamp": "yesterday"}, "timestamp"), ({"content": "x", "timestamp": 1700000000}, "timestamp"),
    ({"content": "x", "timestamp": "2030-01-01T00:00:00Z"}, "timestamp"),
    ({"content": "x", "access_count": -1}, "access_count"), ({"content": "x", "protected": "yes"}, "protected"),
    ({"content": "x", "embedding": [0.1] * 15}, "embedding"), ({"content": "x", "embedding": [0.0] * 16}, "embedding"),
    ({"content": "x", "embedding": ["a"] * 16}, "embedding"), ({"content": "x", "id": "not-a-uuid"}, "id"),
    ({"content": "x", "colour": "blue"}, "colour"), ({"content": "x", "relevance_score": 0.9}, "relevance_score"),
])
def test_bad_fields_are_400s_naming_the_field_and_write_nothing(client, auth, services, body, field):
    response = post(client, auth, body)
    assert response.status_code == 400, response.json
    assert response.json["error"] == "invalid_input" and response.json["field"] == field
    assert services.stores.graph.count_memories() == 0 and services.stores.vectors.count() == 0


def test_a_body_that_is_not_json_or_not_an_object_is_a_400(client, auth):
    assert client.post("/memory", data="hello", headers=auth).json["field"] == "body"
    assert post(client, auth, ["content"]).json["field"] == "body"


def test_a_duplicate_id_is_a_409(client, auth):
    body = {"id": "5f0c6f7e-0d1b-4c9e-9a51-6f7d1f2e3a4b", "content": "x"}
    assert post(client, auth, body).status_code == 201
    assert post(client, auth, body).status_code == 409


def test_unknown_or_malformed_ids_are_404_or_400(client, auth):
    assert client.get("/memory/5f0c6f7e-0d1b-4c9e-9a51-6f7d1f2e3a4b", headers=auth).status_code == 404
    assert client.post("/memory/5f0c6f7e-0d1b-4c9e-9a51-6f7d1f2e3a4b/access", headers=auth).status_code == 404
    assert client.get("/memory/zzz", headers=auth).json["field"] == "id"


def test_recording_an_access_sets_last_accessed_and_counts(client, auth, clock):
    memory = post(client, auth, {"content": "x", "timestamp": days_ago(10)}).json["memory"]
    assert memory["last_accessed"] == days_ago(10)
    clock.advance(hours=2)
    touched = client.post(f"/memory/{memory['id']}/access", headers=auth).json["memory"]
    assert touched["access_count"] == 1 and touched["last_accessed"] == clock().isoformat()
    assert client.post(f"/memory/{memory['id']}/access", headers=auth).json["memory"]["access_count"] == 2


def test_api_token_opens_memory_routes_but_not_admin_ones(tmp_path, clock, client_for):
    from consolidation.service import build_services

    services = build_services(make_settings(tmp_path / "d", api_token="agent-token-abcdefgh"), clock=clock)
    try:
        client = client_for(services)
        agent = {"Authorization": "Bearer agent-token-abcdefgh"}
        assert client.post("/memory", json={"content": "x"}, headers=agent).status_code == 201
        assert client.get("/consolidate/status", headers=agent).status_code == 403
        assert client.post("/memory", json={"content": "x"}).status_code == 401
    finally:
        services.close()


def lines(*records):
    return [json.dumps(r) for r in records]


def jsonl(lines_: list[str]) -> bytes:
    return "\n".join(lines_).encode()


def test_import_checks_every_line_before_writing_anything(services):
    report = services.memories.import_jsonl(
        jsonl(lines({"content": "ok"}, {"content": "bad", "importance": 3}) + ["{broken"] + lines({"content": "ok 2"})))
    assert report.created == 0
    assert [(e["line"], e["field"]) for e in report.errors] == [(2, "importance"), (3, "line")]
    assert services.stores.graph.count_memories() == 0 and services.stores.vectors.count() == 0


def test_import_twice_creates_no_duplicates(services):
    records = lines({"content": "one", "timestamp": days_ago(3)}, {"content": "two", "type": "Decision"},
                    {"id": "5f0c6f7e-0d1b-4c9e-9a51-6f7d1f2e3a4b", "content": "three", "embedding": [1.0] * 16})
    first = services.memories.import_jsonl(jsonl(records))
    assert (first.created, len(first.skipped)) == (3, 0)
    second = services.memories.import_jsonl(jsonl(records))
    assert (second.created, len(second.skipped)) == (0, 3)
    assert services.stores.graph.count_memories() == 3 and services.stores.vectors.count() == 3


def test_import_can_shift_a_fixture_to_now(services):
    records = lines({"content": "newest", "timestamp": "2020-01-10T00:00:00Z"},
                    {"content": "older", "timestamp": "2020-01-03T00:00:00Z", "last_accessed": "2020-01-11T00:00:00Z"})
    services.memories.import_jsonl(jsonl(records), shift_to_now=True)
    stored = {m["content"]: m for m in services.stores.graph.get_memories(services.stores.graph.all_memory_ids())}
    # The newest time in the file (a last access on Jan 11) becomes now; everything keeps its distance to it.
    assert stored["older"]["last_accessed"] == NOW.isoformat()
    assert stored["newest"]["timestamp"] == days_ago(1) and stored["older"]["timestamp"] == days_ago(8)


def test_the_import_route_takes_jsonl(client, auth):
    body = "\n".join(lines({"content": "a"}, {"content": "b"}))
    response = client.post("/memory/import", data=body, headers=auth)
    assert response.status_code == 200 and response.json["imported"] == 2
    bad = client.post("/memory/import", data='{"content": 1}', headers=auth)
    assert bad.status_code == 400 and bad.json["errors"][0]["field"] == "content"


def test_the_sample_file_shows_merges_an_update_and_a_contradiction(services):
    report = services.memories.import_jsonl(SAMPLE.read_bytes(), shift_to_now=True)
    assert report.errors == [] and report.created == 36
    result = services.engine.run(["decay", "dedup", "creative", "cluster", "forget"])
    assert result["success"]
    dedup = result["result"]["dedup"]
    content = {m["id"]: m["content"] for m in services.stores.graph.get_memories(services.stores.graph.all_memory_ids())}
    merged = {content[m["into"]]: {content[d] for d in m["duplicates"]} for m in dedup["merges"]}
    postgres = next(group | {into} for into, group in merged.items() if "PostgreSQL" in into)
    assert len(postgres) == 6 and all("PostgreSQL" in text or "postgresql" in text.lower() for text in postgres)
    [update] = dedup["supersessions"]
    assert "upgraded from three to five" in content[update["newer"]] and "three small" in content[update["older"]]
    [conflict] = dedup["contradictions"]
    assert {content[conflict["a"]], content[conflict["b"]]} == {
        "Support answers priority tickets within four hours", "Support answers priority tickets within eight hours"}


def test_the_cli_imports_a_file_once(tmp_path, monkeypatch):
    monkeypatch.setenv("ADMIN_API_TOKEN", TOKEN)
    monkeypatch.setenv("DATA_DIR", str(tmp_path / "cli"))
    first = CliRunner().invoke(cli, ["import", "--if-empty", "--shift-to-now", str(SAMPLE)])
    assert first.exit_code == 0, first.output
    assert "imported 36 memories" in first.output
    second = CliRunner().invoke(cli, ["import", "--if-empty", str(SAMPLE)])
    assert second.exit_code == 0 and "already holds memories" in second.output


def cli_import_file(tmp_path, monkeypatch, text: str) -> Path:
    """An import file `bad.jsonl` holding `text`, and the CLI's settings pointed at a data directory of its own."""
    monkeypatch.setenv("ADMIN_API_TOKEN", TOKEN)
    monkeypatch.setenv("DATA_DIR", str(tmp_path / "cli"))
    bad = tmp_path / "bad.jsonl"
    bad.write_text(text)
    return bad


def test_the_cli_reports_bad_lines_and_exits_nonzero(tmp_path, monkeypatch):
    bad = cli_import_file(tmp_path, monkeypatch, '{"content": "fine"}\n{"content": "x", "importance": 2}\n')
    result = CliRunner().invoke(cli, ["import", str(bad)])
    assert result.exit_code == 1
    assert "bad.jsonl:2: importance" in result.output and "nothing imported" in result.output


# --- bad lines: refused all together by default, or skipped one by one when asked ------------------------------

SEVEN = ['{"content": "good one"}', '{"content": 1}', "not json", '{"content": "good two"}',
         '{"content": "x", "importance": 7}', None, '{"content": "good three"}']  # line 6: a conflict, filled in


def seven_lines(services) -> bytes:
    """Seven lines, four bad: three invalid (2, 3, 5) and one conflicting with a stored memory (6)."""
    from tests.conftest import add_memory

    stored = add_memory(services, content="the stored memory")
    return "\n".join(line or json.dumps({"id": stored, "content": "other text"}) for line in SEVEN).encode()


def test_an_import_with_bad_lines_names_every_one_and_writes_nothing(client, auth, services):
    answer = client.post("/memory/import", data=seven_lines(services), headers=auth)
    assert answer.status_code == 400 and answer.json["field"] == "content"
    assert "lines 2, 3, 5" in answer.json["detail"] and "line 6" in answer.json["detail"]
    assert "nothing imported" in answer.json["detail"] and "skip_bad_lines=true" in answer.json["detail"]
    assert [e["line"] for e in answer.json["errors"]] == [2, 3, 5] and answer.json["conflicts"][0]["line"] == 6
    assert (answer.json["imported"], answer.json["bad_lines_skipped"]) == (0, 0)
    assert services.stores.graph.count_memories() == 1 and services.stores.vectors.count() == 1


def test_skipping_bad_lines_writes_the_good_ones_and_reports_each_bad_one(client, auth, services):
    data = seven_lines(services)
    dry = client.post("/memory/import?skip_bad_lines=true&dry_run=true", data=data, headers=auth)
    assert dry.status_code == 200 and (dry.json["imported"], dry.json["bad_lines_skipped"]) == (3, 4)
    assert services.stores.graph.count_memories() == 1
    answer = client.post("/memory/import?skip_bad_lines=true", data=data, headers=auth)
    assert answer.status_code == 200, answer.json
    report = answer.json
    assert (report["lines"], report["imported"], report["bad_lines_skipped"], report["skip_bad_lines"]) == (7, 3, 4, True)
    assert [(e["line"], e["field"]) for e in report["errors"]] == [(2, "content"), (3, "line"), (5, "importance")]
    assert all(e["detail"] for e in report["errors"])
    assert [(c["line"], c["reason"]) for c in report["conflicts"]] == [
        (6, "a memory with other content is stored under this id")]
    contents = {m["content"] for m in services.stores.graph.get_memories(services.stores.graph.all_memory_ids())}
    assert contents == {"the stored memory", "good one", "good two", "good three"}  # the conflict left it as it was
    assert services.stores.vectors.count() == 4


def test_every_skipped_line_is_listed_however_many(services):
    data = jsonl(lines(*[{"content": f"good {i}"} if i % 2 else {"content": i} for i in range(60)]))
    report = services.memories.import_jsonl(data, skip_bad_lines=True).public()
    assert (report["imported"], report["bad_lines_skipped"], report["errors_total"]) == (30, 30, 30)
    assert [e["line"] for e in report["errors"]] == list(range(1, 61, 2))  # all 30, not the first 20
    refused = services.memories.import_jsonl(data).public()
    assert (refused["errors_total"], len(refused["errors"])) == (30, 20)


def test_skipping_bad_lines_shifts_the_good_ones_to_now(services):
    records = lines({"content": "newest", "timestamp": "2020-01-10T00:00:00Z"}, {"content": "no time"},
                    {"content": "older", "timestamp": "2020-01-03T00:00:00Z"})
    report = services.memories.import_jsonl(jsonl(records), shift_to_now=True, skip_bad_lines=True)
    assert report.created == 2 and [(e["line"], e["field"]) for e in report.errors] == [(2, "timestamp")]
    stored = {m["content"]: m for m in services.stores.graph.get_memories(services.stores.graph.all_memory_ids())}
    assert stored["newest"]["timestamp"] == NOW.isoformat() and stored["older"]["timestamp"] == days_ago(7)


def test_an_import_into_a_new_graph_is_made_only_if_a_line_survives(settings):
    from consolidation.ingest import MemoryChecks

    checks, bad = MemoryChecks(settings), jsonl(lines({"content": 1}, {"content": 2}))
    assert checks.import_writing_nothing(bad, skip_bad_lines=True).public()["bad_lines_skipped"] == 2
    assert checks.import_writing_nothing(bad).refused
    assert checks.import_writing_nothing(bad + b"\n" + jsonl(lines({"content": "ok"})), skip_bad_lines=True) is None


def test_the_cli_skips_bad_lines_when_asked_and_says_so(tmp_path, monkeypatch):
    bad = cli_import_file(tmp_path, monkeypatch,
                          '{"content": "fine"}\n{"content": "x", "importance": 2}\n{broken\n{"content": "fine too"}\n')
    refused = CliRunner().invoke(cli, ["import", str(bad)])
    assert refused.exit_code == 1 and "bad.jsonl:2: importance" in refused.stderr
    assert "nothing imported: 2 invalid line(s); --skip-bad-lines imports the other lines" in refused.stderr
    skipped = CliRunner().invoke(cli, ["import", "--skip-bad-lines", str(bad)])
    assert skipped.exit_code == 3, skipped.output
    assert "bad.jsonl:2: skipped: importance:" in skipped.stderr and "bad.jsonl:3: skipped: line:" in skipped.stderr
    assert "imported 2 memories" in skipped.stderr and "skipped 2 bad line(s) (2 invalid line(s))" in skipped.stderr
    report = json.loads(skipped.stdout)
    assert (report["imported"], report["bad_lines_skipped"]) == (2, 2)
    again = CliRunner().invoke(cli, ["import", "--skip-bad-lines", str(bad)])
    assert again.exit_code == 3 and json.loads(again.stdout)["skipped"] == 2  # the good lines: already stored
