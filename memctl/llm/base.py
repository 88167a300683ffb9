"""The Judge protocol: what the LLM phases ask, answered by an LLM or by the offline provider."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Generic, Optional, Protocol, Sequence, TypeVar

from pydantic import BaseModel

from memctl.records import NoteRecord

R = TypeVar("R", bound=BaseModel)


@dataclass(frozen=True)
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def __add__(self, other: "Usage") -> "Usage":
        return Usage(self.prompt_tokens + other.prompt_tokens, self.completion_tokens + other.completion_tokens)

    @property
    def total(self) -> int:
        return self.prompt_tokens + self.completion_tokens


@dataclass(frozen=True)
class JudgeResult(Generic[R]):
    """A parsed reply, or the reason there is none. `calls` counts HTTP requests made (retries included)."""

    reply: Optional[R]
    error: Optional[str] = None
    usage: Usage = field(default_factory=Usage)
    calls: int = 0
    raw: Optional[str] = None
    #: the request failed for a transient reason after every retry (timeouts, 429, 5xx): the server
    #: is failing, so asking the same questions again one by one would not help
    outage: bool = False
    #: a completion arrived, usable or not: an unusable reply is not an outage (DESIGN 4)
    answered: bool = False


class Judge(Protocol):
    """Answers the three questions the LLM phases ask. Implementations must be thread-safe."""

    #: identifies the model (and provider) in verdict-cache keys, e.g. "offline-v1" or "gpt-4o-mini"
    model: str

    def template_hash(self, kind: str) -> str:
        """Return the hash of the prompt template used for `kind` (consolidate | contradiction | absorb)."""
        ...

    def consolidate(self, notes: Sequence[NoteRecord], reference_date: str) -> JudgeResult:
        """Ask for one note that keeps every distinct fact of `notes` (a ConsolidationReply)."""
        ...

    def contradiction(self, a: NoteRecord, b: NoteRecord) -> JudgeResult:
        """Ask whether `a` and `b` contradict each other (a ContradictionReply)."""
        ...

    def absorption(self, broader: NoteRecord, narrower: NoteRecord) -> JudgeResult:
        """Ask whether `broader` already states every fact of `narrower` (an AbsorptionReply)."""
        ...
