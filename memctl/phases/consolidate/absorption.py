"""Absorption: a user-level note a broader note states whole, or a later wording of a merged
note's fact, is revoked into that note once the judge says so and hard evidence does not gainsay it."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime
from functools import cache, partial
from itertools import chain
from typing import Any, Optional, Sequence

import numpy as np

from memctl.context import PhaseContext
from memctl.llm.base import Judge, JudgeResult
from memctl.llm.copies import outside_vet
from memctl.llm.questions import question_data
from memctl.llm.replies import AbsorptionReply
from memctl.phases.asking import Answer, Question, ask_all
from memctl.phases.common import plural
from memctl.phases.consolidate.rules import TABLE, JudgeGetter, Tally, analysed, expiry, one_line, seen, standing_unit
from memctl.phases.contradictions import pair_budget
from memctl.phases.notes import is_new, note_guard, order_key, revoke_into
from memctl.plan import Mutation, Unit
from memctl.records import NoteRecord, PartitionKey
from memctl.text.decide import NoteText, absorption_veto, lost_evidence
from memctl.text.evidence import Quoted, check, unfound
from memctl.vectors import PartitionVectors, VectorIndex

#: cosines closer than this are equal (a tie goes to the lower index or rank)
TIE = np.float32(1e-6)

#: rows per side of one block of the absorption matrix product
BLOCK = 1024
#: one side of an absorption search: a partition's live notes' ranks, vector rows and expiries
Side = tuple[np.ndarray, np.ndarray, np.ndarray]


@dataclass
class AbsorptionCase:
    narrower: NoteRecord
    broader: NoteRecord
    similarity: float
    question: Question
    answer: Optional[Answer] = None
    #: the broader note is a merged note of the narrower one's own partition (a standing note)
    standing: bool = False


def best_cover(
    narrow: np.ndarray, broad: np.ndarray, threshold: float, narrow_expiry: np.ndarray, broad_expiry: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Return, per row of `narrow`, the index of its most similar row of `broad` and that cosine.

    Only pairs with cosine >= threshold whose broad row expires no earlier (inf: never) count; rows
    without one get -1. Blocks keep memory at BLOCK x BLOCK floats; ties go to the lower index.
    """
    n = len(narrow)
    best = np.full(n, -1, dtype=np.int64)
    sims = np.full(n, -np.inf, dtype=np.float32)
    t = np.float32(threshold)
    for r0 in range(0, n, BLOCK):
        r1 = min(n, r0 + BLOCK)
        for c0 in range(0, len(broad), BLOCK):
            c1 = min(len(broad), c0 + BLOCK)
            s = narrow[r0:r1] @ broad[c0:c1].T
            s = np.where(broad_expiry[None, c0:c1] >= narrow_expiry[r0:r1, None], s, -np.inf).astype(np.float32)
            # within TIE of the best: a float32 product's last bits depend on the column's position
            j = np.argmax(s >= s.max(axis=1, keepdims=True) - TIE, axis=1)
            v = s[np.arange(r1 - r0), j]
            better = (v >= t) & (v > sims[r0:r1] + TIE)
            best[r0:r1][better] = j[better] + c0
            sims[r0:r1][better] = v[better]
    return best, sims


