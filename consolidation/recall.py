"""Recall: the memories of a scope most similar to a query, as an agent reads them now, or with their history."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .lifecycle.states import ACTIVE, ARCHIVED, MERGED, state_of
from .similarity import normalized
from .stores.graph import GraphStore
from .stores.vectors import Hit, SearchFilter, VectorStore

CURRENT, HISTORY = "current", "history"
SUMMARY_TYPES = ("MetaPattern",)
# A current recall drops what superseded chains fold away: it asks the store for more than k, and for more again
# (up to MOST_FETCHED) while what is left falls short.
FETCH_FACTOR = 3
MOST_FETCHED = 1000
LONGEST_CHAIN = 64  # a chain of supersessions longer than this is cut (a cycle written by hand, say)
# A recall of fewer than this many gives no place to an association: its places are the query's best matches.
FEWEST_FOR_ASSOCIATED = 5
PARTNERS_READ = 5  # a best answer's same_episode partners looked at (the first current one not answered already)


@dataclass(frozen=True)
class RecallQuery:
    """A validated recall: the query's vector, how many answers, the mode, the scope key (None: every scope)
    and the types asked for (None: every type but summaries, unless `summaries`)."""

    vector: np.ndarray
    k: int
    state: str = CURRENT
    scope: str | None = None
    types: tuple[str, ...] | None = None
    summaries: bool = False
    associated: bool = False


class Recall:
    """Answers recall queries from the vector store's filtered search, the graph's supersession chains and the
    episodes consolidation linked."""

    def __init__(self, graph: GraphStore, vectors: VectorStore, associated_similarity: float = 0.5):
        self.graph = graph
        self.vectors = vectors
        self.associated_similarity = associated_similarity

    def recall(self, query: RecallQuery) -> list[dict[str, Any]]:
        unit = normalized(np.asarray(query.vector, np.float32)[None, :])[0]
        where = search_filter(query)
        fetch = query.k * FETCH_FACTOR + 10
        while True:
            hits = self.vectors.search(unit, fetch, where, with_payloads=False)
            answers = self._current(hits, unit) if query.state == CURRENT else self._history(hits)
            if len(answers) >= query.k or len(hits) < fetch or fetch >= MOST_FETCHED:
                return self._with_associated(query, unit, answers[:query.k])
            fetch = min(fetch * 4, MOST_FETCHED)

    def _with_associated(self, query: RecallQuery, unit: np.ndarray, answers: list[dict[str, Any]]
                         ) -> list[dict[str, Any]]:
        """A full current recall whose best answer matches the query well gives its last place to what was said
        with that answer (its closest same_episode partner, current and not answered already): the question
        that matched one statement of an episode often needs the one beside it, which the query's words miss."""
        if not (query.associated and query.state == CURRENT and query.k >= FEWEST_FOR_ASSOCIATED
                and len(answers) == query.k and answers[0]["ranked_by_similarity"] >= self.associated_similarity):
            return answers
        best = answers[0]["id"]
        answered = {a["id"] for a in answers} | {r for a in answers for r in a["replaces"]}
        partners = [p for p in self.graph.episode_partners(best, PARTNERS_READ) if p not in answered]
        memories = {m["id"]: m for m in self.graph.get_memories(partners)}
        for partner in partners:
            memory = memories.get(partner)
            if memory is None or _next(memory) or state_of(memory) != ACTIVE or \
                    (query.types is not None and (memory.get("type") or "Memory") not in query.types):
                continue
            found, matrix = self.vectors.vectors([partner])
            if not found:
                continue
            similarity = float(normalized(matrix)[0] @ unit)
            return answers[:-1] + [{**_answer(memory, similarity), "replaces": [],
                                    "ranked_by_similarity": round(similarity, 6), "associated_with": best}]
        return answers

    def _history(self, hits: list[Hit]) -> list[dict[str, Any]]:
        memories = {m["id"]: m for m in self.graph.get_memories([h.id for h in hits])}
        return [{**_answer(memories[h.id], h.similarity), "superseded_by": memories[h.id].get("superseded_by"),
                 "merged_into": memories[h.id].get("merged_into")}
                for h in hits if h.id in memories]

    def _current(self, hits: list[Hit], unit: np.ndarray) -> list[dict[str, Any]]:
        """Each hit as the newest memory of its chain; hits that lead to one memory become one answer, ranked by
        the best similarity among them (so the update of a fact the query matched comes where the fact was)."""
        similarity = {h.id: h.similarity for h in hits}
        newest, memories = self.newest([h.id for h in hits])
        missing = [m for m in {*newest.values()} - {None} if m not in similarity]
        if missing:
            found, matrix = self.vectors.vectors(missing)
            similarity.update(zip(found, (normalized(matrix) @ unit).tolist()))
        groups: dict[str, list[str]] = {}
        for hit in hits:
            target = newest.get(hit.id)
            if target is not None and target in similarity:
                groups.setdefault(target, []).append(hit.id)
        answers = []
        for target, sources in groups.items():
            if target not in memories:
                continue
            replaced = [s for s in sources if s != target]
            ranked_by = max(similarity[s] for s in sources + [target])
            answers.append({**_answer(memories[target], similarity[target]), "replaces": replaced,
                            "ranked_by_similarity": round(ranked_by, 6)})
        answers.sort(key=lambda a: (-a["ranked_by_similarity"], a["id"]))
        return answers

    def newest(self, ids: Sequence[str]) -> tuple[dict[str, str | None], dict[str, dict[str, Any]]]:
        """For each id, the current memory that stands for it now: itself if active and not superseded, else
        the end of its chain (superseded_by, then merged_into); None when the chain ends archived or deleted.
        Also every memory read on the way, by id (each chain's end among them: no second read for the answer)."""
        position = {memory_id: memory_id for memory_id in ids}
        result: dict[str, str | None] = {}
        read: dict[str, dict[str, Any]] = {}
        for _ in range(LONGEST_CHAIN):
            if not position:
                break
            memories = {m["id"]: m for m in self.graph.get_memories(sorted(set(position.values())))}
            read.update(memories)
            moved = {}
            for start, at in position.items():
                memory = memories.get(at)
                step = _next(memory) if memory is not None else None
                if memory is None or (step is None and state_of(memory) != ACTIVE):
                    result[start] = None
                elif step is None:
                    result[start] = at
                else:
                    moved[start] = step
            position = moved
        result.update({start: None for start in position})
        return result, read


def search_filter(query: RecallQuery) -> SearchFilter:
    """What the store may return for the query: a current recall never sees archived or merged memories (deleted
    ones have no point), and summaries only when asked for."""
    wants_summaries = query.summaries or (query.types is not None and any(t in SUMMARY_TYPES for t in query.types))
    return SearchFilter(scope=query.scope, types=query.types,
                        without_types=() if wants_summaries else SUMMARY_TYPES,
                        without_states=(ARCHIVED, MERGED) if query.state == CURRENT else ())


def _next(memory: dict[str, Any]) -> str | None:
    """The memory one step further along the chain: the newer one that superseded it, or its canonical."""
    return memory.get("superseded_by") or memory.get("merged_into") or None


def _answer(memory: dict[str, Any], similarity: float) -> dict[str, Any]:
    return {
        "id": memory["id"],
        "content": memory.get("content"),
        "type": memory.get("type") or "Memory",
        "similarity": round(float(similarity), 6),
        "relevance": memory.get("relevance_score"),
        "state": state_of(memory),
        "superseded": memory.get("superseded_by") is not None,
        "timestamp": memory.get("timestamp"),
    }
