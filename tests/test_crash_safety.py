"""A process killed in the middle of a deletion leaves nothing the restart does not finish before it serves."""

import os
import subprocess
import sys
import textwrap

import pytest

from consolidation.service import build_services
from tests.conftest import TOKEN, add_memories, add_memory, days_ago, link, make_settings

# The fault: the process dies right after the named step of a deletion, as a kill -9 would leave it.
KILLER = textwrap.dedent("""
    import os, sys
    from consolidation.settings import load_settings
    from consolidation.service import build_services
    from consolidation.stores.qdrant_edge import EdgeVectorStore
    from consolidation.stores.tombstones import TombstoneStore

    step = sys.argv[1]
    target = EdgeVectorStore.delete if step == "vector_delete" else TombstoneStore.write_pending
    def die_after(self, *args, **kwargs):
        target(self, *args, **kwargs)
        os._exit(137)
    if step == "vector_delete":
        EdgeVectorStore.delete = die_after
    else:
        TombstoneStore.write_pending = die_after
    services = build_services(load_settings())
    services.engine.run(["forget"])
    sys.exit("the fault was not reached")
""")


def environment(data_dir):
    return {**os.environ, "ADMIN_API_TOKEN": TOKEN, "DATA_DIR": str(data_dir), "VECTOR_SIZE": "16", "EMBEDDING_PROVIDER": "hash",
            "CONSOLIDATION_DELETE_THRESHOLD": "0.05", "CONSOLIDATION_DELETE_AFTER_ARCHIVED_DAYS": "0",
            "CONSOLIDATION_LEASE_SECONDS": str(LEASE),
            "PYTHONPATH": os.getcwd()}


LEASE = 3


@pytest.mark.parametrize("step", ["vector_delete", "tombstone_write"])
def test_a_kill_mid_deletion_is_completed_by_the_next_tick(tmp_path, clock, step):
    data_dir = tmp_path / "data"
    settings = make_settings(data_dir, consolidation_delete_threshold=0.05, consolidation_lease_seconds=LEASE)
    services = build_services(settings, clock=clock)
    doomed = add_memory(services, timestamp=days_ago(400), last_accessed=days_ago(400), importance=0.3)
    friend = add_memory(services, type="Decision")
    link(services, doomed, friend)
    services.close()

    killed = subprocess.run([sys.executable, "-c", KILLER, step], env=environment(data_dir),
                            capture_output=True, text=True, timeout=120)
    assert killed.returncode == 137, killed.stderr

    restarted = build_services(settings, clock=clock)
    try:
        graph, vectors = restarted.stores.graph, restarted.stores.vectors
        # The dead process still held the run lease; it was a process of this host that no longer exists, so
        # the restart took the lease over at once and finished the deletion before serving anything.
        assert graph.get_memory(doomed) is None and vectors.payloads([doomed]) == {}
        assert restarted.engine.lifecycle.tombstones.pending_ids() == []
        report = restarted.engine.lifecycle.reconcile(repair=False, now=clock(), recheck_seconds=0)
        assert report["nodes_without_vectors_total"] == 0 and report["vectors_without_nodes_total"] == 0
        assert report["pending_deletions"] == 0
        assert restarted.engine.lifecycle.restore(doomed, clock(), 30)["edges_restored"] == 1
        assert graph.get_memory(doomed) is not None and vectors.payloads([doomed]) != {}
    finally:
        restarted.close()


