"""Text embedders: the interface every provider meets, and the one the settings choose."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np

from ..settings import Settings, SettingsError
from .fastembed_local import AUTOMEM_DEFAULT_DIR, FastEmbedEmbedder, FastEmbedMissing
from .hashing import HashingEmbedder
from .minilm import MiniLMEmbedder
from .remote import ollama_embedder, openai_embedder, voyage_embedder

DEFAULT_OLLAMA_URL = "http://localhost:11434"
DEFAULT_OLLAMA_MODEL = "nomic-embed-text"


class Embedder(Protocol):
    """Turns texts into unit-length vectors of a fixed dimension, made by one named model."""

    model: str  # what every vector it makes records (embedding_model)
    dimension: int

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """An (len(texts), dimension) float32 matrix of L2-normalised rows."""
        ...


def build_embedder(settings: Settings) -> Embedder:
    """The embedder EMBEDDING_PROVIDER names (auto resolved in AutoMem's order); SettingsError when it cannot
    start (fastembed's files absent)."""
    calls = {"batch_size": settings.embedding_batch_size, "timeout": settings.embedding_timeout_seconds,
             "retries": settings.embedding_retries}
    provider, size = settings.chosen_embedding_provider, settings.vector_size
    if provider == "builtin":
        return MiniLMEmbedder(settings.embedding_threads)
    if provider == "hash":
        return HashingEmbedder(size)
    if provider == "openai":
        return openai_embedder(settings.openai_api_key.get_secret_value(), settings.openai_base_url,
                               settings.embedding_model, size, **calls)
    if provider == "voyage":
        return voyage_embedder(settings.voyage_api_key.get_secret_value(), settings.voyage_base_url,
                               settings.voyage_model, size, **calls)
    if provider == "ollama":
        return ollama_embedder(settings.ollama_base_url or DEFAULT_OLLAMA_URL,
                               settings.ollama_model or DEFAULT_OLLAMA_MODEL, size, **calls)
    try:
        return FastEmbedEmbedder(settings.fastembed_cache_path or settings.automem_models_dir or AUTOMEM_DEFAULT_DIR,
                                 size)
    except FastEmbedMissing as exc:
        raise SettingsError(str(exc)) from None


__all__ = ["Embedder", "HashingEmbedder", "MiniLMEmbedder", "build_embedder"]
