"""Compound memories: a sentence stating several facts, split into one sentence per fact, and which of them a
newer statement changes (pure)."""

from __future__ import annotations

from dataclasses import dataclass, replace

from .clauses import content_word, opening_verb, read_clause, verb_lemma
from .lexicon import ENDING_VERBS, MOVING_VERBS, TAKING_VERBS

# The joins a compound memory is split at: "lives in Lyon and teaches at ...", "works remotely, but visits the
# office", "the budget is 500 dollars; the deadline is Friday". What follows a join becomes a fact of its own
# when it starts with a verb (the memory's subject is its subject), states its own subject and verb, or, after
# "is", is a predicate of several words ("is vegetarian and allergic to peanuts"). Anything else is one more
# value of the fact before it ("speaks French and German") and stays in it.
JOINS = frozenset({"and", "but", "while", "whereas", ",", ";", "also", "plus"})
# A part that points back at another part's thing ("owns a Subaru and parks it in the garage") leaves with it.
POINTING_BACK = frozenset({"it", "them", "there", "this", "that", "these", "those"})
AUXILIARIES = frozenset("be have do will would can could shall should may might must".split())
ADVERBS_BEFORE = frozenset("now also still currently usually often always never not no longer".split())
# What a fact is about, as its verb or words say: an update of one kind changes the fact of that kind.
KINDS = {
    "place": frozenset("live reside stay base locate rent settle move relocate address city town country house "
                       "flat apartment home neighbourhood neighborhood".split()),
    "work": frozenset("work teach study employ serve lead manage coach job position role employer career "
                      "company profession hire promote retire graduate nurse doctor engineer teacher".split()),
    "travel": frozenset("commute drive ride cycle walk fly bus train car bike bicycle subway tram".split()),
    "diet": frozenset("eat diet vegan vegetarian pescatarian meat fish dairy drink".split()),
    "partner": frozenset("married single divorce divorced engaged marry partner wife husband girlfriend "
                         "boyfriend date dating separate".split()),
}


@dataclass(frozen=True)
class Part:
    """One fact of a compound memory: its text as a sentence of its own and what it is about."""

    text: str
    words: frozenset[str]  # its content words (its own subject's among them when it has one)
    verb: str
    about: str  # its subject, as the clause reader keys it
    kinds: frozenset[str]


def facts_of(content: str) -> list[Part]:
    """The facts a memory states ("User lives in Lyon and teaches at the conservatory" -> "User lives in Lyon." /
    "User teaches at the conservatory."); one part when it states one."""
    clause = read_clause(content)
    if clause.verb_at <= 0 or clause.reported:
        return [_part(content)]
    start = _predicate_start(clause)
    subject, copula = _joined(list(clause.written[:start])), clause.written[start]
    facts: list[tuple[str, str | None]] = []  # (text, the verb it opens with when it was read off a fragment)
    for join, segment in _segments(list(clause.written[start:])):
        shape = _shape(segment, clause.verb == "be") if facts else "first"
        if shape in ("first", "verb"):
            at = opening_verb(segment)
            facts.append((f"{subject} {_joined(segment)}", segment[at] if at is not None else None))
        elif shape == "clause":
            facts.append((_joined(segment), None))
        elif shape == "predicate":
            facts.append((f"{subject} {copula} {_joined(segment)}", None))
        else:
            text, verb = facts[-1]
            facts[-1] = (text + f"{'' if join in (',', ';') else ' '}{join} {_joined(segment)}", verb)
    if len(facts) < 2:
        return [_part(content)]
    return [_part(_sentence(text), verb) for text, verb in facts]


def _predicate_start(clause) -> int:
    """Where what is said of the subject starts: at the first verb after the subject, or at the auxiliaries and
    adverbs before it ("Leo | is married", "User | now teaches", "Dad | plays golf")."""
    start = next((i for i in range(1, clause.verb_at) if opening_verb(clause.written[i:i + 1]) == 0), clause.verb_at)
    while start > 1 and (clause.words[start - 1] in AUXILIARIES or clause.words[start - 1] in ADVERBS_BEFORE):
        start -= 1
    return start


def _segments(tokens: list[str]) -> list[tuple[str, list[str]]]:
    """The predicate cut at each join: (the join before it, its tokens); a join's own words are dropped."""
    segments: list[tuple[str, list[str]]] = [("", [])]
    for token in tokens:
        if token.lower() in JOINS and segments[-1][1]:
            segments.append((token.lower(), []))
        elif token.lower() in JOINS:
            continue  # "and also", ", and": one join
        elif token not in (".", "!"):
            segments[-1][1].append(token)
    return [s for s in segments if s[1]]


