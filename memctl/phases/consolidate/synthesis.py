"""The judge's merged note for a cluster: checked against its sources, then written as a new
note or, when a source already says it, as that standing note absorbing the others."""

from __future__ import annotations

import hashlib
import json
import uuid
from dataclasses import replace
from typing import Any, Callable, Optional

from memctl.authority import authority
from memctl.context import PhaseContext
from memctl.embed.stored import encode_vector
from memctl.llm.base import Judge
from memctl.llm.copies import copied_note
from memctl.llm.replies import ConsolidationReply
from memctl.phases.asking import Asking, Question
from memctl.phases.common import plural
from memctl.phases.consolidate.clusters import ClusterCase
from memctl.phases.consolidate.rules import (
    TABLE,
    Tally,
    analysed,
    canonical_type,
    fact_date,
    inherited_importance,
    one_line,
    short_key,
    standing_source,
    standing_unit,
    strongest_tier,
)
from memctl.phases.notes import revoke_into
from memctl.phases.safety import merge_loses
from memctl.stopping import Pool
from memctl.plan import Mutation, Unit, jsonable
from memctl.records import NoteRecord
from memctl.temporal import find_relative
from memctl.text.decide import synthesis_problem
from memctl.text.evidence import Quoted, check, unfound
from memctl.vectors import vector_index

#: namespace of the IDs of consolidated notes (uuid5 of sources, content and run time)
NOTE_ID_NAMESPACE = uuid.UUID("5d0c3c52-1f43-4a8e-9a57-636f6e736f6c")


def consolidation_problem(
    question: Question, reply: ConsolidationReply, max_chars: int, records: dict[str, NoteRecord], model: bool
) -> Optional[str]:
    """Return why a consolidation reply must not be acted on, or None when it is valid.

    Besides its form, `synthesis_problem` verifies the merged note (no value lost or invented, the
    authority rule's value where sources conflict, by `records`' dates and access counts). A model
    must quote evidence from every note it merges; quotes that do not show one subject pass here and
    `_judge_case` declines the merge, so the reply is cached, not re-asked.
    """
    if not reply.shouldConsolidate:
        return None
    proposed = reply.consolidatedNote
    if proposed is None:
        return "shouldConsolidate is true but consolidatedNote is missing"
    content = proposed.content.strip()
    if not content:
        return "the consolidated note is empty"
    copied = copied_note(content, question.inputs["notes"])
    if copied:
        return copied
    if len(content) > max_chars:
        return f"the consolidated note has {len(content)} characters, over the cap of {max_chars}"
    allowed = {n["id"] for n in question.inputs["notes"]}
    ids = [i.strip().lower() for i in reply.sourceNoteIds]
    outside = [i for i in ids if i not in allowed]
    if outside:
        return f"sourceNoteIds names {plural(len(outside), 'note')} outside the cluster: {one_line(', '.join(outside), 120)}"
    if len(set(ids)) != len(ids):
        return "sourceNoteIds lists a note more than once"
    if len(ids) < 2:
        return "sourceNoteIds must name at least 2 notes of the cluster"
    if model:
        quoted = merge_quotes(question, reply)
        problem = unfound(quoted, [f"note {i}" for i in ids])
        if problem or not check(quoted).holds:
            return problem
    relative = find_relative(content)
    if relative:
        return f"relative time words left in the note: {one_line(', '.join(relative), 120)}"
    # the question shows the notes of `records`, so every chosen note is there
    notes = [records[n["id"]] for n in question.inputs["notes"] if n["id"] in ids]

    def rule(i: int, j: int) -> Optional[int]:
        decided = authority(notes[i], notes[j])
        return None if decided is None else (i if decided.winner is notes[i] else j)

    return synthesis_problem(content, [analysed({}, n) for n in notes], model=model, authority=rule)


