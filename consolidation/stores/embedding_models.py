"""Which model made the store's vectors: the record on the control node, and the memories another model made."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from .control import CONTROL
from .falkor import Falkor

HASH_MODEL = "hash"  # the hashing embedder's name (embedding/hashing.py), as nodes record it
# The model of a memory's vector as this service wrote it: its embedding_model; a vector the service made before
# models were recorded was the hashing embedder's; a client's or AutoMem's vector says nothing (null).
MEMORY_MODEL = f"coalesce(m.embedding_model, CASE WHEN m.embedded_by = 'built-in' THEN '{HASH_MODEL}' END)"


class EmbeddingModels:
    """The store's model (recorded once known; `moving_to` while a reembed moves it) and its memories' models."""

    def __init__(self, falkor: Falkor):
        self.falkor = falkor

    def recorded(self) -> tuple[str | None, str | None]:
        """The recorded model of the store and the model a reembed is moving it to (None: none)."""
        rows = self.falkor.records(f"MATCH {CONTROL} RETURN c.embedding_model, c.reembed_target", read_only=True)
        return (rows[0][0], rows[0][1]) if rows else (None, None)

    def record(self, model: str, moving_to: str | None = None) -> None:
        self.falkor.execute(f"MERGE {CONTROL} ON CREATE SET c.history = '[]' "
                            "SET c.embedding_model = $model, c.reembed_target = $moving",
                            {"model": model, "moving": moving_to})

    def named_by_memories(self) -> str | None:
        """The model some memory's vector names (a store written before the store's model was recorded)."""
        rows = self.falkor.execute(f"MATCH (m:Memory) WHERE {MEMORY_MODEL} IS NOT NULL RETURN {MEMORY_MODEL} LIMIT 1",
                                   read_only=True)
        return rows[0][0] if rows else None

    def not_made_by(self, model: str) -> tuple[list[str], Counter]:
        """Every memory (summaries too) whose vector `model` did not make, and how many each other model made
        (None: a vector that names no model)."""
        columns = self.falkor.scan_memories(f"coalesce({MEMORY_MODEL}, '') <> $model", f"m.id, {MEMORY_MODEL}",
                                            {"model": model})
        if not columns:
            return [], Counter()
        return list(columns[0]), Counter(columns[1])

    def mark_made_by(self, ids: Sequence[str], model: str) -> None:
        """The service made these memories' vectors with `model`."""
        self.falkor.execute("UNWIND $ids AS id MATCH (m:Memory {id: id}) "
                            "SET m.embedding_model = $model, m.embedded_by = 'built-in'",
                            {"ids": list(ids), "model": model})
