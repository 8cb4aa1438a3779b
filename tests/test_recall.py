"""Recall (current and history), supersede on request (with compound memories split), forget and purge."""

from __future__ import annotations

import json
from pathlib import Path

from consolidation.hygiene.compound import facts_of, survivors
from consolidation.identifiers import holds, identifier_pattern

from conftest import add_memory, axis, days_ago, vector_at
from tests.test_cluster import patterns


def _post(client, auth, content, vector=None, **fields):
    body = {"content": content, **fields}
    if vector is not None:
        body["embedding"] = [float(x) for x in vector]
    answer = client.post("/memory", json=body, headers=auth)
    assert answer.status_code == 201, answer.get_json()
    return answer.get_json()["memory"]["id"]


def _recall(client, auth, vector, **fields):
    answer = client.post("/recall", json={"embedding": [float(x) for x in vector], **fields}, headers=auth)
    assert answer.status_code == 200, answer.get_json()
    return answer.get_json()["results"]


def test_recall_ranks_by_similarity_and_history_marks_states(client, auth):
    query = axis(0)
    near = _post(client, auth, "near", vector_at(0.9, axis(0), axis(1)))
    middle = _post(client, auth, "middle", vector_at(0.6, axis(0), axis(2)))
    far = _post(client, auth, "far", vector_at(0.1, axis(0), axis(3)))
    results = _recall(client, auth, query, k=2)
    assert [r["id"] for r in results] == [near, middle]
    assert abs(results[0]["similarity"] - 0.9) < 1e-4 and abs(results[1]["similarity"] - 0.6) < 1e-4
    assert client.delete(f"/memory/{near}", headers=auth).status_code == 200
    assert [r["id"] for r in _recall(client, auth, query, k=3)] == [middle, far]
    assert [r["id"] for r in _recall(client, auth, query, k=3, state="history")] == [middle, far]


def test_current_recall_replaces_a_superseded_hit_by_the_newest_of_its_chain(client, auth):
    query = axis(0)
    old = _post(client, auth, "User lives in Vienna.", vector_at(0.95, axis(0), axis(1)))
    other = _post(client, auth, "The cafeteria serves sausage.", vector_at(0.5, axis(0), axis(2)))
    answer = client.post(f"/memory/{old}/supersede", headers=auth, json={
        "content": "User moved to Oslo.", "embedding": [float(x) for x in vector_at(0.3, axis(0), axis(3))]})
    assert answer.status_code == 200, answer.get_json()
    newer = answer.get_json()["superseded_by"]
    assert answer.get_json()["created"] is True and answer.get_json()["survivors"] == []
    second = client.post(f"/memory/{newer}/supersede", headers=auth, json={
        "content": "User moved to Porto.", "embedding": [float(x) for x in vector_at(0.2, axis(0), axis(4))]})
    newest = second.get_json()["superseded_by"]
    current = _recall(client, auth, query, k=5)
    # The chain Vienna -> Oslo -> Porto answers once, as Porto, where Vienna ranked.
    assert [r["id"] for r in current] == [newest, other]
    assert sorted(current[0]["replaces"]) == sorted([old, newer])
    assert abs(current[0]["ranked_by_similarity"] - 0.95) < 1e-4 and abs(current[0]["similarity"] - 0.2) < 1e-4
    assert all("Vienna" not in r["content"] and "Oslo" not in r["content"] for r in current)
    history = {r["id"]: r for r in _recall(client, auth, query, k=5, state="history")}
    assert history[old]["superseded_by"] == newer and history[old]["superseded"] is True
    assert history[newest]["superseded"] is False


