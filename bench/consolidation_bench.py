"""Benchmark the five tasks on the embedded stores at N = 1k, 10k, 100k and write docs/performance.md.

For each N, one child process generates a store with planted topics and writes it; a second opens it as the
service would after a restart (so its memory is the service's, not the generator's) and times every task dry and
real (full passes), a full run with status requests sent meanwhile, the similarity graph's recall against exact,
and an incremental rerun after 1 % of the memories changed (against a full pass after the same kind of change).

    .venv/bin/python bench/consolidation_bench.py                     # 1k, 10k, 100k -> docs/performance.md
    .venv/bin/python bench/consolidation_bench.py --sizes 1000 --out /tmp/perf.md
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

from dataset import generate  # noqa: E402

from consolidation.api import create_app  # noqa: E402
from consolidation.scoring import relevance_scores  # noqa: E402
from consolidation.passes import INCREMENTAL_TASKS  # noqa: E402
from consolidation.service import build_services  # noqa: E402
from consolidation.settings import TASK_NAMES, Settings  # noqa: E402
from consolidation.similarity import normalized, similar_pairs_exact  # noqa: E402
from consolidation.tasks.cluster import min_relevance  # noqa: E402
from consolidation.stores.vectors import VectorPoint  # noqa: E402
from consolidation.timeutil import parse_iso, utc_now  # noqa: E402

TOKEN = "benchmark-admin-token-0123456789"
RECALL_SAMPLE = 2000
SCOPES = 1000  # users the scoped full run splits the store into
CHANGED_SHARE = 0.01  # memories changed before the incremental rerun
SWEPT_SHARES = (0.001, 0.1)  # then, how the incremental rerun's cost grows with the share changed
SHARE_TARGETS = {0.01: 0.15, 0.1: 0.25}  # the incremental rerun's targets, against the full run
TARGETS = {  # DESIGN section 7 and issue 10, seconds at 10k / 100k (None: no target at that size)
    "decay": (1.0, 5.0), "dedup": (None, 5.0), "creative": (0.1, 0.1), "cluster": (2.0, 15.0),
    "forget dry run": (1.0, 5.0), "full run": (None, 12.0),
}


def progress(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


# --- one size, in a child process ------------------------------------------------------------------


def bench_settings(data_dir: Path) -> Settings:
    # Decay every memory (no importance threshold): the worst case, all N scored and written.
    return Settings(admin_api_token=TOKEN, data_dir=data_dir, consolidation_scheduler_enabled=False,
                    consolidation_decay_importance_threshold=None, consolidation_archive_threshold=0.1,
                    consolidation_delete_threshold=0.02, log_level="WARNING",
                    # Deleted at once, as in every earlier row of docs/performance.md (the default archives first).
                    consolidation_delete_after_archived_days=0)


def load_store(n: int, data_dir: Path, settings: Settings | None = None, step: int = 10000) -> dict:
    """Generate and write a store of n memories (in its own process, so the data's memory goes with it)."""
    started = time.monotonic()
    now = utc_now()
    progress(f"N={n}: generating")
    data = generate(n, now)
    services = build_services(settings or bench_settings(data_dir))
    memories = data.memories
    # Scores as of yesterday, so the first decay has a day of change to write, as it would in service.
    for memory, score in zip(memories, yesterdays_scores(memories, now - timedelta(days=1))):
        memory["relevance_score"] = round(float(score), 6)
    # The graph's server writes a part while this process makes the next part's points and their terms.
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="load-graph") as graph_writer:
        written = None
        for start in range(0, n, step):
            part = memories[start : start + step]
            services.stores.vectors.upsert([
                VectorPoint(m["id"], v, {"relevance_score": m["relevance_score"], "archived": False, "type": m["type"]})
                for m, v in zip(part, data.vectors[start : start + step])
            ])
            if written is not None:
                written.result()
            written = graph_writer.submit(services.stores.graph.create_memories, part)
            progress(f"N={n}: loaded {min(start + step, n)} memories")
        written.result()
    # After every memory: written with the parts of memories that completed them, the edges made the load at 1M
    # slower, not faster (615 s against 335 s, though tests ran beside the first minutes of it).
    services.stores.graph.falkor.write_chunks(
        "UNWIND $rows AS row MATCH (a:Memory {id: row[0]}), (b:Memory {id: row[1]}) CREATE (a)-[:RELATES_TO]->(b)",
        data.edges, chunk=5000)
    progress(f"N={n}: loaded {len(data.edges)} edges")
    services.close()
    return {"load_seconds": round(time.monotonic() - started, 2)}


