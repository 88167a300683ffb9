"""Phase 2, detect contradictions (DESIGN 4.2, seed US2, FR-020..024).

Candidates are pairs of Active notes of one partition at the contradiction threshold, on the state
consolidate left, less pairs under review and pairs of two notes this run created that the authority
rule cannot settle. Pairs touching a note new since the last maintenance go first; cached verdicts
are free, at most `max_pairs` others are asked per run, the rest wait in the same order. An
unusable reply pauses its pair (memctl/phases/asking.py).

The judge only classifies and no reply field names a note, so nothing in a reply can pick the loser:
authority is decided here (FR-022, memctl/authority.py). A model's verdict applies only when its
quotes hold (memctl/text/evidence.py). A loser memctl must not revoke is flagged for review, a unit
guarded by `check`s of both notes. Partitions answered with nothing to do, unchanged since, are
skipped (memctl/settled.py).
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Optional, Sequence

import sqlalchemy as sa

from memctl.authority import Authority, authority, days
from memctl.context import PhaseContext
from memctl.llm.base import Judge
from memctl.llm.copies import outside_vet
from memctl.llm.questions import pair_data
from memctl.llm.replies import ContradictionReply
from memctl.phases.asking import Answer, AskStats, Question, ask_again_output, ask_again_text, ask_all, no_usable_answer
from memctl.phases.base import Overlay
from memctl.phases.common import plural
from memctl.protection import refusal
from memctl.phases.notes import by_partition, is_new, load_notes, note_guard, refreshed, revoke_into, with_vectors
from memctl.phases.slices import agent_slices, between_slices
from memctl.llm.offline_merge import note_text
from memctl.phases.safety import Uniformity, loser_keeps
from memctl.plan import Mutation, PhasePlan, StepResult, Unit
from memctl.records import NoteRecord, PartitionKey
from memctl.settled import SettledMarks, marks_for, notes_digest
from memctl.similarity import pairs
from memctl.store import models as m
from memctl.store.engine import read
from memctl.text.decide import Guard, verdict_guard
from memctl.text.evidence import DIFFERENT, Quoted, check, same_value, unfound, values_apart
from memctl.vectors import vector_index

NAME = "contradictions"
STEP_NAME = "Detect Note Contradictions"
KIND = "contradiction"
#: the namespace of review-row IDs: one row per pair, so its ID is derived from the pair
REVIEW_NS = uuid.UUID("0b6c2f1e-4d0a-5c43-9a7e-6d656d63746c")


@dataclass(frozen=True)
class Candidate:
    """A pair of similar notes of one partition; `a` is the older (by created date, then ID)."""

    a: NoteRecord
    b: NoteRecord
    similarity: float
    new: bool

    @property
    def ids(self) -> tuple[str, str]:
        return self.a.id, self.b.id

    def priority(self) -> tuple:
        """Sort key: pairs touching new or changed notes first, then the most similar, then by IDs."""
        return (not self.new, -self.similarity, *sorted(self.ids))


@dataclass
class _Found:
    """The candidate pairs gathered slice by slice, and what the step reports of the reading."""

    notes: int = 0
    partitions: int = 0
    settled: int = 0
    skipped_created: int = 0
    skipped_review: int = 0
    candidates: list[Candidate] = field(default_factory=list)
    #: parallel to `candidates`
    partition_of: list[PartitionKey] = field(default_factory=list)
    #: partitions that cannot be marked settled this run
    unsettled: set[PartitionKey] = field(default_factory=set)
    #: the settled mark of each partition with a candidate pair
    mark_of: dict[PartitionKey, str] = field(default_factory=dict)
    thresholds: dict[str, float] = field(default_factory=dict)

    def rank(self) -> None:
        """Sort the candidates by priority, keeping `partition_of` parallel."""
        order = sorted(range(len(self.candidates)), key=lambda i: self.candidates[i].priority())
        self.candidates = [self.candidates[i] for i in order]
        self.partition_of = [self.partition_of[i] for i in order]


def review_id(a: str, b: str) -> str:
    """Return the ID of the review row of a pair (the same pair always gets the same ID)."""
    low, high = _ordered(a, b)
    return str(uuid.uuid5(REVIEW_NS, f"{low}:{high}"))


def reply_problem(question: Question, reply: Any) -> Optional[str]:
    """Return why a parsed reply cannot be used, or None (the offline rules' replies quote nothing)."""
    if not isinstance(reply, ContradictionReply):
        return f"not a contradiction reply ({type(reply).__name__})"
    return None


def model_reply_problem(question: Question, reply: Any) -> Optional[str]:
    """Return why a model's reply cannot be used, or None: a contradiction must quote its evidence from both notes."""
    problem = reply_problem(question, reply)
    if problem is None and reply.isContradiction:
        a, b = question.inputs
        return unfound(quotes_of(a["content"], b["content"], reply), ("note A", "note B"))
    return problem


def quotes_of(a: str, b: str, reply: ContradictionReply) -> tuple[Quoted, Quoted]:
    """Return the model's quotes from the pair's two notes (`a`, `b`: the texts the model was shown)."""
    return Quoted(a, reply.subjectA, reply.valueA), Quoted(b, reply.subjectB, reply.valueB)


def question_for(judge: Judge, pair: Candidate, seen: Optional[dict[str, Any]] = None) -> Question:
    """Return the question asked about `pair`: its inputs are exactly the data the judge sees.

    `seen` memoises each note's data across the pairs it takes part in. The same data is the
    question's item when it is asked with others in one request (questions_per_call).
    """
    seen = {} if seen is None else seen
    inputs = [seen[n.id] if n.id in seen else seen.setdefault(n.id, pair_data(n)) for n in (pair.a, pair.b)]
    return Question(KIND, inputs, partial(judge.contradiction, pair.a, pair.b), item=inputs, vet=outside_vet([(n.id, n.note) for n in (pair.a, pair.b)], "pair"))


@dataclass
class Tally:
    found: int = 0
    low_confidence: int = 0
    resolved: int = 0
    flagged: int = 0
    skipped_revoked: int = 0
    duplicates: int = 0
    #: verdicts between notes that name different subjects: never applied
    vetoed: int = 0
    #: a model's verdicts whose quoted subjects are not the same words: not applied
    unproven: int = 0
    veto_reasons: list[str] = field(default_factory=list)
    distrusted: int = 0
    distrust_reason: str = ""


class ContradictionPhase:
    """Find contradicting pairs of similar notes; revoke the less authoritative note or flag the pair."""

    name = NAME
    step_name = STEP_NAME

    def plan(self, ctx: PhaseContext, overlay: Overlay) -> PhasePlan:
        marks = marks_for(ctx, NAME, [KIND])
        plan = self._plan(ctx, overlay, marks)
        if marks is not None:
            marks.save_share()
        return plan

    def _plan(self, ctx: PhaseContext, overlay: Overlay, marks: Optional[SettledMarks]) -> PhasePlan:
        found, slices = self._find(ctx, overlay, marks)
        plan = PhasePlan(phase=NAME, step_name=STEP_NAME, input=_read_input(ctx, found, len(slices)))
        notes = plural(found.notes, "active note")
        if not found.partitions:
            if found.settled:
                return _nothing(plan, f"{notes}, {plural(found.settled, 'partition')} unchanged since found settled")
            return _nothing(plan, f"{notes}, no partition with two or more")
        found.rank()
        plan.input.update(_pairs_input(found))
        if not found.candidates:
            return _nothing(plan, f"{notes}, no pair of one partition at cosine >= {_thresholds_text(found.thresholds)}")

        judge = ctx.judge()
        seen: dict[str, Any] = {}
        questions = [question_for(judge, c, seen) for c in found.candidates]
        model = not judge.rules
        valid = model_reply_problem if model else reply_problem
        # every cached and every paused question (answered without a call), then up to the pair budget
        # of others; a cached reply that no longer passes the checks is asked again and counts against it
        budget = pair_budget(ctx, judge)
        answered, stats = ask_all(ctx, judge, questions, ContradictionReply, valid=valid, budget=budget)
        plan.input["pairsToAnalyse"] = len(answered)
        plan.input["maxPairs"] = budget

        tally = Tally()
        plan.units = self._units(ctx, [(found.candidates[i], answer) for i, answer in answered.items()], tally, model)
        if marks is not None:
            _record_settled(marks, found, answered, plan.units, tally)
        _report(plan, len(answered), len(questions) - len(answered), list(answered.values()), stats, tally)
        return plan

    def _find(self, ctx: PhaseContext, overlay: Overlay, marks: Optional[SettledMarks]) -> tuple["_Found", list[PhaseContext]]:
        """Read the scope's notes (consolidate's snapshot, or slice by slice) and find the candidate pairs."""
        snapshot, ctx.services.snapshot = ctx.services.snapshot, None
        if snapshot is not None:  # this run's consolidate phase read the store (and applied its units)
            slices, lazy = [ctx], not snapshot.with_vectors
        else:  # a large scope is read agent by agent (memctl/phases/slices.py)
            slices = agent_slices(ctx)
            lazy = marks is not None and marks.mostly_settled()  # then read vectors only for the partitions paired
        under_review: Optional[set[tuple[str, str]]] = None
        found = _Found()
        for part_ctx in slices:
            notes = refreshed(ctx, overlay, snapshot) if snapshot is not None else load_notes(part_ctx, overlay, vectors=not lazy)
            found.notes += len(notes)
            groups = {key: members for key, members in by_partition(notes).items() if len(members) >= 2}
            del notes  # a slice's notes are kept only as far as its candidate pairs hold them
            if groups and under_review is None:
                under_review = _reviewed_pairs(ctx)
            self._pairs(part_ctx, overlay, marks, groups, under_review or set(), lazy, found)
            between_slices(slices)
        return found, slices

    @staticmethod
    def _pairs(
        ctx: PhaseContext, overlay: Overlay, marks: Optional[SettledMarks], groups: dict[PartitionKey, list[NoteRecord]],
        under_review: set[tuple[str, str]], lazy: bool, found: _Found,
    ) -> None:
        """Add the candidate pairs of one slice's partitions (of two notes or more) to `found`."""
        # Partitions found to need nothing on an earlier run, unchanged since, are left alone.
        if marks is not None and groups:
            home = {n.id: key for key, members in groups.items() for n in members}
            reviewed: dict[PartitionKey, list[list[str]]] = defaultdict(list)
            for low, high in under_review:
                if low in home and home[low] == home.get(high):
                    reviewed[home[low]].append([low, high])
            mark_of = {key: marks.key(notes_digest(members), sorted(reviewed.get(key, []))) for key, members in groups.items()}
            settled = marks.settled(mark_of.values())
            found.settled += sum(1 for key in groups if mark_of[key] in settled)
            groups = {key: members for key, members in groups.items() if mark_of[key] not in settled}
        else:
            mark_of = {}
        found.partitions += len(groups)
        if not groups:
            return
        index = vector_index(ctx)
        with_pairs: set[PartitionKey] = set()
        unsettled = found.unsettled
        for key, partition in index.partitions(with_vectors(ctx, groups) if lazy else groups).items():
            threshold = found.thresholds.setdefault(partition.model, index.thresholds(partition.model)[1])
            for i, j, similarity in pairs(partition.vectors, threshold):
                a, b = partition.notes[i], partition.notes[j]
                if a.id in overlay.created_by_run and b.id in overlay.created_by_run and authority(a, b) is None:
                    # two notes this run created that the rule cannot settle: a flag would only
                    # repeat a conflict of their sources; settleable pairs are judged
                    found.skipped_created += 1
                    unsettled.add(key)
                elif _ordered(a.id, b.id) in under_review:
                    found.skipped_review += 1
                else:
                    since = ctx.last_maintenance_at
                    found.candidates.append(Candidate(a, b, similarity, is_new(a, since) or is_new(b, since)))
                    found.partition_of.append(key)
                    with_pairs.add(key)
        if marks is not None:
            quiet = [key for key in groups if key not in unsettled and key not in with_pairs]
            marks.record([mark_of[key] for key in quiet])
            found.mark_of.update((key, mark_of[key]) for key in with_pairs)

    def _units(self, ctx: PhaseContext, judged: list[tuple[Candidate, Answer]], tally: Tally, model: bool) -> list[Unit]:
        """Turn verdicts into units: revocations first (in priority order), then flags."""
        settings = ctx.settings
        floor = settings.confidence_floor
        verdicts = [answer.reply.isContradiction for _, answer in judged if isinstance(answer.reply, ContradictionReply)]
        uniform = Uniformity(len(verdicts), sum(verdicts), settings.uniform_min_pairs, settings.uniform_share)
        contradictions: list[tuple[Candidate, ContradictionReply, Guard]] = []
        for pair, answer in judged:
            reply = answer.reply
            if not isinstance(reply, ContradictionReply) or not reply.isContradiction:
                continue
            if reply.confidence < floor:
                tally.low_confidence += 1
                continue
            tally.found += 1
            # DESIGN 4, "Decisions": a model's quotes are checked; the offline rules stay cautious
            guard = _evidence_guard(pair, reply) if model else verdict_guard(note_text(pair.a), note_text(pair.b))
            if guard.action == "duplicate":
                tally.duplicates += 1  # the same facts twice: consolidation's business, never a revocation
                continue
            if guard.action in ("unproven", "veto"):
                tally.unproven += guard.action == "unproven"
                tally.vetoed += guard.action == "veto"
                tally.veto_reasons.append(f"notes {pair.a.id} and {pair.b.id}: {guard.reason}")
                continue
            if guard.action == "apply" and reply.review:
                guard = Guard("flag", "the offline rules are not sure the value is single, so only a person may say which holds")
            contradictions.append((pair, reply, guard))
        if uniform.distrusted:
            tally.distrusted = len(contradictions)
            tally.distrust_reason = uniform.reason()
            return []

        units: list[Unit] = []
        revoked: set[str] = set()
        to_flag: list[tuple[Candidate, ContradictionReply, str]] = []
        for pair, reply, guard in contradictions:
            if revoked & set(pair.ids):
                tally.skipped_revoked += 1
                continue
            if guard.action == "flag":
                to_flag.append((pair, reply, guard.reason))
                continue
            decided = authority(pair.a, pair.b)
            why = _why_kept(pair, decided)
            if why is not None:
                to_flag.append((pair, reply, why))
                continue
            assert decided is not None  # _why_kept keeps the pair when no rule decided it
            revoked.add(decided.loser.id)
            tally.resolved += 1
            units.append(_revocation(pair, reply, decided))
        for pair, reply, why in to_flag:
            if revoked & set(pair.ids):
                tally.skipped_revoked += 1
                continue
            tally.flagged += 1
            units.append(_flag(pair, reply, why))
        return units


def _why_kept(pair: Candidate, decided: Optional[Authority]) -> Optional[str]:
    """Return why both notes of a contradiction are kept and flagged, or None when the loser is revoked."""
    if decided is None:
        apart = days(abs(pair.a.created_at - pair.b.created_at))
        importance = "" if pair.a.importance_score is None or pair.b.importance_score is None else f", both of importance {pair.a.importance_score:g}"
        return f"neither note has authority (created {apart} apart{importance}, both accessed {pair.a.access_count} times)"
    kept_safe = refusal("revoke", decided.loser.protection_tier, decided.loser.is_auto_generated)
    if kept_safe:
        return f"note {decided.winner.id} would win as {decided.rule}, but memctl never revokes note {decided.loser.id}: {kept_safe}"
    would_lose = loser_keeps(decided.loser, decided.winner)
    return f"note {decided.winner.id} would win as {decided.rule}, but {would_lose}" if would_lose else None


def _evidence_guard(pair: Candidate, reply: ContradictionReply) -> Guard:
    """Check a model's quotes: the same subject, every differing number or ID inside the values, two values."""
    a, b = quotes_of(pair_data(pair.a)["content"], pair_data(pair.b)["content"], reply)
    if same_value(a, b) and reply.verdict != "negation":
        return Guard("duplicate", "the quoted values are the same")
    found = check((a, b))
    if found.outcome == DIFFERENT:
        return Guard("veto", f"the quotes show no single subject: {found.reason}, so neither note replaces the other")
    if not found.holds:
        return Guard("unproven", f"the quotes do not show one subject: {found.reason}, so neither note replaces the other")
    if not values_apart(a, b):
        return Guard("unproven", "the quoted values are words both notes share, not where they differ, so neither note replaces the other")
    return Guard("apply")


def _reason(reply: ContradictionReply) -> str:
    text = " ".join(reply.reason.split()) or f"{reply.contradictionType} (no reason given)"
    return text if len(text) <= 1000 else text[:997] + "..."


def _sentence(text: str) -> str:
    return text if text.endswith((".", "!", "?")) else text + "."


def _revocation(pair: Candidate, reply: ContradictionReply, decided: Authority) -> Unit:
    winner, loser = decided.winner, decided.loser
    return Unit(
        kind="contradiction",
        key=f"contradiction:{loser.id}:{winner.id}",
        reason=f"{reply.contradictionType}: kept {decided.rule}",
        mutations=(
            revoke_into(loser, winner.id, f"Contradicted by note {winner.id}: {_sentence(_reason(reply))} Kept {decided.rule}."),
            Mutation("AIAgentNote", winner.id, "check", {}, None, note_guard(winner)),
        ),
        detail={
            "winner": winner.id,
            "loser": loser.id,
            "rule": decided.rule,
            "type": reply.contradictionType,
            "confidence": reply.confidence,
            "similarity": round(pair.similarity, 4),
        },
    )


def _flag(pair: Candidate, reply: ContradictionReply, why: str) -> Unit:
    low, high = _ordered(*pair.ids)
    text = f"{_sentence(_reason(reply))} Both kept and flagged for review: {why}."
    return Unit(
        kind="flag",
        key=f"flag:{low}:{high}",
        reason=text,
        mutations=(
            Mutation("AIAgentNote", pair.a.id, "check", {}, None, note_guard(pair.a)),
            Mutation("AIAgentNote", pair.b.id, "check", {}, None, note_guard(pair.b)),
            Mutation(
                "memctl_review", review_id(low, high), "flag", {"NoteAID": low, "NoteBID": high, "Reason": text},
                f"Flagged for review: notes {low} and {high} contradict ({reply.contradictionType}); {why}",
            ),
        ),
        detail={
            "notes": [low, high],
            "type": reply.contradictionType,
            "confidence": reply.confidence,
            "similarity": round(pair.similarity, 4),
        },
    )


def _reviewed_pairs(ctx: PhaseContext) -> set[tuple[str, str]]:
    """Return the pairs that have a review row (Open: awaiting an operator; settled: the operator decided)."""
    r = m.review
    with read(ctx.engine) as conn:
        rows = conn.execute(sa.select(r.c.NoteAID, r.c.NoteBID)).all()
    return {_ordered(str(a), str(b)) for a, b in rows}


def _ordered(a: str, b: str) -> tuple[str, str]:
    low, high = sorted((a.lower(), b.lower()))
    return low, high


def _thresholds_text(thresholds: dict[str, float]) -> str:
    return ", ".join(f"{value:g} ({model})" for model, value in thresholds.items())


def _record_settled(marks: SettledMarks, found: _Found, answered: dict[int, Answer], units: Sequence[Unit], tally: Tally) -> None:
    """Record as settled the partitions whose every candidate pair got a valid verdict and changes nothing."""
    touched = {mu.record_id for unit in units for mu in unit.mutations}
    unsettled = found.unsettled
    for i, key in enumerate(found.partition_of):
        answer = answered.get(i)
        if answer is None or answer.reply is None or touched & set(found.candidates[i].ids) or tally.distrusted:
            unsettled.add(key)
    marks.record([found.mark_of[key] for key in sorted(set(found.partition_of) - unsettled, key=str)])


def _read_input(ctx: PhaseContext, found: _Found, slices: int) -> dict[str, Any]:
    """Return the step input of what was read; the counts of pairs are filled in as they are known."""
    read_input = {
        "notes": found.notes,
        "partitions": found.partitions,
        "candidatePairs": 0,
        "pairsToAnalyse": 0,
        "maxPairs": ctx.settings.max_pairs,
        "lastMaintenanceAt": ctx.last_maintenance_at.isoformat() if ctx.last_maintenance_at else None,
        "partitionsSettled": found.settled,
    }
    if slices > 1:
        read_input["slices"] = slices
    return read_input


def _pairs_input(found: _Found) -> dict[str, Any]:
    """Return the step input of the candidate pairs found."""
    thresholds = found.thresholds
    one = len(thresholds) == 1
    return {
        "candidatePairs": len(found.candidates),
        "newPairs": sum(c.new for c in found.candidates),
        "threshold": next(iter(thresholds.values())) if one else thresholds,
        "embedder": next(iter(thresholds)) if one else sorted(thresholds),
        "pairsBothCreatedThisRun": found.skipped_created,
        "pairsUnderReview": found.skipped_review,
    }


def _report(plan: PhasePlan, chosen: int, left: int, answers: Sequence[Answer], stats: AskStats, tally: Tally) -> None:
    """Fill in the plan's output and message, and fail it when no question got a usable answer."""
    result = ContradictionsResult(
        pairs_analysed=chosen - stats.failed - stats.paused, cached=stats.cached, questions_asked=stats.asked,
        llm_calls=stats.calls, tokens=stats.usage.total, prompt_tokens=stats.usage.prompt_tokens,
        completion_tokens=stats.usage.completion_tokens, contradictions_found=tally.found,
        contradictions_resolved=tally.resolved, contradictions_flagged=tally.flagged, low_confidence=tally.low_confidence,
        skipped_note_already_revoked=tally.skipped_revoked, duplicates_not_contradictions=tally.duplicates,
        verdicts_vetoed=tally.vetoed, verdicts_unproven=tally.unproven, verdicts_distrusted=tally.distrusted,
        failed_replies=stats.failed, unusable_replies=stats.unusable, questions_paused=stats.paused, pairs_left_for_next_run=left,
    )
    failures = [a.error for a in answers if a.reply is None and a.paused is None]
    plan.output = {**result.as_output(), **stats.client}
    if stats.ask_again:
        plan.output["askAgainAt"] = ask_again_output(stats.ask_again)
    if failures:
        plan.output["failures"] = [f for f in failures[:20] if f]
    if tally.distrust_reason:
        plan.output["distrustReason"] = tally.distrust_reason
    if tally.veto_reasons:
        plan.output["vetoReasons"] = tally.veto_reasons[:10]
    plan.message = _message(result, stats, tally, plan.input["maxPairs"], plan.output.get("askAgainAt", {}))
    error = no_usable_answer(stats, failures[0] if failures else "")
    if error:  # e.g. no reply arrived at all: broken configuration or server, an operator must know
        plan.outcome, plan.error = "failed", error


def _nothing(plan: PhasePlan, message: str) -> PhasePlan:
    plan.outcome = "no items"
    plan.message = message
    plan.output = ContradictionsResult().as_output()
    return plan


@dataclass
class ContradictionsResult(StepResult):
    pairs_analysed: int = 0
    cached: int = 0
    questions_asked: int = 0
    llm_calls: int = 0
    tokens: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    contradictions_found: int = 0
    contradictions_resolved: int = 0
    contradictions_flagged: int = 0
    low_confidence: int = 0
    skipped_note_already_revoked: int = 0
    duplicates_not_contradictions: int = 0
    verdicts_vetoed: int = 0
    verdicts_unproven: int = 0
    verdicts_distrusted: int = 0
    failed_replies: int = 0
    unusable_replies: int = 0
    questions_paused: int = 0
    pairs_left_for_next_run: int = 0


def _message(result: ContradictionsResult, stats: AskStats, tally: Tally, max_pairs: int, asked_again: dict[str, int]) -> str:
    """Return the phase's one-line summary (`asked_again`: the output's "askAgainAt")."""
    unreached = stats.failed - stats.unusable
    return (
        f"{plural(result.pairs_analysed, 'pair')} judged ({stats.cached} cached, {stats.asked} asked), "
        f"{plural(tally.found, 'contradiction')}: {tally.resolved} resolved, {tally.flagged} flagged for review"
        + (f"; {stats.unusable} unusable {'reply' if stats.unusable == 1 else 'replies'}" if stats.unusable else "")
        + (f"; {plural(unreached, 'failed call')}" if unreached else "")
        + (f"; {stats.paused} paused after unusable replies" if stats.paused else "")
        + (f" (asked again: {ask_again_text(asked_again)})" if asked_again else "")
        + (f"; {result.pairs_left_for_next_run} left for the next run (max {max_pairs} asked per run)" if result.pairs_left_for_next_run else "")
        + (f"; {plural(tally.vetoed, 'verdict')} not applied: the notes name different subjects" if tally.vetoed else "")
        + (f"; {plural(tally.unproven, 'verdict')} not applied: the quotes do not show one subject" if tally.unproven else "")
        + (f"; NOT APPLIED: {tally.distrust_reason}" if tally.distrust_reason else "")
    )


def pair_budget(ctx: PhaseContext, judge: Judge) -> int:
    """Return how many uncached pairs (or absorption checks) may be judged this run.

    `max_pairs` (--max-pairs) bounds an LLM judge's calls (FR: at most 50 per run by default). The
    offline rules judge makes no calls and gets the larger `offline_max_pairs`, which only bounds CPU
    time and which --max-pairs does not change (as its help and docs/configuration.md say).
    """
    return ctx.settings.offline_max_pairs if judge.rules else ctx.settings.max_pairs
