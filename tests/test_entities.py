"""Entity hygiene: alias groups among AutoMem's Entity nodes, merged reversibly, on the real embedded store."""

from __future__ import annotations

import numpy as np
import pytest

from consolidation.entities.groups import EntityRow, alias_groups, candidate_pairs
from consolidation.entities.names import Evidence, alias_reason, read_name
from consolidation.service import build_services
from consolidation.stores.entities import EntityStore
from tests.conftest import add_memory, axis, make_settings, unit


@pytest.mark.parametrize("first, second, category", [
    ("PostgreSQL", "postgresql", "tool"), ("Postgres", "PostgreSQL", "tool"), ("Node.js", "nodejs", "tool"),
    ("Vue", "Vue.js", "tool"), ("k8s", "Kubernetes", "tool"), ("Kubernetes", "Kuberentes", "tool"),
    ("Mongo", "MongoDB", "tool"), ("Acme", "Acme Inc.", "organization"), ("José Díaz", "Jose Diaz", "person"),
])
def test_spellings_suffixes_and_numeronyms_of_one_name_are_aliases(first, second, category):
    assert alias_reason(read_name(first), read_name(second), category, Evidence()) is not None


@pytest.mark.parametrize("first, second, category", [
    ("Java", "JavaScript", "tool"), ("React", "React Native", "tool"), ("C", "C++", "language"),
    ("C#", "C++", "language"), ("Python 2", "Python 3", "tool"), ("Ann Lee", "Anna Lee", "person"),
    ("Jon Smith", "John Smith", "person"), ("iOS 16", "iOS 17", "platform"),
])
def test_look_alike_names_of_different_things_are_never_aliases(first, second, category):
    for evidence in (Evidence(), Evidence(shared=1.0, context=0.95)):
        assert alias_reason(read_name(first), read_name(second), category, evidence) is None


def test_acronyms_and_initials_need_their_memories_to_agree():
    for short, long, category in (("JS", "JavaScript", "tool"), ("AWS", "Amazon Web Services", "organization"),
                                  ("J. Smith", "John Smith", "person")):
        assert alias_reason(read_name(short), read_name(long), category, Evidence()) is None
        assert alias_reason(read_name(short), read_name(long), category, Evidence(context=0.8)) is not None
        assert alias_reason(read_name(short), read_name(long), category, Evidence(shared=0.6)) is not None
    # Memories about unrelated things overrule every rule but one name written two ways.
    assert alias_reason(read_name("Mongo"), read_name("MongoDB"), "tool", Evidence(context=0.05)) is None
    assert alias_reason(read_name("Mongo"), read_name("mongo"), "tool", Evidence(context=0.05)) is not None


def test_groups_pair_only_within_category_and_scope_and_never_chain():
    rows = [EntityRow("1", "PostgreSQL", "tool", "", 5), EntityRow("2", "postgres", "tool", "", 1),
            EntityRow("3", "Postgres", "tool", "other-user", 1), EntityRow("4", "Postgres", "person", "", 1),
            EntityRow("5", "Postgre SQL", "tool", "", 1, frozenset({"1"}))]
    groups, judged = alias_groups(rows, candidate_pairs(rows), lambda i, j: Evidence())
    assert [(rows[g.canonical].id, [rows[i].id for i, _ in g.aliases]) for g in groups] == [("1", ["2"])]
    assert judged == len(candidate_pairs(rows)) < len(rows) * (len(rows) - 1) // 2


def entity(services, entity_id: str, name: str, category: str = "tool", **fields) -> None:
    services.stores.graph.falkor.execute(
        "CREATE (e:Entity {id: $id, name: $name, slug: $slug, category: $category}) SET e += $fields",
        {"id": entity_id, "name": name, "slug": name.lower().replace(" ", "-"), "category": category,
         "fields": fields})


def refer(services, entity_id: str, memory_id: str) -> None:
    services.stores.graph.falkor.execute(
        "MATCH (e:Entity {id: $e}), (m:Memory {id: $m}) CREATE (e)-[:REFERENCED_IN {source: 'test'}]->(m)",
        {"e": entity_id, "m": memory_id})


def references(services) -> set[tuple[str, str]]:
    rows = services.stores.graph.falkor.records(
        "MATCH (e:Entity)-[r:REFERENCED_IN]->(m:Memory) RETURN e.id, m.id, r.source", read_only=True)
    assert all(source == "test" for _, _, source in rows)  # moved edges keep their properties
    return {(e, m) for e, m, _ in rows}


def active_entities(services) -> set[str]:
    # AutoMem's own listing of entities: the ones not merged into another.
    return {row[0] for row in services.stores.graph.falkor.records(
        "MATCH (e:Entity) WHERE e.merged_into IS NULL RETURN e.id", read_only=True)}


