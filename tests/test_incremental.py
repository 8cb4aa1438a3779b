"""Incremental runs on the real stores: after changes of every kind, an incremental run of decay, dedup and
cluster leaves the graph exactly as a full pass over a copy of the same store does; the watermark moves only
with successful whole-graph real runs; the full-pass interval, a request and new settings force full passes."""

from __future__ import annotations

import json
import shutil
import uuid
from dataclasses import replace
from datetime import timedelta

import numpy as np
import pytest

from consolidation.neighbours import NeighbourGraph
from consolidation.service import build_services
from consolidation.similarity import Pairs
from consolidation.stores.vectors import VectorPoint
from consolidation.hygiene.replacement import subject_key
from consolidation.tasks import TASKS
from consolidation.tasks import cluster as cluster_task
from tests.conftest import NOW, Clock, add_memory, bench_module, days_ago, link, make_settings, unit, vector_at

DIM = 96
TASKS_COMPARED = ["decay", "dedup", "cluster"]


def axis(i: int) -> np.ndarray:
    vector = np.zeros(DIM, dtype=np.float32)
    vector[i] = 1.0
    return vector


def toward(centre: int, shared: int) -> np.ndarray:
    """A member at cosine 0.8 from its centre, leaning on an axis another cluster's member leans on too: two such
    members are 0.36 apart, and unit(a + b) is 0.82 from each (a bridge)."""
    return unit(0.8 * axis(centre) + 0.6 * axis(shared))


def settings_for(data_dir, **overrides):
    # The scenario lets a memory fall below the relevance line: clustering here keeps to the line (AutoMem's).
    return make_settings(data_dir, vector_size=DIM, **{"consolidation_cluster_low_relevance": False, **overrides})


def minutes_ago(minutes: float) -> str:
    return (NOW - timedelta(minutes=minutes)).isoformat()


class Scenario:
    """A store after a full pass, then changed in every way that matters (the names say what each memory is)."""

    def __init__(self, services):
        self.services = services
        self.ids: dict[str, str] = {}
        self.clock_step = 0

    def add(self, name, vector, content, kind="Context", when=None, **fields):
        self.clock_step += 1  # distinct times: no two memories are recorded in the same minute by accident
        self.ids[name] = add_memory(self.services, vector=vector, content=content, type=kind,
                                    timestamp=when or minutes_ago(10 * self.clock_step), **fields)
        return self.ids[name]

    def cluster(self, prefix, centre, axes, topic, edge=None):
        for k, a in enumerate(axes):
            self.add(f"{prefix}{k}", vector_at(0.95, axis(centre), axis(a)),
                     f"{topic} note {a}: it uses port {5000 + a}")
        if edge is not None:
            self.add(f"{prefix}-edge", toward(centre, edge), f"{topic} edge note {edge}: it uses port {6000 + edge}")

    def build(self):
        self.cluster("t1-", 0, range(1, 7), "Billing", edge=40)  # 7 members
        self.cluster("t2-", 7, range(8, 14), "Search", edge=40)  # 7 members
        self.cluster("x1-", 14, range(15, 20), "Queue", edge=41)  # 6 members, and with x2 and the hinge: one cluster
        self.cluster("x2-", 20, range(21, 26), "Ledger", edge=41)
        self.add("hinge", unit(toward(14, 41) + toward(20, 41)), "Queue and ledger share hinge item 41")
        self.cluster("s1-", 26, range(27, 30), "Mail", edge=42)  # 4 members: too few for a cluster
        self.cluster("s2-", 30, range(31, 34), "Audit", edge=42)
        self.cluster("quiet-", 80, range(81, 87), "Payroll")  # no change comes near it: no run reads it again
        # It will fall below the relevance line at the next decay: old, unused, unconfident.
        self.ids["fading"] = self.ids["t1-5"]
        self.services.stores.graph.upsert_memories([{"id": self.ids["fading"], "timestamp": days_ago(200),
                                                     "last_accessed": days_ago(200), "confidence": 0.0,
                                                     "importance": 0.3}])
        self.add("pg", axis(50), "We use PostgreSQL for the billing database", "Decision", when=days_ago(30))
        self.add("pg-again", vector_at(0.97, axis(50), axis(51)), "we chose postgresql for the billing database!",
                 "Decision", when=days_ago(20))
        self.add("redis", axis(52), "Redis caches the session tokens", "Decision", when=days_ago(15))
        self.add("kafka", axis(54), "Kafka streams the audit events", "Decision", when=days_ago(14))
        self.add("grafana", axis(55), "Grafana shows the latency panels", "Decision", when=days_ago(13))
        # Worded with another subject than the change below: only the change's pool reaches it.
        self.add("window", axis(56), "Service alpha deploys on Tuesday", when=days_ago(10))
        # A plain-word update below gives it a new value: only reading the statements of its subject reaches it.
        self.add("build-server", axis(74), "The build server's address is 10.2.0.15", when=days_ago(12))
        self.add("standup-moved", axis(58), "The standup moved from Monday to Wednesday", when=days_ago(5))
        self.add("backups-now", axis(60), "Backups now run on Friday", when=days_ago(3))
        self.add("backups-monday", vector_at(0.8, axis(60), axis(61)), "Backups run on Monday", when=days_ago(10))
        self.add("backups-tuesday", vector_at(0.8, axis(60), axis(62)), "Backups run on Tuesday",
                 when=(NOW - timedelta(days=10, minutes=5)).isoformat())
        self.add("ttl", axis(64), "The cache TTL is 5 minutes", when=days_ago(7))
        # One fact twice, both protected (so never merged): one group, which a newcomer close to the second
        # only must fit as a whole. Reading just the newcomer's neighbours, it would join the second.
        self.add("sentry", axis(70), "Sentry tracks the production errors", "Decision", when=days_ago(40),
                 protected=True)
        self.add("sentry-apart", vector_at(0.9, axis(70), axis(71)), "sentry tracks the production errors!",
                 "Decision", when=days_ago(30), protected=True)
        return self

    def change(self):
        """Every kind of change between two runs, each through the path the service takes for it."""
        services, now = self.services, self.services.engine.clock()
        create = services.memories.create
        self.ids["bridge"] = create(body(unit(toward(0, 40) + toward(7, 40)),
                                         "Billing and search share bridge item 40"))["id"]
        self.ids["small-bridge"] = create(body(unit(toward(26, 42) + toward(30, 42)),
                                               "Mail and audit share bridge item 42"))["id"]
        self.ids["redis-again"] = create(body(vector_at(0.97, axis(52), axis(53)),
                                              "redis caches the session tokens again!", "Decision"))["id"]
        moved = "The deploy window of service alpha moved from Tuesday to Thursday"
        self.ids["window-moved"] = create(body(vector_at(0.6, axis(56), axis(57)), moved))["id"]
        # An old statement arriving late: the change announced five days ago (unchanged) supersedes it.
        self.ids["standup"] = create(body(vector_at(0.8, axis(58), axis(59)), "The team's standup is on Monday",
                                          timestamp=days_ago(20)))["id"]
        self.ids["standup-friday"] = create(body(vector_at(0.8, axis(58), axis(67)),
                                                 "The team moved the standup from Monday to Friday"))["id"]
        self.ids["sentry-late"] = create(body(unit(0.6 * axis(70) + 0.6 * axis(71) + 0.529 * axis(72)),
                                              "Sentry tracks the production errors again", "Decision"))["id"]
        self.ids["build-server-new"] = create(body(vector_at(0.6, axis(74), axis(75)),
                                                   "The build server's address is 10.2.0.99"))["id"]
        # Related, but not close enough to be one fact: only its time brings the older one into the run.
        self.ids["ttl-15"] = create(body(vector_at(0.5, axis(64), axis(65)), "Cache TTL: 15 minutes",
                                         timestamp=(NOW - timedelta(days=7) + timedelta(seconds=30)).isoformat()))["id"]
        # An import overwrites a memory with a restatement of another (new text, new vector).
        line = {"id": self.ids["grafana"],
                **body(vector_at(0.98, axis(54), axis(66)), "kafka streams the audit events!", "Decision")}
        report = services.memories.import_jsonl(json.dumps(line).encode(), overwrite=True)
        assert report.overwritten == 1
        # Archived: the hinge (its cluster splits in two) and one of two statements a change could mean.
        gone = [self.ids["hinge"], self.ids["backups-tuesday"]]
        services.stores.graph.archive(gone, now.isoformat())
        services.stores.vectors.set_archived(gone, True)
        # Deleted (forget's path, with a tombstone), and a merged duplicate restored apart from its canonical.
        self.ids["deleted"] = self.ids["t2-2"]
        assert services.engine.lifecycle.delete({self.ids["deleted"]: "test"}, now) == 1
        duplicate = next(i for i in (self.ids["pg"], self.ids["pg-again"])
                         if services.stores.graph.get_memory(i).get("merged_into"))
        services.memories.restore(duplicate)
        return self


