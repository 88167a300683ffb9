"""Phase 1, consolidate related notes (DESIGN 3 and 4.1, seed US1, FR-010..016).

Candidates (Active, auto-generated, neither Protected nor Immutable) are clustered by cosine
similarity inside each partition, never across scopes; each cluster is one question to the judge.
A valid "yes" is one atomic unit: insert the synthesis, its scope copied from a member row, and
revoke the sources into it. An invalid reply is not cached, leaves the cluster as is and pauses the
question (memctl/phases/asking.py).

A merged fact stays one note: a synthesis with a source's text writes no note; that source stands,
credited with the accesses of the others revoked into it ("standing"), as exact copies and wordings
of one fact are joined without a model ("copies"). The only move across partitions is absorption: a
user note that a broader note of the same agent already states is revoked into it, the broader note
guarded by a `check`. A partition that needed nothing, unchanged since, is skipped (memctl/settled.py).
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from dataclasses import dataclass, field, replace
from functools import partial
from itertools import chain
from typing import Any, Callable, Iterable, Optional, Sequence

from memctl.context import PhaseContext, Snapshot
from memctl.llm.base import Judge
from memctl.phases.asking import ask_again_output, ask_again_text, no_usable_answer
from memctl.phases.base import Overlay
from memctl.phases.common import plural
from memctl.phases.consolidate.absorption import (
    AbsorptionCase,
    absorb_unit,
    absorption_candidates,
    ask_absorptions,
    is_approved,
    standing_absorptions,
    standing_candidates,
)
from memctl.phases.consolidate.clusters import ClusterCase, child_step, cluster_cases
from memctl.phases.consolidate.copies import EXACT_COPY, SAME_WORDS, copies_text, copy_groups, plan_copies, wording
from memctl.phases.consolidate.rules import TABLE, Tally, as_after, credited, expiry, revoked_ids, utc
from memctl.phases.consolidate.synthesis import ClusterQuestions
from memctl.phases.notes import by_partition, consolidatable, is_new, load_notes, order_key, with_vectors
from memctl.phases.slices import agent_slices, between_slices
from memctl.plan import PhasePlan, StepResult, Unit
from memctl.records import NoteRecord, PartitionKey, broader_keys
from memctl.settled import MOSTLY_SETTLED, SettledMarks, marks_for, notes_digest
from memctl.similarity import partition_key
from memctl.store import models as m
from memctl.text.decide import NoteText
from memctl.vectors import VectorIndex, VectorStats, close_vectors, vector_index

NAME = "consolidate"
STEP_NAME = "Consolidate Related Notes"


@dataclass
class _Part:
    """What one slice of the scope gathered for the plan (the whole scope, when it is one slice)."""

    candidates: int
    partitions: int
    #: partitions left alone, settled on an earlier run and unchanged since
    settled: set[PartitionKey]
    texts: dict[str, NoteText]
    copy_units: list[Unit] = field(default_factory=list)
    copied: set[PartitionKey] = field(default_factory=set)
    cases: list[ClusterCase] = field(default_factory=list)
    #: absorption candidates, asked with every other slice's under the run's budget
    found: list[AbsorptionCase] = field(default_factory=list)
    mark_of: dict[PartitionKey, str] = field(default_factory=dict)
    eligible: dict[PartitionKey, list[PartitionKey]] = field(default_factory=dict)
    cluster_keys: list[PartitionKey] = field(default_factory=list)
    models: set[str] = field(default_factory=set)
    #: puts the new notes' vectors into their cluster units, once the compute embedder answered
    attach: Callable[[], None] = lambda: None


class _Services:
    """The judge and the vector index, built on first use: a store with nothing to ask needs no working LLM configuration."""

    def __init__(self, ctx: PhaseContext) -> None:
        self.ctx = ctx
        self.judge: Optional[Judge] = None
        self.index: Optional[VectorIndex] = None
        self.stats_before = VectorStats(0, 0, 0)

    def get_judge(self) -> Judge:
        if self.judge is None:
            self.judge = self.ctx.judge()
        return self.judge

    def get_index(self) -> VectorIndex:
        if self.index is None:
            self.index = vector_index(self.ctx)
            self.stats_before = self.index.stats
        return self.index


@dataclass
class _Selection:
    """The partitions of one slice to plan this run, those settled on an earlier run left out."""

    notes: list[NoteRecord]
    candidates: list[NoteRecord]
    #: candidates by partition
    groups: dict[PartitionKey, list[NoteRecord]]
    #: every Active note by partition
    active: dict[PartitionKey, list[NoteRecord]]
    broader: dict[PartitionKey, list[NoteRecord]]
    eligible: dict[PartitionKey, list[PartitionKey]]
    cluster_keys: list[PartitionKey]
    standing_keys: list[PartitionKey]
    copy_keys: dict[PartitionKey, list[list[NoteRecord]]]
    mark_of: dict[PartitionKey, str]
    skipped: set[PartitionKey]

    def empty(self) -> bool:
        return not self.cluster_keys and not self.eligible and not self.copy_keys and not self.standing_keys


class ConsolidatePhase:
    """Merge clusters of similar notes into one note each; absorb user notes a broader note covers."""

    name = NAME
    step_name = STEP_NAME

    def plan(self, ctx: PhaseContext, overlay: Overlay) -> PhasePlan:
        marks = marks_for(ctx, NAME, ["consolidate", "absorb"])
        try:
            plan = self._plan(ctx, overlay, marks)
        except BaseException:
            ctx.services.snapshot = None
            close_vectors(ctx)  # the next phase reads the notes again
            raise
        snapshot = ctx.services.snapshot
        if plan.units and (ctx.dry_run or snapshot is None):  # the contradictions phase reads the store again
            ctx.services.snapshot = None
        elif plan.units:  # it reads again only the notes these units name, once they are applied
            touched = frozenset(mu.record_id.lower() for unit in plan.units for mu in unit.mutations if mu.table == TABLE)
            ctx.services.snapshot = replace(snapshot, touched=touched)
        if marks is not None:
            marks.save_share()
        return plan

    def _plan(self, ctx: PhaseContext, overlay: Overlay, marks: Optional[SettledMarks]) -> PhasePlan:
        settings = ctx.settings
        # When most partitions were settled after the last run, read vectors only for the ones
        # planned; otherwise (a first run, many changes, --replan) in the same scan as the notes.
        settled = marks.settled_share() if marks is not None else 0.0
        lazy = settled >= MOSTLY_SETTLED  # marks.mostly_settled(), without reading the share twice
        services = _Services(ctx)
        # A large scope is read agent by agent (memctl/phases/slices.py); the questions under the
        # run's budget are chosen once every slice is read, so the plan is the same either way.
        tally = Tally()
        slices = agent_slices(ctx)
        parts = []
        for part_ctx in slices:
            parts.append(self._gather(part_ctx, overlay, marks, lazy, tally, services, whole=len(slices) == 1))
            between_slices(slices)
        candidates = sum(p.candidates for p in parts)
        partitions = sum(p.partitions for p in parts)
        skipped = sum(len(p.settled) for p in parts)
        plan = PhasePlan(phase=NAME, step_name=STEP_NAME)
        index = services.index
        if index is None:  # nothing to plan in any slice: no partition to cluster, absorb or join
            return _nothing_planned(plan, settings.cluster_min_size, candidates, partitions, skipped)
        copy_units = [u for p in parts for u in p.copy_units]
        cases = [c for p in parts for c in p.cases]
        absorptions, deferred, absorb_units = _absorb(ctx, parts, services, tally)
        for part in parts:
            part.attach()  # the new notes' vectors, now that every question is in
        if marks is not None:
            for part in parts:
                newly = _settled_now(
                    part.mark_of, part.settled, part.cluster_keys, part.eligible, part.cases, part.found, absorptions, absorb_units, part.copied
                )
                marks.record([part.mark_of[k] for k in newly])

        plan.units = copy_units + [case.unit for case in cases if case.unit is not None] + absorb_units
        plan.children = [child_step(case) for case in cases]
        thresholds = {model: index.thresholds(model)[0] for model in sorted(set().union(*(p.models for p in parts)))}
        plan.input = {
            "candidateNotes": candidates,
            "partitions": partitions,
            "clusters": len(cases),
            "thresholds": thresholds,
            "clusterSize": [settings.cluster_min_size, settings.cluster_max_size],
            "embedder": index.compute.name,
            "judge": services.judge.model if services.judge is not None else None,
            "absorb": settings.absorb,
            "partitionsSettled": skipped,
        }
        if len(slices) > 1:
            plan.input["slices"] = len(slices)
        stats, before = index.stats, services.stats_before
        used = VectorStats(stats.stored - before.stored, stats.cached - before.cached, stats.computed - before.computed)
        absorbed = sum(len(revoked_ids(u)) for u in absorb_units)
        result = _result(tally, used, cases, len(absorptions), deferred, absorbed, copy_units)
        plan.output = {**result.as_output(), **tally.client}
        if tally.ask_again:
            plan.output["askAgainAt"] = ask_again_output(tally.ask_again)
        if not cases and not absorptions and not copy_units:
            plan.outcome = "no items"
        plan.message = _message(result, tally, plan.output.get("askAgainAt", {}))
        if tally.apart_reasons:
            plan.output["keptApartReasons"] = tally.apart_reasons[:10]
        if tally.veto_reasons:
            plan.output["absorptionVetoReasons"] = tally.veto_reasons
        _fail_without_answers(plan, result, tally, cases, absorptions)
        return plan

    def _gather(
        self, ctx: PhaseContext, overlay: Overlay, marks: Optional[SettledMarks], lazy: bool, tally: Tally, services: _Services, whole: bool
    ) -> _Part:
        """Plan the slice of the scope `ctx` holds up to the absorption questions, which are asked for every slice at once.

        `whole`: the slice is the whole scope; its notes are left for the contradictions phase
        (`Snapshot`) and its text analyses for the absorption checks. A slice keeps neither.
        """
        settings = ctx.settings
        sel = _select(ctx, overlay, marks, lazy)
        if whole:  # for the contradictions phase; a slice's notes are read again by its slice there
            ctx.services.snapshot = Snapshot(sel.notes, with_vectors=not lazy)  # their vectors were decoded as they were read
        groups, broader, active, cluster_keys = sel.groups, sel.broader, sel.active, sel.cluster_keys
        planned = set(cluster_keys) | set(sel.eligible) | set(sel.standing_keys)
        texts: dict[str, NoteText] = {}

        part = _Part(candidates=len(sel.candidates), partitions=len(groups), settled=sel.skipped, texts=texts if whole else {})
        if sel.empty():
            return part

        index = services.get_index()
        needed = _needed(active, groups, broader, cluster_keys, sel.copy_keys, sel.eligible, sel.standing_keys)
        if lazy:  # the vectors of the partitions planned, read into the run's StoredVectors
            with_vectors(ctx, needed)
        vectors = index.partitions(needed)

        reference_date = utc(ctx.now).date().isoformat()
        copy_units, copied = plan_copies(index, sel.copy_keys, vectors, texts, EXACT_COPY)
        # Later units are planned on the notes as the earlier ones leave them: a standing note's
        # guard then shows the AccessCount it will have when they apply.
        changes = credited(copy_units)
        gone = {n_id for unit in copy_units for n_id in revoked_ids(unit)}
        for key in cluster_keys:
            groups[key] = [as_after(changes, n) for n in groups[key] if n.id not in gone]
        cluster_keys = [k for k in cluster_keys if len(groups[k]) >= settings.cluster_min_size]
        get_judge = services.get_judge
        # a partition's questions go out once its clusters are known, while the next are clustered
        with ClusterQuestions(ctx, get_judge, tally) as asked:
            cases = cluster_cases(ctx, index, groups, cluster_keys, vectors, get_judge, reference_date, tally, texts, changes, asked.add)
            # Found while the answers come in: they do not depend on them, as a cluster's unit writes
            # only notes of its cluster (and a new one), and credits only those.
            touched = {mu.record_id for unit in copy_units for mu in unit.mutations} | {n.id for c in cases for n in c.notes}
            leftover = {k: [as_after(changes, n) for n in active[k] if n.id not in touched] for k in planned if k in active and k in vectors}
            wordings = _wordings(leftover, partial(wording, texts), asked.flush)
            more, more_copied = plan_copies(index, wordings, vectors, texts, SAME_WORDS) if wordings else ([], set())
            part.attach = asked.finish()
        cluster_units = [case.unit for case in cases if case.unit is not None]
        assert not {mu.record_id for u in cluster_units for mu in u.mutations} & {n.id for ms in leftover.values() for n in ms}
        revoked = gone | {n_id for unit in cluster_units for n_id in revoked_ids(unit)}
        changes.update(credited(cluster_units))
        if wordings:
            copy_units, copied = copy_units + more, copied | more_copied
            revoked |= {n_id for unit in more for n_id in revoked_ids(unit)}
            changes.update(credited(more))
        for mapping in (groups, broader):
            for key in mapping:
                mapping[key] = [as_after(changes, n) for n in mapping[key]]

        absorbable: list[AbsorptionCase] = []
        if sel.eligible:
            absorbable = absorption_candidates(ctx, index, groups, broader, sel.eligible, vectors, revoked, get_judge)
        if sel.standing_keys:
            taken = revoked | {mu.record_id for unit in copy_units + cluster_units for mu in unit.mutations} | {c.narrower.id for c in absorbable}
            taken |= _awaiting(cases)
            absorbable += standing_candidates(index, groups, sel.standing_keys, vectors, taken, get_judge, ctx.last_maintenance_at)
        part.copy_units, part.copied, part.cases, part.found = copy_units, copied, cases, absorbable
        part.mark_of, part.eligible = sel.mark_of, sel.eligible
        part.cluster_keys = [*cluster_keys, *sel.standing_keys]
        part.models = {v.model for v in vectors.values()}
        return part


def _select(ctx: PhaseContext, overlay: Overlay, marks: Optional[SettledMarks], lazy: bool) -> _Selection:
    """Read the slice's notes and choose the partitions to plan, leaving out those settled on an earlier run."""
    notes = load_notes(ctx, overlay, vectors=not lazy)
    candidates = [n for n in notes if consolidatable(n)]
    groups = by_partition(candidates)
    cluster_keys = [k for k, members in groups.items() if len(members) >= ctx.settings.cluster_min_size]
    broader, eligible = _absorption_targets(ctx, overlay, notes, groups, lazy)
    standing_keys = _standing_keys(ctx, groups)
    # Partitions found to need nothing on an earlier run, unchanged since, are left alone.
    mark_of, skipped = _marks(ctx, marks, groups, broader, eligible, [*cluster_keys, *standing_keys])
    # Same-text Active notes of a partition are one note, whatever the cluster minimum: found by text
    # alone, in every partition; in those planned this run, wordings differing only in punctuation, case, filler
    active = by_partition(notes)
    copy_keys = {key: found for key, found in ((k, copy_groups(members)) for k, members in active.items() if len(members) > 1) if found}
    return _Selection(
        notes=notes, candidates=candidates, groups=groups, active=active, broader=broader,
        eligible={k: v for k, v in eligible.items() if k not in skipped},
        cluster_keys=[k for k in cluster_keys if k not in skipped],
        standing_keys=[k for k in standing_keys if k not in skipped],
        copy_keys=copy_keys, mark_of=mark_of, skipped=skipped,
    )