def test_supersede_is_idempotent_under_a_key_and_undone(client, auth, services):
    old = _post(client, auth, "The emergency contact number is 555-1234.", axis(0))
    headers = {**auth, "Idempotency-Key": "k-1"}
    body = {"content": "The emergency contact number is now 555-5678.", "embedding": [float(x) for x in axis(1)]}
    first = client.post(f"/memory/{old}/supersede", headers=headers, json=body).get_json()
    again = client.post(f"/memory/{old}/supersede", headers=headers, json=body).get_json()
    assert again["superseded_by"] == first["superseded_by"] and again["repeated"] is True
    assert services.stores.graph.count_memories() == 2  # the retry made no second memory
    stored = client.get(f"/memory/{old}", headers=auth).get_json()["memory"]
    assert stored["superseded_by"] == first["superseded_by"] and stored["t_invalid"] is not None
    assert services.stores.vectors.payloads([old])[old]["superseded"] is True
    conflict = client.post(f"/memory/{old}/supersede", headers=auth, json=body)
    assert conflict.status_code == 409  # already superseded: the newest is the one to supersede
    undone = client.post(f"/memory/{old}/supersede/undo", headers=auth).get_json()
    assert undone["forgotten"] == [first["superseded_by"]]
    assert client.get(f"/memory/{old}", headers=auth).get_json()["memory"]["superseded_by"] is None
    assert services.stores.vectors.payloads([old])[old]["superseded"] is False
    assert [r["id"] for r in _recall(client, auth, axis(0), k=3)] == [old]


def test_supersede_by_an_existing_memory_and_bad_requests(client, auth):
    old = _post(client, auth, "User works at Acme.", axis(0))
    new = _post(client, auth, "User joined Globex.", axis(1))
    missing = "00000000-0000-4000-8000-000000000000"
    itself = client.post(f"/memory/{old}/supersede", headers=auth, json={"by": old})
    assert itself.status_code == 400 and itself.get_json()["field"] == "by"
    assert client.post(f"/memory/{old}/supersede", headers=auth, json={"by": missing}).status_code == 404
    refused = client.post(f"/memory/{old}/supersede", headers=auth, json={"by": new, "content": "x"})
    assert refused.status_code == 400 and refused.get_json()["field"] == "by"
    assert client.post(f"/memory/{missing}/supersede", headers=auth, json={"by": new}).status_code == 404
    done = client.post(f"/memory/{old}/supersede", headers=auth, json={"by": new}).get_json()
    assert done["superseded_by"] == new and done["created"] is False


def test_a_compound_memory_keeps_the_fact_the_update_leaves(client, auth):
    old = _post(client, auth, "User lives in Lyon and teaches at the conservatory.", axis(0))
    answer = client.post(f"/memory/{old}/supersede", headers=auth, json={
        "content": "User moved to Paris.", "embedding": [float(x) for x in axis(1)]}).get_json()
    assert len(answer["survivors"]) == 1
    survivor = client.get(f"/memory/{answer['survivors'][0]}", headers=auth).get_json()["memory"]
    assert survivor["content"] == "User teaches at the conservatory." and survivor["split_from"] == old
    # It keeps the vector of the memory it came from (the client's model), so the client's queries find it.
    found = _recall(client, auth, axis(0), k=3)
    assert found[0]["id"] == answer["survivors"][0] or found[0]["replaces"] == [old]
    contents = [r["content"] for r in found]
    assert "User teaches at the conservatory." in contents and not any("Lyon" in c for c in contents)


def test_compound_splitting_rules():
    assert [p.text for p in facts_of("User lives in Lyon and teaches at the conservatory.")] == [
        "User lives in Lyon.", "User teaches at the conservatory."]
    assert len(facts_of("Maria speaks French and German.")) == 1  # a list of values, not two facts
    assert survivors("User lives in Lyon and teaches at the conservatory.", "User now teaches at the university.") \
        == ["User lives in Lyon."]
    assert survivors("The user works at Acme and lives in Berlin.", "User joined Globex last month.") == [
        "The user lives in Berlin."]
    assert survivors("User lives in Lyon.", "User moved to Paris.") == []
    # A part with its own subject; a predicate after "is"; a part pointing back at another stays with it.
    assert [p.text for p in facts_of("The budget is 500 dollars and the deadline is Friday.")] == [
        "The budget is 500 dollars.", "The deadline is Friday."]
    assert [p.text for p in facts_of("User is vegetarian and allergic to peanuts.")] == [
        "User is vegetarian.", "User is allergic to peanuts."]
    assert len(facts_of("User owns a Subaru and parks it in the garage.")) == 1
    # Auxiliaries and adverbs stay with what they qualify, not with the subject.
    assert [p.text for p in facts_of("Leo is married and has two kids.")] == ["Leo is married.", "Leo has two kids."]
    assert survivors("Leo is married and has two kids.", "Leo got divorced last year.") == ["Leo has two kids."]
    # The kind of fact an update changes: a move changes where one lives, not what one does.
    assert survivors("Omar drives a Ford and lives near the airport.", "Omar moved to the city centre.") == [
        "Omar drives a Ford."]
    # Another subject's fact is not the one a statement about the user changes.
    assert survivors("User rents a flat in Rome, while their partner lives in Milan.",
                     "User bought a house in Naples.") == ["Their partner lives in Milan."]


