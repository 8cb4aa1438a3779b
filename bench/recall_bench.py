"""Benchmark POST /recall on the embedded stores: recall@10 against exact search, latency idle and during a run.

    PYTHONPATH=. .venv/bin/python bench/recall_bench.py --sizes 100000 1000000

For each N, one child process loads a store as bench/consolidation_bench.py does (planted topics plus 20 %
noise, 384-d); a second opens it as the service would after a restart and measures: the recall index's build
(seconds from the open, and the memory it adds), POST /recall at RATE requests a second while it builds (Edge's
exact search answers until it is built), recall@10 of the store's search against exact numpy search, the search
alone (index against Edge's exact search), and POST /recall at RATE a second when idle and during a full
consolidation run (all five tasks, real): first in the worker child, as `make run` serves (CONSOLIDATION_WORKER=
child: the run's vector writes come back to this process's store and index), then on a thread of this process
(inline: the run holds the GIL in turns with the requests, the worst case). Requests are open-loop: each is
timed from the moment it was planned to leave.
Prints a Markdown table (docs/performance.md, "Recall at a million").
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import faiss
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

from consolidation_bench import (TOKEN, _current_memory_mb, _peak_memory_mb, _reset_peak_memory,  # noqa: E402
                                 bench_settings, load_store, progress, step_in_child)

from consolidation.api import create_app  # noqa: E402
from consolidation.recall import RecallQuery, search_filter  # noqa: E402
from consolidation.service import build_services  # noqa: E402
from consolidation.settings import TASK_NAMES  # noqa: E402
from consolidation.similarity import normalized  # noqa: E402
from consolidation.stores import vector_index  # noqa: E402

RATE = 20.0  # requests a second
IDLE_SECONDS = 30.0
QUERIES = 300  # for recall@10
K = 10
# A query near a stored memory: its vector plus noise, at cosine ~0.9 to it (a question about something stored).
QUERY_NOISE = 0.5
NEIGHBOURED = 0.4  # a query whose 10th exact neighbour is at least this similar "has neighbours"
HEADERS = {"Authorization": f"Bearer {TOKEN}"}


def measure(n: int, data_dir: Path) -> dict:
    settings = bench_settings(data_dir).model_copy(update={"consolidation_worker": "child"})
    # The worker child reads its settings from the environment: the same as these.
    os.environ.update(ADMIN_API_TOKEN=TOKEN, DATA_DIR=str(data_dir), CONSOLIDATION_WORKER="child",
                      CONSOLIDATION_SCHEDULER_ENABLED="false", LOG_LEVEL="WARNING",
                      CONSOLIDATION_DECAY_IMPORTANCE_THRESHOLD="", CONSOLIDATION_ARCHIVE_THRESHOLD="0.1",
                      CONSOLIDATION_DELETE_THRESHOLD="0.02")
    before_open = _current_memory_mb()
    opened = time.monotonic()
    services = build_services(settings)
    store = services.stores.vectors
    try:
        client_app = create_app(settings, services=services)  # starts the worker child
        rng = np.random.default_rng(3)
        queries = near_queries(store, rng, QUERIES)
        during_build = Load(client_app, queries, RATE).until(lambda: store.index.built, most_seconds=900)
        assert store.index.wait_built(900), "the recall index was not built"
        build_seconds = time.monotonic() - opened
        after_build = _current_memory_mb()
        progress(f"N={n}: index built {build_seconds:.1f} s after the open; RSS {before_open:.0f} -> "
                 f"{after_build:.0f} MB; during the build {during_build}")
        result = {"n": n, "build_seconds": round(build_seconds, 1), "codes": store.index._live.size,
                  "candidates": vector_index.CANDIDATES, "rss_before_open_mb": round(before_open),
                  "rss_built_mb": round(after_build), "index_mb": index_megabytes(store),
                  "during_build": during_build, **recall_at_10(store, queries, rng), **search_alone(store, queries)}
        result["idle"] = Load(client_app, queries, RATE).run(IDLE_SECONDS)
        progress(f"N={n}: idle {result['idle']}")
        result["during_child_run"] = during_child_run(client_app, queries)
        progress(f"N={n}: during a full run in the worker child {result['during_child_run']}")
        result["during_run"] = during_run(services, client_app, queries)
        progress(f"N={n}: during a full run inline {result['during_run']}")
        return result
    finally:
        services.close()


def near_queries(store, rng: np.random.Generator, count: int) -> np.ndarray:
    """Stored vectors plus noise, unit length."""
    ids, matrix = store.all_vectors()
    rows = np.sort(rng.choice(len(ids), count, replace=False))
    picked = np.array(matrix[rows], dtype=np.float32)
    noise = rng.standard_normal(picked.shape).astype(np.float32) / np.sqrt(picked.shape[1])
    return normalized(picked + QUERY_NOISE * noise)


def recall_at_10(store, queries: np.ndarray, rng: np.random.Generator) -> dict:
    """The store's search for a current recall (the filter POST /recall uses, the limit it asks first) against
    exact numpy search over every vector the filter lets through (read from the points' payloads: a store that
    has been consolidated holds archived, merged and summary points); also for random directions, queries about
    nothing stored."""
    where = search_filter(RecallQuery(vector=queries[0], k=K))
    limit = K * 3 + 10
    ids, matrix = store.all_vectors()
    payloads = {}
    for start in range(0, len(ids), 10000):
        payloads.update(store.payloads(ids[start:start + 10000]))
    keep = np.array([_passes(payloads.get(i, {}), where) for i in ids])
    ids, matrix = [i for i, k in zip(ids, keep) if k], matrix[keep]
    directions = normalized(rng.standard_normal((QUERIES // 3, queries.shape[1])).astype(np.float32))
    results = {}
    for name, asked in (("near", queries), ("random", directions)):
        found = [[h.id for h in store.search(q, limit, where)][:K] for q in asked]
        scores = asked @ matrix.T
        best = np.argpartition(-scores, K, axis=1)[:, :K]
        tenth = np.take_along_axis(scores, best, axis=1).min(axis=1)
        rates = np.array([len(set(f) & {ids[i] for i in b}) / K for f, b in zip(found, best.tolist())])
        results[f"recall_{name}"] = round(float(rates.mean()), 4)
        if name == "near":
            with_neighbours = tenth >= NEIGHBOURED
            results["recall_near_neighboured"] = round(float(rates[with_neighbours].mean()), 4)
            results["near_neighboured_share"] = round(float(with_neighbours.mean()), 3)
        results[f"tenth_{name}"] = round(float(np.median(tenth)), 3)
    progress(f"recall@10 {results}")
    return results


def _passes(payload: dict, where) -> bool:
    """The recall filter's meaning, written out: a missing field passes an exclusion."""
    return payload.get("state") not in where.without_states and payload.get("type") not in where.without_types \
        and not (where.without_superseded and payload.get("superseded") is True) \
        and (where.scope is None or payload.get("scope") == where.scope) \
        and (where.types is None or payload.get("type") in where.types)


