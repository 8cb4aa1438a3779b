"""Reading JSON from callers strictly: UTF-8 only, bounded nesting, finite numbers, strings the stores can hold."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator
from typing import Any

from .errors import InvalidInput

# Deeper than any body we accept needs; the check also keeps recursive code downstream far from Python's limit.
MAX_DEPTH = 32
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def parse_json(raw: bytes | str, field: str = "body") -> Any:
    """Decode and parse one JSON document; InvalidInput names `field`, or the top-level key holding a bad value."""
    text = decode_utf8(raw, field) if isinstance(raw, bytes) else raw
    try:
        value = json.loads(text, parse_constant=_refuse_constant, object_pairs_hook=_one_value_per_key)
    except RecursionError:
        raise InvalidInput(field, f"is nested too deeply (at most {MAX_DEPTH} levels)") from None
    except RepeatedKey as exc:
        raise InvalidInput(field, f"gives the key {exc.key[:100]!r} twice in one object; give it once") from None
    except json.JSONDecodeError as exc:
        raise InvalidInput(field, f"is not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})") from None
    except ValueError as exc:  # an integer of more digits than Python converts, or NaN / Infinity
        raise InvalidInput(field, f"holds a number that cannot be accepted ({exc})") from None
    check_value(value, field)
    return value


def decode_utf8(raw: bytes, field: str) -> str:
    """Strict UTF-8: invalid bytes are refused, never replaced by U+FFFD."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidInput(field, f"is not valid UTF-8 (byte {exc.start} is {raw[exc.start:exc.start + 1]!r})") from None


def check_value(value: Any, field: str = "body") -> None:
    """Refuse what no store can hold exactly: nesting beyond MAX_DEPTH, integers beyond int64, non-finite
    floats, and strings with a NUL (FalkorDB cannot take one) or a lone surrogate (not encodable as UTF-8)."""
    for item, depth, where in _walk(value, field, settled=_plain_numbers):
        if depth > MAX_DEPTH:
            raise InvalidInput(where, f"is nested too deeply (at most {MAX_DEPTH} levels)")
        if isinstance(item, str):
            check_text(item, where)
        elif isinstance(item, bool):
            continue
        elif isinstance(item, int) and not INT64_MIN <= item <= INT64_MAX:
            raise InvalidInput(where, "holds an integer beyond the 64-bit range")
        elif isinstance(item, float) and not math.isfinite(item):
            raise InvalidInput(where, "holds a number too large to store (or not a number)")


def check_text(text: str, field: str) -> None:
    if "\x00" in text:
        raise InvalidInput(field, "contains a NUL character, which cannot be stored")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidInput(field, f"contains a lone surrogate ({text[exc.start]!r}); send valid Unicode") from None


def _plain_numbers(items: list, depth: int) -> bool:
    """Whether a list holds only floats or only integers, every one of which check_value would let through: an
    embedding's 384 numbers are checked at once (item by item they took 80 % of reading an import). Anything
    else is walked item by item, so that what is refused is found and named as before."""
    if depth >= MAX_DEPTH or not items:
        return False
    kinds = set(map(type, items))
    if kinds == {float}:  # JSON has no NaN (refused when parsed); a number too large to hold becomes infinite
        return -math.inf < min(items) and max(items) < math.inf
    if kinds == {int}:  # bool is a type of its own
        return INT64_MIN <= min(items) and max(items) <= INT64_MAX
    return False


def _walk(value: Any, field: str, settled: Callable[[list, int], bool]) -> Iterator[tuple[Any, int, str]]:
    """Every value and key with its depth and the top-level key it sits under; iterative, so depth cannot hurt.
    The items of a list `settled` accepts are not walked."""
    stack = [(value, 0, field)]
    while stack:
        item, depth, where = stack.pop()
        yield item, depth, where
        if isinstance(item, dict):
            for key, child in item.items():
                name = key if depth == 0 and isinstance(key, str) and printable_name(key) else where
                yield key, depth + 1, where
                stack.append((child, depth + 1, name))
        elif isinstance(item, list) and not settled(item, depth):
            stack.extend((child, depth + 1, where) for child in item)


def printable_name(key: str) -> bool:
    """Whether a key is safe to echo back as the name of the field in an error."""
    return len(key) <= 100 and "\x00" not in key and key.isprintable() and _encodable(key)


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


class RepeatedKey(Exception):
    def __init__(self, key: str):
        super().__init__(key)
        self.key = key


def _one_value_per_key(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object whose keys are all different: with `{"dry_run": true, "dry_run": false}` the last would win
    silently here, where another reader (a proxy, a log) takes the first."""
    value = dict(pairs)
    if len(value) < len(pairs):
        seen: set[str] = set()
        raise RepeatedKey(next(key for key, _ in pairs if key in seen or seen.add(key)))
    return value


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")