def measure(n: int, data_dir: Path, exact_recall: bool) -> dict:
    """Open the loaded store as the service would after a restart, and time everything."""
    settings = bench_settings(data_dir)
    services = build_services(settings)
    try:
        measured = {"n": n, "reference_loop_seconds": reference_loop(), **time_tasks(services),
                    **full_run(services, settings), "recall": recall(services, settings, exact_recall),
                    **incremental_rerun(services, n)}
        measured["recall_after_changes"] = recall(services, settings, exact_recall)
        measured["share_sweep"] = share_sweep(services, n)
    finally:
        services.close()
    return {**measured, **scoped_full_run(data_dir, n)}


def scoped_full_run(data_dir: Path, n: int) -> dict:
    """The same store split into SCOPES users (user_id), then two full runs with scopes on: the cost of never
    comparing across scopes, against the unscoped full run just before (both in the steady state: the second
    run, with the neighbour graph of the scopes kept from the first)."""
    settings = bench_settings(data_dir).model_copy(update={"consolidation_scope_properties": ("user_id",)})
    services = build_services(settings)
    try:
        falkor = services.stores.graph.falkor
        top = falkor.execute("MATCH (m:Memory) RETURN max(id(m))", read_only=True)[0][0] or 0
        for first in range(0, int(top) + 1, 10000):
            falkor.execute("MATCH (m:Memory) WHERE id(m) >= $first AND id(m) < $after "
                           "SET m.user_id = 'user-' + toString(id(m) % $scopes)",
                           {"first": first, "after": first + 10000, "scopes": min(SCOPES, n)})
        first = services.engine.run(list(TASK_NAMES), trigger="benchmark", full=True)  # builds the scopes' graph
        result = services.engine.run(list(TASK_NAMES), trigger="benchmark", full=True)
        assert first["success"] and result["success"], result
        progress(f"full run in {min(SCOPES, n)} scopes: {first['duration_seconds']:.2f} s, then "
                 f"{result['duration_seconds']:.2f} s")
        return {"scoped_full_run_seconds": result["duration_seconds"], "scopes": min(SCOPES, n),
                "scoped_first_run_seconds": first["duration_seconds"]}
    finally:
        services.close()


def reference_loop() -> float:
    """Seconds for a fixed pure-Python loop: this machine's speed at the time, to compare runs made at others
    (the shared machines here vary by 1.5x within a day)."""
    started = time.perf_counter()
    total = 0
    for i in range(5_000_000):
        total += i
    return round(time.perf_counter() - started, 3)


def yesterdays_scores(memories, moment) -> np.ndarray:
    def days(field):
        return np.array([(moment - parse_iso(m[field])).total_seconds() / 86400 for m in memories]).clip(0)

    return relevance_scores(days("timestamp"), days("last_accessed"), np.full(len(memories), 2.0),
                            np.array([m["importance"] for m in memories]),
                            np.array([m["confidence"] for m in memories]))


def time_tasks(services) -> dict:
    """Each task dry and real, in the order a full run takes them; reruns show the steady state."""
    plan = [("decay", True), ("decay", False), ("decay", False), ("dedup", True), ("dedup", False),
            ("dedup", False), ("creative", True), ("creative", False), ("cluster", True), ("cluster", False),
            ("cluster", False), ("forget", True)]
    timings, counts, seen = {}, {}, set()
    for task, dry in plan:
        label = f"{task} {'dry run' if dry else 'rerun' if (task, dry) in seen else 'real'}"
        seen.add((task, dry))
        report = services.engine.run([task], dry_run=dry, full=True)["result"][task]
        assert report["success"], report
        timings[label] = report["seconds"]
        counts[label] = report.get("memories_processed")
        progress(f"{label}: {report['seconds']:.3f} s ({_summary(task, report)})")
    return {"timings": timings, "processed": counts}


def _summary(task: str, report: dict) -> str:
    keys = {"decay": ("memories_processed", "scores_changed"),
            "dedup": ("memories_processed", "similar_pairs", "merged", "supersessions_total"),
            "creative": ("memories_processed", "edges_total"),
            "cluster": ("memories_processed", "clusters_found", "created", "unchanged"),
            "forget": ("memories_processed", "archived", "deleted", "protected")}[task]
    return ", ".join(f"{k}={report.get(k)}" for k in keys)


