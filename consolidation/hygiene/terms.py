"""The terms dedup stores on each memory (pure), by which an incremental run finds the memories a change may
concern without reading their texts."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from .candidate import Candidate
from .facts import PREFER, Fact, read_fact

# The version of the terms dedup stores on each memory (stored_terms): raise it whenever a change to facts.py or
# to stored_terms changes any text's terms, or where they are stored; the next dedup run is then a full pass that
# stores them anew. (4: moved off the memory onto a node of their own, stores/fact_terms.py.)
TERMS_VERSION = 4


class StoredTerms(NamedTuple):
    terms: list[str]
    anchors: list[str]
    least: int


# Stored beside the terms of a memory that may make or undergo a plain-word update (Fact.updatable): an
# incremental run sweeps the statements of a subject only where one of them has it.
UPDATABLE = "UPDATABLE"


def stored_terms(candidate: Candidate) -> StoredTerms:
    """What dedup stores on a memory so that a later incremental run finds it by term without reading its text:
    every term of its key and statement, over the texts it stands for (and UPDATABLE); the anchors of the changes
    it announces (the old value a change names, else its subject and new value), by which the changes a new or
    removed statement may concern are found; and the fewest words of its texts' statements (pool_query's
    slack)."""
    return _terms_of([fact for fact, _ in candidate.variants])


def text_terms(text: str) -> StoredTerms:
    """stored_terms of a memory that stands for its own text alone: what a new memory is written with."""
    return _terms_of([read_fact(text)])


def _terms_of(facts: Sequence[Fact]) -> StoredTerms:
    terms: set[str] = set()
    anchors: set[str] = set()
    for fact in facts:
        terms |= fact.key | fact.statement
        if fact.updatable:
            terms.add(UPDATABLE)
        if fact.change is not None:
            anchors |= fact.change.old or (fact.change.subject | fact.change.new)
    least = min(len(fact.statement - {PREFER}) for fact in facts)
    return StoredTerms(sorted(terms), sorted(anchors), least)


def terms_stamp(change: float) -> str:
    """The stamp of terms read from a memory as of its change number (and the rules of TERMS_VERSION)."""
    return f"{TERMS_VERSION}:{int(change)}"


