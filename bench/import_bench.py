"""Imports at full speed when nobody waits, paced when someone does: an import of N memories (JSON lines with
their embeddings, as an agent's export has them) into an empty embedded store, first alone, then again into another empty store while
`GET /consolidate/status` is asked 20 times a second; and the benchmark's own load (both stores written
directly) of N memories, alone.

    .venv/bin/python bench/import_bench.py --memories 100000

Each measurement runs in its own process, on a store of its own. Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

from dataset import generate  # noqa: E402

from consolidation.api import create_app  # noqa: E402
from consolidation.service import build_services  # noqa: E402
from consolidation.timeutil import utc_now  # noqa: E402

STATUS_EVERY_SECONDS = 0.05  # 20 requests a second
FIELDS = ("id", "content", "type", "timestamp", "last_accessed", "importance", "confidence", "access_count")


def import_lines(n: int) -> bytes:
    """N memories of the benchmark's dataset as an import file, each with its embedding (5 decimals)."""
    data = generate(n, utc_now())
    return "\n".join(json.dumps({**{key: m[key] for key in FIELDS if key in m},
                                  "embedding": [round(x, 5) for x in vector.tolist()]})
                      for m, vector in zip(data.memories, data.vectors)).encode()


def timed_import(n: int, with_status: bool) -> dict:
    from consolidation_bench import TOKEN, bench_settings

    data = import_lines(n)
    settings = bench_settings(Path(tempfile.mkdtemp(prefix="import-bench-")))
    services = build_services(settings)
    client = create_app(settings, services=services, start_scheduler=False).test_client()
    latencies: list[float] = []
    done = threading.Event()

    def ask_status() -> None:
        headers = {"Authorization": f"Bearer {TOKEN}"}
        next_at = time.perf_counter()
        while not done.is_set():
            sent = time.perf_counter()
            assert client.get("/consolidate/status", headers=headers).status_code == 200
            latencies.append(time.perf_counter() - sent)
            next_at += STATUS_EVERY_SECONDS
            time.sleep(max(0.0, next_at - time.perf_counter()))

    asking = threading.Thread(target=ask_status, daemon=True)
    try:
        if with_status:
            asking.start()
        started = time.perf_counter()
        report = services.memories.import_jsonl(data)
        seconds = time.perf_counter() - started
        done.set()
        if with_status:
            asking.join()
        assert report.created == n, report.public()
    finally:
        services.close()
    ms = np.array(latencies) * 1000 if latencies else np.zeros(1)
    return {"seconds": round(seconds, 1), "requests": len(latencies),
            "p50_ms": round(float(np.percentile(ms, 50)), 1), "p99_ms": round(float(np.percentile(ms, 99)), 1),
            "max_ms": round(float(ms.max()), 1)}


def timed_load(n: int) -> dict:
    from consolidation_bench import load_store

    return load_store(n, Path(tempfile.mkdtemp(prefix="load-bench-")))


def in_child(kind: str, n: int) -> dict:
    output = subprocess.run([sys.executable, __file__, "--child", kind, "--memories", str(n)], check=True,
                            capture_output=True, text=True).stdout
    return json.loads(output.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--memories", type=int, default=100_000)
    parser.add_argument("--child", choices=("import", "import-status", "load"))
    args = parser.parse_args()
    if args.child:
        measured = {"import": lambda: timed_import(args.memories, False),
                    "import-status": lambda: timed_import(args.memories, True),
                    "load": lambda: timed_load(args.memories)}[args.child]()
        print(json.dumps(measured))
        return
    alone, paced, load = (in_child(kind, args.memories) for kind in ("import", "import-status", "load"))
    print(f"| N={args.memories:,} | seconds | status p50 / p99 / max (ms) |")
    print("|---|---|---|")
    print(f"| import into an empty store, nobody waiting | {alone['seconds']} | |")
    print(f"| the same with 20 status requests/s | {paced['seconds']} | {paced['p50_ms']} / {paced['p99_ms']} / "
          f"{paced['max_ms']} ({paced['requests']} requests) |")
    print(f"| the benchmark's load (generate + write both stores) | {load['load_seconds']} | |")


if __name__ == "__main__":
    main()
