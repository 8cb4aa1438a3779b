"""Does consolidation help an agent recall natural memory? LoCoMo-format conversations (default
../shared/natural/) stored as memories, each conversation a scope, every question of categories 1-4 recalled
before and after consolidation, through the service's HTTP API on the embedded stores.

Two variants of memory: `facts` (each session's observations, one fact a memory, as an agent's extraction step
stores them) and `turns` (every dialogue turn verbatim, "Speaker: text"). Two vector regimes: `client` (the
all-MiniLM-L6-v2 vectors shipped beside the conversations, sent as `embedding`; questions recalled by their
vectors) and `built-in` (texts alone: the service embeds memories and questions). Two ways to consolidate:
`single` (every session stored, then one full run) and `replay` (each session stored at its time, then the
tasks the schedule would run before the next session, computed as of that time).

A memory is gold for a question when its evidence turn ids meet the question's. After consolidation a gold
memory merged into a canonical counts as found when the canonical is recalled; one superseded or archived does
not. Per category and overall: hit@5, hit@10, recall@10, NDCG@10, MRR, near-duplicate slots (results in the
top 10 with cosine >= 0.9 to a higher-ranked one, per question), and the evidence memories consolidation hid
(superseded, archived, or merged into a memory whose evidence does not meet theirs), with examples. Every
decision of the run is written to the output folder with its reason.

    .venv/bin/python bench/natural_eval.py                       # both variants and regimes, single run
    .venv/bin/python bench/natural_eval.py --replay              # the replay too
    .venv/bin/python bench/natural_eval.py PATH --variants facts --regimes client
    .venv/bin/python bench/natural_eval.py --write docs/quality.md   # the tables into docs/quality.md
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
import time
import uuid
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

from consolidation.api import create_app  # noqa: E402
from consolidation.cadence import due_tasks  # noqa: E402
from consolidation.service import build_services  # noqa: E402
from consolidation.settings import Settings  # noqa: E402
from consolidation.timeutil import parse_iso, to_iso, utc_now  # noqa: E402

NATURAL = ROOT.parent / "shared" / "natural"
TOKEN = "natural-eval-admin-token-0123456789"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
K = 10
NEAR_DUPLICATE = 0.9
EXAMPLES = 8
IMPORT_LINES = 1000
SESSION_TIME = "%I:%M %p on %d %B, %Y"


# --- the data ------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Memory:
    id: str
    content: str
    timestamp: datetime
    scope: str
    session: int
    evidence: frozenset[str]


@dataclass(frozen=True)
class Question:
    id: str
    text: str
    category: int
    scope: str
    evidence: frozenset[str]


@dataclass
class Conversation:
    name: str
    data: dict[str, Any]

    def sessions(self) -> list[tuple[int, datetime]]:
        numbers = sorted(int(key.split("_")[1]) for key in self.data if key.startswith("session_")
                         and key.endswith("_date_time"))
        return [(n, datetime.strptime(self.data[f"session_{n}_date_time"], SESSION_TIME).replace(
            tzinfo=parse_iso("2020-01-01T00:00:00+00:00").tzinfo)) for n in numbers]

    def memories(self, variant: str) -> list[Memory]:
        found = []
        for number, when in self.sessions():
            if variant == "facts":
                for speaker, facts in (self.data.get(f"session_{number}_observation") or {}).items():
                    for index, (fact, evidence) in enumerate(facts):
                        found.append(self._memory(f"{number}:{speaker}:{index}", fact, when, number, evidence))
            else:
                for turn in self.data.get(f"session_{number}") or []:
                    found.append(self._memory(turn["dia_id"], turn_text(turn), when, number, turn["dia_id"]))
        return found

    def _memory(self, key: str, content: str, when: datetime, session: int, evidence: Any) -> Memory:
        ids = evidence if isinstance(evidence, list) else [evidence]
        parts = frozenset(part.strip() for text in ids for part in str(text).replace(",", ";").split(";")
                          if part.strip())
        return Memory(str(uuid.uuid5(uuid.NAMESPACE_URL, f"locomo:{self.name}:{key}")), content, when, self.name,
                      session, parts)

    def questions(self) -> list[Question]:
        return [Question(f"{self.name}:{n}", qa["question"], qa["category"], self.name, frozenset(qa["evidence"]))
                for n, qa in enumerate(self.data["qa"]) if qa.get("category") in CATEGORIES and qa.get("evidence")]


def turn_text(turn: dict[str, Any]) -> str:
    text = f"{turn['speaker']}: {turn['text']}"
    return text + (f" [shares a photo: {turn['blip_caption']}]" if turn.get("blip_caption") else "")


def conversations(path: Path) -> list[Conversation]:
    files = sorted(path.glob("*.json")) if path.is_dir() else [path]
    found = []
    for file in files:
        data = json.loads(file.read_text())
        for index, item in enumerate(data if isinstance(data, list) else [data]):
            if isinstance(item, dict) and "qa" in item:
                name = item.get("sample_id") or (file.stem if not isinstance(data, list) else f"{file.stem}-{index}")
                found.append(Conversation(str(name), item.get("conversation", item) | {"qa": item["qa"]}))
    return found


class Vectors:
    """The client model's vectors of texts: the file shipped beside the conversations, and what is missing made
    by ../shared/quality/minilm.py (the same model) when it can be loaded."""

    def __init__(self, folder: Path):
        shipped = folder / "vectors.npz"
        self.known: dict[str, np.ndarray] = {}
        if shipped.exists():
            data = np.load(shipped)
            self.known = dict(zip(data["texts"].tolist(), data["vectors"].astype(np.float32)))
        self._model = None

    def of(self, texts: list[str]) -> np.ndarray:
        missing = [t for t in dict.fromkeys(texts) if t not in self.known]
        if missing:
            for text, vector in zip(missing, self._embed(missing)):
                self.known[text] = vector
        return np.stack([self.known[t] for t in texts]) if texts else np.zeros((0, 384), np.float32)

    def _embed(self, texts: list[str]) -> np.ndarray:
        if self._model is None:
            sys.path.insert(0, str(ROOT.parent / "shared" / "quality"))
            from minilm import MiniLM  # noqa: PLC0415 (only when the shipped vectors fall short)

            self._model = MiniLM()
        return np.asarray(self._model.encode(texts), np.float32)


# --- one store ------------------------------------------------------------------------------------------------

class Store:
    """The service on embedded stores in a folder of its own, reached over its HTTP API (a test client)."""

    def __init__(self, folder: Path, regime: str, clock):
        self.regime = regime
        self.settings = Settings(admin_api_token=TOKEN, data_dir=folder, consolidation_scheduler_enabled=False,
                                 log_level="WARNING", consolidation_scope_properties=("user_id",))
        self.services = build_services(self.settings, clock=clock)
        self.client = create_app(self.settings, services=self.services, start_scheduler=False).test_client()

    def store(self, memories: list[Memory], vectors: Vectors | None, shift: timedelta) -> None:
        lines = []
        embeddings = vectors.of([m.content for m in memories]) if vectors is not None else None
        for index, memory in enumerate(memories):
            when = to_iso(memory.timestamp + shift)
            line = {"id": memory.id, "content": memory.content, "timestamp": when, "last_accessed": when,
                    "importance": 0.5, "confidence": 0.8, "user_id": memory.scope}
            if embeddings is not None:
                line["embedding"] = [float(x) for x in embeddings[index]]
            lines.append(json.dumps(line))
        self.import_lines(lines)

    def import_lines(self, lines: list[str]) -> None:
        for start in range(0, len(lines), IMPORT_LINES):  # within the request size limit, with embeddings
            answer = self.client.post("/memory/import", headers=AUTH,
                                      data="\n".join(lines[start:start + IMPORT_LINES]).encode())
            assert answer.status_code == 200, answer.get_json()

    def recall(self, question: Question, vector: np.ndarray | None) -> list[str]:
        body = {"k": K, "scope": {"user_id": question.scope}}
        body |= {"embedding": [float(x) for x in vector]} if vector is not None else {"query": question.text}
        answer = self.client.post("/recall", headers=AUTH, json=body)
        assert answer.status_code == 200, answer.get_json()
        return [r["id"] for r in answer.get_json()["results"]]

    def consolidate(self, tasks: list[str] | None = None, as_of: datetime | None = None) -> dict[str, Any]:
        results = {}
        for task in tasks or [None]:
            body = {"wait": True, "full": True, **({"task": task} if task else {}),
                    **({"as_of": to_iso(as_of)} if as_of else {})}
            answer = self.client.post("/consolidate", headers=AUTH, json=body)
            assert answer.status_code == 200 and answer.get_json()["state"] == "succeeded", answer.get_json()
            results.update(answer.get_json()["result"])
        return results

    def state(self) -> dict[str, dict[str, Any]]:
        rows = self.services.stores.graph.falkor.records(
            "MATCH (m:Memory) RETURN m.id, m.superseded_by, m.merged_into, coalesce(m.archived, false), m.content")
        return {i: {"superseded_by": s, "merged_into": g, "archived": bool(a), "content": c} for i, s, g, a, c in rows}

    def vectors_of(self, ids: list[str]) -> dict[str, np.ndarray]:
        found, matrix = self.services.stores.vectors.vectors(ids)
        return dict(zip(found, np.asarray(matrix, np.float32)))

    def decisions(self) -> list[dict[str, Any]]:
        """Every decision consolidation left in the graph, with its reason and the texts it joined."""
        falkor = self.services.stores.graph.falkor
        found = [{"kind": "supersession", "newer": n, "older": o, "reason": r, "newer_text": nt, "older_text": ot}
                 for n, o, r, nt, ot in falkor.records(
                     "MATCH (n:Memory)-[s:SUPERSEDES]->(o:Memory) RETURN n.id, o.id, s.reason, n.content, o.content")]
        found += [{"kind": "merge", "newer": c, "older": d, "reason": r, "newer_text": ct, "older_text": dt}
                  for c, d, r, ct, dt in falkor.records(
                      "MATCH (d:Memory)-[:MERGED_INTO]->(c:Memory) OPTIONAL MATCH (x:MergeRecord {duplicate_id: d.id, "
                      "state: 'done'}) RETURN c.id, d.id, x.reason, c.content, d.content")]
        found += [{"kind": "contradiction", "newer": a, "older": b, "reason": r, "newer_text": at, "older_text": bt}
                  for a, b, r, at, bt in falkor.records(
                      "MATCH (a:Memory)-[s:CONTRADICTS]->(b:Memory) RETURN a.id, b.id, s.reason, a.content, b.content")]
        found += [{"kind": f"association:{k}", "newer": a, "older": b, "reason": f"similarity {s}", "newer_text": at,
                   "older_text": bt} for a, b, k, s, at, bt in falkor.records(
                      "MATCH (a:Memory)-[s:DISCOVERED]->(b:Memory) RETURN a.id, b.id, s.kind, s.similarity, a.content, "
                      "b.content")]
        found += [{"kind": "cluster", "newer": p, "older": None, "reason": f"{size} members", "newer_text": t,
                   "older_text": None} for p, size, t in falkor.records(
                      "MATCH (p:MetaPattern) WHERE coalesce(p.archived, false) = false RETURN p.id, p.cluster_size, "
                      "p.content")]
        found += [{"kind": f"proposal:{k}", "newer": n, "older": o, "reason": r, "newer_text": nt, "older_text": ot}
                  for k, n, o, r, nt, ot in falkor.records(
                      "MATCH (p:HygieneProposal {state: 'proposed'}) OPTIONAL MATCH (n:Memory {id: p.newer_id}) "
                      "OPTIONAL MATCH (o:Memory {id: p.older_id}) RETURN p.kind, p.newer_id, p.older_id, p.reason, "
                      "n.content, o.content")]
        return found

    def close(self) -> None:
        self.services.close()


# --- measuring ------------------------------------------------------------------------------------------------

@dataclass
class Scores:
    """Per category: the sums of each measure over its questions, and how many."""

    sums: dict[str, dict[str, float]] = field(default_factory=lambda: defaultdict(lambda: defaultdict(float)))

    def add(self, category: str, values: dict[str, float]) -> None:
        for name in (category, "overall"):
            self.sums[name]["questions"] += 1
            for measure, value in values.items():
                self.sums[name][measure] += value

    def mean(self, category: str, measure: str) -> float:
        row = self.sums[category]
        return row[measure] / row["questions"] if row["questions"] else float("nan")


MEASURES = ("hit@5", "hit@10", "recall@10", "ndcg@10", "mrr", "near_dup")


def measure(ranked: list[str], gold: set[str], stands_for: dict[str, set[str]], vectors: dict[str, np.ndarray]
            ) -> dict[str, float]:
    """One question's measures: `stands_for` maps a recalled id to the gold memories it stands for (itself,
    and what was merged into it)."""
    found_at = [bool(stands_for.get(i, {i}) & gold) for i in ranked[:K]]
    found = set().union(*(stands_for.get(i, {i}) & gold for i in ranked[:K])) if ranked else set()
    first = next((rank for rank, hit in enumerate(found_at, 1) if hit), None)
    ideal = sum(1 / math.log2(rank + 1) for rank in range(1, min(len(gold), K) + 1))
    dcg = sum(1 / math.log2(rank + 1) for rank, hit in enumerate(found_at, 1) if hit)
    return {"hit@5": float(any(found_at[:5])), "hit@10": float(any(found_at)),
            "recall@10": len(found) / len(gold), "ndcg@10": dcg / ideal if ideal else 0.0,
            "mrr": 1 / first if first else 0.0, "near_dup": float(near_duplicates(ranked[:K], vectors))}


def near_duplicates(ranked: list[str], vectors: dict[str, np.ndarray]) -> int:
    rows = [vectors[i] / np.linalg.norm(vectors[i]) for i in ranked if i in vectors]
    if len(rows) < 2:
        return 0
    matrix = np.stack(rows)
    similar = np.triu(matrix @ matrix.T, k=1) >= NEAR_DUPLICATE
    return int(similar.any(axis=0).sum())


@dataclass
class Outcome:
    """One variant in one regime and one mode: the scores before and after, what was hidden, the decisions."""

    memories: int
    questions: int
    before: Scores
    after: Scores
    evidence: int
    hidden: list[dict[str, Any]]
    decisions: list[dict[str, Any]]
    seconds: float


def evaluate(convs: list[Conversation], variant: str, regime: str, mode: str, folder: Path,
             vectors: Vectors) -> Outcome:
    started = time.monotonic()
    memories = [m for c in convs for m in c.memories(variant)]
    questions = [q for c in convs for q in c.questions()]
    by_scope: dict[str, list[Memory]] = defaultdict(list)
    for memory in memories:
        by_scope[memory.scope].append(memory)
    gold = {q.id: {m.id for m in by_scope[q.scope] if m.evidence & q.evidence} for q in questions}
    questions = [q for q in questions if gold[q.id]]
    newest = max(m.timestamp for m in memories)
    now = utc_now()
    shift = now - timedelta(hours=1) - newest
    client_vectors = vectors if regime == "client" else None
    query_vectors = dict(zip([q.id for q in questions], vectors.of([q.text for q in questions]))) \
        if regime == "client" else {}
    with tempfile.TemporaryDirectory(dir=folder) as data_dir:
        store = Store(Path(data_dir), regime, lambda: now)
        try:
            if mode == "replay":
                before = replay(store, memories, client_vectors, shift, questions, query_vectors, gold)
            else:
                store.store(memories, client_vectors, shift)
                before = recall_all(store, questions, query_vectors, gold, {})
                store.consolidate()
            state = store.state()
            stands_for = canonical_members(state)
            after = recall_all(store, questions, query_vectors, gold, stands_for)
            evidence_of = {m.id: m.evidence for m in memories}
            used = set().union(*gold.values())
            hidden = hidden_evidence(used, state, evidence_of)
            decisions = store.decisions()
        finally:
            store.close()
    return Outcome(len(memories), len(questions), before, after, len(used), hidden, decisions,
                   time.monotonic() - started)


def recall_all(store: Store, questions: list[Question], query_vectors: dict[str, np.ndarray],
               gold: dict[str, set[str]], stands_for: dict[str, set[str]]) -> Scores:
    scores = Scores()
    ranked = {q.id: store.recall(q, query_vectors.get(q.id)) for q in questions}
    vectors = store.vectors_of(sorted({i for ids in ranked.values() for i in ids}))
    for question in questions:
        scores.add(CATEGORIES[question.category], measure(ranked[question.id], gold[question.id], stands_for,
                                                         vectors))
    return scores


def canonical_members(state: dict[str, dict[str, Any]]) -> dict[str, set[str]]:
    """Each canonical with the memories merged into it (followed to the end of their chain)."""
    members: dict[str, set[str]] = defaultdict(set)
    for memory_id, memory in state.items():
        canonical, hops = memory["merged_into"], 0
        while canonical and state.get(canonical, {}).get("merged_into") and hops < 64:
            canonical, hops = state[canonical]["merged_into"], hops + 1
        if canonical:
            members[canonical] |= {memory_id, canonical}
    return members


def hidden_evidence(used: set[str], state: dict[str, dict[str, Any]], evidence_of: dict[str, frozenset[str]]
                    ) -> list[dict[str, Any]]:
    """The evidence memories recall can no longer reach as themselves: superseded, archived, or merged into a
    memory whose evidence does not meet theirs."""
    hidden = []
    for memory_id in sorted(used):
        memory = state.get(memory_id)
        if memory is None:
            hidden.append({"id": memory_id, "how": "deleted"})
        elif memory["superseded_by"]:
            hidden.append({"id": memory_id, "how": "superseded", "text": memory["content"],
                           "by": state.get(memory["superseded_by"], {}).get("content")})
        elif memory["merged_into"]:
            canonical = memory["merged_into"]
            if not evidence_of.get(canonical, frozenset()) & evidence_of[memory_id]:
                hidden.append({"id": memory_id, "how": "merged", "text": memory["content"],
                               "by": state.get(canonical, {}).get("content")})
        elif memory["archived"]:
            hidden.append({"id": memory_id, "how": "archived", "text": memory["content"]})
    return hidden


# --- the replay -----------------------------------------------------------------------------------------------

def replay(store: Store, memories: list[Memory], vectors: Vectors | None, shift: timedelta,
           questions: list[Question], query_vectors: dict[str, np.ndarray], gold: dict[str, set[str]]) -> Scores:
    """Each session (all conversations' sessions in time order) stored at its time; before the next one, the
    tasks the schedule would have run by then, computed as of that time. The recall before is of the store as
    it would be with no consolidation: every memory stored, in a store of its own, so the replay's runs
    cannot touch it."""
    with tempfile.TemporaryDirectory(dir=store.settings.data_dir.parent) as plain_dir:
        plain = Store(Path(plain_dir), store.regime, lambda: utc_now())
        try:
            plain.store(memories, vectors, shift)
            before = recall_all(plain, questions, query_vectors, gold, {})
        finally:
            plain.close()
    arrivals = sorted({m.timestamp + shift for m in memories})
    intervals = store.settings.task_intervals
    control: dict[str, Any] = {}
    for index, at in enumerate(arrivals):
        store.store([m for m in memories if m.timestamp + shift == at], vectors, shift)
        until = arrivals[index + 1] if index + 1 < len(arrivals) else at + timedelta(days=1)
        moment = min(until - timedelta(minutes=1), store.services.engine.clock())  # never after the store's now
        due = due_tasks(control, intervals, moment, store.settings.consolidation_tick_seconds)
        if due:
            store.consolidate(due, as_of=moment)
            control.update({f"last_{task}": to_iso(moment) for task in due})
    return before


# --- the update cases, by recall -------------------------------------------------------------------------------

def update_cases(regime: str, folder: Path) -> dict[str, Any]:
    """The update cases of ../shared/updates stored as bench/update_cases.py stores them, one full run, then
    recalled as an agent would: each memory that should be stale recalled by its own text (k 5, its case's
    scope): a case passes when no stale text answers and the current memory does. Each control memory recalled
    by its text must still answer itself."""
    import update_cases as cases_module  # noqa: PLC0415

    results = {}
    for name, path in cases_module.sets().items():
        cases = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        vectors = cases_module.vectors_for(path) if regime == "client" else None
        results[name] = _recall_cases(cases, vectors, folder)
    return results


def _recall_cases(cases: list[dict], vectors: dict | None, folder: Path) -> dict[str, int]:
    latest = max(parse_iso(m["timestamp"]) for c in cases for m in c["memories"])
    with tempfile.TemporaryDirectory(dir=folder) as data_dir:
        store = Store(Path(data_dir), "client" if vectors else "built-in", lambda: latest + timedelta(days=1))
        try:
            lines = []
            for case in cases:
                for memory in case["memories"]:
                    line = {"id": _case_id(case, memory["idx"]), "content": memory["content"],
                            "timestamp": memory["timestamp"], "user_id": case["id"]}
                    if vectors is not None:
                        line["embedding"] = [float(x) for x in vectors[memory["content"]]]
                    lines.append(json.dumps(line))
            store.import_lines(lines)
            store.consolidate(["dedup"])
            passed = total = 0
            for case in cases:
                ok = True
                for memory in case["memories"]:
                    own = _case_id(case, memory["idx"])
                    body = {"k": 5, "scope": {"user_id": case["id"]}}
                    body |= ({"embedding": [float(x) for x in vectors[memory["content"]]]} if vectors is not None
                             else {"query": memory["content"]})
                    got = store.client.post("/recall", headers=AUTH, json=body).get_json()["results"]
                    ids = [r["id"] for r in got]
                    if memory["expect"] == "superseded":
                        current = {_case_id(case, i) for i in memory.get("accept_superseded_by", [])}
                        ok = ok and own not in ids and bool(current & set(ids))
                    else:
                        ok = ok and own in ids
                passed, total = passed + ok, total + 1
        finally:
            store.close()
    return {"passed": passed, "cases": total}


def _case_id(case: dict, idx: int) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"update-case:{case['id']}:{idx}"))


# --- the report -----------------------------------------------------------------------------------------------

def table(outcomes: dict[tuple[str, str, str], Outcome]) -> list[str]:
    lines = ["| variant | vectors | consolidation | memories | questions | " + " | ".join(MEASURES) +
             " | evidence hidden | decisions |", "|---" * (len(MEASURES) + 7) + "|"]
    for (variant, regime, mode), o in outcomes.items():
        cells = [f"{o.before.mean('overall', m):.3f} → {o.after.mean('overall', m):.3f}" for m in MEASURES]
        counts = defaultdict(int)
        for decision in o.decisions:
            counts[decision["kind"].split(":")[0]] += 1
        made = ", ".join(f"{n} {kind}s" for kind, n in sorted(counts.items())) or "none"
        lines.append(f"| {variant} | {regime} | {mode} | {o.memories:,} | {o.questions} | " + " | ".join(cells) +
                     f" | {len(o.hidden)} of {o.evidence} | {made} |")
    return lines


def per_category(outcomes: dict[tuple[str, str, str], Outcome]) -> list[str]:
    lines = ["| variant | vectors | consolidation | category | questions | hit@10 | recall@10 | ndcg@10 |",
             "|---|---|---|---|---|---|---|---|"]
    for (variant, regime, mode), o in outcomes.items():
        for category in CATEGORIES.values():
            n = int(o.before.sums[category]["questions"])
            cells = [f"{o.before.mean(category, m):.3f} → {o.after.mean(category, m):.3f}"
                     for m in ("hit@10", "recall@10", "ndcg@10")]
            lines.append(f"| {variant} | {regime} | {mode} | {category} | {n} | " + " | ".join(cells) + " |")
    return lines


def write_details(outcomes: dict[tuple[str, str, str], Outcome], out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for (variant, regime, mode), o in outcomes.items():
        name = f"{variant}-{regime}-{mode}"
        (out / f"{name}-decisions.jsonl").write_text("".join(json.dumps(d) + "\n" for d in o.decisions))
        (out / f"{name}-hidden.jsonl").write_text("".join(json.dumps(h) + "\n" for h in o.hidden))


def examples(outcomes: dict[tuple[str, str, str], Outcome]) -> list[str]:
    lines = []
    for (variant, regime, mode), o in outcomes.items():
        for item in o.hidden[:EXAMPLES]:
            lines.append(f"- {variant}, {regime}, {mode}: {item['how']}: \"{item.get('text')}\""
                         + (f" by \"{item['by']}\"" if item.get("by") else ""))
    return lines or ["- none hidden"]


BEGIN, END = "<!-- natural-eval:begin -->", "<!-- natural-eval:end -->"


def write_section(path: Path, lines: list[str]) -> None:
    text = path.read_text() if path.exists() else ""
    section = "\n".join([BEGIN, *lines, END])
    if BEGIN in text and END in text:
        text = text[:text.index(BEGIN)] + section + text[text.index(END) + len(END):]
    else:
        text = text.rstrip() + "\n\n" + section + "\n"
    path.write_text(text)


def _shown(path: Path) -> str:
    try:
        return os.path.relpath(path.resolve(), ROOT)
    except ValueError:
        return str(path)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("path", nargs="?", type=Path, default=NATURAL, help="a LoCoMo-format file or folder")
    parser.add_argument("--variants", nargs="+", default=["facts", "turns"], choices=["facts", "turns"])
    parser.add_argument("--regimes", nargs="+", default=["client", "built-in"], choices=["client", "built-in"])
    parser.add_argument("--replay", action="store_true", help="also consolidate session by session, as of each")
    parser.add_argument("--no-updates", action="store_true", help="leave out the update cases by recall")
    parser.add_argument("--out", type=Path, default=ROOT / ".eval", help="where decisions and hidden memories go")
    parser.add_argument("--write", type=Path, help="put the tables into this markdown file (between markers)")
    args = parser.parse_args(argv)
    convs = conversations(args.path)
    vectors = Vectors(args.path if args.path.is_dir() else args.path.parent)
    args.out.mkdir(parents=True, exist_ok=True)
    modes = ["single", "replay"] if args.replay else ["single"]
    outcomes = {}
    for variant in args.variants:
        for regime in args.regimes:
            for mode in modes:
                outcomes[(variant, regime, mode)] = evaluate(convs, variant, regime, mode, args.out, vectors)
                o = outcomes[(variant, regime, mode)]
                print(f"{variant} {regime} {mode}: {o.memories} memories, {o.questions} questions, "
                      f"{o.seconds:.0f} s", file=sys.stderr)
    lines = ["## Natural memory: does consolidation help recall?", "",
             "Written by `make eval` (`.venv/bin/python bench/natural_eval.py --replay --write docs/quality.md`). Each",
             "LoCoMo conversation is one scope; memories are its sessions' observations (**facts**) or its dialogue",
             "turns (**turns**), stored with their session's time; every question of categories 1-4 is recalled",
             "(`POST /recall`, k 10, current) before and after consolidation: one full run (**single**), or each",
             "session stored at its time with the tasks the schedule would run before the next one, as of then",
             "(**replay**). Vectors: all-MiniLM-L6-v2 sent by the client (**client**), or the service's own embedder",
             "(**built-in**). A memory is gold for a question when its evidence turns meet the question's; a gold",
             "memory merged into a canonical counts as found when the canonical is recalled; one superseded or",
             "archived does not. near_dup: results per question in the top 10 with cosine >= 0.9 to a higher one.",
             "Evidence hidden: gold memories superseded, archived, or merged into a memory whose evidence does not",
             "meet theirs. Decisions: what the run left in the store, by kind (each with its reason in `.eval/`).", "",
             f"Conversations: {', '.join(c.name for c in convs)} (`{_shown(args.path)}`); before → after "
             "consolidation.", "",
             *table(outcomes), "", "Per category:", "", *per_category(outcomes), "",
             "Evidence memories hidden (examples):", "", *examples(outcomes), ""]
    if not args.no_updates:
        lines += ["Update cases by recall (each stale memory recalled by its own text, k 5: no stale text and the "
                  "current memory answers; each control memory still answers itself):", "",
                  "| set | vectors | cases passed |", "|---|---|---|"]
        for regime in args.regimes:
            for name, result in update_cases(regime, args.out).items():
                lines.append(f"| {name} | {regime} | {result['passed']} of {result['cases']} |")
        lines.append("")
    write_details(outcomes, args.out)
    print("\n".join(lines))
    if args.write:
        write_section(args.write, lines)


if __name__ == "__main__":
    main()
