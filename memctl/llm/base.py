"""The Judge: everything the LLM phases ask, answered by an LLM or by the offline rules."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any, Generic, Optional, Sequence, TypeVar

from pydantic import BaseModel

from memctl.llm.prompts import Prompt
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
    #: failed transiently (timeouts, 429, 5xx) after every retry: asking again one by one would not help
    outage: bool = False
    #: a completion arrived, usable or not: an unusable reply is not an outage (DESIGN 4)
    answered: bool = False


class Judge:
    """Answers the three questions the LLM phases ask; subclasses must be thread-safe.

    The defaults are those of a judge without a model or client (the offline rules).
    """

    #: identifies the model (and provider) in verdict-cache keys, e.g. "offline-v1" or "gpt-4o-mini"
    model: str
    #: the answers are the decision layer's own rules, not a model's (they carry no quotes to check)
    rules: bool = False
    #: whether `ask_many` answers several questions in one request
    batches: bool = False
    _refusals = 0
    _refusal_lock = threading.Lock()

    def template_hash(self, kind: str) -> str:
        """Return the hash of the prompt template (or rule set) used for `kind` (consolidate | contradiction | absorb)."""
        raise NotImplementedError

    def consolidate(self, notes: Sequence[NoteRecord], reference_date: str) -> JudgeResult:
        """Ask for one note that keeps every distinct fact of `notes` (a ConsolidationReply)."""
        raise NotImplementedError

    def contradiction(self, a: NoteRecord, b: NoteRecord) -> JudgeResult:
        """Ask whether `a` and `b` contradict each other (a ContradictionReply)."""
        raise NotImplementedError

    def absorption(self, broader: NoteRecord, narrower: NoteRecord) -> JudgeResult:
        """Ask whether `broader` already states every fact of `narrower` (an AbsorptionReply)."""
        raise NotImplementedError

    def prompt(self, kind: str) -> Optional[Prompt]:
        """Return the prompt template `kind` is asked with (None: the judge has none)."""
        return None

    def consolidation_fits(self, notes: Sequence[NoteRecord], reference_date: str) -> bool:
        """Return whether asking to consolidate `notes` fits the model's context window."""
        return True

    def ask_many(self, kind: str, items: Sequence[Any], reference_date: Optional[str] = None) -> JudgeResult:
        """Ask several questions of `kind` (their `question_data`) in one request (only if `batches`)."""
        raise NotImplementedError(f"{type(self).__name__} asks one question per request")

    def batch_fits(self, kind: str, items: Sequence[Any], reference_date: Optional[str] = None) -> bool:
        """Return whether asking `items` in one request fits the model's context window."""
        return True

    def counters(self) -> dict[str, int]:
        """Return the client's request, retry, timeout, fallback and back-off counts so far (none without a client)."""
        return {}

    def concurrency_mark(self) -> int:
        """Return a mark of now for `concurrency_reached`."""
        return 0

    def concurrency_reached(self, mark: int) -> tuple[int, int]:
        """Return the highest concurrency bound the client used since `mark`, and its bound now."""
        return 0, 0

    def batch_refused(self) -> int:
        """Count a request of several questions answered with no usable answer; return the count so far."""
        with self._refusal_lock:
            self._refusals += 1
            return self._refusals

    @property
    def batch_refusals(self) -> int:
        """How many requests of several questions this judge answered with no usable answer."""
        return self._refusals

    def close(self) -> None:
        """Close the client's connections (best effort; nothing to close without a client)."""
