"""Whether anyone waits on the stores: requests counted across processes, and writes paced only then."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from consolidation import demand as demand_module
from consolidation.demand import Demand
from consolidation.stores import falkor as falkor_module

from tests.conftest import answering

ROOT = Path(__file__).resolve().parent.parent
# Another process serving the same data directory: it enters a request, says so, and holds it until killed.
HOLDER = """
import sys, time
from pathlib import Path
from consolidation.demand import Demand
demand = Demand.at(Path(sys.argv[1]))
demand.enter()
print("in", flush=True)
time.sleep(60)
"""


def test_a_request_is_counted_for_every_other_thread_but_its_own(tmp_path, monkeypatch):
    monkeypatch.setattr(demand_module, "LINGER_SECONDS", 0.2)
    demand = Demand.at(tmp_path)
    assert demand is Demand.at(tmp_path)  # one a process: apps and stores of one directory share it
    assert demand.in_flight() == 0 and not demand.waiting()
    seen_inside: list[int] = []
    ended = threading.Event()
    request = answering(demand, until=lambda: seen_inside.append(demand.in_flight()) or ended.wait())
    assert demand.in_flight() == 1 and demand.waiting()
    assert seen_inside == [0]  # the request's own thread does not wait for itself
    ended.set()
    request.join()
    assert demand.in_flight() == 0 and demand.waiting()  # one just ended: the next is likely near
    time.sleep(0.25)
    assert not demand.waiting()


def test_requests_of_another_process_are_seen_until_it_dies(tmp_path):
    demand = Demand.at(tmp_path)
    other = subprocess.Popen([sys.executable, "-c", HOLDER, str(tmp_path)], stdout=subprocess.PIPE, text=True,
                             cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        assert other.stdout.readline().strip() == "in"
        assert demand.in_flight() == 1 and demand.waiting()
        other.send_signal(signal.SIGKILL)  # killed while answering: its count must not hold writers back
        other.wait(timeout=10)
        assert demand.in_flight() == 0 and not demand.waiting()
        claimed = Demand(tmp_path / demand_module.FILE_NAME)  # as a new process would: the dead one's slot
        claimed.enter()
        assert demand.in_flight() == 1
        claimed.leave()
    finally:
        other.kill()
        other.wait(timeout=10)


def test_a_run_gives_way_to_requests_in_flight_for_a_while_and_a_request_never(tmp_path, monkeypatch):
    monkeypatch.setattr(demand_module, "GIVE_WAY_SECONDS", 0.3)
    demand = Demand.at(tmp_path)
    started = time.monotonic()
    demand.give_way()
    assert time.monotonic() - started < 0.05  # nobody in flight
    request = answering(demand, until=lambda: time.sleep(0.1))
    started = time.monotonic()
    demand.give_way()
    assert 0.08 <= time.monotonic() - started < 0.3  # until the request ended
    request.join()
    ended = threading.Event()
    request = answering(demand, until=ended.wait)  # one that lasts
    started = time.monotonic()
    demand.give_way()
    assert 0.29 <= time.monotonic() - started < 1.0  # the run goes on after GIVE_WAY_SECONDS
    waited_inside: list[float] = []

    def another_request():
        began = time.monotonic()
        demand.give_way()
        waited_inside.append(time.monotonic() - began)

    answering(demand, until=another_request).join()
    assert waited_inside[0] < 0.05  # a request's own store calls never wait for other requests
    ended.set()
    request.join()


def test_writes_are_short_while_someone_waits_and_long_while_nobody_does(services, monkeypatch):
    monkeypatch.setattr(falkor_module, "IDLE_WRITE_SECONDS", 10.0)  # as a fast store would allow
    monkeypatch.setattr(falkor_module, "WRITE_TARGET_SECONDS", 10.0)
    monkeypatch.setattr(demand_module, "LINGER_SECONDS", 0.0)
    monkeypatch.setattr(demand_module, "GIVE_WAY_SECONDS", 0.0)
    falkor = services.stores.graph.falkor
    sizes: list[int] = []
    real = falkor.execute
    monkeypatch.setattr(falkor, "execute", lambda cypher, params=None, **kw: sizes.append(len(params["rows"]))
                        or real(cypher, params, **kw))
    write = "UNWIND $rows AS row CREATE (:Paced {n: row})"
    falkor.write_chunks(write, list(range(1500)), chunk=100)
    assert sizes == [100, 200, 400, 800]  # doubling past the short chunk's 100 rows while nobody waits
    sizes.clear()
    ended = threading.Event()
    request = answering(services.demand, until=ended.wait)
    try:
        falkor.write_chunks(write, list(range(350)), chunk=100)
    finally:
        ended.set()
        request.join()
    assert sizes == [100, 100, 100, 50]  # never more than the short chunk while a request is in flight
    assert int(real("MATCH (p:Paced) RETURN count(p)")[0][0]) == 1850


def test_a_request_waiting_for_a_run_is_counted_out_while_it_waits(tmp_path):
    demand = Demand.at(tmp_path)
    seen: list[int] = []

    def look() -> None:  # as the worker's run sees it, from another thread
        looking = threading.Thread(target=lambda: seen.append(demand.in_flight()))
        looking.start()
        looking.join()

    def waits_for_a_run() -> None:
        look()
        with demand.aside():
            look()
        look()

    answering(demand, until=waits_for_a_run).join()
    assert seen == [1, 0, 1] and demand.in_flight() == 0