class ClusterQuestions:
    """The clusters' questions, sent partition by partition as clusters are found (`add`), judged by `finish`.

    Answers are read back in the clusters' order, so the units do not depend on when they arrived.
    Use it as a context manager around the clustering: leaving early abandons the requests in flight.
    """

    def __init__(self, ctx: PhaseContext, get_judge: Callable[[], Judge], tally: Tally) -> None:
        self.ctx, self.get_judge, self.tally = ctx, get_judge, tally
        self.cases: list[ClusterCase] = []
        self._case_of: dict[int, ClusterCase] = {}  # id(question) -> its case, for the checks
        self._asking: Optional[Asking] = None

    def __enter__(self) -> "ClusterQuestions":
        return self

    def __exit__(self, kind: object, exc: object, tb: object) -> None:
        if self._asking is not None:
            self._asking.__exit__(kind, exc, tb)

    def add(self, cases: list[ClusterCase]) -> None:
        """Send the questions of one partition's clusters (none: send what was held, if it is time)."""
        if self._asking is None:
            if not cases:
                return
            judge = self.get_judge()
            model = not judge.rules

            def check(question: Question, reply: Any) -> Optional[str]:
                return _problem(self.ctx, self._case_of[id(question)], reply, model)

            self._asking = Asking(self.ctx, judge, ConsolidationReply, check, eager=model)
        for case in cases:
            self._case_of[id(case.question)] = case
        self.cases.extend(cases)
        self._asking.submit([c.question for c in cases])

    def flush(self) -> None:
        """No more clusters for now: send the questions held (see `Asking.flush`)."""
        if self._asking is not None:
            self._asking.flush()

    def finish(self) -> Callable[[], None]:
        """Wait for every answer and judge each cluster by it, in the clusters' order.

        Return `attach`, which puts the new notes' vectors into their units: call it before planning.
        """
        if self._asking is None:
            return lambda: None
        answers, stats = self._asking.finish()
        self.tally.add(stats)
        model = not self.get_judge().rules
        for case, answer in zip(self.cases, answers.values(), strict=True):
            case.answer = answer
            _judge_case(self.ctx, case, self.tally if model else None)
        return _attach_vectors(self.ctx, [c for c in self.cases if c.verdict == "consolidated"])


def merge_quotes(question: Question, reply: ConsolidationReply) -> list[Quoted]:
    """Return the model's quotes from each note its merge replaces (empty for a note it does not quote)."""
    shown = {n["id"]: n["content"] for n in question.item}
    by_id = {q.id.strip().lower(): q for q in reply.quotes}
    found = [(by_id.get(i.strip().lower()), shown[i.strip().lower()]) for i in reply.sourceNoteIds]
    return [Quoted(text, q.subject, q.value) if q else Quoted(text, "", "") for q, text in found]


def _problem(ctx: PhaseContext, case: ClusterCase, reply: ConsolidationReply, model: bool) -> Optional[str]:
    """Return why a consolidation reply cannot be used (checked on arrival and when read from the cache)."""
    records = {n.id: n for n in case.notes}
    problem = consolidation_problem(case.question, reply, ctx.settings.max_note_chars, records, model)
    if problem or not reply.shouldConsolidate or not ctx.settings.consolidate_keep_every_sentence:
        return problem
    if model and not check(merge_quotes(case.question, reply)).holds:
        return None  # declined by `_judge_case`
    assert reply.consolidatedNote is not None
    chosen = {i.strip().lower() for i in reply.sourceNoteIds}
    lost = merge_loses([n for n in case.notes if n.id in chosen], reply.consolidatedNote.content)
    if lost:
        return f"the merged note drops {plural(len(lost), 'sentence')} of its sources, first: {one_line(lost[0], 160)!r}"
    return None


def _judge_case(ctx: PhaseContext, case: ClusterCase, quoted: Optional[Tally] = None) -> None:
    """Decide what becomes of a cluster by its answer (`quoted`: a model answered; vetoes counted there)."""
    answer = case.answer
    assert answer is not None
    reply = answer.reply
    if reply is None:
        case.verdict = "paused" if answer.paused is not None else "invalid" if answer.unusable else "failed"
        case.why = answer.error or "no reply"
        return
    # every reply, fresh or cached, passed `_problem` in Asking
    assert isinstance(reply, ConsolidationReply)
    if not reply.shouldConsolidate:
        case.verdict, case.why = "declined", one_line(reply.reason) or "the judge declined"
        return
    assert reply.consolidatedNote is not None
    floor = ctx.settings.confidence_floor
    if reply.consolidatedNote.confidence < floor:
        case.verdict = "declined"
        case.why = f"confidence {reply.consolidatedNote.confidence:g} is below the floor {floor:g}: {one_line(reply.reason)}"
        return
    if quoted is not None:
        found = check(merge_quotes(case.question, reply))
        if not found.holds:
            quoted.merges_vetoed += 1
            case.verdict, case.why = "declined", f"not merged: the quotes do not show one subject: {found.reason}"
            quoted.apart_reasons.append(one_line(case.why))
            return
    case.verdict, case.why = "consolidated", one_line(reply.reason) or "consolidated"
    chosen = {i.strip().lower() for i in reply.sourceNoteIds}
    sources = [n for n in case.notes if n.id in chosen]  # oldest first
    stay = standing_source(sources, reply.consolidatedNote.content)
    if stay is None:
        case.unit = _cluster_unit(ctx, case, reply, sources)
        return
    # the synthesis is what `stay` says already: it absorbs the others, no copy of it is written
    case.verdict = "standing"
    others = [n for n in sources if n is not stay]
    ids = sorted(n.id for n in sources)
    key = "standing:" + hashlib.sha256(",".join(ids).encode()).hexdigest()[:16]
    case.unit = standing_unit(
        "standing", key, stay, others,
        f"Absorbed {plural(len(others), 'note')} of the same fact ({', '.join(n.id for n in others)}): {case.why}",
        f"Consolidated into note {stay.id}, which states the same: {case.why}",
        {"partition": short_key(case.key), "clusterSize": len(case.notes), "sources": len(sources), "standing": stay.id},
    )


