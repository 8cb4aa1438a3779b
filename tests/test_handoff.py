"""One read of every memory for decay and forget in a run: forget judges decay's read at once and reads only what
that judgement leaves to it, and what moved since (tasks/handoff.py), on the real stores."""

import math
import uuid
from datetime import timedelta

import numpy as np
import pytest

from consolidation.revisits import USE_MARGIN
from consolidation.service import build_services
from consolidation.stores.graph import GraphStore
from consolidation.tasks import TASKS
from consolidation.tasks.handoff import Handoff, Prejudged, handed_over
from consolidation.timeutil import to_iso
from tests.conftest import NOW, add_memory, days_ago, link, make_settings


def judged():
    return Prejudged(node_ids=np.array([1, 2, 5, 8]), due=np.array([10.0, 20.0, 50.0, 80.0]), asked=np.array([3]),
                     change=7, taken_at=NOW, until=NOW + timedelta(hours=1))


def test_the_memories_read_again_leave_the_judgement_made_from_decays_read():
    node_ids, due = judged().besides(np.array([3, 5, 9, 1]))
    assert node_ids.tolist() == [2, 8] and due.tolist() == [20.0, 80.0]


def test_forget_reads_again_what_was_asked_and_whatever_moved_after_decays_read():
    lookup = judged().lookup()
    assert lookup.since == 7 and lookup.node_ids.tolist() == [3]
    assert lookup.used_since == to_iso(NOW - USE_MARGIN)


def test_a_judgement_holds_until_its_time_and_is_taken_once():
    handoff = Handoff(judge=lambda ctx, inputs, merged: judged())
    handoff.keep(None, None, None)
    assert handoff.take(NOW + timedelta(minutes=59)) is not None
    assert handoff.take(NOW) is None  # taken already
    handoff.keep(None, None, None)
    assert handoff.take(NOW + timedelta(hours=1, seconds=1)) is None


@pytest.mark.parametrize("tasks, expected", [
    (["decay", "forget"], True), (["decay", "dedup", "cluster", "forget"], True), (["forget", "decay"], False),
    (["decay"], False), (["forget"], False)])
def test_a_run_hands_decays_read_on_only_to_a_later_forget(tasks, expected):
    assert handed_over(tasks) is expected


def old(**fields):
    return {"timestamp": days_ago(400), "last_accessed": days_ago(400), "importance": 0.3, **fields}


@pytest.fixture
def between(monkeypatch):
    """Run `act(services)` between decay and forget (in creative's turn); count decay's reads handed on and
    forget's reads of every memory."""
    reads = {"handed on": 0, "forget alone": 0}
    handing, alone = GraphStore.scoring_inputs_and_merged, GraphStore.forget_inputs

    def counted_handing(self, *args):
        reads["handed on"] += 1
        return handing(self, *args)

    def counted_alone(self, lookup=None):
        reads["forget alone"] += lookup is None
        return alone(self, lookup)

    monkeypatch.setattr(GraphStore, "scoring_inputs_and_merged", counted_handing)
    monkeypatch.setattr(GraphStore, "forget_inputs", counted_alone)

    def run(services, act):
        creative = TASKS["creative"]

        def acting_first(ctx, dry_run):
            act(services)
            return creative(ctx, dry_run)

        monkeypatch.setitem(TASKS, "creative", acting_first)
        return services.engine.run(["decay", "creative", "forget"], full=True)["result"]

    run.reads = reads
    return run


def decided(report):
    return {d["memory_id"]: d["action"] for d in report["decisions"] + report["protections"]}


def test_forget_judges_what_changed_after_decays_read(forgetful, between):
    raised = add_memory(forgetful, **old())  # below the delete line at decay's read
    archived = add_memory(forgetful, timestamp=days_ago(30), last_accessed=days_ago(1))
    deleted = add_memory(forgetful, timestamp=days_ago(30), last_accessed=days_ago(1))
    faded = add_memory(forgetful, **old())
    graph = forgetful.stores.graph
    created = []

    def act(services):
        # Another program raises an importance (no change number); requests archive one memory and delete
        # another through the service; a memory is added.
        graph.falkor.execute("MATCH (m:Memory {id: $id}) SET m.importance = 0.9", {"id": raised})
        graph.archive([archived], NOW.isoformat())
        services.engine.lifecycle.delete({deleted: "asked"}, NOW)
        created.append(add_memory(services, **old()))

    result = between(forgetful, act)
    assert between.reads == {"handed on": 1, "forget alone": 0}
    report = result["forget"]
    actions = decided(report)
    assert actions[raised] == "protect"  # read again: below a line at decay's read
    assert actions[faded] == "delete" and actions[created[0]] == "delete"
    assert deleted not in actions
    # Every memory there now is judged once: faded, raised, created, and the archived one (kept: well above
    # the delete line); the deleted one is not counted.
    assert (report["memories_processed"], report["kept"]) == (4, 1)
    assert graph.get_memory(raised) is not None and graph.get_memory(faded) is None