def body(vector, content, kind="Context", timestamp=None):
    return {"content": content, "type": kind, "embedding": [float(x) for x in vector],
            "timestamp": timestamp or NOW.isoformat()}


@pytest.fixture(scope="module")
def changed_store(tmp_path_factory):
    """The scenario's store: built, consolidated by a full pass, then changed (each test runs on a copy)."""
    data_dir = tmp_path_factory.mktemp("scenario") / "data"
    services = build_services(settings_for(data_dir), clock=Clock())
    try:
        scenario = Scenario(services).build()
        first = services.engine.run(["dedup", "cluster"])
        assert first["success"] and {r["pass"] for r in first["result"].values()} == {"full"}
        before = patterns(services)
        scenario.change()
    finally:
        services.close()
    return data_dir, scenario.ids, before


def copy_of(changed_store, tmp_path, name, **overrides):
    data_dir = tmp_path / name
    shutil.copytree(changed_store[0], data_dir)
    return build_services(settings_for(data_dir, **overrides), clock=Clock())


def patterns(services) -> dict[str, frozenset[str]]:
    rows = services.stores.graph.falkor.records(
        "MATCH (p:MetaPattern) WHERE coalesce(p.archived, false) = false "
        "OPTIONAL MATCH (p)-[:SUMMARIZES]->(m:Memory) RETURN p.id, collect(m.id)")
    return {pattern_id: frozenset(members) for pattern_id, members in rows}


def graph_state(services, patterns_before: dict[str, frozenset[str]]) -> dict:
    """Everything dedup and clustering decide: memories' flags, merges (with their similarity), supersessions,
    contradictions, and MetaPatterns (by id where they existed before; new ones by their members)."""
    falkor = services.stores.graph.falkor
    memories = {row[0]: tuple(row[1:]) for row in falkor.records(
        "MATCH (m:Memory) WHERE coalesce(m.type, '') <> 'MetaPattern' "
        "RETURN m.id, coalesce(m.archived, false), m.merged_into, m.superseded_by, m.distinct_from")}
    edges = {relation: sorted(map(tuple, falkor.records(
        f"MATCH (a:Memory)-[r:{relation}]->(b:Memory) RETURN a.id, b.id, r.similarity, r.reason")))
        for relation in ("MERGED_INTO", "SUPERSEDES", "CONTRADICTS")}
    now = patterns(services)
    return {"memories": memories, **edges,
            "kept patterns": {p: members for p, members in now.items() if p in patterns_before},
            "new patterns": sorted(sorted(members) for p, members in now.items() if p not in patterns_before),
            "retired": sorted(set(patterns_before) - set(now))}


def consolidate(services, **options):
    result = services.engine.run(TASKS_COMPARED, **options)
    assert result["success"], result
    return result["result"]


