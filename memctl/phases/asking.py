"""Ask a judge many questions: cached answers first, then concurrent calls, new answers cached.

A question whose verdict-cache key (kind, template hash, model, inputs) holds a reply that still
passes today's checks is not asked again. A reply that arrived but cannot be used (not the schema,
cut off, a copy, invalid by the phase's `valid`) is no outage (DESIGN 4): its unit stays as it is
and the question is paused (memctl/store/pauses.py); a failed call is asked again next run.

Questions with an `item` may share one request (up to `questions_per_call`, one kind, shared
value and group per request, halved until it fits the context window). Each entry of the reply is
checked as a single reply is; a bad entry is asked again alone, unless the request itself failed
(an outage), where asking one by one would only multiply the load. Cache entries are per question,
so batched and single answers are interchangeable.
"""

from __future__ import annotations

import json
import logging
import re
from collections import defaultdict
from contextlib import suppress
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Callable, Mapping, Optional, Sequence

from pydantic import BaseModel, ValidationError

from memctl.context import PhaseContext
from memctl.llm.base import Judge, JudgeResult, Usage
from memctl.llm.copies import copied_example, examples_for
from memctl.stopping import Pool, RunStopped
from memctl.store.pauses import Pause, Pauses
from memctl.store.verdicts import VerdictCache, verdict_key

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Question:
    """One question to a judge: its kind, the inputs that identify it, and how to ask it."""

    kind: str
    inputs: Any
    ask: Callable[[], JudgeResult]
    #: what the judge is shown when asked with others in one request; None: always asked alone
    item: Any = None
    #: what the request shares besides the prompt (the consolidation prompt's reference date)
    shared: Optional[str] = None
    #: questions share a request only within one group. Consolidation sets its partition, so a
    #: model that mixes up items never writes one partition's facts into another's merged note.
    group: Optional[str] = None
    #: why this question's raw reply text (or batched entry) cannot be used, or None
    vet: Optional[Callable[[Optional[str]], Optional[str]]] = None


@dataclass
class Answer:
    """A judge's parsed reply (or why there is none), and what it cost."""

    key: str
    reply: Optional[BaseModel] = None
    error: Optional[str] = None
    cached: bool = False
    usage: Usage = field(default_factory=Usage)
    calls: int = 0
    #: how many questions shared the request that answered this one (0: asked alone)
    batch: int = 0
    #: a reply arrived but cannot be used: the question is paused, and it is no outage
    unusable: bool = False
    #: not asked: paused after an earlier unusable reply
    paused: Optional[Pause] = None


@dataclass
class AskStats:
    asked: int = 0
    cached: int = 0
    #: questions asked that got no usable answer: unusable replies and failed calls
    failed: int = 0
    #: of `failed`, the questions whose reply arrived but could not be used (now paused)
    unusable: int = 0
    #: questions not asked: paused after an earlier unusable reply
    paused: int = 0
    calls: int = 0
    usage: Usage = field(default_factory=Usage)
    #: the LLM client's counters over these questions (llmRetries, llmTimeouts, ...)
    client: dict[str, int] = field(default_factory=dict)
    #: when paused questions are asked again: time -> how many
    ask_again: dict[datetime, int] = field(default_factory=dict)

    def will_ask_again(self, pause: Pause) -> None:
        self.ask_again[pause.ask_again_at] = self.ask_again.get(pause.ask_again_at, 0) + 1


#: a phase whose every question got an unusable reply fails once it asked at least this many
UNUSABLE_FAILS = 5


def no_usable_answer(stats: AskStats, first: str, counts: str = "") -> Optional[str]:
    """Return why a phase must fail, or None (DESIGN 4): only when no question got a usable answer.

    The LLM could not be reached when no reply arrived at all; replies that arrived were all
    unusable when at least `UNUSABLE_FAILS` questions were asked. `first`: the first failure;
    `counts`: what failed, in the phase's words.
    """
    asked, failed = stats.asked, stats.failed
    if not asked or failed < asked:
        return None
    if not stats.unusable:
        return f"every judge call failed ({failed}{': ' + counts if counts else ''}): the LLM could not be reached; first: {first}"
    if asked < UNUSABLE_FAILS:
        return None
    counted = f" ({counts})" if counts else ""
    return f"no usable answer: every one of the {asked} questions asked got an unusable reply{counted}; first: {first}"


#: how many dates the step output lists under "askAgainAt"
ASK_AGAIN_SHOWN = 20