def test_forget_after_decay_reports_what_forget_alone_reports(forgetful, between):
    ids = [add_memory(forgetful, **old()), add_memory(forgetful, **old(type="Decision")),
           add_memory(forgetful, timestamp=days_ago(150), last_accessed=days_ago(2)),
           add_memory(forgetful, timestamp=days_ago(10), last_accessed=days_ago(1))]
    preview = forgetful.engine.run(["decay", "forget"], dry_run=True, full=True)["result"]["forget"]
    forgetful.engine.run(["decay"], dry_run=True, full=True)
    alone = forgetful.engine.run(["forget"], dry_run=True, full=True)["result"]["forget"]
    assert between.reads == {"handed on": 1, "forget alone": 1}
    for key in ("decisions", "protections", "awaiting_deletion", "memories_processed", "kept", "archived", "deleted"):
        assert preview[key] == alone[key], key
    assert set(decided(preview)) == set(ids[:3])


def dues_by_memory(services):
    """The forget due times the engine keeps, by memory id (memories deleted since left out)."""
    dues = services.engine.dues["forget"]
    rows = services.stores.graph.falkor.execute("UNWIND $nodes AS n MATCH (m) WHERE id(m) = n RETURN n, m.id",
                                                {"nodes": dues.node_ids.tolist()})
    memory_of = {int(node): memory for node, memory in rows}
    return {memory_of[node]: due for node, due in zip(dues.node_ids.tolist(), dues.due.tolist()) if node in memory_of}


def test_forget_after_decay_keeps_due_times_no_later_than_alone(forgetful, between, tmp_path, clock):
    """The due times of the memories judged from decay's read come from their relevance alone: the same as forget's
    own read gives for an unprotected memory past its grace period, never later for any."""
    other = build_services(make_settings(tmp_path / "other", consolidation_archive_threshold=0.2,
                                         consolidation_delete_threshold=0.05), clock=clock)
    try:
        rng = np.random.default_rng(5)
        ages, uses = rng.uniform(1, 150, 60), rng.uniform(0, 30, 60)
        shapes = [dict(id=str(uuid.UUID(int=i + 1)), timestamp=days_ago(float(age)),
                       last_accessed=days_ago(float(min(age, used))), importance=float(importance), type=str(kind))
                  for i, (age, used, importance, kind) in enumerate(zip(
                      ages, uses, rng.uniform(0.1, 0.9, 60), rng.choice(["Context", "Decision", "Memory"], 60)))]
        for services in (forgetful, other):
            for shape in shapes:
                add_memory(services, **shape)
            # Past their grace period, used lately, unprotected: above the lines. Their relationships are counted
            # by decay, not by forget (_counted), whose due times for them are the uncounted ones.
            linked = [add_memory(services, id=str(uuid.UUID(int=100 + i)), timestamp=days_ago(95 + i),
                                 last_accessed=days_ago(1), type="Context") for i in range(10)]
            for a, b in zip(linked[::2], linked[1::2]):
                link(services, a, b)
        forgetful.engine.run(["decay", "forget"], full=True)
        other.engine.run(["decay"], full=True)
        other.engine.run(["forget"], full=True)
        assert between.reads == {"handed on": 1, "forget alone": 1}
        handed, alone = dues_by_memory(forgetful), dues_by_memory(other)
        never = math.inf  # a memory never due is not kept (Dues.kept)
        assert handed.keys() >= alone.keys() and len(alone) >= 30
        assert all(handed[memory] <= alone.get(memory, never) for memory in handed)
        assert all(handed[memory] == alone[memory] for memory in linked)
        assert any(handed[memory] < alone.get(memory, never) for memory in handed)  # protections forget alone read
    finally:
        other.close()


@pytest.mark.parametrize("later, read_alone", [(timedelta(minutes=30), 0), (timedelta(hours=2), 1)])
def test_a_memory_crossing_a_line_between_decay_and_forget_is_acted_on(forgetful, between, clock, later, read_alone):
    # 100 days old, used d days ago, importance and confidence 0.5: relevance = e^-1 * e^(-0.05 d) * 0.85 (past
    # its grace period, no relationship). With d chosen so that it is 0.05 % above the archive line (0.2) now,
    # it falls 0.125 % in half an hour (ln falls by 0.06 a day): below the line when forget runs.
    used = (math.log(math.exp(-1.0) * 0.85 / 0.2) - math.log(1.0005)) / 0.05
    # Stored at its score: decay's write would give it a change number (the candidate line), read again anyway.
    crossing = add_memory(forgetful, timestamp=days_ago(100), last_accessed=days_ago(used), relevance_score=0.2)
    result = between(forgetful, lambda services: clock.advance(seconds=later.total_seconds()))
    assert decided(result["forget"]) == {crossing: "archive"}
    assert between.reads == {"handed on": 1, "forget alone": read_alone}  # past the hour: forget reads all afresh
