"""What AutoMem's current-state recall reads, replayed against a graph we consolidated: a memory we superseded
leaves its results (the newer one stands in), and comes back when the supersession is undone; the Qdrant payload
lets a filtered vector search leave out what we merged, archived or superseded.

The filters are AutoMem's (verygoodplugins/automem, automem/api/recall.py): a result is dropped when it is
archived, not yet valid (t_valid after now) or expired (t_invalid at or before now), or an artifact type
(RECALL_EXCLUDED_TYPES, MetaPattern by default); then one whose INVALIDATED_BY / EVOLVED_INTO edge leads to a
current memory is replaced by that memory (state_mode=current)."""

from __future__ import annotations

from datetime import datetime

import pytest

from consolidation.service import build_services
from tests.conftest import add_memory, axis, days_ago, make_settings, vector_at

EXCLUDED_TYPES = {"MetaPattern"}
SUPPRESSING = ["INVALIDATED_BY", "EVOLVED_INTO"]
# AutoMem's replacement lookup (recall.py, _query_state_replacements), as it queries FalkorDB.
REPLACEMENTS = ("UNWIND $ids AS source_id MATCH (m:Memory {id: source_id})-[r]->(related:Memory) "
                "WHERE type(r) IN $types RETURN source_id, related.id, properties(related) "
                "ORDER BY source_id, coalesce(r.updated_at, related.timestamp) DESC")


def state_reason(memory: dict, now: datetime) -> str | None:
    """AutoMem's _state_reason_for_memory."""
    if memory.get("archived") is True:
        return "archived"
    if memory.get("t_valid") and datetime.fromisoformat(memory["t_valid"]) > now:
        return "not_yet_valid"
    if memory.get("t_invalid") and datetime.fromisoformat(memory["t_invalid"]) <= now:
        return "expired"
    return None


def current_recall(services, ids: list[str], now: datetime) -> list[str]:
    """The ids AutoMem's current-state recall returns for these candidates (its filters, in its order)."""
    falkor = services.stores.graph.falkor
    memories = {row[0]: dict(row[1]) for row in falkor.records(
        "UNWIND $ids AS id MATCH (m:Memory {id: id}) WHERE coalesce(m.archived, false) = false "
        "AND NOT coalesce(m.type, '') IN $excluded RETURN m.id, properties(m)",
        {"ids": ids, "excluded": sorted(EXCLUDED_TYPES)})}
    kept = [i for i in ids if i in memories and state_reason(memories[i], now) is None]
    replaced: dict[str, str] = {}
    for source, related_id, related in falkor.records(REPLACEMENTS, {"ids": kept, "types": SUPPRESSING}):
        if source not in replaced and state_reason(dict(related), now) is None:
            replaced[source] = related_id
    results = []
    for memory_id in kept:
        shown = replaced.get(memory_id, memory_id)
        if shown not in results:
            results.append(shown)
    return results


@pytest.fixture
def scoped(tmp_path, clock):
    services = build_services(make_settings(tmp_path / "data", consolidation_scope_properties="user_id"),
                              clock=clock)
    yield services
    services.close()


def test_a_superseded_memory_leaves_automems_current_recall_and_comes_back_when_undone(scoped, clock, client_for):
    old = add_memory(scoped, vector=axis(0), content="Production deploys happen on Tuesday", type="Context",
                     timestamp=days_ago(30), user_id="u1")
    new = add_memory(scoped, vector=vector_at(0.8, axis(0), axis(1)), type="Context", timestamp=days_ago(2),
                     content="Production deploys moved from Tuesday to Thursday", user_id="u1")
    other = add_memory(scoped, vector=axis(4), content="Lunch is at noon", type="Context", user_id="u1")
    assert current_recall(scoped, [old, new, other], clock()) == [old, new, other]

    report = scoped.engine.run(["dedup"])["result"]["dedup"]
    assert [(s["newer"], s["older"]) for s in report["supersessions"]] == [(new, old)]
    stored = scoped.stores.graph.get_memory(old)
    assert stored["t_invalid"] == days_ago(2)  # invalid from the newer memory's time
    assert current_recall(scoped, [old, other], clock()) == [other]  # expired, and replaced by the newer
    edges = scoped.stores.graph.falkor.execute(
        "MATCH (o:Memory {id: $old})-[e:EVOLVED_INTO]->(n:Memory) RETURN n.id, e.origin", {"old": old})
    assert edges == [[new, "consolidation"]]
    # A filtered vector search can leave it out too.
    payloads = scoped.stores.vectors.payloads([old, new])
    assert (payloads[old]["superseded"], payloads[new]["superseded"]) == (True, False)
    # Every edge counts as a relationship, as AutoMem counts them: the supersession and its mirror.
    assert scoped.stores.graph.scoring_inputs_of([old]).relationship_counts.tolist() == [2.0]

    # Undone (an administrator moves the newer memory to another user): AutoMem recalls the older one again.
    client = client_for(scoped)
    line = ('{"id": "%s", "content": "Production deploys moved from Tuesday to Thursday", "type": "Context", '
            '"user_id": "u2", "timestamp": "%s"}' % (new, days_ago(2)))
    assert client.post("/memory/import?overwrite=true", data=line, headers=client.auth).status_code == 200
    assert scoped.stores.graph.get_memory(old).get("t_invalid") is None
    assert current_recall(scoped, [old, other], clock()) == [old, other]
    assert scoped.stores.vectors.payloads([old])[old]["superseded"] is False


def test_a_clients_own_validity_end_is_kept(scoped, clock):
    ended = days_ago(10)
    old = add_memory(scoped, vector=axis(0), content="Production deploys happen on Tuesday", type="Context",
                     timestamp=days_ago(30), t_invalid=ended)
    add_memory(scoped, vector=vector_at(0.8, axis(0), axis(1)), type="Context", timestamp=days_ago(2),
               content="Production deploys moved from Tuesday to Thursday")
    scoped.engine.run(["dedup"])
    stored = scoped.stores.graph.get_memory(old)
    assert stored["superseded_by"] and stored["t_invalid"] == ended and stored.get("t_invalid_set_by") is None
