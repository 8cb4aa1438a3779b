"""What AutoMem reads from a store we consolidated, on the real stores (both Qdrant backends where the payload is
what matters): a vector hit's payload carries the t_invalid a supersession set (AutoMem's recall filters vector
hits on the payload alone), a memory no longer current keeps a relevance_score AutoMem's creative and cluster
passes leave out, and a point AutoMem archived (`archived: true`, no `state`) stays out of a current recall.

AutoMem's readers are replayed from its source (verygoodplugins/automem): `_vector_search` drops a payload whose
`archived` is truthy and `_state_reason_for_memory` one expired (t_invalid at or before now, an ISO string or
epoch seconds) or not yet valid (automem/api/recall.py, search/runtime_recall_helpers.py); the creative and
cluster passes select `MATCH (m:Memory) WHERE m.relevance_score > 0.3` (consolidation.py)."""

from __future__ import annotations

import math
from datetime import UTC, datetime

import numpy as np
import pytest

from consolidation.scoring import CANDIDATE_RELEVANCE, NOT_CURRENT_RELEVANCE, ScoringInputs, as_stored, \
    stored_relevance
from consolidation.service import build_services
from consolidation.stores.vector_index import Marks
from consolidation.stores.vectors import SearchFilter, VectorPoint
from tests.conftest import NOW, add_memory, axis, days_ago, make_settings, unit, vector_at
from tests.qdrant_rest import QdrantRestServer

# AutoMem's ConsolidationScheduler defaults (consolidation.py): archive below 0.2, delete below 0.05.
AUTOMEM_ARCHIVE, AUTOMEM_DELETE = 0.2, 0.05
AUTOMEM_SELECTION = "MATCH (m:Memory) WHERE m.relevance_score > 0.3 RETURN m.id"
CURRENT = SearchFilter(without_states=("archived", "merged"), without_superseded=True)
BASE, OTHER = axis(0), axis(1)
NEAR = vector_at(0.97, BASE, OTHER)


def automem_time(value) -> datetime | None:
    """AutoMem's _parse_iso_datetime: ISO strings or epoch seconds, naive as UTC."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return datetime.fromtimestamp(value, tz=UTC)
    if not isinstance(value, str) or not value.strip():
        return None
    parsed = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def automem_vector_recall(services, vector, now: datetime) -> list[str]:
    """The vector hits AutoMem's current-state recall keeps, judged on the payload as it judges them."""
    kept = []
    for hit in services.stores.vectors.search(unit(vector), 50, SearchFilter(without_types=("MetaPattern",))):
        payload = hit.payload
        if payload.get("archived"):
            continue
        t_valid, t_invalid = automem_time(payload.get("t_valid")), automem_time(payload.get("t_invalid"))
        if (t_valid is not None and t_valid > now) or (t_invalid is not None and t_invalid <= now):
            continue
        kept.append(hit.id)
    return kept


def automem_selects(services) -> set[str]:
    return {row[0] for row in services.stores.graph.falkor.execute(AUTOMEM_SELECTION, read_only=True)}


def scores(services, memory_id: str) -> tuple[float, float]:
    """(graph, payload) relevance_score of one memory."""
    return (services.stores.graph.get_memory(memory_id)["relevance_score"],
            services.stores.vectors.payloads([memory_id])[memory_id]["relevance_score"])


@pytest.fixture(params=["edge", "server"])
def both(request, tmp_path, clock):
    """Services on the embedded Qdrant, or on a Qdrant server (the REST shim) as AutoMem shares it."""
    server = QdrantRestServer().start() if request.param == "server" else None
    overrides = {"qdrant_url": server.url} if server else {}
    services = build_services(make_settings(tmp_path / "data", **overrides), clock=clock)
    yield services
    services.close()
    if server:
        server.stop()


# --- the cap, by hand -------------------------------------------------------------------------------------------

def test_the_cap_sits_below_automems_selection_and_above_its_forgetting_thresholds():
    assert AUTOMEM_ARCHIVE < NOT_CURRENT_RELEVANCE < CANDIDATE_RELEVANCE == 0.3
    assert AUTOMEM_DELETE < NOT_CURRENT_RELEVANCE
    relevance = np.array([0.9, 0.9, 0.28, 0.1, 0.25])
    current = np.array([True, False, False, False, False])
    # Current: as computed; not current: min(score, 0.25), so a lower score is never lifted.
    assert as_stored(relevance, current).tolist() == [0.9, 0.25, 0.25, 0.1, 0.25]