def _absorb(ctx: PhaseContext, parts: Sequence[_Part], services: _Services, tally: Tally) -> tuple[list[AbsorptionCase], int, list[Unit]]:
    """Ask every slice's absorption checks under the run's budget; return those asked, the number deferred and the units."""
    absorptions: list[AbsorptionCase] = []
    found = [c for p in parts for c in p.found]
    deferred = 0
    if found:
        found.sort(key=lambda c: (-c.similarity, order_key(c.narrower)))
        absorptions, deferred = ask_absorptions(ctx, services.get_judge(), found, tally)
    model = bool(absorptions) and not services.get_judge().rules
    texts = parts[0].texts  # empty after slices: their analyses went with them, few are needed again
    approved = [case for case in absorptions if is_approved(ctx, case, texts, tally, model)]
    units = [absorb_unit(case) for case in approved if not case.standing]
    units += standing_absorptions([case for case in approved if case.standing])
    return absorptions, deferred, units


def _nothing_planned(plan: PhasePlan, cluster_min_size: int, candidates: int, partitions: int, skipped: int) -> PhasePlan:
    plan.outcome = "no items"
    plan.message = f"{plural(candidates, 'candidate note')}, no partition with {cluster_min_size} or more and nothing to absorb"
    if skipped:
        plan.message = f"{plural(candidates, 'candidate note')}, {plural(skipped, 'partition')} unchanged since found settled, nothing else to do"
    plan.input = {"candidateNotes": candidates, "partitions": partitions, "clusters": 0, "partitionsSettled": skipped}
    plan.output = ConsolidateResult().as_output()
    return plan