def test_an_incremental_run_reaches_the_state_a_full_pass_reaches(changed_store, tmp_path):
    _, ids, before = changed_store
    incremental, full = copy_of(changed_store, tmp_path, "incremental"), copy_of(changed_store, tmp_path, "full")
    try:
        fast, slow = consolidate(incremental), consolidate(full, full=True)
        assert [fast[t]["pass"] for t in ("dedup", "cluster")] == ["incremental", "incremental"]
        assert [slow[t]["pass"] for t in ("dedup", "cluster")] == ["full", "full"]
        total = slow["dedup"]["memories_processed"]
        assert 0 < fast["dedup"]["memories_considered"] < total
        assert 0 < fast["cluster"]["memories_considered"] < slow["cluster"]["memories_processed"]
        state = graph_state(incremental, before)
        assert state == graph_state(full, before)
    finally:
        incremental.close()
        full.close()
    expected_outcomes(state, ids, before)


def expected_outcomes(state: dict, ids: dict[str, str], before: dict[str, frozenset[str]]) -> None:
    """What the scenario was built to make happen, from its construction (not from either run)."""
    merged = {(a, b) for a, b, *_ in state["MERGED_INTO"]}
    assert (ids["redis-again"], ids["redis"]) in merged  # a new restatement, into the older memory
    assert (ids["grafana"], ids["kafka"]) in merged  # an overwrite that became a restatement
    # Close to the second protected copy (0.80), not to the first (0.60): it fits their group as a whole, not.
    assert not any(ids["sentry-late"] in pair for pair in merged)
    assert len(merged) == 2  # the first run's merge was undone by the restore
    restored = [i for i in (ids["pg"], ids["pg-again"]) if not state["memories"][i][0]]
    assert len(restored) == 2  # the restored duplicate stays apart from its canonical
    superseding = {(a, b) for a, b, *_ in state["SUPERSEDES"]}
    assert superseding == {(ids["window-moved"], ids["window"]),  # a new change
                           (ids["standup-moved"], ids["standup"]),  # an unchanged change, a late statement
                           (ids["standup-friday"], ids["standup"]),  # a new change of the same...
                           (ids["standup-friday"], ids["standup-moved"]),  # ...and its older rival
                           (ids["backups-now"], ids["backups-monday"]),  # unambiguous once its rival left
                           (ids["build-server-new"], ids["build-server"])}  # a new value, no change word
    assert {frozenset((a, b)) for a, b, *_ in state["CONTRADICTS"]} == {frozenset((ids["ttl"], ids["ttl-15"]))}
    clusters = [frozenset(members) for members in state["kept patterns"].values()] + \
        [frozenset(members) for members in state["new patterns"]]
    named = lambda *prefixes: frozenset(i for name, i in ids.items() if name.startswith(prefixes))  # noqa: E731
    assert sorted(clusters, key=sorted) == sorted([
        named("t1-", "t2-", "bridge") - {ids["fading"], ids["deleted"]},  # bridged, minus one fallen, one deleted
        named("x1-"), named("x2-"),  # split when the hinge was archived
        named("s1-", "s2-", "small-bridge"),  # two small components bridged into a cluster
        named("quiet-"),  # untouched
    ], key=sorted)
    assert len(state["retired"]) == 1 and len(before) == 4  # t1 and t2 became one; x kept one of its halves
    assert state["kept patterns"][next(p for p, m in before.items() if m == named("quiet-"))] == named("quiet-")


def _first_round_only(ctx, region, changed, removed):
    """The merge closure without following a group past the changed memories' own neighbours."""
    from consolidation.tasks import dedup_incremental

    found = []
    leaving = [r for r in removed if r.vector is not None]
    queries = [region.loaded[int(p)] for p in changed] + [r.candidate for r in leaving]
    origins = np.concatenate([changed, np.full(len(leaving), -1)]).astype(np.int64)
    vectors = np.concatenate([region.unit[changed]] + [r.vector[None] for r in leaving])
    hits = region.search(queries, origins, vectors, ctx.settings.consolidation_dedup_similarity)
    dedup_incremental._follow(region, hits, queries, origins, found)
    if not found:
        return Pairs.empty()
    a, b, similarity = (np.array(column) for column in zip(*found))
    return Pairs(a.astype(np.int32), b.astype(np.int32), similarity.astype(np.float32)).deduplicated(
        len(region.ids))


def _changed_only(changed, patterns, n, search, within, most):
    """The cluster region without what the changed memories reach: no pairs followed, nothing read whole."""
    from consolidation import clusters

    def nothing(positions):
        return Pairs.empty()

    return clusters.cluster_region(changed, [p for p in patterns if p.broken], n, nothing, within, most)


def _never_broken(patterns, position, changed, min_size):
    from consolidation import clusters

    return [replace(entry, broken=False) for entry in clusters.touched(patterns, position, changed, min_size)]


NARROWER = {  # a part of the neighbourhood left out -> what the run misses
    "a group past the changed memories' own neighbours": ("dedup_incremental", "_merge_closure", _first_round_only),
    "the pools of the announcements judged": ("dedup_incremental", "_load_pools", lambda *args: None),
    "the statements of the changed memories' subjects": ("dedup_incremental", "_load_subjects",
                                                          lambda *args: set()),
    "what left since the watermark": ("dedup_incremental", "_removed", lambda ctx, region: []),
    "partners recorded in the same minute": ("dedup_incremental", "_load_simultaneous", lambda *args: None),
    "unchanged announcements a change concerns": ("dedup_incremental", "_affected", lambda *args: set()),
    "clusters reached, and small components": ("cluster_incremental", "cluster_region", _changed_only),
    "MetaPatterns a removal broke": ("cluster_incremental", "touched", _never_broken),
}


@pytest.mark.parametrize("left_out", list(NARROWER))
def test_each_part_of_the_neighbourhood_is_needed(changed_store, tmp_path, monkeypatch, left_out):
    """The comparison can fail: leave out any one part of what an incremental run reads, and it ends elsewhere
    than the full pass."""
    from consolidation import tasks

    module, name, narrower = NARROWER[left_out]
    monkeypatch.setattr(getattr(tasks, module), name, narrower)
    _, _, before = changed_store
    narrow, full = copy_of(changed_store, tmp_path, "narrow"), copy_of(changed_store, tmp_path, "full")
    try:
        consolidate(narrow)
        consolidate(full, full=True)
        assert graph_state(narrow, before) != graph_state(full, before)
    finally:
        narrow.close()
        full.close()


