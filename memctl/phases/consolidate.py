"""Phase 1, consolidate related notes (DESIGN 3 and 4.1, seed US1, FR-010..016).

The phase only plans; the pipeline applies. Candidates are the Active, auto-generated notes
that are neither Protected nor Immutable. Inside each partition (the exact scope tuple, never
across scopes) they are clustered by cosine similarity, and each cluster is one question to the
judge. A valid "yes" becomes one atomic unit: insert the synthesised note with the partition's
scope (copied from a member row, so it can never be seen by anyone who could not see its
sources) and revoke the sources into it. A "no" is cached and the cluster left alone; an
invalid reply (bad IDs, unknown type, too long, relative dates left, a copy of an input note or
of the prompt's example, a merge that drops a source's sentence) is unusable: it is not cached,
the cluster is left as it is, the child step says why, and the question is paused
(memctl/phases/asking.py).

A merged fact stays one note (issue 29). A synthesis with the text of one of its sources
(`memctl.text.tokens.same_text_key`) writes no note: that source stands and the others are revoked
into it (unit "standing"), so a fact re-worded night after night keeps one ID, one vector and
one history instead of a chain of copies. Exact copies in one partition are joined the same
way before any cluster is formed, whatever the cluster minimum and without a model (unit
"copies"). The note that stands is credited with the accesses of those it absorbs ("credit";
`standing_unit` says what a Protected or Immutable one gets), and the units planned after it
see it as credited, their guards included. No reply field names the note that stands: the
reply's text is compared, so the decision never rests on an ID a model might confuse.

Nested scopes: the only move across partitions is absorption. A user-level note whose broader
counterpart (same agent, no user, every other scope dimension equal or NULL) already states
every fact of it is revoked into that broader note. Nothing is copied upward and the broader
note is never written: a `check` mutation makes the unit apply only while it is unchanged.
Candidates for absorption are found by one blocked matrix product per narrower partition
against the broader notes it may fall into, keeping only the best match of each note.

A partition that needed nothing (every cluster declined, every absorption check answered "no"),
unchanged since along with the broader partitions it meets, is skipped (`memctl/settled.py`).
Vectors are read only for the partitions actually planned.
"""

from __future__ import annotations

import hashlib
import json
import math
import uuid
from collections import defaultdict
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from functools import partial
from itertools import chain
from typing import Any, Callable, Optional, Sequence

import numpy as np

from memctl.blas import single_thread
from memctl.context import PhaseContext, Scope
from memctl.embed.stored import encode_vector
from memctl.llm.base import Judge, JudgeResult
from memctl.llm.budget import split_to_fit
from memctl.llm.copies import copied_note, outside_vet
from memctl.llm.factory import make_compute_embedder, make_judge
from memctl.authority import authority
from memctl.llm.offline_merge import order_notes
from memctl.llm.replies import NOTE_TYPES, AbsorptionReply, ConsolidationReply
from memctl.phases.asking import (
    Answer, AskStats, Question, ask_again_output, ask_again_text, ask_all, no_usable_answer, reply_check, triage,
)
from memctl.phases.base import Overlay
from memctl.phases.common import plural
from memctl.phases.notes import SNAPSHOT, Snapshot, by_partition, consolidatable, load_notes, note_guard, order_key, with_vectors
from memctl.phases.safety import merge_loses
from memctl.plan import ChildStep, Mutation, PhasePlan, Unit, jsonable
from memctl.records import TIERS, NoteRecord, PartitionKey, broader_keys
from memctl.settled import MOSTLY_SETTLED, SettledMarks, marks_for, notes_digest
from memctl.similarity import clusters, pairs, partition_key, stable_hash
from memctl.store import models as m
from memctl.store.changes import to_db_values
from memctl.temporal import find_relative, normalise
from memctl.text.decide import NoteText, absorption_veto, compatible_groups, conflict, synthesis_problem, wording_key
from memctl.text.tokens import same_text_key
from memctl.vectors import PartitionVectors, VectorIndex, VectorStats, close_ahead, decode_ahead

NAME = "consolidate"
STEP_NAME = "Consolidate Related Notes"
CHILD_STEP = "Process Consolidation Cluster"
#: stored vectors are decoded ahead (`decode_ahead`) only when at most this share of partitions
#: was left settled by the last run (a first run, --replan, a store changed nearly everywhere):
#: then nearly every vector is needed, by this phase or the next
AHEAD_BELOW = 0.1
TABLE = "AIAgentNote"

#: namespace of the IDs of consolidated notes (uuid5 of sources, content and run time)
NOTE_ID_NAMESPACE = uuid.UUID("5d0c3c52-1f43-4a8e-9a57-636f6e736f6c")
#: a judge's reason is untrusted text that lands in Comments: one line, bounded
REASON_CHARS = 500
#: rows per side of one block of the absorption matrix product
BLOCK = 1024

JudgeGetter = Callable[[], Judge]


def _utc(moment: datetime) -> datetime:
    return moment.replace(tzinfo=timezone.utc) if moment.tzinfo is None else moment.astimezone(timezone.utc)


def seen(note: NoteRecord) -> dict[str, Any]:
    """Return what the judge is shown of `note`: the identity of a question in the verdict cache."""
    return {
        "id": note.id,
        "type": note.type,
        "content": note.note,
        "createdAt": _utc(note.created_at).date().isoformat(),
        "accessCount": note.access_count,
    }


def one_line(text: str, limit: int = REASON_CHARS) -> str:
    """Return untrusted text as one bounded line (it goes into Comments and run steps)."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def short_key(key: PartitionKey) -> str:
    """Return a short, stable, non-identifying name for a partition (run steps show it)."""
    return f"{stable_hash(key):016x}"[:12]


def canonical_type(value: str) -> Optional[str]:
    """Return the allowed note type `value` names (case-insensitively), or None."""
    wanted = value.strip().lower()
    return next((t for t in NOTE_TYPES if t.lower() == wanted), None)


def consolidation_problem(
    question: Question, reply: ConsolidationReply, max_chars: int, records: Optional[dict[str, NoteRecord]] = None, model: bool = False
) -> Optional[str]:
    """Return why a consolidation reply must not be acted on, or None when it is valid.

    Besides its form (IDs of the cluster, a type, a length, no relative dates), the merged note is
    verified by the decision layer (`synthesis_problem`): no source's number, ID, e-mail or URL
    lost or invented, no two values of one slot, and, where two sources hold a certain conflict,
    the value the authority rule keeps (`records`, the cluster's notes by ID, give their dates and
    access counts; `model`: a model wrote it, so only certain conflicts count).
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
    relative = find_relative(content)
    if relative:
        return f"relative time words left in the note: {one_line(', '.join(relative), 120)}"
    chosen = [n for n in question.inputs["notes"] if n["id"] in ids]
    found = [records.get(n["id"]) for n in chosen] if records is not None else []
    if records is not None and all(found):
        notes = [n for n in found if n is not None]
        sources = [_note_text({}, n) for n in notes]

        def rule(i: int, j: int) -> Optional[int]:
            decided = authority(notes[i], notes[j])
            return None if decided is None else (i if decided.winner is notes[i] else j)

        return synthesis_problem(content, sources, model=model, authority=rule)
    return synthesis_problem(content, [NoteText(n["content"]) for n in chosen], model=model)


