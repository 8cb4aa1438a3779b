"""Dedup's stored fact terms on their own FactTerms nodes: written with a memory, gone with it, swept when another
program deleted it, never a memory write's index work, and moved there from where older versions kept them."""

from __future__ import annotations

import uuid

from consolidation.hygiene.terms import TERMS_VERSION
from consolidation.stores.falkor import Falkor
from consolidation.stores.hygiene import HygieneStore
from tests.conftest import add_memory, axis, days_ago

TEXT = "Deploys moved from Tuesday to Thursday for the payments API"


def fact_terms(services) -> dict[str, list[str]]:
    """Every FactTerms node: its memory id and terms."""
    rows = services.stores.graph.falkor.records("MATCH (f:FactTerms) RETURN f.memory_id, f.terms")
    return {memory_id: terms for memory_id, terms in rows}


def memory_indexes(services) -> set[str]:
    rows = services.stores.graph.falkor.records("CALL db.indexes() YIELD label, properties RETURN label, properties")
    return {field for label, fields in rows if label == "Memory" for field in fields}


def dedup(services) -> dict:
    return services.engine.run(["dedup"])["result"]["dedup"]


def test_a_memory_is_written_with_its_terms_beside_it_and_memory_writes_reindex_no_terms(services, client, auth):
    written = client.post("/memory", json={"content": TEXT, "type": "Decision",
                                           "embedding": list(map(float, axis(0)))}, headers=auth).json["memory"]
    terms = fact_terms(services)

    # By hand: the subject and the new value are terms of the change "from Tuesday to Thursday".
    assert list(terms) == [written["id"]] and {"deploy", "thursday"} <= set(terms[written["id"]])
    # Only the id and change-number indexes stay on Memory: a score written re-indexes nothing else.
    assert memory_indexes(services) == {"id", "change_seq"}
    shown = services.stores.graph.get_memory(written["id"])
    assert not {"fact_terms", "fact_anchors", "fact_least", "fact_stamp", "terms"} & set(shown)


def test_the_terms_go_with_a_memory_forgotten_on_request_and_with_one_removed(services, client, auth):
    kept, forgotten, removed = (add_memory(services, content=f"{TEXT} ({n})", type="Decision") for n in range(3))
    assert set(fact_terms(services)) == {kept, forgotten, removed}

    assert client.delete(f"/memory/{forgotten}", headers=auth).status_code == 200
    services.stores.graph.remove_memories([removed])

    assert set(fact_terms(services)) == {kept}


def test_a_memory_another_program_deleted_leaves_terms_no_lookup_finds_and_the_full_pass_sweeps(services):
    kept = add_memory(services, content=TEXT, type="Decision", vector=axis(0))
    gone = add_memory(services, content=TEXT.replace("payments", "billing"), type="Decision", vector=axis(1))
    services.stores.graph.falkor.execute("MATCH (m:Memory {id: $id}) DETACH DELETE m", {"id": gone})
    hygiene = HygieneStore(services.stores.graph.falkor, services.stores.graph.scoping)
    assert set(fact_terms(services)) == {kept, gone}  # AutoMem's own delete knows nothing of them

    assert hygiene.anchored(["tuesday"]) == {kept}
    assert set(hygiene.previous_terms([kept, gone])) == {kept}
    drive = {"key": 0, "drive": ["thursday"], "required": ["thursday"], "counted": [], "need": 0, "slack": 99}
    assert hygiene.holding([drive]) == {0: {kept}}

    dedup(services)

    assert set(fact_terms(services)) == {kept}


def test_terms_kept_on_the_memory_by_an_older_version_move_beside_it(services):
    """A store written by a version that kept the terms on the memory (with two Memory indexes): the indexes
    go when the schema is ensured, and the next dedup pass (a full one: the terms' version changed) stores the
    terms beside the memory and clears the old properties."""
    graph = services.stores.graph
    memory_id = str(uuid.uuid4())
    add_memory(services, content=TEXT, type="Decision", id=memory_id)
    graph.falkor.execute("MATCH (f:FactTerms) DELETE f")
    graph.falkor.execute(
        "MATCH (m:Memory {id: $id}) SET m.fact_terms = ['old'], m.fact_anchors = ['older'], m.fact_least = 1, "
        "m.fact_stamp = '3:' + toString(m.change_seq)", {"id": memory_id})
    for field in ("fact_terms", "fact_anchors"):
        graph.falkor.execute(f"CREATE INDEX FOR (n:Memory) ON (n.{field})")
    assert {"fact_terms", "fact_anchors"} <= memory_indexes(services)

    graph.ensure_schema()
    dedup(services)

    assert memory_indexes(services) == {"id", "change_seq"}
    old, stamp, change = graph.falkor.records(
        "MATCH (m:Memory {id: $id}) RETURN [m.fact_terms, m.fact_anchors, m.fact_least], m.fact_stamp, "
        "m.change_seq", {"id": memory_id})[0]
    assert old == [None, None, None] and stamp == f"{TERMS_VERSION}:{change}"
    assert {"deploy", "thursday"} <= set(fact_terms(services)[memory_id])


def test_every_query_reaching_memories_through_their_terms_looks_each_up_by_index(services, monkeypatch):
    """FalkorDB plans two MATCH clauses in a row as a hash join over a scan of every memory (an incremental
    dedup at 100k took 187 s instead of 1.6 s that way): each query of an incremental pass that touches the
    terms is planned with index lookups only."""
    asked: set[str] = set()
    for method in ("execute", "records"):
        real = getattr(Falkor, method)
        monkeypatch.setattr(Falkor, method, lambda self, cypher, *args, _real=real, **kwargs: (
            asked.add(cypher) if "FactTerms" in cypher else None, _real(self, cypher, *args, **kwargs))[1])
    add_memory(services, content="Deploys happen on Tuesday for the payments API", type="Decision",
               vector=axis(0), timestamp=days_ago(3))
    assert dedup(services)["pass"] == "full"
    changed = add_memory(services, content=TEXT, type="Decision", vector=axis(1))
    asked.clear()

    assert dedup(services)["pass"] == "incremental"
    hygiene = HygieneStore(services.stores.graph.falkor, services.stores.graph.scoping)
    hygiene.worth_reading([{"id": changed, "keys": [{"terms": ["deploy"], "numbers": []}], "stamp": "?"}])
    services.stores.graph.falkor.execute("MATCH (m:Memory {id: $id}) DETACH DELETE m", {"id": changed})
    assert hygiene.sweep_orphan_terms() == 1

    falkor = services.stores.graph.falkor
    plans = {cypher: "\n".join(line.decode() if isinstance(line, bytes) else str(line) for line in
                               falkor.command("GRAPH.EXPLAIN", falkor.graph_name, cypher)) for cypher in asked}
    # By hand: the pass asks for previous terms, announced changes by anchor and pools by term; then whether a
    # memory is worth reading, and the orphans swept (found, then deleted).
    parts = ("f.anchors", "f.terms IS NOT NULL", "row.drive", "row.stamp", "id(n) >= $first", "DELETE n")
    assert {part for part in parts for cypher in asked if part in cypher} == set(parts)
    for cypher, plan in plans.items():
        assert "Label Scan" not in plan and "Hash Join" not in plan, (cypher, plan)
