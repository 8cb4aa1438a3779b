"""Synthetic memory stores for the benchmark: K planted topics plus noise, realistic fields, ~2 edges each."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta

import numpy as np

TYPES = ("Context", "Decision", "Insight", "Pattern", "Preference", "Habit", "Style")
TYPE_SHARES = (0.30, 0.15, 0.10, 0.10, 0.15, 0.10, 0.10)
VOCABULARY = (
    "billing postgres deploy rollback editor theme latency cache schema migration review planning oncall "
    "incident queue retry timeout budget roadmap hiring onboarding docs testing flaky release branch merge "
    "backup restore index search vector graph memory agent prompt tokens pricing invoice customer support "
    "dashboard metrics alert logging tracing security token password audit compliance privacy storage"
).split()


@dataclass
class Dataset:
    memories: list[dict]
    vectors: np.ndarray  # unit rows, same order as memories
    topics: np.ndarray  # planted topic per memory, -1 for noise
    edges: list[list[str]]  # [from id, to id]


def planted_vectors(n: int, dim: int, topic_size: int, noise_share: float, rng: np.random.Generator):
    """Topic members sit around a random centre with a spread drawn per member, so pairwise cosines
    straddle the 0.75 threshold (about 0.67..0.86); noise memories point anywhere."""
    topics = max(1, int(n * (1 - noise_share)) // topic_size)
    centres = rng.standard_normal((topics, dim)).astype(np.float32)
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    labels = np.full(n, -1)
    labels[: topics * topic_size] = np.repeat(np.arange(topics), topic_size)
    rng.shuffle(labels)
    spread = rng.uniform(0.35, 0.75, n).astype(np.float32)[:, None]
    noise = rng.standard_normal((n, dim)).astype(np.float32)
    vectors = np.where(labels[:, None] >= 0, centres[np.maximum(labels, 0)] + spread * noise / np.sqrt(dim), noise)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True), labels


def generate(n: int, now: datetime, dim: int = 384, topic_size: int = 100, noise_share: float = 0.2,
             seed: int = 7, restated_share: float = 0.05, updated_share: float = 0.01) -> Dataset:
    rng = np.random.default_rng(seed)
    vectors, topics = planted_vectors(n, dim, topic_size, noise_share, rng)
    topic_words = rng.choice(len(VOCABULARY), size=(topics.max() + 2, 4))
    types = rng.choice(len(TYPES), size=n, p=TYPE_SHARES)
    # An active agent's store: most memories are weeks old and in use, a tail is old and forgotten.
    age_days = np.minimum(365, rng.exponential(20, n))
    in_use = rng.random(n) < 0.85
    since_access = np.where(in_use, rng.uniform(0, 7, n), age_days)
    since_access = np.minimum(since_access, age_days)
    importance = rng.beta(2, 3, n)
    confidence = rng.beta(5, 2, n)
    ids = [str(uuid.UUID(bytes=rng.bytes(16), version=4)) for _ in range(n)]
    memories = []
    for i in range(n):
        words = " ".join(VOCABULARY[w] for w in topic_words[topics[i]]) if topics[i] >= 0 else "miscellaneous"
        memories.append({
            "id": ids[i],
            "content": f"Note {i} about {words}. Detail {rng.integers(1000)} recorded for later.",
            "type": TYPES[types[i]],
            "importance": round(float(importance[i]), 3),
            "confidence": round(float(confidence[i]), 3),
            "timestamp": (now - timedelta(days=float(age_days[i]))).isoformat(),
            "last_accessed": (now - timedelta(days=float(since_access[i]))).isoformat(),
            "access_count": int(rng.poisson(3)),
            "archived": False,
            "protected": False,
            "tags": ["bench"],
        })
    _plant_hygiene(memories, vectors, rng, restated_share, updated_share, now)
    return Dataset(memories, vectors, topics, _edges(ids, topics, rng))


def _plant_hygiene(memories: list[dict], vectors: np.ndarray, rng: np.random.Generator, restated_share: float,
                   updated_share: float, now: datetime) -> None:
    """Restatements (the same note again, cased and punctuated otherwise, its vector at cosine ~0.97) and
    updates ("detail changed from X to Y", later than the note) of earlier memories, for dedup to find."""
    n, dim = vectors.shape
    restated = int(n * restated_share)
    updated = int(n * updated_share)
    chosen = rng.choice(n, size=restated + updated, replace=False)
    untouched = np.setdiff1d(np.arange(n), chosen)
    sources = rng.choice(untouched, size=restated + updated, replace=True)
    for k, (target, source) in enumerate(zip(chosen, sources)):
        original = memories[source]
        if k < restated:
            content = original["content"].lower().rstrip(".") + "!"
            near = vectors[source] + 0.18 * rng.standard_normal(dim) / np.sqrt(dim)
            memory_type = original["type"]
            when = original["timestamp"]
        else:
            detail = original["content"].split("Detail ")[1].split(" ")[0]
            content = original["content"].split(". Detail")[0] + f": detail changed from {detail} to {int(detail) + 1}."
            near = vectors[source] + 0.5 * rng.standard_normal(dim) / np.sqrt(dim)
            memory_type = original["type"]
            when = (datetime.fromisoformat(original["timestamp"]) + timedelta(days=1)).isoformat()
            when = min(when, now.isoformat())
        memories[target].update(content=content, type=memory_type, timestamp=when)
        vectors[target] = near / np.linalg.norm(near)


def _edges(ids: list[str], topics: np.ndarray, rng: np.random.Generator) -> list[list[str]]:
    """Two edges per memory: one mostly within its topic, one to anywhere."""
    n = len(ids)
    by_topic: dict[int, np.ndarray] = {}
    order = np.argsort(topics, kind="stable")
    bounds = np.flatnonzero(np.diff(topics[order])) + 1
    for group in np.split(order, bounds):
        by_topic[int(topics[group[0]])] = group
    edges = []
    for i in range(n):
        peers = by_topic[int(topics[i])] if topics[i] >= 0 and rng.random() < 0.7 else None
        j = int(rng.choice(peers)) if peers is not None else int(rng.integers(n))
        if j != i:
            edges.append([ids[i], ids[j]])
        k = int(rng.integers(n))
        if k != i:
            edges.append([ids[k], ids[i]])
    return edges