def full_run(services, settings) -> dict:
    """All five tasks as one real run, with GET /consolidate/status sent every 20 ms while it goes."""
    client = create_app(settings, services=services, start_scheduler=False).test_client()
    headers = {"Authorization": f"Bearer {TOKEN}"}
    baseline = _current_memory_mb()
    _reset_peak_memory()
    run = services.engine.begin(list(TASK_NAMES), dry_run=False, trigger="benchmark", full=True)
    started = time.monotonic()
    worker = services.engine.execute_in_background(run)
    latencies = []
    while worker.is_alive():
        sent = time.perf_counter()
        assert client.get("/consolidate/status", headers=headers).status_code == 200
        latencies.append(time.perf_counter() - sent)
        time.sleep(0.02)
    worker.join()
    seconds = time.monotonic() - started
    peak = _peak_memory_mb()
    record = services.engine.get_run(run.id) or {}
    tasks = {task: report.get("seconds") for task, report in (record.get("result") or {}).items()}
    rescored = ((record.get("result") or {}).get("decay") or {}).get("scores_changed")
    progress(f"full run: {seconds:.2f} s ({tasks}), peak RSS {peak:.0f} MB (before: {baseline:.0f} MB), "
             f"{len(latencies)} status requests (max {max(latencies, default=0) * 1000:.0f} ms), decay rewrote "
             f"{rescored} scores")
    ms = np.array(latencies) * 1000 if latencies else np.zeros(1)
    return {"full_run_seconds": round(seconds, 2), "full_run_tasks": tasks, "peak_rss_mb": round(peak),
            "rss_before_mb": round(baseline),
            "graph_server_rss_mb":
            _graph_server_rss_mb(services), "status_requests": len(latencies),
            "status_p50_ms": round(float(np.percentile(ms, 50)), 1), "status_p99_ms":
            round(float(np.percentile(ms, 99)), 1), "status_max_ms": round(float(ms.max()), 1)}


def incremental_rerun(services, n: int) -> dict:
    """Change 1 % of the memories (half new restatements of others, half existing ones rewritten to announce a
    change of their detail, with a new vector), then time a run of all five tasks as the scheduler takes it
    between full passes (each incremental). Then change another 1 % the same way and time a full pass, for the
    same work done the long way."""
    rng = np.random.default_rng(23)
    count = max(2, round(CHANGED_SHARE * n))
    change_memories(services, rng, count)
    result = services.engine.run(list(TASK_NAMES), trigger="benchmark")
    assert result["success"], result
    passes = {task: report["pass"] for task, report in result["result"].items()}
    # Clustering takes its full pass when the changes broke MetaPatterns holding over half the candidates (1 %
    # changed at random breaks about a third of them); every other task is incremental.
    assert all(passes[task] == "incremental" for task in INCREMENTAL_TASKS if task != "cluster"), passes
    seconds = {task: report["seconds"] for task, report in result["result"].items()}
    considered = {task: result["result"][task].get("memories_considered",
                                                     result["result"][task]["memories_processed"])
                  for task in ("decay", "dedup", "cluster", "forget")}
    progress(f"incremental rerun after {count} changed: {result['duration_seconds']:.2f} s ({seconds}; read "
             f"{considered})")
    change_memories(services, rng, count)
    full = services.engine.run(list(TASK_NAMES), trigger="benchmark", full=True)
    assert full["success"], full
    full_seconds = {task: report["seconds"] for task, report in full["result"].items()}
    progress(f"full pass after {count} changed: {full['duration_seconds']:.2f} s ({full_seconds})")
    return {"incremental_seconds": result["duration_seconds"], "incremental_tasks": seconds,
            "incremental_considered": considered, "changed": count, "cluster_pass": passes["cluster"],
            "full_after_change_seconds": full["duration_seconds"], "full_after_change_tasks": full_seconds}


