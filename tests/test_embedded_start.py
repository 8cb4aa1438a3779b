"""The embedded FalkorDB is waited for while it works and started again when it hangs before its first answer."""

import os
import signal
import subprocess
import time

import psutil
import pytest

from consolidation.errors import StoreUnavailable
from consolidation.stores import embedded_falkor
from consolidation.stores.embedded_falkor import EmbeddedServer, IdleWatch
from consolidation.stores.falkor import Falkor


@pytest.fixture
def hanging_starts(monkeypatch):
    """Stop (SIGSTOP) the first `count` servers started, as a server hung before answering would be: silent and
    using no CPU. Yields the pids of the servers stopped."""
    stopped: list[int] = []
    start = EmbeddedServer._start_redis
    monkeypatch.setattr(embedded_falkor, "STUCK_SECONDS", 1.5)

    def start_then_stop(server, count):
        start(server)
        if len(stopped) < count:
            pid = int(open(server.pidfile).read())
            os.kill(pid, signal.SIGSTOP)
            stopped.append(pid)

    def hang(count):
        monkeypatch.setattr(EmbeddedServer, "_start_redis", lambda server: start_then_stop(server, count))
        return stopped

    return hang


def gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def test_a_server_hung_before_answering_is_killed_and_started_again(tmp_path, hanging_starts):
    directory = tmp_path / "falkordb"
    kept = Falkor._embedded(directory, "memories")
    kept.execute("CREATE (:Memory {id: 'kept'})")
    kept.close()
    stopped = hanging_starts(1)
    reopened = Falkor._embedded(directory, "memories")
    try:
        assert len(stopped) == 1 and gone(stopped[0])
        assert reopened.execute("MATCH (m:Memory) RETURN m.id") == [["kept"]]  # its files were left as they were
        assert psutil.Process(reopened.client.pid).status() != psutil.STATUS_STOPPED
    finally:
        reopened.close()


def test_a_server_that_hangs_at_every_start_is_reported_and_none_is_left(tmp_path, hanging_starts):
    stopped = hanging_starts(embedded_falkor.START_ATTEMPTS)
    with pytest.raises(StoreUnavailable, match="hung before answering, 3 times"):
        Falkor._embedded(tmp_path / "falkordb", "memories")
    assert len(stopped) == 3 and all(gone(pid) for pid in stopped)
    assert not (tmp_path / "falkordb" / "graph.rdb.settings").exists()


def test_a_process_is_idle_only_while_it_uses_no_cpu():
    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        process = psutil.Process(sleeper.pid)
        while process.status() != psutil.STATUS_SLEEPING:  # past its start, which takes a little CPU time
            time.sleep(0.01)
        time.sleep(0.05)
        sleeping, busy = IdleWatch(process), IdleWatch(psutil.Process())
        started = time.monotonic()
        while time.monotonic() - started < 0.6:
            sum(range(10_000))  # this process works the whole time
        assert sleeping.seconds() >= 0.6
        assert busy.seconds() < 0.3
    finally:
        sleeper.kill()
        sleeper.wait()


def test_the_server_keeps_every_write_in_its_log_and_takes_no_snapshot_while_it_works(tmp_path):
    falkor = Falkor._embedded(tmp_path / "falkordb", "memories")
    try:
        assert falkor.client.config_get("appendonly") == {"appendonly": "yes"}
        assert falkor.client.config_get("save") == {"save": ""}  # falkordblite's own rules would snapshot
        for batch in range(1200):  # more writes than the 1,000 after which its rules snapshot (after 15 s)
            falkor.execute("CREATE (:Memory {id: $id})", {"id": str(batch)})
        persistence = falkor.client.info("persistence")
        assert persistence["rdb_changes_since_last_save"] >= 1200 and persistence["rdb_bgsave_in_progress"] == 0
    finally:
        falkor.close()
    reopened = Falkor._embedded(tmp_path / "falkordb", "memories")
    try:
        assert reopened.execute("MATCH (m:Memory) RETURN count(m)") == [[1200]]
    finally:
        reopened.close()
