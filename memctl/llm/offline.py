"""The offline judge: memctl's embedded default, answering the Judge's questions by explicit rules.

No network, no model: answers are deterministic, free (calls=0) and explainable, trading recall for
precision. No rule applying means "no" with low confidence; an uncertain conflict gets `review` set.
"""

from __future__ import annotations

import hashlib
from typing import Sequence

from pydantic import BaseModel

from memctl.llm.base import Judge, JudgeResult, Usage
from memctl.llm.offline_merge import (
    MAX_CONTENT_CHARS, MERGE_CONFIDENCE, _merge_reason, _refusal, choose_type, merge_sentences, note_sentences, note_text, order_notes,
)
from memctl.llm.replies import AbsorptionReply, ConsolidatedNote, ConsolidationReply, ContradictionReply
from memctl.records import NoteRecord
from memctl.text.decide import CONFLICT, compatible_groups, decide, states, synthesis_problem
from memctl.text.statement import terminated

__all__ = ["MAX_CONTENT_CHARS", "MODEL", "OfflineJudge"]

MODEL = "memctl-offline-v1"

#: bump the version of a kind whenever its rules change: it invalidates cached verdicts
RULES_VERSION = {"consolidate": "extractive-3", "contradiction": "decisions-2", "absorb": "containment-2"}

NO_RULE_CONFIDENCE = 0.3
COVERED_EXACT_CONFIDENCE = 0.95
COVERED_CONFIDENCE = 0.85
NOT_COVERED_CONFIDENCE = 0.6


def _result(reply: BaseModel) -> JudgeResult:
    return JudgeResult(reply=reply, usage=Usage(), calls=0, raw=reply.model_dump_json())


class OfflineJudge(Judge):
    """Answer the Judge's questions with explicit, documented rules; no network, no cost."""

    model = MODEL
    #: its answers are the decision layer's own rules (the phases then flag what they are unsure of)
    rules = True

    def template_hash(self, kind: str) -> str:
        """Return a constant hash of the rule-set version used for `kind`."""
        if kind not in RULES_VERSION:
            raise ValueError(f"unknown judge question {kind!r}; expected one of {sorted(RULES_VERSION)}")
        return hashlib.sha256(f"{MODEL}:{kind}:{RULES_VERSION[kind]}".encode()).hexdigest()

    def consolidate(self, notes: Sequence[NoteRecord], reference_date: str) -> JudgeResult:
        """Merge the cluster keeping each distinct sentence once (relative dates: each note's own; `reference_date` unused)."""
        if len(notes) < 2:
            return _declined("Fewer than 2 notes.")
        ordered = order_notes(notes)
        texts = {n.id: note_text(n) for n in ordered}
        groups, reasons = compatible_groups(ordered, lambda n: texts[n.id])
        if len(groups) > 1:
            return _declined(f"Not merged: {reasons[0]}. Each note keeps its own date and access count for the contradiction rule.")
        merge = merge_sentences(ordered)
        if merge.undecided:
            return _declined(f"Not merged: {merge.undecided.reason} Neither note has authority; left for review.")
        content = " ".join(terminated(sentence.text) for sentence, _ in merge.kept)
        refusal = _refusal(content) or synthesis_problem(content, list(texts.values()))
        if refusal:
            return _declined(refusal)
        note = ConsolidatedNote(type=choose_type(ordered), content=content, confidence=MERGE_CONFIDENCE)
        reason = _merge_reason(len(notes), merge)
        reply = ConsolidationReply(shouldConsolidate=True, consolidatedNote=note, sourceNoteIds=[n.id for n in notes], reason=reason)
        return _result(reply)

    def contradiction(self, a: NoteRecord, b: NoteRecord) -> JudgeResult:
        """Say whether `a` and `b` hold conflicting values, as the decision layer reads them."""
        found = decide(note_text(a), note_text(b))
        if found.relation != CONFLICT:
            reply = ContradictionReply(
                isContradiction=False,
                contradictionType="none",
                reason=f"No conflicting value ({found.relation.replace('_', ' ')}: {found.reason}); not treated as a contradiction.",
                confidence=NO_RULE_CONFIDENCE,
            )
        else:
            reason = found.reason.removeprefix("conflicting values: ")
            reply = ContradictionReply(
                isContradiction=True, contradictionType=found.kind, reason=reason, confidence=found.confidence, review=not found.certain,
            )
        return _result(reply)

    def absorption(self, broader: NoteRecord, narrower: NoteRecord) -> JudgeResult:
        """Say whether every sentence of `narrower` is already stated by `broader` (in other words or not)."""
        broad = note_sentences(broader)
        narrow = [sentence for sentence in note_sentences(narrower) if sentence.words]
        if not narrow:
            return _result(AbsorptionReply(isCovered=False, reason="The narrower note states nothing.", confidence=NO_RULE_CONFIDENCE))
        missing = [s for s in narrow if not any(states(kept, s) for kept in broad)]
        if missing:
            reason = f'Not covered: "{missing[0].text}" is not stated by the broader note.'
            return _result(AbsorptionReply(isCovered=False, reason=reason, confidence=NOT_COVERED_CONFIDENCE))
        exact = all(any(kept.words == s.words for kept in broad) for s in narrow)
        reason = f"Every sentence of the narrower note ({len(narrow)}) is stated by the broader note."
        confidence = COVERED_EXACT_CONFIDENCE if exact else COVERED_CONFIDENCE
        return _result(AbsorptionReply(isCovered=True, reason=reason, confidence=confidence))


def _declined(reason: str) -> JudgeResult:
    """Answer "leave the cluster as is", in the reply shape the consolidation prompt asks for."""
    return _result(ConsolidationReply(shouldConsolidate=False, consolidatedNote=None, sourceNoteIds=[], reason=reason))
