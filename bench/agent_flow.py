"""Updates as an agent makes them, through the HTTP API (embedded stores, client vectors): for each update in a
case the agent recalls the fact it names (current state, the case's scope), supersedes the memory recall answered
by id with the new statement, and at the end recalls each changed fact again. A case passes when every final
recall answers the newest statement of its chain and none of the superseded texts, and the memories the case
leaves alone are untouched.

Sets: the development half of the adversarial update cases (../shared/updates, MiniLM vectors beside them), and
our compound cases (bench/updates/compound_cases.jsonl; vectors made with the same model into
bench/vectors/compound.npz by bench/client_vectors.py), where the final recall asks for the fact that must
survive and must not answer the changed one.

    PYTHONPATH=. .venv/bin/python bench/agent_flow.py
"""

from __future__ import annotations

import json
import sys
import tempfile
from collections import Counter
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT)]

from consolidation.api import create_app  # noqa: E402
from consolidation.settings import Settings  # noqa: E402

SHARED = ROOT.parent / "shared" / "updates"
COMPOUND = ROOT / "bench" / "updates" / "compound_cases.jsonl"
TOKEN = "agent-flow-admin-token-0123456789abcdef"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
K = 5


class Agent:
    """An agent's calls: store, recall (current, its case's scope), supersede by id."""

    def __init__(self, client, case_id: str, vectors: dict[str, np.ndarray]):
        self.client, self.scope, self.vectors = client, {"case": case_id}, vectors

    def _embedding(self, text: str) -> list[float]:
        return [float(x) for x in self.vectors[text]]

    def store(self, content: str, timestamp: str) -> str:
        answer = self.client.post("/memory", headers=AUTH, json={
            "content": content, "timestamp": timestamp, "case": self.scope["case"],
            "embedding": self._embedding(content)})
        assert answer.status_code == 201, answer.get_json()
        return answer.get_json()["memory"]["id"]

    def recall(self, text: str, k: int = K) -> list[dict]:
        answer = self.client.post("/recall", headers=AUTH, json={
            "embedding": self._embedding(text), "k": k, "scope": self.scope})
        assert answer.status_code == 200, answer.get_json()
        return answer.get_json()["results"]

    def supersede(self, memory_id: str, content: str, timestamp: str) -> dict:
        answer = self.client.post(f"/memory/{memory_id}/supersede", headers=AUTH, json={
            "content": content, "timestamp": timestamp, "embedding": self._embedding(content)})
        assert answer.status_code == 200, answer.get_json()
        return answer.get_json()


def update_case(agent: Agent, case: dict) -> tuple[bool, str]:
    """The case's memories in order: setup ones stored, each update made by recall then supersede."""
    memories = case["memories"]
    chains: dict[int, list[int]] = {}  # the first memory of a chain -> its memories in order
    for memory in memories:
        if not memory["role"].startswith("supersede"):
            agent.store(memory["content"], memory["timestamp"])
            continue
        older = next(m for m in memories if m.get("expected_superseded_by") == memory["idx"])
        first = next((f for f, chain in chains.items() if older["idx"] in chain), older["idx"])
        named = memories[first]["content"]  # what the agent asks about: the fact as first stated
        top = agent.recall(named, k=1)[0]
        agent.supersede(top["id"], memory["content"], memory["timestamp"])
        chains.setdefault(first, [first]).append(memory["idx"])
    for first, chain in chains.items():
        found = [r["content"] for r in agent.recall(memories[first]["content"])]
        stale = [memories[i]["content"] for i in chain[:-1]]
        if memories[chain[-1]]["content"] not in found:
            return False, f"newest not recalled for {memories[first]['content']!r}: {found}"
        if any(text in found for text in stale):
            return False, f"stale text recalled for {memories[first]['content']!r}: {found}"
    return True, ""


def compound_case(agent: Agent, case: dict) -> tuple[bool, str]:
    older = agent.store(case["older"], "2025-01-01T12:00:00Z")
    top = agent.recall(case["older"], k=1)[0]
    assert top["id"] == older
    agent.supersede(older, case["newer"], "2025-01-02T12:00:00Z")
    found = [r["content"] for r in agent.recall(case["older"])]
    if case["older"] in found:
        return False, f"the compound memory still recalled: {found}"
    missing = [s for s in case["survive"] if s not in found]
    return (not missing, f"lost {missing}: {found}" if missing else "")


def run(name: str, cases: list[dict], vectors: dict[str, np.ndarray], check) -> tuple[Counter, Counter, list]:
    passed, total, failures = Counter(), Counter(), []
    with tempfile.TemporaryDirectory() as folder:
        settings = Settings(admin_api_token=TOKEN, data_dir=Path(folder), consolidation_scheduler_enabled=False,
                            log_level="WARNING", consolidation_scope_properties=("case",))
        client = create_app(settings, start_scheduler=False).test_client()
        for number, case in enumerate(cases):
            case_id = case.get("id") or f"{name}-{number}"
            ok, why = check(Agent(client, case_id, vectors), case)
            group = case.get("category") or f"batch {case.get('batch')}"
            passed[group] += ok
            total[group] += 1
            if not ok:
                failures.append(f"{case_id}: {why}")
    return passed, total, failures


def main() -> None:
    shipped = np.load(SHARED / "vectors.npz")
    cases = [json.loads(line) for line in (SHARED / "cases.jsonl").read_text().splitlines() if line.strip()]
    sets = [("adversarial update cases (development half)", cases,
             dict(zip(shipped["texts"].tolist(), shipped["vectors"])), update_case)]
    own = ROOT / "bench" / "vectors" / "compound.npz"
    if own.exists():
        made = np.load(own)
        compound = [json.loads(line) for line in COMPOUND.read_text().splitlines() if line.strip()]
        sets.append(("compound memories (ours)", compound, dict(zip(made["texts"].tolist(), made["vectors"])),
                     compound_case))
    for name, cases, vectors, check in sets:
        passed, total, failures = run(name, cases, vectors, check)
        print(f"\n{name}: {sum(passed.values())}/{sum(total.values())} "
              f"({sum(passed.values()) / sum(total.values()):.0%})")
        for group in sorted(total):
            print(f"  {group}: {passed[group]}/{total[group]}")
        for failure in failures:
            print("  FAILED", failure)


if __name__ == "__main__":
    main()