# --- the watermark and the pass ------------------------------------------------------------------------------


def control(services) -> dict:
    return services.engine.control.state()


def dedup_report(services, **options) -> dict:
    return services.engine.run(["dedup"], **options)["result"]["dedup"]


def restatement(services, of: str, vector) -> str:
    return add_memory(services, vector=vector, content=of, type="Decision", timestamp=NOW.isoformat())


@pytest.fixture
def wide(tmp_path, clock):
    built = build_services(settings_for(tmp_path / "wide"), clock=clock)
    yield built
    built.close()


@pytest.fixture
def scoped(tmp_path, clock):
    built = build_services(settings_for(tmp_path / "scoped", consolidation_scope_properties=("user_id",)),
                           clock=clock)
    yield built
    built.close()


def test_only_a_successful_whole_graph_real_run_moves_the_watermark(scoped, monkeypatch):
    add_memory(scoped, vector=axis(0), content="Use Sentry for error tracking", type="Decision", user_id="u1",
               timestamp=days_ago(3))
    assert dedup_report(scoped)["pass"] == "full"
    mark = control(scoped)["watermark_dedup"]
    assert mark == control(scoped)["change_seq"]  # the counter at its start; storing fact terms is no change
    late = add_memory(scoped, vector=vector_at(0.97, axis(0), axis(1)), content="we chose sentry for error tracking!",
                      type="Decision", user_id="u1")

    dry = dedup_report(scoped, dry_run=True, incremental=True)
    assert dry["pass"] == "incremental" and dry["merged"] == 1 and dry["memories_changed"] == 1
    assert control(scoped)["watermark_dedup"] == mark

    def broken(ctx, dry_run):
        raise RuntimeError("disk on fire")

    with monkeypatch.context() as patch:
        patch.setitem(TASKS, "dedup", broken)
        assert dedup_report(scoped)["success"] is False
    assert control(scoped)["watermark_dedup"] == mark

    one_scope = dedup_report(scoped, scope={"user_id": "u1"}, dry_run=True)
    assert one_scope["pass"] == "full" and "one scope" in one_scope["pass_reason"]
    scoped.engine.run(["dedup"], scope={"user_id": "u2"})  # real, but of one (empty) scope
    assert control(scoped)["watermark_dedup"] == mark

    real = dedup_report(scoped)
    assert real["pass"] == "incremental" and real["merged"] == 1
    assert scoped.stores.graph.get_memory(late)["merged_into"]
    assert control(scoped)["watermark_dedup"] > mark
    assert dedup_report(scoped)["memories_changed"] == 2  # this run's own merge (both ends), nothing else


def test_the_watermark_is_the_change_counter_at_the_task_start(wide, monkeypatch):
    """A write racing the task (after its start) is not covered by its watermark: the next run sees it."""
    wide.engine.run(["cluster"])
    real_cluster = TASKS["cluster"]
    raced = []

    def racing(ctx, dry_run):
        raced.append(add_memory(wide, vector=axis(3), content="written while clustering ran"))
        return real_cluster(ctx, dry_run)

    with monkeypatch.context() as patch:
        patch.setitem(TASKS, "cluster", racing)
        wide.engine.run(["cluster"])
    change = wide.stores.graph.falkor.execute("MATCH (m:Memory {id: $id}) RETURN m.change_seq",
                                                  {"id": raced[0]})[0][0]
    assert control(wide)["watermark_cluster"] < int(change)
    assert wide.engine.run(["cluster"])["result"]["cluster"]["memories_changed"] == 1


def test_a_memory_deleted_after_a_run_saw_it_archived_is_no_change_for_dedup(wide):
    """Forget deletes archived memories once their grace ends: one archived before dedup's last run had left its
    view then, so its deletion changes no group; one archived and deleted since is a removal to judge again."""
    first = add_memory(wide, vector=axis(0), content="Use Sentry for error tracking", type="Decision")
    second = add_memory(wide, vector=axis(1), content="Deploys go out on Tuesdays", type="Decision")
    add_memory(wide, vector=axis(2), content="Billing runs nightly", type="Decision")
    wide.stores.graph.archive([first], NOW.isoformat())
    assert dedup_report(wide)["pass"] == "full"  # the watermark passes the archive
    wide.stores.graph.archive([second], NOW.isoformat())
    wide.engine.lifecycle.delete({first: "forgotten", second: "forgotten"}, NOW)
    report = dedup_report(wide)
    assert report["pass"] == "incremental" and report["memories_changed"] == 1  # the second only


def test_full_passes_come_with_the_interval_on_request_and_after_new_settings(tmp_path, clock):
    data_dir = tmp_path / "data"
    services = build_services(settings_for(data_dir, consolidation_full_pass_interval_seconds=86400), clock=clock)
    try:
        def passes(**options):
            results = services.engine.run(["dedup", "creative", "cluster"], **options)["result"]
            return [results[t]["pass"] for t in ("dedup", "creative", "cluster")]

        assert passes() == ["full"] * 3  # no watermark yet
        clock.advance(hours=23)
        assert passes() == ["incremental"] * 3
        assert passes(full=True) == ["full"] * 3
        clock.advance(hours=23)
        assert passes() == ["incremental"] * 3  # the requested full pass restarted the interval
        clock.advance(hours=1)
        assert passes() == ["full"] * 3  # a day after the last full pass
        history = control(services)["history"]
        assert [entry["full_pass"] for entry in history[:3]] == [True] * 3
    finally:
        services.close()
    moved = build_services(settings_for(data_dir, consolidation_full_pass_interval_seconds=86400,
                                        consolidation_cluster_min_size=3), clock=clock)
    try:
        results = moved.engine.run(["dedup", "cluster"])["result"]
        assert results["dedup"]["pass"] == "incremental"
        assert results["cluster"]["pass"] == "full" and "rules changed" in results["cluster"]["pass_reason"]
    finally:
        moved.close()
    always = build_services(settings_for(data_dir, consolidation_full_pass_interval_seconds=0), clock=clock)
    try:
        assert always.engine.run(["dedup"])["result"]["dedup"]["pass"] == "full"
    finally:
        always.close()


