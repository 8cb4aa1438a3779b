"""Embedding providers behind HTTP: OpenAI-compatible endpoints, Voyage and Ollama, as AutoMem calls them."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import httpx
import numpy as np

from ..errors import EmbeddingUnavailable

# Answers worth asking again: the provider is busy or briefly broken (anything else 4xx is our request's fault).
RETRIED_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
FIRST_BACKOFF_SECONDS = 0.5
OPENAI_HOST = "api.openai.com"


class HttpEmbedder:
    """Texts in batches to one endpoint, each call retried with exponential backoff; rows checked and unit length.

    A provider that cannot be reached, keeps failing or answers with the wrong number or size of vectors raises
    EmbeddingUnavailable naming it: the caller writes nothing."""

    def __init__(self, provider: str, model: str, dimension: int, url: str, headers: dict[str, str],
                 request: Callable[[list[str]], dict[str, Any]], vectors_of: Callable[[Any, int], list],
                 batch_size: int, timeout: float, retries: int):
        self.provider, self.model, self.dimension = provider, model, dimension
        self.url, self.request, self.vectors_of = url, request, vectors_of
        self.batch_size, self.retries = batch_size, retries
        self.client = httpx.Client(timeout=timeout, headers={"Content-Type": "application/json", **headers})

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for start in range(0, len(texts), self.batch_size):
            batch = list(texts[start:start + self.batch_size])
            out[start:start + len(batch)] = self._checked(self.vectors_of(self._post(batch), len(batch)), len(batch))
        return out

    def _post(self, batch: list[str]) -> Any:
        delay, problem = FIRST_BACKOFF_SECONDS, "no attempt"
        for attempt in range(self.retries + 1):
            if attempt:
                time.sleep(delay)
                delay *= 2
            try:
                response = self.client.post(self.url, json=self.request(batch))
            except httpx.HTTPError as exc:
                problem = f"{type(exc).__name__} calling {self.url}"
                continue
            if response.status_code == 200:
                try:
                    return response.json()
                except ValueError:
                    raise self._failure(f"{self.url} answered with something that is not JSON") from None
            problem = f"{self.url} answered {response.status_code}"
            if response.status_code not in RETRIED_STATUS:
                break
        raise self._failure(f"{problem} (after {attempt + 1} attempt{'s' if attempt else ''})")

    def _checked(self, rows: list, expected: int) -> np.ndarray:
        try:
            matrix = np.asarray(rows, dtype=np.float32)
        except (TypeError, ValueError):
            raise self._failure("answered vectors that are not lists of numbers") from None
        if matrix.shape != (expected, self.dimension) or not np.isfinite(matrix).all():
            raise self._failure(f"answered {matrix.shape[0] if matrix.ndim else 0} vectors of "
                                f"{matrix.shape[1] if matrix.ndim == 2 else '?'} numbers for {expected} texts; "
                                f"the store holds {self.dimension} (VECTOR_SIZE)")
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        if (norms == 0).any():
            raise self._failure("answered an all-zero vector")
        return matrix / norms

    def _failure(self, detail: str) -> EmbeddingUnavailable:
        return EmbeddingUnavailable(self.provider, f"{detail} (model {self.model})")


def _data_rows(answer: Any, expected: int) -> list:
    """The vectors of an OpenAI- or Voyage-shaped answer ({"data": [{"embedding": [...], "index": i}]}), in order."""
    data = answer.get("data") if isinstance(answer, dict) else None
    if not isinstance(data, list) or not all(isinstance(d, dict) and "embedding" in d for d in data):
        return []
    return [d["embedding"] for d in sorted(data, key=lambda d: d.get("index", 0))]


def openai_embedder(api_key: str, base_url: str | None, model: str, dimension: int, **calls: Any) -> HttpEmbedder:
    """Any OpenAI-compatible endpoint. `dimensions` is asked for only of OpenAI's own API (many compatible
    servers reject it), as AutoMem does; a model too small for VECTOR_SIZE becomes text-embedding-3-large."""
    base = (base_url or f"https://{OPENAI_HOST}/v1").rstrip("/")
    if dimension > 1536 and model.endswith("text-embedding-3-small"):
        model = model[: -len("small")] + "large"
    native = OPENAI_HOST in base

    def request(batch: list[str]) -> dict[str, Any]:
        return {"model": model, "input": batch, **({"dimensions": dimension} if native else {})}

    return HttpEmbedder("openai", model, dimension, f"{base}/embeddings", {"Authorization": f"Bearer {api_key}"},
                        request, _data_rows, **calls)


def voyage_embedder(api_key: str, base_url: str, model: str, dimension: int, **calls: Any) -> HttpEmbedder:
    def request(batch: list[str]) -> dict[str, Any]:
        return {"model": model, "input": batch, "output_dimension": dimension}

    return HttpEmbedder("voyage", model, dimension, f"{base_url.rstrip('/')}/embeddings",
                        {"Authorization": f"Bearer {api_key}"}, request, _data_rows, **calls)


def ollama_embedder(base_url: str, model: str, dimension: int, **calls: Any) -> HttpEmbedder:
    """Ollama's /api/embeddings takes one prompt a call, as AutoMem calls it: batches of one."""

    def request(batch: list[str]) -> dict[str, Any]:
        return {"model": model, "prompt": batch[0]}

    def vectors_of(answer: Any, expected: int) -> list:
        embedding = answer.get("embedding") if isinstance(answer, dict) else None
        return [embedding] if isinstance(embedding, list) else []

    return HttpEmbedder("ollama", model, dimension, f"{base_url.rstrip('/')}/api/embeddings", {}, request,
                        vectors_of, **{**calls, "batch_size": 1})