def _shape(segment: list[str], after_be: bool) -> str:
    """What a segment after a join is: 'verb' (starts with one), 'clause' (its own subject and verb),
    'predicate' (after "is", several words), or 'value' (one more value of the fact before it)."""
    lowered = {w.lower() for w in segment}
    if lowered & POINTING_BACK:
        return "value"
    if opening_verb(segment) is not None:
        return "verb"
    if read_clause(_joined(segment)).verb_at > 0:
        return "clause"
    if after_be and sum(1 for w in segment if content_word(w.lower())) >= 2:
        return "predicate"
    return "value"


def _part(text: str, verb_written: str | None = None) -> Part:
    """A fact read: with `verb_written`, the verb it is known to open with (a fragment read alone can take
    "lives" for a noun)."""
    clause = read_clause(text)
    after = clause.words[clause.verb_at:] if clause.verb_at >= 0 else clause.words
    words = frozenset(w for w in (*clause.subject, *clause.predicate, *after) if content_word(w)) - {clause.verb}
    if verb_written is not None and verb_lemma(verb_written) != clause.verb:
        at = [w.lower() for w in clause.written].index(verb_written.lower())
        verb = verb_lemma(verb_written)
        words = frozenset(w for i, w in enumerate(clause.words) if content_word(w) and i != at)
        clause = replace(clause, verb=verb, verb_at=at, subject=clause.words[:at])
    kinds = frozenset(kind for kind, cues in KINDS.items()
                      if clause.verb in cues or words & cues or _role_after_be(clause) and kind == "work")
    return Part(text, words, clause.verb, clause.about, kinds)


def _role_after_be(clause) -> bool:
    """ "is a nurse", "is an engineer": a role, which a new job changes."""
    return clause.verb == "be" and clause.verb_at + 1 < len(clause.words) and \
        clause.words[clause.verb_at + 1] in ("a", "an")


def _joined(tokens: list[str]) -> str:
    text = " ".join(tokens)
    for before, after in ((" ,", ","), (" ;", ";"), (" 's", "'s"), (" .", ".")):
        text = text.replace(before, after)
    return text.strip(" ,;")


def _sentence(text: str) -> str:
    text = text.strip()
    return text[:1].upper() + text[1:] + ("" if text.endswith((".", "!", "?")) else ".")


def _scores(parts: list[Part], newer: str) -> tuple[list[float], list[bool]]:
    """How strongly the newer statement points at each part, and whether it says anything of it at all (shares
    its verb or a word)."""
    update = _part(newer)
    clause = read_clause(newer)
    verbs = set(clause.verbs) | {clause.verb}
    kinds = update.kinds | ({"place"} if clause.verb in MOVING_VERBS and "work" not in update.kinds else set())
    if clause.verb in TAKING_VERBS and not update.kinds:
        kinds |= {"work"}
    # The memory's subject ("user"), and words every part has, point at no part when the update says them.
    common = frozenset.intersection(*(part.words for part in parts)) | frozenset(parts[0].about.split())
    scores, touched = [], []
    for part in parts:
        shared = len(part.words & (update.words - common))
        same_verb = part.verb in verbs and part.verb != "be"
        # Its verb among the update's other words ("started playing the violin") counts as a shared word.
        shared += not same_verb and part.verb in update.words
        score = 2.0 * shared + (3.0 if same_verb else 0.0) + (1.0 if part.kinds & kinds else 0.0)
        if part.about == update.about or not update.about:
            score += 0.5
        elif clause.verb not in ENDING_VERBS:
            score -= 1.0  # another subject's fact ("while their partner lives in Milan")
        scores.append(score)
        touched.append(shared > 0 or same_verb)
    return scores, touched


def _changed(scores: list[float]) -> int | None:
    """Which part a newer statement changes, from its scores: the one sharing its verb or its words, else the
    one of the kind its words point at; None when nothing tells them apart."""
    best = max(scores)
    if best <= 0.5 or scores.count(best) > 1:
        return None
    return scores.index(best)


def survivors(older: str, newer: str) -> list[str]:
    """The facts of `older` that `newer` leaves standing, each a sentence of its own: the parts it neither
    changes nor restates. Empty when `older` states one fact, or when it cannot be told which fact changed
    (the whole memory is superseded, as before)."""
    parts = facts_of(older)
    if len(parts) < 2:
        return []
    scores, touched = _scores(parts, newer)
    changed = _changed(scores)
    if changed is None:
        return []
    return [part.text for index, part in enumerate(parts) if index != changed and not touched[index]]