@pytest.mark.parametrize("exact_limit", [10, 100000], ids=["cells", "exact"])
def test_above_the_exact_limit_clustering_reads_its_pairs_from_the_kept_graph(tmp_path, clock, exact_limit):
    """There an incremental pass looks the changed memories' pairs up in the graph the clusters were stored from;
    below the limit it searches them exactly. After a restart, on a graph built anew, the first pass is full."""
    settings = settings_for(tmp_path / "d", consolidation_cluster_exact_limit=exact_limit)
    services = build_services(settings, clock=clock)
    rng = np.random.default_rng(4)

    def add(topic: int, member: int) -> None:
        add_memory(services, vector=unit(axis(topic) + 0.03 * rng.standard_normal(DIM)),
                   content=f"Topic {topic} note {member}")

    try:
        for topic in range(3):
            for member in range(8):
                add(topic, member)
        first = services.engine.run(["cluster"])["result"]["cluster"]
        assert first["pass"] == "full" and first["clusters_found"] == 3
        add(1, 8)
        again = services.engine.run(["cluster"])["result"]["cluster"]
        assert again["pass"] == "incremental" and again["clusters_found"] == 3
        expected = "the kept similarity graph" if exact_limit == 10 else "an exact search"
        assert again["neighbours_from"] == expected
        assert again["memories_considered"] == 9  # the changed memory and the cluster it joins
        assert sorted(c["size"] for c in again["clusters"]) == [8, 8, 9]
    finally:
        services.close()
    services = build_services(settings, clock=clock)
    try:
        add(2, 8)
        assert services.engine.run(["dedup"], dry_run=True, full=True)["success"]  # builds the graph anew
        restarted = services.engine.run(["cluster"])["result"]["cluster"]
        assert (restarted["pass"] == "full") == (exact_limit == 10)
        assert ("built again" in restarted["pass_reason"]) == (exact_limit == 10)
        assert sorted(c["size"] for c in restarted["clusters"]) == [8, 9, 9]
        add(0, 8)
        last = services.engine.run(["cluster"])["result"]["cluster"]
        assert last["pass"] == "incremental" and last["neighbours_from"] == expected
        assert sorted(c["size"] for c in last["clusters"]) == [9, 9, 9]
    finally:
        services.close()


def test_a_memory_another_program_wrote_counts_as_changed_until_a_run_marks_it(wide, client_for):
    """AutoMem writes memories without a change marker: the next run treats them as changed, and marks them."""
    kept = add_memory(wide, vector=axis(0), content="Use Sentry for error tracking", type="Decision",
                      timestamp=days_ago(3))
    client = client_for(wide)
    assert client.post("/consolidate", json={"task": "dedup", "wait": True, "full": True}, headers=client.auth).json[
        "result"]["dedup"]["pass"] == "full"
    foreign = "5f0c6f7e-0d1b-4c9e-9a51-6f7d1f2e3a4b"
    wide.stores.vectors.upsert([VectorPoint(foreign, vector_at(0.97, axis(0), axis(1)), {})])
    wide.stores.graph.falkor.execute(
        "CREATE (:Memory {id: $id, content: 'we chose sentry for error tracking!', type: 'Decision', "
        "timestamp: $now})", {"id": foreign, "now": NOW.isoformat()})

    preview = dedup_report(wide, dry_run=True, incremental=True)
    assert preview["pass"] == "incremental" and preview["memories_changed"] == 1 and preview["merged"] == 1
    report = dedup_report(wide)
    assert report["merges"][0]["duplicates"] == [foreign] and report["merges"][0]["into"] == kept
    marked = wide.stores.graph.falkor.execute("MATCH (m:Memory {id: $id}) RETURN m.change_seq", {"id": foreign})
    assert marked[0][0] is not None


def test_a_control_node_made_anew_does_not_make_every_memory_look_changed(wide):
    """The counter restarts at 0 on a new control node; the markers memories already carry are higher. The next
    run moves the counter past them, so after its full pass nothing looks changed."""
    for i in range(3):
        add_memory(wide, vector=axis(i), content=f"Note {i} about the queue")
    wide.engine.run(["cluster"])
    wide.stores.graph.falkor.execute("MATCH (c:ConsolidationControl) DETACH DELETE c")
    first = wide.engine.run(["cluster"])["result"]["cluster"]
    assert first["pass"] == "full" and "no watermark" in first["pass_reason"]
    again = wide.engine.run(["cluster"])["result"]["cluster"]
    assert again["pass"] == "incremental" and again["memories_changed"] == 0


# --- the benchmark's generated stores ------------------------------------------------------------------------


def generated_dataset(n: int, seed: int):
    """bench/dataset.py's store: planted topics, noise, restatements and updates."""
    return bench_module("dataset").generate(n, NOW, seed=seed)


