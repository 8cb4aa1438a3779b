"""Validating a memory as a caller sends it (API body or JSONL line) into the fields the graph stores."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Annotated, Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from .errors import InvalidInput
from .scopes import check_scope_value
from .scoring import NOT_CURRENT_RELEVANCE, relevance_scores
from .timeutil import SECONDS_PER_DAY, TimeOutOfRange, parse_iso, to_iso
from .validation import checked

TYPE_PATTERN = r"^[A-Za-z][A-Za-z0-9_-]{0,63}$"
MAX_TAGS, MAX_TAG_CHARS, MAX_REASON_CHARS = 50, 100, 500
FUTURE_TOLERANCE = timedelta(days=1)
# The largest whole number every JSON reader keeps exactly; far below int64, so adding uses to it cannot wrap.
MAX_COUNT = 2**53 - 1
# A stable namespace so that importing the same line twice gives the same id (imports are idempotent).
IMPORT_NAMESPACE = uuid.UUID("6f1c1b8e-3a52-4b0e-9c57-2f4e7d1a9b33")

Fraction = Annotated[float, Field(ge=0, le=1)]
Time = Annotated[str, Field(description="ISO-8601, e.g. 2026-01-31T12:00:00Z (no zone = UTC); years 1-9999 in UTC, "
                                        "at most a day ahead of the server's clock")]
Tag = Annotated[str, Field(min_length=1, max_length=MAX_TAG_CHARS)]


class MemoryFields(BaseModel):
    """A memory as POST /memory takes it: the types and bounds of every field (the rules that depend on the
    settings or the clock are checked by parse_memory). When CONSOLIDATION_SCOPE_PROPERTIES names scope
    properties (user_id, agent_id, ...), each may also be given as a top-level string."""

    # Strict: a value must have its JSON type as sent ("1" is not 1, 1 is not true), as stored values are exact.
    model_config = ConfigDict(extra="forbid", strict=True, title="MemoryInput")

    content: str = Field(min_length=1, description="not blank; at most MAX_CONTENT_CHARS characters, no NUL")
    id: str | None = Field(None, description="a UUID; derived or random when omitted",
                           json_schema_extra={"format": "uuid"})
    type: str = Field("Memory", pattern=TYPE_PATTERN, description="MetaPattern is reserved for cluster summaries")
    importance: Fraction | None = 0.5
    confidence: Fraction | None = 0.5
    tags: list[Tag] = Field(default_factory=list, max_length=MAX_TAGS)
    timestamp: Time | None = None
    last_accessed: Time | None = None
    access_count: int = Field(0, ge=0, le=MAX_COUNT)
    protected: bool = False
    protected_reason: str | None = Field(None, max_length=MAX_REASON_CHARS)
    embedding: list[float] | None = Field(None, description="VECTOR_SIZE numbers, not all zero, within float32")


class ImportedMemoryFields(MemoryFields):
    """A JSONL line of POST /memory/import: a memory, plus what data from another store may carry."""

    model_config = ConfigDict(title="ImportedMemory")

    relevance_score: Fraction | None = None
    archived: bool = False
    archived_at: Time | None = None


EMBEDDED_BY = "embedded_by"
BUILT_IN_EMBEDDER = "built-in"


@dataclass(frozen=True)
class NewMemory:
    """A validated memory: the graph properties and, if the caller sent one, its embedding."""

    properties: dict[str, Any]
    embedding: np.ndarray | None


# The embedding field's own rule (strict: numbers, not booleans or numeric strings), applied when a line is read.
_EMBEDDING_NUMBERS = TypeAdapter(MemoryFields.model_fields["embedding"].annotation, config=ConfigDict(strict=True))


def parse_memory(body: Any, *, vector_size: int, max_content_chars: int, now: datetime,
                 importing: bool = False, scope_properties: tuple[str, ...] = ()) -> NewMemory:
    """Check every field and fill defaults; InvalidInput names the first field that is wrong."""
    body, scope = _scope_of(body, scope_properties)
    body, packed = _packed_embedding_of(body)
    fields = checked(ImportedMemoryFields if importing else MemoryFields, body, also_accepted=scope_properties)
    content = _content(fields.content, max_content_chars)
    timestamp = _time(fields.timestamp, "timestamp", now) or now
    last_accessed = _time(fields.last_accessed, "last_accessed", now) or timestamp
    memory_type = _type(fields.type)
    archived_at = _time(getattr(fields, "archived_at", None), "archived_at", now)
    properties = {
        "id": _id(fields.id) or str(uuid.uuid4()),
        "content": content,
        "type": memory_type,
        "importance": graph_float(0.5 if fields.importance is None else fields.importance),
        "confidence": graph_float(0.5 if fields.confidence is None else fields.confidence),
        "tags": list(fields.tags),
        "timestamp": to_iso(timestamp),
        "last_accessed": to_iso(last_accessed),
        "access_count": fields.access_count,
        "protected": fields.protected,
        "protected_reason": fields.protected_reason,
        "archived": getattr(fields, "archived", False),
        "archived_at": to_iso(archived_at) if archived_at else None,
        **scope,
    }
    relevance = getattr(fields, "relevance_score", None)
    properties["relevance_score"] = (
        graph_float(relevance) if relevance is not None
        else initial_relevance(properties, timestamp, last_accessed, now)
    )
    if properties["archived"]:  # an archived import is no longer current: its score capped (scoring.as_stored)
        properties["relevance_score"] = min(properties["relevance_score"], NOT_CURRENT_RELEVANCE)
    embedding = parse_embedding(fields.embedding if packed is None else packed, vector_size)
    # Whose vector it is: the service embedded it (which model: embedding_model, set where it embeds).
    properties[EMBEDDED_BY] = BUILT_IN_EMBEDDER if embedding is None else None
    return NewMemory(properties, embedding)


def _scope_of(body: Any, scope_properties: tuple[str, ...]) -> tuple[Any, dict[str, str]]:
    """The body without its scope properties, and those (each a string; a missing one stays missing)."""
    if not scope_properties or not isinstance(body, dict):
        return body, {}
    scope = {name: body[name] for name in scope_properties if name in body}
    for name, value in scope.items():
        check_scope_value(name, value)
    return {k: v for k, v in body.items() if k not in scope}, scope


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


def import_id(body: dict[str, Any], scope_properties: tuple[str, ...] = ()) -> str:
    """The id of an imported line without one, derived from the line so importing it twice changes nothing.

    The line's scope is part of it: two users' identical lines are two memories. A line without scope values
    keeps the id it had before scopes existed, so re-importing an old file still finds its memories."""
    key = f"{body.get('type', 'Memory')}\n{body.get('timestamp') or ''}\n{body.get('content')}"
    if any(name in body for name in scope_properties):
        key += "\n" + json.dumps([body.get(name) for name in scope_properties])
    return str(uuid.uuid5(IMPORT_NAMESPACE, key))


def _content(value: str, max_chars: int) -> str:
    if not value.strip():
        raise InvalidInput("content", "is required and must be a non-empty string")
    if len(value) > max_chars:
        raise InvalidInput("content", f"has {len(value)} characters; at most {max_chars} are accepted")
    return value


def _type(value: str) -> str:
    if value == "MetaPattern":
        raise InvalidInput("type", "MetaPattern is reserved for cluster summaries")
    return value


def graph_float(value: float) -> float:
    """The number as FalkorDB reads it back: it stores doubles exactly but reports 15 significant digits, so
    keeping those is what lets every later read return the value accepted."""
    return float(f"{value:.15g}")


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _time(value: str | None, name: str, now: datetime) -> datetime | None:
    if value is None:
        return None
    try:
        moment = parse_iso(value)
    except TimeOutOfRange as exc:
        raise InvalidInput(name, f"{value[:64]!r}: {exc}") from None
    except ValueError:
        raise InvalidInput(name, f"is not an ISO-8601 time: {value[:64]!r}") from None
    if moment > now + FUTURE_TOLERANCE:
        raise InvalidInput(name, f"is in the future: {value}")
    return moment


def packed_embedding(value: Any) -> Any:
    """An embedding as read from a JSON line, packed into float64 when it is a list of numbers: an import holds
    every line it read until it has checked them all, and 384 Python floats take four times the memory (at 100k
    lines 1.3 GB, whose fresh pages stalled the process for up to 0.4 s at a time). Anything else is returned
    as it is, for the memory's validation to name what is wrong with it."""
    if not isinstance(value, list):
        return value
    try:
        _EMBEDDING_NUMBERS.validate_python(value)
    except ValidationError:
        return value
    return np.array(value, dtype=np.float64)