def absorption_candidates(
    ctx: PhaseContext,
    index: VectorIndex,
    groups: dict[PartitionKey, list[NoteRecord]],
    broader: dict[PartitionKey, list[NoteRecord]],
    eligible: dict[PartitionKey, list[PartitionKey]],
    vectors: dict[PartitionKey, PartitionVectors],
    revoked: set[str],
    get_judge: JudgeGetter,
) -> list[AbsorptionCase]:
    """Return an absorption check for each narrower note whose best broader note is as similar as a cluster's members."""
    now = ctx.now.timestamp()
    rows = {key: {n.id: i for i, n in enumerate(pv.notes)} for key, pv in vectors.items()}
    # user partitions with the same broader partitions (a company's users) are searched together
    by_targets: dict[tuple[PartitionKey, ...], list[PartitionKey]] = defaultdict(list)
    for key, targets in eligible.items():
        by_targets[tuple(targets)].append(key)
    # each broader partition's live notes, prepared once; ties go to the first in order_key order
    live = {b: [n for n in broader[b] if n.id not in revoked and expiry(n) > now] for b in set(chain.from_iterable(by_targets))}
    ranked = sorted(chain.from_iterable(live.values()), key=order_key)
    rank = {n.id: i for i, n in enumerate(ranked)}

    @cache
    def side(b: PartitionKey) -> Side:
        notes = live[b]
        return np.array([rank[n.id] for n in notes], dtype=np.int64), _take(vectors[b], rows[b], notes), _expiries(notes)

    found: list[AbsorptionCase] = []
    for targets, keys in by_targets.items():
        narrow_by_key = {key: [n for n in groups[key] if n.id not in revoked] for key in keys}
        if not any(live[t] for t in targets) or not any(narrow_by_key.values()):
            continue
        models = {vectors[k].model for k in chain(keys, targets)}
        # the whole group in one product: a row's best match does not depend on the rows beside it
        narrow = list(chain.from_iterable(narrow_by_key.values()))
        if len(models) == 1:
            model = models.pop()
            wide, sides = ranked, [side(t) for t in targets if live[t]]
            a = np.concatenate([_take(vectors[k], rows[k], members) for k, members in narrow_by_key.items() if members])
        else:  # the partitions disagree on the model: compare both sides in the compute embedder's
            model = index.compute.name
            wide = sorted(chain.from_iterable(live[t] for t in targets), key=order_key)
            vector_of = index.embed([*wide, *narrow]).__getitem__
            sides = [(np.arange(len(wide), dtype=np.int64), np.vstack([vector_of(n.id) for n in wide]), _expiries(wide))]
            a = np.vstack([vector_of(n.id) for n in narrow])
        best, sims = best_of(a, sides, index.thresholds(model)[0], _expiries(narrow))
        for note, j, sim in zip(narrow, best.tolist(), sims.tolist(), strict=True):
            if j >= 0:
                found.append(_absorption_case(get_judge, wide[j], note, float(sim)))
    return found


