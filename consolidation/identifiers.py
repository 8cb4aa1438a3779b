"""Whole identifiers in text (an e-mail, a domain, a name, a number), as a purge finds them, which matches are
identifiers at all, and the keyed digest a purge's record keeps instead of the match (pure)."""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import unicodedata
from collections.abc import Iterable
from typing import Any

from .errors import InvalidInput
from .hygiene.compound import facts_of
from .hygiene.facts import IDENTIFIER_PARTS, JOINER, STOPWORDS, content_words

MAX_IDENTIFIER_CHARS = 256
# Characters that continue an identifier: "dana@x.io" inside "adana@x.io" or "dana@x.io.uk" is part of a
# longer one. A dot, hyphen, plus or apostrophe continues it only when a letter or digit follows ("dana@x.io."
# ends a sentence; "555-1234-9" is another number), except a possessive ("Dana Smith's car" holds the name).
_BEFORE = r"(?<![\w@])(?<![\w][.\-+'’])"
_AFTER = r"(?![\w@])(?![.\-+][\w])(?!['’](?!s\b)[\w])"


def normalised(text: str) -> str:
    """Text as identifiers are compared: Unicode compatibility forms folded (ｄａｎａ = dana) and case folded."""
    return unicodedata.normalize("NFKC", text).casefold()


def identifier_pattern(identifier: str) -> re.Pattern[str]:
    """A pattern finding `identifier` in normalised text where it stands whole, never inside a longer one."""
    value = normalised(identifier).strip()
    if not value:
        raise InvalidInput("match", "must name an identifier (not blank)")
    if len(value) > MAX_IDENTIFIER_CHARS:
        raise InvalidInput("match", f"must be at most {MAX_IDENTIFIER_CHARS} characters")
    if not any(c.isalnum() for c in value):
        raise InvalidInput("match", "must contain a letter or a digit")
    # Spaces inside a name match any run of whitespace ("Dana  Smith" is "Dana Smith"); an address's separators
    # match the letter dedup's reasons join its parts with too ("danaˍxˍio"), so an erase finds it there.
    body = r"\s+".join(_spelled(part) for part in value.split())
    return re.compile(_BEFORE + body + _AFTER)


# What a purge takes as an identifier without being told how many memories hold it: a match that names one
# person, address or account, not a word that many texts share.
IDENTIFIER_KINDS = (
    ("e-mail", re.compile(r"[^\s@]+@[^\s@]+\.[^\s@]+")),
    ("url", re.compile(r"(?:https?://|www\.)\S+")),
    ("handle", re.compile(r"@\w{2,}")),
    ("domain", re.compile(r"(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.)+[a-z]{2,}")),
    ("phone number", re.compile(r"\+?\(?\d[\d\s().-]*\d")),  # with MIN_PHONE_DIGITS (below)
    ("number", re.compile(r"\d[\d.,/:-]*\d")),  # with MIN_NUMBER_DIGITS
    ("code", re.compile(r"(?=\S*\d)(?=\S*[^\W\d_])[\w.-]{4,}")),  # letters and digits in one token
)
MIN_NUMBER_DIGITS = 4
MIN_PHONE_DIGITS = 7
NAME_WORD = re.compile(r"[^\W\d_][^\W\d_'’.-]*(?:['’-][^\W\d_]+)*")
MAX_NAME_WORDS = 4


def identifier_kind(match: str) -> str | None:
    """What kind of identifier the match is (e-mail, url, handle, domain, phone number, number, code, name), or
    None when it is not one: a number needs MIN_NUMBER_DIGITS digits (a phone number MIN_PHONE_DIGITS, with its
    separators), a name is one to MAX_NAME_WORDS words each written with a capital first letter (an initial
    like "J." too, beside a word), none of them a function word of English ("The", "In" and "A" are not)."""
    value = " ".join(unicodedata.normalize("NFKC", match).split())
    digits = sum(c.isdigit() for c in value)
    for kind, rule in IDENTIFIER_KINDS:
        if rule.fullmatch(value.casefold() if kind == "domain" else value):
            if kind == "number" and digits < MIN_NUMBER_DIGITS or kind == "phone number" and (
                    digits < MIN_PHONE_DIGITS or not re.search(r"[\s().+-]", value)):
                continue
            return kind
    return "name" if _is_name(value.split()) else None


