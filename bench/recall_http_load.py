"""POST /recall at a fixed rate, open-loop, from a process of its own, against a running service: what a client
sees, without the load generator's threads sharing the service's GIL (bench/recall_bench.py drives the Flask app
in-process).

    .venv/bin/python bench/recall_http_load.py http://127.0.0.1:8000 "$ADMIN_API_TOKEN" --seconds 30 --rate 20

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

    start = time.perf_counter() + 0.2
    with ThreadPoolExecutor(16) as pool:
        for index in range(int(args.seconds * args.rate)):
            planned = start + index / args.rate
            delay = planned - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
            pool.submit(one, bodies[index % len(bodies)], planned)
    values = np.array(latencies)
    print(json.dumps({"p50": round(float(np.percentile(values, 50)), 1),
                      "p99": round(float(np.percentile(values, 99)), 1), "max": round(float(values.max()), 1),
                      "requests": len(values), "errors": len(failures)}))


if __name__ == "__main__":
    main()
