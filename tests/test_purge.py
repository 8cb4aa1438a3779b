"""Purges that cannot run wild: which matches are identifiers, what needs the preview's count, the preview
itself (texts, true states, paged), redaction instead of deletion, and a restore that brings a purged merged group
back as it was."""

from __future__ import annotations

import pytest

from consolidation.identifiers import identifier_kind, identifier_pattern, says_more

from conftest import add_memory, axis, link, vector_at
from tests.test_lifecycle import consistent, run

WORDS = ["The kettle in the kitchen is a gift", "A meeting in the morning", "The train was late in the rain",
         "Lunch in a park", "The budget for a trip", "A note on the fridge", "Dinner in the garden",
         "The cat sat in a box", "A walk in the snow", "The printer is out of paper", "Plans for the weekend",
         "Coffee with a friend", "The roof needs a repair", "Tickets for the concert in May",
         "Dana Smith moved to Lisbon", "Dana Smith's phone is 555-1234", "Email dana@x.io about the invoice",
         "The launch is on 2027-03-01", "Server 10.2.0.15 is the build box", "Order AB-1234 shipped"]


def _fill(client, auth, texts=WORDS):
    ids = []
    for text in texts:
        answer = client.post("/memory", headers=auth, json={"content": text})
        assert answer.status_code == 201, answer.get_json()
        ids.append(answer.get_json()["memory"]["id"])
    return ids


def _purge(client, auth, **body):
    return client.post("/memories/purge", headers=auth, json=body)


@pytest.mark.parametrize(("match", "kind"), [
    ("dana@x.io", "e-mail"), ("https://x.io/a?b=1", "url"), ("x.io", "domain"), ("555-1234", "phone number"),
    ("+44 20 7946 0958", "phone number"), ("12345", "number"), ("10.2.0.15", "number"), ("AB-1234", "code"),
    ("@dana", "handle"), ("Dana", "name"), ("Dana Smith", "name"), ("J. R. Smith", "name"),
    ("a", None), ("the", None), ("in", None), ("The", None), ("In", None), ("A", None), ("dana", None),
    ("12", None), ("Dana the", None)])
def test_which_matches_are_identifiers(match, kind):
    assert identifier_kind(match) == kind


def test_what_says_more_than_the_identifier():
    email = identifier_pattern("dana@x.io")
    assert not says_more("Customer email is dana@x.io.", email)
    assert says_more("Email dana@x.io about the invoice, and the budget is due on Friday", email)
    assert says_more("Moved from dana@x.io to dana@y.io", email)  # the new address is another identifier


@pytest.mark.parametrize("match", ["a", "the", "in"])
def test_a_word_is_purged_only_with_the_count_its_preview_found(client, auth, services, match):
    ids = _fill(client, auth)
    preview = _purge(client, auth, match=match).get_json()
    expected = sum(bool(identifier_pattern(match).search(text.casefold())) for text in WORDS)
    assert preview["matched"] == expected > 2 and preview["identifier"] is None and "not an identifier" in \
        preview["refused"]
    refused = _purge(client, auth, match=match, dry_run=False)
    assert refused.status_code == 400 and refused.get_json()["field"] == "match"
    stale = _purge(client, auth, match=match, dry_run=False, expected_count=expected + 1)
    assert stale.status_code == 409 and stale.get_json()["matched"] == expected
    assert services.stores.graph.count_memories() == len(ids)  # nothing went
    done = _purge(client, auth, match=match, dry_run=False, expected_count=expected).get_json()
    assert done["deleted"] == expected and services.stores.graph.count_memories() == len(ids) - expected


def test_an_identifier_held_by_more_than_a_tenth_of_the_scope_needs_its_count(client, auth, services):
    _fill(client, auth, WORDS[:12] + [f"Call Quinn about item {i}" for i in range(5)])
    refused = _purge(client, auth, match="Quinn", dry_run=False)
    # 5 of 17 memories (29 %), more than a tenth and more than 3.
    assert refused.status_code == 409 and refused.get_json()["matched"] == 5
    assert "expected_count 5" in refused.get_json()["detail"]
    assert _purge(client, auth, match="Quinn", dry_run=False, expected_count=5).get_json()["deleted"] == 5
    # A real identifier in a few memories runs as asked.
    assert _purge(client, auth, match="555-1234", dry_run=False).status_code == 200


def test_the_preview_lists_texts_true_states_and_pages(client, auth, services):
    texts = [f"Ticket {i} for Quinn is open" for i in range(7)]
    ids = _fill(client, auth, texts)
    newer = client.post(f"/memory/{ids[0]}/supersede", headers=auth, json={
        "content": "Ticket 0 for Quinn is closed"}).get_json()
    first = _purge(client, auth, match="Quinn", limit=5).get_json()
    assert first["matched"] == 8 and first["next_offset"] == 5 and len(first["memories"]) == 5
    rest = _purge(client, auth, match="Quinn", limit=5, offset=5).get_json()
    assert rest["next_offset"] is None and len(rest["memories"]) == 3
    listed = {m["id"]: m for m in first["memories"] + rest["memories"]}
    assert set(listed) == {*ids, newer["superseded_by"]}
    assert listed[ids[0]]["state"] == "superseded" and listed[ids[0]]["superseded_by"] == newer["superseded_by"]
    assert listed[ids[1]]["state"] == "active" and listed[ids[1]]["content"] == texts[1]
    assert services.stores.graph.count_memories() == 8