def strongest_tier(sources: Sequence[NoteRecord]) -> str:
    """Return the strongest ProtectionTier of `sources`: a merge never weakens a note's protection."""
    return max((n.protection_tier if n.protection_tier in TIERS else "Standard" for n in sources), key=TIERS.index)


def _tier_rank(note: NoteRecord) -> int:
    return TIERS.index(note.protection_tier if note.protection_tier in TIERS else "Standard")


def outlives(stay: NoteRecord, other: NoteRecord) -> bool:
    """Return whether `other` may be revoked into `stay`: `stay` lives at least as long and is protected at least as strongly.

    A merge never shortens a fact's life or weakens its protection: a new note inherits the
    latest expiry and the strongest tier of its sources; a standing note keeps its own.
    """
    return _expiry(stay) >= _expiry(other) and _tier_rank(stay) >= _tier_rank(other)


def standing_order(note: NoteRecord, newest_first: bool = False) -> tuple:
    """Return the order in which notes of one fact are preferred as the one that stays.

    A note memctl may not revoke first (it stays whatever happens), then a note merged before
    (ConsolidationCount > 0: every note memctl writes has one, so SourceAIAgentRunID adds
    nothing), then the most accessed, then the oldest (its ID is the one applications know
    longest), then by ID. With `newest_first`, the newest comes right after the notes memctl
    may not revoke: the date the authority rule reads is then the fact's latest statement.
    """
    created = _utc(note.created_at).timestamp()
    if newest_first:
        return (consolidatable(note), -created, note.consolidation_count == 0, -note.access_count, note.id)
    return (consolidatable(note), note.consolidation_count == 0, -note.access_count, created, note.id)


def standing_source(sources: Sequence[NoteRecord], content: str) -> Optional[NoteRecord]:
    """Return the source that already states a synthesis `content` (the same text), or None.

    Only a source every other source may be revoked into (`outlives`) qualifies; of several,
    the first in `standing_order`.
    """
    key = same_text_key(content)
    same = [n for n in sources if key and same_text_key(n.note) == key]
    fit = [n for n in same if all(outlives(n, other) for other in sources if other is not n)]
    return min(fit, key=standing_order) if fit else None


def copy_groups(notes: Sequence[NoteRecord], key_of: Callable[[NoteRecord], Any] = lambda n: same_text_key(n.note)) -> list[list[NoteRecord]]:
    """Return the groups of two or more notes of one partition with the same key, each with a note memctl may revoke.

    The key is the same text (`same_text_key`), or, in the partitions this run plans, the same
    words once punctuation, case and filler are set aside (`memctl.text.decide.wording_key`:
    "Ana prefers answers in Spanish." / "Ana always prefers answers in Spanish!").
    """
    by_key: dict[Any, list[NoteRecord]] = defaultdict(list)
    for note in notes:
        key = key_of(note)
        if key:
            by_key[key].append(note)
    return [group for group in by_key.values() if len(group) > 1 and any(consolidatable(n) for n in group)]


def standing_unit(
    kind: str, key: str, stay: NoteRecord, others: Sequence[NoteRecord], kept: str, revoked: str, detail: dict[str, Any]
) -> Unit:
    """Return the unit that revokes `others` into `stay`, which stays Active with its ID, dates and vector.

    `stay` gets the Comments line `kept` and, where memctl may write it, the access figures of
    the notes it absorbs (AccessCount added, LastAccessedAt the latest: the "credit" action),
    as a new note would have had them. A Protected note is only annotated; an Immutable one is
    never written, only guarded ("check"). Each revoked note gets the Comments line `revoked`.
    """
    if stay.protection_tier == "Immutable":
        keep = Mutation(TABLE, stay.id, "check", {}, guard=note_guard(stay))
    elif stay.protection_tier == "Protected":
        keep = Mutation(TABLE, stay.id, "annotate", {}, comment=kept, guard=note_guard(stay))
    else:
        accessed = [n.last_accessed_at for n in (stay, *others) if n.last_accessed_at is not None]
        values = {
            "AccessCount": stay.access_count + sum(n.access_count for n in others),
            "LastAccessedAt": jsonable(max(accessed)) if accessed else None,
        }
        keep = Mutation(TABLE, stay.id, "credit", values, comment=kept, guard=note_guard(stay))
    revokes = tuple(
        Mutation(TABLE, n.id, "revoke", {"Status": "Revoked", "ConsolidatedIntoNoteID": stay.id}, comment=revoked, guard=note_guard(n))
        for n in others
    )
    return Unit(kind=kind, key=key, reason=kept, mutations=(keep, *revokes), detail=detail)


def credited(units: Sequence[Unit]) -> dict[str, dict[str, Any]]:
    """Return, per note the units credit, the NoteRecord fields it has once they are applied."""
    out: dict[str, dict[str, Any]] = {}
    for unit in units:
        for mutation in unit.mutations:
            if mutation.action == "credit":
                values = to_db_values(m.note, mutation.values)
                out[mutation.record_id] = {
                    "access_count": values["AccessCount"], "last_accessed_at": values["LastAccessedAt"], "stored_access_count": None,
                }
    return out


def as_after(changes: dict[str, dict[str, Any]], note: NoteRecord) -> NoteRecord:
    """Return `note` as the planned units leave it (`credited`)."""
    return replace(note, **changes[note.id]) if note.id in changes else note


def fact_date(sources: Sequence[NoteRecord]) -> datetime:
    """Return the date a consolidated note's facts come from: its newest source's CreatedAt."""
    return max(_utc(n.created_at) for n in sources)


def inherited_importance(sources: Sequence[NoteRecord]) -> Optional[float]:
    """Return the ImportanceScore of a note consolidated from `sources`: the highest of theirs.

    MJ's Memory Manager creates a consolidated note without one and scores every Active note
    later (0-10; its contradiction rule protects pairs scoring 7 or more, its decay reads a
    missing score as 5). memctl does not score, so the merged note keeps its most important
    source's score rather than falling back to 5; none when no source has one, as in MJ.
    """
    scores = [n.importance_score for n in sources if n.importance_score is not None]
    return max(scores) if scores else None


