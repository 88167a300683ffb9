"""Ask a judge many questions: cached answers first, then concurrent calls, new answers cached.

Both LLM phases ask this way. A question whose key (kind, template hash, model, inputs) is in
the verdict cache is never asked again. The rest are asked with bounded concurrency; a reply
that parses and that the phase's `valid` check accepts is cached, anything else is reported as
an error for that question only and asked again next run.

What the LLM client did meanwhile (retries, timeouts, response-format fallbacks, concurrency
back-offs, deterministic errors not retried) is taken from its counters before and after, so a
step's output says how hard the answers were to get.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Sequence

from pydantic import BaseModel, ValidationError

from memctl.llm.base import Judge, JudgeResult, Usage
from memctl.phases.base import PhaseContext
from memctl.stopping import RunStopped, gather
from memctl.store.verdicts import VerdictCache, verdict_key


@dataclass(frozen=True)
class Question:
    """One question to a judge: its kind, the inputs that identify it, and how to ask it."""

    kind: str
    inputs: Any
    ask: Callable[[], JudgeResult]


@dataclass
class Answer:
    """A judge's parsed reply (or why there is none), and what it cost."""

    key: str
    reply: Optional[BaseModel] = None
    error: Optional[str] = None
    cached: bool = False
    usage: Usage = field(default_factory=Usage)
    calls: int = 0


@dataclass
class AskStats:
    asked: int = 0
    cached: int = 0
    failed: int = 0
    calls: int = 0
    usage: Usage = field(default_factory=Usage)
    #: the LLM client's counters over these questions: llmRetries, llmTimeouts, llmFormatFallbacks, ...
    client: dict[str, int] = field(default_factory=dict)

    def as_dict(self) -> dict[str, int]:
        return {
            "llmCalls": self.calls, "questionsAsked": self.asked, "cacheHits": self.cached, "failedReplies": self.failed,
            "promptTokens": self.usage.prompt_tokens, "completionTokens": self.usage.completion_tokens, "tokens": self.usage.total,
            **self.client,
        }


#: client counter -> step output key
CLIENT_COUNTERS = {
    "retries": "llmRetries",
    "timeouts": "llmTimeouts",
    "formatFallbacks": "llmFormatFallbacks",
    "concurrencyBackoffs": "llmConcurrencyBackoffs",
    "deterministicErrors": "llmDeterministicErrors",
}


def client_counters(judge: Judge) -> dict[str, int]:
    """Return the judge's client counters (none for the offline provider)."""
    counters = getattr(judge, "counters", None)
    return counters() if callable(counters) else {}


def counters_since(judge: Judge, before: dict[str, int]) -> dict[str, int]:
    """Return the step-output counts of what the judge's client did since `before` was taken."""
    now = client_counters(judge)
    if not now:
        return {}
    return {key: now.get(name, 0) - before.get(name, 0) for name, key in CLIENT_COUNTERS.items()}


def question_key(judge: Judge, question: Question) -> str:
    """Return the verdict-cache key of `question` for `judge`."""
    return verdict_key(question.kind, judge.template_hash(question.kind), judge.model, question.inputs)


def ask_all(
    ctx: PhaseContext,
    judge: Judge,
    questions: Sequence[Question],
    reply_model: type[BaseModel],
    valid: Callable[[Question, BaseModel], Optional[str]] = lambda q, r: None,
    cacheable: Callable[[BaseModel], bool] = lambda r: True,
) -> tuple[list[Answer], AskStats]:
    """Answer every question, in order; return the answers and what it cost."""
    cache = VerdictCache(ctx.engine, ctx.dry_run)
    keys = [question_key(judge, q) for q in questions]
    cached = cache.get_many(keys)
    answers: list[Optional[Answer]] = [None] * len(questions)
    stats = AskStats()
    to_ask: list[int] = []
    for i, key in enumerate(keys):
        if key in cached:
            try:
                answers[i] = Answer(key, reply_model.model_validate(cached[key]), cached=True)
                stats.cached += 1
                continue
            except ValidationError:
                pass  # an entry this memctl cannot read any more: ask again
        to_ask.append(i)

    def one(i: int) -> Answer:
        question = questions[i]
        try:
            result = question.ask()
        except Exception as exc:  # noqa: BLE001 - one failed question must not sink the others
            return Answer(keys[i], error=f"{type(exc).__name__}: {exc}")
        answer = Answer(keys[i], result.reply, result.error, usage=result.usage, calls=result.calls)
        if answer.reply is not None and answer.error is None:
            problem = valid(question, answer.reply)
            if problem:
                answer.error, answer.reply = problem, None
        return answer

    def answered(position: int, answer: Answer) -> None:
        answers[to_ask[position]] = answer
        ctx.reporter.advance()

    before = client_counters(judge)
    ctx.reporter.start(f"asking {judge.model}", total=len(to_ask))
    try:
        gather(one, to_ask, max(1, ctx.settings.llm_concurrency), ctx.deadline, answered, f"while waiting for {judge.model}'s answers")
    except RunStopped:
        # Keep what was answered before the stop, so the next run does not ask it again; a
        # failure to do so must not hide why the run stopped.
        try:
            _tally(ctx, judge, questions, [i for i in to_ask if answers[i] is not None], answers, cacheable, cache, stats)
        except Exception:  # noqa: BLE001
            pass
        raise
    finally:
        ctx.reporter.finish()
    _tally(ctx, judge, questions, to_ask, answers, cacheable, cache, stats)
    stats.client = counters_since(judge, before)
    return [a for a in answers if a is not None], stats


def _tally(
    ctx: PhaseContext, judge: Judge, questions: Sequence[Question], asked: Sequence[int], answers: Sequence[Optional[Answer]],
    cacheable: Callable[[BaseModel], bool], cache: VerdictCache, stats: AskStats,
) -> None:
    """Count what the questions at `asked` cost and cache their valid, cacheable answers."""
    new_entries = []
    for i in asked:
        answer = answers[i]
        assert answer is not None
        stats.asked += 1
        stats.calls += answer.calls
        stats.usage = stats.usage + answer.usage
        if answer.reply is None:
            stats.failed += 1
        elif cacheable(answer.reply):
            new_entries.append((answer.key, questions[i].kind, judge.model, answer.reply.model_dump(mode="json")))
    cache.put_many(new_entries, ctx.settings.current_time())
