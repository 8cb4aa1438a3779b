"""fastembed's ONNX models, from model files already on disk (nothing is downloaded), chosen as AutoMem chooses."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

# AutoMem picks fastembed's model by the collection's dimension.
MODELS_BY_DIMENSION = {384: "BAAI/bge-small-en-v1.5", 768: "BAAI/bge-base-en-v1.5", 1024: "BAAI/bge-large-en-v1.5"}
DEFAULT_MODEL = "BAAI/bge-base-en-v1.5"
AUTOMEM_DEFAULT_DIR = Path.home() / ".config" / "automem" / "models"


class FastEmbedMissing(RuntimeError):
    """fastembed's model files or its package are not here: the provider cannot start."""


def model_for(dimension: int) -> str:
    return MODELS_BY_DIMENSION.get(dimension, DEFAULT_MODEL)


def model_files_present(cache_dir: Path, model: str) -> bool:
    """Whether a model's files are in the cache: a directory named after it (fastembed and the Hugging Face hub
    name theirs with the model's short name in it, like models--qdrant--bge-small-en-v1.5-onnx-q)."""
    short = model.split("/")[-1].lower()
    return cache_dir.is_dir() and any(d.is_dir() and short in d.name.lower() for d in cache_dir.iterdir())


class FastEmbedEmbedder:
    def __init__(self, cache_dir: Path, dimension: int):
        self.model, self.dimension = model_for(dimension), dimension
        if not model_files_present(cache_dir, self.model):
            raise FastEmbedMissing(f"EMBEDDING_PROVIDER=fastembed: the files of {self.model} (the model for "
                                   f"VECTOR_SIZE={dimension}) are not under {cache_dir}, and nothing is downloaded "
                                   "here; put them there (FASTEMBED_CACHE_PATH or AUTOMEM_MODELS_DIR) or choose "
                                   "another EMBEDDING_PROVIDER")
        try:
            from fastembed import TextEmbedding
        except ImportError:
            raise FastEmbedMissing("EMBEDDING_PROVIDER=fastembed needs the fastembed package (pip install "
                                   "fastembed), which this installation does not include") from None
        self._model = TextEmbedding(model_name=self.model, cache_dir=str(cache_dir), local_files_only=True)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        matrix = np.asarray(list(self._model.embed(list(texts))), dtype=np.float32).reshape(len(texts), -1)
        return matrix / np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)