def change_generated(services, rng, count: int) -> None:
    """`count` changes of each kind through the stores' own writes: restatements of random memories, rewrites
    into announcements of a changed detail, new announcements of one, archives, deletions and restores."""
    graph, vectors, now = services.stores.graph, services.stores.vectors, NOW.isoformat()
    ids = graph.falkor.scan_memories("coalesce(m.archived, false) = false AND coalesce(m.type, '') <> 'MetaPattern'",
                                     "m.id")[0]
    chosen = [ids[i] for i in rng.choice(len(ids), 5 * count, replace=False)]
    memories = {m["id"]: m for m in graph.get_memories(chosen)}
    found, matrix = vectors.vectors(chosen)
    vector_of = dict(zip(found, matrix))

    def near(memory_id, spread):
        vector = vector_of[memory_id] + spread * rng.standard_normal(matrix.shape[1]) / np.sqrt(matrix.shape[1])
        return vector / np.linalg.norm(vector)

    def announcing(memory):
        detail = memory["content"].lower().split("detail ")[-1].split(" ")[0].rstrip(".!")
        return f"{memory['content'].split('. ')[0]}: detail changed from {detail} to {detail}7."

    restated, rewritten, announced, archived, deleted = (chosen[k * count:(k + 1) * count] for k in range(5))
    new = [({**memories[i], "id": str(uuid.UUID(bytes=rng.bytes(16), version=4)), "timestamp": now,
             "content": memories[i]["content"].lower().rstrip(".") + "!"}, near(i, 0.18)) for i in restated]
    new += [({**memories[i], "id": str(uuid.UUID(bytes=rng.bytes(16), version=4)), "timestamp": now,
              "content": announcing(memories[i])}, near(i, 0.4)) for i in announced]
    vectors.upsert([VectorPoint(m["id"], v, {}) for m, v in new])
    graph.create_memories([m for m, _ in new])
    vectors.upsert([VectorPoint(i, near(i, 0.3), {}) for i in rewritten])
    graph.replace_memories([{**memories[i], "timestamp": now, "content": announcing(memories[i])} for i in rewritten])
    graph.archive(archived, now)
    vectors.set_archived(archived, True)
    services.engine.lifecycle.delete({i: "test" for i in deleted}, NOW)
    for (duplicate,) in graph.falkor.execute("MATCH (d:Memory)-[:MERGED_INTO]->() RETURN d.id LIMIT $n", {"n": count}):
        services.memories.restore(duplicate)


def memory_ids(services, where: str = "true") -> set[str]:
    """The ids of the memories (MetaPatterns left out) matching a condition on `m`."""
    return set(services.stores.graph.falkor.scan_memories(
        f"coalesce(m.type, '') <> 'MetaPattern' AND {where}", "m.id")[0])


def generated_copies(tmp_path, seed: int, change: bool, **overrides):
    """The benchmark's generated store, loaded and consolidated by a full pass, then changed (if `change`), in
    two copies opened by two processes' services: (incremental, full, MetaPatterns before)."""
    data = generated_dataset(2000, seed)
    settings = make_settings(tmp_path / "one", vector_size=384, **overrides)
    services = build_services(settings, clock=Clock())
    try:
        services.stores.vectors.upsert([VectorPoint(m["id"], v, {}) for m, v in zip(data.memories, data.vectors)])
        services.stores.graph.upsert_memories(data.memories)
        consolidate(services)
        before = patterns(services)
        if change:
            change_generated(services, np.random.default_rng(seed), 20)
    finally:
        services.close()
    shutil.copytree(tmp_path / "one", tmp_path / "two")
    return (build_services(settings, clock=Clock()),
            build_services(settings.model_copy(update={"data_dir": tmp_path / "two"}), clock=Clock()), before)


def test_with_the_similarity_graph_kept_an_incremental_run_matches_a_full_pass(tmp_path, monkeypatch):
    """The incremental dedup takes its pairs from the graph a full pass built before the changes, brought up to
    date (not from an exact search), and still ends where a full pass does."""
    from consolidation.tasks import dedup_incremental

    monkeypatch.setattr(dedup_incremental, "GRAPH_OVER_EXACT", 0)  # a small store: the exact search is cheaper
    searched_exactly, held = [], set()
    exact_search, former_pairs = dedup_incremental.pairs_against, NeighbourGraph.former_pairs
    monkeypatch.setattr(dedup_incremental, "pairs_against",
                        lambda vectors, *rest: searched_exactly.append(len(vectors)) or exact_search(vectors, *rest))
    monkeypatch.setattr(NeighbourGraph, "former_pairs",
                        lambda *args: held.update(found := former_pairs(*args)) or found)
    incremental, full, before = generated_copies(tmp_path, 6, change=False)
    try:
        for services in (incremental, full):  # each builds its graph over the state before the changes
            assert services.engine.run(["dedup"], dry_run=True, full=True)["success"]
            memories, active = memory_ids(services), memory_ids(services, "coalesce(m.archived, false) = false")
            change_generated(services, np.random.default_rng(6), 20)
            now_active = memory_ids(services, "coalesce(m.archived, false) = false")
        fast, slow = consolidate(incremental), consolidate(full, full=True)
        assert fast["dedup"]["pass"] == "incremental"
        assert fast["dedup"]["neighbours_from"] == "the kept similarity graph"
        # The memories archived and deleted since the graph was built are found through the pairs it held for
        # them; only those merged away before it (by the full pass before the restart) are searched exactly.
        left, merged_before = active - now_active, memories - active - now_active
        assert len(left) == 40 and left <= held and merged_before and not merged_before & held
        assert sum(searched_exactly) == len(merged_before)
        assert slow["dedup"]["merged"] > 10 and slow["dedup"]["supersessions_total"] > 10
        assert graph_state(incremental, before) == graph_state(full, before)
    finally:
        incremental.close()
        full.close()


@pytest.mark.parametrize("seed", [5])
def test_on_a_generated_store_an_incremental_run_matches_a_full_pass(tmp_path, seed):
    incremental, full, before = generated_copies(tmp_path, seed, change=True)
    try:
        fast, slow = consolidate(incremental), consolidate(full, full=True)
        assert fast["dedup"]["pass"] == fast["cluster"]["pass"] == "incremental"
        assert fast["dedup"]["neighbours_from"] == "an exact search"  # a fresh process keeps no graph
        assert fast["dedup"]["memories_considered"] < slow["dedup"]["memories_processed"] / 4
        assert slow["dedup"]["merged"] > 10 and slow["dedup"]["supersessions_total"] > 10  # not a trivial case
        assert graph_state(incremental, before) == graph_state(full, before)
    finally:
        incremental.close()
        full.close()