def best_cover(
    narrow: np.ndarray, broad: np.ndarray, threshold: float, narrow_expiry: np.ndarray, broad_expiry: np.ndarray, block: int = BLOCK
) -> tuple[np.ndarray, np.ndarray]:
    """Return, per row of `narrow`, the index of its most similar row of `broad` and that cosine.

    Only pairs with cosine >= threshold whose broad row lives at least as long as the narrow
    one (expiry as timestamps, inf for never) count; rows without one get index -1. Both sides
    are unit rows. Blocks of rows against blocks of columns keep memory at block x block floats;
    ties go to the lower column index.
    """
    n = len(narrow)
    best = np.full(n, -1, dtype=np.int64)
    sims = np.full(n, -np.inf, dtype=np.float32)
    t = np.float32(threshold)
    for r0 in range(0, n, block):
        r1 = min(n, r0 + block)
        for c0 in range(0, len(broad), block):
            c1 = min(len(broad), c0 + block)
            s = narrow[r0:r1] @ broad[c0:c1].T
            s = np.where(broad_expiry[None, c0:c1] >= narrow_expiry[r0:r1, None], s, -np.inf).astype(np.float32)
            j = np.argmax(s, axis=1)
            v = s[np.arange(r1 - r0), j]
            better = (v >= t) & (v > sims[r0:r1])
            best[r0:r1][better] = j[better] + c0
            sims[r0:r1][better] = v[better]
    return best, sims


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


@dataclass
class AbsorptionCase:
    narrower: NoteRecord
    broader: NoteRecord
    similarity: float
    question: Question
    answer: Optional[Answer] = None
    #: the broader note is a merged note of the narrower one's own partition (a standing note)
    standing: bool = False


@dataclass
class Tally:
    calls: int = 0
    cache_hits: int = 0
    asked: int = 0
    failed: int = 0
    unusable: int = 0
    paused: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    #: notes of a cluster left out of its merge: another subject, a conflicting value, contested
    kept_apart: int = 0
    clusters_split: int = 0
    apart_reasons: list[str] = field(default_factory=list)
    #: absorption "yes" answers dropped on hard evidence (`absorption_veto`)
    absorptions_vetoed: int = 0
    veto_reasons: list[str] = field(default_factory=list)
    client: dict[str, int] = field(default_factory=dict)
    ask_again: dict[datetime, int] = field(default_factory=dict)

    def add(self, stats: AskStats) -> None:
        self.asked += stats.asked
        self.failed += stats.failed
        self.unusable += stats.unusable
        self.paused += stats.paused
        for when, count in stats.ask_again.items():
            self.ask_again[when] = self.ask_again.get(when, 0) + count
        self.calls += stats.calls
        self.cache_hits += stats.cached
        self.prompt_tokens += stats.usage.prompt_tokens
        self.completion_tokens += stats.usage.completion_tokens
        for key, value in stats.client.items():
            self.client[key] = self.client.get(key, 0) + value


