"""Update cases through the real service (embedded stores): each case's memories stored a day apart in a scope of
their own, one full dedup run, no command given; then every memory is read back and checked against what its
case expects (superseded by one of the memories it lists, current, or untouched).

Sets: the development half of the adversarial update cases and their no-change controls (../shared/updates,
MiniLM vectors shipped beside them) and our own cases (bench/updates/own_cases.jsonl, vectors in
bench/vectors/own_updates.npz, made by bench/client_vectors.py). Both vector regimes: the built-in embedder
(texts sent alone) and all-MiniLM-L6-v2 vectors sent with the memories.

    .venv/bin/python bench/update_cases.py          # the table, on stdout
"""

from __future__ import annotations

import json
import sys
import tempfile
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT)]

from consolidation.service import build_services  # noqa: E402
from consolidation.settings import Settings  # noqa: E402
from consolidation.timeutil import parse_iso  # noqa: E402

SHARED = ROOT.parent / "shared" / "updates"
OWN = ROOT / "bench" / "updates" / "own_cases.jsonl"
SPACES = ("built-in", "client MiniLM")
TOKEN = "update-cases-admin-token-0123456789"


@dataclass
class Tally:
    """What one set scored in one vector space, per category."""

    cases: dict[str, list[int]] = field(default_factory=lambda: defaultdict(lambda: [0, 0]))  # passed, total
    expected: int = 0  # supersessions the cases expect
    made: int = 0  # supersessions written
    right: int = 0  # written ones a case accepts
    found: int = 0  # expected ones written (by an accepted memory)
    wrong_merges: int = 0  # merges of memories expected untouched, current or superseded
    wrong_links: int = 0  # supersessions or contradictions of memories expected untouched
    failures: list[str] = field(default_factory=list)

    @property
    def passed(self) -> int:
        return sum(p for p, _ in self.cases.values())

    @property
    def total(self) -> int:
        return sum(t for _, t in self.cases.values())


def sets() -> dict[str, Path]:
    found = {}
    if (SHARED / "cases.jsonl").exists():
        found["adversarial cases (development half)"] = SHARED / "cases.jsonl"
        found["no-change controls (development half)"] = SHARED / "controls.jsonl"
    found["our own cases"] = OWN
    return found


def vectors_for(path: Path) -> dict[str, np.ndarray]:
    shipped = np.load(SHARED / "vectors.npz" if path.parent == SHARED else ROOT / "bench" / "vectors" / "own_updates.npz")
    return dict(zip(shipped["texts"].tolist(), shipped["vectors"]))


def run_set(path: Path, space: str) -> Tally:
    cases = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    vectors = vectors_for(path) if space == "client MiniLM" else None
    lines = []
    for case in cases:
        for memory in case["memories"]:
            line = {"id": memory_id(case, memory["idx"]), "content": memory["content"], "type": "Memory",
                    "timestamp": memory["timestamp"], "case": case["id"]}
            if vectors is not None:
                line["embedding"] = [float(x) for x in vectors[memory["content"]]]
            lines.append(line)
    latest = max(parse_iso(line["timestamp"]) for line in lines)
    with tempfile.TemporaryDirectory() as folder:
        services = build_services(Settings(admin_api_token=TOKEN, data_dir=Path(folder),
                                           consolidation_scheduler_enabled=False, log_level="WARNING",
                                           consolidation_scope_properties=("case",)),
                                  clock=lambda: latest + timedelta(days=1))
        try:
            report = services.memories.import_jsonl("\n".join(json.dumps(line) for line in lines).encode())
            assert not report.errors and not report.conflicts, (report.errors[:3], report.conflicts[:3])
            services.engine.run(["dedup"], full=True)
            state = read_state(services)
        finally:
            services.close()
    return score(cases, state)


def memory_id(case: dict, idx: int) -> str:
    import uuid

    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"update-case:{case['id']}:{idx}"))


