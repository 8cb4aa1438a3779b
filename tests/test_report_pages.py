"""Report lists page to their last item past what a run record keeps, within CONSOLIDATION_REPORT_KEPT_BYTES."""

from consolidation.stores.report_pages import ITEMS_PER_NODE, PAGE_LABEL
from tests.conftest import add_memories, days_ago

RECORD_LISTS = 100  # CONSOLIDATION_REPORT_LIMIT's default: the items of each list a run record keeps
DECIDED, PROTECTED, KEPT = 151, 117, 9  # more decisions and protections than a record lists


def planted(services) -> dict[str, list[str]]:
    """Memories whose fate forget decides: 400 days old and unused (relevance about 0), some of a protected type,
    and a few fresh ones it keeps."""
    old = {"timestamp": days_ago(400), "last_accessed": days_ago(400), "importance": 0.3}
    return {"decided": add_memories(services, DECIDED, content="stale note", **old),
            "protected": add_memories(services, PROTECTED, content="old decision", type="Decision", **old),
            "kept": add_memories(services, KEPT, content="fresh note", timestamp=days_ago(1),
                                 last_accessed=days_ago(1))}


def page_through(client, run_id: str, name: str, size: int) -> tuple[list[dict], dict, dict]:
    """Every item of one list of the run's forget report, a page of `size` at a time; the last page's listing and
    the texts of every page."""
    items, texts, offset = [], {}, 0
    while True:
        page = client.get(f"/consolidate/runs/{run_id}/report", query_string={
            "task": "forget", "limit": size, "offset": offset}, headers=client.auth)
        assert page.status_code == 200, page.json
        listed = page.json["lists"][name]
        items += listed["items"]
        texts.update(page.json["texts"])
        offset += size
        if offset >= listed["kept"]:
            return items, listed, texts


def test_a_forget_report_pages_past_what_its_record_keeps_to_its_last_decision(forgetful, client_for):
    ids = planted(forgetful)
    client = client_for(forgetful)
    ran = client.post("/consolidate", json={"task": "forget", "wait": True}, headers=client.auth).json
    record = client.get(f"/consolidate/runs/{ran['run_id']}", headers=client.auth).json["result"]["forget"]
    assert len(record["decisions"]) == RECORD_LISTS and record["decisions_total"] == DECIDED

    # The case: 151 decisions, offset 120 answers the last 31.
    tail = client.get(f"/consolidate/runs/{ran['run_id']}/report", query_string={
        "task": "forget", "limit": 50, "offset": 120}, headers=client.auth).json["lists"]["decisions"]
    assert (len(tail["items"]), tail["total"], tail["kept"]) == (DECIDED - 120, DECIDED, DECIDED)

    for size in (50, 7, 500):
        items, listed, texts = page_through(client, ran["run_id"], "decisions", size)
        assert [item["memory_id"] for item in items][:RECORD_LISTS] == [d["memory_id"] for d in record["decisions"]]
        assert sorted(item["memory_id"] for item in items) == sorted(ids["decided"])
        assert listed["total"] == listed["kept"] == DECIDED
    # The last decision's text, read when its page is opened (its memory's, or its tombstone's if deleted).
    last = items[-1]["memory_id"]
    assert texts[last] == f"stale note {ids['decided'].index(last)}"
    protections, listed, _ = page_through(client, ran["run_id"], "protections", 50)
    assert sorted(item["memory_id"] for item in protections) == sorted(ids["protected"])


def test_the_forget_preview_pages_to_its_end_and_writes_nothing(forgetful, client_for):
    ids = planted(forgetful)
    client = client_for(forgetful)
    preview = client.post("/consolidate", json={"task": "forget", "dry_run": True, "wait": True},
                          headers=client.auth).json
    assert preview["dry_run"] is True and preview["state"] == "succeeded"
    decisions, _, _ = page_through(client, preview["run_id"], "decisions", 40)
    protections, _, _ = page_through(client, preview["run_id"], "protections", 40)
    assert len(decisions) == DECIDED and {d["memory_id"] for d in decisions} == set(ids["decided"])
    assert len(protections) == PROTECTED and {p["memory_id"] for p in protections} == set(ids["protected"])
    assert all("type Decision is protected" in p["reason"] for p in protections)
    assert not set(ids["kept"]) & {item["memory_id"] for item in decisions + protections}
    graph = forgetful.stores.graph
    assert all(not graph.get_memory(memory_id)["archived"] for memory_id in ids["decided"])


def kept_bytes(services, run_id: str) -> int:
    return int(services.stores.graph.falkor.records(
        f"MATCH (p:{PAGE_LABEL} {{run_id: $run}}) RETURN sum(p.bytes)", {"run": run_id})[0][0])


def test_older_runs_give_up_their_lists_beyond_the_bound_and_page_through_their_records(forgetful, client_for,
                                                                                         clock):
    planted(forgetful)
    client = client_for(forgetful)
    older = forgetful.engine.run(["forget"], dry_run=True)
    clock.advance(minutes=5)
    newer = forgetful.engine.run(["forget"], dry_run=True)
    forgetful.engine.pages.prune(kept_bytes(forgetful, newer["run_id"]))  # room for the newest run's lists alone

    def decisions(run, offset):
        return client.get(f"/consolidate/runs/{run['run_id']}/report", query_string={
            "task": "forget", "limit": 50, "offset": offset}, headers=client.auth).json["lists"]["decisions"]

    assert kept_bytes(forgetful, older["run_id"]) == 0
    assert (decisions(older, 50)["kept"], len(decisions(older, 50)["items"]), decisions(older, 120)["items"]) == (
        RECORD_LISTS, 50, [])  # what its record keeps, and no further
    assert decisions(older, 0)["total"] == DECIDED
    assert (decisions(newer, 120)["kept"], len(decisions(newer, 120)["items"])) == (DECIDED, DECIDED - 120)
    # The lists of a run no longer kept go with it.
    forgetful.stores.graph.falkor.execute("MATCH (r:ConsolidationServiceRun {id: $id}) DELETE r",
                                           {"id": newer["run_id"]})
    forgetful.engine.pages.prune(10**9)
    assert kept_bytes(forgetful, newer["run_id"]) == 0


def test_a_run_keeps_its_first_whole_chunks_within_what_it_may_keep(forgetful):
    pages = forgetful.engine.pages
    items = [{"memory_id": f"m{i}", "reason": "x" * (i % 7)} for i in range(ITEMS_PER_NODE * 2 + 500)]
    first_two = pages.save("probe", "forget", {"decisions": items[:2 * ITEMS_PER_NODE]}, 10**9)
    pages.prune(10**9)  # a run without a record: its lists go
    assert pages.read("probe", "forget", 10, 0) == {}
    kept = pages.save("run", "forget", {"decisions": items, "protections": items[:5]}, first_two + 100)
    assert kept == first_two  # the third chunk would go beyond; the lists after it keep nothing
    count, page = pages.read("run", "forget", 500, 2 * ITEMS_PER_NODE - 100)["decisions"]
    assert count == 2 * ITEMS_PER_NODE and page == items[2 * ITEMS_PER_NODE - 100:2 * ITEMS_PER_NODE]
    across = pages.read("run", "forget", 3, ITEMS_PER_NODE - 1)["decisions"][1]  # the end of one chunk, and the next
    assert across == items[ITEMS_PER_NODE - 1:ITEMS_PER_NODE + 2]
