"""Compound memories: a sentence stating several facts of one subject, split into one sentence per fact, and
which of them a newer statement changes (pure)."""

from __future__ import annotations

from dataclasses import dataclass

from .clauses import content_word, read_clause
from .lexicon import MOVING_VERBS, TAKING_VERBS

# The joins a compound memory is split at, when a verb follows them: "lives in Lyon and teaches at ...",
# "works remotely, but visits the office", "owns a bike; rides it daily". Lists of values ("speaks French and
# German") have no verb after the join and stay whole.
JOINS = frozenset({"and", "but", "while", "whereas", ",", ";"})
# What a verb of change most often changes: moving changes where one lives or is; taking up changes what one
# does or belongs to. A tie-breaker when the texts share no word.
MOVES_WHERE = frozenset("live reside stay base be locate".split())
TAKES_UP = frozenset("work teach study be play attend belong serve lead own drive use".split())


@dataclass(frozen=True)
class Part:
    """One fact of a compound memory: its text as a sentence of its own and its words as read."""

    text: str
    words: frozenset[str]
    verb: str


def facts_of(content: str) -> list[Part]:
    """The facts a memory states, one per verb joined to the main one ("User lives in Lyon and teaches at the
    conservatory" -> "User lives in Lyon." / "User teaches at the conservatory."); one part when it states one."""
    clause = read_clause(content)
    if clause.verb_at <= 0 or len(clause.verbs) < 2 or clause.reported:
        return [Part(content, frozenset(clause.predicate), clause.verb)]
    starts = [clause.verb_at]
    for index in range(clause.verb_at + 1, len(clause.words)):
        if clause.words[index - 1] in JOINS and clause.words[index] in clause.verbs[1:] and \
                index - 1 > starts[-1]:
            starts.append(index)
    if len(starts) < 2:
        return [Part(content, frozenset(clause.predicate), clause.verb)]
    subject = clause.subject_written
    parts = []
    for position, start in enumerate(starts):
        end = starts[position + 1] - 1 if position + 1 < len(starts) else len(clause.words)
        written = [w for w in clause.written[start:end] if w not in (".", ",", ";")]
        while written and written[-1].lower() in JOINS:
            written.pop()
        text = f"{subject} {' '.join(written)}.".replace(" 's", "'s")
        words = frozenset(w for w in clause.words[start + 1:end] if content_word(w))
        parts.append(Part(text, words, clause.words[start]))
    return parts


def _scores(parts: list[Part], newer: str) -> tuple[list[float], list[bool]]:
    """How strongly the newer statement points at each part, and whether it says anything of it at all (shares
    its verb or a word)."""
    clause = read_clause(newer)
    new_words = frozenset(w for w in clause.words if content_word(w)) - frozenset(clause.subject)
    scores, touched = [], []
    for part in parts:
        shared = len(part.words & new_words)
        same_verb = part.verb in new_words or bool(clause.verb) and part.verb == clause.verb
        score = 2.0 * shared + (3.0 if same_verb else 0.0)
        if clause.verb in MOVING_VERBS and part.verb in MOVES_WHERE:
            score += 1.0
        elif clause.verb in TAKING_VERBS and part.verb in TAKES_UP - MOVES_WHERE:
            score += 1.0
        scores.append(score)
        touched.append(shared > 0 or same_verb)
    return scores, touched


def changed_part(parts: list[Part], newer: str) -> int | None:
    """Which part a newer statement changes: the one sharing its verb or its words, else the one its verb of
    change points at; None when nothing tells them apart."""
    scores, _ = _scores(parts, newer)
    best = max(scores)
    if best <= 0 or scores.count(best) > 1:
        return None
    return scores.index(best)


def survivors(older: str, newer: str) -> list[str]:
    """The facts of `older` that `newer` leaves standing, each a sentence of its own: the parts it neither
    changes nor restates. Empty when `older` states one fact, or when it cannot be told which fact changed
    (the whole memory is superseded, as before)."""
    parts = facts_of(older)
    if len(parts) < 2:
        return []
    changed = changed_part(parts, newer)
    if changed is None:
        return []
    _, touched = _scores(parts, newer)
    return [part.text for index, part in enumerate(parts) if index != changed and not touched[index]]