def ask_again_output(ask_again: dict[datetime, int]) -> dict[str, int]:
    """Return when paused questions are asked again as step output: ISO time -> questions, earliest first."""
    return {when.isoformat(): count for when, count in sorted(ask_again.items())[:ASK_AGAIN_SHOWN]}


def ask_again_text(ask_again: Mapping[str, Any]) -> str:
    """Return a step's "askAgainAt" in words: "1 question from 2026-03-03 02:00 UTC, 2 from ..."."""
    parts = []
    for when, count in sorted(ask_again.items())[:3]:
        try:
            shown = datetime.fromisoformat(when).strftime("%Y-%m-%d %H:%M UTC")
        except (TypeError, ValueError):
            shown = str(when)
        parts.append(f"{count} from {shown}")
    more = len(ask_again) - len(parts)
    text = ", ".join(parts) + (f" and {more} later" if more > 0 else "")
    return text.replace(" from ", " question from " if text.startswith("1 ") else " questions from ", 1)


#: client counter -> step output key
CLIENT_COUNTERS = {
    "retries": "llmRetries",
    "timeouts": "llmTimeouts",
    "formatFallbacks": "llmFormatFallbacks",
    "concurrencyBackoffs": "llmConcurrencyBackoffs",
    "deterministicErrors": "llmDeterministicErrors",
}


#: step output keys that are levels, not counts (see `add_client_counters`)
CONCURRENCY_PEAK, CONCURRENCY_END = "llmConcurrencyPeak", "llmConcurrencyEnd"


def add_client_counters(into: dict[str, int], counts: dict[str, int]) -> None:
    """Add one asking's client counters to a phase's: counts add up, peak is the max, end the last."""
    for key, value in counts.items():
        if key == CONCURRENCY_PEAK:
            into[key] = max(into.get(key, 0), value)
        elif key == CONCURRENCY_END:
            into[key] = value
        else:
            into[key] = into.get(key, 0) + value


def client_counters(judge: Judge) -> dict[str, int]:
    """Return the judge's client counters (none for the offline provider), with a concurrency mark."""
    out = judge.counters()
    if out:
        out["concurrencyMark"] = judge.concurrency_mark()
    return out


def counters_since(judge: Judge, before: dict[str, int]) -> dict[str, int]:
    """Return the step-output counts of what the judge's client did since `before` was taken.

    Includes `llmConcurrencyPeak` and `llmConcurrencyEnd`: the highest and final bound on requests in flight.
    """
    now = client_counters(judge)
    if not now:
        return {}
    out = {key: now.get(name, 0) - before.get(name, 0) for name, key in CLIENT_COUNTERS.items()}
    if "concurrencyMark" in before:
        out[CONCURRENCY_PEAK], out[CONCURRENCY_END] = judge.concurrency_reached(before["concurrencyMark"])
    return out


def question_key(judge: Judge, question: Question) -> str:
    """Return the verdict-cache key of `question` for `judge`."""
    return verdict_key(question.kind, judge.template_hash(question.kind), judge.model, question.inputs)


Check = Callable[[Question, BaseModel], Optional[str]]


@dataclass
class Triage:
    """Which questions are answered from the cache, which are paused, which must be asked."""

    keys: list[str]
    #: index -> the cached reply, which passes today's checks
    cached: dict[int, BaseModel]
    #: keys whose cached reply does not pass them any more: forgotten once asked again
    stale: set[str]
    #: the pauses recorded for the questions not answered from the cache (ended ones too)
    pauses: dict[str, Pause]
    #: indices of questions paused now: not asked this run
    paused: list[int]
    #: indices of questions to ask
    fresh: list[int]

    def add(self, part: "Triage", offset: int) -> None:
        """Append `part`, the triage of the questions from index `offset` on."""
        self.keys.extend(part.keys)
        self.cached.update((offset + i, reply) for i, reply in part.cached.items())
        self.stale |= part.stale
        self.pauses.update(part.pauses)
        self.paused.extend(offset + i for i in part.paused)
        self.fresh.extend(offset + i for i in part.fresh)


def _check(examples: Mapping[str, Any], valid: Check) -> Check:
    """Return the check every reply must pass: it copies no prompt example (`examples`, by kind), and `valid`.

    Thread-safe while `examples` only grows.
    """

    def check(question: Question, reply: BaseModel) -> Optional[str]:
        return copied_example(examples[question.kind], reply.model_dump(mode="json"), question.inputs) or valid(question, reply)

    return check