def _packed_embedding_of(body: Any) -> tuple[Any, np.ndarray | None]:
    """The body without an embedding packed when it was read (checked as numbers then), and that embedding."""
    if not isinstance(body, dict) or not isinstance(body.get("embedding"), np.ndarray):
        return body, None
    return {key: value for key, value in body.items() if key != "embedding"}, body["embedding"]


def parse_embedding(value: list[float] | np.ndarray | None, vector_size: int) -> np.ndarray | None:
    """The embedding as stored: float32, of unit length. One array is made (an import checks 100k of these, and
    each temporary array is an allocation the process's other threads wait on)."""
    if value is None:
        return None
    if len(value) != vector_size:
        raise InvalidInput("embedding",
                           f"must be a list of {vector_size} numbers (VECTOR_SIZE), got {len(value)} values")
    vector = np.asarray(value, dtype=np.float64)
    stored = np.empty(vector_size, dtype=np.float32)
    # Vectors are stored as float32: a value that would become infinity, or round to zero, is refused rather
    # than silently changed.
    with np.errstate(over="ignore", under="ignore"):
        np.copyto(stored, vector, casting="same_kind")
    if not np.isfinite([stored.max(), stored.min()]).all() or np.count_nonzero(stored) != np.count_nonzero(vector):
        position = int(np.flatnonzero(~np.isfinite(stored) | ((stored == 0) & (vector != 0)))[0])
        shown = value[position] if isinstance(value, list) else value[position].item()
        raise InvalidInput("embedding", f"value {position} ({_shown(shown)}) is outside the float32 range")
    if not stored.any():
        raise InvalidInput("embedding", "must not be all zeros (it has no direction)")
    # Normalised in float64 (the norm of large float32 values would overflow): Qdrant's cosine distance keeps
    # the unit vector.
    np.divide(vector, np.sqrt(vector @ vector), out=stored, casting="same_kind")
    return stored
