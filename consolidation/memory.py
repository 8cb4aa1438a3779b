"""Validating a memory as a caller sends it (API body or JSONL line) into the fields the graph stores."""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import numpy as np

from .errors import InvalidInput
from .scoring import relevance_scores
from .timeutil import SECONDS_PER_DAY, TimeOutOfRange, parse_iso, to_iso

TYPE_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,63}$")
MAX_TAGS, MAX_TAG_CHARS = 50, 100
FUTURE_TOLERANCE = timedelta(days=1)
# The largest whole number every JSON reader keeps exactly; far below int64, so adding uses to it cannot wrap.
MAX_COUNT = 2**53 - 1
# A stable namespace so that importing the same line twice gives the same id (imports are idempotent).
IMPORT_NAMESPACE = uuid.UUID("6f1c1b8e-3a52-4b0e-9c57-2f4e7d1a9b33")
API_FIELDS = frozenset({"id", "content", "type", "importance", "confidence", "tags", "timestamp", "last_accessed",
                        "access_count", "protected", "protected_reason", "embedding"})
IMPORT_FIELDS = API_FIELDS | {"relevance_score", "archived", "archived_at"}


@dataclass(frozen=True)
class NewMemory:
    """A validated memory: the graph properties and, if the caller sent one, its embedding."""

    properties: dict[str, Any]
    embedding: np.ndarray | None


def parse_memory(body: Any, *, vector_size: int, max_content_chars: int, now: datetime,
                 importing: bool = False) -> NewMemory:
    """Check every field and fill defaults; InvalidInput names the first field that is wrong."""
    if not isinstance(body, dict):
        raise InvalidInput("body", "must be a JSON object")
    allowed = IMPORT_FIELDS if importing else API_FIELDS
    unknown = sorted(set(body) - allowed)
    if unknown:
        raise InvalidInput(unknown[0], f"is not a memory field (accepted: {', '.join(sorted(allowed))})")
    content = _content(body.get("content"), max_content_chars)
    timestamp = _time(body, "timestamp", now) or now
    last_accessed = _time(body, "last_accessed", now) or timestamp
    memory_type = _type(body.get("type", "Memory"))
    archived_at = _time(body, "archived_at", now)
    properties = {
        "id": _id(body.get("id")) or str(uuid.uuid4()),
        "content": content,
        "type": memory_type,
        "importance": _fraction(body, "importance", 0.5),
        "confidence": _fraction(body, "confidence", 0.5),
        "tags": _tags(body.get("tags", [])),
        "timestamp": to_iso(timestamp),
        "last_accessed": to_iso(last_accessed),
        "access_count": _count(body.get("access_count", 0)),
        "protected": _flag(body, "protected"),
        "protected_reason": _optional_text(body, "protected_reason"),
        "archived": _flag(body, "archived"),
        "archived_at": to_iso(archived_at) if archived_at else None,
    }
    properties["relevance_score"] = (
        _fraction(body, "relevance_score", 0.0) if body.get("relevance_score") is not None
        else initial_relevance(properties, timestamp, last_accessed, now)
    )
    return NewMemory(properties, _embedding(body.get("embedding"), vector_size))


def initial_relevance(properties: dict[str, Any], created: datetime, accessed: datetime, now: datetime) -> float:
    """A new memory's score by the decay formula at `now`, with no relationships yet."""
    score = relevance_scores(
        age_days=np.array([max(0.0, (now - created).total_seconds() / SECONDS_PER_DAY)]),
        days_since_access=np.array([max(0.0, (now - accessed).total_seconds() / SECONDS_PER_DAY)]),
        relationship_counts=np.zeros(1),
        importance=np.array([properties["importance"]]),
        confidence=np.array([properties["confidence"]]),
    )[0]
    return round(float(score), 6)


def parse_memory_id(value: str) -> str:
    checked = _id(value)
    if checked is None:
        raise InvalidInput("id", "is required")
    return checked


def parse_uuid(value: Any, field: str) -> str:
    """A UUID in its canonical 36-character spelling (either case), returned in lower case."""
    if not isinstance(value, str) or len(value) != 36:
        raise InvalidInput(field, f"must be a UUID like 5f0c6f7e-0d1b-4c9e-9a51-6f7d1f2e3a4b, got {_shown(value)}")
    try:
        parsed = str(uuid.UUID(value))
    except ValueError:
        parsed = None
    if parsed != value.lower():
        raise InvalidInput(field, f"must be a UUID like 5f0c6f7e-0d1b-4c9e-9a51-6f7d1f2e3a4b, got {_shown(value)}")
    return parsed


