"""Scopes: the memory properties (user_id, agent_id, ...) that partition memories; no task works across two."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

# A memory without one of the properties is in the scope where that property is absent (not in every scope).
ABSENT = ""


class Scoping:
    """How memories are partitioned: by the values of these properties (none: all memories are one scope)."""

    def __init__(self, properties: Sequence[str] = ()):
        self.properties = tuple(properties)

    @property
    def enabled(self) -> bool:
        return bool(self.properties)

    def key_expression(self, node: str = "m") -> str:
        """A Cypher expression giving the node's scope as one string; equal strings mean the same scope.

        Each value is written with its length first, so no two different value lists give the same string
        (with a plain separator, ("a|b", "c") and ("a", "b|c") would share a scope)."""
        if not self.properties:
            return "''"
        parts = [f"toString(size(coalesce({node}.{name}, ''))) + ':' + coalesce({node}.{name}, '')"
                 for name in self.properties]
        return " + '/' + ".join(parts)


def scope_codes(keys: Sequence[str]) -> np.ndarray:
    """One small integer per memory, equal exactly when the scope keys are equal."""
    if not keys:
        return np.zeros(0, dtype=np.int64)
    _, codes = np.unique(np.asarray(keys, dtype=object), return_inverse=True)
    return codes.astype(np.int64)