def test_a_kill_mid_forget_of_twenty_thousand_leaves_no_orphan_and_every_memory_restorable(tmp_path, clock):
    data_dir = tmp_path / "data"
    settings = make_settings(data_dir, consolidation_delete_threshold=0.05, consolidation_grace_period_days=0)
    services = build_services(settings, clock=clock)
    count = 20_000
    ids = add_memories(services, count, timestamp=days_ago(400), last_accessed=days_ago(400), importance=0.3)
    services.close()

    # Killed once every vector is gone and before any node is: the most a crash can leave half done.
    killed = subprocess.run([sys.executable, "-c", KILLER, "vector_delete"],
                            env={**environment(data_dir), "CONSOLIDATION_GRACE_PERIOD_DAYS": "0"},
                            capture_output=True, text=True, timeout=240)
    assert killed.returncode == 137, killed.stderr

    restarted = build_services(settings, clock=clock)
    try:
        report = restarted.engine.reconcile(repair=False)
        assert (report["nodes_without_vectors_total"], report["vectors_without_nodes_total"]) == (0, 0)
        assert (report["pending_deletions"], report["graph_memories"], report["vector_points"]) == (0, 0, 0)
        falkor = restarted.stores.graph.falkor
        restorable = falkor.execute("MATCH (t:Tombstone) WHERE t.state = 'deleted' AND t.vector IS NOT NULL "
                                    "RETURN count(DISTINCT t.memory_id)")[0][0]
        assert restorable == count
        sample = ids[:: count // 20]
        for memory_id in sample:
            assert restarted.engine.lifecycle.restore(memory_id, clock(), 30)["restored_from"] == "tombstone"
        forget = restarted.engine.run(["forget"])["result"]["forget"]
        assert forget["deleted"] == 0 and forget["protected"] == len(sample)
        assert restarted.stores.graph.existing_ids(sample) == set(sample)
        assert set(restarted.stores.vectors.payloads(sample)) == set(sample)
    finally:
        restarted.close()


# The fault: the process dies right after the named step of a supersede or a purge asked on request.
REQUEST_KILLER = textwrap.dedent("""
    import os, sys
    from consolidation.settings import load_settings
    from consolidation.lifecycle.purge import PurgeAsk
    from consolidation.service import build_services
    from consolidation.stores.erasure import ErasureStore
    from consolidation.stores.graph import GraphStore
    from consolidation.stores.hygiene import HygieneStore
    from consolidation.stores.requests import RequestRecords
    from consolidation.stores.tombstones import TombstoneStore

    kind, step, target_id = sys.argv[1], sys.argv[2], sys.argv[3]
    owner, name = {"record": (RequestRecords, "begin"), "new_memory": (GraphStore, "create_memories"),
                   "edges": (HygieneStore, "supersede"), "tombstones": (TombstoneStore, "write_pending"),
                   "erased": (TombstoneStore, "erase"), "scrubbed": (ErasureStore, "scrub_edges"),
                   "redacted": (ErasureStore, "redact")}[step]
    original = getattr(owner, name)
    def die_after(self, *args, **kwargs):
        original(self, *args, **kwargs)
        os._exit(137)
    setattr(owner, name, die_after)
    services = build_services(load_settings())
    requests = services.memories.requests
    if kind == "supersede":
        requests.supersede(target_id, {"content": "User lives in Porto and teaches at the conservatory now."},
                           None, "admin")
    else:
        requests.purges.purge(PurgeAsk("dana@x.io", dry_run=False, erase=True), "admin")
    sys.exit("the fault was not reached")
""")


@pytest.mark.parametrize("step", ["record", "new_memory", "edges"])
def test_a_kill_mid_supersede_leaves_it_done_after_restart(tmp_path, clock, step):
    from tests.test_lifecycle import consistent

    data_dir = tmp_path / "data"
    settings = make_settings(data_dir)
    services = build_services(settings, clock=clock)
    older = add_memory(services, content="User lives in Lyon and teaches at the conservatory.")
    services.close()
    killed = subprocess.run([sys.executable, "-c", REQUEST_KILLER, "supersede", step, older],
                            env=environment(data_dir), capture_output=True, text=True, timeout=120)
    assert killed.returncode == 137, killed.stderr
    restarted = build_services(settings, clock=clock)
    try:
        memory = restarted.stores.graph.get_memory(older)
        newer = memory["superseded_by"]
        assert newer is not None and restarted.stores.graph.get_memory(newer) is not None
        assert restarted.stores.vectors.payloads([older])[older]["superseded"] is True
        assert restarted.stores.graph.count_memories() == 2  # one new memory, never two
        assert not restarted.memories.requests.has_pending()
        assert consistent(restarted) == []
    finally:
        restarted.close()


@pytest.mark.parametrize("step", ["record", "tombstones", "scrubbed", "erased"])
def test_a_kill_mid_purge_leaves_it_done_after_restart(tmp_path, clock, step):
    data_dir = tmp_path / "data"
    settings = make_settings(data_dir)
    services = build_services(settings, clock=clock)
    holding = [add_memory(services, content=f"Write to dana@x.io about {i}") for i in range(3)]
    kept = add_memory(services, content="Write to adana@x.io")
    services.close()
    killed = subprocess.run([sys.executable, "-c", REQUEST_KILLER, "purge", step, "-"],
                            env=environment(data_dir), capture_output=True, text=True, timeout=120)
    assert killed.returncode == 137, killed.stderr
    restarted = build_services(settings, clock=clock)
    try:
        assert not restarted.stores.graph.existing_ids(holding)
        assert restarted.stores.graph.existing_ids([kept]) == {kept}
        assert not restarted.memories.requests.has_pending()
        rows = restarted.stores.graph.falkor.execute("MATCH (t:Tombstone) RETURN t.state, t.memory")
        assert rows and all(state == "erased" and "dana" not in memory for state, memory in rows)
    finally:
        restarted.close()
