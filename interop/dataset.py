"""The memories the check stores through AutoMem: texts, types, times and deterministic 384-d embeddings."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import numpy as np

from interop.processes import VECTOR_SIZE

SEED = 40  # issue 40


@dataclass
class Seed:
    key: str
    content: str
    type: str
    importance: float
    age_days: float
    vector: np.ndarray
    tags: list[str] = field(default_factory=lambda: ["interop"])
    unused_days: float | None = None  # days since the last use (default: its age)

    def body(self, now: datetime) -> dict:
        at = now - timedelta(days=self.age_days)
        used = now - timedelta(days=self.age_days if self.unused_days is None else self.unused_days)
        return {"content": self.content, "type": self.type, "importance": self.importance,
                "confidence": 0.9, "tags": self.tags, "timestamp": at.isoformat(),
                "last_accessed": used.isoformat(), "embedding": [float(x) for x in self.vector]}


class Vectors:
    """Unit vectors from one seeded generator: random directions, and directions at a chosen cosine to another."""

    def __init__(self, seed: int = SEED):
        self.rng = np.random.default_rng(seed)

    def random(self) -> np.ndarray:
        v = self.rng.standard_normal(VECTOR_SIZE)
        return v / np.linalg.norm(v)

    def near(self, base: np.ndarray, cosine: float) -> np.ndarray:
        noise = self.random()
        noise -= noise.dot(base) * base
        noise /= np.linalg.norm(noise)
        v = cosine * base + np.sqrt(1 - cosine ** 2) * noise
        return v / np.linalg.norm(v)


def build() -> tuple[list[Seed], dict[str, np.ndarray]]:
    """The memories to store, and the embeddings of the updates the check sends to our supersede later."""
    vec = Vectors()
    seeds: list[Seed] = []

    def add(key, content, type_, importance=0.5, age=2.0, vector=None, unused=None):
        seeds.append(Seed(key, content, type_, importance, age, vec.random() if vector is None else vector,
                          unused_days=unused))
        return seeds[-1].vector

    # A cluster of six memories about one project (pairwise cosine ~0.86): AutoMem's cluster pass summarises
    # it (5+ members above 0.75). One of them is restated (merged by our dedup), one is superseded on request.
    atlas = vec.random()
    db = add("atlas_db", "Project Atlas stores its data in PostgreSQL 16", "Context", 0.6, 3,
             vec.near(atlas, 0.93))
    add("atlas_db_dup", "Project Atlas stores its data in PostgreSQL 16.", "Context", 0.6, 1,
        vec.near(db, 0.997))
    add("atlas_deploy", "Project Atlas deploys to Kubernetes every Friday afternoon", "Context", 0.6, 3,
        vec.near(atlas, 0.93))
    add("atlas_frontend", "Project Atlas has a React front end with TypeScript", "Context", 0.6, 3,
        vec.near(atlas, 0.93))
    add("atlas_lang", "Project Atlas backend is written mostly in Go", "Context", 0.6, 4, vec.near(atlas, 0.93))
    add("atlas_cache", "Project Atlas uses Redis for caching user sessions", "Context", 0.6, 3,
        vec.near(atlas, 0.93))
    add("atlas_ci", "Project Atlas runs its test suite on GitHub Actions", "Context", 0.6, 3,
        vec.near(atlas, 0.93))

    # Restatements outside the cluster: merged by our dedup.
    dark = add("dark_mode", "The user prefers dark mode in every code editor", "Preference", 0.6, 5)
    add("dark_mode_dup", "The user prefers dark mode in every code editor.", "Preference", 0.6, 2,
        vec.near(dark, 0.997))
    sync = add("sync_day", "The team weekly sync is on Tuesday at 10am", "Context", 0.5, 6)
    add("sync_day_dup", "The team weekly sync is on Tuesday at 10am.", "Context", 0.5, 1, vec.near(sync, 0.997))

    # Superseded on request through our API (the new memories' embeddings are sent with the request).
    paris = add("home", "The user lives in Paris", "Context", 0.6, 20)
    car = add("car", "The user drives a blue Honda Civic", "Context", 0.5, 20)

    # Old, unused and unimportant: our forget archives them (relevance below 0.1, past the grace period).
    add("old_wifi", "The hotel wifi password in Lisbon was seaside2024", "Context", 0.1, 420)
    add("old_parking", "Parked the rental car on level 3 of the airport garage", "Context", 0.1, 450)
    add("old_lunch", "Had a tuna sandwich for lunch at the conference", "Context", 0.1, 400)
    add("old_ticket", "The museum ticket queue took forty minutes", "Context", 0.1, 380)
    # Old and unused too, but of a type only our settings protect: AutoMem's forget archives it, ours keeps it.
    add("old_note", "The old VPN profile used UDP port 1194", "Note", 0.1, 410)

    # Varied memories: AutoMem's creative pass links Insight/Pattern pairs, contrasts unlike Decisions and finds
    # parallel contexts among recent ones.
    pattern = add("pattern_tests", "Bugs cluster in modules without integration tests", "Pattern", 0.6, 4)
    add("insight_tests", "Integration tests catch most regressions before release", "Insight", 0.6, 4,
        vec.near(pattern, 0.7))
    pattern2 = add("pattern_mornings", "The user is most productive in the early morning", "Pattern", 0.6, 5)
    add("insight_mornings", "Scheduling deep work before noon doubles output", "Insight", 0.6, 5,
        vec.near(pattern2, 0.7))
    add("decision_db", "Decided to keep a single PostgreSQL instance until 2027", "Decision", 0.8, 6)
    add("decision_api", "Decided to version the public API by URL path", "Decision", 0.8, 6)
    add("decision_cloud", "Decided to move hosting from Heroku to Fly.io", "Decision", 0.8, 5)
    add("decision_license", "Decided to publish the SDK under the Apache 2.0 licence", "Decision", 0.8, 4)
    add("decision_oncall", "Decided that on-call rotates weekly between four engineers", "Decision", 0.8, 3)
    add("decision_freeze", "Decided on a code freeze during the last week of December", "Decision", 0.8, 2)
    texts = [
        ("Preference", "The user likes green tea without sugar"),
        ("Preference", "The user prefers metric units in reports"),
        ("Habit", "The user reviews pull requests every morning"),
        ("Habit", "The user runs five kilometres on Sundays"),
        ("Context", "The user's manager is called Priya"),
        ("Context", "The design review is scheduled for March 3"),
        ("Context", "Invoices are sent on the first business day of the month"),
        ("Context", "The staging server is called orion"),
        ("Preference", "The user wants short answers without bullet lists"),
        ("Context", "The user's cat is named Miso"),
        ("Context", "The user speaks French and German"),
        ("Habit", "The user backs up the laptop every Friday"),
        ("Context", "The quarterly planning happens in the second week of January"),
        ("Context", "The user's keyboard layout is Dvorak"),
    ]
    for index, (type_, content) in enumerate(texts):
        add(f"misc_{index}", content, type_, 0.5, 1 + index % 5)

    # A current memory near a query that a crowd of older notes matches better (see crowd()).
    add("vpn_now", "The office VPN now runs WireGuard on port 51820", "Context", 0.6, 2)

    updates = {
        "home": vec.near(paris, 0.8),
        "car": vec.near(car, 0.8),
        "atlas_lang": vec.near(atlas, 0.93),
    }
    return seeds, updates


UPDATE_TEXT = {
    "home": "The user moved to Berlin and lives there now",
    "car": "The user now drives a red Tesla Model 3",
    "atlas_lang": "Project Atlas backend is now written mostly in Rust",
}


CROWD = 1010  # more than our recall fetches at most (1,000 points) before it gives up on finding k current ones
SYLLABLES = "ka lo mi ra tu se vo ne pi da zu ge fo li ba".split()


def crowd(target: np.ndarray) -> tuple[np.ndarray, list[Seed]]:
    """A query (cosine 0.8 to `target`) and CROWD old, unused notes nearer to it (cosine 0.85; 0.72 among
    themselves, so no two are one fact): AutoMem's forget archives them all, our settings protect their type."""
    vec = Vectors(SEED + 1)
    query = vec.near(target, 0.8)
    seeds = []
    for index in range(CROWD):
        words = " ".join("".join(vec.rng.choice(SYLLABLES, 3)) for _ in range(4))
        seeds.append(Seed(f"crowd_{index}", f"Archived note {words}", "Note", 0.1, 400 + index % 30,
                          vec.near(query, 0.85), tags=["interop", "crowd"]))
    return query, seeds


def now() -> datetime:
    return datetime.now(UTC)