def _wordings(
    leftover: dict[PartitionKey, list[NoteRecord]], key_of: Callable[[NoteRecord], Any], flush: Callable[[], None]
) -> dict[PartitionKey, list[list[NoteRecord]]]:
    """Return, per partition, the groups of notes no cluster took that are wordings of one fact.

    They differ only in punctuation, case or filler, so are one note, as copies are. `flush` sends
    the questions held (and a batch's leftovers) while the wordings are read.
    """
    wordings: dict[PartitionKey, list[list[NoteRecord]]] = {}
    for k, members in leftover.items():
        flush()
        found = copy_groups(members, key_of) if len(members) > 1 else []
        if found:
            wordings[k] = found
    return wordings


def _message(out: "ConsolidateResult", tally: Tally, asked_again: dict[str, int]) -> str:
    """Return the phase's one-line summary (`asked_again`: the output's "askAgainAt")."""
    return (
        f"{plural(out.clusters_found, 'cluster')}: {out.clusters_consolidated} to consolidate, "
        + (f"{out.clusters_into_standing} into a standing note, " if out.clusters_into_standing else "")
        + f"{out.clusters_declined} declined, {out.clusters_invalid} invalid, {out.clusters_failed} failed"
        + (f", {out.clusters_paused} paused" if out.clusters_paused else "")
        + "; "
        + (f"{copies_text(out.copies_absorbed)} to absorb; " if out.copies_absorbed else "")
        + f"{plural(out.notes_absorbed, 'note')} to absorb"
        + (f" ({out.absorptions_deferred} absorption checks left for the next run)" if out.absorptions_deferred else "")
        + (f"; {plural(tally.kept_apart, 'note')} kept apart from their cluster (another subject, a conflicting value)" if tally.kept_apart else "")
        + (f"; {plural(tally.merges_vetoed, 'merge')} not applied: the quotes do not show one subject" if tally.merges_vetoed else "")
        + (f"; {tally.unusable} unusable {'reply' if tally.unusable == 1 else 'replies'}" if tally.unusable else "")
        + (f"; {tally.paused} {'question' if tally.paused == 1 else 'questions'} paused after unusable replies" if tally.paused else "")
        + (f" (asked again: {ask_again_text(asked_again)})" if asked_again else "")
    )


