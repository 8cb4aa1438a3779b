"""Several real service processes on one FalkorDB server: exactly-once scheduling, the run lock, a killed lease
holder, store outages, metrics across gunicorn workers, and logs without the token."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from datetime import datetime

import pytest
import requests
from falkordb import Graph

from tests.conftest import TOKEN, metric_samples
from tests.processes import AUTH, ROOT, FalkorServer, free_port, gunicorn, service_env, stop, wait_answering
from tests.qdrant_rest import QdrantRestServer

pytestmark = pytest.mark.timeout(180)


class Fleet:
    """Service processes sharing one FalkorDB server and one Qdrant (REST) server; their output is kept."""

    def __init__(self, tmp_path, falkordb: FalkorServer, qdrant: QdrantRestServer):
        self.tmp_path, self.falkordb, self.qdrant = tmp_path, falkordb, qdrant
        self.processes: list[subprocess.Popen] = []
        self.outputs: list[str] = []

    def settings(self, **settings) -> dict[str, str]:
        return {"FALKORDB_HOST": "127.0.0.1", "FALKORDB_PORT": str(self.falkordb.port), "QDRANT_URL": self.qdrant.url,
                **settings}

    def start(self, count: int, *args: str, healthy: bool = True, **settings) -> list[str]:
        started = []
        for _ in range(count):
            port = free_port()
            data_dir = self.tmp_path / f"service-{len(self.processes)}"
            self.processes.append(gunicorn(data_dir, port, *args, **self.settings(**settings)))
            started.append((f"http://127.0.0.1:{port}", self.processes[-1]))
        for url, process in started:
            wait_answering(url, process, healthy=healthy)
        return [url for url, _ in started]

    def stop(self) -> list[str]:
        self.outputs += [stop(process) for process in self.processes]
        self.processes = []
        return self.outputs


@pytest.fixture
def falkordb(tmp_path):
    server = FalkorServer(tmp_path / "falkordb").start()
    yield server
    server.kill()


@pytest.fixture
def qdrant():
    server = QdrantRestServer().start()
    yield server
    server.stop()


@pytest.fixture
def fleet(tmp_path, falkordb, qdrant):
    fleet = Fleet(tmp_path, falkordb, qdrant)
    yield fleet
    outputs = fleet.stop()
    # Every test here sends the token with each request: it must never reach a log line.
    assert outputs and all("gunicorn.access" in output for output in outputs)
    assert not any(TOKEN in output for output in outputs)


def status(url: str) -> dict:
    answer = requests.get(f"{url}/consolidate/status", headers=AUTH, timeout=10)
    assert answer.status_code == 200, answer.text
    return answer.json()


def post_run(url: str, **body) -> requests.Response:
    return requests.post(f"{url}/consolidate", json=body, headers=AUTH, timeout=60)


def ran_at(entry: dict) -> float:
    return datetime.fromisoformat(entry["ran_at"]).timestamp()


# child: each replica serves HTTP in one process and consolidates in its worker child (the image's default).
@pytest.mark.parametrize("worker", ["inline", "child"])
def test_each_due_task_runs_once_per_interval_across_three_processes(fleet, falkordb, worker):
    intervals = {"decay": 2, "dedup": 3, "creative": 3, "cluster": 4}
    tick = 0.2
    urls = fleet.start(3, CONSOLIDATION_WORKER=worker, CONSOLIDATION_TICK_SECONDS=tick, CONSOLIDATION_HISTORY_LIMIT=500,
                       CONSOLIDATION_FORGET_INTERVAL_SECONDS=0,
                       **{f"CONSOLIDATION_{task.upper()}_INTERVAL_SECONDS": s for task, s in intervals.items()})
    time.sleep(12)
    views = [status(url) for url in urls]
    fleet.stop()

    for view in views:  # all three schedulers were alive and competing for the same due tasks
        assert view["scheduler"]["alive"] and view["scheduler"]["last_tick_at"] is not None
    if worker == "child":  # three worker processes, none of them a process serving HTTP
        pids = {w["pid"] for w in views[0]["scheduler"]["workers"]}
        assert len(pids) == 3 and not pids & {process.pid for process in fleet.processes}
    # Read after every process stopped: nothing can run between this and the run records below.
    history = json.loads(falkordb.query("MATCH (c:ConsolidationControl) RETURN c.history")[1][0][0])
    assert {entry["task"] for entry in history} == set(intervals)  # forget is disabled
    for task, interval in intervals.items():
        runs = sorted(ran_at(entry) for entry in history if entry["task"] == task)
        assert all(entry["success"] and entry["trigger"] == "schedule" for entry in history if entry["task"] == task)
        gaps = [later - earlier for earlier, later in zip(runs, runs[1:])]
        assert len(runs) >= 12 // (interval + 1)
        # Never twice in an interval (three processes tick five times a second each), never a missed interval.
        assert min(gaps) >= interval - 0.01, (task, gaps)
        assert max(gaps) <= interval + 1.0, (task, gaps)
    run_ids = {entry["run_id"] for entry in history}
    states = falkordb.query("MATCH (r:ConsolidationServiceRun) RETURN r.id, r.state")[1]
    assert {run_id for run_id, _ in states} == run_ids
    assert {state for _, state in states} == {"succeeded"}


def test_three_replicas_split_six_graphs_and_run_each_graphs_due_tasks_once_per_interval(fleet, falkordb):
    graphs = [f"tenant_{i}" for i in range(6)]
    for graph in graphs:
        seed_memories(falkordb, 30000, graph)  # a decay of each graph takes a noticeable time
    intervals = {"decay": 8, "dedup": 12}
    urls = fleet.start(3, FALKORDB_GRAPHS="tenant_*", CONSOLIDATION_TICK_SECONDS=0.2, CONSOLIDATION_HISTORY_LIMIT=500,
                       **{f"CONSOLIDATION_{task.upper()}_INTERVAL_SECONDS": intervals.get(task, 0)
                          for task in ("decay", "dedup", "creative", "cluster", "forget")})
    time.sleep(20)
    views = [status(url) for url in urls]
    fleet.stop()

    for view in views:  # every replica serves every graph and sees each one's schedule
        assert [entry["graph"] for entry in view["graphs"]] == graphs and view["scheduler"]["last_error"] is None
    holders, spans = {}, []
    for graph in graphs:
        runs = graph_runs(falkordb, graph)
        history = json.loads(falkordb.client().execute_command(
            "GRAPH.QUERY", graph, "MATCH (c:ConsolidationControl) RETURN c.history")[1][0][0])
        for task, interval in intervals.items():
            times = sorted(ran_at(entry) for entry in history if entry["task"] == task)
            gaps = [later - earlier for earlier, later in zip(times, times[1:])]
            assert len(times) >= 20 // (interval + 2), (graph, task, times)
            assert min(gaps, default=interval) >= interval - 0.01, (graph, task, gaps)  # never twice an interval
        assert {run["state"] for run in runs} == {"succeeded"} and all(run["graph"] == graph for run in runs)
        for run in runs:
            holders.setdefault(run["holder"].rsplit(":", 1)[0], []).append(graph)
        first = min(runs, key=lambda run: run["started_at"])
        spans.append((first["started_at"], first["finished_at"]))
    # The work was spread: every replica ran graphs, and the first round over six graphs took much less
    # than the six runs back to back would have.
    assert len(holders) == 3, holders
    started = min(datetime.fromisoformat(s).timestamp() for s, _ in spans)
    finished = max(datetime.fromisoformat(f).timestamp() for _, f in spans)
    one_after_another = sum(datetime.fromisoformat(f).timestamp() - datetime.fromisoformat(s).timestamp()
                            for s, f in spans)
    print(f"six graphs: {finished - started:.2f} s over three replicas, {one_after_another:.2f} s back to back")
    assert finished - started < 0.8 * one_after_another


def graph_runs(falkordb: FalkorServer, graph: str) -> list[dict]:
    fields = ("id", "graph", "state", "holder", "started_at", "finished_at")
    rows = falkordb.client().execute_command(
        "GRAPH.QUERY", graph, "MATCH (r:ConsolidationServiceRun) RETURN " + ", ".join(f"r.{f}" for f in fields))[1]
    return [dict(zip(fields, row)) for row in rows]


def seed_memories(falkordb: FalkorServer, count: int, graph: str = "memories") -> None:
    """Old memories written straight into the graph: enough that decaying them takes a noticeable time."""
    ids = [str(uuid.uuid4()) for _ in range(count)]
    Graph(falkordb.client(), graph).query(
        "UNWIND $ids AS id CREATE (:Memory {id: id, content: 'seeded', type: 'Context', importance: 0.5, "
        "confidence: 0.8, timestamp: '2026-01-01T00:00:00+00:00', relevance_score: 1.0})",
        {"ids": ids},
    )


@pytest.mark.parametrize("worker", ["inline", "child"])
def test_concurrent_manual_runs_on_three_processes_one_202_the_others_409(fleet, falkordb, worker):
    seed_memories(falkordb, 40000)
    urls = fleet.start(3, CONSOLIDATION_WORKER=worker)
    barrier = threading.Barrier(len(urls))
    answers: list[requests.Response | None] = [None] * len(urls)

    def post(index: int) -> None:
        barrier.wait()
        answers[index] = post_run(urls[index], task="decay")

    threads = [threading.Thread(target=post, args=(i,)) for i in range(len(urls))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    codes = sorted(answer.status_code for answer in answers)
    accepted_runs = [answer.json()["run_id"] for answer in answers if answer.status_code == 202]
    for answer in answers:
        if answer.status_code == 409:
            assert answer.json()["error"] == "run_in_progress" and answer.json()["run_id"] in accepted_runs
    if codes != [202, 409, 409]:
        # A request the loaded machine delayed past the end of the first run may start another: never two at once.
        assert codes == [202, 202, 409] or codes == [202, 202, 202], codes
        spans = sorted((run["started_at"], run["finished_at"] or "~") for run in
                       (follow(f"{urls[0]}/consolidate/runs/{run_id}")[-1] for run_id in accepted_runs))
        assert all(earlier[1] <= later[0] for earlier, later in zip(spans, spans[1:])), spans
        return
    accepted_at = next(i for i, answer in enumerate(answers) if answer.status_code == 202)
    accepted = answers[accepted_at].json()

    assert accepted["state"] == ("queued" if worker == "child" else "running")
    other = urls[(accepted_at + 1) % len(urls)]  # any process can follow the run
    deadline = time.monotonic() + 10
    # A queued run: until a worker has begun it (the lease taken, then the record marked running).
    while (current := status(other)["current_run"]) is None or current["state"] == "queued":
        assert time.monotonic() < deadline
    assert current["run_id"] == accepted["run_id"] and current["state"] == "running"
    seen = follow(other + accepted["status_url"])
    assert any(view["state"] == "running" and (view["progress"] or {}).get("total") == 40000 for view in seen)
    run = seen[-1]
    assert run["state"] == "succeeded" and run["holder"], run["result"]
    assert run["progress"] == {**run["progress"], "task": "decay", "processed": 40000, "total": 40000}
    assert run["result"]["decay"]["memories_processed"] == 40000


def follow(run_url: str, seconds: float = 60) -> list[dict]:
    """Every view of a run, polled until it is no longer running."""
    seen = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        seen.append(requests.get(run_url, headers=AUTH, timeout=10).json())
        if seen[-1]["state"] not in ("running", "queued"):
            return seen
        time.sleep(0.05)
    raise AssertionError(f"run still running after {seconds} s")


# A process that takes the run lease and keeps renewing it, then is killed -9 by the test (as if it died mid-run).
# Named as a process of another host (argv[1] "other-host"), it stands for a replica on another machine.
HOLDER = textwrap.dedent("""
    import sys, time
    from consolidation.service import build_services
    from consolidation.settings import load_settings

    engine = build_services(load_settings()).engine
    if sys.argv[1] == "other-host":
        engine.holder = "another-machine:4242:abcdef"
    run = engine.begin(["decay"], dry_run=False, trigger="manual")
    engine._lease_keeper(run).start()
    print(run.id, flush=True)
    time.sleep(600)
