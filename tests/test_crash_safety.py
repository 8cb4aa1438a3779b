"""A process killed in the middle of a deletion leaves nothing the next tick cannot finish."""

import os
import subprocess
import sys
import textwrap
import time

import pytest

from consolidation.service import build_services
from tests.conftest import TOKEN, add_memory, days_ago, link, make_settings

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
    return {**os.environ, "ADMIN_API_TOKEN": TOKEN, "DATA_DIR": str(data_dir), "VECTOR_SIZE": "16",
            "CONSOLIDATION_DELETE_THRESHOLD": "0.05", "CONSOLIDATION_LEASE_SECONDS": str(LEASE),
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
        assert graph.get_memory(doomed) is not None  # the node is never deleted before its tombstone is final
        assert restarted.engine.lifecycle.tombstones.pending_ids() == [doomed]
        assert (vectors.payloads([doomed]) == {}) is (step == "vector_delete")

        # The dead process still holds the run lease: a live forget would look just the same, so nothing is
        # finished behind its back until the lease expires.
        restarted.scheduler.run_once()
        assert restarted.engine.lifecycle.tombstones.pending_ids() == [doomed]
        time.sleep(LEASE + 0.5)
        restarted.scheduler.run_once()

        assert graph.get_memory(doomed) is None and vectors.payloads([doomed]) == {}
        assert restarted.engine.lifecycle.tombstones.pending_ids() == []
        report = restarted.engine.lifecycle.reconcile(repair=False, recheck_seconds=0)
        assert report["nodes_without_vectors_total"] == 0 and report["vectors_without_nodes_total"] == 0
        assert restarted.engine.lifecycle.restore(doomed, clock())["edges_restored"] == 1
        assert graph.get_memory(doomed) is not None and vectors.payloads([doomed]) != {}
    finally:
        restarted.close()
