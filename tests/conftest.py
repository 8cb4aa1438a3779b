"""Shared fixtures: real embedded stores in a temporary folder, a fixed clock, an isolated app per test."""

from __future__ import annotations

import importlib.util
import sys
import threading
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest
from prometheus_client.parser import text_string_to_metric_families

from consolidation.api import create_app
from consolidation.service import build_services
from consolidation.settings import Settings
from consolidation.stores.vectors import VectorPoint, payload_of

BENCH = Path(__file__).parent.parent / "bench"
TOKEN = "test-admin-token-0123456789"
NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)


def bench_module(name: str):
    """A script of bench/ by path (bench/ is scripts, not a package); sys.path as it was afterwards."""
    kept = list(sys.path)
    try:
        spec = importlib.util.spec_from_file_location(f"bench_{name}", BENCH / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module  # its dataclasses look their module up by name
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path[:] = kept


class Clock:
    """A clock the test moves by hand."""

    def __init__(self, now: datetime = NOW):
        self.now = now

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta) -> None:
        self.now += timedelta(**delta)


def make_settings(data_dir, **overrides) -> Settings:
    # No dwell before a deletion unless a test asks for one (tests/test_forget.py does): the tests of deletion
    # itself (crash safety, tombstones, restores) delete in one run.
    values = {"admin_api_token": TOKEN, "data_dir": data_dir, "consolidation_scheduler_enabled": False,
              "embedding_provider": "hash",
              "vector_size": 16, "consolidation_tick_seconds": 1.0, "consolidation_delete_after_archived_days": 0}
    values.update(overrides)
    return Settings(**values)


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def forgetful(tmp_path, clock):
    """Services that forget (archive below 0.2, delete below 0.05; the dwell as make_settings sets it)."""
    settings = make_settings(tmp_path / "data", consolidation_archive_threshold=0.2,
                             consolidation_delete_threshold=0.05)
    services = build_services(settings, clock=clock)
    yield services
    services.close()


@pytest.fixture
def settings(tmp_path) -> Settings:
    return make_settings(tmp_path / "data")


@pytest.fixture
def services(settings, clock):
    built = build_services(settings, clock=clock)
    yield built
    built.close()


@pytest.fixture
def app(settings, services):
    return create_app(settings, services=services, start_scheduler=False)


@pytest.fixture
def client(app):
    return app.test_client()


@pytest.fixture
def auth() -> dict[str, str]:
    return {"Authorization": f"Bearer {TOKEN}"}


def unit(vector) -> np.ndarray:
    vector = np.asarray(vector, dtype=np.float32)
    return vector / np.linalg.norm(vector)


def vector_at(similarity: float, base: np.ndarray, other: np.ndarray) -> np.ndarray:
    """A unit vector whose cosine with unit `base` is exactly `similarity` (other must be orthogonal to base)."""
    return unit(similarity * base + np.sqrt(1 - similarity**2) * other)


def axis(i: int, size: int = 16) -> np.ndarray:
    vector = np.zeros(size, dtype=np.float32)
    vector[i] = 1.0
    return vector


def add_memory(services, vector=None, **fields) -> str:
    """Write one memory straight into both stores, with every field under the test's control."""
    memory = {"id": str(uuid.uuid4()), "content": "a memory", "type": "Context", "importance": 0.5,
              "confidence": 0.5, "timestamp": NOW.isoformat(), "last_accessed": NOW.isoformat(),
              "access_count": 0, "relevance_score": 0.5, "archived": False, "protected": False, "tags": []}
    memory.update(fields)
    if vector is None:
        vector = unit(np.random.default_rng(uuid.UUID(memory["id"]).int % 2**32).standard_normal(services.settings.vector_size))
    services.stores.vectors.upsert([VectorPoint(memory["id"], unit(vector), payload_of(memory, services.stores.graph.scoping))])
    services.stores.graph.upsert_memories([memory])
    return memory["id"]


def answering(demand, until) -> threading.Thread:
    """A thread answering a request (counted in demand) until `until()` returns; started once it is counted."""
    counted = threading.Event()

    def request():
        demand.enter()
        counted.set()
        try:
            until()
        finally:
            demand.leave()

    thread = threading.Thread(target=request, daemon=True)
    thread.start()
    counted.wait()
    return thread


def add_memories(services, count: int, **fields) -> list[str]:
    """Write `count` memories with these fields (and random vectors) straight into both stores, in batches."""
    rng = np.random.default_rng(count)
    base = {"content": "a memory", "type": "Context", "importance": 0.5, "confidence": 0.5,
            "timestamp": NOW.isoformat(), "last_accessed": NOW.isoformat(), "access_count": 0,
            "relevance_score": 0.5, "archived": False, "protected": False, "tags": [], **fields}
    memories = [{**base, "id": str(uuid.uuid4()), "content": f"{base['content']} {i}"} for i in range(count)]
    vectors = rng.standard_normal((count, services.settings.vector_size)).astype(np.float32)
    for start in range(0, count, 5000):
        part = memories[start:start + 5000]
        services.stores.vectors.upsert([VectorPoint(m["id"], unit(v), payload_of(m, services.stores.graph.scoping))
                                        for m, v in zip(part, vectors[start:start + 5000])])
        services.stores.graph.upsert_memories(part)
    return [m["id"] for m in memories]


def link(services, a: str, b: str, relation: str = "RELATES_TO") -> None:
    services.stores.graph.falkor.execute(
        f"MATCH (a:Memory {{id: $a}}), (b:Memory {{id: $b}}) CREATE (a)-[:{relation}]->(b)", {"a": a, "b": b}
    )


def days_ago(days: float) -> str:
    return (NOW - timedelta(days=days)).isoformat()


@pytest.fixture
def client_for(settings):
    """A test client for an app around given services, carrying the admin headers as `.auth`."""

    def build(services):
        client = create_app(services.settings, services=services, start_scheduler=False).test_client()
        client.auth = {"Authorization": f"Bearer {TOKEN}"}
        return client

    return build


def metric_samples(text: str) -> dict[tuple, float]:
    """Every sample of a Prometheus text exposition, keyed by name and sorted labels."""
    return {(sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in text_string_to_metric_families(text) for sample in family.samples}


@pytest.fixture
def serve():
    """Serve apps over real HTTP on loopback (threads of this process); yields a function app -> base URL."""
    from tests.loopback import LoopbackServer

    servers = []

    def start(app) -> str:
        servers.append(LoopbackServer(app).start())
        return servers[-1].url

    yield start
    for server in servers:
        server.stop()


def pytest_addoption(parser):
    parser.addoption("--dashboard-screenshot", default=None, metavar="PATH",
                     help="where the dashboard browser test saves its screenshot (default: the test's tmp dir); "
                          "`make screenshot` passes docs/dashboard.png")