def _fail_without_answers(
    plan: PhasePlan, out: "ConsolidateResult", tally: Tally, cases: Sequence[ClusterCase], absorptions: Sequence[AbsorptionCase]
) -> None:
    """Fail the phase when no question got a usable answer: an outage or an always-unusable model is not "done, N failed"."""
    first = next((c.why for c in cases if c.verdict in ("invalid", "failed")), "") or next(
        (c.answer.error for c in absorptions if c.answer is not None and c.answer.error and c.answer.paused is None), ""
    )
    error = no_usable_answer(tally, first, f"{plural(out.clusters_invalid, 'cluster')} invalid, {out.clusters_failed} failed")
    if error:
        plan.outcome, plan.error = "failed", error


def _absorption_targets(
    ctx: PhaseContext, overlay: Overlay, notes: list[NoteRecord], groups: dict[PartitionKey, list[NoteRecord]], lazy: bool
) -> tuple[dict[PartitionKey, list[NoteRecord]], dict[PartitionKey, list[PartitionKey]]]:
    """Return the broader partitions (every Active note without a user, whatever its tier) and, per
    candidate partition, those of them its notes may be absorbed into.

    With --shard a broader partition may belong to another shard; it is only read (and guarded).
    """
    pool = [n for n in notes if n.user_id is None]
    if ctx.scope.shard is not None and ctx.settings.absorb:
        unsharded = replace(ctx, scope=replace(ctx.scope, shard=None))
        known = {n.id for n in pool}
        pool += [n for n in load_notes(unsharded, Overlay(removed=overlay.removed), m.note.c.UserID.is_(None), vectors=not lazy) if n.id not in known]
    broader = by_partition(sorted(pool, key=order_key))
    eligible: dict[PartitionKey, list[PartitionKey]] = {}
    if ctx.settings.absorb:
        for key in groups:
            found = [b for b in broader_keys(key) if b in broader]
            if found:
                eligible[key] = found
    return broader, eligible


