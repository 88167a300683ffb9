"""What every part of the consolidate phase shares: what the judge is shown of a note, which
note may be revoked into which, which note stands for a fact and what it is credited with, and
the offline reading of a note's text."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, Callable, Optional, Sequence

from memctl.llm.base import Judge
from memctl.llm.replies import NOTE_TYPES
from memctl.phases.asking import AskStats, add_client_counters
from memctl.phases.notes import consolidatable, note_guard, revoke_into
from memctl.protection import refusal
from memctl.plan import Mutation, Unit, jsonable
from memctl.records import TIERS, NoteRecord, PartitionKey
from memctl.similarity import pairs, stable_hash
from memctl.store import models as m
from memctl.store.changes import to_db_values
from memctl.temporal import utc
from memctl.text.decide import NoteText, conflict, read_note
from memctl.text.tokens import same_text_key
from memctl.vectors import PartitionVectors

TABLE = "AIAgentNote"
#: a judge's reason is untrusted text that lands in Comments: one line, bounded
REASON_CHARS = 500

JudgeGetter = Callable[[], Judge]


def seen(note: NoteRecord) -> dict[str, Any]:
    """Return what the judge is shown of `note`: the identity of a question in the verdict cache."""
    return {
        "id": note.id,
        "type": note.type,
        "content": note.note,
        "createdAt": utc(note.created_at).date().isoformat(),
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


def _tier_rank(note: NoteRecord) -> int:
    return TIERS.index(note.protection_tier if note.protection_tier in TIERS else "Standard")


def strongest_tier(sources: Sequence[NoteRecord]) -> str:
    """Return the strongest ProtectionTier of `sources`: a merge never weakens a note's protection."""
    return TIERS[max(_tier_rank(n) for n in sources)]


def outlives(stay: NoteRecord, other: NoteRecord) -> bool:
    """Say whether `other` may be revoked into `stay`: a merge never shortens a fact's life or weakens its protection."""
    return expiry(stay) >= expiry(other) and _tier_rank(stay) >= _tier_rank(other)


def standing_order(note: NoteRecord, newest_first: bool = False) -> tuple:
    """Return the order in which notes of one fact are preferred as the one that stays.

    A note memctl may not revoke first (it stays anyway), then one merged before (ConsolidationCount > 0,
    as every note memctl writes), the most accessed, the oldest (the ID applications know longest), the
    ID. `newest_first` puts the newest right after the unrevocable ones, so the authority rule reads the latest date.
    """
    created = utc(note.created_at).timestamp()
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


def standing_unit(
    kind: str, key: str, stay: NoteRecord, others: Sequence[NoteRecord], kept: str, revoked: str, detail: dict[str, Any]
) -> Unit:
    """Return the unit that revokes `others` into `stay`, which stays Active with its ID, dates and vector.

    `stay` gets the Comments line `kept` and, where it may be credited, the absorbed notes' access
    figures (AccessCount added, the latest LastAccessedAt) and a ConsolidationCount above theirs, so
    a later wording of its fact is asked about as an absorption into it. Revoked notes get `revoked`.
    """
    if refusal("annotate", stay.protection_tier, stay.is_auto_generated):  # Immutable: only guarded
        keep = Mutation(TABLE, stay.id, "check", {}, guard=note_guard(stay))
    elif refusal("credit", stay.protection_tier, stay.is_auto_generated):  # Protected: only annotated
        keep = Mutation(TABLE, stay.id, "annotate", {}, comment=kept, guard=note_guard(stay))
    else:
        accessed = [n.last_accessed_at for n in (stay, *others) if n.last_accessed_at is not None]
        values = {
            "AccessCount": stay.access_count + sum(n.access_count for n in others),
            "LastAccessedAt": jsonable(max(accessed)) if accessed else None,
            "ConsolidationCount": max(stay.consolidation_count, max(n.consolidation_count for n in others) + 1),
        }
        keep = Mutation(TABLE, stay.id, "credit", values, comment=kept, guard=note_guard(stay))
    revokes = tuple(revoke_into(n, stay.id, revoked) for n in others)
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
                    "consolidation_count": values["ConsolidationCount"],
                }
    return out


def as_after(changes: dict[str, dict[str, Any]], note: NoteRecord) -> NoteRecord:
    """Return `note` as the planned units leave it (`credited`)."""
    return replace(note, **changes[note.id]) if note.id in changes else note


def fact_date(sources: Sequence[NoteRecord]) -> datetime:
    """Return the date a consolidated note's facts come from: its newest source's CreatedAt."""
    return max(utc(n.created_at) for n in sources)


def inherited_importance(sources: Sequence[NoteRecord]) -> Optional[float]:
    """Return the ImportanceScore of a note consolidated from `sources`: the highest of theirs.

    MJ's Memory Manager scores notes later (0-10; its contradiction rule protects 7 or more, a
    missing score reads as 5). memctl does not score, so the merged note keeps its most important
    source's score; none when no source has one, as in MJ.
    """
    scores = [n.importance_score for n in sources if n.importance_score is not None]
    return max(scores) if scores else None


def expiry(note: NoteRecord) -> float:
    return math.inf if note.expires_at is None else utc(note.expires_at).timestamp()


def analysed(texts: dict[str, NoteText], note: NoteRecord) -> NoteText:
    """Return the analysed text of `note` (relative dates made absolute), memoised in `texts`."""
    if note.id not in texts:
        texts[note.id] = read_note(note.note, note.created_at)
    return texts[note.id]


def contested_notes(pv: PartitionVectors, clustered: set[str], threshold: float, texts: dict[str, NoteText]) -> dict[str, str]:
    """Return, with why, the clustered notes that conflict (offline) with an Active note of their partition.

    Only certain conflicts of pairs at cosine >= `threshold` count. Such a note is not merged this run:
    the contradiction phase settles it on the notes' own dates, access counts and protection, which a merge would change.
    """
    contested: dict[str, str] = {}
    notes = pv.notes
    for i, j, _ in pairs(pv.vectors, threshold):
        a, b = notes[i], notes[j]
        if (a.id in clustered or b.id in clustered) and not {a.id, b.id} <= contested.keys():
            found = conflict(analysed(texts, a), analysed(texts, b))
            if found is not None and found.certain:  # an unsure one goes to review whether merged or not
                for note in (a, b):
                    contested.setdefault(note.id, found.reason)
    return {note_id: why for note_id, why in contested.items() if note_id in clustered}


def revoked_ids(unit: Unit) -> list[str]:
    return [mu.record_id for mu in unit.mutations if mu.action == "revoke"]


@dataclass
class Tally(AskStats):
    #: notes of a cluster left out of its merge: another subject, a conflicting value, contested
    kept_apart: int = 0
    clusters_split: int = 0
    apart_reasons: list[str] = field(default_factory=list)
    #: a model's merges whose quotes do not show one subject (memctl.text.evidence): not applied
    merges_vetoed: int = 0
    #: absorption "yes" answers dropped: hard evidence lost (`absorption_veto`), or a model's quotes do not hold
    absorptions_vetoed: int = 0
    veto_reasons: list[str] = field(default_factory=list)

    def add(self, stats: AskStats) -> None:
        self.asked += stats.asked
        self.cached += stats.cached
        self.failed += stats.failed
        self.unusable += stats.unusable
        self.paused += stats.paused
        self.calls += stats.calls
        self.usage = self.usage + stats.usage
        for when, count in stats.ask_again.items():
            self.ask_again[when] = self.ask_again.get(when, 0) + count
        add_client_counters(self.client, stats.client)