def best_of(narrow: np.ndarray, sides: Sequence[Side], threshold: float, narrow_expiry: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Return, per row of `narrow`, the rank of its best match over all sides and its cosine (-1, -inf: none).

    Chooses as one `best_cover` over all sides' rows in rank order would.
    """
    best = np.full(len(narrow), -1, dtype=np.int64)
    sims = np.full(len(narrow), -np.inf, dtype=np.float32)
    for ranks, rows, expiries in sides:
        j, s = best_cover(narrow, rows, threshold, narrow_expiry, expiries)
        hit = j >= 0
        r = np.where(hit, ranks[np.maximum(j, 0)], -1)
        with np.errstate(invalid="ignore"):  # -inf - -inf where neither side has a match: not a tie
            better = hit & ((s > sims + TIE) | ((np.abs(s - sims) <= TIE) & (r < best)))
        best[better], sims[better] = r[better], s[better]
    return best, sims


def _take(pv: PartitionVectors, rows: dict[str, int], notes: Sequence[NoteRecord]) -> np.ndarray:
    """Return the vectors of `notes`, in order, from `pv` (`rows`: each note's row in it)."""
    return pv.vectors[np.array([rows[n.id] for n in notes], dtype=np.int64)]


def _expiries(notes: Sequence[NoteRecord]) -> np.ndarray:
    return np.array([expiry(n) for n in notes], dtype=np.float64)


def standing_candidates(
    index: VectorIndex,
    groups: dict[PartitionKey, list[NoteRecord]],
    keys: Sequence[PartitionKey],
    vectors: dict[PartitionKey, PartitionVectors],
    taken: set[str],
    get_judge: JudgeGetter,
    since: Optional[datetime] = None,
) -> list[AbsorptionCase]:
    """Return the absorption checks of notes into a standing note of their own partition.

    An untouched merged note (ConsolidationCount > 0) is asked whether it states every fact of each
    untouched note as similar as a cluster's members, so a fact merged once stays one note as new
    wordings trickle in below the cluster minimum. A merged note, or one new `since` the last run,
    that no merged note covers is checked against its most similar earlier note the same way.
    """
    found: list[AbsorptionCase] = []
    for key in keys:
        pv = vectors.get(key)
        if pv is None:
            continue
        rows = {n.id: i for i, n in enumerate(pv.notes)}
        free = [n for n in groups[key] if n.id not in taken and n.id in rows]
        stand = sorted((n for n in free if n.consolidation_count), key=order_key)
        narrow = [n for n in free if not n.consolidation_count]
        if not narrow:
            continue
        threshold = index.thresholds(pv.model)[0]
        a = _take(pv, rows, narrow)
        matched: set[str] = set()
        if stand:
            best, sims = best_cover(a, _take(pv, rows, stand), threshold, _expiries(narrow), _expiries(stand))
            for note, j, sim in zip(narrow, best.tolist(), sims.tolist(), strict=True):
                if j >= 0:
                    found.append(_absorption_case(get_judge, stand[j], note, float(sim), standing=True))
                    matched |= {note.id, stand[j].id}
        pool = sorted(free, key=order_key)
        fresh = [n.id not in matched and (bool(n.consolidation_count) or (since is not None and is_new(n, since))) for n in pool]
        if any(fresh):
            found += _later_wordings(get_judge, pool, _take(pv, rows, pool), fresh, matched, threshold)
    return found


def _later_wordings(
    get_judge: JudgeGetter, pool: list[NoteRecord], vecs: np.ndarray, asked: list[bool], matched: set[str], threshold: float
) -> list[AbsorptionCase]:
    """Return, latest note first, the check of each `asked` note against its most similar earlier note.

    `pool` is in `order_key` order. A note is in at most one check, so no answer revokes a note another keeps.
    """
    ends = _expiries(pool)
    locked = np.array([n.id in matched for n in pool], dtype=bool)
    found: list[AbsorptionCase] = []
    for i in reversed(range(len(pool))):
        if locked[i] or not asked[i]:
            continue
        sims = (vecs[:i] @ vecs[i]).astype(np.float32)
        ok = ~locked[:i] & (ends[:i] >= ends[i]) & (sims >= np.float32(threshold))
        if not ok.any():
            continue
        j = int(np.argmax(np.where(ok, sims, -np.inf)))
        locked[i] = locked[j] = True
        found.append(_absorption_case(get_judge, pool[j], pool[i], float(sims[j]), standing=True))
    return found


def ask_absorptions(ctx: PhaseContext, judge: Judge, found: list[AbsorptionCase], tally: Tally) -> tuple[list[AbsorptionCase], int]:
    """Ask the absorption questions: every cached or paused one, and at most the pair budget of new ones."""
    valid = (lambda q, r: None) if judge.rules else quote_problem
    answers, stats = ask_all(ctx, judge, [c.question for c in found], AbsorptionReply, valid=valid, budget=pair_budget(ctx, judge))
    tally.add(stats)
    for i, answer in answers.items():
        found[i].answer = answer
    return [found[i] for i in answers], len(found) - len(answers)


def absorption_quotes(question: Question, reply: AbsorptionReply) -> tuple[Quoted, Quoted]:
    """Return the model's quotes from the broader and the narrower note (the texts it was shown)."""
    shown = question.item
    return (Quoted(shown["broader"]["content"], reply.subjectBroader, reply.valueBroader),
            Quoted(shown["narrower"]["content"], reply.subjectNarrower, reply.valueNarrower))


def quote_problem(question: Question, reply: Any) -> Optional[str]:
    """Return why a model's reply cannot be used, or None: a "covered" must quote evidence from both notes."""
    if isinstance(reply, AbsorptionReply) and reply.isCovered:
        return unfound(absorption_quotes(question, reply), ("the broader note", "the narrower note"))
    return None


def is_approved(ctx: PhaseContext, case: AbsorptionCase, texts: dict[str, NoteText], tally: Tally, model: bool = False) -> bool:
    """Say whether the judge answered "covered" with enough confidence and the evidence does not gainsay it.

    A number, ID, e-mail, URL or date of the narrower note missing from the broader one vetoes it; a
    model's quotes must also hold, the offline rules' "yes" is checked by `absorption_veto` instead.
    """
    reply = case.answer.reply if case.answer else None
    if not isinstance(reply, AbsorptionReply) or not reply.isCovered or reply.confidence < ctx.settings.confidence_floor:
        return False
    broader, narrower = analysed(texts, case.broader), analysed(texts, case.narrower)
    if model:
        found = check(absorption_quotes(case.question, reply))
        veto = lost_evidence(broader, narrower) or (None if found.holds else f"the quotes do not show one subject: {found.reason}")
    else:
        veto = absorption_veto(broader, narrower)
    if veto is not None:
        tally.absorptions_vetoed += 1
        if len(tally.veto_reasons) < 10:
            tally.veto_reasons.append(f"{case.narrower.id} into {case.broader.id}: {veto}")
        return False
    return True


def absorb_unit(case: AbsorptionCase) -> Unit:
    """Return the unit that revokes a narrower note into the broader one, which is only guarded ("check")."""
    narrower, broader = case.narrower, case.broader
    reason = f"Absorbed into broader note {broader.id}: {_absorb_reason(case, 'broader note states every fact')}"
    return Unit(
        kind="absorb", key=f"absorb:{narrower.id}", reason=reason,
        mutations=(revoke_into(narrower, broader.id, reason), Mutation(TABLE, broader.id, "check", {}, guard=note_guard(broader))),
        detail={"broader": broader.id, "similarity": round(case.similarity, 4)},
    )


def _absorb_reason(case: AbsorptionCase, default: str) -> str:
    reply = case.answer.reply if case.answer else None
    return one_line(getattr(reply, "reason", "")) or default


def standing_absorptions(cases: Sequence[AbsorptionCase]) -> list[Unit]:
    """Return one unit per merged note that absorbs later wordings of its fact: it stays, credited with
    their accesses (`standing_unit`), and they are revoked into it."""
    by_note: dict[str, list[AbsorptionCase]] = defaultdict(list)
    for case in cases:
        by_note[case.broader.id].append(case)
    units = []
    for found in by_note.values():
        stay, others = found[0].broader, [c.narrower for c in found]
        reason = _absorb_reason(found[0], "the merged note states every fact")
        shown = ", ".join(n.id for n in others[:10]) + (f" and {len(others) - 10} more" if len(others) > 10 else "")
        units.append(standing_unit(
            "absorb", f"absorb:{stay.id}", stay, others,
            f"Absorbed {plural(len(others), 'later wording')} of this note ({shown}): {reason}",
            f"Absorbed into the merged note {stay.id}: {reason}",
            {"standing": stay.id, "absorbed": len(others), "similarity": round(max(c.similarity for c in found), 4)},
        ))
    return units


def _absorption_case(get_judge: JudgeGetter, broader: NoteRecord, narrower: NoteRecord, similarity: float, standing: bool = False) -> AbsorptionCase:
    inputs = {"broader": seen(broader), "narrower": seen(narrower)}
    question = Question(
        "absorb", inputs, partial(_ask_absorption, get_judge, broader, narrower), item=question_data("absorb", (broader, narrower)),
        vet=outside_vet([(broader.id, broader.note), (narrower.id, narrower.note)], "pair"),
    )
    return AbsorptionCase(narrower, broader, similarity, question, standing=standing)


def _ask_absorption(get_judge: JudgeGetter, broader: NoteRecord, narrower: NoteRecord) -> JudgeResult:
    return get_judge().absorption(broader, narrower)