def _standing_keys(ctx: PhaseContext, groups: dict[PartitionKey, list[NoteRecord]]) -> list[PartitionKey]:
    """Return the partitions whose notes are asked about as absorptions into a standing note.

    A merged note stands for its fact: a later wording of it in its partition is asked about (does
    the merged note state every fact of it?), whatever the cluster minimum; so is a note new since
    the last maintenance run that is like another note (`standing_candidates`).
    """
    if not ctx.settings.absorb:
        return []
    since = ctx.last_maintenance_at
    return [k for k, members in groups.items() if len(members) > 1
            and any(n.consolidation_count or (since is not None and is_new(n, since)) for n in members)]


def _marks(
    ctx: PhaseContext,
    marks: Optional[SettledMarks],
    groups: dict[PartitionKey, list[NoteRecord]],
    broader: dict[PartitionKey, list[NoteRecord]],
    eligible: dict[PartitionKey, list[PartitionKey]],
    planned: Sequence[PartitionKey],
) -> tuple[dict[PartitionKey, str], set[PartitionKey]]:
    """Return the settled mark of each partition to plan (its notes and its broader partitions'), and
    the partitions whose mark an earlier run recorded as settled."""
    if marks is None:
        return {}, set()
    moment = ctx.now.timestamp()
    broad_digest = {
        b: notes_digest(broader[b], lambda n: expiry(n) <= moment)  # an expired broader note absorbs nothing
        for b in set(chain.from_iterable(eligible.values()))
    }
    mark_of: dict[PartitionKey, str] = {}
    for key in set(planned) | set(eligible):
        around = sorted([json.dumps(list(b), default=str), broad_digest[b]] for b in eligible.get(key, []))
        mark_of[key] = marks.key(notes_digest(groups[key]), around)
    settled = marks.settled(mark_of.values())
    return mark_of, {key for key, mark in mark_of.items() if mark in settled}


