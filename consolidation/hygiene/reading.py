"""What reads a text (pure): its content terms, the values among them (numbers, names, dates, words of a closed
class of alternatives), its negation and the sides of its relations, as two memories' texts are compared."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from .facts import JOINER, Fact, _number as _number_tokens, _stem, _tokens, names_in, read_fact

# Words whose alternatives make different facts however close the rest: "staging" is not "production", "Monday"
# is not "Friday". Two memories each holding a different word of one class swap a value.
VALUE_CLASSES = {
    "environment": "production staging stage development dev test testing qa sandbox preview local remote",
    "platform": "ios android web mobile desktop mac macos windows linux",
    "day": "monday tuesday wednesday thursday friday saturday sunday weekday weekend today tomorrow yesterday "
           "tonight",
    "month": "january february march april may june july august september october november december jan feb mar "
             "apr jun jul aug sep sept oct nov dec",
    "part of day": "morning afternoon evening night noon midnight",
    # "weekly" and "week" share a stem, so only adverbs with stems of their own are here; "usually" or "often"
    # hedge a statement rather than give it a value.
    "frequency": "daily annually biweekly",
    "order": "before after",
    "position": "first last next previous",
    "timing": "early late",
    "age": "old new",
    "comparison": "more less most least higher lower faster slower bigger smaller larger shorter longer cheaper "
                  "up down",
    "state": "on off open closed enabled disabled",
    "visibility": "public private internal external",
    "mode": "manual automatic",
    "requirement": "required optional",
    "extreme": "minimum maximum",
    "sameness": "same different",
    "price": "free paid",
    "quantity": "all some none only",
    "role": "admin customer employee contractor guest owner",
    "tier": "frontend backend client server primary secondary",
    "access": "read write",
    "side": "left right",
    "direction": "north south east west",
    "person": "man woman boy girl male female",
    "colour": "red orange yellow green blue purple pink brown black white gray grey silver gold",
}
# Units are values only where they measure a number ("5 minutes" / "5 hours"); "deploy day" / "each week" is
# wording.
UNITS = frozenset("millisecond second minute hour day week month year percent gb mb kb tb km mile".split())
VALUE_CLASS_OF = {_stem(word): name for name, words in VALUE_CLASSES.items() for word in words.split()}
DIRECTIONS = ("UP", "DOWN")  # what "raised" / "cut" say of a value, as facts.py reads them
VALUE_CLASS_OF.update(dict.fromkeys(DIRECTIONS, "direction of change"))
WORD = re.compile(r"[A-Za-z][\w'’-]*")
# A number right after one of these labels a thing rather than measuring it: "note 517", "step 3", "room 12".
LABEL_WORDS = """
note item step number no id ticket issue task entry line page chapter section part room table batch case episode
order invoice record row question point rule topic detail
""".split()
# Codes: letters joined by hyphens to numbers ("INV-2026-0144", "Priority-2"): their numbers name things.
CODE = re.compile(r"\b[A-Za-z]{1,12}(?:-[A-Za-z0-9]+)*-\d[A-Za-z0-9]*(?:-[A-Za-z0-9]+)*\b")
DIGITS = re.compile(r"\d+")
LABELLED = re.compile(r"\b(?:%s)s?\s*(?:#|no\.|number)?\s*#?(\d+)\b" % "|".join(LABEL_WORDS), re.IGNORECASE)
EMPTY: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class Reading:
    """A text as the judge compares it: its content terms (stems and normalised numbers, in order), the names
    among them, the numbers that label rather than measure, negation, and the relation sides its key tags."""

    terms: tuple[str, ...]
    names: frozenset[str]
    labels: frozenset[str]  # numbers that name a thing ("note 517"): an identifier, not a value
    measures: frozenset[str]  # units right after a number ("5 minutes")
    negated: bool
    denied: frozenset[str]  # the terms a negation applies to ("ricotta, not béchamel": béchamel)
    sides: frozenset[str]  # "OVER:spaces", "FROM:boston", "TO:denver"
    fact: Fact
    text: str

    @property
    def content(self) -> frozenset[str]:
        return frozenset(self.terms)


@lru_cache(maxsize=1 << 16)
def read(text: str) -> Reading:
    """Read a text: cached, since a pair's two texts meet many other texts."""
    tokens = _tokens(text)
    fact = read_fact(text)
    terms = _terms(tokens)
    names = names_in(text) if not _headline(text) else frozenset(n for n in names_in(text) if _coded(n))
    labels = frozenset(_as_token(match.group(1)) for match in LABELLED.finditer(text)) | frozenset(
        _as_token(digits) for code in CODE.findall(text) for digits in DIGITS.findall(code))
    measures = frozenset(value for (kind, value, _), (before, _, _) in zip(tokens[1:], tokens)
                         if before == "num" and kind == "word" and value in UNITS)
    negated = sum(1 for kind, _, _ in tokens if kind == "not") % 2 == 1
    denied = _denied(tokens)
    sides = frozenset(term for term in fact.terms if ":" in term and term.split(":", 1)[0] in ("OVER", "FROM", "TO"))
    return Reading(terms, frozenset(n for n in names if n in terms) or EMPTY, labels or EMPTY, measures or EMPTY,
                   negated, denied or EMPTY, sides or EMPTY, fact, text)


