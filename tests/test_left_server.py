"""An embedded FalkorDB server left running by a killed web process is stopped, its data saved."""

import json
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import psutil

from consolidation.stores.embedded_falkor import stop_left_server
from consolidation.stores.falkor import Falkor

HOLDER = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from consolidation.stores.falkor import Falkor
    falkor = Falkor._embedded(Path(sys.argv[1]), "memories")
    falkor.execute("CREATE (:Memory {id: 'kept'})")
    print("ready", flush=True)
    time.sleep(600)
""")


def test_a_server_whose_process_is_alive_is_not_stopped(tmp_path):
    directory = tmp_path / "falkordb"
    falkor = Falkor._embedded(directory, "memories")  # this test's process owns it
    try:
        assert stop_left_server(directory) is None
        falkor.execute("CREATE (:Memory {id: 'still'})")
        assert falkor.execute("MATCH (m:Memory) RETURN m.id") == [["still"]]
    finally:
        falkor.close()


def test_a_server_left_by_a_killed_process_is_stopped_with_its_data_saved(tmp_path):
    directory = tmp_path / "falkordb"
    assert stop_left_server(directory) is None  # nothing there
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(directory)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "ready"
    finally:
        holder.send_signal(signal.SIGKILL)  # no chance to close its stores
        holder.wait(30)
    recorded = json.loads((directory / "graph.rdb.settings").read_text())
    server = int(Path(recorded["pidfile"]).read_text())
    assert psutil.pid_exists(server)  # the server outlived the process that started it
    assert stop_left_server(directory) == server
    assert not psutil.pid_exists(server) or psutil.Process(server).status() == psutil.STATUS_ZOMBIE
    assert not (directory / "graph.rdb.settings").exists()
    assert stop_left_server(directory) is None  # stopping twice does nothing
    reopened = Falkor._embedded(directory, "memories")
    try:
        assert reopened.execute("MATCH (m:Memory) RETURN m.id") == [["kept"]]
    finally:
        reopened.close()
    assert stop_left_server(directory) is None  # a server closed cleanly leaves nothing to stop