def triage(ctx: PhaseContext, judge: Judge, questions: Sequence[Question], reply_model: type[BaseModel], check: Check) -> Triage:
    """Sort `questions` into cached, paused and to ask (reads only)."""
    keys = [question_key(judge, q) for q in questions]
    stored = VerdictCache(ctx.engine, ctx.dry_run).get_many(keys)
    cached: dict[int, BaseModel] = {}
    stale: set[str] = set()
    rest: list[int] = []
    for i, key in enumerate(keys):
        if key in stored:
            try:
                reply = reply_model.model_validate(stored[key])
            except ValidationError:
                reply = None  # an entry this memctl cannot read any more: ask again
            if reply is not None and check(questions[i], reply) is None:
                cached[i] = reply
                continue
            stale.add(key)
        rest.append(i)
    pauses = Pauses(ctx.engine, ctx.dry_run).get_many(keys[i] for i in rest)
    paused = [i for i in rest if keys[i] in pauses and pauses[keys[i]].ask_again_at > ctx.now]
    waiting = set(paused)
    return Triage(keys, cached, stale, pauses, paused, [i for i in rest if i not in waiting])


#: at most this many questions are held to be sorted out together (see `Asking`)
HOLD_AT_MOST = 64


def ask_all(
    ctx: PhaseContext,
    judge: Judge,
    questions: Sequence[Question],
    reply_model: type[BaseModel],
    valid: Check = lambda q, r: None,
    budget: Optional[int] = None,
) -> tuple[dict[int, Answer], AskStats]:
    """Answer the questions; return the answers by question index, in order, and the cost.

    A paused question's answer carries its pause. With a `budget`, at most that many questions are
    asked: every cached and paused one is answered, the questions over it are left out.
    """
    with Asking(ctx, judge, reply_model, valid, budget=budget) as asking:
        asking.submit(questions)
        return asking.finish()


