"""MetaPattern summaries: a readable heuristic one, and an optional LLM one that falls back to it."""

from __future__ import annotations

import logging
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import httpx

from .hygiene.facts import STOPWORDS

log = logging.getLogger(__name__)
WORD = re.compile(r"[^\W_]+", re.UNICODE)
SENTENCE_END = re.compile(r"(?<=[.!?])\s")
QUOTE_CHARS = 160
KEY_TERMS = 5
REPRESENTATIVES = 2


@dataclass(frozen=True)
class ClusterMember:
    id: str
    content: str
    type: str
    day: str | None  # YYYY-MM-DD of creation, if known
    centrality: float  # cosine to the cluster centroid


@dataclass(frozen=True)
class Summary:
    text: str
    method: str  # "heuristic" or "llm"


class Summarizer(Protocol):
    def summarize(self, members: Sequence[ClusterMember]) -> Summary: ...


class HeuristicSummarizer:
    """No model: type mix, date span, the terms most members share, and the most central members' first sentences."""

    def summarize(self, members: Sequence[ClusterMember]) -> Summary:
        mix = ", ".join(f"{t} ×{n}" for t, n in type_mix(members))
        text = f"{len(members)} related memories ({mix})"
        days = sorted(m.day for m in members if m.day)
        if days:
            text += f" from {days[0]}" + (f" to {days[-1]}" if days[-1] != days[0] else "")
        terms = key_terms([m.content for m in members if m.content])
        if terms:
            text += ", about " + ", ".join(terms)
        central = sorted(members, key=lambda m: (-m.centrality, m.id))[:REPRESENTATIVES]
        quotes = " / ".join(f"“{first_sentence(m.content)}”" for m in central if m.content.strip())
        if quotes:
            text += f". Most representative: {quotes}"
        return Summary(text, "heuristic")


class LLMSummarizer:
    """An OpenAI-compatible chat model writes the summary; any failure falls back to the heuristic one."""

    def __init__(self, url: str, model: str, api_key: str | None, timeout: float, fallback: Summarizer):
        self.url = url.rstrip("/") + "/chat/completions"
        self.model = model
        self.headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.timeout = timeout
        self.fallback = fallback

    def summarize(self, members: Sequence[ClusterMember]) -> Summary:
        listing = "\n".join(f"- ({m.type}, {m.day or 'undated'}) {m.content[:500]}" for m in members[:40])
        prompt = ("Summarize what these related memories of an AI agent have in common in two or three "
                  "sentences. Keep names, dates and numbers.\n" + listing)
        try:
            reply = httpx.post(
                self.url, headers=self.headers, timeout=self.timeout,
                json={"model": self.model, "messages": [{"role": "user", "content": prompt}], "temperature": 0},
            )
            reply.raise_for_status()
            text = reply.json()["choices"][0]["message"]["content"].strip()
            if not text:
                raise ValueError("empty summary")
            return Summary(text, "llm")
        except Exception as exc:  # any failure of a remote model must not fail the clustering run
            log.warning("consolidation cluster llm summary failed, using heuristic error=%s", type(exc).__name__)
            return self.fallback.summarize(members)


def type_mix(members: Sequence[ClusterMember]) -> list[tuple[str, int]]:
    """Memory types by frequency, most common first (ties alphabetical)."""
    return sorted(Counter(m.type for m in members).items(), key=lambda item: (-item[1], item[0]))


def key_terms(texts: Sequence[str], limit: int = KEY_TERMS) -> list[str]:
    """Words that appear in at least two of the texts, by how many texts contain them, as most often spelled."""
    document_frequency: Counter = Counter()
    for text in texts:
        document_frequency.update({w for w in WORD.findall(text.lower()) if len(w) > 2 and w not in STOPWORDS})
    shared = sorted(((w, n) for w, n in document_frequency.items() if n >= 2), key=lambda item: (-item[1], item[0]))
    joined = "\n".join(texts)
    return [_usual_spelling(word, joined) for word, _ in shared[:limit]]


def _usual_spelling(word: str, text: str) -> str:
    spellings = Counter(re.findall(rf"(?<![^\W_]){re.escape(word)}(?![^\W_])", text, re.IGNORECASE))
    return spellings.most_common(1)[0][0] if spellings else word


def first_sentence(text: str) -> str:
    sentence = SENTENCE_END.split(text.strip(), maxsplit=1)[0]
    return sentence if len(sentence) <= QUOTE_CHARS else sentence[: QUOTE_CHARS - 1].rstrip() + "…"
