"""Who each memory is about, as a number, kept in the process between clustering passes by change number (pure)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

UNREAD = -2  # a memory whose subject is not known (never read, or changed since)
NOBODY = -1  # a memory that names nobody


class KeptSubjects:
    """The subject code of each memory a clustering pass read, with the change number it had then: a later
    incremental pass reads again only the texts of memories changed since (at a million memories, reading and
    parsing every broken cluster's members cost 5 s). A memory never marked (NaN) is never trusted; a full pass
    reads every text anyway and keeps what it read."""

    def __init__(self) -> None:
        self.numbers: dict[str, int] = {}  # subject key -> code, for every pass of this process
        self._ids: list[str] = []
        self._position: dict[str, int] = {}
        self._changes = np.zeros(0)
        self._codes = np.zeros(0, dtype=np.int64)

    def code(self, key: str | None) -> int:
        """The number of a subject key (NOBODY for None), the same in every pass."""
        return NOBODY if key is None else self.numbers.setdefault(key, len(self.numbers))

    def known(self, ids: Sequence[str], changes: np.ndarray) -> np.ndarray:
        """The kept code of each of `ids` whose change number is still the one it was read at, else UNREAD."""
        codes = np.full(len(ids), UNREAD, dtype=np.int64)
        if not self._ids or not len(ids):
            return codes
        if len(ids) == len(self._ids) and list(ids) == self._ids:
            old = np.arange(len(ids), dtype=np.int64)
        else:
            position = self._position or dict(zip(self._ids, range(len(self._ids))))
            self._position = position
            old = np.fromiter((position.get(i, -1) for i in ids), dtype=np.int64, count=len(ids))
        held = np.flatnonzero(old >= 0)
        current = held[self._changes[old[held]] == np.asarray(changes, dtype=np.float64)[held]]  # NaN: never
        codes[current] = self._codes[old[current]]
        return codes

    def keep(self, ids: Sequence[str], changes: np.ndarray, codes: np.ndarray) -> None:
        """What a pass knows now: each of `ids` with its change number and code (UNREAD: not known)."""
        self._ids, self._position = list(ids), {}
        self._changes = np.asarray(changes, dtype=np.float64).copy()
        self._codes = np.asarray(codes, dtype=np.int64).copy()
