"""Vectors as the store keeps them: AIAgentNote.EmbeddingVector is a JSON array of floats.

Rows are written by other systems, so decoding is defensive: anything that is not a non-empty
array of finite numbers reads as "no vector", and the note is embedded by the configured embedder
instead of poisoning a partition with NaNs.
"""

from __future__ import annotations

import hashlib
import json
import math

import numpy as np


def decode_vector(text: str | None) -> np.ndarray | None:
    """Parse an EmbeddingVector column into float32, or None when empty, invalid or non-finite."""
    if text is None or not text.strip():
        return None
    try:
        values = json.loads(text)
    except ValueError:
        return None
    if not isinstance(values, list) or not values:
        return None
    if not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in values):
        return None
    if not all(math.isfinite(x) for x in values):
        return None
    with np.errstate(over="ignore"):
        vector = np.asarray(values, dtype=np.float32)
    # a finite float64 can still overflow float32
    if not np.isfinite(vector).all():
        return None
    return vector


def encode_vector(vector: np.ndarray) -> str:
    """Render a vector as compact JSON (shortest float32 round-trip digits)."""
    v = np.asarray(vector, dtype=np.float32).reshape(-1)
    if not np.isfinite(v).all():
        raise ValueError("cannot encode a vector with NaN or infinite components")
    return "[" + ",".join(str(x) for x in v) + "]"


def content_hash(text: str) -> str:
    """Return the sha256 hex digest of a note's text: the content part of an embedding-cache key."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
