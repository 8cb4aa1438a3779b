"""Long columns converted a slice at a time, so that other threads of the process (requests) get the GIL between
slices.

One call of numpy or of a builtin over a column (np.array of a million texts, list(map(...)), zip(*rows)) holds the
GIL from start to end: at a million memories such calls held it for 0.1-2 s each during a run, and a request of
the same process waited that long for its reply to be read. Between two slices the interpreter lets a waiting
thread in. The slices cost nothing measurable against the conversions themselves.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from itertools import chain
from operator import itemgetter
from typing import Any

import numpy as np

SLICE = 50_000  # values converted in one call: a few milliseconds


def slices(values: Sequence[Any], size: int = SLICE) -> Iterator[Sequence[Any]]:
    """The values, `size` at a time (convert each, then joined() them)."""
    for start in range(0, len(values), size):
        yield values[start:start + size]


def joined(parts: list[np.ndarray], dtype: Any) -> np.ndarray:
    """The converted slices as one array (an empty one of `dtype` for none)."""
    return np.concatenate(parts) if parts else np.zeros(0, dtype=dtype)


def array_of(values: Sequence[Any], dtype: Any) -> np.ndarray:
    """np.array(values, dtype), a slice at a time."""
    return joined([np.array(part, dtype=dtype) for part in slices(values)], dtype)


def columns_of(rows: Sequence[Sequence[Any]], size: int = SLICE) -> list[list[Any]]:
    """The rows (all of one width) as columns."""
    if not rows:
        return []
    columns: list[list[Any]] = [[] for _ in rows[0]]
    for start in range(0, len(rows), size):
        part = rows[start:start + size]
        for index, column in enumerate(columns):
            column.extend(map(itemgetter(index), part))
    return columns


def joined_columns(pages: Sequence[list[Any]]) -> list[Any]:
    """Pages of columns (as columns_of makes them, or typed: lists or arrays; an empty page has none) as one set
    of columns."""
    filled = [page for page in pages if page]
    return [np.concatenate(parts) if isinstance(parts[0], np.ndarray) else list(chain.from_iterable(parts))
            for parts in zip(*filled)]
