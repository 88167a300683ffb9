"""Clusters of similar notes in one partition, each one question to the judge, and the child step
that shows what became of it."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any, Callable, Optional, Sequence

from memctl.context import PhaseContext
from memctl.llm.base import JudgeResult
from memctl.llm.budget import split_to_fit
from memctl.llm.copies import outside_vet
from memctl.llm.offline_merge import order_notes
from memctl.llm.questions import question_data
from memctl.phases.asking import Answer, Question
from memctl.phases.common import plural
from memctl.phases.consolidate.rules import JudgeGetter, Tally, analysed, as_after, contested_notes, one_line, seen, short_key
from memctl.phases.notes import order_key
from memctl.plan import ChildStep, Unit
from memctl.records import NoteRecord, PartitionKey
from memctl.similarity import clusters
from memctl.text.decide import NoteText, compatible_groups
from memctl.vectors import PartitionVectors, VectorIndex

CHILD_STEP = "Process Consolidation Cluster"


@dataclass
class ClusterCase:
    """One cluster, the question it is, and what became of it."""

    key: PartitionKey
    notes: list[NoteRecord]
    model: str
    question: Question
    answer: Optional[Answer] = None
    #: consolidated | declined | invalid (an unusable reply) | failed (no reply) | paused (not asked)
    verdict: str = "failed"
    why: str = ""
    unit: Optional[Unit] = None


def cluster_cases(
    ctx: PhaseContext,
    index: VectorIndex,
    groups: dict[PartitionKey, list[NoteRecord]],
    keys: Sequence[PartitionKey],
    vectors: dict[PartitionKey, PartitionVectors],
    get_judge: JudgeGetter,
    reference_date: str,
    tally: Tally,
    texts: dict[str, NoteText],
    changes: dict[str, dict[str, Any]],
    found_in: Optional[Callable[[list[ClusterCase]], None]] = None,
) -> list[ClusterCase]:
    """Return the clusters of the partitions `keys`, in order, each one question to the judge.

    `found_in(cases)` gets each partition's cases (maybe none) as soon as they are known, so their
    questions can be sent while the next partitions are clustered.
    """
    cases: list[ClusterCase] = []
    for key in keys:
        found = _partition_cases(ctx.settings, index, groups[key], key, vectors[key], get_judge, reference_date, tally, texts, changes)
        cases.extend(found)
        if found_in is not None:
            found_in(found)
    return cases


def _partition_cases(
    settings: Any, index: VectorIndex, group: list[NoteRecord], key: PartitionKey, pv: PartitionVectors,
    get_judge: JudgeGetter, reference_date: str, tally: Tally, texts: dict[str, NoteText], changes: dict[str, dict[str, Any]],
) -> list[ClusterCase]:
    """Return the cases of the clusters among one partition's notes `group`, in order."""
    wanted = {n.id for n in group}
    rows = [i for i, n in enumerate(pv.notes) if n.id in wanted]
    members = [as_after(changes, pv.notes[i]) for i in rows]
    thresholds = index.thresholds(pv.model)
    found = clusters(pv.vectors[rows], [order_key(n) for n in members], thresholds[0], settings.cluster_min_size, settings.cluster_max_size)
    if not found:
        return []
    clustered = {members[i].id for cluster in found for i in cluster}
    # A model picks which notes one note replaces and quotes its evidence (checked in
    # synthesis.py). Offline, the rules keep apart what they cannot merge and leave a note
    # that conflicts with another of the partition to the contradiction phase.
    model = not get_judge().rules
    contested = {} if model else contested_notes(pv, clustered, min(thresholds), texts)
    cases: list[ClusterCase] = []
    for cluster in found:
        for kept in _kept_groups([members[i] for i in cluster], contested, model, texts, settings, tally):
            for cluster_notes in _fitting(get_judge, sorted(kept, key=order_key), reference_date, settings):
                cases.append(_case(key, pv.model, cluster_notes, get_judge, reference_date))
    return cases


def _kept_groups(
    cluster: list[NoteRecord], contested: dict[str, str], model: bool, texts: dict[str, NoteText], settings: Any, tally: Tally
) -> list[list[NoteRecord]]:
    """Return the groups of a cluster the judge is asked about, tallying the notes kept apart."""
    free = [n for n in cluster if n.id not in contested]
    # greedy from the newest note: the current wording seeds the group it keeps
    split, reasons = ([free], []) if model else compatible_groups(order_notes(free), partial(analysed, texts))
    kept = [group for group in split if len(group) >= settings.cluster_min_size]
    apart = len(cluster) - sum(len(group) for group in kept)
    tally.kept_apart += apart
    tally.clusters_split += apart > 0
    if apart:
        held = [contested[n.id] for n in cluster if n.id in contested]
        why = reasons[0] if reasons else f"{plural(len(held), 'note')} left to the contradiction phase: {held[0]}"
        tally.apart_reasons.append(one_line(why))
    return kept


def _case(key: PartitionKey, model: str, notes: list[NoteRecord], get_judge: JudgeGetter, reference_date: str) -> ClusterCase:
    """Return the case of the cluster `notes`: the question that asks the judge to consolidate them."""
    # The reference date is kept out of the cache key on purpose: an unchanged cluster
    # is never asked twice (the date only moves the prompt's 30-day age rule).
    inputs = {"notes": [seen(n) for n in notes]}
    question = Question(
        "consolidate", inputs, partial(_ask_consolidation, get_judge, notes, reference_date),
        item=question_data("consolidate", notes), shared=reference_date, group=repr(key),
        vet=outside_vet([(n.id, n.note) for n in notes], "cluster"),
    )
    return ClusterCase(key, notes, model, question)


def _fitting(get_judge: JudgeGetter, notes: list[NoteRecord], reference_date: str, settings: Any) -> list[list[NoteRecord]]:
    """Return the cluster, or its parts when the whole would not fit the LLM's context window.

    A cluster no part of which fits stays whole: the judge then answers it with the reason,
    without a request, and the child step shows it.
    """
    if settings.llm_context_tokens is None:
        return [notes]
    fits = get_judge().consolidation_fits
    return split_to_fit(notes, lambda part: fits(part, reference_date), settings.cluster_min_size) or [notes]


def _ask_consolidation(get_judge: JudgeGetter, notes: list[NoteRecord], reference_date: str) -> JudgeResult:
    return get_judge().consolidate(notes, reference_date)


def child_step(case: ClusterCase) -> ChildStep:
    answer = case.answer
    failed = case.verdict in ("invalid", "failed")  # a paused cluster was not asked: nothing failed
    return ChildStep(
        name=CHILD_STEP,
        step_type="Prompt",
        input={"clusterSize": len(case.notes), "noteIds": [n.id for n in case.notes], "partition": short_key(case.key)},
        output={
            "verdict": case.verdict,
            "newNoteId": case.unit.mutations[0].record_id if case.unit is not None and case.verdict == "consolidated" else None,
            **({"standingNoteId": case.unit.detail["standing"]} if case.unit is not None and case.verdict == "standing" else {}),
            "reason": case.why,
            "tokens": answer.usage.total if answer else 0,
            "cached": bool(answer and answer.cached),
            "llmCalls": answer.calls if answer else 0,
        },
        success=not failed,
        error=case.why if failed else None,
        unit_key=case.unit.key if case.unit is not None else None,
    )