class ConsolidatePhase:
    """Merge clusters of similar notes into one note each; absorb user notes a broader note covers."""

    name = NAME
    step_name = STEP_NAME

    def plan(self, ctx: PhaseContext, overlay: Overlay) -> PhasePlan:
        marks = marks_for(ctx, NAME, ["consolidate", "absorb"])
        try:
            with single_thread():  # small matrix products: OpenBLAS's threads only wait (memctl/blas.py)
                plan = self._plan(ctx, overlay, marks)
        except BaseException:
            ctx.services.pop(SNAPSHOT, None)
            close_ahead(ctx)  # the next phase reads the notes again
            raise
        snapshot = ctx.services.get(SNAPSHOT)
        if plan.units and (ctx.dry_run or snapshot is None):  # the contradictions phase reads the store again
            ctx.services.pop(SNAPSHOT, None)
        elif plan.units:  # it reads again only the notes these units name, once they are applied
            touched = frozenset(mu.record_id.lower() for unit in plan.units for mu in unit.mutations if mu.table == TABLE)
            ctx.services[SNAPSHOT] = replace(snapshot, touched=touched)
        if marks is not None:
            marks.save_share()
        return plan

    def _plan(self, ctx: PhaseContext, overlay: Overlay, marks: Optional[SettledMarks]) -> PhasePlan:
        settings = ctx.settings
        # When most partitions were settled after the last run, read vectors only for the ones
        # planned; otherwise (a first run, many changes, --replan) in the same scan as the notes.
        settled = marks.settled_share() if marks is not None else 0.0
        lazy = settled >= MOSTLY_SETTLED  # marks.mostly_settled(), without reading the share twice
        notes = load_notes(ctx, overlay, vectors=not lazy)
        ctx.services[SNAPSHOT] = Snapshot(notes, with_vectors=not lazy)
        if settled < AHEAD_BELOW:  # nearly every partition to plan: a helper decodes while this phase groups the notes
            decode_ahead(ctx, notes)
        candidates = [n for n in notes if consolidatable(n)]
        groups = by_partition(candidates)
        cluster_keys = [k for k, members in groups.items() if len(members) >= settings.cluster_min_size]

        # Absorption targets: every Active note without a user, whatever its tier. With --shard
        # the broader partition may belong to another shard; it is only read (and guarded).
        pool = [n for n in notes if n.user_id is None]
        if ctx.scope.shard is not None and settings.absorb:
            unsharded = replace(ctx, scope=Scope(agent_id=ctx.scope.agent_id))
            known = {n.id for n in pool}
            pool += [n for n in load_notes(unsharded, Overlay(removed=overlay.removed), m.note.c.UserID.is_(None), vectors=not lazy) if n.id not in known]
        broader = by_partition(sorted(pool, key=order_key))
        eligible: dict[PartitionKey, list[PartitionKey]] = {}
        if settings.absorb:
            for key in groups:
                found = [b for b in broader_keys(key) if b in broader]
                if found:
                    eligible[key] = found
        # A merged note stands for its fact: a later wording of it in its partition is asked about
        # as an absorption (does the merged note state every fact of it?), whatever the cluster minimum
        standing_keys = [k for k, members in groups.items() if settings.absorb and len(members) > 1 and any(n.consolidation_count for n in members)]

        # Partitions found to need nothing on an earlier run, unchanged since, are left alone.
        mark_of: dict[PartitionKey, str] = {}
        if marks is not None:
            moment = ctx.now.timestamp()
            broad_digest = {
                b: notes_digest(broader[b], lambda n: _expiry(n) <= moment)  # an expired broader note absorbs nothing
                for b in set(chain.from_iterable(eligible.values()))
            }
            for key in set(cluster_keys) | set(eligible) | set(standing_keys):
                around = sorted([json.dumps(list(b), default=str), broad_digest[b]] for b in eligible.get(key, []))
                mark_of[key] = marks.key(notes_digest(groups[key]), around)
            settled = marks.settled(mark_of.values())
            skipped = {key for key, mark in mark_of.items() if mark in settled}
            cluster_keys = [k for k in cluster_keys if k not in skipped]
            eligible = {k: v for k, v in eligible.items() if k not in skipped}
            standing_keys = [k for k in standing_keys if k not in skipped]
        else:
            skipped = set()

        # Active notes of one partition with the same text are one note, whatever the cluster
        # minimum: found by text alone (no model), in every partition of the scope; in the
        # partitions planned this run, wordings that differ only in punctuation, case and filler too
        active = by_partition(notes)
        copy_keys = {key: found for key, found in ((k, copy_groups(members)) for k, members in active.items() if len(members) > 1) if found}
        planned = set(cluster_keys) | set(eligible) | set(standing_keys)
        texts: dict[str, NoteText] = {}

        plan = PhasePlan(phase=NAME, step_name=STEP_NAME)
        if not cluster_keys and not eligible and not copy_keys and not standing_keys:
            plan.outcome = "no items"
            plan.message = f"{plural(len(candidates), 'candidate note')}, no partition with {settings.cluster_min_size} or more and nothing to absorb"
            if skipped:
                plan.message = f"{plural(len(candidates), 'candidate note')}, {plural(len(skipped), 'partition')} unchanged since found settled, nothing else to do"
            plan.input = {"candidateNotes": len(candidates), "partitions": len(groups), "clusters": 0, "partitionsSettled": len(skipped)}
            plan.output = _output(Tally(), VectorStats(), [], 0, 0, 0)
            return plan

        index: VectorIndex = ctx.service("vectors", lambda: VectorIndex(ctx, make_compute_embedder(settings)))
        stats_before = index.stats
        # A cluster partition is read whole: a candidate contested by any Active note of it (Protected
        # and manual ones too) is left to the contradiction phase (see `_contested`).
        needed: dict[PartitionKey, list[NoteRecord]] = {k: active.get(k, groups[k]) for k in cluster_keys}
        needed.update({k: active[k] for k in copy_keys})  # read whole, for `_contested`
        needed.update({k: groups[k] for k in chain(eligible, standing_keys) if k not in needed})
        for key in set(chain.from_iterable(eligible.values())):
            needed[key] = broader[key]  # every Active note there (a superset of its candidates)
        if lazy:
            needed = with_vectors(ctx, needed)
            loaded = {n.id: n for members in needed.values() for n in members}
            for mapping in (groups, broader):
                for key in needed.keys() & mapping.keys():
                    mapping[key] = [loaded.get(n.id, n) for n in mapping[key]]
        vectors = index.partitions(needed)

        reference_date = _utc(ctx.now).date().isoformat()
        built: list[Judge] = []

        def get_judge() -> Judge:
            # built on first use: a store with nothing to ask never needs a working LLM configuration
            if not built:
                built.append(ctx.service("judge", lambda: make_judge(settings)))
            return built[0]

        tally = Tally()
        copy_units, copied = self._copies(index, copy_keys, vectors, texts, EXACT_COPY)
        # Later units are planned on the notes as the earlier ones leave them: a standing note's
        # guard then shows the AccessCount it will have when they apply.
        changes = credited(copy_units)
        gone = {n_id for unit in copy_units for n_id in _revoked_ids(unit)}
        for key in cluster_keys:
            groups[key] = [as_after(changes, n) for n in groups[key] if n.id not in gone]
        cluster_keys = [k for k in cluster_keys if len(groups[k]) >= settings.cluster_min_size]
        cases = self._clusters(ctx, index, groups, cluster_keys, vectors, get_judge, reference_date, tally, texts, changes)
        if cases:
            self._ask_clusters(ctx, get_judge(), cases, tally)
        cluster_units = [case.unit for case in cases if case.unit is not None]
        revoked = gone | {n_id for unit in cluster_units for n_id in _revoked_ids(unit)}
        changes.update(credited(cluster_units))
        # Wordings of one fact that differ only in punctuation, case or filler (issue 24) and that no
        # cluster took (below the cluster minimum, or kept out of one) are one note too, as copies are
        touched = {mu.record_id for unit in copy_units + cluster_units for mu in unit.mutations} | {n.id for c in cases for n in c.notes}
        leftover = {k: [as_after(changes, n) for n in active[k] if n.id not in touched] for k in planned if k in active and k in vectors}
        wordings = {k: found for k, found in ((k, copy_groups(m, partial(_wording, texts))) for k, m in leftover.items() if len(m) > 1) if found}
        if wordings:
            more, more_copied = self._copies(index, wordings, vectors, texts, SAME_WORDS)
            copy_units, copied = copy_units + more, copied | more_copied
            revoked |= {n_id for unit in more for n_id in _revoked_ids(unit)}
            changes.update(credited(more))
        for mapping in (groups, broader):
            for key in mapping:
                mapping[key] = [as_after(changes, n) for n in mapping[key]]

        absorptions: list[AbsorptionCase] = []
        found_absorptions: list[AbsorptionCase] = []
        deferred = 0
        if eligible:
            found_absorptions = self._absorption_candidates(ctx, index, groups, broader, eligible, vectors, revoked, get_judge)
        if standing_keys:
            taken = revoked | {mu.record_id for unit in copy_units + cluster_units for mu in unit.mutations} | {c.narrower.id for c in found_absorptions}
            taken |= {n.id for c in cases for n in c.notes}
            found_absorptions += self._standing_candidates(index, groups, standing_keys, vectors, taken, get_judge)
        if found_absorptions:
            found_absorptions.sort(key=lambda c: (-c.similarity, order_key(c.narrower)))
            absorptions, deferred = self._ask_absorptions(ctx, get_judge(), found_absorptions, tally)
        approved = [case for case in absorptions if self._approved(ctx, case, texts, tally)]
        absorb_units = [self._absorb_unit(case) for case in approved if not case.standing] + _standing_absorptions(
            [case for case in approved if case.standing]
        )
        if marks is not None:
            newly = _settled_now(mark_of, skipped, [*cluster_keys, *standing_keys], eligible, cases, found_absorptions, absorptions, absorb_units, copied)
            marks.record([mark_of[k] for k in newly])

        plan.units = copy_units + cluster_units + absorb_units
        plan.children = [self._child(case) for case in cases]
        thresholds = {model: index.thresholds(model)[0] for model in sorted({v.model for v in vectors.values()})}
        plan.input = {
            "candidateNotes": len(candidates),
            "partitions": len(groups),
            "clusters": len(cases),
            "thresholds": thresholds,
            "clusterSize": [settings.cluster_min_size, settings.cluster_max_size],
            "embedder": index.compute.name,
            "judge": built[0].model if built else None,
            "absorb": settings.absorb,
            "partitionsSettled": len(skipped),
        }
        stats = index.stats
        used = VectorStats(stats.stored - stats_before.stored, stats.cached - stats_before.cached, stats.computed - stats_before.computed)
        absorbed = sum(len(_revoked_ids(u)) for u in absorb_units)
        plan.output = _output(tally, used, cases, len(absorptions), deferred, absorbed, copy_units)
        if not cases and not absorptions and not copy_units:
            plan.outcome = "no items"
        out = plan.output
        plan.message = (
            f"{plural(len(cases), 'cluster')}: {out['clustersConsolidated']} to consolidate, "
            + (f"{out['clustersIntoStanding']} into a standing note, " if out["clustersIntoStanding"] else "")
            + f"{out['clustersDeclined']} declined, {out['clustersInvalid']} invalid, {out['clustersFailed']} failed"
            + (f", {out['clustersPaused']} paused" if out["clustersPaused"] else "")
            + "; "
            + (f"{_copies_text(out['copiesAbsorbed'])} to absorb; " if out["copiesAbsorbed"] else "")
            + f"{plural(absorbed, 'note')} to absorb"
            + (f" ({deferred} absorption checks left for the next run)" if deferred else "")
            + (f"; {plural(tally.kept_apart, 'note')} kept apart from their cluster (another subject, a conflicting value)" if tally.kept_apart else "")
            + (f"; {tally.unusable} unusable {'reply' if tally.unusable == 1 else 'replies'}" if tally.unusable else "")
            + (f"; {tally.paused} {'question' if tally.paused == 1 else 'questions'} paused after unusable replies" if tally.paused else "")
            + (f" (asked again: {ask_again_text(out['askAgainAt'])})" if tally.ask_again else "")
        )
        if tally.apart_reasons:
            out["keptApartReasons"] = tally.apart_reasons[:10]
        if tally.veto_reasons:
            out["absorptionVetoReasons"] = tally.veto_reasons
        failed = no_usable_answer(tally.asked, tally.failed, tally.unusable)
        if failed:
            # an outage, or a model whose every reply is unusable, is a failure, not "done, N failed" (issue 13, 28)
            first = next((c.why for c in cases if c.verdict in ("invalid", "failed")), "") or next(
                (c.answer.error for c in absorptions if c.answer is not None and c.answer.error and c.answer.paused is None), ""
            )
            plan.outcome = "failed"
            counts = f"{plural(out['clustersInvalid'], 'cluster')} invalid, {out['clustersFailed']} failed"
            if failed == "unreachable":
                plan.error = f"every judge call failed ({tally.failed}: {counts}): the LLM could not be reached; first: {first}"
            else:
                plan.error = f"no usable answer: every one of the {tally.asked} questions asked got an unusable reply ({counts}); first: {first}"
        return plan

    # --- exact copies ----------------------------------------------------------------------

    def _copies(
        self,
        index: VectorIndex,
        found: dict[PartitionKey, list[list[NoteRecord]]],
        vectors: dict[PartitionKey, PartitionVectors],
        texts: dict[str, NoteText],
        what: str,
    ) -> tuple[list[Unit], set[PartitionKey]]:
        """Plan the absorption of exact copies (and return the partitions that have some): per group,
        the note `standing_order` puts first stays.

        A note memctl may not revoke (manual, Protected, Immutable) is never revoked: it stays,
        and the copies memctl may revoke are absorbed into it. A copy the staying note does not
        outlive (`outlives`) stays too. When an Active note of the partition contradicts the
        copies (by the offline rules), the contradiction phase will read their dates: the newest
        copy stays and absorbs only older ones, so the rule sees the fact's latest statement
        with the access counts of all, as it would see a note consolidated from them.
        """
        units: list[Unit] = []
        copied: set[PartitionKey] = set()
        for key, groups in found.items():
            pv = vectors[key]
            contested = _contested(pv, {n.id for group in groups for n in group}, min(index.thresholds(pv.model)), texts)
            for group in groups:
                dated = any(n.id in contested for n in group)
                takes = partial(_takes_copy, dated=dated)
                remaining = sorted(group, key=partial(standing_order, newest_first=dated))
                while len(remaining) > 1:
                    # the first in order that may take every other note memctl may revoke, else the first
                    revocable = [n for n in remaining if consolidatable(n)]
                    stay = next((s for s in remaining if all(takes(s, o) for o in revocable if o is not s)), remaining[0])
                    rest = [n for n in remaining if n is not stay]
                    absorbed = [n for n in rest if takes(stay, n)]
                    if absorbed:
                        copied.add(key)
                        shown = ", ".join(n.id for n in absorbed[:10]) + (f" and {len(absorbed) - 10} more" if len(absorbed) > 10 else "")
                        units.append(standing_unit(
                            "copies", f"copies:{stay.id}", stay, absorbed,
                            f"Absorbed {_copies_text(len(absorbed))} of this note ({shown})",
                            f"Consolidated into note {stay.id}: {what}",
                            {"partition": short_key(key), "copies": len(absorbed), "standing": stay.id},
                        ))
                    remaining = [n for n in rest if n not in absorbed]
        return units, copied

    # --- clusters --------------------------------------------------------------------------

    def _clusters(
        self,
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
    ) -> list[ClusterCase]:
        from memctl.llm.questions import question_data

        settings = ctx.settings
        cases = []
        for key in keys:
            pv = vectors[key]
            wanted = {n.id for n in groups[key]}
            rows = [i for i, n in enumerate(pv.notes) if n.id in wanted]
            members = [as_after(changes, pv.notes[i]) for i in rows]
            threshold = index.thresholds(pv.model)[0]
            found = clusters(pv.vectors[rows], [order_key(n) for n in members], threshold, settings.cluster_min_size, settings.cluster_max_size)
            if not found:
                continue
            clustered = {members[i].id for cluster in found for i in cluster}
            # With a model, the model decides: only hard evidence (numbers, IDs, e-mails, URLs,
            # subject names) keeps notes out of its question, and its synthesis is verified after.
            # Offline, the rules keep apart what they cannot merge, and leave a note that holds a
            # conflicting value with another note of the partition to the contradiction phase.
            model = not getattr(get_judge(), "rules", False)
            contested = {} if model else _contested(pv, clustered, min(index.thresholds(pv.model)), texts)
            for cluster in found:
                free = [members[i] for i in cluster if members[i].id not in contested]
                # greedy from the newest note: the current wording seeds the group it keeps
                split, reasons = compatible_groups(order_notes(free), partial(_note_text, texts), model=model)
                kept = [group for group in split if len(group) >= settings.cluster_min_size]
                apart = len(cluster) - sum(len(group) for group in kept)
                tally.kept_apart += apart
                tally.clusters_split += apart > 0
                if apart:
                    held = [contested[members[i].id] for i in cluster if members[i].id in contested]
                    why = reasons[0] if reasons else f"{plural(len(held), 'note')} left to the contradiction phase: {held[0]}"
                    tally.apart_reasons.append(one_line(why))
                for group in kept:
                    for cluster_notes in _fitting(get_judge, sorted(group, key=order_key), reference_date, settings):
                        # The reference date is left out of the cache key on purpose: an unchanged cluster
                        # is never asked twice (it only moves the prompt's 30-day age rule by a day).
                        inputs = {"notes": [seen(n) for n in cluster_notes]}
                        question = Question(
                            "consolidate", inputs, partial(_ask_consolidation, get_judge, cluster_notes, reference_date),
                            item=question_data("consolidate", cluster_notes), shared=reference_date, group=repr(key),
                            vet=outside_vet([(n.id, n.note) for n in cluster_notes], "cluster"),
                        )
                        cases.append(ClusterCase(key, cluster_notes, pv.model, question))
        return cases

    def _ask_clusters(self, ctx: PhaseContext, judge: Judge, cases: list[ClusterCase], tally: Tally) -> None:
        case_of = {id(c.question): c for c in cases}
        model = not getattr(judge, "rules", False)
        answers, stats = ask_all(
            ctx, judge, [c.question for c in cases], ConsolidationReply,
            lambda q, r: self._problem(ctx, case_of[id(q)], r, model),  # type: ignore[arg-type]
        )  # fmt: skip
        tally.add(stats)
        for case, answer in zip(cases, answers, strict=True):
            case.answer = answer
            self._judge_case(ctx, case)
        self._attach_vectors(ctx, [c for c in cases if c.verdict == "consolidated"])

    @staticmethod
    def _problem(ctx: PhaseContext, case: ClusterCase, reply: ConsolidationReply, model: bool) -> Optional[str]:
        """Return why a consolidation reply cannot be used (checked as it arrives, and again when read from the cache)."""
        records = {n.id: n for n in case.notes}
        problem = consolidation_problem(case.question, reply, ctx.settings.max_note_chars, records, model)
        if problem or not reply.shouldConsolidate or not ctx.settings.consolidate_keep_every_sentence:
            return problem
        assert reply.consolidatedNote is not None
        chosen = {i.strip().lower() for i in reply.sourceNoteIds}
        lost = merge_loses([n for n in case.notes if n.id in chosen], reply.consolidatedNote.content)
        if lost:
            return f"the merged note drops {plural(len(lost), 'sentence')} of its sources, first: {one_line(lost[0], 160)!r}"
        return None

    def _judge_case(self, ctx: PhaseContext, case: ClusterCase) -> None:
        answer = case.answer
        assert answer is not None
        reply = answer.reply
        if reply is None:
            case.verdict = "paused" if answer.paused is not None else "invalid" if answer.unusable else "failed"
            case.why = answer.error or "no reply"
            return
        # every reply, fresh or cached, passed `_problem` in ask_all
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
        case.verdict, case.why = "consolidated", one_line(reply.reason) or "consolidated"
        chosen = {i.strip().lower() for i in reply.sourceNoteIds}
        sources = [n for n in case.notes if n.id in chosen]  # oldest first
        stay = standing_source(sources, reply.consolidatedNote.content)
        if stay is None:
            case.unit = self._cluster_unit(ctx, case, reply, sources)
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

    def _cluster_unit(self, ctx: PhaseContext, case: ClusterCase, reply: ConsolidationReply, sources: list[NoteRecord]) -> Unit:
        assert reply.consolidatedNote is not None
        by_id = {n.id: n for n in case.notes}
        ids = [n.id for n in sources]
        content = reply.consolidatedNote.content.strip()
        now = ctx.now
        new_id = str(uuid.uuid5(NOTE_ID_NAMESPACE, json.dumps([sorted(ids), content, now.isoformat()], ensure_ascii=False)))
        scope = by_id[ids[0]]  # the stored spelling of the partition's scope
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
            # the fact date: the authority rule reads __mj_CreatedAt, so the note is as old as its
            # newest source, never as young as the merge (DESIGN 4: consolidation cannot change a verdict)
            "__mj_CreatedAt": jsonable(fact_date(sources)),
            "__mj_UpdatedAt": jsonable(now),
        }
        insert = Mutation(TABLE, new_id, "insert", values, comment=f"Consolidated from {len(sources)} notes: {reason}")
        revokes = tuple(
            Mutation(
                TABLE, n.id, "revoke", {"Status": "Revoked", "ConsolidatedIntoNoteID": new_id},
                comment=f"Consolidated into note {new_id}: {reason}", guard=note_guard(n),
            )
            for n in sources
        )
        key = "cluster:" + hashlib.sha256(",".join(sorted(ids)).encode()).hexdigest()[:16]
        return Unit(
            kind="cluster", key=key, reason=f"Consolidated from {len(sources)} notes: {reason}", mutations=(insert, *revokes),
            detail={"partition": short_key(case.key), "clusterSize": len(case.notes), "sources": len(sources)},
        )

    def _attach_vectors(self, ctx: PhaseContext, cases: list[ClusterCase]) -> None:
        """Give new notes an EmbeddingVector when the store keeps vectors of the compute embedder's model.

        In a partition of stored vectors of another model, the new note gets a derived vector of
        that model instead (in memctl's cache only), so the partition stays on one model.
        """
        settings = ctx.settings
        if not cases:
            return
        index: VectorIndex = ctx.services["vectors"]
        for case in cases:
            if settings.embed_provider == "stored" and case.model == index.trusted and case.unit is not None:
                insert = case.unit.mutations[0]
                sources = {mu.record_id for mu in case.unit.mutations[1:]}
                index.derive(insert.record_id, insert.values["Note"], [n for n in case.notes if n.id in sources])
        if not settings.embed_model_id or settings.embed_provider == "stored":
            return
        compute_models = {index.compute.name, settings.embed_model_id}
        chosen = [c for c in cases if c.model in compute_models]
        if not chosen:
            return
        embedded = index.compute.embed([c.unit.mutations[0].values["Note"] for c in chosen])  # type: ignore[union-attr]
        for case, vector in zip(chosen, embedded, strict=True):
            assert case.unit is not None
            insert = case.unit.mutations[0]
            values = {**insert.values, "EmbeddingVector": encode_vector(vector), "EmbeddingModelID": settings.embed_model_id}
            case.unit = replace(case.unit, mutations=(replace(insert, values=values), *case.unit.mutations[1:]))

    @staticmethod
    def _child(case: ClusterCase) -> ChildStep:
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

    # --- absorption ------------------------------------------------------------------------

    def _absorption_candidates(
        self,
        ctx: PhaseContext,
        index: VectorIndex,
        groups: dict[PartitionKey, list[NoteRecord]],
        broader: dict[PartitionKey, list[NoteRecord]],
        eligible: dict[PartitionKey, list[PartitionKey]],
        vectors: dict[PartitionKey, PartitionVectors],
        revoked: set[str],
        get_judge: JudgeGetter,
    ) -> list[AbsorptionCase]:
        now = ctx.now.timestamp()
        rows = {key: {n.id: i for i, n in enumerate(pv.notes)} for key, pv in vectors.items()}
        # User partitions with the same broader partitions (typically every user of a company)
        # share one matrix of broader vectors.
        by_targets: dict[tuple[PartitionKey, ...], list[PartitionKey]] = defaultdict(list)
        for key, targets in eligible.items():
            by_targets[tuple(targets)].append(key)
        # Each broader partition's live notes (not revoked, not expired), their rows and expiries,
        # prepared once: an agent-wide partition is a target of every user partition of the agent.
        # A group's wide side is its targets' notes in order_key order (by a rank shared by all).
        live = {b: [n for n in broader[b] if n.id not in revoked and _expiry(n) > now] for b in set(chain.from_iterable(by_targets))}
        rank = {n.id: i for i, n in enumerate(sorted(chain.from_iterable(live.values()), key=order_key))}
        prepared: dict[PartitionKey, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}

        def side(b: PartitionKey) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
            """Return (ranks, vector rows, expiries) of broader partition b's live notes."""
            if b not in prepared:
                notes = live[b]
                prepared[b] = (
                    np.array([rank[n.id] for n in notes], dtype=np.int64),
                    vectors[b].vectors[np.array([rows[b][n.id] for n in notes], dtype=np.int64)],
                    np.array([_expiry(n) for n in notes], dtype=np.float64),
                )
            return prepared[b]

        found: list[AbsorptionCase] = []
        for targets, keys in by_targets.items():
            narrow_by_key = {key: [n for n in groups[key] if n.id not in revoked] for key in keys}
            if not any(live[t] for t in targets) or not any(narrow_by_key.values()):
                continue
            models = {vectors[k].model for k in chain(keys, targets)}
            vector_of: Callable[[str], np.ndarray]
            if len(models) == 1:
                model = models.pop()
                # the same rows np.vstack of each note's row would give, in the same order
                ranks, matrices, expiries = zip(*(side(t) for t in targets))
                order = np.argsort(np.concatenate(ranks), kind="stable")
                notes_in = list(chain.from_iterable(live[t] for t in targets))
                wide = [notes_in[i] for i in order.tolist()]
                b, b_expiry = np.concatenate(matrices)[order], np.concatenate(expiries)[order]
                vector_of = partial(_partition_row, vectors, rows, {n.id: k for k in keys for n in vectors[k].notes})
            else:  # the partitions disagree on the model: compare both sides in the compute embedder's
                model = index.compute.name
                wide = sorted(chain.from_iterable(live[t] for t in targets), key=order_key)
                vector_of = index.embed([*wide, *chain.from_iterable(narrow_by_key.values())]).__getitem__
                b, b_expiry = np.vstack([vector_of(n.id) for n in wide]), np.array([_expiry(n) for n in wide])
            threshold = index.thresholds(model)[0]
            for narrow in narrow_by_key.values():
                if not narrow:
                    continue
                a = np.vstack([vector_of(n.id) for n in narrow])
                best, sims = best_cover(a, b, threshold, np.array([_expiry(n) for n in narrow]), b_expiry)
                for note, j, sim in zip(narrow, best.tolist(), sims.tolist(), strict=True):
                    if j >= 0:
                        found.append(_absorption_case(get_judge, wide[j], note, float(sim)))
        return found

    def _standing_candidates(
        self,
        index: VectorIndex,
        groups: dict[PartitionKey, list[NoteRecord]],
        keys: Sequence[PartitionKey],
        vectors: dict[PartitionKey, PartitionVectors],
        taken: set[str],
        get_judge: JudgeGetter,
    ) -> list[AbsorptionCase]:
        """Return the absorption checks of notes into a merged note of their own partition.

        A merged note (ConsolidationCount > 0) that no unit of this run touches stands for its
        fact; each other note of the partition that no unit touches and that is as similar to it
        as a cluster's members are is asked about: does the merged note state every fact of it?
        A "yes" revokes the note into the merged one, so a fact merged once stays one note when
        new wordings of it arrive one or two at a time (below the cluster minimum).
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
            if not stand or not narrow:
                continue
            threshold = index.thresholds(pv.model)[0]
            b = pv.vectors[np.array([rows[n.id] for n in stand], dtype=np.int64)]
            a = pv.vectors[np.array([rows[n.id] for n in narrow], dtype=np.int64)]
            best, sims = best_cover(a, b, threshold, np.array([_expiry(n) for n in narrow]), np.array([_expiry(n) for n in stand]))
            for note, j, sim in zip(narrow, best.tolist(), sims.tolist(), strict=True):
                if j >= 0:
                    found.append(_absorption_case(get_judge, stand[j], note, float(sim), standing=True))
        return found

    def _ask_absorptions(self, ctx: PhaseContext, judge: Judge, found: list[AbsorptionCase], tally: Tally) -> tuple[list[AbsorptionCase], int]:
        """Ask the absorption questions: every cached or paused one, and at most the judge's pair budget of new ones."""
        from memctl.phases.contradictions import pair_budget

        questions = [c.question for c in found]
        sorted_out = triage(ctx, judge, questions, AbsorptionReply, reply_check(judge, questions, lambda q, r: None))
        chosen = [found[i] for i in sorted([*sorted_out.cached, *sorted_out.paused, *sorted_out.fresh[: pair_budget(ctx, judge)]])]
        answers, stats = ask_all(ctx, judge, [c.question for c in chosen], AbsorptionReply)
        tally.add(stats)
        for case, answer in zip(chosen, answers, strict=True):
            case.answer = answer
        return chosen, len(found) - len(chosen)

    def _approved(self, ctx: PhaseContext, case: AbsorptionCase, texts: dict[str, NoteText], tally: Tally) -> bool:
        """Say whether the judge answered "covered" with enough confidence and hard evidence does not gainsay it."""
        reply = case.answer.reply if case.answer else None
        if not isinstance(reply, AbsorptionReply) or not reply.isCovered or reply.confidence < ctx.settings.confidence_floor:
            return False
        # the judge's "yes" is checked against hard evidence: a number, ID, e-mail, URL or date of the
        # narrower note the broader one lacks, or another named subject, is a fact the "yes" would lose
        veto = absorption_veto(_note_text(texts, case.broader), _note_text(texts, case.narrower))
        if veto is not None:
            tally.absorptions_vetoed += 1
            if len(tally.veto_reasons) < 10:
                tally.veto_reasons.append(f"{case.narrower.id} into {case.broader.id}: {veto}")
            return False
        return True

    def _absorb_unit(self, case: AbsorptionCase) -> Unit:
        """Return the unit that revokes a narrower note into the broader one, which is only guarded ("check")."""
        narrower, broader = case.narrower, case.broader
        reason = _absorb_reason(case, "broader note states every fact")
        return Unit(
            kind="absorb",
            key=f"absorb:{narrower.id}",
            reason=f"Absorbed into broader note {broader.id}: {reason}",
            mutations=(
                Mutation(
                    TABLE, narrower.id, "revoke", {"Status": "Revoked", "ConsolidatedIntoNoteID": broader.id},
                    comment=f"Absorbed into broader note {broader.id}: {reason}", guard=note_guard(narrower),
                ),
                Mutation(TABLE, broader.id, "check", {}, guard=note_guard(broader)),
            ),
            detail={"broader": broader.id, "similarity": round(case.similarity, 4)},
        )


