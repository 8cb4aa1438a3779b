"""Latency under runs: 50 requests/s (status, create, read) for 30 s while full runs go back to back.

    python bench/load_bench.py --memories 50000 [--stores embedded server] [--workers child inline]

For each store set-up (embedded FalkorDB, or a FalkorDB server on loopback; the vectors in embedded Qdrant
either way) it loads N memories once, then for each CONSOLIDATION_WORKER starts the service under gunicorn
as `make run` does and measures: the requests alone (no run), then the same load while `POST /consolidate
{"full": true, "wait": true}` follows the last one. The load is open-loop: each request leaves at its planned
moment whatever the others do, so a stall shows as latency instead of as fewer requests. Prints a Markdown
table.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import requests

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

from consolidation_bench import TOKEN, bench_settings, load_store, progress  # noqa: E402
from tests.processes import FalkorServer, free_port  # noqa: E402

AUTH = {"Authorization": f"Bearer {TOKEN}"}
KINDS = ("status", "create", "read")
TARGETS = {"status": 50.0, "create": 100.0, "read": 100.0}  # p99, ms


class Service:
    """The service under gunicorn, as `make run` starts it, on a loaded data directory."""

    def __init__(self, data_dir: Path, worker: str, falkordb_port: int | None):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        env = {**os.environ, "ADMIN_API_TOKEN": TOKEN, "DATA_DIR": str(data_dir), "PORT": str(self.port),
               "CONSOLIDATION_WORKER": worker, "CONSOLIDATION_SCHEDULER_ENABLED": "false", "LOG_LEVEL": "WARNING",
               "CONSOLIDATION_DECAY_IMPORTANCE_THRESHOLD": "", "CONSOLIDATION_ARCHIVE_THRESHOLD": "0.1",
               "CONSOLIDATION_DELETE_THRESHOLD": "0.02"}
        if falkordb_port:
            env.update(FALKORDB_HOST="127.0.0.1", FALKORDB_PORT=str(falkordb_port))
        self.process = subprocess.Popen([sys.executable, "-m", "gunicorn", "-c", "gunicorn.conf.py", "app:app"],
                                        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline:
            try:
                status = requests.get(f"{self.url}/consolidate/status", headers=AUTH, timeout=5).json()
                if worker == "inline" or status["scheduler"]["alive"]:
                    return
            except (requests.RequestException, ValueError, KeyError):
                pass
            time.sleep(0.5)
        raise SystemExit("the service did not start")

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(300)


class Load:
    """Open-loop requests at a fixed rate, a third each of status, create and read; latencies by kind."""

    def __init__(self, url: str, ids: list[str], rate: float):
        self.url, self.ids, self.rate = url, ids, rate
        self.latencies: dict[str, list[float]] = {kind: [] for kind in KINDS}
        self.errors = 0
        self._local = threading.local()
        self._rng = np.random.default_rng(7)

    def run(self, seconds: float) -> None:
        count = int(seconds * self.rate)
        start = time.monotonic() + 0.2
        with ThreadPoolExecutor(max_workers=32) as pool:
            for index in range(count):
                delay = start + index / self.rate - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
                pool.submit(self._one, KINDS[index % 3], index)

    def _session(self) -> requests.Session:
        if not hasattr(self._local, "session"):
            self._local.session = requests.Session()
            self._local.session.headers.update(AUTH)
        return self._local.session

    def _one(self, kind: str, index: int) -> None:
        session = self._session()
        started = time.perf_counter()
        if kind == "status":
            answer = session.get(f"{self.url}/consolidate/status", timeout=30)
        elif kind == "create":
            answer = session.post(f"{self.url}/memory", timeout=30, json={
                "id": str(uuid.uuid4()), "type": "Context", "importance": 0.5,
                "content": f"load benchmark note {index}: the deploy queue was {index % 17} minutes behind"})
        else:
            answer = session.get(f"{self.url}/memory/{self.ids[index % len(self.ids)]}", timeout=30)
        elapsed = (time.perf_counter() - started) * 1000
        if answer.status_code >= 300:
            self.errors += 1
        self.latencies[kind].append(elapsed)


def back_to_back(url: str, stop: threading.Event, runs: list[float]) -> None:
    """Full runs, each asked as soon as the last one finished."""
    session = requests.Session()
    session.headers.update(AUTH)
    while not stop.is_set():
        started = time.monotonic()
        answer = session.post(f"{url}/consolidate", json={"full": True, "wait": True}, timeout=3600)
        if answer.status_code == 200:
            runs.append(time.monotonic() - started)
        else:
            time.sleep(0.5)


def measure(url: str, ids: list[str], seconds: float, rate: float, with_runs: bool) -> dict:
    runs: list[float] = []
    stop = threading.Event()
    runner = threading.Thread(target=back_to_back, args=(url, stop, runs), daemon=True)
    if with_runs:
        runner.start()
        time.sleep(1.0)  # the first run under way
    load = Load(url, ids, rate)
    load.run(seconds)
    stop.set()
    if with_runs:
        runner.join()
    return {"runs": len(runs), "run_seconds": round(float(np.mean(runs)), 1) if runs else None,
            "errors": load.errors,
            **{kind: {"p50": round(float(np.percentile(values, 50)), 1),
                      "p99": round(float(np.percentile(values, 99)), 1),
                      "max": round(float(np.max(values)), 1), "count": len(values)}
               for kind, values in load.latencies.items()}}


def some_ids(url: str) -> list[str]:
    answer = requests.get(f"{url}/memories/search", params={"q": "e", "limit": 100}, headers=AUTH, timeout=60)
    found = [item["memory_id"] for item in answer.json().get("items", [])] if answer.ok else []
    return found or [str(uuid.uuid4())]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=50000)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--rate", type=float, default=50.0)
    parser.add_argument("--stores", nargs="+", default=["embedded", "server"], choices=["embedded", "server"])
    parser.add_argument("--workers", nargs="+", default=["child", "inline"], choices=["child", "inline"])
    parser.add_argument("--only-runs", action="store_true", help="skip the measurement without runs")
    parser.add_argument("--data", type=Path, help="keep the loaded store here (embedded stores only), and load "
                                                  "it only if it is not there yet: a rerun skips the load")
    arguments = parser.parse_args()
    results = []
    for stores in arguments.stores:
        with tempfile.TemporaryDirectory(prefix="load-bench-") as directory:
            data_dir = arguments.data if arguments.data and stores == "embedded" else Path(directory) / "data"
            falkordb = FalkorServer(Path(directory) / "falkordb").start() if stores == "server" else None
            try:
                settings = bench_settings(data_dir)
                if falkordb:
                    settings = settings.model_copy(update={"falkordb_host": "127.0.0.1", "falkordb_port": falkordb.port})
                if not (data_dir / "falkordb").exists():
                    load_store(arguments.memories, data_dir, settings)
                for worker in arguments.workers:
                    progress(f"{stores} stores, CONSOLIDATION_WORKER={worker}: starting")
                    service = Service(data_dir, worker, falkordb.port if falkordb else None)
                    try:
                        ids = some_ids(service.url)
                        for with_runs in (True,) if arguments.only_runs else (False, True):
                            found = measure(service.url, ids, arguments.seconds, arguments.rate, with_runs)
                            results.append({"stores": stores, "worker": worker, "with_runs": with_runs, **found})
                            progress(json.dumps(results[-1]))
                    finally:
                        service.stop()
            finally:
                if falkordb:
                    falkordb.kill()
    print(render(results, arguments))


def render(results: list[dict], arguments) -> str:
    lines = [f"{arguments.memories:,} memories, {arguments.rate:g} requests/s for {arguments.seconds:g} s "
             "(a third each), p50 / p99 / max in ms; targets (p99) status 50, create and read 100.", "",
             "| stores | runs compute | load | runs (mean s) | status | create | read | errors |",
             "|---|---|---|---|---|---|---|---|"]
    for row in results:
        cells = [f"{row[k]['p50']} / **{row[k]['p99']}** / {row[k]['max']}"
                 + (" ✗" if row[k]["p99"] > TARGETS[k] else "") for k in KINDS]
        load = "full runs back to back" if row["with_runs"] else "no run"
        runs = f"{row['runs']} ({row['run_seconds']})" if row["with_runs"] else ""
        lines.append(f"| {row['stores']} | {row['worker']} | {load} | {runs} | {' | '.join(cells)} | {row['errors']} |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
