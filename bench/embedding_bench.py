"""Benchmark the built-in sentence model: texts a second, the memory it takes, and POST /recall by text.

    PYTHONPATH=. .venv/bin/python bench/embedding_bench.py --sizes 100000

Texts: the sentences of ../shared/quality/pairs.jsonl when present (else generated ones), embedded in one call
with EMBEDDING_THREADS 1 and 2; the process's RSS before the model is read and after; an import of IMPORT_LINES
lines of text alone into an empty store. Then for each N a store as
bench/consolidation_bench.py loads it (planted topics, 384-d client vectors, which name no model and so count as
the configured one), opened as the service opens it, warmed up (the model read, the recall index built), and
REQUESTS text recalls (k 10, current) sent one after the other through the app, each embedding its query and
searching, alternated with as many recalls by a random vector (the search alone). Prints a Markdown table
(docs/performance.md, "Embedding").
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

from consolidation_bench import (TOKEN, _current_memory_mb, bench_settings, load_store,  # noqa: E402
                                 progress, step_in_child)

from consolidation.api import create_app  # noqa: E402
from consolidation.embedding import MiniLMEmbedder  # noqa: E402
from consolidation.service import build_services  # noqa: E402

PAIRS = ROOT.parent / "shared" / "quality" / "pairs.jsonl"
TEXTS = 2000
REQUESTS = 300
IMPORT_LINES = 5000
WARM_UP = 20
SETTLE_SECONDS = 10
QUESTIONS = ("What did Maria adopt from the shelter?", "When did Caroline start playing the guitar?",
             "Which city does the user live in now?", "What is the deadline of the quarterly report?",
             "Who treated the patient for a fever?", "What does the team deploy on Fridays?")


def texts() -> list[str]:
    if PAIRS.exists():
        found = []
        for line in PAIRS.read_text().splitlines():
            pair = json.loads(line)
            found += [pair["a"], pair["b"]]
        return sorted(set(found))[:TEXTS]
    return [f"Memory {i}: the user mentioned {QUESTIONS[i % len(QUESTIONS)].lower()}" for i in range(TEXTS)]


def throughput() -> dict:
    sample = texts()
    before = _current_memory_mb()
    MiniLMEmbedder().load()
    loaded = _current_memory_mb()
    measured = {"texts": len(sample), "mean_chars": round(float(np.mean([len(t) for t in sample])), 1),
                "rss_before_mb": round(before), "model_mb": round(loaded - before)}
    for threads in (1, 2):
        started = time.perf_counter()
        MiniLMEmbedder(threads).embed(sample)
        measured[f"texts_per_second_{threads}"] = round(len(sample) / (time.perf_counter() - started), 1)
        progress(f"{threads} thread(s): {measured[f'texts_per_second_{threads}']} texts/s")
    measured["rss_after_mb"] = round(_current_memory_mb())
    single = []
    embedder = MiniLMEmbedder()
    for question in QUESTIONS * 20:
        started = time.perf_counter()
        embedder.embed([question])
        single.append((time.perf_counter() - started) * 1000)
    measured["one_query_ms"] = percentiles(single)
    return measured


def text_import(count: int = IMPORT_LINES) -> dict:
    """An import of `count` lines holding text only, into an empty embedded store: every line embedded."""
    sample = texts()
    lines = "\n".join(json.dumps({"content": f"{sample[i % len(sample)]} ({i})"}) for i in range(count)).encode()
    with tempfile.TemporaryDirectory(prefix="embedding-import-") as folder:
        services = build_services(bench_settings(Path(folder)))
        try:
            started = time.perf_counter()
            report = services.memories.import_jsonl(lines).public()
            seconds = time.perf_counter() - started
        finally:
            services.close()
    assert report["created"] == count, report
    progress(f"text import of {count}: {seconds:.1f} s")
    return {"lines": count, "seconds": round(seconds, 1), "lines_per_second": round(count / seconds, 1)}


def text_recall(n: int, data_dir: Path) -> dict:
    settings = bench_settings(data_dir)
    services = build_services(settings)
    try:
        client = create_app(settings, services=services, start_scheduler=False).test_client()
        headers = {"Authorization": f"Bearer {TOKEN}"}
        # The model is read once, and the recall index built after the open (a search waits for it): the steady
        # state is what is measured.
        for i in range(WARM_UP):
            client.post("/recall", json={"query": QUESTIONS[i % len(QUESTIONS)], "k": 10}, headers=headers)
        time.sleep(SETTLE_SECONDS)
        dimension = settings.vector_size
        rng = np.random.default_rng(7)
        by_text, by_vector = [], []
        for i in range(REQUESTS):
            for body, into in (({"query": QUESTIONS[i % len(QUESTIONS)] + f" ({i})", "k": 10}, by_text),
                               ({"embedding": rng.standard_normal(dimension).tolist(), "k": 10}, by_vector)):
                started = time.perf_counter()
                answer = client.post("/recall", json=body, headers=headers)
                into.append((time.perf_counter() - started) * 1000)
                assert answer.status_code == 200, answer.get_json()
        return {"n": n, "text_recall_ms": percentiles(by_text), "vector_recall_ms": percentiles(by_vector)}
    finally:
        services.close()


def percentiles(milliseconds: list[float]) -> dict:
    values = np.asarray(milliseconds)
    return {"p50": round(float(np.percentile(values, 50)), 1), "p99": round(float(np.percentile(values, 99)), 1),
            "max": round(float(values.max()), 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[100000])
    parser.add_argument("--step", nargs=3, metavar=("STEP", "N", "DIR"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.step:
        step, n, data_dir = args.step
        result = load_store(int(n), Path(data_dir)) if step == "load" else text_recall(int(n), Path(data_dir))
        print("RESULT " + json.dumps(result), flush=True)
        return
    rates = {**throughput(), "import": text_import()}
    recalls = []
    for n in args.sizes:
        with tempfile.TemporaryDirectory(prefix="embedding-bench-") as data_dir:
            step_in_child(__file__, "load", n, data_dir)
            recalls.append(step_in_child(__file__, "measure", n, data_dir))
    print(render(rates, recalls))


def render(rates: dict, recalls: list[dict]) -> str:
    lines = ["| built-in model (all-MiniLM-L6-v2, numpy) | measured |", "|---|---|",
             f"| texts a second, 1 thread ({rates['texts']:,} texts of {rates['mean_chars']} characters on "
             f"average) | {rates['texts_per_second_1']} |",
             f"| texts a second, 2 threads | {rates['texts_per_second_2']} |",
             f"| one query embedded alone, p50 / p99 | {rates['one_query_ms']['p50']} / "
             f"{rates['one_query_ms']['p99']} ms |",
             f"| memory the model adds to a process | {rates['model_mb']} MB |",
             f"| an import of {rates['import']['lines']:,} lines of text only (embedded, then written to both "
             f"stores) | {rates['import']['seconds']} s, {rates['import']['lines_per_second']} lines a second |"]
    for r in recalls:
        for kind, key in (("by text", "text_recall_ms"), ("by a vector (the same search, no embedding)",
                                                          "vector_recall_ms")):
            lines.append(f"| POST /recall {kind} at {r['n']:,} memories, p50 / p99 / max ({REQUESTS} requests) | "
                         f"{r[key]['p50']} / {r[key]['p99']} / {r[key]['max']} ms |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