def read_state(services) -> dict:
    falkor = services.stores.graph.falkor
    memories = {row[0]: {"superseded_by": row[1], "merged_into": row[2]} for row in falkor.records(
        "MATCH (m:Memory) RETURN m.id, m.superseded_by, m.merged_into")}
    supersedes = [tuple(row) for row in falkor.records("MATCH (n:Memory)-[:SUPERSEDES]->(o:Memory) RETURN n.id, o.id")]
    contradicted = {i for row in falkor.records("MATCH (a:Memory)-[:CONTRADICTS]->(b:Memory) RETURN a.id, b.id")
                    for i in row}
    return {"memories": memories, "supersedes": supersedes, "contradicted": contradicted}


def score(cases: list[dict], state: dict) -> Tally:
    """Each case passes when every memory ends as it expects; supersessions are counted as pairs."""
    tally = Tally()
    memories, contradicted = state["memories"], state["contradicted"]
    superseders = defaultdict(set)
    for newer, older in state["supersedes"]:
        superseders[older].add(newer)
    accepted = {}
    for case in cases:
        ids = {m["idx"]: memory_id(case, m["idx"]) for m in case["memories"]}
        ok = True
        for memory in case["memories"]:
            own = ids[memory["idx"]]
            by = superseders.get(own, set())
            merged = memories[own]["merged_into"] is not None or any(
                m["merged_into"] == own for m in memories.values())
            expect = memory["expect"]
            allowed = {ids[i] for i in memory.get("accept_superseded_by", [])}
            accepted.update({(newer, own): True for newer in allowed})
            if expect == "superseded":
                tally.expected += 1
                tally.found += bool(by & allowed)
                good = bool(by) and by <= allowed and not merged
            elif expect == "must_survive":
                good = not by and not merged
            elif expect == "not_superseded":
                good = not by and own not in contradicted
            else:
                good = not by and not merged and own not in contradicted
                tally.wrong_links += bool(by) or own in contradicted
            tally.wrong_merges += merged and expect != "not_superseded"
            ok = ok and good
        tally.cases[case["category"]][0] += ok
        tally.cases[case["category"]][1] += 1
        if not ok:
            tally.failures.append(case["id"])
    tally.made = len(state["supersedes"])
    tally.right = sum(1 for pair in state["supersedes"] if pair in accepted)
    return tally


def measure() -> dict[tuple[str, str], Tally]:
    return {(name, space): run_set(path, space) for name, path in sets().items() for space in SPACES}


def section(results: dict[tuple[str, str], Tally]) -> list[str]:
    """docs/quality.md's section: per set and regime, cases passed per category, supersession precision and
    recall, and what the traps lost."""
    lines = ["## Updates stated in plain words", "",
             "Each case's memories stored a day apart in a scope of their own, one full dedup run, no command given",
             "(`bench/update_cases.py`). A case passes when every memory ends as it expects: superseded by one of the",
             "memories it accepts, current, or untouched (no merge, supersession or contradiction). Supersession",
             "precision counts the written supersessions a case accepts; recall, the expected ones written. Targets",
             "(on the held-back half): at least 50 % of cases, with client MiniLM vectors and with the built-in model",
             "alike, and no supersession or merge on the controls.", "",
             "| set | vectors | cases passed | supersession P | supersession R | wrong merges | wrong links | "
             "per category (passed / cases) |", "|---|---|---|---|---|---|---|---|"]
    for (name, space), t in results.items():
        precision = f"{t.right / t.made:.3f}" if t.made else "–"
        recall = f"{t.found / t.expected:.3f}" if t.expected else "–"
        categories = ", ".join(f"{c} {p}/{n}" for c, (p, n) in sorted(t.cases.items()))
        lines.append(f"| {name} | {space} | {t.passed} of {t.total} ({100 * t.passed / t.total:.0f} %) | {precision} "
                     f"({t.right} of {t.made}) | {recall} ({t.found} of {t.expected}) | {t.wrong_merges} | "
                     f"{t.wrong_links} | {categories} |")
    return lines + [""]


if __name__ == "__main__":
    results = measure()
    print("\n".join(section(results)))
    for (name, space), t in results.items():
        print(f"{name} / {space} failed: {', '.join(t.failures)}")