def _is_name(words: list[str]) -> bool:
    initials = [w for w in words if len(w) == 2 and w[0].isupper() and w[1] == "."]
    named = [w for w in words if w not in initials]
    return (0 < len(named) and len(words) <= MAX_NAME_WORDS
            and all(NAME_WORD.fullmatch(w) and w[0].isupper() and len(w) >= 2 and w.casefold() not in STOPWORDS
                    for w in named))


# Beyond the identifier, a text that only says what it is ("Customer email is ...") has a word or two; one that
# tells more ("Escalate outages to ... before noon on weekdays") has more than this many content words.
MOST_NAMING_WORDS = 3


def says_more(text: str, pattern: re.Pattern[str]) -> bool:
    """Whether a text holding the identifier states something besides it: a fact of its own in which the
    identifier does not stand ("Dana's number is 555-1234 and she hikes"), another identifier ("moved from
    a@x.io to b@x.io"), or more than MOST_NAMING_WORDS content words. Such a memory can be redacted instead of
    deleted."""
    if any(not holds(part.text, pattern) for part in facts_of(text)):
        return True
    rest = pattern.sub(" ", normalised(text))
    if len(content_words(rest)) > MOST_NAMING_WORDS:
        return True
    return any(identifier_kind(token.strip(".,;:!?()[]\"'")) not in (None, "name") for token in rest.split())


# --- the digest a request record keeps ------------------------------------------------------------------------

def comparable(identifier: str) -> str:
    """The identifier as its digest is taken: normalised, and each run of whitespace one space."""
    return " ".join(normalised(identifier).split())


def digest(identifier: str, key: bytes) -> str:
    """A keyed hash of the identifier: a record can say which identifier it was about without holding it (a
    plain hash of a phone number is undone by trying every number)."""
    return hmac.new(key, comparable(identifier).encode(), hashlib.sha256).hexdigest()


def recovered(texts: Iterable[str], identifier_digest: str, length: int, key: bytes) -> str | None:
    """The identifier whose digest (of `length` characters as `comparable` writes it) is `identifier_digest`,
    found again in texts that hold it; None when none does (what needed it was done)."""
    for text in texts:
        written = comparable(text)
        for start in range(len(written) - length + 1):
            candidate = written[start:start + length]
            if hmac.compare_digest(digest(candidate, key), identifier_digest):
                return candidate
    return None


def holds(text: str, pattern: re.Pattern[str]) -> bool:
    return pattern.search(normalised(text)) is not None


REDACTED_MARK = "[redacted]"


def redacted(text: str, pattern: re.Pattern[str], mark: str = "[erased]") -> str:
    """The text with every whole occurrence replaced by `mark`: as written where case alone differs, else the
    whole text normalised (case folded) to find it."""
    as_written = re.compile(pattern.pattern, re.IGNORECASE).sub(mark, text)
    return as_written if not holds(as_written, pattern) else pattern.sub(mark, normalised(text))


def _spelled(part: str) -> str:
    return "".join(f"(?:{re.escape(c)}|{JOINER})" if IDENTIFIER_PARTS.fullmatch(c) else re.escape(c) for c in part)


def scrubbed(value: Any, pattern: re.Pattern[str]) -> Any:
    """A stored value with the identifier redacted wherever it stands: in a string, in the strings of a list,
    and inside JSON kept as a string (where a non-ASCII identifier is written escaped); the value itself when
    nothing holds it."""
    if isinstance(value, list):
        scrubbed_items = [scrubbed(item, pattern) for item in value]
        return scrubbed_items if any(a is not b for a, b in zip(scrubbed_items, value)) else value
    if not isinstance(value, str):
        return value
    if value[:1] in ("{", "[") and value[-1:] in ("}", "]"):
        try:
            decoded = json.loads(value)
        except ValueError:
            decoded = None
        if isinstance(decoded, (dict, list)):
            cleaned = _scrubbed_json(decoded, pattern)
            return value if cleaned == decoded else json.dumps(cleaned)
    return redacted(value, pattern) if holds(value, pattern) else value


def _scrubbed_json(value: Any, pattern: re.Pattern[str]) -> Any:
    if isinstance(value, dict):
        return {key: _scrubbed_json(item, pattern) for key, item in value.items()}
    if isinstance(value, list):
        return [_scrubbed_json(item, pattern) for item in value]
    return scrubbed(value, pattern) if isinstance(value, str) else value
