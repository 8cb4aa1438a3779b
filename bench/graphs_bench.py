"""Many graphs in one process: 1,000 graphs under a prefix, each written to once over HTTP, on embedded stores;
the process's threads (native ones included) as they grow, and a scheduler tick over all of them.

    .venv/bin/python bench/graphs_bench.py [--graphs 1000] [--open-max 32]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT)]

from consolidation.api import create_app  # noqa: E402
from consolidation.service import build_services  # noqa: E402
from consolidation.settings import Settings  # noqa: E402

TOKEN = "benchmark-admin-token-0123456789"


def threads() -> int:
    return len(os.listdir("/proc/self/task"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--graphs", type=int, default=1000)
    parser.add_argument("--open-max", type=int, default=32)
    arguments = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        settings = Settings(admin_api_token=TOKEN, data_dir=Path(directory), falkordb_graphs="tenant_*",
                            falkordb_graph="tenant_0", falkordb_graphs_max=arguments.graphs + 1,
                            falkordb_graphs_open_max=arguments.open_max, consolidation_scheduler_enabled=False,
                            log_level="WARNING")
        services = build_services(settings)
        client = create_app(settings, services=services, start_scheduler=False).test_client()
        auth = {"Authorization": f"Bearer {TOKEN}"}
        started, peak, samples = time.monotonic(), threads(), []
        for index in range(arguments.graphs):
            answer = client.post("/memory", json={"content": f"note {index}"}, headers={**auth, "X-Graph": f"tenant_{index}"})
            assert answer.status_code == 201, answer.json
            peak = max(peak, threads())
            if (index + 1) % (arguments.graphs // 10) == 0:
                samples.append((index + 1, threads(), len(services.graphs.opened())))
        created = time.monotonic() - started
        tick_started = time.monotonic()
        services.scheduler.run_once()
        tick = time.monotonic() - tick_started
        print("| graphs written | threads now | graphs open |\n|---|---|---|")
        for written, count, open_now in samples:
            print(f"| {written:,} | {count} | {open_now} |")
        print(f"\n{arguments.graphs:,} graphs made in {created:.1f} s; peak {peak} threads "
              f"(FALKORDB_GRAPHS_OPEN_MAX={arguments.open_max}); a scheduler tick over all of them "
              f"{tick:.1f} s, {threads()} threads and {len(services.graphs.opened())} graphs open after it")
        services.close()


if __name__ == "__main__":
    main()