""")


# A holder of this host that no longer exists is taken over at once: tests/test_lifecycle.py, test_crash_safety.py.
def test_a_killed_lease_holder_of_another_host_is_taken_over_once_its_lease_expires(fleet, falkordb, tmp_path):
    lease = 3
    [url] = fleet.start(1, CONSOLIDATION_LEASE_SECONDS=lease)
    env = service_env(tmp_path / "holder", free_port(), **fleet.settings(CONSOLIDATION_LEASE_SECONDS=lease,
                                                                         CONSOLIDATION_SCHEDULER_ENABLED="false"))
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, "other-host"], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                              text=True)
    try:
        held_run = holder.stdout.readline().strip()
        assert held_run, "the holder did not start"
        assert post_run(url).json()["run_id"] == held_run
        time.sleep(lease + 1)  # longer than the lease: only the holder's renewals keep it
        refused = post_run(url)
        assert refused.status_code == 409 and refused.json()["run_id"] == held_run
    finally:
        holder.kill()
        holder.wait(10)
    killed_at = time.monotonic()

    while (answer := post_run(url, task="decay", wait=True)).status_code == 409:
        assert time.monotonic() - killed_at < lease + 3, "the dead holder's lease was never taken over"
        time.sleep(0.1)
    waited = time.monotonic() - killed_at
    assert answer.status_code == 200 and answer.json()["success"]
    # The lease was renewed every lease/3 seconds, so at least 2/3 of it was left when the holder died.
    assert waited >= lease * 2 / 3 - 0.3
    abandoned = requests.get(f"{url}/consolidate/runs/{held_run}", headers=AUTH, timeout=10).json()
    assert abandoned["state"] == "abandoned" and "lease expired or was taken over" in abandoned["error"]


def test_falkordb_down_at_start_and_mid_service_gives_503_then_recovers_without_restart(fleet, falkordb):
    falkordb.kill()
    [url] = fleet.start(1, healthy=False, CONSOLIDATION_TICK_SECONDS=0.3, CONSOLIDATION_DECAY_INTERVAL_SECONDS=1)
    for _ in range(2):  # down at start, then down again under a running service
        assert_graph_outage_reported(url)
        falkordb.start()
        wait_until(lambda: requests.get(f"{url}/health", timeout=10).status_code == 200)
        started = time.time()
        # The scheduler kept ticking through the outage and runs again without a restart.
        wait_until(lambda: any(ran_at(e) >= started for e in status(url)["history"] if e["task"] == "decay"))
        created = requests.post(f"{url}/memory", json={"content": "written after the outage"}, headers=AUTH,
                                timeout=10)
        assert created.status_code == 201, created.text
        assert status(url)["store_counts"]["in_sync"]  # the refused writes left no vector behind
        falkordb.kill()
    falkordb.start()


def assert_graph_outage_reported(url: str) -> None:
    health = requests.get(f"{url}/health", timeout=10)
    assert health.status_code == 503
    assert health.json()["stores"]["graph"]["ok"] is False and health.json()["stores"]["vectors"]["ok"] is True
    for answer in (requests.get(f"{url}/consolidate/status", headers=AUTH, timeout=10),
                   requests.post(f"{url}/memory", json={"content": "written in an outage"}, headers=AUTH, timeout=10),
                   post_run(url)):
        assert answer.status_code == 503, answer.text
        assert answer.json()["error"] == "store_unavailable" and answer.json()["store"] == "graph"
        assert "FalkorDB" in answer.json()["detail"]


def wait_until(condition, seconds: float = 15) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if condition():
                return
        except (requests.RequestException, AssertionError):
            pass
        time.sleep(0.2)
    raise AssertionError("condition not reached in time")


def test_two_workers_share_metrics_and_a_down_qdrant_is_reported(fleet):
    # QDRANT_URL points at a port nobody listens on: the service starts anyway and says which store is down.
    [url] = fleet.start(1, healthy=False, WEB_CONCURRENCY=2, QDRANT_URL=f"http://127.0.0.1:{free_port()}")
    health_503 = ("consolidation_http_requests_total", (("method", "GET"), ("route", "/health"), ("status", "503")))
    before = metric_samples(requests.get(f"{url}/metrics", timeout=10).text).get(health_503, 0)
    answers = []

    def check_health() -> None:
        for _ in range(10):
            answers.append(requests.get(f"{url}/health", timeout=10))

    threads = [threading.Thread(target=check_health) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(answers) == 40
    for answer in answers:
        assert answer.status_code == 503
        assert answer.json()["stores"]["vectors"]["ok"] is False and answer.json()["stores"]["graph"]["ok"] is True
    refused = post_run(url)
    assert refused.status_code == 503 and refused.json()["store"] == "vectors"

    samples = metric_samples(requests.get(f"{url}/metrics", timeout=10).text)
    # Both workers answered some of the 40 requests; the scrape, served by one of them, counts all of them.
    assert samples[health_503] - before == 40
    assert samples[("consolidation_store_up", (("store", "graph"),))] == 1
    assert samples[("consolidation_store_up", (("store", "vectors"),))] == 0

