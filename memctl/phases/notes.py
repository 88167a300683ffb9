"""Load the active notes the LLM phases work on, as frozen records, and group them by partition."""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Iterable

import sqlalchemy as sa

from memctl.phases.base import Overlay, PhaseContext
from memctl.phases.common import in_shard
from memctl.plan import guard_of
from memctl.records import NOTE_COLUMNS, NoteRecord, PartitionKey, note_record, record_row
from memctl.similarity import partition_key
from memctl.store import models as m
from memctl.store.engine import read


def load_notes(ctx: PhaseContext, overlay: Overlay, *where: Any) -> list[NoteRecord]:
    """Return the Active notes in scope (plus the overlay's additions), ordered by (created, id).

    `where` adds SQL conditions. Stored vectors are read only when the settings can use them.
    """
    t = m.note
    wanted = [c for _, c in NOTE_COLUMNS if c != "EmbeddingVector" or ctx.settings.stored_model_id]
    conditions = [t.c.Status == "Active", *where]
    if ctx.scope.agent_id:
        conditions.append(t.c.AgentID == ctx.scope.agent_id)
    query = sa.select(*[t.c[c] for c in wanted]).where(*conditions)
    with_vector = "EmbeddingVector" in wanted
    notes: list[NoteRecord] = []
    with read(ctx.engine) as conn:
        for row in conn.execute(query.execution_options(yield_per=5000)):
            # a plain dict: RowMapping.get is a Python-level call per column, dict.get is not
            values = dict(zip(wanted, row))
            if str(values["ID"]).lower() in overlay.removed or not in_shard(values, ctx.scope):
                continue
            notes.append(note_record(values, with_vector=with_vector))
    for added in overlay.added:
        if added.id not in overlay.removed and (not ctx.scope.agent_id or (added.agent_id or "").lower() == ctx.scope.agent_id.lower()):
            notes.append(added)
    notes.sort(key=order_key)
    return notes


def order_key(note: NoteRecord) -> tuple:
    """Return the deterministic order of notes: oldest first, then by ID."""
    return (note.created_at, note.id)


def by_partition(notes: Iterable[NoteRecord]) -> dict[PartitionKey, list[NoteRecord]]:
    """Group notes by their exact scope (DESIGN 3); each group keeps the input order."""
    groups: dict[PartitionKey, list[NoteRecord]] = defaultdict(list)
    for note in notes:
        groups[partition_key(note)].append(note)
    return dict(groups)


def note_guard(note: NoteRecord) -> dict[str, Any]:
    """Return the guard of a loaded note (what must not change before its unit applies)."""
    return guard_of("AIAgentNote", record_row(note))


def consolidatable(note: NoteRecord) -> bool:
    """Return whether a note may be merged or revoked by memctl (auto, not Protected/Immutable)."""
    return note.is_auto_generated and note.protection_tier not in ("Immutable", "Protected")
