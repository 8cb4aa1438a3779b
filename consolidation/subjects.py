"""Who each memory is about, as a number, kept in the process between clustering passes (pure)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

UNREAD = -2  # a memory whose subject is not known (never read, or changed since)
NOBODY = -1  # a memory that names nobody


class KeptSubjects:
    """The subject code of each memory a clustering pass read, with the change number and the fingerprint of
    the vector it had then. A later pass reads again only the texts of memories whose change number or vector
    moved since (at a million memories, reading and parsing every clustered member's text cost 5-6 s a pass).
    The vector guards against another program's edits, which leave no change number: AutoMem embeds an edited
    text again. A memory never marked (NaN) is never trusted."""

    def __init__(self) -> None:
        self._numbers: dict[str, int] = {}  # subject key -> code, for every pass of this process
        self._ids: list[str] = []
        self._position: dict[str, int] = {}
        self._changes = np.zeros(0)
        self._prints = np.zeros(0, dtype=np.uint64)
        self._codes = np.zeros(0, dtype=np.int64)

    def code(self, key: str | None) -> int:
        """The number of a subject key (NOBODY for None), the same in every pass."""
        return NOBODY if key is None else self._numbers.setdefault(key, len(self._numbers))

    def known(self, ids: Sequence[str], changes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """For each of `ids`: the kept code if its change number is still the one it was read at (else UNREAD),
        and the fingerprint of the vector it was read with (to be compared with its vector now)."""
        codes = np.full(len(ids), UNREAD, dtype=np.int64)
        prints = np.zeros(len(ids), dtype=np.uint64)
        if not self._ids or not len(ids):
            return codes, prints
        if len(ids) == len(self._ids) and list(ids) == self._ids:
            old = np.arange(len(ids), dtype=np.int64)
        else:
            position = self._position or dict(zip(self._ids, range(len(self._ids))))
            self._position = position
            old = np.fromiter((position.get(i, -1) for i in ids), dtype=np.int64, count=len(ids))
        held = np.flatnonzero(old >= 0)
        current = held[self._changes[old[held]] == np.asarray(changes, dtype=np.float64)[held]]  # NaN: never
        codes[current], prints[current] = self._codes[old[current]], self._prints[old[current]]
        return codes, prints

    def keep(self, ids: Sequence[str], changes: np.ndarray, prints: np.ndarray, codes: np.ndarray) -> None:
        """What a pass knows now: each of `ids` with its change number, vector fingerprint and code (UNREAD: not
        known)."""
        self._ids, self._position = list(ids), {}
        self._changes = np.asarray(changes, dtype=np.float64).copy()
        self._prints = np.asarray(prints, dtype=np.uint64).copy()
        self._codes = np.asarray(codes, dtype=np.int64).copy()
