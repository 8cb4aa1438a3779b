"""Entity names read for alias matching: the comparable key, its variants (stem, initials, numeronym, spelling
neighbours) and the rule deciding whether two names of one category and scope are aliases, with its reason."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache

# Tokens that, added to a name, leave the thing it names unchanged ("Vue" / "Vue.js", "Mongo" / "MongoDB",
# "Acme" / "Acme Inc."): a suffix that is not one of these ("Java" / "JavaScript", "React" / "React Native")
# names something else.
NEUTRAL_SUFFIXES = frozenset({"js", "db", "sql", "io", "lang", "inc", "ltd", "llc", "corp", "hq", "official"})
SYMBOLS = {"+": "plus", "#": "sharp", "&": "and", "@": "at"}  # C, C++ and C# stay three names
STOPWORDS = frozenset({"of", "and", "the", "for", "a", "an", "de", "la"})
PERSON_CATEGORIES = ("person", "people", "user", "contact", "human", "individual", "employee", "author")
MIN_SPELLING_LENGTH = 7  # one edit apart counts as a spelling variant only in names at least this long
MIN_ACRONYM_LENGTH = 2
MAX_ACRONYM_LENGTH = 6


@dataclass(frozen=True)
class Name:
    """One entity name as the alias rules read it."""

    text: str
    key: str  # letters and digits only, lower case, symbols spelled out
    tokens: tuple[str, ...]  # the words, camel-case parts split ("JavaScript" -> java, script)
    stems: tuple[str, ...]  # the key without a neutral last word ("PostgreSQL": postgre, postgres)
    initials: str | None  # of two or more tokens (stopwords aside)
    numeronym: str | None  # "k8s" of "kubernetes"


@lru_cache(maxsize=1 << 18)
def read_name(text: str) -> Name:
    folded = _fold(text)
    words = re.findall(r"[A-Za-z][a-z]+|[A-Z]+(?![a-z])|[a-z]+|\d+|plus|sharp", _spell_symbols(folded))
    tokens = tuple(word.lower() for word in words)
    key = "".join(tokens)
    stems: tuple[str, ...] = ()
    if len(tokens) >= 2 and tokens[-1] in NEUTRAL_SUFFIXES and len(key) - len(tokens[-1]) >= 2:
        stems = (key[: -len(tokens[-1])],) + ((key[:-2],) if tokens[-1] == "sql" else ())
    content = [token for token in tokens if token not in STOPWORDS]
    initials = "".join(token[0] for token in content) if len(content) >= 2 else None
    numeronym = f"{key[0]}{len(key) - 2}{key[-1]}" if len(tokens) == 1 and key.isalpha() and len(key) >= 5 else None
    return Name(text, key, tokens, stems, initials, numeronym)


# How a name holds a blocking key: as its own key or stem (meets every holder), as its initials or numeronym
# (meets only names whose own key it is: two names with the same initials say nothing of each other), or as a
# one-letter deletion (meets the other deletions).
NAME, SHORT_FORM, DELETION = "name", "short", "deletion"


def blocking_keys(name: Name) -> list[tuple[str, str]]:
    """The (key, role) pairs under which a name meets its possible aliases: two names meet only if a rule could
    pair them (same key, a neutral suffix, initials or a numeronym written out, one edit apart)."""
    keys = [(name.key, NAME), *((stem, NAME) for stem in name.stems)]
    if name.initials and MIN_ACRONYM_LENGTH <= len(name.initials) <= MAX_ACRONYM_LENGTH:
        keys.append((name.initials, SHORT_FORM))
    if name.numeronym:
        keys.append((name.numeronym, SHORT_FORM))
    if len(name.tokens) >= 2 and name.tokens[-1].isalpha():  # "J. Smith" meets "John Smith"
        keys.append((name.tokens[0][0] + name.tokens[-1], NAME))
    if len(name.key) >= MIN_SPELLING_LENGTH:
        # Letters only: two names one digit apart are never a spelling variant ("Python 2" / "Python 3").
        key = name.key
        keys += [(f"{key[:i]}{key[i + 1:]}", DELETION) for i in range(len(key)) if not key[i].isdigit()]
        keys.append((key, DELETION))
    return keys


@dataclass(frozen=True)
class Evidence:
    """What the two entities' memories say: how many memories they share (of the smaller set), and how close
    the mean vectors of their memories are (None when either has no vector)."""

    shared: float = 0.0
    context: float | None = None


CONTEXT_SUPPORT = 0.6  # memories this close in meaning back a name rule that needs support
CONTEXT_VETO = 0.2  # memories this far apart overrule every rule but the same written name
SHARED_SUPPORT = 0.5


def alias_reason(a: Name, b: Name, category: str, evidence: Evidence) -> str | None:
    """Why `a` and `b` (same category and scope) name one thing, in words; None if they may not."""
    if a.key == b.key:
        return f"same name written differently ({a.text!r} / {b.text!r})"
    if evidence.context is not None and evidence.context < CONTEXT_VETO:
        return None
    supported = evidence.shared >= SHARED_SUPPORT or (evidence.context or 0.0) >= CONTEXT_SUPPORT
    person = _is_person(category)
    if not person and (b.key in a.stems or a.key in b.stems or set(a.stems) & set(b.stems)):
        return f"one name with a neutral suffix ({a.text!r} / {b.text!r})"
    if a.numeronym == b.key or b.numeronym == a.key:
        return f"numeronym ({a.text!r} / {b.text!r})"
    if supported and (_is_acronym(a, b) or _is_acronym(b, a)):
        return f"acronym, and their memories agree ({a.text!r} / {b.text!r})"
    if not person and _one_edit(a.key, b.key) and min(len(a.key), len(b.key)) >= MIN_SPELLING_LENGTH \
            and not _digits_differ(a.key, b.key):
        return f"spelling variant ({a.text!r} / {b.text!r})"
    if person and supported and _same_person(a, b):
        return f"same surname and initial, and their memories agree ({a.text!r} / {b.text!r})"
    return None


def canonical_order(name: Name, references: int) -> tuple:
    """Sort key for choosing a group's canonical: most referenced, then the longest written name."""
    return (-references, -len(name.text), name.text)