def _needed(
    active: dict[PartitionKey, list[NoteRecord]],
    groups: dict[PartitionKey, list[NoteRecord]],
    broader: dict[PartitionKey, list[NoteRecord]],
    cluster_keys: Sequence[PartitionKey],
    copy_keys: Iterable[PartitionKey],
    eligible: dict[PartitionKey, list[PartitionKey]],
    standing_keys: Sequence[PartitionKey],
) -> dict[PartitionKey, list[NoteRecord]]:
    """Return the notes whose vectors the plan compares, by partition.

    A cluster partition is read whole: a candidate contested by any Active note of it (Protected
    and manual ones too) is left to the contradiction phase (see `contested_notes`); so is a
    partition with copies. A broader partition gives every Active note (a superset of its candidates).
    """
    needed: dict[PartitionKey, list[NoteRecord]] = {k: active.get(k, groups[k]) for k in cluster_keys}
    needed.update({k: active[k] for k in copy_keys})
    needed.update({k: groups[k] for k in chain(eligible, standing_keys) if k not in needed})
    for key in set(chain.from_iterable(eligible.values())):
        needed[key] = broader[key]
    return needed


def _awaiting(cases: Sequence[ClusterCase]) -> set[str]:
    """Return the notes of clusters that got no usable answer: they wait for it, not for a standing note.

    A note its cluster's answer left as it is (declined, or left out of the merge) may still be
    a wording of a merged note's fact.
    """
    return {n.id for c in cases if c.verdict not in ("declined", "consolidated", "standing") for n in c.notes}