def test_identifiers_match_whole():
    email = identifier_pattern("dana@x.io")
    assert holds("write to DANA@x.io.", email) and holds("(ｄａｎａ@x.io)", email)
    assert not any(holds(t, email) for t in ("dana@x.io.uk", "adana@x.io", "a.dana@x.io", "dana@x.iox"))
    number = identifier_pattern("555-1234")
    assert holds("call 555-1234.", number)
    assert not any(holds(t, number) for t in ("555-12345", "1555-1234", "555-1234-9"))
    assert holds("Dana Smith's car", identifier_pattern("dana smith"))


def test_purge_lists_then_deletes_and_erase_leaves_no_trace(client, auth, services, settings):
    holding = [_post(client, auth, text, axis(i)) for i, text in enumerate(
        ["Customer email is dana@x.io.", "Escalate to DANA@X.IO when late"])]
    look_alikes = [_post(client, auth, text, axis(i + 4)) for i, text in enumerate(
        ["Backup contact adana@x.io", "UK mirror dana@x.io.uk", "Dana prefers tea"])]
    preview = client.post("/memories/purge", headers=auth, json={"match": "dana@x.io"}).get_json()
    assert preview["dry_run"] is True and sorted(preview["memory_ids"]) == sorted(holding)
    assert services.stores.graph.count_memories() == 5
    done = client.post("/memories/purge", headers=auth, json={"match": "Dana@x.io", "dry_run": False,
                                                               "erase": True}).get_json()
    assert done["deleted"] == 2
    assert not services.stores.graph.existing_ids(holding)
    assert services.stores.graph.existing_ids(look_alikes) == set(look_alikes)
    assert client.post(f"/memory/{holding[0]}/restore", headers=auth).status_code == 410
    erased = client.get(f"/memory/{holding[0]}", headers=auth)
    assert erased.status_code == 410 and erased.get_json()["deletion"] == "erased"
    assert "dana" not in erased.get_data(as_text=True).lower()
    services.close()  # flush every store to its files
    needle = b"dana@x.io"
    for path in Path(settings.data_dir).rglob("*"):
        if path.is_file():
            data = path.read_bytes().lower()
            stripped = data.replace(b"adana@x.io", b"").replace(b"dana@x.io.uk", b"")
            assert needle not in stripped, path


def test_purge_refuses_a_blank_identifier_and_needs_the_admin_token(client, auth):
    refused = client.post("/memories/purge", headers=auth, json={"match": "  ."})
    assert refused.status_code == 400 and refused.get_json()["field"] == "match"
    assert client.post("/memories/purge", json={"match": "x"}).status_code == 401


def test_forget_on_request_is_restorable_and_audited(client, auth, services):
    memory = _post(client, auth, "Forget me", axis(0))
    gone = client.delete(f"/memory/{memory}", headers=auth)
    assert gone.status_code == 200 and gone.get_json()["state"] == "deleted"
    assert client.get(f"/memory/{memory}", headers=auth).status_code == 410
    assert client.delete(f"/memory/{memory}", headers=auth).status_code == 410
    entries = services.memories.audit.recent()
    assert entries[0]["action"] == "forget" and entries[0]["details"]["requested_by"] == "admin"
    assert client.post(f"/memory/{memory}/restore", headers=auth).status_code == 200


# --- summaries rebuilt when a member leaves ------------------------------------------------------------------

