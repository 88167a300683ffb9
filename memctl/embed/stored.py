"""Vectors as the store keeps them: AIAgentNote.EmbeddingVector is a JSON array of floats.

Rows are written by other systems, so decoding is defensive: anything but a non-empty array of
finite numbers reads as "no vector", and the note is embedded by the configured embedder instead.
"""

from __future__ import annotations

import hashlib
import json
import math
from typing import Any, Optional, Sequence

import numpy as np

try:  # parses a stored vector's JSON much faster than json
    import orjson as _orjson
except ImportError:  # pragma: no cover - a dependency; json alone gives the same vectors, slower
    _orjson = None  # type: ignore[assignment]


def decode_vector(text: str | None) -> np.ndarray | None:
    """Parse an EmbeddingVector column into float32, or None when empty, invalid or non-finite."""
    if text is None or not text.strip():
        return None
    try:
        values = json.loads(text)
    except (ValueError, RecursionError):  # RecursionError: arrays nested thousands deep
        return None
    if not isinstance(values, list) or not values:
        return None
    if not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in values):
        return None
    try:
        if not all(math.isfinite(x) for x in values):
            return None
        with np.errstate(over="ignore"):
            vector = np.asarray(values, dtype=np.float32)
    except OverflowError:  # an integer beyond any float
        return None
    if not np.isfinite(vector).all():  # a finite float64 can still overflow float32
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


def decode_stored(text: Optional[str]) -> Optional[np.ndarray]:
    """Return `decode_vector(text)`, faster (orjson and numpy) when the text is a JSON array of floats."""
    if text is None:
        return None
    try:
        values = _loads(text)
    except (ValueError, RecursionError):
        return None
    if type(values) is not list or not values or set(map(type, values)) != {float}:
        return decode_vector(text)
    array = np.array(values, dtype=np.float64)
    if not np.isfinite(array).all():
        return None
    with np.errstate(over="ignore"):
        vector = array.astype(np.float32)  # a finite float64 can still overflow float32
    return vector if np.isfinite(vector).all() else None


def _loads(text: str) -> Any:
    """Parse JSON with orjson, falling back to json for what orjson refuses (NaN, Infinity, lone surrogates,
    deep nesting). Both give the same float32 for huge integers."""
    if _orjson is not None and type(text) is str:  # the column's type; anything else as json reads it
        try:
            return _orjson.loads(text)
        except _orjson.JSONDecodeError:
            pass
    return json.loads(text)


def decode_many(texts: Sequence[str]) -> list[Optional[np.ndarray]]:
    """Decode stored vector texts (through the module's `decode_stored`, which tests wrap)."""
    return [decode_stored(t) for t in texts]
