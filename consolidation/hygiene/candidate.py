"""What the hygiene rules know of an active memory (pure)."""

from __future__ import annotations

from dataclasses import dataclass, field

from .facts import Fact, read_fact


# Not frozen: a frozen dataclass sets each field through object.__setattr__, and a full pass makes one of these
# for every memory (13 fields: 1.5 µs against 0.2 µs; at a million memories about a second). Nothing changes
# one after it is made; dataclasses.replace makes the variants. Hashed by value, as before (unsafe_hash).
@dataclass(slots=True, unsafe_hash=True)
class Candidate:
    """What the rules know of an active memory."""

    id: str
    type: str
    fact: Fact
    created: float  # epoch seconds, NaN when unknown
    connections: int
    access_count: int
    protected: bool = False
    distinct_from: frozenset[str] = field(default_factory=frozenset)
    superseded: bool = False
    content: str = ""
    merged_texts: tuple[str, ...] = ()  # what earlier runs merged into it: it stands for those texts too
    scope: str = ""  # memories of different scopes are never merged, superseded or contradicted
    built_in: bool = False  # its vector is the hashing embedder's (judged on that embedder's thresholds)

    @property
    def variants(self) -> tuple[tuple[Fact, str], ...]:
        """Its own fact and text, then those of what was merged into it."""
        own = ((self.fact, self.content),)
        return own + tuple((read_fact(text), text) for text in self.merged_texts) if self.merged_texts else own