class Asking:
    """Questions sent as soon as they are known, while the caller goes on; answered by `finish()`.

    `submit` triages questions and hands their requests to `llm_workers` threads, so the caller can
    plan its next partition meanwhile. A request only holds questions of one submission, so
    submitting piecewise makes the same requests as submitting all at once. Submissions are held
    (up to `HOLD_AT_MOST`) and triaged in one read while sending them would gain nothing: every
    thread is busy, or the last ones needed no request. `eager=False` holds everything until
    `finish()`. At most `budget` questions are asked, the first ones that need a request; the others
    get no answer. As a context manager, leaving early abandons requests in flight and, on RunStopped,
    caches what was answered.
    """

    def __init__(
        self,
        ctx: PhaseContext,
        judge: Judge,
        reply_model: type[BaseModel],
        valid: Check = lambda q, r: None,
        eager: bool = True,
        budget: Optional[int] = None,
    ) -> None:
        self.ctx, self.judge, self.reply_model, self.eager, self.budget = ctx, judge, reply_model, eager, budget
        self.before = client_counters(judge)
        self.examples: dict[str, Any] = {}  # the prompts' examples by kind, read as kinds are first sent
        #: why a reply cannot be used: a copy of the prompt's example, or the phase's `valid` (thread-safe)
        self.check = _check(self.examples, valid)
        # every question sorted out so far, by index: its triage and its answer (None: not answered yet)
        self.questions: list[Question] = []
        self.sorted_out = Triage([], {}, set(), {}, [], [])
        self.answers: list[Optional[Answer]] = []
        self.stats = AskStats()
        self.held: list[list[Question]] = []  # submissions not sorted out yet
        self.quiet = False  # the last questions sorted out needed no request
        self.pool = Pool(ctx.settings.llm_workers)  # threads: the most requests that may be in flight
        self.sent: dict[int, Any] = {}  # pool job -> its batch (indices) or the index asked again alone
        self.batches: list[int] = []  # how many questions each request of several sent first holds
        self.spent: dict[int, Answer] = {}  # what a batch spent on a question asked again alone
        self.reporting = self.closed = False

    @property
    def held_questions(self) -> int:
        """How many questions are held, not sorted out yet."""
        return sum(len(submission) for submission in self.held)

    def __enter__(self) -> "Asking":
        return self

    def __exit__(self, kind: object, exc: object, tb: object) -> None:
        if not self.closed:
            self._close(isinstance(exc, RunStopped))

    def submit(self, questions: Sequence[Question]) -> None:
        """Add `questions` (answered in this order after those submitted before) and send their requests."""
        if questions:
            self.held.append(list(questions))
        if not self.eager:
            return
        if self.held_questions >= HOLD_AT_MOST or (self.held and not self.quiet and not self.pool.waiting):
            self._send()
        self._collect(self.pool.ready())

    def flush(self) -> None:
        """Send what is held now and take the answers that came (for a caller with no more questions yet)."""
        if self.held and self.eager:
            self._send()
        self._collect(self.pool.ready())

    def _send(self) -> None:
        """Sort out the held submissions in one read and send their requests, a submission's own."""
        offset, submissions, self.held = len(self.questions), self.held, []
        questions = [q for submission in submissions for q in submission]
        for kind in {q.kind for q in questions} - self.examples.keys():
            self.examples[kind] = examples_for(self.judge, kind)
        part = triage(self.ctx, self.judge, questions, self.reply_model, self.check)
        if self.budget is not None:
            part.fresh = part.fresh[: self.budget]
            self.budget -= len(part.fresh)
        self.questions.extend(questions)
        self.sorted_out.add(part, offset)
        self.answers.extend([None] * len(questions))
        for i, reply in part.cached.items():
            self.answers[offset + i] = Answer(part.keys[i], reply, cached=True)
        for i in part.paused:
            pause = part.pauses[part.keys[i]]
            replies = "reply" if pause.unusable == 1 else "replies"
            why = f"paused: {pause.unusable} unusable {replies} in a row, asked again from {pause.ask_again_at.isoformat()}"
            self.answers[offset + i] = Answer(part.keys[i], error=why, paused=pause)
            self.stats.will_ask_again(pause)
        self.stats.cached += len(part.cached)
        self.stats.paused += len(part.paused)
        fresh = [offset + i for i in part.fresh]
        self.quiet = not fresh
        start = offset
        for submission in submissions:
            end = start + len(submission)
            for job in _jobs(self.ctx, self.judge, self.questions, [i for i in fresh if start <= i < end]):
                if len(job) > 1:
                    self.batches.append(len(job))
                self.sent[self.pool.submit(self._many, job)] = job
            start = end

    def _one(self, i: int) -> Answer:
        question, key = self.questions[i], self.sorted_out.keys[i]
        try:
            result = question.ask()
        except Exception as exc:  # noqa: BLE001 - one failed question must not sink the others
            return Answer(key, error=f"{type(exc).__name__}: {exc}")
        answer = Answer(key, result.reply, result.error, usage=result.usage, calls=result.calls)
        if answer.reply is not None and answer.error is None:
            problem = _reply_problem(question, result.raw, answer.reply, self.check)
            if problem:
                answer.error, answer.reply = problem, None
        answer.unusable = answer.reply is None and (result.answered or result.reply is not None)
        return answer

    def _many(self, indices: list[int]) -> list[tuple[int, Answer, bool]]:
        """Ask `indices` in one request; return (index, answer, ask again alone) for each."""
        judge, questions, n = self.judge, self.questions, len(indices)
        if n == 1 or judge.batch_refusals >= REFUSALS_BEFORE_ALONE:
            return [(i, self._one(i), False) for i in indices]
        first = questions[indices[0]]
        try:
            result = judge.ask_many(first.kind, [questions[i].item for i in indices], first.shared)
        except Exception as exc:  # noqa: BLE001 - then each is asked alone
            result = JudgeResult(reply=None, error=f"{type(exc).__name__}: {exc}")
        keys, shares = self.sorted_out.keys, _shares(result, n)
        answers = [Answer(keys[i], usage=usage, calls=calls, batch=n) for i, (usage, calls) in zip(indices, shares, strict=True)]

        def every(why: str, again: bool) -> list[tuple[int, Answer, bool]]:
            for answer in answers:
                answer.error = why
            return [(i, answer, again) for i, answer in zip(indices, answers)]

        entries = getattr(result.reply, "answers", None)
        if not isinstance(entries, list):
            if not result.outage:
                _refused(judge)
            return every(f"the request of {n} questions got no usable reply: {result.error or 'no answers'}", not result.outage)
        by_item: dict[int, list[Any]] = defaultdict(list)
        for entry in entries:
            number = entry.get("item") if isinstance(entry, dict) else None
            if isinstance(number, str) and _ITEM_TEXT.fullmatch(number.strip()):
                number = int(number)  # "1": a weak model's spelling of the number, unambiguous
            if isinstance(number, int) and not isinstance(number, bool):
                by_item[number].append(entry)
        misnumbered = _misnumbered(by_item, n)
        if misnumbered:
            # misnumbered answers could land on the wrong question: ask every question again alone
            return every(f"the request of {n} questions got answers numbered {misnumbered}: all asked again alone", True)
        understood = False
        for k, (i, answer) in enumerate(zip(indices, answers)):
            found = by_item.get(k + 1, [])
            answer.error, shaped = _entry_problem(questions[i], found, self.reply_model, self.check, answer)
            understood = understood or shaped
        # Refused only when no question got one answer of the reply's shape: answers that memctl's
        # checks turn down still show a judge that answers batches.
        if not result.outage and not understood and all(answer.error is not None for answer in answers):
            _refused(judge)
        return [(i, answer, answer.error is not None) for i, answer in zip(indices, answers)]

    def _collect(self, results: Sequence[tuple[int, Any]]) -> None:
        """Take finished jobs' answers (in the caller's thread); send what a batch left unanswered alone."""
        for job, value in results:
            what = self.sent.pop(job)
            if isinstance(what, list):
                for i, answer, again in value:
                    if again:
                        self.spent[i] = answer
                        self.sent[self.pool.submit(self._one, i)] = i
                    else:
                        self._answered(i, answer)
            else:
                before = self.spent[what]
                value.usage, value.calls = value.usage + before.usage, value.calls + before.calls
                self._answered(what, value)

    def _answered(self, i: int, answer: Answer) -> None:
        self.answers[i] = answer
        if self.reporting:
            self.ctx.reporter.advance()

    def finish(self) -> tuple[dict[int, Answer], AskStats]:
        """Wait for every answer; return them by question index in submission order, and what they cost."""
        ctx, judge, stats = self.ctx, self.judge, self.stats
        where = f"while waiting for {judge.model}'s answers"
        if self.held:
            self._send()
        fresh = self.sorted_out.fresh
        ctx.reporter.start(f"asking {judge.model}", total=len(fresh))
        self.reporting = True
        answered = sum(self.answers[i] is not None for i in fresh)
        if answered:
            ctx.reporter.advance(answered)
        if self.pool.submitted:  # a stop or an error here is closed by __exit__
            ctx.deadline.check(where)
        while self.pool.pending:
            self._collect([self.pool.next(ctx.deadline, where)])
        self._close(False)
        self._tally(fresh)
        stats.client = counters_since(judge, self.before)
        if self.batches:
            stats.client.update({"questionsBatched": sum(self.batches), "batchRequests": len(self.batches), "askedAgainAlone": len(self.spent)})
            if judge.batch_refusals >= REFUSALS_BEFORE_ALONE:
                stats.client["batchesRefused"] = judge.batch_refusals
        return {i: a for i, a in enumerate(self.answers) if a is not None}, stats

    def _close(self, stopped: bool) -> None:
        """Abandon the requests in flight; when the run was stopped, keep what was answered before."""
        self.closed = True
        self.pool.close()
        if self.reporting:
            self.ctx.reporter.finish()
        if stopped:
            # keep what was answered for the next run; a failure here must not hide why the run stopped
            with suppress(Exception):
                self._tally([i for i in self.sorted_out.fresh if self.answers[i] is not None])

    def _tally(self, asked: Sequence[int]) -> None:
        """Count what the questions at `asked` cost, cache their usable answers, pause the unusable ones."""
        ctx, model, stats, sorted_out = self.ctx, self.judge.model, self.stats, self.sorted_out
        new_entries, unusable, usable = [], [], []
        for i in asked:
            answer, kind = self.answers[i], self.questions[i].kind
            assert answer is not None
            stats.asked += 1
            stats.calls += answer.calls
            stats.usage = stats.usage + answer.usage
            if answer.reply is None:
                stats.failed += 1
                if answer.unusable:
                    stats.unusable += 1
                    unusable.append((answer.key, kind, model, answer.error or "unusable reply"))
                continue
            usable.append(answer.key)
            new_entries.append((answer.key, kind, model, answer.reply.model_dump(mode="json")))
        cache = VerdictCache(ctx.engine, ctx.dry_run)
        cache.forget(sorted_out.keys[i] for i in asked if sorted_out.keys[i] in sorted_out.stale)
        cache.put_many(new_entries, ctx.settings.current_time())
        pauses = Pauses(ctx.engine, ctx.dry_run)
        for pause in pauses.record(unusable, ctx.now, sorted_out.pauses).values():
            stats.will_ask_again(pause)
        pauses.clear(key for key in usable if key in sorted_out.pauses)


