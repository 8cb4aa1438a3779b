"""The subject codes clustering keeps between passes: a code holds while its memory's change number does."""

from __future__ import annotations

import numpy as np

from consolidation.subjects import NOBODY, UNREAD, KeptSubjects


def test_a_kept_code_holds_only_while_the_memory_keeps_its_change_number():
    kept = KeptSubjects()
    maria, john = kept.code("maria"), kept.code("john")
    assert (maria, john, kept.code("maria"), kept.code(None)) == (0, 1, 0, NOBODY)
    prints = np.array([11, 12, 13, 14], dtype=np.uint64)
    kept.keep(["a", "b", "c", "d"], np.array([1.0, 2.0, np.nan, 4.0]), prints, np.array([maria, john, maria, UNREAD]))
    # Asked in another order, with one memory new ("e"), one changed ("b": 2 -> 5), one gone ("d").
    codes, with_vectors = kept.known(["e", "c", "b", "a"], np.array([6.0, np.nan, 5.0, 1.0]))
    assert codes.tolist() == [UNREAD, UNREAD, UNREAD, maria]  # never marked: never trusted
    assert with_vectors[3] == 11
    codes, with_vectors = kept.known(["a", "b", "c", "d"], np.array([1.0, 2.0, 3.0, 4.0]))
    assert codes.tolist() == [maria, john, UNREAD, UNREAD] and with_vectors[:2].tolist() == [11, 12]
    assert KeptSubjects().known(["a"], np.array([1.0]))[0].tolist() == [UNREAD]
