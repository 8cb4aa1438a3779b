"""Benchmark qdrant-client local mode against Qdrant Edge as an embedded on-disk vector store."""

from __future__ import annotations

import argparse
import importlib
import json
import os
import platform
import resource
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from importlib.metadata import version
from pathlib import Path

import numpy as np

COLLECTION = "bench"
SCROLL_PAGE = 10_000
PER_POINT_LOCAL_MAX_N = 10_000
TYPES = ("episodic", "semantic", "procedural")
BEGIN = "<!-- generated:begin (bench/embedded_qdrant.py overwrites this block) -->"
END = "<!-- generated:end -->"


class EdgeStore:
    """A Qdrant Edge shard (qdrant-edge-py)."""

    name = "edge"

    def __init__(self, path: str, dim: int, create: bool = True):
        import qdrant_edge as qe

        self.qe = qe
        self.dim = dim
        config = qe.EdgeConfig(vectors=qe.EdgeVectorParams(size=dim, distance=qe.Distance.Cosine))
        self.shard = qe.EdgeShard.create(path, config) if create else qe.EdgeShard.load(path)

    def upsert(self, ids: Sequence[str], vectors: np.ndarray, payloads: Sequence[dict]) -> None:
        points = [self.qe.Point(i, v.tolist(), p) for i, v, p in zip(ids, vectors, payloads)]
        self.shard.update(self.qe.UpdateOperation.upsert_points(points))

    def scroll_page(self, offset):
        records, offset = self.shard.scroll(
            self.qe.ScrollRequest(offset=offset, limit=SCROLL_PAGE, with_payload=False, with_vector=True)
        )
        return [str(r.id) for r in records], [r.vector for r in records], offset

    def set_scores(self, ids: Sequence[str], scores: Sequence[float]) -> None:
        for point_id, score in zip(ids, scores):
            self.shard.update(self.qe.UpdateOperation.set_payload([point_id], {"relevance_score": score}))

    def delete(self, ids: Sequence[str]) -> None:
        self.shard.update(self.qe.UpdateOperation.delete_points(list(ids)))

    def count(self) -> int:
        return self.shard.count(self.qe.CountRequest(exact=True))

    def close(self) -> None:
        self.shard.flush()
        self.shard.close()


class LocalStore:
    """qdrant-client in local mode, persisted to a folder (QdrantClient(path=...))."""

    name = "local"

    def __init__(self, path: str, dim: int, create: bool = True):
        from qdrant_client import QdrantClient, models

        self.models = models
        self.client = QdrantClient(path=path)
        if create:
            params = models.VectorParams(size=dim, distance=models.Distance.COSINE)
            self.client.create_collection(COLLECTION, vectors_config=params)

    def upsert(self, ids: Sequence[str], vectors: np.ndarray, payloads: Sequence[dict]) -> None:
        points = [self.models.PointStruct(id=i, vector=v.tolist(), payload=p) for i, v, p in zip(ids, vectors, payloads)]
        self.client.upsert(COLLECTION, points=points)

    def scroll_page(self, offset):
        records, offset = self.client.scroll(
            COLLECTION, offset=offset, limit=SCROLL_PAGE, with_payload=False, with_vectors=True
        )
        return [str(r.id) for r in records], [r.vector for r in records], offset

    def set_scores(self, ids: Sequence[str], scores: Sequence[float]) -> None:
        operations = [
            self.models.SetPayloadOperation(
                set_payload=self.models.SetPayload(payload={"relevance_score": s}, points=[i])
            )
            for i, s in zip(ids, scores)
        ]
        self.client.batch_update_points(COLLECTION, update_operations=operations)

    def set_scores_per_call(self, ids: Sequence[str], scores: Sequence[float]) -> None:
        for point_id, score in zip(ids, scores):
            self.client.set_payload(COLLECTION, payload={"relevance_score": score}, points=[point_id])

    def delete(self, ids: Sequence[str]) -> None:
        self.client.delete(COLLECTION, points_selector=self.models.PointIdsList(points=list(ids)))

    def count(self) -> int:
        return self.client.count(COLLECTION, exact=True).count

    def close(self) -> None:
        self.client.close()


STORES = {"edge": EdgeStore, "local": LocalStore}
MODULES = {"edge": "qdrant_edge", "local": "qdrant_client"}
LABELS = {"edge": "Qdrant Edge", "local": "qdrant-client local"}
OPERATIONS = [
    "open (create)",
    "upsert",
    "scroll to matrix",
    "set distinct score",
    "set distinct score, per-point calls",
    "delete 10%",
    "flush + close",
    "import library (fresh process)",
    "reopen + count (fresh process)",
    "fresh process peak RSS (MB)",
]


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def timed(fn: Callable, *args):
    start = time.perf_counter()
    result = fn(*args)
    return time.perf_counter() - start, result