def search_alone(store, queries: np.ndarray) -> dict:
    """Milliseconds of the store's search alone, the index against Edge's exact search (p50 / p99)."""
    where = search_filter(RecallQuery(vector=queries[0], k=K))
    timings = {}
    for name, search in (("index", store.search), ("edge_exact", store._exact_search)):
        spent = []
        for query in queries[:100]:
            started = time.perf_counter()
            search(query, K * 3 + 10, where)
            spent.append((time.perf_counter() - started) * 1000)
        timings[f"search_{name}_ms"] = percentiles(spent)
    progress(f"search alone {timings}")
    return timings


def index_megabytes(store) -> dict:
    """What the index holds, by part: faiss's codes and labels, the marks and labels by id (estimated)."""
    index = store.index
    codes = faiss.downcast_index(index._live.index.index)
    faiss_bytes = index._live.index.ntotal * (codes.code_size + 8)  # a code and a label each
    marks = index._marks
    mark_bytes = sum(getattr(marks, name).nbytes for name in ("alive", "superseded", "state", "scope", "type"))
    label_bytes = sys.getsizeof(index._label_of) + sys.getsizeof(index._id_of)
    return {"faiss": round(faiss_bytes / 2**20), "marks": round(mark_bytes / 2**20),
            "labels": round(label_bytes / 2**20)}


def during_child_run(app, queries: np.ndarray) -> dict:
    """POST /recall at RATE a second while the worker child computes a full run of all five tasks."""
    finished: dict = {}

    def run() -> None:
        started = time.monotonic()
        answer = app.test_client().post("/consolidate", json={"full": True, "wait": True}, headers=HEADERS)
        assert answer.status_code == 200 and answer.get_json()["success"], answer.get_json()
        finished["seconds"] = round(time.monotonic() - started, 1)

    runner = threading.Thread(target=run, name="full-run")
    runner.start()
    measured = Load(app, queries, RATE).until(lambda: not runner.is_alive(), most_seconds=3600)
    runner.join()
    return {**measured, "run_seconds": finished.get("seconds")}


def during_run(services, app, queries: np.ndarray) -> dict:
    """POST /recall at RATE a second while a full run of all five tasks computes (inline, on a thread)."""
    _reset_peak_memory()
    run = services.engine.begin(list(TASK_NAMES), dry_run=False, trigger="benchmark", full=True)
    started = time.monotonic()
    worker = services.engine.execute_in_background(run)
    measured = Load(app, queries, RATE).until(lambda: not worker.is_alive(), most_seconds=3600)
    worker.join()
    return {**measured, "run_seconds": round(time.monotonic() - started, 1), "peak_rss_mb": round(_peak_memory_mb())}