def _plant(services, quoted: str, others: int, base: int = 0):
    """A cluster around axis `base`: `quoted` nearest its centre (so the heuristic summary quotes it), `others`
    around it, each along an axis of its own after `base`."""
    central = add_memory(services, vector=vector_at(0.99, axis(base), axis(base + 1)), content=quoted,
                         type="Decision")
    rest = [add_memory(services, vector=vector_at(0.95, axis(base), axis(base + 2 + i)), type="Decision",
                       content=f"Billing runs on PostgreSQL, note {i}") for i in range(others)]
    services.engine.run(["cluster"])
    (pattern_id, props, members), = [p for p in patterns(services) if central in p[2]]
    assert members == {central, *rest} and quoted.split()[-1] in props["content"]
    return pattern_id, central, rest


def test_a_summary_is_rebuilt_from_its_current_members_when_one_is_superseded(client, auth, services):
    pattern_id, central, rest = _plant(services, "Billing is owned by Quinn", 5)
    answer = client.post(f"/memory/{central}/supersede", headers=auth, json={
        "content": "Billing is owned by Berg now", "embedding": [float(x) for x in axis(12)]})
    assert answer.status_code == 200 and answer.get_json()["survivors"] == [], answer.get_json()
    (same_id, props, members), = [p for p in patterns(services) if not p[1].get("archived")]
    assert same_id == pattern_id and members == set(rest) and props["cluster_size"] == 5
    assert "Quinn" not in props["content"]
    # A later clustering leaves the superseded memory out, as the rebuild did.
    services.engine.run(["cluster"])
    assert [p[2] for p in patterns(services) if not p[1].get("archived")] == [set(rest)]


def test_a_summary_left_too_small_is_retired_and_a_run_rebuilds_after_a_merge(client, auth, services):
    pattern_id, central, rest = _plant(services, "Billing runs on PostgreSQL, owned by Quinn", 4)
    assert client.delete(f"/memory/{rest[0]}", headers=auth).status_code == 200
    (props,) = [p[1] for p in patterns(services) if p[0] == pattern_id]
    assert props["archived"] is True  # 4 members left, below the minimum of 5: retired
    # A run's merge takes a member from a summary too: its report says how many summaries it rebuilt.
    pattern_id, central, rest = _plant(services, "Invoices are stored in S3, owned by Lund", 5, base=8)
    twin = add_memory(services, vector=vector_at(0.95, axis(8), axis(10)), type="Decision",
                      content="Billing runs on PostgreSQL, note 0")
    services.engine.run(["cluster"])
    assert twin in [p[2] for p in patterns(services) if p[0] == pattern_id][0]
    report = services.engine.run(["dedup"])["result"]["dedup"]
    merged = {m for m in (twin, rest[0]) if services.stores.graph.get_memory(m).get("merged_into")}
    assert len(merged) == 1 and report["summaries_rebuilt"] == 1
    (members,) = [p[2] for p in patterns(services) if p[0] == pattern_id]
    assert not merged & members and members == {central, twin, *rest} - merged


def test_purge_rewrites_a_summary_that_quoted_the_identifier(client, auth, services):
    pattern_id, central, rest = _plant(services, "Billing runs on PostgreSQL, owned by dana@x.io", 5)
    preview = client.post("/memories/purge", headers=auth, json={"match": "dana@x.io"}).get_json()
    assert preview["memory_ids"] == [central] and preview["summaries_quoting"] == 1
    done = client.post("/memories/purge", headers=auth, json={"match": "dana@x.io", "dry_run": False,
                                                               "erase": True}).get_json()
    assert done["deleted"] == 1 and done["summaries_deleted"] == 0
    (props, members), = [(p[1], p[2]) for p in patterns(services) if p[0] == pattern_id]
    assert not props.get("archived") and members == set(rest) and "dana@x.io" not in props["content"]


