"""JudgeVerdict nodes: what a model said about a pair of memory texts, so no pair is asked about twice."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .falkor import Falkor

READ_CHUNK = 2000
WRITE_CHUNK = 500


class VerdictCache:
    """Model verdicts by pair key (see hygiene.model_judge.pair_key) in the graph, shared by every replica.

    The nodes carry no Memory label, so no memory query sees them; `key` is indexed (GraphStore.ensure_schema).
    """

    def __init__(self, falkor: Falkor):
        self.falkor = falkor

    def get(self, keys: Sequence[str]) -> dict[str, bool]:
        """The stored verdict (True: same fact) of each of these keys that has one."""
        wanted = list(dict.fromkeys(keys))
        rows = self.falkor.read_chunks(
            "UNWIND $keys AS k MATCH (v:JudgeVerdict {key: k}) RETURN v.key, v.same_fact",
            wanted, READ_CHUNK, key="keys")
        # The plain reply spells booleans as text.
        return {key: value is True or value == "true" for key, value in rows}

    def put(self, rows: Sequence[Mapping[str, Any]]) -> None:
        """Store verdicts given as {key, model, same_fact, asked_at (ISO time)}; a key already stored is
        overwritten."""
        cleaned = [{"key": str(row["key"]), "model": str(row["model"]), "same_fact": bool(row["same_fact"]),
                    "asked_at": str(row["asked_at"])} for row in rows]
        self.falkor.write_chunks(
            "UNWIND $rows AS row MERGE (v:JudgeVerdict {key: row.key}) "
            "SET v.model = row.model, v.same_fact = row.same_fact, v.asked_at = row.asked_at",
            cleaned, chunk=WRITE_CHUNK)
