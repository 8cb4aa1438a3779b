"""Whole identifiers in text (an e-mail, a domain, a name, a number), as a purge finds them (pure)."""

from __future__ import annotations

import re
import unicodedata

from .errors import InvalidInput

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
    # Spaces inside a name match any run of whitespace ("Dana  Smith" is "Dana Smith").
    body = r"\s+".join(re.escape(part) for part in value.split())
    return re.compile(_BEFORE + body + _AFTER)


def holds(text: str, pattern: re.Pattern[str]) -> bool:
    return pattern.search(normalised(text)) is not None


def redacted(text: str, pattern: re.Pattern[str], mark: str = "[erased]") -> str:
    """The text with every whole occurrence replaced by `mark`: as written where case alone differs, else the
    whole text normalised (case folded) to find it."""
    as_written = re.compile(pattern.pattern, re.IGNORECASE).sub(mark, text)
    return as_written if not holds(as_written, pattern) else pattern.sub(mark, normalised(text))