def test_the_detail_view_marks_the_state_of_the_memory_at_each_edges_other_end(client, auth):
    old = _post(client, auth, "User lives in Vienna.", axis(0))
    newer = client.post(f"/memory/{old}/supersede", headers=auth, json={
        "content": "User moved to Oslo.", "embedding": [float(x) for x in axis(1)]}).get_json()["superseded_by"]
    edges = client.get(f"/memories/{newer}/detail", headers=auth).get_json()["edges"]
    to_old = [e for e in edges if e["other_id"] == old]
    assert {e["relation"] for e in to_old} == {"SUPERSEDES", "EVOLVED_INTO"}
    assert all(e["other_superseded_by"] == newer and e["other_state"] == "active" for e in to_old)
    back = client.get(f"/memories/{old}/detail", headers=auth).get_json()["edges"]
    assert {(e["other_id"], e["other_superseded_by"]) for e in back} == {(newer, None)}


def _readable(value) -> str:
    """A stored value as text a reader sees: JSON kept in a string decoded (escaped letters as letters)."""
    try:
        return json.dumps(json.loads(value), ensure_ascii=False)
    except (TypeError, ValueError):
        return str(value)


def _files_holding(folder, needle: bytes, allowed=()) -> list[str]:
    found = []
    for path in Path(folder).rglob("*"):
        if path.is_file():
            data = path.read_bytes().lower()
            for look_alike in allowed:
                data = data.replace(look_alike, b"")
            if needle in data:
                found.append(str(path))
    return found


def test_erase_reaches_every_record_runs_and_requests_left(client, auth, services, settings):
    # A run's supersession and merge, whose report, merge record and edge reasons quote the identifier.
    older = add_memory(services, vector=vector_at(0.9, axis(0), axis(1)), content="The support address is dana@x.io.",
                       timestamp=days_ago(3))
    newer = add_memory(services, vector=vector_at(0.9, axis(0), axis(2)),
                       content="The support address is now help@x.io.", timestamp=days_ago(1))
    twins = [add_memory(services, vector=axis(5), content="Escalate to dana@x.io when late.", timestamp=days_ago(2))
             for _ in range(2)]
    report = services.engine.run(["dedup"], full=True)["result"]["dedup"]
    # The report quotes it (in the merge reason, as dedup spells an address's terms): something to reach.
    assert holds(str(report), identifier_pattern("dana@x.io")), report
    assert services.stores.graph.get_memory(older).get("superseded_by") == newer
    # A tombstone of a memory that stays deleted, whose edges' reasons quote it.
    assert client.delete(f"/memory/{newer}", headers=auth).status_code == 200
    # A request's plan holding it: a supersede whose new memory names it.
    other = _post(client, auth, "Billing owner is Sam.", axis(7))
    assert client.post(f"/memory/{other}/supersede", headers=auth, json={
        "content": "Billing owner is dana@x.io.", "embedding": [float(x) for x in axis(8)]}).status_code == 200
    keep = _post(client, auth, "Backup contact adana@x.io", axis(9))
    # Half the store holds it: more than a tenth, so the purge runs with the count its preview found.
    preview = client.post("/memories/purge", headers=auth, json={"match": "dana@x.io"}).get_json()
    assert preview["refused"] is not None and preview["matched"] == 4
    done = client.post("/memories/purge", headers=auth, json={"match": "dana@x.io", "dry_run": False,
                                                               "erase": True, "expected_count": 4}).get_json()
    assert done["deleted"] == 4 - 1 + 1  # older, the canonical twin (its duplicate leaves with it), the request's
    assert services.stores.graph.existing_ids([keep, other]) == {keep, other}
    assert not services.stores.graph.existing_ids([older, *twins])
    # The graph's files compress long strings, so a search of them alone would miss a report still quoting it:
    # every property of every node and edge is read back too.
    pattern = identifier_pattern("dana@x.io")
    falkor = services.stores.graph.falkor
    kept = [row for row in falkor.records("MATCH (n) RETURN labels(n), properties(n)")
            + falkor.records("MATCH ()-[r]->() RETURN type(r), properties(r)")
            if any(holds(_readable(value), pattern) for value in dict(row[1]).values())]
    assert kept == []
    services.close()
    assert _files_holding(settings.data_dir, b"dana@x.io", allowed=(b"adana@x.io",)) == []
    assert _files_holding(settings.data_dir, "danaˍxˍio".encode()) == []
