"""Measure memory hygiene on labelled data through the real service (embedded stores), in two vector spaces, and
the calibration behind the judge's thresholds; writes docs/quality.md.

    .venv/bin/python bench/quality.py                 # everything -> docs/quality.md (about ten minutes)
    .venv/bin/python bench/quality.py --out F --skip-public --skip-notes   # the memory sets only

Sets:
- memory sets: bench/quality_set.py (ours), bench/holdout (written apart from the rules, with deeper
  paraphrases) and bench/holdout2 (written without reading the rules at all); imported whole, one dedup run,
  then a second;
- the public pairs of ../shared/quality (MRPC train, STS-B train and dev): each pair alone in its own scope (the
  second text a day after the first), one dedup run, so a merge, a supersession or a contradiction can only join
  the two texts of one pair;
- numbered notes: 20,000 memories sharing one timestamp that differ in their numbers (no contradiction among
  them), dedup twice;
- update cases (bench/update_cases.py): the adversarial update cases and no-change controls of ../shared/updates
  and our own, each case in a scope of its own, one dedup run.
Vector spaces: "built-in" imports the texts without embeddings (the service's own embedder); "client MiniLM"
sends all-MiniLM-L6-v2 vectors (shipped with the public pairs; bench/vectors/ for the memory sets, made by
bench/client_vectors.py), as a client with its own model does.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import tempfile
import time
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

import entity_bench  # noqa: E402
import memory_pairs  # noqa: E402
import public_pairs  # noqa: E402
import update_cases  # noqa: E402

from consolidation.hygiene.calibration import PairSet, Score, curve, fit  # noqa: E402
from consolidation.hygiene.judge import CLIENT_THRESHOLDS, Thresholds  # noqa: E402
from consolidation.episodes import episode_links  # noqa: E402
from consolidation.rules import association_for  # noqa: E402
from consolidation.service import build_services  # noqa: E402
from consolidation.settings import Settings  # noqa: E402
from consolidation.timeutil import parse_iso  # noqa: E402

TOKEN = "quality-admin-token-0123456789"
KINDS = ("explains", "shares_theme", "parallel_context", "same_episode")
SPACES = ("built-in", "client MiniLM")
# What each set must reach: precision on equivalence sets and memory sets, 0.95 on news pairs.
PRECISION = {"mrpc-train": 0.955, "stsb-train": 0.975, "quality_set": 0.999, "holdout": 0.999}
COSINE_PRECISION = {"mrpc-train": 0.90, "stsb-train": 0.97, "stsb-dev": 0.97}
TRAINING = ("mrpc-train", "stsb-train", "quality_set", "holdout")
CURVE_OFFSETS = (-0.06, -0.04, -0.02, 0.0, 0.02, 0.04, 0.06)
START = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)


def service(folder: str, now: datetime, **settings):
    return build_services(Settings(admin_api_token=TOKEN, data_dir=Path(folder), consolidation_scheduler_enabled=False,
                                   consolidation_creative_sample_size=1000, log_level="WARNING",
                                   consolidation_creative_kinds=KINDS, **settings), clock=lambda: now)


def links(services) -> dict[str, list[tuple[str, str]]]:
    falkor = services.stores.graph.falkor
    return {relation: [tuple(row) for row in falkor.execute(
        f"MATCH (a:Memory)-[:{relation}]->(b:Memory) RETURN a.id, b.id", read_only=True)]
        for relation in ("MERGED_INTO", "SUPERSEDES", "CONTRADICTS")}


def imported(services, lines: list[dict]) -> None:
    for start in range(0, len(lines), 5000):
        report = services.memories.import_jsonl("\n".join(json.dumps(line) for line in lines[start:start + 5000])
                                                .encode())
        assert not report.errors and not report.conflicts, (report.errors[:3], report.conflicts[:3])


# --- calibration ---------------------------------------------------------------------------------------------

def calibration(space: str) -> dict:
    """The thresholds `fit` picks on the training sets, how they score on every set (held-out ones included),
    and the curve as the same-fact similarity moves."""
    sets = public_pairs.pair_sets(space) + [memory_pairs.pair_set(n, space) for n in memory_pairs.names()]
    training = [s for s in sets if s.name in TRAINING]
    chosen, _ = fit(training, {name: PRECISION[name] for name in TRAINING}, floor=0.75)
    shipped = CLIENT_THRESHOLDS  # the built-in model is all-MiniLM-L6-v2: one calibration for both
    return {"chosen": chosen, "shipped": shipped, "sets": sets,
            "scores": {s.name: s.judged(shipped) for s in sets},
            "cosine": {s.name: s.cosine_at(COSINE_PRECISION.get(s.name, 0.999)) for s in sets},
            "curve": {s.name: curve(s, shipped, CURVE_OFFSETS) for s in sets}}


# --- public pairs through the service ------------------------------------------------------------------------

def public_through_service(space: str) -> dict[str, dict]:
    raw = public_pairs.raw_pairs()
    texts = sorted({t for pairs in raw.values() for p in pairs for t in (p["a"], p["b"])})
    vectors = public_pairs.vectors(space, texts) if space == "client MiniLM" else None
    results = {}
    for name, pairs in sorted(raw.items()):
        lines = []
        for k, pair in enumerate(pairs):
            for side, text in (("a", pair["a"]), ("b", pair["b"])):
                line = {"id": _pair_memory(name, k, side), "content": text, "type": "Fact", "pair": f"{name}:{k}",
                        "timestamp": (START + timedelta(days=1 if side == "b" else 0)).isoformat()}
                if vectors is not None:
                    line["embedding"] = vectors[text].tolist()
                lines.append(line)
        with tempfile.TemporaryDirectory() as folder:
            services = service(folder, START + timedelta(days=2), consolidation_scope_properties=("pair",))
            try:
                imported(services, lines)
                started = time.monotonic()
                report = services.engine.run(["dedup"])["result"]["dedup"]
                seconds = time.monotonic() - started
                found = links(services)
            finally:
                services.close()
        joined = {frozenset(p) for p in found["MERGED_INTO"]}
        merged = np.array([frozenset((_pair_memory(name, k, "a"), _pair_memory(name, k, "b"))) in joined
                           for k in range(len(pairs))])
        pair_set = PairSet(name, [_labelled(p, vectors) for p in pairs])
        score = pair_set.score(merged)
        threshold, cosine = pair_set.cosine_at(score.precision) if score.merged_same else (np.inf, None)
        results[name] = {"score": score, "cosine": cosine, "cosine_threshold": threshold, "pairs": len(pairs),
                         "supersessions": len(found["SUPERSEDES"]), "contradictions": len(found["CONTRADICTS"]),
                         "seconds": seconds, "grey": report.get("model_judge")}
    return results


def _pair_memory(name: str, k: int, side: str) -> str:
    import uuid

    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"quality:{name}:{k}:{side}"))


def _labelled(pair: dict, vectors):
    from consolidation.embedding import MiniLMEmbedder
    from consolidation.hygiene.calibration import LabelledPair

    if vectors is None:  # the service's own embedder, as the built-in regime's imports are embedded
        a, b = MiniLMEmbedder().embed([pair["a"], pair["b"]])
    else:
        a, b = vectors[pair["a"]], vectors[pair["b"]]
    return LabelledPair(pair["a"], pair["b"], float(a @ b), pair["label"] == "pos")


# --- memory sets through the service -----------------------------------------------------------------------------

def memory_set_through_service(name: str, space: str) -> dict:
    memories, labels = _memories_and_labels(name)
    vectors = None
    if space == "client MiniLM":
        unit = memory_pairs.unit_vectors(name, [m["content"] for m in memories], space)
        vectors = {m["id"]: v for m, v in zip(memories, unit)}
    latest = max(parse_iso(m["timestamp"]) for m in memories)
    with tempfile.TemporaryDirectory() as folder:
        services = service(folder, latest + timedelta(days=1))
        try:
            imported(services, [{**m, **({"embedding": vectors[m["id"]].tolist()} if vectors else {})}
                                for m in memories])
            started = time.monotonic()
            first = services.engine.run(["dedup"])["result"]["dedup"]
            seconds = time.monotonic() - started
            second = services.engine.run(["dedup"])["result"]["dedup"]
            found = links(services)
            ids, matrix = services.stores.vectors.vectors([m["id"] for m in memories])
        finally:
            services.close()
    unit = dict(zip(ids, matrix / np.linalg.norm(matrix, axis=1, keepdims=True)))
    merged_into = dict(found["MERGED_INTO"])
    active = [m for m in memories if m["id"] not in merged_into]
    return {"first": first, "second": second, "seconds": seconds, "scores": score(memories, labels, found),
            "creative": creative_edges(labels, unit, active), "memories": len(memories)}


def _memories_and_labels(name: str) -> tuple[list[dict], dict]:
    if name != "quality_set":
        folder = ROOT / "bench" / name
        memories = [json.loads(line) for line in (folder / "holdout.jsonl").read_text().splitlines() if line]
        return memories, json.loads((folder / "holdout_labels.json").read_text())
    import quality_set

    built = quality_set.build()
    memories = [{"id": m.id, "content": m.content, "type": m.type, "timestamp": m.when.isoformat(),
                 "tags": ["quality"]} for m in built.memories]
    labels = {"fact": {m.id: m.fact for m in built.memories}, "subject": {m.id: m.subject for m in built.memories},
              "topic": {m.id: m.topic for m in built.memories}, "kind": {m.id: m.kind for m in built.memories},
              "supersedes": [list(p) for p in built.supersedes], "contradicts": [list(p) for p in built.contradicts],
              "lookalike": [[m.id, o.id] for m in built.memories if m.kind == "lookalike"
                            for o in built.memories if o.fact == m.fact.removesuffix("-lookalike")]}
    return memories, labels


def score(memories: list[dict], labels: dict, found: dict) -> dict:
    """Pairs counted over memories: a merge group of n memories predicts n(n-1)/2 same-fact pairs, and a
    SUPERSEDES or CONTRADICTS edge to a canonical stands for every memory merged into it."""
    fact, subject, kind = labels["fact"], labels["subject"], labels["kind"]
    group_of = {m["id"]: m["id"] for m in memories}
    for duplicate, canonical in found["MERGED_INTO"]:
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

    superseded = expand(found["SUPERSEDES"])
    contradicted = {frozenset(p) for p in expand(found["CONTRADICTS"])}
    of_kind = lambda pairs, wanted: sum(1 for p in pairs if wanted & {kind[m] for m in p})  # noqa: E731
    return {
        "merge": _pr(predicted, truth),
        "lookalike_merges": len(predicted & lookalikes),
        "updates_merged_as_duplicates": sum(1 for p in predicted if len(p & updates) == 1),
        "supersession": _pr(superseded, {tuple(p) for p in labels["supersedes"]}),
        "supersessions_of_distractors": of_kind(superseded, {"distractor"}),
        "contradiction": _pr(contradicted, {frozenset(p) for p in labels["contradicts"]}),
        "contradictions_on_lists": of_kind(contradicted, {"list"}),
        "contradictions_across_subjects": sum(1 for p in contradicted if len({subject[m] for m in p}) > 1),
    }


def _pr(predicted: set, truth: set) -> dict:
    hits = len(predicted & truth)
    return {"predicted": len(predicted), "true": len(truth), "hits": hits,
            "precision": hits / len(predicted) if predicted else None, "recall": hits / len(truth) if truth else None}


def creative_edges(labels: dict, unit: dict, memories: list[dict]) -> dict:
    """Every pair the creative rules would link (its sampler, over enough runs, reaches every pair), by kind,
    with how many link memories of one topic."""
    topic = labels["topic"]
    counts = defaultdict(lambda: [0, 0])
    created = {m["id"]: parse_iso(m["timestamp"]).timestamp() for m in memories}
    for a, b in itertools.combinations(memories, 2):
        found = association_for(a["type"], b["type"], float(unit[a["id"]] @ unit[b["id"]]),
                                created[b["id"]] - created[a["id"]])
        if found:
            counts[found.kind][0] += 1
            counts[found.kind][1] += topic[a["id"]] == topic[b["id"]]
    # same_episode: each memory's closest partner among those stated within the span (as creative draws them).
    settings = Settings(admin_api_token=TOKEN)
    episodes = episode_links([""] * len(memories), np.array([created[m["id"]] for m in memories]),
                             np.stack([unit[m["id"]] for m in memories]), settings.consolidation_episode_seconds,
                             settings.consolidation_episode_similarity)
    for a, b in zip(episodes.first.tolist(), episodes.second.tolist()):
        counts["same_episode"][0] += 1
        counts["same_episode"][1] += topic[memories[a]["id"]] == topic[memories[b]["id"]]
    return {k: {"edges": n, "right": right, "precision": right / n if n else None} for k, (n, right) in counts.items()}


# --- numbered notes at one moment ----------------------------------------------------------------------------

def numbered_notes(count: int = 20_000) -> dict:
    """Notes an import writes at one moment that differ only in their numbers: no two contradict each other, and
    a second dedup run is no slower than the first."""
    rng = np.random.default_rng(5)
    moment = START.isoformat()
    lines = [{"content": f"old note {k} about topic {rng.integers(50)} and detail {rng.integers(20)}",
              "type": "Context", "timestamp": moment} for k in range(count)]
    with tempfile.TemporaryDirectory() as folder:
        services = service(folder, START + timedelta(days=1))
        try:
            imported(services, lines)
            seconds, reports = [], []
            for _ in range(2):
                started = time.monotonic()
                reports.append(services.engine.run(["dedup"], full=True)["result"]["dedup"])
                seconds.append(time.monotonic() - started)
            edges = links(services)
        finally:
            services.close()
    return {"count": count, "contradictions": len(edges["CONTRADICTS"]), "merges": len(edges["MERGED_INTO"]),
            "supersessions": len(edges["SUPERSEDES"]), "seconds": seconds,
            "left_out": [r.get("contradictions_left_out", 0) for r in reports]}


# --- the page ----------------------------------------------------------------------------------------------------

def write(out: Path, calibrations: dict, public: dict, memory: dict, notes: dict | None, updates: dict) -> None:
    lines = ["# Memory hygiene quality", "",
             "Written by `make quality` (`.venv/bin/python bench/quality.py`): the dedup judge's calibration on",
             "labelled pairs, then the real service (embedded stores) on labelled data in two vector spaces:",
             "**built-in** (texts imported without embeddings: the service's own all-MiniLM-L6-v2 embeds them) and",
             "**client MiniLM** (all-MiniLM-L6-v2 vectors sent with the memories, as a client with its own model",
             "does). Both are one model, with one calibration: where their figures differ, only the order of",
             "equal-scored work does. Precision on public pair sets is at an even",
             "mix of same and different pairs (each different pair weighs #same / #different), the way test sets",
             "are drawn; the counts beside it are raw. \"Cosine rule\" is a plain `merge when cosine >= t` on the",
             "same pairs with the most recall at the same precision (the baseline's precision in the calibration",
             "tables: 0.90 for MRPC, 0.97 otherwise).", ""]
    lines += _calibration_section(calibrations)
    if public:
        lines += _public_section(public)
    lines += _memory_section(memory)
    lines += update_cases.section(updates)
    if notes:
        lines += _notes_section(notes)
    lines += entity_bench.quality_section(entity_bench.quality())
    out.write_text("\n".join(lines) + "\n" + natural_eval_section(out))


def natural_eval_section(out: Path) -> str:
    """The natural-memory section `make eval` wrote into the file (kept: this script does not measure it)."""
    from natural_eval import BEGIN, END  # noqa: PLC0415

    old = out.read_text() if out.exists() else ""
    if BEGIN not in old or END not in old:
        return ""
    return "\n" + old[old.index(BEGIN):old.index(END) + len(END)] + "\n"


def _fmt(value) -> str:
    return "–" if value is None else f"{value:.3f}"


def _thresholds(t: Thresholds) -> str:
    return (f"same fact {t.same_fact:.2f}, + {t.per_added_term:.2f} per added term, + {t.per_added_share:.2f} x "
            f"added share, swapped term >= {t.swapped:.2f}, grey margin {t.grey_margin:.2f}")


def _calibration_section(calibrations: dict) -> list[str]:
    lines = ["## Calibration", "",
             "`consolidation.hygiene.calibration.fit` tries every combination of the judge's thresholds and keeps",
             "the one with the most recall (mean over the sets) that reaches every training set's precision:",
             ", ".join(f"{n} {p}" for n, p in PRECISION.items()) + ". Held out (never used to choose): STS-B dev",
             "and bench/holdout2. The same code is `consolidation calibrate` for a deployment's own model (docs/hygiene.md).",
             ""]
    for space, c in calibrations.items():
        lines += [f"### {space} vectors", "", f"- fit chose: {_thresholds(c['chosen'])}",
                  f"- shipped: {_thresholds(c['shipped'])}", "",
                  "| set | pairs (same / different) | judge P | judge R | merged same / different | cosine rule: t, P, R |"
                  " recall gain |", "|---|---|---|---|---|---|---|"]
        for s in c["sets"]:
            judged: Score = c["scores"][s.name]
            threshold, cosine = c["cosine"][s.name]
            gain = judged.recall / cosine.recall if cosine.recall else None
            role = " (held out)" if s.name not in TRAINING else ""
            lines.append(f"| {s.name}{role} | {int(s.same.sum())} / {int((~s.same).sum())} | {_fmt(judged.precision)} "
                         f"| {_fmt(judged.recall)} | {judged.merged_same} / {judged.merged_different} | "
                         f"{threshold:.3f}, {_fmt(cosine.precision)}, {_fmt(cosine.recall)} | "
                         f"{'–' if gain is None else f'{gain:.2f}x'} |")
        lines += ["", "The curve: precision / recall as the same-fact similarity moves from the shipped value:", "",
                  "| set | " + " | ".join(f"{o:+.2f}" for o in CURVE_OFFSETS) + " |",
                  "|---|" + "---|" * len(CURVE_OFFSETS)]
        for s in c["sets"]:
            cells = [f"{_fmt(score.precision)} / {_fmt(score.recall)}" for _, score in c["curve"][s.name]]
            lines.append(f"| {s.name} | " + " | ".join(cells) + " |")
        lines.append("")
    return lines


def _public_section(public: dict) -> list[str]:
    lines = ["## Public pairs through the service", "",
             "Each pair imported alone in its own scope (`pair`), the second text a day after the first, one dedup",
             "run. A merge joins the pair's two texts; no supersession or contradiction should be written on these",
             "paraphrase / look-alike sets.", "",
             "| vectors | set | merge P | merge R | merged same / different | cosine rule at that P: t, R | "
             "recall gain | supersessions | contradictions | dedup s |", "|---|---|---|---|---|---|---|---|---|---|"]
    for space, sets in public.items():
        for name, r in sets.items():
            s, cosine = r["score"], r["cosine"]
            rule = "–" if cosine is None else f"{r['cosine_threshold']:.3f}, {_fmt(cosine.recall)}"
            gain = "–" if cosine is None or not cosine.recall else f"{s.recall / cosine.recall:.2f}x"
            lines.append(f"| {space} | {name} | {_fmt(s.precision)} | {_fmt(s.recall)} | {s.merged_same} / "
                         f"{s.merged_different} | {rule} | {gain} | {r['supersessions']} | {r['contradictions']} | "
                         f"{r['seconds']:.1f} |")
    return lines + [""]


def _memory_section(memory: dict) -> list[str]:
    lines = ["## Memory sets through the service", "",
             "Imported whole, one dedup run, then a second. Targets: merge precision >= 0.97, zero",
             "look-alike merges and updates merged; supersession precision >= 0.9 and recall >= 0.6; no",
             "supersession of a distractor (a sentence with change-like words that changes nothing), no",
             "contradiction among the items of a list or across subjects; the second run writes nothing.", ""]
    for (name, space), r in memory.items():
        s = r["scores"]
        second = r["second"]
        lines += [f"### {name}, {space} vectors ({r['memories']} memories)", "", "| measure | value | |", "|---|---|---|",
                  f"| merge precision | {_fmt(s['merge']['precision'])} | {s['merge']['hits']} of "
                  f"{s['merge']['predicted']} |",
                  f"| merge recall | {_fmt(s['merge']['recall'])} | {s['merge']['hits']} of {s['merge']['true']} |",
                  f"| look-alike pairs merged | {s['lookalike_merges']} | target 0 |",
                  f"| updates merged as duplicates | {s['updates_merged_as_duplicates']} | target 0 |",
                  f"| supersession precision | {_fmt(s['supersession']['precision'])} | {s['supersession']['hits']} of "
                  f"{s['supersession']['predicted']} |",
                  f"| supersession recall | {_fmt(s['supersession']['recall'])} | {s['supersession']['hits']} of "
                  f"{s['supersession']['true']} |",
                  f"| supersessions of distractors | {s['supersessions_of_distractors']} | target 0 |",
                  f"| contradiction precision / recall | {_fmt(s['contradiction']['precision'])} / "
                  f"{_fmt(s['contradiction']['recall'])} | {s['contradiction']['hits']} right of "
                  f"{s['contradiction']['predicted']}, {s['contradiction']['true']} labelled |",
                  f"| contradictions among list items / across subjects | {s['contradictions_on_lists']} / "
                  f"{s['contradictions_across_subjects']} | target 0 / 0 |"]
        for kind in KINDS:
            c = r["creative"].get(kind, {})
            lines.append(f"| creative {kind} precision | {_fmt(c.get('precision'))} | {c.get('edges', 0)} edges |")
        lines += [f"| second dedup run: merges / supersessions / contradictions | {second['merged']} / "
                  f"{second['supersessions_total']} / {second['contradictions_total']} | target 0 / 0 / 0 |",
                  f"| dedup seconds | {r['seconds']:.2f} | |", ""]
    return lines


def _notes_section(notes: dict) -> list[str]:
    first, second = notes["seconds"]
    return ["## Numbered notes recorded at one moment", "",
            f"{notes['count']:,} memories imported with one timestamp, \"old note K about topic T and detail D\" (T < 50,",
            "D < 20: many pairs differ in one number only), two full dedup runs:", "",
            "| contradictions written | supersessions | merges | left out by the bounds (runs 1, 2) | first run s | "
            "second run s |",
            "|---|---|---|---|---|---|",
            f"| {notes['contradictions']} | {notes['supersessions']} | {notes['merges']} | {notes['left_out'][0]}, "
            f"{notes['left_out'][1]} | {first:.2f} | {second:.2f} |", ""]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "quality.md")
    parser.add_argument("--skip-public", action="store_true", help="leave out the public pairs (they need ../shared)")
    parser.add_argument("--skip-notes", action="store_true", help="leave out the 20,000 numbered notes")
    args = parser.parse_args()
    has_public = public_pairs.available() and not args.skip_public
    calibrations = {space: calibration(space) for space in SPACES} if has_public else {}
    for space, c in calibrations.items():
        print(f"calibration {space}: chose {c['chosen']}", flush=True)
    public = {space: public_through_service(space) for space in SPACES} if has_public else {}
    for space, sets in public.items():
        print(f"public {space}: " + ", ".join(f"{n} P {r['score'].precision:.3f} R {r['score'].recall:.3f}"
                                            for n, r in sets.items()), flush=True)
    memory = {}
    for name in memory_pairs.names():
        for space in SPACES:
            memory[name, space] = memory_set_through_service(name, space)
            print(f"{name} {space}: {json.dumps(memory[name, space]['scores'])}", flush=True)
    updates = update_cases.measure()
    for (name, space), tally in updates.items():
        print(f"{name} {space}: {tally.passed} of {tally.total} cases", flush=True)
    notes = None if args.skip_notes else numbered_notes()
    if notes:
        print(f"numbered notes: {notes}", flush=True)
    write(args.out, calibrations, public, memory, notes, updates)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