def _cluster_unit(ctx: PhaseContext, case: ClusterCase, reply: ConsolidationReply, sources: list[NoteRecord]) -> Unit:
    assert reply.consolidatedNote is not None
    ids = [n.id for n in sources]
    content = reply.consolidatedNote.content.strip()
    now = ctx.now
    new_id = str(uuid.uuid5(NOTE_ID_NAMESPACE, json.dumps([sorted(ids), content, now.isoformat()], ensure_ascii=False)))
    scope = sources[0]  # the stored spelling of the partition's scope
    accessed = [n.last_accessed_at for n in sources if n.last_accessed_at is not None]
    expiries = [n.expires_at for n in sources]
    reason = case.why
    values: dict[str, Any] = {
        "ID": new_id,
        "AgentID": scope.agent_id,
        "CompanyID": scope.company_id,
        "UserID": scope.user_id,
        "PrimaryScopeEntityID": scope.primary_scope_entity_id,
        "PrimaryScopeRecordID": scope.primary_scope_record_id,
        "SecondaryScopes": scope.secondary_scopes,
        "Type": canonical_type(reply.consolidatedNote.type),
        "Note": content,
        "IsAutoGenerated": True,
        "Status": "Active",
        "ProtectionTier": strongest_tier(sources),
        "AccessCount": sum(n.access_count for n in sources),
        "LastAccessedAt": jsonable(max(accessed)) if accessed else None,
        "ExpiresAt": jsonable(max(expiries)) if all(e is not None for e in expiries) else None,  # type: ignore[type-var]
        "ConsolidationCount": max(n.consolidation_count for n in sources) + 1,
        "DerivedFromNoteIDs": json.dumps(ids),
        "ImportanceScore": inherited_importance(sources),
        # the fact date: the authority rule reads __mj_CreatedAt, so the note is as old as its newest
        # source, never as young as the merge (DESIGN 4: consolidation cannot change a verdict)
        "__mj_CreatedAt": jsonable(fact_date(sources)),
        "__mj_UpdatedAt": jsonable(now),
    }
    insert = Mutation(TABLE, new_id, "insert", values, comment=f"Consolidated from {len(sources)} notes: {reason}")
    revokes = tuple(revoke_into(n, new_id, f"Consolidated into note {new_id}: {reason}") for n in sources)
    key = "cluster:" + hashlib.sha256(",".join(sorted(ids)).encode()).hexdigest()[:16]
    return Unit(
        kind="cluster", key=key, reason=f"Consolidated from {len(sources)} notes: {reason}", mutations=(insert, *revokes),
        detail={"partition": short_key(case.key), "clusterSize": len(case.notes), "sources": len(sources)},
    )


def _attach_vectors(ctx: PhaseContext, cases: list[ClusterCase]) -> Callable[[], None]:
    """Give new notes an EmbeddingVector when the store keeps vectors of the compute embedder's model.

    In a partition of another model's stored vectors it gets a derived vector of that model instead
    (in memctl's cache only). The compute embedder runs on its own thread meanwhile; the returned
    `attach` waits for it (raising its error) and writes the vectors into the units.
    """
    settings = ctx.settings
    if not cases:
        return lambda: None
    index = vector_index(ctx)
    for case in cases:
        if settings.embed_provider == "stored" and case.model == index.trusted and case.unit is not None:
            insert = case.unit.mutations[0]
            sources = {mu.record_id for mu in case.unit.mutations[1:]}
            index.derive(insert.record_id, insert.values["Note"], [n for n in case.notes if n.id in sources])
    if not settings.embed_model_id or settings.embed_provider == "stored":
        return lambda: None
    compute_models = {index.compute.name, settings.embed_model_id}
    chosen = [c for c in cases if c.model in compute_models]
    if not chosen:
        return lambda: None
    pool = Pool(1)
    pool.submit(index.compute.embed, [c.unit.mutations[0].values["Note"] for c in chosen])  # type: ignore[union-attr]

    def attach() -> None:
        try:
            _, embedded = pool.next(ctx.deadline, "while embedding the merged notes")
        finally:
            pool.close()
        for case, vector in zip(chosen, embedded, strict=True):
            assert case.unit is not None
            insert = case.unit.mutations[0]
            values = {**insert.values, "EmbeddingVector": encode_vector(vector), "EmbeddingModelID": settings.embed_model_id}
            case.unit = replace(case.unit, mutations=(replace(insert, values=values), *case.unit.mutations[1:]))

    return attach
