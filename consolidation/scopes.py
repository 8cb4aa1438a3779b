"""Scopes: the memory properties (user_id, agent_id, ...) that partition memories; no task works across two."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .errors import Forbidden, InvalidInput

MAX_VALUE_CHARS = 256
TIME_CHARS = 19  # "2026-06-01T12:00:00": times compared to the second, as text (ISO-8601 in UTC orders as time)
Scope = Mapping[str, Any]  # a value for each scope property: one scope (a scoped token is bound to one)


class Scoping:
    """How memories are partitioned: by the values of these properties (none: all memories are one scope);
    `only`, when set, limits every read to the one scope with those values (None: without the property), for a
    run of one scope."""

    def __init__(self, properties: Sequence[str] = (), only: Mapping[str, str | None] | None = None,
                 until: str | None = None):
        self.properties = tuple(properties)
        self.only = dict(only) if only else None
        # A run as of a time reads only the memories stored by then (their timestamp, UTC, to the second).
        self.until = until

    def within(self, values: Any) -> Scoping:
        """This scoping limited to one scope, named by a value for every scope property."""
        if not self.properties:
            raise InvalidInput("scope", "no scopes are configured (CONSOLIDATION_SCOPE_PROPERTIES is empty)")
        if not isinstance(values, dict) or set(values) != set(self.properties):
            raise InvalidInput("scope", f"must be an object with exactly the scope properties "
                                        f"{', '.join(self.properties)}")
        for name, value in values.items():
            if value is None:  # the memories without this property: a scope of their own
                continue
            try:
                check_scope_value(name, value)
            except InvalidInput as exc:  # the caller's field is the scope (a memory's user_id is another)
                raise InvalidInput("scope", f"{name} {exc.reason}") from None
        return Scoping(self.properties, values, self.until)

    def stored_by(self, moment: str) -> Scoping:
        """This scoping limited to the memories stored by `moment` (ISO-8601 UTC): a run as of that time."""
        return Scoping(self.properties, self.only, moment[:TIME_CHARS])

    @property
    def whole(self) -> bool:
        """Every memory is read: no one scope, no time limit."""
        return self.only is None and self.until is None

    def where(self, node: str = "m") -> str:
        """A Cypher condition true for the nodes in the limited scope (always true when not limited)."""
        conditions = []
        if self.only:
            # Absent as key_expression reads it (a missing value and an empty one are one scope).
            conditions += [f"{node}.{name} = $scope_{name}" if self.only[name] is not None
                           else f"coalesce({node}.{name}, '') = ''" for name in self.properties]
        if self.until is not None:
            conditions.append(f"left(coalesce({node}.timestamp, ''), {TIME_CHARS}) <= $scope_until")
        return " AND ".join(conditions) or "true"

    def params(self) -> dict[str, str]:
        given = {f"scope_{name}": value for name, value in (self.only or {}).items() if value is not None}
        return {**given, "scope_until": self.until} if self.until is not None else given

    def key_expression(self, node: str = "m") -> str:
        """A Cypher expression giving the node's scope as one string; equal strings mean the same scope.

        Each value is written with its length first, so no two different value lists give the same string
        (with a plain separator, ("a|b", "c") and ("a", "b|c") would share a scope)."""
        if not self.properties:
            return "''"
        parts = [f"toString(size(coalesce({node}.{name}, ''))) + ':' + coalesce({node}.{name}, '')"
                 for name in self.properties]
        return " + '/' + ".join(parts)

    def key_of(self, properties: Mapping[str, Any]) -> str:
        """The scope key key_expression gives, for the properties of a memory that is no longer a node (a
        deleted memory's tombstone keeps them)."""
        if not self.properties:
            return ""
        values = [properties.get(name) for name in self.properties]
        return "/".join(f"{len(v)}:{v}" for v in (value if isinstance(value, str) else "" for value in values))


    def sees(self, properties: Mapping[str, Any], bound: Mapping[str, Any] | None) -> bool:
        """Whether a caller bound to the scope `bound` (None: to none) may see the memory with these properties."""
        return bound is None or self.key_of(properties) == self.key_of(bound)


def bound_body(body: Any, bound: Scope | None) -> Any:
    """A memory a scoped caller writes: its scope filled in as the caller's; Forbidden when it names another."""
    if bound is None or not isinstance(body, dict):
        return body
    named_other = other_scope(body, bound)
    if named_other:
        raise Forbidden(f"{named_other}: this token writes only in its own scope "
                        f"({', '.join(f'{k}={v}' for k, v in bound.items())})")
    return {**body, **bound}


def other_scope(body: Mapping[str, Any], bound: Scope) -> str | None:
    """The first scope property the body gives a value other than the bound one (None: none)."""
    return next((name for name, value in bound.items() if body.get(name) not in (None, value)), None)


def within_bound(scope: Any, bound: Scope | None, field: str) -> Any:
    """The scope a read asks for, for a scoped caller always its own (Forbidden when it asks for another)."""
    if bound is None:
        return scope
    if scope is not None and scope != dict(bound):
        raise Forbidden(f"{field}: this token reads only its own scope")
    return dict(bound)


def check_scope_value(name: str, value: Any) -> None:
    """A scope value is a non-empty string of printable characters (it is compared, never interpreted), without
    whitespace at either end: "alice" and " alice" would be two users' memories, which nobody means."""
    if not isinstance(value, str) or not value or len(value) > MAX_VALUE_CHARS or not value.isprintable():
        raise InvalidInput(name, f"must be a non-empty string of at most {MAX_VALUE_CHARS} printable characters")
    if value != value.strip():
        raise InvalidInput(name, "must not begin or end with whitespace")


def scope_codes(keys: Sequence[str]) -> np.ndarray:
    """One small integer per memory, equal exactly when the scope keys are equal."""
    if not keys:
        return np.zeros(0, dtype=np.int64)
    if list(keys).count(keys[0]) == len(keys):  # one scope (the usual case): no sort of a million strings
        return np.zeros(len(keys), dtype=np.int64)
    _, codes = np.unique(np.asarray(keys, dtype=object), return_inverse=True)
    return codes.astype(np.int64)
