"""The state the check keeps while it drives both services: ids, embeddings, who wrote which edge, and the steps."""

from __future__ import annotations

import time

from interop import dataset
from interop.clients import AutoMem, Graph, Ours, Vectors
from interop.processes import Stack
from interop.report import Table


class Harness:
    """Both services' clients, the shared stores' readers, and what the check learnt of the memories so far."""

    def __init__(self, stack: Stack):
        self.stack = stack
        self.automem = AutoMem(stack.automem_url, stack.automem_token, stack.automem_admin)
        self.ours = Ours(stack.our_url, stack.our_token)
        self.graph = Graph(stack.falkor.port)
        self.vectors = Vectors(stack.vectors_url)
        self.table = Table()
        self.ids: dict[str, str] = {}          # dataset key -> memory id
        self.vec: dict[str, object] = {}       # memory id -> its embedding
        self.new_ids: dict[str, str] = {}      # key of a superseded memory -> the memory that superseded it
        self.forgotten: set[str] = set()       # ids deleted on request through our API
        self.our_run_ids: list[str] = []
        self.edge_author: dict[tuple, str] = {}  # edge -> "automem" / "ours", by the phase it appeared in
        self.automem_metas: dict[str, dict] = {}

    # ---- state read from the outside ----------------------------------------------------------------------

    def edges(self) -> set[tuple]:
        rows = self.graph.query("MATCH (a)-[r]->(b) RETURN type(r), a.id, b.id, labels(a)[0], labels(b)[0]")
        return {tuple(row[:3]) for row in rows if row[1] is not None and row[2] is not None}

    def attribute(self, before: set[tuple], author: str) -> set[tuple]:
        """Edges that appeared since `before` are `author`'s."""
        new = self.edges() - before
        for edge in new:
            self.edge_author.setdefault(edge, author)
        return new

    def our_state(self, memory_id: str) -> str:
        """The memory's state as our API tells it: active, merged, archived, superseded or deleted."""
        status, body = self.ours.memory(memory_id)
        body = body.get("memory", body) if isinstance(body, dict) else {}
        if status == 410:
            return "deleted"
        if status == 404:
            return "missing"
        if body.get("state") in ("merged", "archived"):
            return body["state"]
        return "superseded" if body.get("superseded_by") else body.get("state", "?")

    def non_current(self) -> dict[str, str]:
        """Every memory that is not current, with its state (from the graph, in our vocabulary)."""
        rows = self.graph.query(
            "MATCH (m:Memory) WHERE coalesce(m.archived, false) = true OR m.merged_into IS NOT NULL "
            "OR m.superseded_by IS NOT NULL RETURN m.id, m.merged_into IS NOT NULL, "
            "coalesce(m.archived, false), m.superseded_by IS NOT NULL, m.relevance_score")
        return {r[0]: ("merged" if r[1] else "archived" if r[2] else "superseded") for r in rows}

    def automem_run_ids(self) -> set[str]:
        return {r[0] for r in self.graph.query("MATCH (r:ConsolidationRun) WHERE r.mode IS NOT NULL RETURN r.id")}

    def wait_enrichment(self) -> None:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            queue = self.automem.call("GET", "/health")[1].get("enrichment", {})
            if not queue.get("pending") and not queue.get("inflight") and not queue.get("queue_depth"):
                return
            time.sleep(0.5)

    # ---- the steps -----------------------------------------------------------------------------------------

    def store(self) -> None:
        self.table.phase = "set-up: memories stored through AutoMem's POST /memory"
        seeds, self.updates = dataset.build()
        now = dataset.now()
        before = self.edges()
        for seed in seeds:
            self.ids[seed.key] = self.automem.store(seed.body(now))
            self.vec[self.ids[seed.key]] = seed.vector
        self.crowd_query, crowd = dataset.crowd(self.vec[self.ids["vpn_now"]])
        for seed in crowd:
            self.ids[seed.key] = self.automem.store(seed.body(now))
            self.vec[self.ids[seed.key]] = seed.vector
        seeds = seeds + crowd
        self.wait_enrichment()
        self.attribute(before, "automem")
        self.key = {memory_id: key for key, memory_id in self.ids.items()}
        stored = self.graph.query("MATCH (m:Memory) RETURN count(m)")[0][0]
        self.table.check("", "memories stored by AutoMem", f"{len(seeds)} in the graph and as points",
                         f"{stored} nodes, {len(self.vectors.ids())} points",
                         stored == len(seeds) == len(self.vectors.ids()))

    def our_requests(self) -> None:
        """Supersessions through our API (one of them then forgotten: its chain ends deleted)."""
        before = self.edges()
        for key in ("home", "car", "atlas_lang"):
            answer = self.ours.supersede(self.ids[key], dataset.UPDATE_TEXT[key], self.updates[key], "Context")
            self.new_ids[key] = answer["superseded_by"]
            self.vec[answer["superseded_by"]] = self.updates[key]
        self.ours.forget(self.new_ids["car"])
        self.forgotten.add(self.new_ids["car"])
        self.attribute(before, "ours")

    def our_run(self) -> dict:
        before = self.edges()
        result = self.ours.consolidate()
        self.our_run_ids.append(result["run_id"])
        self.attribute(before, "ours")
        print(f"  our run {result['run_id']}: success={result.get('success')} "
              f"({result.get('duration_seconds')} s)", flush=True)
        return result

    def automem_run(self, mode: str) -> dict:
        before = self.edges()
        result = self.automem.consolidate(mode)
        self.attribute(before, "automem")
        return result

    # ---- helpers -------------------------------------------------------------------------------------------

    def merged_key(self, key: str) -> str:
        """Of a restated pair (`key`, `key`_dup), the one our dedup merged into the other (either may be)."""
        for candidate in (f"{key}_dup", key):
            if (self.graph.props(self.ids[candidate]) or {}).get("merged_into"):
                return candidate
        return f"{key}_dup"

    def _name(self, memory_id: str) -> str:
        if memory_id in self.key:
            return self.key[memory_id]
        for key, new in self.new_ids.items():
            if new == memory_id:
                return f"{key}(new)"
        if memory_id in self.automem_metas:
            return "MetaMemory"
        node = self.graph.props(memory_id) or {}
        return f"{memory_id[:8]}({node.get('type')})"

    def _names(self, ids) -> str:
        return ",".join(self._name(i) for i in ids)


