"""Runs computed apart from the serving process: the run queue, the worker, embedded vectors served to it, and a
real service whose worker child runs what is asked over HTTP."""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import tempfile
import threading
import time
import uuid
from multiprocessing.connection import Client
from pathlib import Path

import numpy as np
import pytest
import requests

from consolidation import demand as demand_module
from consolidation.api import create_app
from consolidation.errors import StoreUnavailable
from consolidation.service import build_services
from consolidation import DEFAULT_TASKS
from consolidation.stores.vectors import VectorPoint
from consolidation.worker import runners as worker_runners
from consolidation.worker import vectors as worker_vectors
from consolidation.worker.process import Worker, WorkerLinks
from consolidation.worker.vectors import RemoteVectors, VectorServer
from tests.conftest import add_memories, answering, make_settings, unit
from tests.processes import AUTH, free_port, gunicorn, stop, wait_answering


class InProcessWorker:
    """A worker wired to the serving services exactly as a child is (the embedded FalkorDB's socket, the vector
    server), on a thread of this process instead of a process of its own."""

    def __init__(self, served, clock):
        self.directory = tempfile.mkdtemp(prefix="wt-")
        socket_path = Path(self.directory) / "vectors.sock"
        key = secrets.token_bytes(32)
        self.server = VectorServer(socket_path, key, lambda name: served.graphs.get(name).stores.vectors)
        links = WorkerLinks(served.graphs.connection().socket_path, socket_path, key)
        self.services = build_services(served.settings, clock=clock, links=links, worker=True)
        self.worker = Worker(self.services.settings, self.services.graphs, self.services.scheduler)
        self.thread: threading.Thread | None = None

    def start(self) -> InProcessWorker:
        self.thread = threading.Thread(target=self.worker.run, daemon=True)
        self.thread.start()
        return self

    def close(self) -> None:
        self.worker.stop()
        if self.thread is not None:
            self.thread.join(30)
        self.services.close()
        self.server.close()
        shutil.rmtree(self.directory, ignore_errors=True)


@pytest.fixture
def queued(tmp_path, clock):
    """A serving app whose runs are queued for a worker (CONSOLIDATION_WORKER=child), and that worker."""
    settings = make_settings(tmp_path / "data", consolidation_worker="child")
    served = build_services(settings, clock=clock)
    app = create_app(settings, services=served, start_scheduler=False)  # no child: the test's worker instead
    worker = InProcessWorker(served, clock)
    yield app.test_client(), served, worker
    worker.close()
    served.close()


def test_a_run_asked_over_http_is_computed_by_the_worker_and_answered_as_an_inline_run(queued, auth):
    client, served, worker = queued
    ids = add_memories(served, 30)
    worker.start()
    answer = client.post("/consolidate", json={"wait": True}, headers=auth)
    assert answer.status_code == 200, answer.json
    result = answer.json
    assert result["success"] and list(result["result"]) == list(DEFAULT_TASKS)
    assert result["result"]["decay"]["memories_processed"] == len(ids)
    record = client.get(f"/consolidate/runs/{result['run_id']}", headers=auth).json
    assert record["state"] == "succeeded" and record["holder"] == worker.services.engine.holder != served.engine.holder
    assert record["queued_at"] <= record["started_at"]
    # The worker wrote the scores through the serving process's vector store.
    payloads = served.stores.vectors.payloads(ids)
    scores = dict(zip(*served.stores.graph.falkor.scan_memories("true", "m.id, m.relevance_score")))
    assert all(payloads[i]["relevance_score"] == pytest.approx(float(scores[i])) for i in ids)


def test_a_queued_run_is_followed_refused_twice_and_cancelled_before_a_worker_begins_it(queued, auth):
    client, served, worker = queued
    worker.worker._beat()  # alive, but not taking runs yet
    first = client.post("/consolidate", json={"task": "decay"}, headers=auth)
    assert first.status_code == 202 and first.json["state"] == "queued"
    run_id = first.json["run_id"]
    second = client.post("/consolidate", json={"task": "dedup"}, headers=auth)
    assert second.status_code == 409 and second.json["run_id"] == run_id
    assert client.get(f"/consolidate/runs/{run_id}", headers=auth).json["state"] == "queued"
    assert client.post(f"/consolidate/runs/{run_id}/cancel", headers=auth).status_code == 200
    worker.start()
    time.sleep(1.5)  # the worker pops the run and leaves it: it is no longer queued
    record = client.get(f"/consolidate/runs/{run_id}", headers=auth).json
    assert record["state"] == "cancelled" and record["finished_at"] and not record.get("holder")
    assert served.engine.control.current_lease() is None and not served.engine.control.state()["history"]
    again = client.post("/consolidate", json={"task": "decay", "wait": True}, headers=auth)
    assert again.status_code == 200 and again.json["success"]