def test_on_the_kept_graph_an_incremental_clustering_leaves_nothing_for_a_full_pass(tmp_path):
    """Above the exact limit the incremental clustering reads its pairs from the kept graph (cells): a full pass
    over the same graph afterwards finds every cluster as the incremental pass left it."""
    services, other, _ = generated_copies(tmp_path, 7, change=False, consolidation_cluster_exact_limit=100)
    other.close()
    try:
        assert services.engine.run(["dedup", "cluster"], full=True)["success"]  # builds the graph, stores from it
        before = patterns(services)
        change_generated(services, np.random.default_rng(7), 20)
        fast = consolidate(services)["cluster"]
        assert fast["pass"] == "incremental" and fast["neighbours_from"] == "the kept similarity graph"
        assert fast["created"] + fast["updated"] + fast["retired_total"] > 0 and patterns(services) != before
        again = services.engine.run(["cluster"], full=True)["result"]["cluster"]
        assert (again["created"], again["updated"], again["retired_total"]) == (0, 0, 0)
        assert again["clusters_found"] == fast["clusters_found"]
        assert 0 < fast["memories_considered"] < again["memories_processed"]
    finally:
        services.close()


def test_changes_that_break_most_clusters_make_clustering_take_the_full_pass(tmp_path, monkeypatch):
    """Past a quarter of the candidates in MetaPatterns a change broke, read again whole with their texts (a new
    process keeps no subjects), costs about what a full pass does: the pass says so and takes it, and ends where
    a full pass does."""
    from consolidation.tasks import cluster_incremental

    monkeypatch.setattr(cluster_incremental, "SEARCH_FLOOR", 0)  # a small store is cheap whatever its share
    monkeypatch.setattr(cluster_incremental, "BROKEN_SHARE", 1.0)  # the rule for texts not read is the one shown
    incremental, full, before = generated_copies(tmp_path, 8, change=True)
    try:
        fast, slow = consolidate(incremental)["cluster"], consolidate(full, full=True)["cluster"]
        assert fast["pass"] == "full" and "whose texts this process has not read" in fast["pass_reason"]
        broken = int(fast["pass_reason"].split("hold ")[1].split(" of ")[0])
        assert broken > slow["memories_processed"] / 4
        assert graph_state(incremental, before) == graph_state(full, before)
    finally:
        incremental.close()
        full.close()


def test_in_the_process_that_clustered_last_broken_clusters_are_read_again_incrementally(tmp_path, monkeypatch):
    """There who the broken MetaPatterns' members are about is kept, so reading them again costs no text reads:
    the pass stays incremental until they hold half the candidates, and a full pass afterwards changes nothing."""
    from consolidation.tasks import cluster_incremental

    monkeypatch.setattr(cluster_incremental, "SEARCH_FLOOR", 0)
    services, other, _ = generated_copies(tmp_path, 8, change=False)
    other.close()
    try:
        assert services.engine.run(["dedup", "cluster"], full=True)["success"]
        change_generated(services, np.random.default_rng(8), 20)
        past_half = consolidate(services)["cluster"]
        assert past_half["pass"] == "full" and "texts" not in past_half["pass_reason"]
        broken = int(past_half["pass_reason"].split("hold ")[1].split(" of ")[0])
        assert broken > past_half["memories_processed"] / 2
        monkeypatch.setattr(cluster_incremental, "BROKEN_SHARE", 1.0)
        change_generated(services, np.random.default_rng(9), 20)
        fast = consolidate(services)["cluster"]
        assert fast["pass"] == "incremental", fast["pass_reason"]
        again = services.engine.run(["cluster"], full=True)["result"]["cluster"]
        assert (again["created"], again["updated"], again["retired_total"]) == (0, 0, 0)
        assert fast["memories_considered"] > again["memories_processed"] / 4  # past the share for unread texts
    finally:
        services.close()


# --- found by comparing the two passes over random operations --------------------------------------------------

OLD, ANNOUNCEMENT, RESTATEMENT, NOTE_A, NOTE_B = (f"00000000-0000-4000-8000-{k:012d}" for k in range(5))


def leaning(on: int, cosine: float, aside: int) -> np.ndarray:
    return unit(cosine * axis(on) + np.sqrt(1 - cosine ** 2) * axis(aside))


def links(services) -> dict[str, set[tuple[str, str]]]:
    return {relation: set(map(tuple, services.stores.graph.falkor.records(
        f"MATCH (a:Memory)-[:{relation}]->(b:Memory) RETURN a.id, b.id")))
        for relation in ("MERGED_INTO", "SUPERSEDES", "CONTRADICTS")}


def test_a_merge_that_moves_a_supersession_adds_no_contradiction_beside_it(tmp_path):
    """A new restatement becomes the canonical of an old statement and takes over the SUPERSEDES edge the old one
    had: the incremental pass, like the full one, does not add a contradiction beside it (links already made are
    left out once the merges are written)."""
    clock = Clock()
    twins = [build_services(settings_for(tmp_path / name), clock=clock) for name in ("incremental", "full")]
    try:
        for services in twins:
            for memory_id, vector, text, days in (
                    (OLD, axis(0), "We use Kafka for the payroll database", 2),
                    (ANNOUNCEMENT, leaning(0, 0.81, 1), "We replaced Kafka with Airflow for the payroll database", 1),
                    (NOTE_A, axis(5), "Lunch is at noon on Fridays", 1), (NOTE_B, axis(6), "Parking is behind", 1)):
                services.memories.create({**body(vector, text, timestamp=days_ago(days)), "id": memory_id})
            assert services.engine.run(["dedup"], full=True)["success"]
            assert links(services)["SUPERSEDES"] == {(ANNOUNCEMENT, OLD)}
            services.memories.create({**body(leaning(0, 0.97, 2), "we use kafka for the payroll database!"),
                                      "id": RESTATEMENT})
            # Better connected than the old statement (whose supersession is two edges, SUPERSEDES and the
            # EVOLVED_INTO mirroring it): it becomes the canonical.
            for note, relation in ((NOTE_A, "RELATES_TO"), (NOTE_B, "RELATES_TO"), (NOTE_A, "MENTIONS")):
                link(services, RESTATEMENT, note, relation)
        incremental, full = twins
        fast = incremental.engine.run(["dedup"])["result"]["dedup"]
        slow = full.engine.run(["dedup"], full=True)["result"]["dedup"]
        assert (fast["pass"], slow["pass"]) == ("incremental", "full")
        assert links(incremental) == links(full)
        assert links(full) == {"MERGED_INTO": {(OLD, RESTATEMENT)}, "SUPERSEDES": {(ANNOUNCEMENT, RESTATEMENT)},
                               "CONTRADICTS": set()}
    finally:
        for services in twins:
            services.close()


