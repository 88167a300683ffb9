"""Contradictions, measured: the judge asked about labelled pairs exactly as the contradictions phase asks.

A pair is flagged when isContradiction comes at or above the confidence floor. The phase's own
checks (verdict_guard's vetoes, distrust of uniform verdicts) are not applied: they are memctl
deciding whether to believe the judge, not the judge's answer.
"""

from __future__ import annotations

import time
from datetime import datetime
from pathlib import Path
from typing import Optional, Sequence

import numpy as np

from memctl import api
from memctl.context import Reporter
from memctl.embed import thresholds_for
from memctl.embed.base import Embedder
from memctl.evaluation.corpus import LabelledPair, load_contradiction_pairs, pair_note_ids, scratch_settings, stable_id
from memctl.evaluation.report import ContradictionResult, Verdict
from memctl.llm.base import Judge
from memctl.llm.replies import ContradictionReply
from memctl.phases.asking import ask_all
from memctl.phases.contradictions import Candidate, question_for, reply_problem
from memctl.records import NoteRecord
from memctl.settings import Settings
from memctl.store.engine import scrub


def _pair_note(note_id: str, text: str, created: datetime) -> NoteRecord:
    return NoteRecord(
        id=note_id, agent_id=stable_id("agent"), company_id=None, user_id=None, primary_scope_entity_id=None,
        primary_scope_record_id=None, secondary_scopes=None, type="Context", note=text, is_auto_generated=True,
        status="Active", protection_tier="Standard", access_count=0, last_accessed_at=None, created_at=created, updated_at=created,
    )


def evaluate_contradictions(settings: Settings, judge: Judge, embedder: Embedder, path: Path, limit: Optional[int], reporter: Reporter) -> ContradictionResult:
    """Ask the judge about every labelled pair exactly as the contradictions phase would, and score it."""
    meta, pairs = load_contradiction_pairs(limit)
    scratch = scratch_settings(settings, path, meta["referenceDate"])
    created = scratch.current_time()
    result = ContradictionResult(confidence_floor=settings.confidence_floor)
    engine = api.open_store(scratch)
    try:
        ctx = api.context(scratch, engine, api.RunOptions(), reporter)
        notes = [(_pair_note(ia, p.a, created), _pair_note(ib, p.b, created)) for p, (ia, ib) in ((p, pair_note_ids(p)) for p in pairs)]
        questions = [question_for(judge, Candidate(a, b, 1.0, True)) for a, b in notes]
        started = time.monotonic()
        answers, stats = ask_all(ctx, judge, questions, ContradictionReply, valid=reply_problem)
        result.seconds = time.monotonic() - started
    finally:
        engine.dispose()
    result.llm_calls, result.cache_hits = stats.calls, stats.cached
    result.prompt_tokens, result.completion_tokens = stats.usage.prompt_tokens, stats.usage.completion_tokens
    for pair, answer in zip(pairs, answers.values(), strict=True):
        reply = answer.reply
        if not isinstance(reply, ContradictionReply):
            result.verdicts.append(Verdict(pair, False, error=answer.error or "no reply"))
            continue
        positive = reply.isContradiction and reply.confidence >= settings.confidence_floor
        result.verdicts.append(Verdict(
            pair, positive, reply.contradictionType if reply.isContradiction else "none", reply.confidence, reply.reason,
            low_confidence=reply.isContradiction and not positive,
        ))
    if pairs and all(v.error for v in result.verdicts):
        result.error = f"no usable judge answer ({len(pairs)} pairs failed or were rejected); first: {result.verdicts[0].error}"
    if pairs:
        result.embedder = embedder.name
        result.threshold = settings.contradiction_threshold if settings.contradiction_threshold is not None else thresholds_for(embedder.name)[1]
        try:
            cosines = _cosines(embedder, pairs)
        except Exception as exc:  # noqa: BLE001 - the judge's figures stand without the embedder's
            result.pairing_error = scrub(f"{type(exc).__name__}: {exc}", settings)
        else:
            for verdict, similarity in zip(result.verdicts, cosines, strict=True):
                verdict.similarity = similarity
    return result


def _cosines(embedder: Embedder, pairs: Sequence[LabelledPair]) -> list[float]:
    """Return the cosine of each pair's two texts under `embedder` (not via memctl.similarity)."""
    texts = list(dict.fromkeys([p.a for p in pairs] + [p.b for p in pairs]))
    where = {t: i for i, t in enumerate(texts)}
    vectors = np.array(embedder.embed(texts), dtype=np.float32, ndmin=2)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    np.divide(vectors, norms, out=vectors, where=norms > 0)  # a zero vector stays zero
    a = vectors[[where[p.a] for p in pairs]]
    b = vectors[[where[p.b] for p in pairs]]
    return [round(float(x), 6) for x in np.einsum("ij,ij->i", a, b)]