def test_without_a_worker_a_run_asked_is_a_503_naming_the_missing_worker(queued, auth, monkeypatch):
    client, _, _ = queued
    monkeypatch.setattr(worker_runners, "WORKER_START_SECONDS", 0.3)
    answer = client.post("/consolidate", json={"wait": True}, headers=auth)
    assert answer.status_code == 503 and answer.json["error"] == "no_worker"
    assert "worker" in answer.json["detail"]


def test_status_names_the_worker_processes_and_where_runs_compute(queued, auth):
    client, _, worker = queued
    worker.start()
    deadline = time.monotonic() + 10
    while True:
        scheduler = client.get("/consolidate/status", headers=auth).json["scheduler"]
        if scheduler["alive"] or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert scheduler["runs_in"] == "child" and scheduler["alive"]
    assert [w["holder"] for w in scheduler["workers"]] == [worker.worker.holder]
    assert scheduler["workers"][0]["pid"] == os.getpid()


def test_the_vector_server_waits_while_requests_are_answered(services, app, auth, monkeypatch):
    """A worker child's call into the serving process's vectors waits for the requests in flight (at most
    GIVE_WAY_SECONDS): the run can wait, a request's client cannot."""
    monkeypatch.setattr(demand_module, "GIVE_WAY_SECONDS", 0.3)
    seen_during_request = []
    real_status = services.engine.status

    def status():
        looking = threading.Thread(target=lambda: seen_during_request.append(services.demand.in_flight()))
        looking.start()
        looking.join()
        return real_status()

    monkeypatch.setattr(services.engine, "status", status)
    assert app.test_client().get("/consolidate/status", headers=auth).status_code == 200
    assert seen_during_request == [1] and services.demand.in_flight() == 0  # counted in, and out again

    ids = add_memories(services, 3)
    directory = tempfile.mkdtemp(prefix="wt-")
    path, key = Path(directory) / "v.sock", secrets.token_bytes(16)
    server = VectorServer(path, key, lambda name: services.graphs.get(name).stores.vectors, services.demand)
    remote = RemoteVectors(path, key, services.engine.graph_name)
    ended = threading.Event()
    try:
        started = time.monotonic()
        remote.set_relevance(ids[:1], [0.5])
        idle = time.monotonic() - started
        request = answering(services.demand, until=lambda: time.sleep(0.1))  # a request being answered
        started = time.monotonic()
        remote.set_relevance(ids[:1], [0.4])
        waited = time.monotonic() - started
        request.join()
        assert idle < 0.1 and 0.09 <= waited < 0.3  # until the request ended, not the whole 0.3 s
        request = answering(services.demand, until=ended.wait)  # one that lasts: the call goes after 0.3 s
        started = time.monotonic()
        remote.set_relevance(ids[:1], [0.3])
        assert 0.29 <= time.monotonic() - started < 1.0
        assert services.stores.vectors.payloads(ids[:1])[ids[0]]["relevance_score"] == pytest.approx(0.3)
    finally:
        ended.set()
        remote.close()
        server.close()
        shutil.rmtree(directory, ignore_errors=True)