def _fitting(get_judge: JudgeGetter, notes: list[NoteRecord], reference_date: str, settings: Any) -> list[list[NoteRecord]]:
    """Return the cluster, or its parts when the whole would not fit the LLM's context window.

    A cluster no part of which fits stays whole: the judge then answers it with the reason,
    without a request, and the child step shows it.
    """
    if settings.llm_context_tokens is None:
        return [notes]
    fits = getattr(get_judge(), "consolidation_fits", None)
    if fits is None:
        return [notes]
    return split_to_fit(notes, lambda part: fits(part, reference_date), settings.cluster_min_size) or [notes]


def _ask_consolidation(get_judge: JudgeGetter, notes: list[NoteRecord], reference_date: str) -> JudgeResult:
    return get_judge().consolidate(notes, reference_date)


def _ask_absorption(get_judge: JudgeGetter, broader: NoteRecord, narrower: NoteRecord) -> JudgeResult:
    return get_judge().absorption(broader, narrower)


def _absorb_reason(case: AbsorptionCase, default: str) -> str:
    reply = case.answer.reply if case.answer else None
    return one_line(getattr(reply, "reason", "")) or default


def _standing_absorptions(cases: Sequence[AbsorptionCase]) -> list[Unit]:
    """Return one unit per merged note that absorbs later wordings of its fact: it stays, credited
    with their accesses as a merge would have credited it (`standing_unit`), and they are revoked into it."""
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
    """Return the check whether `broader` states every fact of `narrower`, as a question to the judge."""
    from memctl.llm.questions import question_data

    inputs = {"broader": seen(broader), "narrower": seen(narrower)}
    question = Question(
        "absorb", inputs, partial(_ask_absorption, get_judge, broader, narrower), item=question_data("absorb", (broader, narrower)),
        vet=outside_vet([(broader.id, broader.note), (narrower.id, narrower.note)], "pair"),
    )
    return AbsorptionCase(narrower, broader, similarity, question, standing=standing)


