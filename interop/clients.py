"""HTTP clients of AutoMem and of this service, and direct readers of the shared graph and vector store."""

from __future__ import annotations

from typing import Any

import numpy as np
from falkordb import FalkorDB
import requests
from qdrant_client import QdrantClient

from interop.processes import COLLECTION, GRAPH


class HttpError(RuntimeError):
    pass


class _Http:
    def __init__(self, url: str, headers: dict[str, str]):
        self.url, self.session = url, requests.Session()
        self.session.headers.update(headers)

    def call(self, method: str, path: str, expect: tuple[int, ...] = (200,), **kw) -> Any:
        answer = self.session.request(method, self.url + path, timeout=300, **kw)
        if answer.status_code not in expect:
            raise HttpError(f"{method} {path} -> {answer.status_code}: {answer.text[:400]}")
        try:
            return answer.status_code, answer.json()
        except ValueError:
            return answer.status_code, answer.text


def _embedding_param(vector: np.ndarray) -> str:
    return ",".join(f"{float(x):.7f}" for x in vector)


class AutoMem(_Http):
    """AutoMem's own API (its token on every call; its admin token where it asks for one)."""

    def __init__(self, url: str, token: str, admin: str):
        super().__init__(url, {"Authorization": f"Bearer {token}"})
        self.admin = admin

    def store(self, body: dict) -> str:
        return self.call("POST", "/memory", (201,), json=body)[1]["memory_id"]

    def get(self, memory_id: str) -> dict | None:
        status, body = self.call("GET", f"/memory/{memory_id}", (200, 404))
        return body["memory"] if status == 200 else None

    def recall(self, vector: np.ndarray, mode: str, limit: int = 10) -> list[dict]:
        """AutoMem's recall by embedding alone (no text: its vector hits are built from the Qdrant payload)."""
        body = self.call("GET", "/recall", params={"embedding": _embedding_param(vector), "limit": limit,
                                                      "state_mode": mode})[1]
        return body.get("results", [])

    def recall_ids(self, vector: np.ndarray, mode: str, limit: int = 10) -> list[str]:
        return [str(r.get("id")) for r in self.recall(vector, mode, limit)]

    def consolidate(self, mode: str) -> dict:
        return self.call("POST", "/consolidate", json={"mode": mode, "dry_run": False})[1]["consolidation"]

    def status(self) -> dict:
        return self.call("GET", "/consolidate/status")[1]


class Ours(_Http):
    """This service's API with its admin token."""

    def __init__(self, url: str, token: str):
        super().__init__(url, {"Authorization": f"Bearer {token}"})

    def consolidate(self, task: str | None = None) -> dict:
        body: dict[str, Any] = {"wait": True}
        if task:
            body["task"] = task
        return self.call("POST", "/consolidate", json=body)[1]

    def run(self, run_id: str) -> tuple[int, Any]:
        return self.call("GET", f"/consolidate/runs/{run_id}", (200, 404))

    def runs(self) -> list[dict]:
        items, offset = [], 0
        while True:
            page = self.call("GET", "/consolidate/runs", params={"limit": 500, "offset": offset})[1]
            items += page["items"]
            offset += len(page["items"])
            if not page["items"] or offset >= page["total"]:
                return items

    def status(self) -> dict:
        return self.call("GET", "/consolidate/status")[1]

    def listing(self, path: str) -> dict:
        return self.call("GET", path, params={"limit": 500})[1]

    def reconcile(self) -> dict:
        return self.call("POST", "/reconcile", json={"repair": False})[1]

    def memory(self, memory_id: str) -> tuple[int, dict]:
        return self.call("GET", f"/memory/{memory_id}", (200, 404, 410))

    def supersede(self, memory_id: str, content: str, vector: np.ndarray, type_: str) -> dict:
        body = {"content": content, "type": type_, "embedding": [float(x) for x in vector]}
        return self.call("POST", f"/memory/{memory_id}/supersede", (200, 201), json=body)[1]

    def forget(self, memory_id: str) -> dict:
        return self.call("DELETE", f"/memory/{memory_id}", (200, 202))[1]

    def recall_ids(self, vector: np.ndarray, state: str, k: int = 10) -> list[str]:
        body = self.call("POST", "/recall", json={"embedding": [float(x) for x in vector], "k": k,
                                                   "state": state})[1]
        return [r["id"] for r in body["results"]]


class Graph:
    """Cypher on the shared FalkorDB graph through FalkorDB's own Python client."""

    def __init__(self, port: int):
        self.graph = FalkorDB(host="127.0.0.1", port=port).select_graph(GRAPH)

    def query(self, cypher: str, **params) -> list[list[Any]]:
        return self.graph.query(cypher, params or None).result_set

    def props(self, memory_id: str) -> dict | None:
        rows = self.query("MATCH (m:Memory {id: $id}) RETURN properties(m)", id=memory_id)
        return dict(rows[0][0]) if rows else None


class Vectors:
    """The stand-in's points, read through qdrant-client (as any Qdrant client would)."""

    def __init__(self, url: str):
        self.client = QdrantClient(url=url, timeout=60, check_compatibility=False)

    def payload(self, memory_id: str) -> dict | None:
        found = self.client.retrieve(COLLECTION, [memory_id], with_payload=True, with_vectors=False)
        return dict(found[0].payload or {}) if found else None

    def ids(self) -> set[str]:
        out, offset = set(), None
        while True:
            points, offset = self.client.scroll(COLLECTION, limit=1000, offset=offset, with_payload=False)
            out |= {str(p.id) for p in points}
            if offset is None:
                return out