def _terms(tokens) -> tuple[str, ...]:
    """Content terms in order, each once; a number written again is a term of its own ("1", "1#2": "priority 1
    within 1 hour" holds two ones), and a change's direction is one too ("cut in half" / "doubled")."""
    terms: dict[str, None] = {}
    for kind, value, _ in tokens:
        if kind == "word" or kind == "change" and value in DIRECTIONS:
            terms.setdefault(value)
        elif kind == "num":
            repeat, term = 1, value
            while term in terms:
                repeat += 1
                term = f"{value}#{repeat}"
            terms[term] = None
    return tuple(terms)


def _denied(tokens) -> frozenset[str]:
    """The first content term after each negation (a preference word between them is skipped: "does not like
    X" and "dislikes X" both deny X)."""
    denied = set()
    for index, (kind, _, _) in enumerate(tokens):
        if kind == "not":
            following = next((value for k, value, _ in tokens[index + 1:] if k in ("word", "num", "boundary")),
                             None)
            if following is not None and following not in ",;:.!?()":
                denied.add(following)
    return frozenset(denied)


def as_written(term: str) -> str:
    """A term without the mark of a repeated number."""
    return term.split("#", 1)[0]


def spelled(reading: Reading, terms) -> list[str]:
    """Terms as the text writes them ("PostgreSQL" for "postgresql", "twenty" for "20"), for reasons."""
    written = _written(reading.text)
    return [written.get(as_written(term), as_written(term)) for term in terms]


@lru_cache(maxsize=1 << 14)
def _written(text: str) -> dict[str, str]:
    """Each term of a text and the word that wrote it, in the text's own case where it can be found."""
    lowered = text.lower()
    written: dict[str, str] = {}
    for _, value, original in _tokens(text):
        if value not in written:
            at = lowered.find(original)
            written[value] = text[at:at + len(original)] if at >= 0 else original
    return written


def value_class(term: str, reading: Reading) -> str | None:
    """The class of alternatives a term belongs to in this text ("number", "name", "day", ...), or None for a
    plain word."""
    if term[0].isdigit() or ":" in term:
        return "number"  # a serial number ("note 517") too: another one is another note
    if JOINER in term:
        return "identifier"  # an address, a host, a one-letter name: another one is another thing
    if term in reading.measures:
        return "unit"
    if term in VALUE_CLASS_OF:
        return VALUE_CLASS_OF[term]
    if term in reading.names:
        return "name"
    return None


def _headline(text: str) -> bool:
    """Whether nearly every word after the first is capitalised (a title or headline): capitals then mark no
    names."""
    words = [w for w in WORD.findall(text)[1:] if len(w) > 3]
    return len(words) >= 3 and sum(w[0].isupper() for w in words) >= 0.75 * len(words)


def _as_token(digits: str) -> str:
    """A label's number as the tokens write it."""
    return _number_tokens(digits)[0][1]


def _coded(term: str) -> bool:
    return any(c.isdigit() for c in term)
