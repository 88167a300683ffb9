"""Embedding providers, the factory that builds one from settings, and per-embedder thresholds.

Cosine distributions differ between models, so the thresholds belong to the embedder; the values
below come from benchmarks/eval_similarity.py (tuned on half of PersonaChat and SICK_train).
"""

from __future__ import annotations

from memctl.embed.base import Embedder
from memctl.embed.hashing import NAME as HASHING_NAME
from memctl.embed.hashing import HashingEmbedder
from memctl.embed.local import DEFAULT_MODEL as LOCAL_MODEL
from memctl.embed.local import SentenceTransformerEmbedder

__all__ = ["DEFAULT_THRESHOLDS", "PROVIDERS", "Embedder", "HashingEmbedder", "make_embedder", "thresholds_for"]

#: providers that compute vectors ("stored" vectors are read from the rows by memctl.vectors)
PROVIDERS = ("hashing", "openai", "sentence-transformers")

#: the spec's (consolidate, contradiction) thresholds, for semantic models (OpenAI's included)
SEMANTIC_DEFAULT: tuple[float, float] = (0.60, 0.70)

#: (consolidate, contradiction) cosine thresholds. Hashing's contradiction threshold is low because
#: same-attribute notes ("lives in Paris" / "lives in London") share only a word or two; extra
#: candidates cost judge calls, not wrong revocations. e5-small-q4 scores every pair high, so its
#: thresholds admit the same shares of hard negatives and contradictions as MiniLM's.
DEFAULT_THRESHOLDS: dict[str, tuple[float, float]] = {
    HASHING_NAME: (0.55, 0.34),
    "all-MiniLM-L6-v2": SEMANTIC_DEFAULT,
    "multilingual-e5-small-q4": (0.90, 0.90),
}


#: OpenAI models whose thresholds are taken to be the spec's semantic defaults
KNOWN_SEMANTIC = ("text-embedding-3-small", "text-embedding-3-large", "text-embedding-ada-002")


def _base_name(embedder_name: str) -> str:
    """Return a model's own name, lowercased: "sentence-transformers/all-MiniLM-L6-v2" or a local path ending in it."""
    return embedder_name.rstrip("/\\").replace("\\", "/").rsplit("/", 1)[-1].lower()


def warn_unmeasured(embedder_name: str) -> bool:
    """Warn when memctl has no measured thresholds for `embedder_name`; return whether it warned."""
    import logging

    known = {n.lower() for n in (*DEFAULT_THRESHOLDS, *KNOWN_SEMANTIC)}
    if _base_name(embedder_name) in known or embedder_name.startswith(HASHING_NAME):
        return False
    logging.getLogger("memctl.embed").warning(
        "no measured similarity thresholds for embedding model %r: using the spec's %.2f / %.2f; measure them with "
        "`memctl eval` (contradiction pairing) and benchmarks/eval_similarity.py, then set consolidate_threshold "
        "and contradiction_threshold",
        embedder_name, *SEMANTIC_DEFAULT,
    )
    return True


def thresholds_for(embedder_name: str) -> tuple[float, float]:
    """Return the (consolidate, contradiction) cosine thresholds for an embedder name."""
    if embedder_name in DEFAULT_THRESHOLDS:
        return DEFAULT_THRESHOLDS[embedder_name]
    # other dimensions of the hashing embedder ("memctl-hashing-v2:512") share its thresholds
    if embedder_name.startswith(HASHING_NAME + ":"):
        return DEFAULT_THRESHOLDS[HASHING_NAME]
    return {name.lower(): t for name, t in DEFAULT_THRESHOLDS.items()}.get(_base_name(embedder_name), SEMANTIC_DEFAULT)


def make_embedder(
    provider: str,
    model: str | None = None,
    base_url: str | None = None,
    api_key: str | None = None,
    batch_size: int = 256,
) -> Embedder:
    """Build the configured embedder; heavy client libraries are imported only when chosen."""
    kind = provider.strip().lower()
    if kind == "hashing":
        if model in (None, "", HASHING_NAME):
            return HashingEmbedder()
        prefix = HASHING_NAME + ":"
        if model.startswith(prefix) and model[len(prefix) :].isdigit():
            return HashingEmbedder(dim=int(model[len(prefix) :]))
        raise ValueError(f"unknown hashing model {model!r}: use {HASHING_NAME!r} or '{prefix}<dim>'")
    if kind == "stored":
        raise ValueError("'stored' vectors are read from the rows, not computed: build a compute provider instead")
    if kind == "openai":
        from memctl.embed.openai import DEFAULT_MODEL, OpenAIEmbedder

        warn_unmeasured(model or DEFAULT_MODEL)
        return OpenAIEmbedder(model or DEFAULT_MODEL, base_url=base_url, api_key=api_key, batch_size=batch_size)
    if kind in ("sentence-transformers", "local"):
        return SentenceTransformerEmbedder(model or LOCAL_MODEL, batch_size=min(batch_size, 256))
    raise ValueError(f"unknown embedding provider {provider!r}: choose one of {', '.join(PROVIDERS)}")