#: a judge that answered this many batched requests with no answer of the reply's shape (a weak
#: model that replies as if asked one question) is asked one question per request for the rest of the run
REFUSALS_BEFORE_ALONE = 2


def _refused(judge: Judge) -> None:
    count = judge.batch_refused()
    if count == REFUSALS_BEFORE_ALONE:
        log.warning(
            "%s answered %d requests of several questions with no usable answer; asking one question per request "
            "for the rest of the run (set questions_per_call = 1 for this model)", judge.model, count,
        )


_ITEM_TEXT = re.compile(r"[0-9]{1,4}")


def _misnumbered(by_item: dict[int, list[Any]], n: int) -> Optional[str]:
    """Return how a batched reply's item numbers show it may be off by some, or None.

    A number outside 1..n, or missing numbers all at the end (renumbered after a skipped one), makes
    every answer suspect; a gap in the middle leaves only that question unanswered.
    """
    numbers = sorted(by_item)
    if any(k < 1 or k > n for k in numbers):
        return ", ".join(str(k) for k in numbers[:12])
    if numbers and len(numbers) < n and numbers == list(range(1, len(numbers) + 1)):
        return f"1..{len(numbers)} of {n}"
    return None


def _jobs(ctx: PhaseContext, judge: Judge, questions: Sequence[Question], to_ask: Sequence[int]) -> list[list[int]]:
    """Return the requests to make: runs of up to questions_per_call questions that can share one."""
    per_call = ctx.settings.questions_per_call
    if per_call <= 1 or not judge.batches:
        return [[i] for i in to_ask]
    jobs: list[list[int]] = []
    groups: dict[tuple[str, Optional[str], Optional[str]], list[int]] = defaultdict(list)
    for i in to_ask:
        if questions[i].item is None:
            jobs.append([i])
        else:
            groups[(questions[i].kind, questions[i].shared, questions[i].group)].append(i)
    fits = judge.batch_fits
    for (kind, shared, _), members in groups.items():
        for start in range(0, len(members), per_call):
            jobs.extend(_fitting(members[start : start + per_call], kind, shared, questions, fits))
    return jobs