def batches(items: Sequence, size: int):
    for start in range(0, len(items), size):
        yield start, items[start : start + size]


def make_data(n: int, dim: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    ids = [str(uuid.UUID(bytes=rng.bytes(16), version=4)) for _ in range(n)]
    vectors = rng.standard_normal((n, dim), dtype=np.float32)
    payloads = [
        {"relevance_score": float(s), "archived": False, "type": TYPES[t]}
        for s, t in zip(rng.random(n), rng.integers(0, len(TYPES), n))
    ]
    return ids, vectors, payloads


def upsert_all(store, ids, vectors, payloads, batch: int) -> None:
    for start, part in batches(ids, batch):
        store.upsert(part, vectors[start : start + batch], payloads[start : start + batch])


def scroll_all(store, dim: int) -> tuple[list[str], np.ndarray]:
    ids: list[str] = []
    parts = []
    offset = None
    while True:
        page_ids, page_vectors, offset = store.scroll_page(offset)
        ids.extend(page_ids)
        parts.append(np.asarray(page_vectors, dtype=np.float32).reshape(-1, dim))
        if offset is None:
            return ids, np.concatenate(parts)


def set_all_scores(set_scores: Callable, ids, scores, batch: int) -> None:
    for start, part in batches(ids, batch):
        set_scores(part, scores[start : start + batch])


def delete_some(store, ids, batch: int) -> None:
    for _, part in batches(ids, batch):
        store.delete(part)


def run_child(kind: str, path: str, dim: int) -> dict:
    """Run --child in a fresh interpreter and return its JSON report."""
    cmd = [sys.executable, os.path.abspath(__file__), "--child", kind, path, "--dim", str(dim)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
    if done.returncode != 0:
        raise RuntimeError(f"child failed: {done.stderr.strip()}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def peak_rss_mb() -> float:
    """This process's peak RSS.

    ru_maxrss is not used on Linux: exec keeps the parent's high-water mark, so a child of a
    big benchmark process reports the parent's peak. VmHWM belongs to the new image only.
    """
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def child_main(kind: str, path: str, dim: int) -> None:
    """Open an existing store, count it and report seconds, peak RSS, or the error raised."""
    report: dict = {}
    report["import_seconds"], _ = timed(importlib.import_module, MODULES[kind])
    start = time.perf_counter()
    try:
        store = STORES[kind](path, dim, create=False)
        report["count"] = store.count()
        report["seconds"] = time.perf_counter() - start
        store.close()
    except Exception as exc:  # the lock probe wants whatever the library raises
        report["error"] = f"{type(exc).__module__}.{type(exc).__qualname__}: {exc}"
    report["peak_rss_mb"] = peak_rss_mb()
    print(json.dumps(report))


def bench_one(kind: str, n: int, args) -> dict[str, float]:
    """Run every operation on one fresh store of n points; return seconds (and MB) per operation."""
    ids, vectors, payloads = make_data(n, args.dim)
    scores = [float(s) for s in np.random.default_rng(1).random(n)]
    doomed = [str(i) for i in np.random.default_rng(2).choice(ids, size=n // 10, replace=False)]
    folder = tempfile.mkdtemp(prefix=f"bench-{kind}-{n}-")
    results: dict[str, float] = {}

    def step(key: str, fn: Callable, *fn_args):
        seconds, value = timed(fn, *fn_args)
        results[key] = seconds
        log(f"{kind} n={n}: {key} {seconds:.2f}s")
        return value

    importlib.import_module(MODULES[kind])  # keep import time out of "open (create)"
    try:
        store = step("open (create)", STORES[kind], folder, args.dim)
        step("upsert", upsert_all, store, ids, vectors, payloads, args.batch)
        got_ids, matrix = step("scroll to matrix", scroll_all, store, args.dim)
        assert matrix.shape == (n, args.dim) and len(set(got_ids)) == n, "scroll lost points"
        step("set distinct score", set_all_scores, store.set_scores, ids, scores, args.batch)
        if kind == "local" and n <= PER_POINT_LOCAL_MAX_N:
            step("set distinct score, per-point calls", set_all_scores, store.set_scores_per_call, ids, scores, args.batch)
        step("delete 10%", delete_some, store, doomed, args.batch)
        step("flush + close", store.close)
        child = run_child(kind, folder, args.dim)
        if "error" in child:
            raise RuntimeError(child["error"])
        assert child["count"] == n - len(doomed), f"reopened count {child['count']}"
        results["import library (fresh process)"] = child["import_seconds"]
        results["reopen + count (fresh process)"] = child["seconds"]
        results["fresh process peak RSS (MB)"] = child["peak_rss_mb"]
        log(f"{kind} n={n}: reopen {child['seconds']:.2f}s, count {child['count']}, peak RSS {child['peak_rss_mb']:.0f} MB")
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return results


def lock_probe(kind: str, dim: int) -> str:
    """Hold a small store open here and report what a second process gets when it opens the same folder."""
    folder = tempfile.mkdtemp(prefix=f"lock-{kind}-")
    try:
        store = STORES[kind](folder, dim)
        ids, vectors, payloads = make_data(10, dim)
        store.upsert(ids, vectors, payloads)
        child = run_child(kind, folder, dim)
        store.close()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    outcome = child.get("error") or f"no error: opened and counted {child['count']} points"
    log(f"lock probe {kind}: {outcome}")
    return outcome


def machine() -> list[str]:
    return [
        f"- CPUs (nproc): {len(os.sched_getaffinity(0))}, RAM: {os.sysconf('SC_PHYS_PAGES') * os.sysconf('SC_PAGE_SIZE') / 2**30:.1f} GiB",
        f"- Python: {platform.python_version()} on {platform.platform()}",
        f"- qdrant-client {version('qdrant-client')}, qdrant-edge-py {version('qdrant-edge-py')}, numpy {np.__version__}",
    ]


def fmt(value: float | None) -> str:
    if value is None:
        return "—"
    return f"{value:.3f}" if value < 1 else f"{value:.1f}" if value < 100 else f"{value:.0f}"


def ratio(local: float | None, edge: float | None) -> str:
    if local is None or edge is None or edge == 0:
        return "—"
    r = local / edge
    return f"{r:.2f}×" if r < 1 else f"{r:.1f}×" if r < 10 else f"{r:.0f}×"


def table(results: dict, kinds: list[str], sizes: list[int]) -> list[str]:
    both = kinds == ["edge", "local"]
    header = ["operation (seconds unless noted)"]
    for n in sizes:
        header += [f"{LABELS[k]} N={n:,}" for k in kinds] + ([f"local ÷ edge N={n:,}"] if both else [])
    present = {op for cell in results.values() for op in cell}
    operations = [op for op in OPERATIONS if op in present]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for op in operations:
        row = [op]
        for n in sizes:
            values = [results.get((k, n), {}).get(op) for k in kinds]
            row += [fmt(v) for v in values] + ([ratio(values[1], values[0])] if both else [])
        lines.append("| " + " | ".join(row) + " |")
    return lines


def render(results: dict, locks: dict, kinds: list[str], sizes: list[int], args) -> str:
    command = "python " + " ".join(shlex.quote(a) for a in sys.argv)
    lines = [BEGIN, "", "## Results", "", f"Command: `{command}`", "", *machine(), ""]
    lines += [f"Points: {args.dim}-d random float32, UUID string ids, cosine; batches of {args.batch}; "
              f"scroll pages of {SCROLL_PAGE}; each store and N in a fresh temp folder.", ""]
    lines += table(results, kinds, sizes)
    lines += ["", "## Second process on the same folder", ""]
    lines += [f"- {LABELS[k]}: `{msg}`" for k, msg in locks.items()]
    return "\n".join(lines + ["", END, ""])


def write_doc(path: Path, block: str) -> None:
    """Replace the generated block in path, keeping any hand-written text around it."""
    old = path.read_text() if path.exists() else "# Embedded Qdrant: local mode vs Edge\n\n" + BEGIN + END
    head, _, rest = old.partition(BEGIN)
    _, _, tail = rest.partition(END)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(head + block.rstrip("\n") + tail.rstrip("\n") + "\n")


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument("--out", type=Path, default=Path("docs/embedded-qdrant.md"))
    parser.add_argument("--only", choices=sorted(STORES))
    parser.add_argument("--child", nargs=2, metavar=("STORE", "PATH"), help=argparse.SUPPRESS)
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    if args.child:
        child_main(args.child[0], args.child[1], args.dim)
        return
    kinds = [args.only] if args.only else ["edge", "local"]
    results = {(k, n): bench_one(k, n, args) for n in args.sizes for k in kinds}
    locks = {k: lock_probe(k, args.dim) for k in kinds}
    write_doc(args.out, render(results, locks, kinds, args.sizes, args))
    log(f"wrote {args.out}")


if __name__ == "__main__":
    main()
