"""Build the judge and the embedder the settings ask for."""

from __future__ import annotations

from memctl.embed import make_embedder
from memctl.embed.base import Embedder
from memctl.errors import ConfigError
from memctl.llm.base import Judge
from memctl.llm.offline import OfflineJudge
from memctl.settings import Settings


def make_judge(settings: Settings) -> Judge:
    """Return the LLM judge when an LLM is configured, else the offline provider."""
    if settings.llm_model and (settings.llm_base_url or settings.llm_api_key):
        # the client imports openai, which is slow: only a run with an LLM configured loads it
        from memctl.llm.client import LLMClient
        from memctl.llm.judge import LLMJudge

        client = LLMClient(
            settings.llm_base_url, settings.llm_api_key, settings.llm_model,
            timeout=settings.llm_timeout, max_retries=settings.llm_max_retries, concurrency=settings.llm_concurrency,
            concurrency_max=settings.llm_concurrency_max,
            response_format=settings.llm_response_format, system_role=settings.llm_system_role,
            log_path=settings.llm_log, secrets=settings.secrets(),
        )
        return LLMJudge(client, context_tokens=settings.llm_context_tokens, max_note_chars=settings.max_note_chars)
    if settings.llm_base_url and not settings.llm_model:
        raise ConfigError("llm_base_url is set but llm_model is not: set MEMCTL_LLM_MODEL (or unset the base URL to use the offline provider)")
    return OfflineJudge()


def make_compute_embedder(settings: Settings) -> Embedder:
    """Return the embedder that computes vectors for notes without usable stored ones.

    With the `stored` provider, rows lacking a stored vector of the configured model are embedded
    by the offline hashing embedder (their whole partition, so a partition never mixes models).
    """
    provider = "hashing" if settings.embed_provider == "stored" else settings.embed_provider
    model = None if settings.embed_provider == "stored" else settings.embed_model
    try:
        return make_embedder(
            provider, model, base_url=settings.embed_base_url or settings.llm_base_url,
            api_key=settings.embed_api_key or settings.llm_api_key, batch_size=settings.embed_batch_size,
        )
    except (ValueError, ImportError) as exc:
        raise ConfigError(f"cannot build the {settings.embed_provider} embedder: {exc}") from None