class Load:
    """POST /recall, open-loop at a fixed rate, through the Flask app (a test client per thread)."""

    def __init__(self, app, queries: np.ndarray, rate: float):
        self.app, self.rate = app, rate
        self.bodies = [{"embedding": [float(x) for x in q], "k": K} for q in queries]
        self.latencies: list[float] = []
        self.errors = 0
        self._local = threading.local()

    def run(self, seconds: float) -> dict:
        return self.until(lambda: False, seconds)

    def until(self, done, most_seconds: float) -> dict:
        """Requests until `done()` (checked before each) or `most_seconds` have passed."""
        start = time.perf_counter() + 0.1
        with ThreadPoolExecutor(max_workers=16) as pool:
            for index in range(int(most_seconds * self.rate)):
                planned = start + index / self.rate
                delay = planned - time.perf_counter()
                if delay > 0:
                    time.sleep(delay)
                if done():
                    break
                pool.submit(self._one, self.bodies[index % len(self.bodies)], planned)
        return {**percentiles(self.latencies), "requests": len(self.latencies), "errors": self.errors,
                "load_average": round(os.getloadavg()[0], 1)}

    def _one(self, body: dict, planned: float) -> None:
        if not hasattr(self._local, "client"):
            self._local.client = self.app.test_client()
        answer = self._local.client.post("/recall", json=body, headers=HEADERS)
        self.latencies.append((time.perf_counter() - planned) * 1000)
        if answer.status_code != 200 or len(answer.get_json()["results"]) != K:
            self.errors += 1


def percentiles(milliseconds: list[float]) -> dict:
    values = np.array(milliseconds) if milliseconds else np.zeros(1)
    return {"p50": round(float(np.percentile(values, 50)), 1), "p99": round(float(np.percentile(values, 99)), 1),
            "max": round(float(values.max()), 1)}


# --- the parent: one child per step, then the table -------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[100000, 1000000])
    parser.add_argument("--step", nargs=3, metavar=("STEP", "N", "DIR"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.step:
        step, n, data_dir = args.step[0], int(args.step[1]), Path(args.step[2])
        result = load_store(n, data_dir) if step == "load" else measure(n, data_dir)
        print("RESULT " + json.dumps(result), flush=True)
        return
    results = []
    for n in args.sizes:
        with tempfile.TemporaryDirectory(prefix=f"recall-{n}-") as data_dir:
            loaded = run_step("load", n, data_dir)
            results.append({**run_step("measure", n, data_dir), **loaded})
            progress(f"N={n}: {json.dumps(results[-1])}")
    print(render(results, " ".join(sys.argv[1:])))


def run_step(step: str, n: int, data_dir: str) -> dict:
    return step_in_child(__file__, step, n, data_dir)


def render(results: list[dict], arguments: str) -> str:
    def row(name: str, cell, target: str = "") -> str:
        return f"| {name} | " + " | ".join(cell(r) for r in results) + f" | {target} |"

    def latency(part: str):
        return lambda r: (f"{r[part]['p50']} / **{r[part]['p99']}** / {r[part]['max']} ms ({r[part]['errors']} "
                          f"errors; load {r[part]['load_average']})")

    lines = ["| | " + " | ".join(f"N={r['n']:,}" for r in results) + " | target |",
             "|---" * (len(results) + 2) + "|",
             row("recall@10, queries near a stored memory", lambda r: f"{r['recall_near']:.4f}", ">= 0.98 at 1M"),
             row("the same, those whose 10th neighbour has cosine >= 0.4 (share)",
                 lambda r: f"{r['recall_near_neighboured']:.4f} ({r['near_neighboured_share']:.0%})"),
             row("recall@10, random directions (10th neighbour's cosine, median)",
                 lambda r: f"{r['recall_random']:.4f} ({r['tenth_random']})"),
             row("POST /recall idle, p50 / p99 / max", latency("idle"), "p99 <= 50 ms"),
             row("POST /recall during a full run in the worker child (as served), p50 / p99 / max",
                 latency("during_child_run"), "p99 <= 100 ms"),
             row("that run", lambda r: f"{r['during_child_run']['run_seconds']} s"),
             row("POST /recall during a full run inline (a thread here), p50 / p99 / max", latency("during_run")),
             row("that run / peak RSS", lambda r: f"{r['during_run']['run_seconds']} s / "
                                                  f"{r['during_run']['peak_rss_mb']} MB"),
             row("POST /recall while the index builds (Edge exact), p50 / p99 / max", latency("during_build")),
             row("search alone: index, p50 / p99", lambda r: f"{r['search_index_ms']['p50']} / "
                                                             f"{r['search_index_ms']['p99']} ms"),
             row("search alone: Edge exact, p50 / p99", lambda r: f"{r['search_edge_exact_ms']['p50']} / "
                                                                  f"{r['search_edge_exact_ms']['p99']} ms"),
             row("index built, seconds after the open (payloads read back, trained, added)",
                 lambda r: f"{r['build_seconds']} s ({r['codes']:,} codes, {r['candidates']} candidates re-ranked)"),
             row("RSS after the open -> built", lambda r: f"{r['rss_before_open_mb']} -> {r['rss_built_mb']} MB"),
             row("index parts: faiss codes / marks / label maps (estimates; the maps without their id strings)",
                 lambda r: " / ".join(f"{r['index_mb'][p]} MB" for p in ("faiss", "marks", "labels")))]
    command = f"PYTHONPATH=. .venv/bin/python bench/recall_bench.py {arguments}".strip()
    return f"    {command}\n\n" + "\n".join(lines)


if __name__ == "__main__":
    main()