def share_sweep(services, n: int) -> dict[str, dict]:
    """After the runs above: change each of SWEPT_SHARES of the memories in turn and time the scheduler's
    incremental rerun after it (a task may take its full pass: its report says why, and so does this)."""
    rng = np.random.default_rng(29)
    swept = {}
    for share in SWEPT_SHARES:
        change_memories(services, rng, max(2, round(share * n)))
        result = services.engine.run(list(TASK_NAMES), trigger="benchmark")
        assert result["success"], result
        full = sorted(task for task, report in result["result"].items()
                      if report["pass"] == "full" and task in ("decay", "dedup", "creative", "forget"))
        swept[f"{share:g}"] = {"seconds": result["duration_seconds"], "full_passes": full}
        progress(f"incremental rerun after {share * 100:g} % changed: {result['duration_seconds']:.2f} s "
                 f"(full passes: {full or 'none'})")
    return swept


def change_memories(services, rng: np.random.Generator, count: int) -> None:
    """`count` changes through the stores' own writes (so each is marked): new restatements of random active
    memories, and rewrites of others into announcements that their detail changed."""
    graph, vectors = services.stores.graph, services.stores.vectors
    ids = graph.falkor.scan_memories("coalesce(m.archived, false) = false AND coalesce(m.type, '') <> 'MetaPattern'",
                                     "m.id")[0]
    chosen = [ids[i] for i in rng.choice(len(ids), count, replace=False)]
    memories = {m["id"]: m for m in graph.get_memories(chosen)}
    found, matrix = vectors.vectors(chosen)
    vector_of = dict(zip(found, matrix))
    now = utc_now().isoformat()
    new, rewritten = [], []
    for k, memory_id in enumerate(chosen):
        memory, vector = memories[memory_id], vector_of[memory_id]
        noise = rng.standard_normal(vector.shape[0]) / np.sqrt(vector.shape[0])
        if k % 2 == 0:
            copy = {**memory, "id": str(uuid.UUID(bytes=rng.bytes(16), version=4)), "timestamp": now,
                    "content": memory["content"].lower().rstrip(".") + "!"}
            new.append((copy, vector + 0.18 * noise))
        else:
            # As the dataset's own updates: "Note 7 about ...: detail changed from 417 to 418."
            found = re.search(r"[Dd]etail (\d+)|to (\d+)\.$", memory["content"])  # a note, or an earlier update
            detail = int(next(g for g in found.groups() if g)) if found else int(rng.integers(1000))
            head = re.split(r"[.!] [Dd]etail|: detail", memory["content"])[0]
            changed = {**memory, "timestamp": now, "content": f"{head}: detail changed from {detail} to {detail + 1}."}
            rewritten.append((changed, vector + 0.3 * noise))
    for memories_written, write in ((new, graph.create_memories), (rewritten, graph.replace_memories)):
        vectors.upsert([VectorPoint(m["id"], v / np.linalg.norm(v), {"relevance_score": m.get("relevance_score"),
                                                                     "archived": False, "type": m.get("type")})
                        for m, v in memories_written])
        write([m for m, _ in memories_written])


def recall(services, settings, exact_recall: bool) -> dict:
    """Edges of the similarity graph the clustering uses (the one the service keeps between runs, built whole
    or brought up to date), against an exact computation, over the candidates clustering groups."""
    population = services.stores.graph.cluster_population(min_relevance(settings))
    listed, listed_scopes, candidate = population.ids, population.scopes, population.candidate
    # Asked for as clustering asks, every active memory: asked for a subset, the graph would let the others go.
    every, matrix = services.stores.vectors.vectors(listed)
    chosen, scope_of = dict(zip(listed, candidate.tolist())), dict(zip(listed, listed_scopes))
    among = np.flatnonzero([chosen[i] for i in every])
    n = among.size
    threshold = settings.consolidation_cluster_similarity
    if n <= settings.consolidation_cluster_exact_limit:
        return {"method": "exact", "recall": 1.0, "vectors": n}
    every_unit = normalized(matrix)
    rows, cols, _ = services.engine.neighbours.pairs(every, every_unit, threshold, lambda done, total: None,
                                                     [scope_of[i] for i in every])
    number = np.full(len(every), -1, dtype=np.int64)  # position among the candidates
    number[among] = np.arange(n)
    rows, cols = number[rows], number[cols]
    unit = every_unit[among]
    if exact_recall:
        truth = set(zip(*(a.tolist() for a in similar_pairs_exact(unit, threshold)[:2])))
        sampled = "all"
    else:
        # Every exact pair that touches a random sample of rows: an unbiased estimate of recall.
        rng = np.random.default_rng(11)
        sample = rng.choice(n, min(n, RECALL_SAMPLE), replace=False)
        hits = unit[sample] @ unit.T >= threshold
        truth = {(min(int(i), int(j)), max(int(i), int(j))) for i, row in zip(sample, hits)
                 for j in np.flatnonzero(row) if j != i}
        in_sample = np.zeros(n, dtype=bool)
        in_sample[sample] = True
        keep = (rows >= 0) & (cols >= 0)
        keep[keep] = in_sample[rows[keep]] | in_sample[cols[keep]]
        rows, cols = rows[keep], cols[keep]
        sampled = f"{len(sample)} rows"
    found = {pair for pair in zip(rows.tolist(), cols.tolist()) if pair in truth}
    value = len(found) / max(1, len(truth))
    progress(f"recall {value:.4f} over {len(truth)} exact pairs ({sampled})")
    return {"method": "cells", "recall": round(value, 5), "exact_pairs": len(truth), "sample": sampled,
            "vectors": n}