def _fold(text: str) -> str:
    if text.isascii():
        return text
    return "".join(ch for ch in unicodedata.normalize("NFKD", text) if not unicodedata.combining(ch))


def _spell_symbols(text: str) -> str:
    for symbol, word in SYMBOLS.items():
        text = text.replace(symbol, f" {word} ")
    return text


def _is_person(category: str) -> bool:
    lowered = (category or "").lower()
    return any(word in lowered for word in PERSON_CATEGORIES)


def _is_acronym(short: Name, long: Name) -> bool:
    return (long.initials is not None and short.key == long.initials and len(short.tokens) == 1
            and MIN_ACRONYM_LENGTH <= len(short.key) <= MAX_ACRONYM_LENGTH)


def _same_person(a: Name, b: Name) -> bool:
    """"J. Smith" and "John Smith": the same surname, and one first name is the other's initial."""
    if len(a.tokens) < 2 or len(b.tokens) < 2 or a.tokens[-1] != b.tokens[-1]:
        return False
    first_a, first_b = a.tokens[0], b.tokens[0]
    return (len(first_a) == 1 and first_b.startswith(first_a)) or (len(first_b) == 1 and first_a.startswith(first_b))


def _one_edit(a: str, b: str) -> bool:
    """Whether a and b are one insertion, deletion, substitution or swap of neighbours apart."""
    if a == b or abs(len(a) - len(b)) > 1:
        return False
    if len(a) == len(b):
        diff = [i for i, (x, y) in enumerate(zip(a, b)) if x != y]
        return len(diff) == 1 or (len(diff) == 2 and diff[1] == diff[0] + 1 and a[diff[0]] == b[diff[1]]
                                  and a[diff[1]] == b[diff[0]])
    shorter, longer = (a, b) if len(a) < len(b) else (b, a)
    i = next((i for i, (x, y) in enumerate(zip(shorter, longer)) if x != y), len(shorter))
    return shorter[i:] == longer[i + 1:]


def _digits_differ(a: str, b: str) -> bool:
    """"python2" / "python3", "ios16" / "ios17": versions are different things."""
    return re.sub(r"\D", "", a) != re.sub(r"\D", "", b)