def _settled_now(
    mark_of: dict[PartitionKey, str],
    skipped: set[PartitionKey],
    cluster_keys: Sequence[PartitionKey],
    eligible: dict[PartitionKey, list[PartitionKey]],
    cases: Sequence[ClusterCase],
    found: Sequence[AbsorptionCase],
    asked: Sequence[AbsorptionCase],
    absorb_units: Sequence[Unit],
    copied: set[PartitionKey],
) -> list[PartitionKey]:
    """Return the partitions planned this run that need nothing, every question answered.

    It qualifies when a valid (cached) verdict declined every cluster of it and, for a user
    partition, of its broader partitions (their consolidation decides which broader notes it meets);
    every absorption check of its notes was answered (none failed or deferred) and absorbs nothing;
    and no copies of it are to be joined (`copied`).
    """
    verdicts: dict[PartitionKey, set[str]] = defaultdict(set)
    for case in cases:
        verdicts[case.key].add(case.verdict)
    answered = {id(c) for c in asked if c.answer is not None and c.answer.reply is not None}
    absorbed = {n_id for u in absorb_units for n_id in revoked_ids(u)}
    blocked: set[PartitionKey] = set(copied)
    for case in found:
        key = partition_key(case.narrower)
        if id(case) not in answered or case.narrower.id in absorbed:
            blocked.add(key)

    def quiet(key: PartitionKey) -> bool:
        return verdicts.get(key, {"declined"}) == {"declined"}

    planned = set(cluster_keys) | set(eligible)
    return sorted(
        (k for k in planned if k in mark_of and k not in skipped and k not in blocked and quiet(k) and all(quiet(b) for b in eligible.get(k, []))),
        key=json.dumps,
    )


@dataclass
class ConsolidateResult(StepResult):
    clusters_found: int = 0
    clusters_consolidated: int = 0
    clusters_into_standing: int = 0
    clusters_declined: int = 0
    clusters_invalid: int = 0
    clusters_failed: int = 0
    clusters_paused: int = 0
    #: every note a merge revokes: into a new note, into a standing note, or as an exact copy
    notes_revoked: int = 0
    notes_created: int = 0
    notes_absorbed_into_standing: int = 0
    copy_groups: int = 0
    copies_absorbed: int = 0
    clusters_split: int = 0
    notes_kept_apart: int = 0
    absorptions_checked: int = 0
    absorptions_deferred: int = 0
    notes_absorbed: int = 0
    absorptions_vetoed: int = 0
    merges_vetoed: int = 0
    llm_calls: int = 0
    questions_asked: int = 0
    failed_replies: int = 0
    unusable_replies: int = 0
    questions_paused: int = 0
    cache_hits: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    tokens: int = 0
    vectors_stored: int = 0
    vectors_cached: int = 0
    vectors_computed: int = 0


def _result(
    tally: Tally, vectors: VectorStats, cases: Sequence[ClusterCase], checked: int, deferred: int, absorbed: int, copy_units: Sequence[Unit]
) -> ConsolidateResult:
    verdicts = Counter(c.verdict for c in cases)
    copies = sum(len(revoked_ids(u)) for u in copy_units)
    return ConsolidateResult(
        clusters_found=len(cases), clusters_consolidated=verdicts["consolidated"], clusters_into_standing=verdicts["standing"],
        clusters_declined=verdicts["declined"], clusters_invalid=verdicts["invalid"], clusters_failed=verdicts["failed"],
        clusters_paused=verdicts["paused"],
        notes_revoked=sum(len(revoked_ids(c.unit)) for c in cases if c.unit is not None) + copies,
        notes_created=verdicts["consolidated"],
        notes_absorbed_into_standing=sum(len(revoked_ids(c.unit)) for c in cases if c.unit is not None and c.verdict == "standing"),
        copy_groups=len(copy_units), copies_absorbed=copies, clusters_split=tally.clusters_split, notes_kept_apart=tally.kept_apart,
        absorptions_checked=checked, absorptions_deferred=deferred, notes_absorbed=absorbed,
        absorptions_vetoed=tally.absorptions_vetoed, merges_vetoed=tally.merges_vetoed, llm_calls=tally.calls,
        questions_asked=tally.asked, failed_replies=tally.failed, unusable_replies=tally.unusable, questions_paused=tally.paused,
        cache_hits=tally.cached, prompt_tokens=tally.usage.prompt_tokens, completion_tokens=tally.usage.completion_tokens,
        tokens=tally.usage.total, vectors_stored=vectors.stored, vectors_cached=vectors.cached,
        vectors_computed=vectors.computed,
    )