def test_decay_keeps_a_superseded_memory_capped_and_a_current_one_as_the_formula_gives():
    created = NOW.timestamp() - 10 * 86400
    inputs = ScoringInputs(
        ids=["current", "superseded", "long superseded"], node_ids=np.zeros(3, np.int64),
        created=np.array([created, created, NOW.timestamp() - 100 * 86400]),
        last_accessed=np.array([NOW.timestamp()] * 3), importance=np.full(3, 0.5), confidence=np.full(3, 0.5),
        relevance=np.full(3, np.nan), relationship_counts=np.zeros(3),
        superseded=np.array([False, True, True]), current=np.array([True, False, False]))
    # relevance = e^(-0.01 age) * access * 1 * (0.5 + 0.5) * (0.7 + 0.3 * 0.5); a superseded memory's access
    # counts from its creation: e^(-0.05 age).
    current = math.exp(-0.1) * 0.85  # 0.769
    superseded = math.exp(-0.1) * math.exp(-0.5) * 0.85  # 0.466: above the cap
    long_superseded = math.exp(-1.0) * math.exp(-5.0) * 0.85  # 0.0021: below it, kept
    assert stored_relevance(inputs, NOW).tolist() == pytest.approx([current, 0.25, long_superseded])
    assert superseded > NOT_CURRENT_RELEVANCE


# --- item 1: t_invalid in the payload ---------------------------------------------------------------------------

def test_a_supersession_on_request_expires_the_payload_for_automem_and_undo_restores_it(both, clock, client_for):
    client = client_for(both)
    older = add_memory(both, vector=BASE, content="Production deploys happen on Tuesday", timestamp=days_ago(3),
                       last_accessed=NOW.isoformat(), relevance_score=0.9)
    answer = client.post(f"/memory/{older}/supersede", headers=client.auth, json={
        "content": "Production deploys moved to Thursday", "timestamp": days_ago(2),
        "embedding": [float(x) for x in NEAR]})
    assert answer.status_code == 200, answer.get_json()
    newer = answer.get_json()["superseded_by"]
    ended = both.stores.graph.get_memory(older)["t_invalid"]
    assert ended == days_ago(2)  # from the newer memory's time
    assert both.stores.vectors.payloads([older])[older]["t_invalid"] == ended
    assert automem_vector_recall(both, BASE, clock()) == [newer]
    # No longer current: out of AutoMem's creative and cluster selection, in the graph and the payload alike (the
    # formula gives e^-0.03 * e^-0.15 * (1 + 0.3 ln 3) * 0.85 = 0.94: two edges, uses no longer counted).
    assert scores(both, older) == (NOT_CURRENT_RELEVANCE, NOT_CURRENT_RELEVANCE)
    assert older not in automem_selects(both)

    assert client.post(f"/memory/{older}/supersede/undo", headers=client.auth).status_code == 200
    assert both.stores.vectors.payloads([older])[older].get("t_invalid") is None
    assert automem_vector_recall(both, BASE, clock()) == [older]
    # Current again: the formula's score, used now (3 days old, no edges left): e^-0.03 * 1 * 1 * 1 * 0.85.
    graph_score, payload_score = scores(both, older)
    assert graph_score == pytest.approx(math.exp(-0.03) * 0.85) and payload_score == pytest.approx(graph_score)
    assert older in automem_selects(both)


def test_a_clients_own_validity_end_stays_in_the_payload_after_an_undo(both, client_for):
    client = client_for(both)
    ends = "2026-12-31T00:00:00+00:00"  # after NOW: still valid
    older = add_memory(both, vector=BASE, content="The office is in Vienna", t_invalid=ends)
    answer = client.post(f"/memory/{older}/supersede", headers=client.auth, json={
        "content": "The office moved to Oslo", "embedding": [float(x) for x in NEAR]})
    assert answer.status_code == 200
    assert both.stores.vectors.payloads([older])[older]["t_invalid"] == ends
    client.post(f"/memory/{older}/supersede/undo", headers=client.auth)
    assert both.stores.vectors.payloads([older])[older]["t_invalid"] == ends


def test_an_update_a_run_detects_expires_the_payload_for_automem(both, clock):
    old = add_memory(both, vector=BASE, content="Production deploys happen on Tuesday", type="Context",
                     timestamp=days_ago(3), last_accessed=NOW.isoformat())
    new = add_memory(both, vector=vector_at(0.8, BASE, OTHER), type="Context", timestamp=days_ago(2),
                     content="Production deploys moved from Tuesday to Thursday", last_accessed=NOW.isoformat())
    assert automem_vector_recall(both, BASE, clock()) == [old, new]
    report = both.engine.run(["dedup"])["result"]["dedup"]
    assert [(s["newer"], s["older"]) for s in report["supersessions"]] == [(new, old)]
    assert both.stores.vectors.payloads([old])[old]["t_invalid"] == days_ago(2)
    assert automem_vector_recall(both, BASE, clock()) == [new]
    assert scores(both, old) == (NOT_CURRENT_RELEVANCE, NOT_CURRENT_RELEVANCE)
    # A full decay pass keeps it capped: a superseded memory's score never climbs back above the cap.
    both.engine.run(["decay"])
    assert scores(both, old) == (NOT_CURRENT_RELEVANCE, NOT_CURRENT_RELEVANCE)
    assert automem_selects(both) == {new}


