"""Measure memory hygiene on labelled sets: precision and recall of merges, supersessions, contradictions and of
each creative edge kind, before (the landed rules) and after, in two regimes; writes docs/quality.md.

    .venv/bin/python bench/quality.py                     # the sets in bench/ -> docs/quality.md
    .venv/bin/python bench/quality.py --set DIR --out F   # another set: DIR/holdout.jsonl + DIR/holdout_labels.json

The sets: bench/quality_set.py (ours), and bench/holdout/ (written independently, by someone who never saw the
rules, with deeper paraphrases: it shows where wording-based rules stop).

Regimes: "built-in" imports the memories without embeddings (the service's own embedder); "supplied" gives each
memory a client embedding built from its labels so that a look-alike is exactly as close to a fact as that
fact's restatements are (cosine ~0.95), the way real models place "staging" and "production" deploys.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import tempfile
import time
from collections import defaultdict
from datetime import timedelta
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

import quality_set  # noqa: E402

from consolidation.rules import association_for  # noqa: E402
from consolidation.service import build_services  # noqa: E402
from consolidation.settings import Settings  # noqa: E402
from consolidation.timeutil import parse_iso  # noqa: E402

DIM = 384
TOKEN = "quality-admin-token-0123456789"
KINDS = ("explains", "shares_theme", "parallel_context")


# --- a labelled set, whichever way it was made ---------------------------------------------------------------

class Labelled:
    def __init__(self, name: str, memories: list[dict], labels: dict):
        self.name, self.memories, self.labels = name, memories, labels
        self.by_id = {m["id"]: m for m in memories}

    @classmethod
    def own(cls) -> Labelled:
        built = quality_set.build()
        memories = [{"id": m.id, "content": m.content, "type": m.type, "timestamp": m.when.isoformat(),
                     "tags": ["quality"]} for m in built.memories]
        labels = {"fact": {m.id: m.fact for m in built.memories}, "subject": {m.id: m.subject for m in built.memories},
                  "topic": {m.id: m.topic for m in built.memories}, "kind": {m.id: m.kind for m in built.memories},
                  "supersedes": [list(p) for p in built.supersedes], "contradicts": [list(p) for p in built.contradicts],
                  "lookalike": [[m.id, o.id] for m in built.memories if m.kind == "lookalike"
                                for o in built.memories if o.fact == m.fact.removesuffix("-lookalike")]}
        return cls("bench/quality_set.py", memories, labels)

    @classmethod
    def from_dir(cls, directory: Path) -> Labelled:
        memories = [json.loads(line) for line in (directory / "holdout.jsonl").read_text().splitlines() if line]
        return cls(str(directory.relative_to(ROOT) if directory.is_relative_to(ROOT) else directory), memories,
                   json.loads((directory / "holdout_labels.json").read_text()))


# --- client embeddings where look-alikes are as close as duplicates --------------------------------------------

def supplied_vectors(data: Labelled, seed: int = 3) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)

    def near(vector, cosine):  # a unit vector at about this cosine from `vector`
        spread = np.sqrt(1 / cosine - 1)
        noisy = vector + spread * rng.standard_normal(DIM) / np.sqrt(DIM)
        return noisy / np.linalg.norm(noisy)

    topics: dict[str, np.ndarray] = {}
    subjects: dict[str, np.ndarray] = {}
    facts: dict[str, np.ndarray] = {}
    fact, subject, topic = data.labels["fact"], data.labels["subject"], data.labels["topic"]
    lookalike_of = {a: b for a, b in data.labels["lookalike"]}
    older_of = defaultdict(list)
    for newer, older in data.labels["supersedes"]:
        older_of[newer].append(older)

    def fact_vector(memory_id: str) -> np.ndarray:
        key = fact[memory_id]
        if key not in facts:
            if memory_id in lookalike_of:  # built on the fact it looks like, as close as its restatements
                facts[key] = fact_vector(lookalike_of[memory_id])
            elif older_of.get(memory_id):  # an update: the same subject, a changed fact
                facts[key] = near(fact_vector(older_of[memory_id][0]), 0.85)
            else:
                t = topics.setdefault(topic[memory_id], near(rng.standard_normal(DIM), 0.01))
                s = subjects.setdefault(subject[memory_id], near(t, 0.5))
                facts[key] = s
        return facts[key]

    return {m["id"]: near(fact_vector(m["id"]), 0.95) for m in data.memories}


# --- one run of the service on one set in one regime --------------------------------------------------------

def measure(data: Labelled, regime: str) -> dict:
    vectors = supplied_vectors(data) if regime == "supplied" else None
    latest = max(parse_iso(m["timestamp"]) for m in data.memories)
    now = latest + timedelta(days=1)
    with tempfile.TemporaryDirectory() as folder:
        settings = Settings(admin_api_token=TOKEN, data_dir=Path(folder), consolidation_scheduler_enabled=False,
                            consolidation_creative_sample_size=1000, log_level="WARNING",
                            consolidation_creative_kinds=KINDS)
        services = build_services(settings, clock=lambda: now)
        try:
            lines = [json.dumps({**m, **({"embedding": vectors[m["id"]].tolist()} if vectors else {})})
                     for m in data.memories]
            report = services.memories.import_jsonl("\n".join(lines).encode())
            assert not report.errors and not report.conflicts, (report.errors[:3], report.conflicts[:3])
            ids, matrix = services.stores.vectors.vectors([m["id"] for m in data.memories])
            unit = dict(zip(ids, matrix / np.linalg.norm(matrix, axis=1, keepdims=True)))
            before_creative = creative_edges(data, unit, data.memories, automem_rules=True)
            true_contradictions = {frozenset(p) for p in data.labels["contradicts"]}
            before_contradictions = before_creative.pop("contradicts_pairs", set())
            before_creative["contradicts"] = {
                "edges": len(before_contradictions), "right": len(before_contradictions & true_contradictions),
                "across": sum(1 for p in before_contradictions if len({data.labels["subject"][m] for m in p}) > 1)}
            started = time.monotonic()
            first = services.engine.run(["dedup"])["results"]["dedup"]
            seconds = time.monotonic() - started
            second = services.engine.run(["dedup"])["results"]["dedup"]
            state = graph_state(services)
            active = [m for m in data.memories if m["id"] not in state["merged_into"]]
            after_creative = creative_edges(data, unit, active, automem_rules=False)
        finally:
            services.close()
    return {"first": first, "second": second, "seconds": seconds, "state": state,
            "scores": score(data, state), "creative_before": before_creative, "creative_after": after_creative}


def graph_state(services) -> dict:
    falkor = services.stores.graph.falkor
    merged = dict(falkor.execute("MATCH (d:Memory)-[:MERGED_INTO]->(c:Memory) RETURN d.id, c.id", read_only=True))
    supersedes = falkor.execute("MATCH (n:Memory)-[:SUPERSEDES]->(o:Memory) RETURN n.id, o.id", read_only=True)
    contradicts = falkor.execute("MATCH (a:Memory)-[:CONTRADICTS]->(b:Memory) RETURN a.id, b.id", read_only=True)
    return {"merged_into": merged, "supersedes": [tuple(r) for r in supersedes],
            "contradicts": [tuple(r) for r in contradicts]}


# --- scores ----------------------------------------------------------------------------------------------------

def score(data: Labelled, state: dict) -> dict:
    labels = data.labels
    fact, subject, kind = labels["fact"], labels["subject"], labels["kind"]
    group_of = {m["id"]: m["id"] for m in data.memories}
    for duplicate, canonical in state["merged_into"].items():
        group_of[duplicate] = canonical
    members = defaultdict(set)
    for memory_id, canonical in group_of.items():
        members[canonical].add(memory_id)
    predicted = {frozenset(p) for group in members.values() for p in itertools.combinations(sorted(group), 2)}
    by_fact = defaultdict(list)
    for memory_id, f in fact.items():
        by_fact[f].append(memory_id)
    truth = {frozenset(p) for ids in by_fact.values() for p in itertools.combinations(sorted(ids), 2)}
    lookalikes = {frozenset(p) for p in labels["lookalike"]}
    updates = {m for m, k in kind.items() if k == "update"}

    def expand(pairs):  # a link to a canonical stands for its whole group
        return {(a, b) for x, y in pairs for a in members[group_of[x]] for b in members[group_of[y]]}

    superseded = expand(state["supersedes"])
    true_supersedes = {tuple(p) for p in labels["supersedes"]}
    contradicted = {frozenset(p) for p in expand(state["contradicts"])}
    true_contradicts = {frozenset(p) for p in labels["contradicts"]}
    return {
        "merge": _pr(predicted, truth),
        "lookalike_merges": len(predicted & lookalikes),
        "updates_merged_as_duplicates": sum(1 for p in predicted if len(p & updates) == 1),
        "supersession": _pr(superseded, true_supersedes),
        "contradiction": _pr(contradicted, true_contradicts),
        "contradictions_across_subjects": sum(1 for p in contradicted if len({subject[m] for m in p}) > 1),
    }


def _pr(predicted: set, truth: set) -> dict:
    hits = len(predicted & truth)
    return {"predicted": len(predicted), "true": len(truth), "hits": hits,
            "precision": hits / len(predicted) if predicted else None, "recall": hits / len(truth) if truth else None}


def creative_edges(data: Labelled, unit: dict, memories: list[dict], automem_rules: bool) -> dict:
    """Every pair the creative rules would link (its sampler, over enough runs, reaches every pair), by kind,
    with how many link memories of one topic."""
    topic = data.labels["topic"]
    counts = defaultdict(lambda: [0, 0])
    contradicting = set()
    created = {m["id"]: parse_iso(m["timestamp"]).timestamp() for m in memories}
    for a, b in itertools.combinations(memories, 2):
        similarity = float(unit[a["id"]] @ unit[b["id"]])
        apart = created[b["id"]] - created[a["id"]]
        if automem_rules and a["type"] == b["type"] == "Decision" and similarity < 0.3:
            contradicting.add(frozenset((a["id"], b["id"])))  # scored against the contradiction labels
            continue
        else:
            found = association_for(a["type"], b["type"], similarity, apart)
            kind = found.kind if found else None
        if kind:
            counts[kind][0] += 1
            counts[kind][1] += topic[a["id"]] == topic[b["id"]]
    found = {k: {"edges": n, "right": right, "precision": right / n if n else None} for k, (n, right) in counts.items()}
    return {**found, "contradicts_pairs": contradicting} if automem_rules else found


# --- the table ---------------------------------------------------------------------------------------------------

def write(results: list[tuple[Labelled, str, dict]], out: Path) -> None:
    lines = [
        "# Memory hygiene quality", "",
        "Measured by `make quality` (`.venv/bin/python bench/quality.py`) on labelled sets, with the real service",
        "on embedded stores: import, one `dedup` run, then a second one. \"before\" is the landed service: no dedup",
        "task, and creative with AutoMem's four rules (two Decisions with cosine < 0.3 \"contradict\"). Pairs are",
        "counted over memories: a merge group of n memories predicts n(n-1)/2 same-fact pairs, and a SUPERSEDES or",
        "CONTRADICTS edge to a canonical stands for every memory merged into it.", "",
        "Targets (issue 10): merge precision >= 0.97; merge recall >= 0.8 supplied, >= 0.6 built-in; zero look-alike",
        "merges; zero updates merged as duplicates; supersession precision >= 0.9 and recall >= 0.6; zero",
        "contradictions between memories of different subjects.", "",
    ]
    for data, regime, r in results:
        s = r["scores"]
        lines += [f"## {data.name}, {regime} embeddings ({len(data.memories)} memories)", "",
                  "| measure | before | after | |", "|---|---|---|---|",
                  _row("merge precision", None, s["merge"], "precision"),
                  _row("merge recall", 0.0, s["merge"], "recall"),
                  f"| look-alike pairs merged | 0 | {s['lookalike_merges']} | target 0 |",
                  f"| updates merged as duplicates | 0 | {s['updates_merged_as_duplicates']} | target 0 |",
                  _row("supersession precision", None, s["supersession"], "precision"),
                  _row("supersession recall", 0.0, s["supersession"], "recall"),
                  _row("contradiction precision", _before_contradiction(r), s["contradiction"], "precision"),
                  _row("contradiction recall", 0.0, s["contradiction"], "recall"),
                  f"| contradictions across subjects | {_across(r)} | {s['contradictions_across_subjects']} | "
                  "target 0 |"]
        for kind in KINDS:
            before, after = r["creative_before"].get(kind, {}), r["creative_after"].get(kind, {})
            lines.append(f"| creative {kind} precision | {_fmt(before.get('precision'))} ({before.get('edges', 0)}) | "
                         f"{_fmt(after.get('precision'))} ({after.get('edges', 0)}) | edges in brackets |")
        second = r["second"]
        lines += [f"| second dedup run: merges / supersessions / contradictions | | "
                  f"{second['merged']} / {second['supersessions_total']} / {second['contradictions_total']} | "
                  "target 0 / 0 / 0 |",
                  f"| dedup seconds | | {r['seconds']:.2f} | |", ""]
    out.write_text("\n".join(lines) + "\n")


def _row(name, before, measured, key) -> str:
    detail = f"{measured['hits']} of {measured['predicted' if key == 'precision' else 'true']}"
    return f"| {name} | {_fmt(before)} | {_fmt(measured[key])} | {detail} |"


def _before_contradiction(r) -> float | None:
    before = r["creative_before"]["contradicts"]
    return before["right"] / before["edges"] if before["edges"] else None


def _across(r) -> int:
    return r["creative_before"]["contradicts"]["across"]


def _fmt(value) -> str:
    return "–" if value is None else f"{value:.3f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", type=Path, action="append", default=None,
                        help="a directory with holdout.jsonl and labels (default: bench/holdout)")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "quality.md")
    args = parser.parse_args()
    sets = [Labelled.own()] + [Labelled.from_dir(d.resolve()) for d in (args.set or [ROOT / "bench" / "holdout"])]
    results = []
    for data in sets:
        for regime in ("built-in", "supplied"):
            result = measure(data, regime)
            print(f"{data.name} {regime}: {json.dumps(result['scores'])}", flush=True)
            results.append((data, regime, result))
    write(results, args.out)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