def test_redact_keeps_what_a_memory_says_besides_the_identifier(client, auth, services):
    says_more_id, only_id = _fill(client, auth, ["Email dana@x.io about the invoice, and the budget is due Friday",
                                                 "Customer email is dana@x.io"])
    preview = _purge(client, auth, match="dana@x.io", redact=True).get_json()
    assert {m["id"]: m["action"] for m in preview["memories"]} == {says_more_id: "redact", only_id: "delete"}
    done = _purge(client, auth, match="dana@x.io", redact=True, dry_run=False).get_json()
    assert (done["deleted"], done["redacted"]) == (1, 1)
    kept = client.get(f"/memory/{says_more_id}", headers=auth).get_json()["memory"]
    assert kept["content"] == "Email [redacted] about the invoice, and the budget is due Friday"
    assert client.get(f"/memory/{only_id}", headers=auth).status_code == 410
    terms = services.stores.graph.falkor.execute("MATCH (f:FactTerms {memory_id: $id}) RETURN f.terms",
                                                 {"id": says_more_id})
    assert "dana" not in str(terms)  # the old text's terms went with it


def test_a_redacted_text_is_embedded_again_where_the_service_embedded_it(client, auth, services):
    answer = client.post("/memory", headers=auth, json={"content": "Email dana@x.io about the invoice, and the "
                                                                   "budget is due Friday"})
    memory_id = answer.get_json()["memory"]["id"]
    _purge(client, auth, match="dana@x.io", redact=True, dry_run=False)
    _, stored = services.stores.vectors.vectors([memory_id])
    expected = services.memories.embedder.embed(["Email [redacted] about the invoice, and the budget is due "
                                                 "Friday"])[0]
    assert abs(float(stored[0] @ expected) - 1.0) < 1e-5


def _store(services) -> tuple[list, list, list]:
    """The store as a reader sees it, what a restore counts as a use left out."""
    falkor = services.stores.graph.falkor
    used = {"access_count", "last_accessed", "held_until", "restored_at", "relevance_score", "change_seq"}
    memories = sorted((row[0], tuple(sorted((k, str(v)) for k, v in dict(row[1]).items() if k not in used)))
                      for row in falkor.records("MATCH (m:Memory) RETURN m.id, properties(m)"))
    edges = sorted((a, kind, b, tuple(sorted((k, str(v)) for k, v in dict(props).items())))
                   for a, kind, b, props in falkor.records(
                       "MATCH (a:Memory)-[r]->(b:Memory) RETURN a.id, type(r), b.id, properties(r)"))
    records = sorted(tuple(row) for row in falkor.records(
        "MATCH (r:MergeRecord) RETURN r.duplicate_id, r.canonical_id, r.state"))
    return memories, edges, records


def test_a_purged_merged_group_comes_back_as_it_was(client, auth, services):
    canonical = add_memory(services, vector=axis(0), type="Decision", access_count=5,
                           content="Quinn owns the billing service")
    duplicates = [add_memory(services, vector=vector_at(0.97, axis(0), axis(1 + i)), type="Decision",
                             content=text) for i, text in enumerate(["Quinn owns billing service",
                                                                     "The billing service is owned by Quinn"])]
    friend = add_memory(services, vector=axis(6), content="Invoices run nightly")
    link(services, canonical, friend)
    link(services, duplicates[0], friend, "MENTIONS")  # lent to the canonical by the merge
    run(services, "dedup", full=True)
    assert {services.stores.graph.get_memory(d)["merged_into"] for d in duplicates} == {canonical}
    before = _store(services)
    purged = _purge(client, auth, match="Quinn", dry_run=False, expected_count=3).get_json()
    assert purged["deleted"] == 3 and services.stores.graph.existing_ids([canonical, *duplicates]) == set()
    restored = client.post(f"/memory/{duplicates[1]}/restore", headers=auth).get_json()
    assert restored["state"] == "merged" and sorted(restored["restored_with"]) == sorted([canonical, duplicates[0]])
    assert _store(services) == before
    payloads = services.stores.vectors.payloads([canonical, *duplicates])
    assert [payloads[i]["state"] for i in (canonical, *duplicates)] == ["active", "merged", "merged"]
    assert consistent(services) == []
    # Restoring the canonical answers as for an active memory: nothing is left to bring back.
    assert client.post(f"/memory/{canonical}/restore", headers=auth).status_code == 409