def _reset_peak_memory() -> None:
    try:
        Path("/proc/self/clear_refs").write_text("5")  # Linux: restart the VmHWM high-water mark
    except OSError:
        pass


def _peak_memory_mb() -> float:
    return _proc_status_mb("VmHWM:")


def _current_memory_mb() -> float:
    return _proc_status_mb("VmRSS:")


def _proc_status_mb(field: str) -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field):
            return int(line.split()[1]) / 1024
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _graph_server_rss_mb(services) -> int | None:
    try:
        import psutil

        return round(psutil.Process(int(services.stores.graph.falkor.client.pid)).memory_info().rss / 2**20)
    except Exception:  # a FalkorDB server elsewhere, or no pid to read
        return None


# --- the parent: one child per size, then the table ------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 100000])
    parser.add_argument("--out", default=str(ROOT / "docs" / "performance.md"))
    parser.add_argument("--exact-recall", action="store_true", help="full exact similarity graph (minutes at 100k)")
    parser.add_argument("--step", nargs=3, metavar=("STEP", "N", "DIR"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.step:
        step, n, data_dir = args.step[0], int(args.step[1]), Path(args.step[2])
        result = load_store(n, data_dir) if step == "load" else measure(n, data_dir, args.exact_recall)
        print("RESULT " + json.dumps(result), flush=True)
        return
    results = []
    for n in args.sizes:
        with tempfile.TemporaryDirectory(prefix=f"bench-{n}-") as data_dir:
            loaded = run_step("load", n, data_dir, args.exact_recall)
            results.append({**run_step("measure", n, data_dir, args.exact_recall), **loaded})
    Path(args.out).write_text(render(results, " ".join(sys.argv[1:])))
    progress(f"wrote {args.out}")


def run_step(step: str, n: int, data_dir: str, exact_recall: bool) -> dict:
    return step_in_child(__file__, step, n, data_dir, ["--exact-recall"] if exact_recall else [])


def step_in_child(script: str, step: str, n: int, data_dir: str, extra: list[str] = ()) -> dict:
    """One step of a benchmark in a process of its own (its memory goes with it): its lines echoed, its RESULT
    line returned."""
    command = [sys.executable, script, "--step", step, str(n), data_dir, *extra]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, cwd=ROOT)
    result = None
    for line in process.stdout:
        if line.startswith("RESULT "):
            result = json.loads(line[len("RESULT "):])
        else:
            print(line, end="", flush=True)
    if process.wait() != 0 or result is None:
        sys.exit(f"benchmark step {step} at N={n} failed")
    return result


def render(results: list[dict], arguments: str) -> str:
    sizes = [r["n"] for r in results]
    header = "| task | " + " | ".join(f"N={n:,}" for n in sizes) + " | growth per 10× N | target (10k / 100k) |"
    lines = [header, "|" + "---|" * (len(sizes) + 3)]
    for label in results[0]["timings"]:
        values = [r["timings"][label] for r in results]
        task = label.split()[0]
        target = TARGETS.get("forget dry run" if label == "forget dry run" else task)
        lines.append(f"| {label} | " + " | ".join(f"{v:.3f} s" for v in values) + f" | {_growth(sizes, values)} | "
                     + (_target(target) if target and "rerun" not in label else "") + " |")
    lines.append("| full run (all five, real) | " + " | ".join(f"{r['full_run_seconds']:.2f} s" for r in results)
                 + f" | {_growth(sizes, [r['full_run_seconds'] for r in results])} | {_target(TARGETS['full run'])} |")
    lines.append("| the full run: decay / dedup / creative / cluster / forget | "
                 + " | ".join(" / ".join(f"{r['full_run_tasks'].get(t, 0):.2f}" for t in TASK_NAMES) + " s"
                              for r in results) + " | | |")
    scoped = [(r["scoped_full_run_seconds"], r["scoped_full_run_seconds"] / r["full_run_seconds"]) for r in results]
    lines.append("| full run in 1,000 scopes (user_id), real (the second; the first after the split) | "
                 + " | ".join(f"{seconds:.2f} s ({ratio:.2f}×; first {r.get('scoped_first_run_seconds', 0):.2f} s)"
                              for (seconds, ratio), r in zip(scoped, results))
                 + " | | <= 1.2× the unscoped full run |")
    lines += _incremental_rows(results) + _swept_rows(results)
    rows = [
        ("memories clustered (relevance > 0.3)", [f"{r['recall']['vectors']:,}" for r in results], ""),
        ("similarity-graph edge recall", [_recall(r["recall"]) for r in results], ">= 0.98 at 100k"),
        ("the same, after the 2 % changes above (graph kept, changed vectors searched again)",
         [_recall(r["recall_after_changes"]) for r in results], ">= 0.98 at 100k"),
        ("peak RSS of the full run (service process)", [f"{r['peak_rss_mb']} MB" for r in results], "<= 1024 MB"),
        ("RSS of the process before the full run", [f"{r['rss_before_mb']} MB" for r in results], ""),
        ("embedded FalkorDB server RSS after it", [f"{r['graph_server_rss_mb']} MB" for r in results], ""),
        ("GET /consolidate/status during the run, p50 / p99 / max (requests)",
         [f"{r['status_p50_ms']} / {r['status_p99_ms']} / {r.get('status_max_ms', '?')} ms "
          f"({r.get('status_requests', '?')})" for r in results], "p99 <= 50 ms"),
        ("load (generate + write both stores)", [f"{r['load_seconds']} s" for r in results], ""),
        ("reference pure-Python loop (machine speed)", [f"{r.get('reference_loop_seconds', '?')} s" for r in results],
         ""),
    ]
    for name, values, target in rows:
        lines.append(f"| {name} | " + " | ".join(values) + f" | | {target} |")
    return TEMPLATE.format(command=f".venv/bin/python bench/consolidation_bench.py {arguments}".strip(),
                           machine=_machine(), table="\n".join(lines))


def _incremental_rows(results: list[dict]) -> list[str]:
    """The incremental rerun after 1 % changed: its time (and its ratio to the full run above), a full pass
    after the same kind of change, each one's tasks, and how many memories dedup and clustering read."""
    ratios = [(r["incremental_seconds"], r["incremental_seconds"] / r["full_run_seconds"]) for r in results]
    return [
        "| incremental rerun after 1 % changed (all five, real) | "
        + " | ".join(f"{seconds:.2f} s ({ratio:.2f}×)" for seconds, ratio in ratios)
        + f" | | <= {SHARE_TARGETS[CHANGED_SHARE]}× the full run |",
        "| full pass after 1 % changed (all five, real) | "
        + " | ".join(f"{r['full_after_change_seconds']:.2f} s" for r in results) + " | | |",
        "| incremental rerun: decay / dedup / creative / cluster / forget | "
        + " | ".join(" / ".join(f"{r['incremental_tasks'][t]:.2f}" for t in TASK_NAMES) + " s" for r in results)
        + " | | |",
        "| full pass after 1 % changed: decay / dedup / creative / cluster / forget | "
        + " | ".join(" / ".join(f"{r['full_after_change_tasks'][t]:.2f}" for t in TASK_NAMES) + " s" for r in results)
        + " | | |",
        "| the five tasks' own seconds, incremental against the full pass after 1 % changed | "
        + " | ".join(f"{_sum(r['incremental_tasks']):.2f} s "
                     f"({_sum(r['incremental_tasks']) / _sum(r['full_after_change_tasks']):.2f}×)" for r in results)
        + " | | |",
        "| memories changed / read by the incremental decay, dedup, cluster (cluster's pass), forget | "
        + " | ".join(f"{r['changed']:,} / {r['incremental_considered']['decay']:,}, "
                     f"{r['incremental_considered']['dedup']:,}, "
                     f"{r['incremental_considered']['cluster']:,} ({r['cluster_pass']}), "
                     f"{r['incremental_considered']['forget']:,}" for r in results) + " | | |",
    ]


def _swept_rows(results: list[dict]) -> list[str]:
    """The incremental reruns after 0.1 % and 10 % changed, each against the full run."""
    rows = []
    for share in SWEPT_SHARES:
        cells = []
        for r in results:
            swept = r["share_sweep"][f"{share:g}"]
            fulls = f"; full: {', '.join(swept['full_passes'])}" if swept["full_passes"] else ""
            cells.append(f"{swept['seconds']:.2f} s ({swept['seconds'] / r['full_run_seconds']:.2f}×{fulls})")
        target = f"<= {SHARE_TARGETS[share]}× the full run" if share in SHARE_TARGETS else ""
        rows.append(f"| incremental rerun after {share * 100:g} % changed (all five, real; after the 2 % above) | "
                    + " | ".join(cells) + f" | | {target} |")
    return rows


def _sum(seconds: dict[str, float]) -> float:
    return sum(seconds[task] for task in TASK_NAMES)


def _target(target: tuple[float | None, float | None]) -> str:
    return " / ".join("–" if t is None else f"{t:g} s" for t in target)


def _growth(sizes: list[int], values: list[float]) -> str:
    if len(sizes) < 2 or values[-2] <= 0:
        return ""
    per_decade = (values[-1] / values[-2]) ** (1 / np.log10(sizes[-1] / sizes[-2]))
    return f"×{per_decade:.1f}"


def _recall(recall: dict) -> str:
    if recall["method"] == "exact":
        return "1 (exact)"
    return f"{recall['recall']:.4f} ({recall['sample']})"


def _machine() -> str:
    return f"{os.cpu_count()} CPUs, Python {platform.python_version()}, {platform.platform()}"


TEMPLATE = """# Performance

Measured on this project's machine ({machine}) with the embedded stores (falkordblite, Qdrant Edge), 384-d
vectors, by:

    {command}

Each size runs in its own process: generate the store (planted topics of 100 memories plus 20 % noise; ages
mostly weeks, 85 % used in the last week; two edges per memory; 5 % restatements of another memory and 1 %
updates of one, for dedup), load it, restart the services, then time each
task dry and real (the task's own seconds, from its report), then a full run while `GET /consolidate/status` is
sent every 20 ms. Forget runs with archive / delete thresholds of 0.1 / 0.02 so its dry run has decisions to make.
"rerun" is the same task again right away: the steady state (decay rewrites only scores that moved more than
`CONSOLIDATION_SCORE_EPSILON`; dedup finds nothing left to merge; clustering finds every cluster unchanged).
The full run comes after the individual runs, so it is that steady state too. The neighbour graph is kept
between runs: the first dedup dry run after the start builds it whole (and reads every text as a fact for the
first time), later runs search again only the vectors that changed. "dedup real" is the first real pass on the
fresh store (the fact terms incremental runs look memories up by are written with each memory at load, as
`POST /memory` and the import write them). Every run above is a full pass (`full: true`). Then 1 % of the
memories change (half new restatements, half rewritten to announce a change, with new vectors) and the five
tasks run as the scheduler runs them between full passes, each incremental (decay and forget read what changed,
was touched or used, and what came due since their last pass); its ratio is to the full run above. (Changed
at random, 1 % of the memories break about a third of the MetaPatterns, each of which an incremental
clustering reads again whole, from the pairs and the subjects the process keeps; past half the candidates it
takes its full pass, as its row would say. Above the exact limit both incremental passes take their pairs from
the kept similarity graph.) Another 1 %
changes and a full pass runs, for comparison. Then 0.1 % and then 10 % more change, each followed by the
scheduler's incremental rerun (its ratio is to the full run; a task that takes its full pass instead is named).
Last, every memory gets a `user_id` (node id modulo 1,000) and a full run goes with
`CONSOLIDATION_SCOPE_PROPERTIES=user_id`: the cost of searching each scope on its own.

{table}

"growth per 10× N" is how much the time multiplies for ten times the memories (10 = linear).
"""


if __name__ == "__main__":
    main()
