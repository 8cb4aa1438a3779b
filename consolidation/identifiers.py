"""Whole identifiers in text (an e-mail, a domain, a name, a number), as a purge finds them (pure)."""

from __future__ import annotations

import json
import re
import unicodedata
from typing import Any

from .errors import InvalidInput
from .hygiene.facts import IDENTIFIER_PARTS, JOINER

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


def holds(text: str, pattern: re.Pattern[str]) -> bool:
    return pattern.search(normalised(text)) is not None


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
