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
    noise = rng.standard_normal((n, dim), dtype=np.float32)
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
    raw = rng.bytes(16 * n)
    ids = [str(uuid.UUID(bytes=raw[16 * i:16 * i + 16], version=4)) for i in range(n)]
    # Whole columns at once: a million memories in seconds (one draw or date a memory took 80 s).
    subjects = [" ".join(VOCABULARY[w] for w in words) for words in topic_words] + ["miscellaneous"]
    subject = np.where(topics >= 0, topics, len(subjects) - 1)
    details = rng.integers(1000, size=n)
    timestamps = _iso_before(now, age_days)
    accessed = _iso_before(now, since_access)
    uses = rng.poisson(3, n)
    memories = [{
        "id": ids[i],
        "content": f"Note {i} about {subjects[subject[i]]}. Detail {details[i]} recorded for later.",
        "type": TYPES[types[i]],
        "importance": round(float(importance[i]), 3),
        "confidence": round(float(confidence[i]), 3),
        "timestamp": timestamps[i],
        "last_accessed": accessed[i],
        "access_count": int(uses[i]),
        "archived": False,
        "protected": False,
        "tags": ["bench"],
    } for i in range(n)]
    _plant_hygiene(memories, vectors, rng, restated_share, updated_share, now)
    return Dataset(memories, vectors, topics, _edges(ids, topics, rng))


def _iso_before(now: datetime, days: np.ndarray) -> list[str]:
    """`now` minus each number of days, as datetime.isoformat spells a UTC time (to the microsecond)."""
    base = np.datetime64(now.replace(tzinfo=None), "us")
    moments = base - np.rint(days * 86400e6).astype("timedelta64[us]")
    return [text.removesuffix(".000000") + "+00:00" for text in np.datetime_as_string(moments, unit="us").tolist()]


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
    order = np.argsort(topics, kind="stable")
    first = np.searchsorted(topics[order], topics)  # where each memory's topic starts in `order`
    size = np.searchsorted(topics[order], topics, side="right") - first
    within = (topics >= 0) & (rng.random(n) < 0.7)
    peer = order[first + (rng.random(n) * size).astype(np.int64)]
    j = np.where(within, peer, rng.integers(n, size=n))
    k = rng.integers(n, size=n)
    edges = []
    for i in range(n):
        if j[i] != i:
            edges.append([ids[i], ids[j[i]]])
        if k[i] != i:
            edges.append([ids[k[i]], ids[i]])
    return edges