@pytest.fixture
def catalogue(services):
    """Postgres under three spellings, Java and JavaScript, two people: memories on the topics they name."""
    database, java, script = axis(0), axis(1), axis(2)
    memories = {name: [add_memory(services, unit(direction + 0.1 * axis(3 + k)), content=f"{name} note {k}")
                       for k in range(2)] for name, direction in
                (("pg", database), ("java", java), ("js", script), ("people", axis(5)))}
    entity(services, "pg-1", "PostgreSQL", aliases=["pg"])
    entity(services, "pg-2", "postgres")
    entity(services, "pg-3", "Postgre-SQL")
    entity(services, "java", "Java")
    entity(services, "javascript", "JavaScript")
    entity(services, "ann", "Ann Lee", "person")
    entity(services, "anna", "Anna Lee", "person")
    for memory in memories["pg"]:
        refer(services, "pg-1", memory)
    refer(services, "pg-2", memories["pg"][0])  # shared with the canonical
    refer(services, "pg-3", memories["pg"][1])
    for key, entity_id in (("java", "java"), ("js", "javascript"), ("people", "ann"), ("people", "anna")):
        refer(services, entity_id, memories[key][0])
    return memories


def test_the_entities_task_merges_aliases_reversibly_and_leaves_look_alikes(services, catalogue):
    before = references(services)
    preview = services.engine.run(["entities"], dry_run=True)["result"]["entities"]
    assert preview["merged"] == 2 and references(services) == before  # a dry run writes nothing
    [group] = preview["groups"]
    assert group["canonical_id"] == "pg-1" and {a["id"] for a in group["aliases"]} == {"pg-2", "pg-3"}
    assert all(a["reason"] for a in group["aliases"])

    report = services.engine.run(["entities"])["result"]["entities"]
    assert report["merged"] == 2 and report["entities_processed"] == 7
    assert active_entities(services) == {"pg-1", "java", "javascript", "ann", "anna"}
    pg = set(catalogue["pg"])
    assert {m for e, m in references(services) if e == "pg-1"} == pg
    assert not {e for e, _ in references(services)} & {"pg-2", "pg-3"}
    aliases = services.stores.graph.falkor.records("MATCH (e:Entity {id: 'pg-1'}) RETURN e.aliases")[0][0]
    assert aliases[0] == "pg" and sorted(aliases) == ["pg", "postgre-sql", "postgres"]
    assert services.engine.run(["entities"])["result"]["entities"]["merged"] == 0  # idempotent

    store = EntityStore(services.stores.graph.falkor, services.stores.graph.scoping)
    undone = store.undo("pg-3", "2026-11-26T00:00:00+00:00")
    assert undone["canonical_id"] == "pg-1" and undone["edges_restored"] == 1
    # pg-3's memory was the canonical's before the merge: the canonical keeps it.
    assert ("pg-3", catalogue["pg"][1]) in references(services) and ("pg-1", catalogue["pg"][1]) in references(services)
    assert services.stores.graph.falkor.records("MATCH (e:Entity {id: 'pg-1'}) RETURN e.aliases")[0][0] == \
        ["pg", "postgres"]
    assert store.undo("pg-3", "2026-11-26T00:00:00+00:00") is None
    # Undone is kept apart: the next run does not merge it again.
    assert services.engine.run(["entities"])["result"]["entities"]["merged"] == 0
    store.undo("pg-2", "2026-11-26T00:00:00+00:00")
    assert references(services) == before and active_entities(services) == {e for e, _ in before} | {"pg-3"}


def test_a_merge_interrupted_after_its_record_is_completed_by_the_next_run(services, catalogue):
    store = EntityStore(services.stores.graph.falkor, services.stores.graph.scoping)
    records = store._records([{"canonical_id": "pg-1", "alias_id": "pg-3", "reason": "test"}], None, "now")
    services.stores.graph.falkor.write_chunks("UNWIND $rows AS row CREATE (r:EntityMerge) SET r = row", records)
    assert "pg-3" in active_entities(services)  # the crash: a record, nothing moved yet
    report = services.engine.run(["entities"])["result"]["entities"]
    assert report["interrupted_merges_completed"] == 1
    assert active_entities(services) == {"pg-1", "java", "javascript", "ann", "anna"}


def test_entities_of_two_scopes_never_merge(tmp_path, clock):
    services = build_services(make_settings(tmp_path / "data", consolidation_scope_properties=("user_id",)),
                              clock=clock)
    try:
        entity(services, "a", "PostgreSQL", user_id="alice")
        entity(services, "b", "postgresql", user_id="bob")
        entity(services, "c", "postgres", user_id="alice")
        report = services.engine.run(["entities"])["result"]["entities"]
        assert report["merged"] == 1 and active_entities(services) == {"a", "b"}
    finally:
        services.close()


def test_unmerge_over_http_and_the_merge_list(client, auth, services, catalogue):
    assert client.post("/consolidate", json={"task": "entities", "wait": True}, headers=auth).json["success"]
    page = client.get("/hygiene/entity-merges", headers=auth).json
    assert page["total"] == 2 and {item["alias_id"] for item in page["items"]} == {"pg-2", "pg-3"}
    assert client.post("/entities/pg-2/unmerge", headers=auth).json["canonical_id"] == "pg-1"
    assert client.post("/entities/pg-2/unmerge", headers=auth).status_code == 404
    assert "pg-2" in active_entities(services)


def test_a_run_naming_no_task_leaves_entities_alone(services, catalogue):
    assert "entities" not in services.engine.run(list(__import__("consolidation").DEFAULT_TASKS))["result"]
    assert np.isfinite(len(active_entities(services))) and len(active_entities(services)) == 7