def _id(value: Any) -> str | None:
    return None if value is None else parse_uuid(value, "id")


def import_id(body: dict[str, Any]) -> str:
    """The id of an imported line without one, derived from the line so importing it twice changes nothing."""
    key = f"{body.get('type', 'Memory')}\n{body.get('timestamp') or ''}\n{body.get('content')}"
    return str(uuid.uuid5(IMPORT_NAMESPACE, key))


def _content(value: Any, max_chars: int) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput("content", "is required and must be a non-empty string")
    if len(value) > max_chars:
        raise InvalidInput("content", f"has {len(value)} characters; at most {max_chars} are accepted")
    return value


def _type(value: Any) -> str:
    if not isinstance(value, str) or not TYPE_NAME.match(value):
        raise InvalidInput("type", "must be a name of letters, digits, '_' or '-' (at most 64), e.g. Decision")
    if value == "MetaPattern":
        raise InvalidInput("type", "MetaPattern is reserved for cluster summaries")
    return value


def _fraction(body: dict, name: str, default: float) -> float:
    value = body.get(name, default)
    if value is None:
        return default
    # Compared as given: a huge integer is never converted to a float (that would overflow, not refuse).
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        raise InvalidInput(name, f"must be a number from 0 to 1, got {_shown(value)}")
    return graph_float(value)


def graph_float(value: float) -> float:
    """The number as FalkorDB reads it back: it stores doubles exactly but reports 15 significant digits, so
    keeping those is what lets every later read return the value accepted."""
    return float(f"{value:.15g}")


def _count(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_COUNT:
        raise InvalidInput("access_count", f"must be a whole number from 0 to {MAX_COUNT}, got {_shown(value)}")
    return value


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _flag(body: dict, name: str) -> bool:
    value = body.get(name, False)
    if not isinstance(value, bool):
        raise InvalidInput(name, "must be true or false")
    return value


def _optional_text(body: dict, name: str) -> str | None:
    value = body.get(name)
    if value is not None and (not isinstance(value, str) or len(value) > 500):
        raise InvalidInput(name, "must be a string of at most 500 characters")
    return value


def _tags(value: Any) -> list[str]:
    if not isinstance(value, list) or len(value) > MAX_TAGS:
        raise InvalidInput("tags", f"must be a list of at most {MAX_TAGS} strings")
    for tag in value:
        if not isinstance(tag, str) or not tag or len(tag) > MAX_TAG_CHARS:
            raise InvalidInput("tags", f"each tag must be a non-empty string of at most {MAX_TAG_CHARS} characters")
    return list(value)


def _time(body: dict, name: str, now: datetime) -> datetime | None:
    value = body.get(name)
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidInput(name, "must be an ISO-8601 time string, e.g. 2026-01-31T12:00:00Z")
    try:
        moment = parse_iso(value)
    except TimeOutOfRange as exc:
        raise InvalidInput(name, f"{value[:64]!r}: {exc}") from None
    except ValueError:
        raise InvalidInput(name, f"is not an ISO-8601 time: {value[:64]!r}") from None
    if moment > now + FUTURE_TOLERANCE:
        raise InvalidInput(name, f"is in the future: {value}")
    return moment


def _embedding(value: Any, vector_size: int) -> np.ndarray | None:
    if value is None:
        return None
    if not isinstance(value, list) or len(value) != vector_size:
        got = f"{len(value)} values" if isinstance(value, list) else type(value).__name__
        raise InvalidInput("embedding", f"must be a list of {vector_size} numbers (VECTOR_SIZE), got {got}")
    if not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in value):
        raise InvalidInput("embedding", "must contain only numbers")
    try:
        vector = np.asarray(value, dtype=np.float64)
    except OverflowError:
        raise InvalidInput("embedding", "holds a number beyond the float32 range") from None
    # Vectors are stored as float32: a value that would become infinity, or round to zero, is refused rather
    # than silently changed.
    with np.errstate(over="ignore", under="ignore"):
        stored = vector.astype(np.float32)
    changed = ~np.isfinite(stored) | ((stored == 0) & (vector != 0))
    if changed.any():
        position = int(np.flatnonzero(changed)[0])
        raise InvalidInput("embedding", f"value {position} ({_shown(value[position])}) is outside the float32 range")
    if not np.any(vector):
        raise InvalidInput("embedding", "must not be all zeros (it has no direction)")
    # Normalised in float64: Qdrant's cosine distance keeps the unit vector, and a float32 norm of large values
    # would overflow.
    return (vector / np.linalg.norm(vector)).astype(np.float32)
