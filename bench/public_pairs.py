"""The public labelled pairs of ../shared/quality (MRPC train, STS-B train and dev) as calibration sets, in two
vector spaces: the all-MiniLM-L6-v2 vectors shipped with them (a client's model) and the built-in model's (the same
model, run by the service)."""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT)]

from consolidation.embedding import MiniLMEmbedder  # noqa: E402
from consolidation.hygiene.calibration import LabelledPair, PairSet  # noqa: E402

QUALITY = ROOT.parent / "shared" / "quality"
SPACES = ("client MiniLM", "built-in")


def available() -> bool:
    return (QUALITY / "pairs.jsonl").exists() and (QUALITY / "vectors.npz").exists()


def raw_pairs() -> dict[str, list[dict]]:
    """The labelled pairs by set name ("mrpc-train", "stsb-train", "stsb-dev")."""
    sets: dict[str, list[dict]] = defaultdict(list)
    for line in (QUALITY / "pairs.jsonl").read_text().splitlines():
        pair = json.loads(line)
        sets[f"{pair['dataset']}-{pair['split']}"].append(pair)
    return dict(sets)


def vectors(space: str, texts: list[str]) -> dict[str, np.ndarray]:
    if space == "built-in":
        return dict(zip(texts, MiniLMEmbedder().embed(texts)))
    shipped = np.load(QUALITY / "vectors.npz")
    return dict(zip(shipped["texts"].tolist(), shipped["vectors"]))


def pair_sets(space: str) -> list[PairSet]:
    raw = raw_pairs()
    texts = sorted({t for pairs in raw.values() for p in pairs for t in (p["a"], p["b"])})
    unit = vectors(space, texts)
    return [PairSet(name, [LabelledPair(p["a"], p["b"], float(unit[p["a"]] @ unit[p["b"]]), p["label"] == "pos")
                           for p in pairs]) for name, pairs in sorted(raw.items())]
