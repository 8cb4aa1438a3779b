"""Writes sized by time, the highest node id without a full scan, and status in one round trip."""

import pytest

from consolidation.stores import falkor as falkor_module
from consolidation.stores.falkor import WritePace

from conftest import add_memories


def test_a_write_pace_aims_at_the_target_time_of_whether_anyone_waits(monkeypatch):
    monkeypatch.setattr(falkor_module, "WRITE_TARGET_SECONDS", 0.01)
    monkeypatch.setattr(falkor_module, "IDLE_WRITE_SECONDS", 0.2)
    monkeypatch.setattr(falkor_module, "IDLE_CHUNK_FACTOR", 10)
    pace = WritePace(500)
    assert pace.next_rows(True) == pace.next_rows(False) == 500  # nothing measured yet: the largest short chunk
    pace.took(500, 0.025)  # 20,000 rows/s
    assert pace.next_rows(True) == 200  # 10 ms of them, however far below the last write
    assert pace.next_rows(False) == 1000  # 200 ms would be 4,000 rows, but never more than double the last
    pace.took(1000, 0.05)
    assert pace.next_rows(False) == 2000
    pace.took(2000, 0.1)
    assert pace.next_rows(False) == 4000  # 200 ms at 20,000 rows/s
    pace.took(4000, 0.001)  # 4M rows/s
    assert pace.next_rows(False) == 5000  # at most ten times the largest short chunk
    assert pace.next_rows(True) == 500
    slow = WritePace(500)
    slow.took(500, 10.0)  # slower than either target at any size: WRITE_FEWEST_ROWS at a time
    assert slow.next_rows(True) == slow.next_rows(False) == falkor_module.WRITE_FEWEST_ROWS


def test_paced_writes_write_every_row_once_in_order(services, monkeypatch):
    falkor = services.stores.graph.falkor
    monkeypatch.setattr(falkor_module, "WRITE_TARGET_SECONDS", 1e-6)  # every write is slow: chunks shrink
    monkeypatch.setattr(falkor_module, "IDLE_WRITE_SECONDS", 1e-6)
    rows = list(range(137))
    falkor.write_chunks("UNWIND $rows AS row CREATE (:Paced {n: row})", rows, chunk=50)
    pace = falkor._paces[("UNWIND $rows AS row CREATE (:Paced {n: row})", 50)]
    assert pace.next_rows(False) == falkor_module.WRITE_FEWEST_ROWS  # 50, then 20 at a time
    written = [int(row[0]) for row in falkor.execute("MATCH (p:Paced) RETURN p.n ORDER BY p.n")]
    assert written == rows


def test_write_pages_set_every_memory_with_pages_of_any_size(services, monkeypatch):
    ids = add_memories(services, 45)
    falkor = services.stores.graph.falkor
    monkeypatch.setattr(falkor_module, "WRITE_CHUNK", 8)
    monkeypatch.setattr(falkor_module, "WRITE_TARGET_SECONDS", 1e-6)
    monkeypatch.setattr(falkor_module, "IDLE_WRITE_SECONDS", 1e-6)
    monkeypatch.setattr(falkor_module, "WRITE_FEWEST_ROWS", 3)
    assert falkor.write_pages("", "true", "m.paced = true") == 45
    marked = {row[0] for row in falkor.execute("MATCH (m:Memory) WHERE m.paced = true RETURN m.id")}
    assert marked == set(ids)


def test_the_highest_node_id_is_found_above_other_labels(services):
    falkor = services.stores.graph.falkor
    assert falkor.highest_node_id() is None  # no memory yet
    falkor.execute("UNWIND range(1, 30) AS n CREATE (:Other {n: n})")  # low ids taken by another label
    add_memories(services, 12)
    falkor.execute("UNWIND range(1, 5) AS n CREATE (:Other {n: n})")
    expected = int(falkor.execute("MATCH (m:Memory) RETURN max(id(m))")[0][0])
    assert falkor.highest_node_id() == expected
    assert falkor.highest_node_id("Other") == int(falkor.execute("MATCH (o:Other) RETURN max(id(o))")[0][0])
    falkor.execute("MATCH (o:Other) WHERE o.n <= 10 DELETE o")  # freed ids below the memories
    assert falkor.highest_node_id("Other") == int(falkor.execute("MATCH (o:Other) RETURN max(id(o))")[0][0])
    assert len(falkor.scan_memories("true", "m.id")[0]) == 12


def test_a_scan_reads_every_memory_however_many_other_nodes_lie_between_and_above(services, monkeypatch):
    """Each memory has a FactTerms node beside it and other nodes lie between and far above the memories: the
    highest memory id is still found (the search near the top widens), and the pages cover every memory."""
    falkor = services.stores.graph.falkor
    monkeypatch.setattr(falkor_module, "TOP_SEARCH_IDS", 4)
    ids = []
    for _ in range(4):
        ids += add_memories(services, 5)
        falkor.execute("UNWIND range(1, 10) AS n CREATE (:Other {n: n})")
    falkor.execute("UNWIND range(1, 100) AS n CREATE (:Other {n: n})")  # 100 ids above the last memory
    highest = int(falkor.execute("MATCH (m:Memory) RETURN max(id(m))")[0][0])

    assert falkor.highest_node_id() == highest
    pages = list(falkor._id_ranges(5))
    assert highest >= 3 * 20 and len(pages) == highest // 5 + 1  # ids 0..highest, 5 a page
    assert pages[0]["first"] == 0 and pages[-1]["after"] > highest
    assert sorted(falkor.scan_memories("true", "m.id")[0]) == sorted(ids)
    # Memories deleted between the count and the search (a count of 999 read, 20 there): still found, no loop.
    real = falkor.execute
    monkeypatch.setattr(falkor, "execute", lambda cypher, *args, **kwargs: [[999]] if cypher.startswith(
        "MATCH (n:Memory) RETURN count(n)") else real(cypher, *args, **kwargs))
    assert falkor.highest_node_id() == highest


def test_status_reads_its_graph_in_one_round_trip(services, monkeypatch):
    add_memories(services, 7)
    services.engine.run(["decay"])
    falkor = services.stores.graph.falkor
    asked = []
    real = falkor.execute, falkor.records
    monkeypatch.setattr(falkor, "execute", lambda *a, **k: asked.append(a[0]) or real[0](*a, **k))
    monkeypatch.setattr(falkor, "records", lambda *a, **k: asked.append(a[0]) or real[1](*a, **k))
    status = services.engine.status()
    assert len(asked) == 1
    assert status["store_counts"] == {"graph_memories": 7, "vector_points": 7, "in_sync": True, "difference": 0}
    assert status["last_decay"] is not None and status["current_run"] is None


def test_status_of_a_graph_never_consolidated(services):
    status = services.engine.status()
    assert status["store_counts"]["graph_memories"] == 0 and status["lease"] is None
    assert status["history"] == [] and status["current_run"] is None


@pytest.mark.parametrize("age", [0.0, 30.0])
def test_the_workers_list_is_read_again_only_when_older_than_asked(services, age):
    queue = services.run_queue()
    queue.beat("first", {"holder": "first"}, 30)
    assert [w["holder"] for w in queue.workers(max_age_seconds=age)] == ["first"]
    queue.beat("second", {"holder": "second"}, 30)
    seen = [w["holder"] for w in queue.workers(max_age_seconds=age)]
    assert seen == (["first"] if age else ["first", "second"])
    assert [w["holder"] for w in queue.workers()] == ["first", "second"]
    queue.leave("first")
    queue.leave("second")
