from __future__ import annotations

from typing import Protocol, Sequence

import numpy as np


class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors."""

    #: the model identifier: part of embedding-cache keys, compared with a row's EmbeddingModelID
    name: str

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Return a (len(texts), dim) float32 array of unit-length rows (zero rows for empty text)."""
        ...
