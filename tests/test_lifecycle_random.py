"""A random administrator and agent on the real stores, forgetting on and no grace period: after every step the
state model's invariants hold, no automatic run undoes a restore within its hold, and the stores agree (the
vector payload mirrors each memory's state and supersession)."""

import json
import random
from datetime import timedelta

import pytest

from consolidation.lifecycle.states import ACTIVE, state_of
from consolidation.service import build_services
from consolidation.timeutil import parse_iso
from tests.conftest import make_settings
from tests.test_lifecycle import consistent

# Restatements, updates and look-alikes: enough alike that dedup merges and supersedes among them.
TEXTS = [
    "We use Redis for session caching", "Use Redis for session caching", "Session caching runs on Redis",
    "The billing database is PostgreSQL 15", "Billing runs on PostgreSQL 15", "The billing database is now MySQL 8",
    "Deploys happen every Friday at noon", "Deploys happen every Friday at 12", "Deploys happen every Monday",
    "Alice owns the payments service", "The payments service is owned by Alice", "Bob owns the search service",
    # Updates in plain words, and chains of them: a new value, a change naming no old value, a return.
    "The build server's address is 10.2.0.15", "The build server's address is 10.2.0.99",
    "The user lives in Lisbon", "The user moved to Porto", "The user moved back to Lisbon",
    "The user does not use a password manager", "The user started using Bitwarden for every password",
]
STEPS = 120


def step_names(rng: random.Random) -> str:
    return rng.choices(["create", "use", "import", "run", "restore", "clock"], weights=[5, 2, 2, 4, 4, 2])[0]


class Agent:
    """Plays one random sequence against a service and checks it after every step."""

    def __init__(self, services, client, clock, rng: random.Random):
        self.services, self.client, self.clock, self.rng = services, client, clock, rng
        self.known: list[str] = []
        self.held: dict[str, str] = {}  # restored memory -> held_until

    def body(self) -> dict:
        age = self.rng.choice([0, 30, 200, 400])
        when = (self.clock() - timedelta(days=age)).isoformat()
        return {"content": self.rng.choice(TEXTS), "timestamp": when, "last_accessed": when,
                "importance": self.rng.choice([0.2, 0.3, 0.5])}

    def create(self) -> None:
        answer = self.client.post("/memory", json=self.body(), headers=self.client.auth)
        assert answer.status_code == 201, answer.json
        self.known.append(answer.json["memory"]["id"])

    def use(self) -> None:
        if self.known:
            status = self.client.post(f"/memory/{self.rng.choice(self.known)}/access", headers=self.client.auth).status_code
            assert status in (200, 404, 410)  # 410: deleted (forget runs between)

    def import_lines(self) -> None:
        lines = [self.body() for _ in range(self.rng.randint(1, 3))]
        for line in lines:
            line["content"] += f" (import {self.rng.randrange(10**6)})"
        answer = self.client.post("/memory/import", data="\n".join(json.dumps(line) for line in lines),
                                  headers=self.client.auth)
        assert answer.status_code == 200, answer.json

    def run(self) -> None:
        tasks = self.rng.choice([["decay"], ["dedup"], ["forget"], ["dedup", "forget"], list(("decay", "dedup",
                                 "creative", "cluster", "forget"))])
        result = self.services.engine.run(tasks, full=self.rng.random() < 0.3)
        assert result["success"], result

    def restore(self) -> None:
        kind = self.rng.choice(["archived", "merged", "deleted"])
        items = self.client.get(f"/memories/restorable?kind={kind}", headers=self.client.auth).json["items"]
        if items:
            memory_id = self.rng.choice(items)["memory_id"]
            answer = self.client.post(f"/memory/{memory_id}/restore", headers=self.client.auth)
            assert answer.status_code == 200, answer.json
            # A deleted duplicate comes back merged into its canonical: the canonical is what the restore holds.
            held = answer.json["canonical_id"] if answer.json["state"] == "merged" else memory_id
            self.held[held] = answer.json["held_until"]

    def move_clock(self) -> None:
        self.clock.advance(days=self.rng.choice([1, 10, 40]))

    def check(self, step: str) -> None:
        assert consistent(self.services) == [], step
        report = self.services.engine.lifecycle.reconcile(repair=False, now=self.clock(), recheck_seconds=0)
        assert report["nodes_without_vectors_total"] == report["vectors_without_nodes_total"] == 0, step
        graph = self.services.stores.graph
        for memory_id, until in self.held.items():
            if parse_iso(until) > self.clock():
                memory = graph.get_memory(memory_id)
                assert memory is not None and state_of(memory) == ACTIVE, (step, memory_id)
        nodes = {m["id"]: m for m in graph.get_memories(graph.all_memory_ids())}
        payloads = self.services.stores.vectors.payloads(list(nodes))
        assert {i: (bool(m.get("archived")), state_of(m), m.get("superseded_by") is not None)
                for i, m in nodes.items()} == \
            {i: (bool(p.get("archived")), p.get("state"), p.get("superseded")) for i, p in payloads.items()}, step


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_random_lifecycle_keeps_every_invariant(tmp_path, clock, client_for, seed):
    settings = make_settings(tmp_path / "data", consolidation_archive_threshold=0.1,
                             consolidation_delete_threshold=0.02, consolidation_grace_period_days=0,
                             consolidation_dedup_vectors="built-in")
    services = build_services(settings, clock=clock)
    try:
        agent = Agent(services, client_for(services), clock, random.Random(seed))
        actions = {"create": agent.create, "use": agent.use, "import": agent.import_lines, "run": agent.run,
                   "restore": agent.restore, "clock": agent.move_clock}
        for number in range(STEPS):
            step = step_names(agent.rng)
            actions[step]()
            agent.check(f"step {number}: {step}")
        assert agent.held, "the sequence restored nothing: it tested no hold"
    finally:
        services.close()