#: how a copy's Comments line says what it is
EXACT_COPY = "an exact copy of it (the same text)"
SAME_WORDS = "the same fact in its words (punctuation, case and filler aside)"


def _wording(texts: dict[str, NoteText], note: NoteRecord) -> Any:
    return wording_key(_note_text(texts, note))


def _copies_text(count: int) -> str:
    return f"{count} exact {'copy' if count == 1 else 'copies'}"


def _takes_copy(stay: NoteRecord, other: NoteRecord, dated: bool) -> bool:
    """Return whether the copy `other` may be revoked into `stay` (`dated`: no newer copy into an older one)."""
    return consolidatable(other) and outlives(stay, other) and (not dated or other.created_at <= stay.created_at)


def _partition_row(vectors: dict[PartitionKey, PartitionVectors], rows: dict[PartitionKey, dict[str, int]], home: dict[str, PartitionKey], note_id: str) -> np.ndarray:
    key = home[note_id]
    return vectors[key].vectors[rows[key][note_id]]


def _expiry(note: NoteRecord) -> float:
    return math.inf if note.expires_at is None else _utc(note.expires_at).timestamp()


def _note_text(texts: dict[str, NoteText], note: NoteRecord) -> NoteText:
    """Return the analysed text of `note` (relative dates made absolute against its created date), memoised."""
    if note.id not in texts:
        texts[note.id] = NoteText(note.note, partial(normalise, reference=note.created_at))
    return texts[note.id]


