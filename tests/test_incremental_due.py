"""Incremental decay and forget on the real stores: after time passed and changes of every kind, an incremental
pass reads a few memories and leaves nothing a full pass at the same moment would still do; leave out any one
kind of memory it reads, and the full pass finds work it missed."""

from __future__ import annotations

import math
import time
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from consolidation.revisits import Dues
from consolidation.service import build_services
from consolidation.stores import graph as graph_module
from tests.conftest import NOW, Clock, add_memory, days_ago, link, make_settings

SETTINGS = {"consolidation_score_epsilon": 0.02, "consolidation_archive_threshold": 0.2,
            "consolidation_delete_threshold": 0.05, "consolidation_grace_period_days": 30.0,
            "consolidation_decay_importance_threshold": None}
BETWEEN = timedelta(hours=6)
SETTINGS_INTERVAL = 604800  # CONSOLIDATION_FULL_PASS_INTERVAL_SECONDS, the default


def unused_for(score: float, age: float, factor: float = 0.85) -> float:
    """Days since the last use that give a memory of this age `score` (importance and confidence 0.5 make 0.85;
    a relationship multiplies it by 1 + 0.3 ln 2): score = factor e^(-0.01 age - 0.05 days)."""
    days = (math.log(factor / score) - 0.01 * age) / 0.05
    assert 1 < days <= age
    return days


def aged(services, score: float, age: float, factor: float = 0.85, **fields) -> str:
    return add_memory(services, timestamp=days_ago(age), last_accessed=days_ago(unused_for(score, age, factor)),
                      **fields)


class Scenario:
    def __init__(self, services):
        self.services = services
        self.ids: dict[str, str] = {}

    def build(self):
        s, ids = self.services, self.ids
        rng = np.random.default_rng(3)
        for _ in range(200):  # moving less than epsilon in six hours; a few may cross a forgetting line
            add_memory(s, timestamp=days_ago(float(rng.uniform(35, 80))),
                       last_accessed=days_ago(float(rng.uniform(2, 30))))
        ids["stepping"] = add_memory(s, timestamp=days_ago(10), last_accessed=days_ago(20 / 24))  # a day in 4 h
        ids["crossing"] = aged(s, 0.201, 100)  # below 0.2 within six hours: 0.06 a day of 0.2 is 0.003 in 6 h
        ids["grace"] = aged(s, 0.15, 29.9)  # below 0.2 already; its 30 days of grace end in 2.4 hours
        ids["deleting"] = aged(s, 0.0502, 100, archived=True)  # archived, below 0.05 within six hours
        ids["used"] = aged(s, 0.3, 60)
        ids["a"], ids["b"] = aged(s, 0.4, 50), aged(s, 0.4, 50)
        ids["neighbour"] = aged(s, 0.22, 100, factor=0.85 * (1 + 0.3 * math.log(2)))
        ids["doomed"] = aged(s, 0.4, 40)
        link(s, ids["neighbour"], ids["doomed"])
        ids["lowered"] = aged(s, 0.3, 50)
        return self

    def change(self, clock):
        """Six hours later, a change of each kind the passes must see."""
        s, ids = self.services, self.ids
        clock.advance(hours=BETWEEN.total_seconds() / 3600)
        ids["new"] = add_memory(s, timestamp=clock().isoformat(), last_accessed=clock().isoformat())
        # A use as another program (AutoMem's recall) records it: no change marker, and no new score (a use
        # through this service's API rescores the memory at once).
        s.stores.graph.falkor.execute("MATCH (m:Memory {id: $id}) SET m.last_accessed = $at, "
                                      "m.access_count = coalesce(m.access_count, 0) + 1",
                                      {"id": ids["used"], "at": clock().isoformat()})
        s.stores.graph.create_associations("DISCOVERED", [{"a": ids["a"], "b": ids["b"], "props": {}}])  # touched
        assert s.engine.lifecycle.delete({ids["doomed"]: "test"}, clock()) == 1  # the neighbour loses its edge
        s.stores.graph.upsert_memories([{"id": ids["lowered"], "importance": 0.0}])  # 0.3 -> 0.15: changed
        return self


def run(services, **options):
    result = services.engine.run(["decay", "forget"], **options)
    assert result["success"], result
    return result["result"]


def states(services) -> dict[str, tuple]:
    return {row[0]: tuple(row[1:]) for row in services.stores.graph.falkor.records(
        "MATCH (m:Memory) RETURN m.id, coalesce(m.archived, false), m.relevance_score")}


@pytest.fixture
def scenario(tmp_path):
    clock = Clock()
    services = build_services(make_settings(tmp_path / "data", **SETTINGS), clock=clock)
    try:
        built = Scenario(services).build()
        first = run(services)
        assert [first[t]["pass"] for t in ("decay", "forget")] == ["full", "full"]  # no watermark yet
        # Again: the first pass's own writes (scores crossing the candidate line, archives) are changes too.
        run(services, full=True)
        yield built.change(clock), clock
    finally:
        services.close()


