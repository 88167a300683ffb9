"""Embeddings from any OpenAI-compatible /v1/embeddings endpoint (OpenAI, Azure, vLLM, Ollama...)."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from typing import Any, Optional

import numpy as np
from openai import OpenAI

DEFAULT_MODEL = "text-embedding-3-small"


def _check_shapes(model: str, embeddings: list) -> list:
    """Return `embeddings` when each is one flat vector of one length, else raise (a non-pooling server sends one per token)."""
    for position, emb in enumerate(embeddings):
        if isinstance(emb, list) and emb and isinstance(emb[0], list):
            raise RuntimeError(
                f"embedding endpoint returned {len(emb)} vectors for input {position} of model {model!r} (one per token): "
                "the server is not pooling token vectors into one per text; start it with a pooling type "
                "(llama.cpp: --pooling mean; llama-cpp-python: --pooling_type 1) or use another embedding model"
            )
        if not isinstance(emb, list) or not all(isinstance(x, (int, float)) for x in emb):
            raise RuntimeError(f"embedding endpoint returned a {type(emb).__name__} for input {position} of model {model!r}, not a list of numbers")
    lengths = sorted({len(e) for e in embeddings})
    if len(lengths) > 1 or (lengths and lengths[0] == 0):
        raise RuntimeError(f"embedding endpoint returned vectors of lengths {lengths} for model {model!r}: expected one length per model")
    return embeddings


class OpenAIEmbedder:
    """Embed texts in batches through the official `openai` client (which owns retries)."""

    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        base_url: str | None = None,
        api_key: str | None = None,
        batch_size: int = 256,
        timeout: float = 60.0,
        max_retries: int = 5,
    ) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        self.name = model
        self.batch_size = batch_size
        # A local server (vLLM, Ollama...) needs no key, but the client insists on one.
        key = api_key or os.environ.get("OPENAI_API_KEY") or ("unused" if base_url else None)
        self._client = OpenAI(api_key=key, base_url=base_url, timeout=timeout, max_retries=max_retries)
        self._dim: int | None = None

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Return a (len(texts), dim) float32 array of unit rows (zero rows for empty text)."""
        # The API rejects empty input strings, so blank texts are not sent and stay zero rows.
        todo = [i for i, text in enumerate(texts) if text and text.strip()]
        parts: list[np.ndarray] = []
        for start in range(0, len(todo), self.batch_size):
            batch = [texts[i] for i in todo[start : start + self.batch_size]]
            parts.append(self._embed_batch(batch))
        if self._dim is None:
            return np.zeros((len(texts), 0), dtype=np.float32)
        out = np.zeros((len(texts), self._dim), dtype=np.float32)
        if parts:
            out[todo] = np.concatenate(parts)
        return out

    def _embed_batch(self, batch: list[str]) -> np.ndarray:
        raw = self._client.embeddings.with_raw_response.create(model=self.name, input=batch, encoding_format="float")
        pairs = _plain_pairs(raw.http_response.content)
        if pairs is None:  # not the usual shape: let the client's models read it
            pairs = [(item.index, item.embedding) for item in raw.parse().data]
        data = sorted(pairs, key=lambda item: item[0])
        if [index for index, _ in data] != list(range(len(batch))):
            raise RuntimeError(f"embedding endpoint returned {len(data)} vectors with unexpected indexes for {len(batch)} inputs")
        vectors = np.asarray(_check_shapes(self.name, [embedding for _, embedding in data]), dtype=np.float32)
        if not np.isfinite(vectors).all():
            raise RuntimeError("embedding endpoint returned non-finite vectors")
        if self._dim is None:
            self._dim = vectors.shape[1]
        elif vectors.shape[1] != self._dim:
            raise RuntimeError(f"embedding dimension changed from {self._dim} to {vectors.shape[1]}")
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return np.divide(vectors, norms, out=np.zeros_like(vectors), where=norms > 0)


def _plain_pairs(body: bytes) -> Optional[list[tuple[int, Any]]]:
    """Return (index, embedding) pairs of a response body in the usual shape, or None.

    Plain JSON, because the client's response models build an object per float (slow on large batches).
    """
    try:
        document = json.loads(body)
    except ValueError:
        return None
    data = document.get("data") if isinstance(document, dict) else None
    if not isinstance(data, list):
        return None
    pairs = []
    for item in data:
        if not isinstance(item, dict):
            return None
        index, embedding = item.get("index"), item.get("embedding")
        if type(index) is not int or not isinstance(embedding, list):
            return None
        pairs.append((index, embedding))
    return pairs
