"""POST /recall at a fixed rate, open-loop, from a process of its own, against a running service: what a client
sees, without the load generator's threads sharing the service's GIL (bench/recall_bench.py drives the Flask app
in-process).

    .venv/bin/python bench/recall_http_load.py http://127.0.0.1:8000 "$ADMIN_API_TOKEN" --seconds 30 --rate 20
    .venv/bin/python bench/recall_http_load.py http://127.0.0.1:8000 "$ADMIN_API_TOKEN" --during-full-run

With --during-full-run it starts a full consolidation run (POST /consolidate {"full": true}) and sends requests
until the run has finished (status polled every second), then also prints the run's seconds.
Queries are random unit directions of VECTOR_SIZE (384) sent as `embedding`; each request is timed from the
moment it was planned to leave. Prints p50 / p99 / max in ms as JSON.
"""

from __future__ import annotations

import argparse
import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import requests


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("url")
    parser.add_argument("token")
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--rate", type=float, default=20.0)
    parser.add_argument("--size", type=int, default=384)
    parser.add_argument("--during-full-run", action="store_true")
    args = parser.parse_args()
    vectors = np.random.default_rng(5).standard_normal((200, args.size))
    bodies = [json.dumps({"embedding": [round(float(x), 6) for x in v / np.linalg.norm(v)], "k": 10})
              for v in vectors]
    headers = {"Authorization": f"Bearer {args.token}", "Content-Type": "application/json"}
    latencies, failures, local = [], [], threading.local()

    def one(body: str, planned: float) -> None:
        session = getattr(local, "session", None) or requests.Session()
        local.session = session
        answer = session.post(f"{args.url}/recall", data=body, headers=headers, timeout=60)
        latencies.append((time.perf_counter() - planned) * 1000)
        if answer.status_code != 200:
            failures.append(answer.status_code)

    running = threading.Event()
    if args.during_full_run:
        started = requests.post(f"{args.url}/consolidate", json={"full": True}, headers=headers, timeout=60)
        started.raise_for_status()
        running.set()
        threading.Thread(target=_watch_run, args=(args.url, headers, running), daemon=True).start()
    run_started = time.perf_counter()
    start = time.perf_counter() + 0.2
    with ThreadPoolExecutor(16) as pool:
        for index in range(10**9 if args.during_full_run else int(args.seconds * args.rate)):
            if args.during_full_run and not running.is_set():
                break
            planned = start + index / args.rate
            delay = planned - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
            pool.submit(one, bodies[index % len(bodies)], planned)
    values = np.array(latencies)
    result = {"p50": round(float(np.percentile(values, 50)), 1), "p99": round(float(np.percentile(values, 99)), 1),
              "max": round(float(values.max()), 1), "requests": len(values), "errors": len(failures)}
    if args.during_full_run:
        result["run_seconds"] = round(time.perf_counter() - run_started, 1)
    print(json.dumps(result))


def _watch_run(url: str, headers: dict, running: threading.Event) -> None:
    """Clear `running` once the service reports no run in progress."""
    time.sleep(2.0)
    while True:
        status = requests.get(f"{url}/consolidate/status", headers=headers, timeout=60).json()
        if status.get("current_run") is None:
            running.clear()
            return
        time.sleep(1.0)


if __name__ == "__main__":
    main()