def test_an_incremental_decay_and_forget_leave_what_a_full_pass_leaves(scenario):
    built, _ = scenario
    services, ids = built.services, built.ids
    total = len(states(services))
    fast = run(services)
    assert [fast[t]["pass"] for t in ("decay", "forget")] == ["incremental", "incremental"]
    assert 5 <= fast["decay"]["memories_processed"] < total / 10
    assert 5 <= fast["forget"]["memories_processed"] < total / 10
    after = states(services)
    # What the scenario was built to make happen (from its construction, not from either run):
    archived = {name for name in ("crossing", "grace", "neighbour", "lowered", "stepping") if after[ids[name]][0]}
    assert archived == {"crossing", "grace", "neighbour", "lowered"}
    assert ids["deleting"] not in after and ids["doomed"] not in after
    assert after[ids["used"]][1] == pytest.approx(0.85 * math.exp(-0.6 - 0.0025), rel=1e-3)  # used just now
    assert after[ids["a"]][1] == pytest.approx(0.4 * (1 + 0.3 * math.log(2)) * math.exp(-0.06 * 0.25), rel=1e-3)
    # A full pass at the same moment finds nothing left to do.
    slow = run(services, full=True)
    assert [slow[t]["pass"] for t in ("decay", "forget")] == ["full", "full"]
    assert slow["decay"]["scores_changed"] == 0
    assert (slow["forget"]["archived"], slow["forget"]["deleted"]) == (0, 0)
    assert states(services) == after


def _none(*args):
    return np.zeros(0, np.int64)


@pytest.mark.parametrize("left_out", ["changed", "touched", "used", "due"])
def test_each_kind_of_memory_an_incremental_pass_reads_is_needed(scenario, monkeypatch, left_out):
    built, _ = scenario
    if left_out == "due":
        monkeypatch.setattr(Dues, "due_by", _none)
    elif left_out == "touched":
        monkeypatch.setattr(graph_module.GraphStore, "touched_since", _none)
    else:
        monkeypatch.delitem(graph_module.LOOKUP_READS, left_out)
    fast = run(built.services)
    assert fast["decay"]["pass"] == "incremental"
    monkeypatch.undo()
    slow = run(built.services, full=True)
    assert slow["decay"]["scores_changed"] + slow["forget"]["archived"] + slow["forget"]["deleted"] > 0


def test_a_process_without_due_times_takes_the_full_pass(scenario):
    built, _ = scenario
    built.services.engine.dues.clear()  # as in a process started since, or a replica that did not take the last
    result = run(built.services)
    assert [result[t]["pass"] for t in ("decay", "forget")] == ["full", "full"]
    assert "no due times" in result["decay"]["pass_reason"]
    again = run(built.services)  # the full pass kept them
    assert [again[t]["pass"] for t in ("decay", "forget")] == ["incremental", "incremental"]


def test_when_most_memories_are_due_the_pass_reads_them_all(scenario, monkeypatch):
    from consolidation.tasks import dues

    monkeypatch.setattr(dues, "SEEK_FLOOR", 10)  # the scenario is small
    built, clock = scenario
    clock.advance(days=3)  # every active score (0.2 or more) moved by more than epsilon: 0.06 a day of it
    result = run(built.services)
    assert result["decay"]["pass"] == "full" and "quarter" in result["decay"]["pass_reason"]


def test_every_write_of_the_service_that_adds_or_removes_a_relationship_touches_both_ends(tmp_path):
    """Decay counts relationships, so each end of one the service adds or takes away is read again."""
    # Creative's run at the end must write nothing of its own: these memories, stored at one moment, would be an
    # episode (same_episode links touch both ends too; test_episodes.py).
    services = build_services(make_settings(tmp_path / "data", **SETTINGS, consolidation_creative_kinds="explains"),
                              clock=Clock())
    try:
        graph, hygiene = services.stores.graph, services.engine.lifecycle.hygiene
        falkor = graph.falkor

        ids = {name: add_memory(services, content=f"memory {name}") for name in "abcdefgh"}
        node = {name: falkor.execute("MATCH (m:Memory {id: $id}) RETURN id(m)", {"id": i})[0][0]
                for name, i in ids.items()}
        since = [int(falkor.execute("MATCH (c:ConsolidationControl) RETURN c.change_seq")[0][0])]

        def touched_now() -> set[str]:
            """The memories touched since the last call."""
            found = set(graph.touched_since(since[-1]).tolist())
            since.append(int(falkor.execute("MATCH (c:ConsolidationControl) RETURN c.change_seq")[0][0]))
            return {name for name, n in node.items() if n in found}

        assert touched_now() == set()
        graph.create_associations("DISCOVERED", [{"a": ids["a"], "b": ids["b"], "props": {}}])
        hygiene.supersede([{"newer": ids["c"], "older": ids["d"], "confidence": 0.9, "reason": "test"}],
                          NOW.isoformat())
        hygiene.contradict([{"a": ids["e"], "b": ids["f"], "confidence": 0.9, "reason": "test"}], NOW.isoformat())
        assert touched_now() == {"a", "b", "c", "e", "f"}  # d is superseded: a change, not only a touch
        # A MetaPattern's members: touched when it takes them, and again when it lets them go.
        graph.save_meta_patterns([{"id": "pattern", "props": {"type": "MetaPattern", "content": "p"}}],
                                 added=[("pattern", ids["g"]), ("pattern", ids["h"])], removed=[])
        assert touched_now() == {"g", "h"}
        graph.save_meta_patterns([], added=[], removed=[("pattern", ids["g"])])
        assert touched_now() == {"g"}
        graph.retire_meta_patterns(["pattern"], NOW.isoformat())
        assert touched_now() == {"h"}
        # A deletion touches the neighbours and the node it deletes; restoring it touches them again.
        assert services.engine.lifecycle.delete({ids["a"]: "test"}, NOW) == 1
        assert touched_now() == {"a", "b"}
        services.memories.restore(ids["a"])
        assert "b" in touched_now()
        # A real run lets go of touches older than the full-pass interval and a day (by FalkorDB's clock).
        assert graph.touched_since(0).size > 0
        week = timedelta(seconds=SETTINGS_INTERVAL)
        later = Clock(datetime.fromtimestamp(time.time(), UTC) + week + timedelta(days=1, minutes=1))
        services.engine.clock = later
        services.engine.run(["creative"])
        assert graph.touched_since(0).size == 0
    finally:
        services.close()