def test_a_repair_brings_supersessions_made_before_into_the_payload(both, clock, client_for):
    older = add_memory(both, vector=BASE, content="The office is in Vienna", timestamp=days_ago(3))
    newer = add_memory(both, vector=NEAR, content="The office moved to Oslo", timestamp=days_ago(2))
    # As an earlier version left it: the graph superseded, the payload and the score as if current.
    both.stores.graph.falkor.execute(
        "MATCH (o:Memory {id: $older}) SET o.superseded_by = $newer, o.t_invalid = $at, "
        "o.t_invalid_set_by = 'consolidation', o.relevance_score = 0.9", {"older": older, "newer": newer,
                                                                           "at": days_ago(2)})
    assert automem_vector_recall(both, BASE, clock()) == [older, newer]
    client = client_for(both)
    assert client.post("/reconcile", headers=client.auth, json={"repair": True}).status_code == 200
    assert both.stores.vectors.payloads([older])[older]["t_invalid"] == days_ago(2)
    assert automem_vector_recall(both, BASE, clock()) == [newer]
    assert scores(both, older) == (NOT_CURRENT_RELEVANCE, NOT_CURRENT_RELEVANCE)


# --- item 3: merged and archived memories stop looking alive ----------------------------------------------------

def test_a_merged_duplicate_leaves_automems_selection_and_comes_back_with_a_restore(services, client_for):
    first = add_memory(services, vector=BASE, content="Decided to use PostgreSQL for the billing database",
                       type="Decision", relevance_score=1.0)
    second = add_memory(services, vector=NEAR, content="we chose postgresql for the billing database!",
                        type="Decision", relevance_score=1.0)
    report = services.engine.run(["dedup"])["result"]["dedup"]
    (merge,) = report["merges"]
    duplicate = merge["duplicates"][0]
    assert scores(services, duplicate) == (NOT_CURRENT_RELEVANCE, NOT_CURRENT_RELEVANCE)
    assert automem_selects(services) == {merge["into"]} and {first, second} == {duplicate, merge["into"]}
    services.engine.run(["decay"])  # decay leaves archived memories alone: still capped
    assert scores(services, duplicate) == (NOT_CURRENT_RELEVANCE, NOT_CURRENT_RELEVANCE)

    client = client_for(services)
    assert client.post(f"/memory/{duplicate}/restore", headers=client.auth).status_code == 200
    # Current again, rescored by the formula: made and used now, no edges, importance and confidence 0.5.
    graph_score, payload_score = scores(services, duplicate)
    assert graph_score == pytest.approx(0.85) and payload_score == pytest.approx(0.85)
    assert duplicate in automem_selects(services)


def test_decay_caps_again_what_automems_own_passes_lifted(services, clock):
    """AutoMem's forget rescores every memory, merged ones too (the contract check saw a merged duplicate at
    0.65 after it). Our next decay caps it again: a full pass always looks, an incremental one while AutoMem's
    consolidation has run within a week (its run record says so)."""
    add_memory(services, vector=BASE, content="Decided to use PostgreSQL for the billing database",
               type="Decision", relevance_score=1.0)
    add_memory(services, vector=NEAR, content="we chose postgresql for the billing database!",
               type="Decision", relevance_score=1.0)
    (merge,) = services.engine.run(["dedup"])["result"]["dedup"]["merges"]
    duplicate = merge["duplicates"][0]
    falkor = services.stores.graph.falkor

    def automem_rescores() -> None:  # as AutoMem's forget writes a score: the graph only, no change marker
        falkor.execute("MATCH (m:Memory {id: $id}) SET m.relevance_score = 0.65", {"id": duplicate})

    services.engine.run(["decay"])  # the first decay is a full pass
    automem_rescores()
    assert services.engine.run(["decay"])["result"]["decay"]["capped_again"] == 0  # incremental, no AutoMem run
    assert scores(services, duplicate)[0] == 0.65
    assert services.engine.run(["decay"], full=True)["result"]["decay"]["capped_again"] == 1
    assert scores(services, duplicate) == (NOT_CURRENT_RELEVANCE, NOT_CURRENT_RELEVANCE)

    automem_rescores()
    falkor.execute("CREATE (:ConsolidationRun {mode: 'forget', started_at: $at, dry_run: false})",
                   {"at": clock.now.isoformat()})
    assert services.engine.run(["decay"])["result"]["decay"]["capped_again"] == 1
    assert scores(services, duplicate) == (NOT_CURRENT_RELEVANCE, NOT_CURRENT_RELEVANCE)
    assert automem_selects(services) == {merge["into"]}