def test_the_vector_server_hands_over_every_call_exactly(services, tmp_path, monkeypatch):
    monkeypatch.setattr(worker_vectors, "BYTES_PER_SEND", 1000)  # a matrix in many pieces
    monkeypatch.setattr(worker_vectors, "IDS_PER_CALL", 7)
    monkeypatch.setattr(worker_vectors, "ITEMS_PER_SEND", 6)  # long id lists in several messages
    ids = add_memories(services, 40)
    directory = tempfile.mkdtemp(prefix="wt-")
    path, key = Path(directory) / "v.sock", secrets.token_bytes(16)
    server = VectorServer(path, key, lambda name: services.graphs.get(name).stores.vectors)
    try:
        remote = RemoteVectors(path, key, services.engine.graph_name)
        local = services.stores.vectors
        remote_ids, remote_matrix = remote.all_vectors()
        local_ids, local_matrix = local.all_vectors()
        assert remote_ids == local_ids and np.array_equal(remote_matrix, local_matrix)
        asked = ids[::-3] + ["not-a-memory"]
        got_ids, got = remote.vectors(asked)
        want_ids, want = local.vectors(asked)
        assert got_ids == want_ids and np.array_equal(got, want)
        remote.set_relevance(ids[:20], [i / 100 for i in range(20)])
        remote.set_archived(ids[20:25], True, state="merged")
        payloads = local.payloads(ids[:25])
        assert [payloads[i]["relevance_score"] for i in ids[:20]] == pytest.approx([i / 100 for i in range(20)])
        assert all(payloads[i]["state"] == "merged" and payloads[i]["archived"] for i in ids[20:25])
        fresh = str(uuid.uuid4())
        remote.upsert([VectorPoint(fresh, unit(np.arange(1, 17)), {"relevance_score": 0.9})])
        remote.delete(ids[30:])
        assert remote.count() == local.count() == 31 and fresh in local.ids()
        assert remote.ids() == local.ids()
        with pytest.raises(Exception):  # a caller without the key is refused
            Client(str(path), family="AF_UNIX", authkey=b"wrong")
        server.close()
        remote.close()
        with pytest.raises(StoreUnavailable):
            remote.count()
    finally:
        server.close()
        shutil.rmtree(directory, ignore_errors=True)


def worker_pid(url: str, seconds: float = 60) -> int:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        workers = requests.get(f"{url}/consolidate/status", headers=AUTH, timeout=10).json()["scheduler"]["workers"]
        if workers:
            return workers[0]["pid"]
        time.sleep(0.2)
    raise AssertionError("no worker announced itself")


@pytest.mark.timeout(180)
def test_a_served_service_runs_in_its_worker_child_and_restarts_it_after_a_kill(tmp_path):
    port = free_port()
    process = gunicorn(tmp_path / "data", port, CONSOLIDATION_WORKER="child")
    url = f"http://127.0.0.1:{port}"
    try:
        wait_answering(url, process)
        child = worker_pid(url)
        assert child != process.pid
        created = requests.post(f"{url}/memory", json={"content": "the worker child test", "type": "Context"},
                                headers=AUTH, timeout=10)
        assert created.status_code == 201, created.text
        run = requests.post(f"{url}/consolidate", json={"wait": True}, headers=AUTH, timeout=60).json()
        assert run["success"] and run["result"]["decay"]["memories_processed"] == 1
        record = requests.get(f"{url}/consolidate/runs/{run['run_id']}", headers=AUTH, timeout=10).json()
        assert record["holder"].split(":")[1] == str(child)
        # Health, metrics and status agree on what computes the schedule (the child), and the child's runs count.
        assert requests.get(f"{url}/health", timeout=10).json()["scheduler_alive"] is True
        status = requests.get(f"{url}/consolidate/status", headers=AUTH, timeout=10).json()
        assert status["scheduler"]["alive"] is True and status["scheduler"]["runs_in"] == "child"
        metrics = requests.get(f"{url}/metrics", timeout=10).text
        assert "consolidation_scheduler_alive 1.0" in metrics
        for task in ("decay", "dedup", "creative", "cluster", "forget"):
            assert f'consolidation_runs_total{{dry_run="false",outcome="success",task="{task}"}} 1.0' in metrics
        os.kill(child, signal.SIGKILL)
        deadline = time.monotonic() + 30
        while worker_pid(url) == child:  # the dead one's heartbeat expires, the restarted one announces itself
            assert time.monotonic() < deadline
            time.sleep(0.5)
        again = requests.post(f"{url}/consolidate", json={"task": "decay", "wait": True}, headers=AUTH, timeout=60)
        assert again.status_code == 200 and again.json()["success"]
    finally:
        output = stop(process)
    assert "worker child exited" in output and "consolidation worker stopped" in output