def test_an_overwritten_duplicate_leaves_its_merge(tmp_path):
    """An administrator's overwrite of a merged duplicate is a memory of its own: its merge is undone first (as a
    restore does), so the canonical no longer stands for its old text and a later supersession of the canonical
    does not reach it."""
    services = build_services(settings_for(tmp_path / "data"), clock=Clock())
    try:
        services.memories.create({**body(axis(0), "Backups of service juliet run on Thursday", timestamp=days_ago(6)),
                                  "id": OLD})
        services.memories.create({**body(leaning(0, 0.97, 2), "backups of service juliet run on thursday!",
                                         timestamp=days_ago(5)), "id": RESTATEMENT})
        assert services.engine.run(["dedup"])["result"]["dedup"]["merged"] == 1
        line = {**body(axis(7), "Backups of service alpha run on Monday", timestamp=days_ago(5)), "id": RESTATEMENT}
        report = services.memories.import_jsonl(json.dumps(line).encode(), overwrite=True)
        assert report.overwritten == 1
        replaced = services.memories.get(RESTATEMENT)
        assert replaced["content"] == line["content"] and not replaced["archived"] and replaced["merged_into"] is None
        assert links(services)["MERGED_INTO"] == set()
        services.memories.create({**body(leaning(0, 0.81, 1), "Backups of service juliet now run on Tuesday"),
                                  "id": ANNOUNCEMENT})
        assert services.engine.run(["dedup"])["success"]
        assert links(services)["SUPERSEDES"] == {(ANNOUNCEMENT, OLD)}
        assert services.memories.get(RESTATEMENT)["superseded_by"] is None
        assert services.memories.get(OLD)["superseded_by"] == ANNOUNCEMENT
    finally:
        services.close()


def test_an_incremental_pass_links_a_newcomer_only_to_statements_of_its_own_subject(tmp_path, clock):
    services = build_services(settings_for(tmp_path / "d", consolidation_full_pass_interval_seconds=86400,
                                           consolidation_cluster_low_relevance=True), clock=clock)
    try:
        rng = np.random.default_rng(9)
        base = unit(rng.standard_normal(DIM))

        def near(content):  # cosine about 0.97 to the base: far above the line and its margin with any other
            return add_memory(services, vector=unit(base + 0.15 * unit(rng.standard_normal(DIM))), content=content)

        maria = [near(f"Maria: the shelter needs volunteers on day {i}") for i in range(5)]
        assert services.engine.run(["cluster"])["result"]["cluster"]["clusters_found"] == 1
        john = near("John: the shelter needs volunteers on Sunday")
        another = near("Maria: the shelter needs volunteers on Sunday")
        clock.advance(hours=1)
        report = services.engine.run(["cluster"])["result"]["cluster"]
        assert report["pass"] == "incremental" and report["memories_changed"] == 2
        assert [sorted(c["member_ids"]) for c in report["clusters"]] == [sorted(maria + [another])]
        assert john not in report["clusters"][0]["member_ids"]
    finally:
        services.close()


def test_an_incremental_pass_reads_again_only_the_texts_changed_since_the_last_pass(tmp_path, clock, monkeypatch):
    """Who a broken cluster's unchanged members are about is kept from the pass before; a memory rewritten to be
    about someone else is read again and leaves its cluster."""
    services = build_services(settings_for(tmp_path / "d", consolidation_full_pass_interval_seconds=86400,
                                           consolidation_cluster_low_relevance=True), clock=clock)
    try:
        rng = np.random.default_rng(11)
        base = unit(rng.standard_normal(DIM))
        maria = [add_memory(services, vector=unit(base + 0.15 * unit(rng.standard_normal(DIM))),
                            content=f"Maria: the shelter needs volunteers on day {i}") for i in range(6)]
        assert services.engine.run(["cluster"])["result"]["cluster"]["clusters_found"] == 1
        graph = services.stores.graph
        parsed: list[str] = []
        monkeypatch.setattr(cluster_task, "subject_key", lambda text: parsed.append(text) or subject_key(text))
        rewritten = {**graph.get_memory(maria[0]), "content": "John: the shelter needs volunteers on day 0"}
        graph.replace_memories([rewritten])
        clock.advance(hours=1)
        report = services.engine.run(["cluster"])["result"]["cluster"]
        assert report["pass"] == "incremental" and report["memories_considered"] == 6
        assert parsed == [rewritten["content"]]
        assert [sorted(c["member_ids"]) for c in report["clusters"]] == [sorted(maria[1:])]
    finally:
        services.close()


def test_a_text_another_program_edits_and_embeds_again_is_read_again_by_the_next_full_pass(tmp_path, clock):
    """AutoMem's edits leave no change number, but it embeds an edited text again: a subject kept for the old
    vector is let go, and the memory, now about someone else, leaves its cluster."""
    services = build_services(settings_for(tmp_path / "d", consolidation_cluster_low_relevance=True), clock=clock)
    try:
        rng = np.random.default_rng(12)
        base = unit(rng.standard_normal(DIM))

        def near():
            return unit(base + 0.15 * unit(rng.standard_normal(DIM)))

        maria = [add_memory(services, vector=near(), content=f"Maria: the shelter needs volunteers on day {i}")
                 for i in range(6)]
        assert services.engine.run(["cluster"])["result"]["cluster"]["clusters_found"] == 1
        services.stores.graph.falkor.execute("MATCH (m:Memory {id: $id}) SET m.content = $content",
                                             {"id": maria[0], "content": "John: the shelter needs volunteers"})
        services.stores.vectors.upsert([VectorPoint(maria[0], near(), {})])
        clock.advance(hours=1)
        report = services.engine.run(["cluster"], full=True)["result"]["cluster"]
        assert [sorted(c["member_ids"]) for c in report["clusters"]] == [sorted(maria[1:])]
    finally:
        services.close()