def _contested(pv: PartitionVectors, clustered: set[str], threshold: float, texts: dict[str, NoteText]) -> dict[str, str]:
    """Return the clustered notes that hold a conflicting value with an Active note of their partition (offline), with why.

    Only conflicts the authority rule may settle count (an unsure one goes to review either way).
    Such a note is not consolidated this run: the contradiction phase settles the pair with the
    notes' own dates, access counts and protection, which a merged note would change (its
    AccessCount is the sum of its sources). Only pairs at cosine >= `threshold` (the lower of the
    two phase thresholds) are read, in blocks.
    """
    contested: dict[str, str] = {}
    notes = pv.notes
    for i, j, _ in pairs(pv.vectors, threshold):
        a, b = notes[i], notes[j]
        if (a.id in clustered or b.id in clustered) and not {a.id, b.id} <= contested.keys():
            found = conflict(_note_text(texts, a), _note_text(texts, b))
            if found is not None and found.certain:  # an unsure one goes to review whether merged or not
                for note in (a, b):
                    contested.setdefault(note.id, found.reason)
    return {note_id: why for note_id, why in contested.items() if note_id in clustered}


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

    A partition qualifies when every cluster of it was declined by a valid (cached) verdict,
    and, for a user partition, every cluster of its broader partitions too (their consolidation
    decides which broader notes it is compared with), and every absorption check of its notes
    was answered (none failed, none left for a later run) and absorbs nothing, and no exact
    copies of it are to be joined (`copied`).
    """
    verdicts: dict[PartitionKey, set[str]] = defaultdict(set)
    for case in cases:
        verdicts[case.key].add(case.verdict)
    answered = {id(c) for c in asked if c.answer is not None and c.answer.reply is not None}
    absorbed = {n_id for u in absorb_units for n_id in _revoked_ids(u)}
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


def _revoked_ids(unit: Unit) -> list[str]:
    return [mu.record_id for mu in unit.mutations if mu.action == "revoke"]


def _output(
    tally: Tally,
    vectors: VectorStats,
    cases: Sequence[ClusterCase],
    checked: int,
    deferred: int,
    absorbed: int,
    copy_units: Sequence[Unit] = (),
) -> dict[str, Any]:
    verdicts = ("consolidated", "standing", "declined", "invalid", "failed", "paused")
    counts = {verdict: sum(1 for c in cases if c.verdict == verdict) for verdict in verdicts}
    into_standing = sum(len(_revoked_ids(c.unit)) for c in cases if c.unit is not None and c.verdict == "standing")
    copies = sum(len(_revoked_ids(u)) for u in copy_units)
    out = {
        "clustersFound": len(cases),
        "clustersConsolidated": counts["consolidated"],
        "clustersIntoStanding": counts["standing"],
        "clustersDeclined": counts["declined"],
        "clustersInvalid": counts["invalid"],
        "clustersFailed": counts["failed"],
        "clustersPaused": counts["paused"],
        # every note a merge revokes: into a new note, into a standing note, or as an exact copy
        "notesRevoked": sum(len(_revoked_ids(c.unit)) for c in cases if c.unit is not None) + copies,
        "notesCreated": counts["consolidated"],
        "notesAbsorbedIntoStanding": into_standing,
        "copyGroups": len(copy_units),
        "copiesAbsorbed": copies,
        "clustersSplit": tally.clusters_split,
        "notesKeptApart": tally.kept_apart,
        "absorptionsChecked": checked,
        "absorptionsDeferred": deferred,
        "notesAbsorbed": absorbed,
        "absorptionsVetoed": tally.absorptions_vetoed,
        "llmCalls": tally.calls,
        "questionsAsked": tally.asked,
        "failedReplies": tally.failed,
        "unusableReplies": tally.unusable,
        "questionsPaused": tally.paused,
        "cacheHits": tally.cache_hits,
        "promptTokens": tally.prompt_tokens,
        "completionTokens": tally.completion_tokens,
        "tokens": tally.prompt_tokens + tally.completion_tokens,
        "vectorsStored": vectors.stored,
        "vectorsCached": vectors.cached,
        "vectorsComputed": vectors.computed,
        **tally.client,
    }
    if tally.ask_again:
        out["askAgainAt"] = ask_again_output(tally.ask_again)
    return out