def _fitting(chunk: list[int], kind: str, shared: Optional[str], questions: Sequence[Question], fits: Any) -> list[list[int]]:
    """Return `chunk` halved until every part fits the context window (a single question always "fits")."""
    if len(chunk) <= 1 or fits(kind, [questions[i].item for i in chunk], shared):
        return [chunk]
    middle = (len(chunk) + 1) // 2
    return _fitting(chunk[:middle], kind, shared, questions, fits) + _fitting(chunk[middle:], kind, shared, questions, fits)


def _shares(result: JudgeResult, n: int) -> list[tuple[Usage, int]]:
    """Split one request's tokens evenly among `n` questions (the remainder and the calls go to the first)."""
    prompt, completion = result.usage.prompt_tokens, result.usage.completion_tokens
    return [
        (Usage(prompt // n + (prompt % n if k == 0 else 0), completion // n + (completion % n if k == 0 else 0)), result.calls if k == 0 else 0)
        for k in range(n)
    ]


def _entry_problem(
    question: Question, found: list[Any], reply_model: type[BaseModel], valid: Check, answer: Answer
) -> tuple[Optional[str], bool]:
    """Check one entry of a batched reply as a single reply is; set `answer.reply` when it passes.

    Return the problem, or None, and whether the question got exactly one answer of the reply's shape (right or wrong).
    """
    if len(found) != 1:
        return (f"{len(found)} answers" if found else "no answer") + " for this question in the reply to several questions", False
    try:
        reply = reply_model.model_validate(found[0])
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ())) or "reply"
        return f"answer does not match {reply_model.__name__}: {where}: {first.get('msg')}", False
    problem = _reply_problem(question, json.dumps(found[0], ensure_ascii=False), reply, valid)
    if not problem:
        answer.reply = reply
    return problem or None, True


def _reply_problem(question: Question, raw: Optional[str], reply: BaseModel, check: Check) -> Optional[str]:
    """Return why a reply, alone or one entry of a batch, cannot be used: its raw text fails the question's vet, or `check`."""
    return (question.vet(raw) if question.vet is not None else None) or check(question, reply)
