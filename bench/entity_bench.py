"""Entity hygiene, measured: precision and recall on the labelled alias set (bench/entities/aliases.json), and
the entities task's time at 10k and 100k entities, through the real service on embedded stores.

    .venv/bin/python bench/entity_bench.py [--sizes 10000 100000]

Prints Markdown tables (docs/quality.md and docs/performance.md, "Entities").
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import tempfile
import time
import uuid
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT)]

from consolidation.embedding import HashingEmbedder  # noqa: E402
from consolidation.service import build_services  # noqa: E402
from consolidation.settings import Settings  # noqa: E402
from consolidation.stores.vectors import VectorPoint, payload_of  # noqa: E402

TOKEN = "benchmark-admin-token-0123456789"
MEMORIES_PER_NAME = 3
WORDS = ("atlas orbit falcon ember quartz willow cobalt harbor summit prism nova delta sierra maple cedar onyx "
         "lumen vertex pulse drift arbor crest flint glade haven iris jade karma lotus mesa noble opal pike raven "
         "sable tundra umber vale wren yarrow zephyr").split()


def settings_for(data_dir: Path) -> Settings:
    return Settings(admin_api_token=TOKEN, data_dir=data_dir, consolidation_scheduler_enabled=False,
                    consolidation_report_limit=100000, log_level="WARNING")


def write_memories(services, texts: list[str]) -> list[str]:
    embedder = HashingEmbedder(services.settings.vector_size)
    memories = [{"id": str(uuid.uuid4()), "content": text, "type": "Context", "importance": 0.5,
                 "timestamp": "2026-11-01T00:00:00+00:00", "relevance_score": 0.5} for text in texts]
    for start in range(0, len(memories), 5000):
        part = memories[start:start + 5000]
        vectors = embedder.embed([m["content"] for m in part])
        services.stores.vectors.upsert([VectorPoint(m["id"], np.asarray(v, np.float32), payload_of(m, services.stores.graph.scoping))
                                        for m, v in zip(part, vectors)])
        services.stores.graph.upsert_memories(part)
    return [m["id"] for m in memories]


def write_entities(services, entities: list[dict], references: list[list[str]]) -> None:
    falkor = services.stores.graph.falkor
    falkor.write_chunks("UNWIND $rows AS row CREATE (e:Entity) SET e = row", entities, chunk=5000)
    falkor.write_chunks("UNWIND $rows AS row MATCH (e:Entity {id: row[0]}), (m:Memory {id: row[1]}) "
                        "CREATE (e)-[:REFERENCED_IN]->(m)", references, chunk=5000)


def quality() -> dict:
    groups = json.loads((ROOT / "bench/entities/aliases.json").read_text())["groups"]
    rng = np.random.default_rng(5)
    names, texts, truth = [], [], {}
    for group_index, group in enumerate(groups):
        topic = group["topic"].split()
        for name in group["names"]:
            entity_id = f"{group_index}:{len(names)}"
            names.append({"id": entity_id, "name": name, "slug": name.lower().replace(" ", "-"),
                          "category": group["category"]})
            truth[entity_id] = group_index
            for k in range(MEMORIES_PER_NAME):
                words = " ".join(rng.permutation(topic)[:4])
                texts.append(f"{name}: note {k} about {words}")
    with tempfile.TemporaryDirectory() as directory:
        services = build_services(settings_for(Path(directory)))
        try:
            memory_ids = write_memories(services, texts)
            references = [[entity["id"], memory_ids[i * MEMORIES_PER_NAME + k]] for i, entity in enumerate(names)
                          for k in range(MEMORIES_PER_NAME)]
            write_entities(services, names, references)
            report = services.engine.run(["entities"], dry_run=True)["result"]["entities"]
        finally:
            services.close()
    predicted = set()
    for group in report["groups"]:
        members = [group["canonical_id"]] + [alias["id"] for alias in group["aliases"]]
        predicted |= {frozenset(pair) for pair in itertools.combinations(members, 2)}
    gold = {frozenset(pair) for pair in itertools.combinations(truth, 2) if truth[pair[0]] == truth[pair[1]]}
    right = predicted & gold
    wrong = sorted(tuple(sorted(_name(names, i) for i in pair)) for pair in predicted - gold)
    missed = sorted(tuple(sorted(_name(names, i) for i in pair)) for pair in gold - predicted)
    return {"entities": len(names), "gold_pairs": len(gold), "predicted_pairs": len(predicted),
            "precision": len(right) / len(predicted) if predicted else 1.0, "recall": len(right) / len(gold),
            "wrong": wrong, "missed": missed}


def _name(names: list[dict], entity_id: str) -> str:
    return next(entity["name"] for entity in names if entity["id"] == entity_id)


def speed(n: int) -> dict:
    """n entities (a tenth spelling variants of another), each referenced in two of n memories."""
    rng = np.random.default_rng(n)
    categories = ("tool", "person", "organization", "project", "place")
    bases = {" ".join(rng.choice(WORDS, 2)).title() + f" {i}" for i in range(n)}
    names = sorted(bases)[: n - n // 10]
    names += [name.lower() for name in rng.choice(names, n - len(names), replace=False)]
    entities = [{"id": f"e{i}", "name": name, "category": categories[i % len(categories)]}
                for i, name in enumerate(names)]
    with tempfile.TemporaryDirectory() as directory:
        services = build_services(settings_for(Path(directory)))
        try:
            memory_ids = write_memories(services, [f"memory {i} about {rng.choice(WORDS)}" for i in range(n)])
            references = [[entity["id"], memory_ids[int(j)]] for entity in entities
                          for j in rng.integers(0, n, 2)]
            write_entities(services, entities, references)
            started = time.monotonic()
            report = services.engine.run(["entities"])["result"]["entities"]
            elapsed = time.monotonic() - started
        finally:
            services.close()
    return {"n": n, "seconds": round(elapsed, 2), "task_seconds": report["seconds"], "pairs_judged": report["pairs_judged"],
            "merged": report["merged"]}


def quality_section(found: dict) -> list[str]:
    """docs/quality.md's section on entity aliases (bench/quality.py writes it with the rest)."""
    missed = "; ".join(" / ".join(pair) for pair in found["missed"]) or "none"
    wrong = "; ".join(" / ".join(pair) for pair in found["wrong"]) or "none"
    return ["## Entities", "",
            "The `entities` task on the labelled alias set `bench/entities/aliases.json` (70 groups of one thing "
            "each, look-alikes of different things side by side: Java / JavaScript, Angular / AngularJS, React / "
            "React Native, C / C++ / C#, Ann Lee / Anna Lee, Jon / John Smith, Python 2 / 3), each entity "
            "referenced in three memories about its topic (hashing embedder), one dry run; pairs counted within "
            "the groups it would merge (`.venv/bin/python bench/entity_bench.py`).", "",
            "| labelled set | entities | alias pairs | merged pairs | precision | recall |", "|---|---|---|---|---|---|",
            f"| bench/entities/aliases.json | {found['entities']} | {found['gold_pairs']} | "
            f"{found['predicted_pairs']} | {found['precision']:.3f} | {found['recall']:.3f} |", "",
            f"Merged wrongly: {wrong}. Missed: {missed}.", ""]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=[10000, 100000])
    arguments = parser.parse_args()
    found = quality()
    print(json.dumps(found, indent=1, ensure_ascii=False))
    print("\n".join(quality_section(found)))
    rows = [speed(n) for n in arguments.sizes]
    print("\n| entities | task seconds | run seconds | pairs judged | merged |\n|---|---|---|---|---|")
    for row in rows:
        print(f"| {row['n']:,} | {row['task_seconds']} | {row['seconds']} | {row['pairs_judged']:,} | {row['merged']:,} |")


if __name__ == "__main__":
    main()