def test_a_memory_forget_archives_keeps_a_capped_score_through_later_passes(tmp_path, clock):
    settings = make_settings(tmp_path / "data", consolidation_archive_threshold=0.6,
                             consolidation_grace_period_days=0)
    services = build_services(settings, clock=clock)
    try:
        # e^-0.2 * e^-0.1 * 1 * (0.5 + 0.3) * (0.7 + 0.3 * 0.5) = 0.504: above the cap, under the threshold.
        assert math.exp(-0.3) * 0.8 * 0.85 == pytest.approx(0.5037, abs=1e-4)
        old = add_memory(services, content="an old note", importance=0.3, timestamp=days_ago(20),
                         last_accessed=days_ago(2), relevance_score=0.9)
        assert services.engine.run(["forget"])["result"]["forget"]["archived"] == 1
        assert services.stores.graph.get_memory(old)["archived"] is True
        assert scores(services, old) == (NOT_CURRENT_RELEVANCE, NOT_CURRENT_RELEVANCE)
        clock.advance(days=1)
        services.engine.run(["decay", "forget"])
        assert scores(services, old) == (NOT_CURRENT_RELEVANCE, NOT_CURRENT_RELEVANCE)
        assert automem_selects(services) == set()
    finally:
        services.close()


def test_an_archived_memory_imported_keeps_a_capped_score(client, auth, services):
    line = ('{"id": "0d4f1f8e-3f0b-4c59-9a43-52a1d0f1c0aa", "content": "an archived note", "archived": true, '
            '"relevance_score": 0.9, "embedding": %s}' % [float(x) for x in BASE])
    assert client.post("/memory/import", data=line, headers=auth).status_code == 200
    assert scores(services, "0d4f1f8e-3f0b-4c59-9a43-52a1d0f1c0aa") == (NOT_CURRENT_RELEVANCE, NOT_CURRENT_RELEVANCE)


# --- item 6: points AutoMem wrote carry no state ----------------------------------------------------------------

def automem_payload(archived: bool) -> dict:
    """A payload as AutoMem writes it (POST /memory, then its forget's set_payload): no state, scope or
    superseded mark."""
    return {"content": "a note AutoMem stored", "tags": [], "importance": 0.5, "timestamp": NOW.isoformat(),
            "type": "Context", "confidence": 0.5, "t_valid": NOW.isoformat(), "t_invalid": None,
            **({"archived": True, "relevance_score": 0.1} if archived else {})}


def test_a_point_automem_archived_is_left_out_of_a_current_search(both, client_for):
    archived = add_memory(both, vector=BASE, archived=True)
    alive = add_memory(both, vector=NEAR)
    both.stores.vectors.upsert([VectorPoint(archived, unit(BASE), automem_payload(archived=True)),
                                VectorPoint(alive, unit(NEAR), automem_payload(archived=False))])
    assert [h.id for h in both.stores.vectors.search(unit(BASE), 10, CURRENT)] == [alive]
    assert [h.id for h in both.stores.vectors.search(unit(BASE), 10, SearchFilter())] == [archived, alive]
    client = client_for(both)
    for state, expected in (("current", [alive]), ("history", [archived, alive])):
        answer = client.post("/recall", headers=client.auth,
                             json={"embedding": [float(x) for x in BASE], "k": 5, "state": state})
        assert [r["id"] for r in answer.get_json()["results"]] == expected


def test_the_recall_index_reads_a_point_without_state_as_archived_when_its_payload_says_so():
    marks = Marks()
    marks.grow(4)
    labels = np.arange(4)
    marks.set(labels, [automem_payload(archived=True), automem_payload(archived=False),
                       {"state": "active", "archived": True}, {"state": "merged", "archived": True}])
    marks.alive[labels] = True
    # A state, when there is one, is what the point is (ours: `archived` mirrors it); without: `archived`.
    assert marks.allowed(CURRENT, labels).tolist() == [False, True, True, False]
    assert marks.allowed(SearchFilter(), labels).tolist() == [True, True, True, True]
