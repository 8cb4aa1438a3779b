"""The labelled memory sets (bench/quality_set.py, bench/holdout*) as calibration sets: every pair of memories of
one type whose vectors are at least somewhat close, labelled one fact or not, in the built-in model's vector
space or a client model's (bench/vectors/<set>.npz, made by bench/client_vectors.py)."""

from __future__ import annotations

import itertools
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

from consolidation.embedding import MiniLMEmbedder  # noqa: E402
from consolidation.hygiene.calibration import LabelledPair, PairSet  # noqa: E402

CLOSE = 0.5


def memory_set(name: str) -> tuple[list[dict], dict]:
    """The memories (id, content, type) and labels of a set."""
    if name == "quality_set":
        import quality_set

        built = quality_set.build()
        memories = [{"id": m.id, "content": m.content, "type": m.type} for m in built.memories]
        return memories, {"fact": {m.id: m.fact for m in built.memories}}
    folder = ROOT / "bench" / name
    memories = [json.loads(line) for line in (folder / "holdout.jsonl").read_text().splitlines() if line]
    return memories, json.loads((folder / "holdout_labels.json").read_text())


def names() -> list[str]:
    return ["quality_set"] + sorted(p.parent.name for p in (ROOT / "bench").glob("holdout*/holdout.jsonl"))


def unit_vectors(name: str, texts: list[str], space: str) -> np.ndarray:
    if space == "built-in":
        return MiniLMEmbedder().embed(texts)
    shipped = np.load(ROOT / "bench" / "vectors" / f"{name}.npz")
    by_text = dict(zip(shipped["texts"].tolist(), shipped["vectors"]))
    return np.array([by_text[t] for t in texts])


def pair_set(name: str, space: str) -> PairSet:
    memories, labels = memory_set(name)
    unit = unit_vectors(name, [m["content"] for m in memories], space)
    cosines = unit @ unit.T
    fact = labels["fact"]
    pairs = [LabelledPair(a["content"], b["content"], float(cosines[i, j]), fact[a["id"]] == fact[b["id"]])
             for (i, a), (j, b) in itertools.combinations(enumerate(memories), 2)
             if a["type"] == b["type"] and cosines[i, j] >= CLOSE]
    return PairSet(name, pairs, even_mix=False)
