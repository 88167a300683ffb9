"""Load the active notes the LLM phases work on, as frozen records, and group them by partition."""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime
from typing import Any, Iterable, Iterator, Optional

import sqlalchemy as sa

from memctl.context import PhaseContext, Snapshot
from memctl.phases.base import Overlay
from memctl.phases.common import agent_filter, as_planned, in_shard
from memctl.phases.slices import agent_condition, in_slice
from memctl.plan import Mutation, guard_of
from memctl.protection import revocable
from memctl.records import NOTE_COLUMNS, NoteRecord, PartitionKey, note_record, record_row
from memctl.similarity import partition_key
from memctl.store import models as m
from memctl.store.ids import by_id_status, chunks, id_in, readable, sqlite_guid
from memctl.store.engine import read
from memctl.vectors import Feed, stored_vectors

#: above this many notes, read vectors by one scan of the Active notes instead of by ID
SCAN_ABOVE = 5000
#: columns whose values repeat across notes (IDs, models, dates): each distinct value is kept
#: once per load, so a million records do not each hold their own copy
SHARED_VALUES = (
    "AgentID", "CompanyID", "UserID", "PrimaryScopeEntityID", "PrimaryScopeRecordID", "SecondaryScopes", "Type", "Status",
    "ProtectionTier", "EmbeddingModelID", "SourceConversationID", "LastAccessedAt", "__mj_CreatedAt", "__mj_UpdatedAt", "ExpiresAt",
)


def refreshed(ctx: PhaseContext, overlay: Overlay, snapshot: Snapshot) -> list[NoteRecord]:
    """Return the snapshot's notes, its touched notes re-read (gone if no longer Active).

    A real run only: in a dry-run the overlay carries the first phase's plan.
    """
    if not snapshot.touched:
        return snapshot.notes
    ids = sorted(snapshot.touched)
    alone = Overlay(removed=overlay.removed)  # its additions are in the snapshot already
    stored_vectors(ctx).forget(ids)  # read again below: with their vector text, or to be read by with_vectors
    fresh: list[NoteRecord] = []  # read by ID: the touched notes still Active
    for chunk in chunks(ids):
        fresh.extend(load_notes(ctx, alone, id_in(m.note, chunk, ctx.engine), vectors=snapshot.with_vectors, by_id=True))
    return sorted([n for n in snapshot.notes if n.id not in snapshot.touched] + fresh, key=order_key)


def load_notes(ctx: PhaseContext, overlay: Overlay, *where: Any, vectors: bool = True, by_id: bool = False) -> list[NoteRecord]:
    """Return the Active notes in scope (plus the overlay's additions), ordered by (created, id).

    `where` adds SQL conditions. Stored vectors are read only when the settings can use them,
    and with `vectors=False` not at all (`with_vectors` reads them later). The records never
    carry the vector text: it is decoded into the run's StoredVectors (memctl/vectors.py), and
    every note read without it has its entry there marked out of date.
    """
    t = m.note
    wanted = [c for _, c in NOTE_COLUMNS if c != "EmbeddingVector" or (vectors and ctx.settings.stored_model_id)]
    status = by_id_status(t.c.Status, ctx.engine) if by_id else t.c.Status
    conditions = [status == "Active", *where, *agent_filter(t, ctx.scope, ctx.engine), *agent_condition(t, ctx)]
    columns, fast = readable([t.c[c] for c in wanted], ctx.engine)
    query = sa.select(*columns).where(*conditions)
    notes, twins = _read_notes(ctx, overlay, query, wanted, fast)
    if twins:
        ctx.reporter.log(f"{twins} note row(s) repeat the ID of another row in another spelling (case or dashes): each ID is handled once")
    negative = sum(1 for n in notes if n.stored_access_count is not None)
    if negative:
        ctx.reporter.log(f"{negative} note(s) have a negative AccessCount (written by another application): counted as 0, left as stored")
    notes = _with_overlay(ctx, overlay, notes)
    notes.sort(key=order_key)
    return notes


def _read_notes(ctx: PhaseContext, overlay: Overlay, query: sa.Select, wanted: list[str], fast: list[str]) -> tuple[list[NoteRecord], int]:
    """Return the records of the rows taken (each ID once, in row order) and how many rows repeated an ID."""
    with_vector = "EmbeddingVector" in wanted
    store = stored_vectors(ctx)
    trusted = store.trusted
    dropped: set[str] = set()  # IDs whose row kept (a twin read later) has no text to use
    notes: list[NoteRecord] = []
    # note ID -> its place in `notes` (-1: not taken). SQLite rows whose IDs differ only in case or
    # dashes are one record: the row in SQLAlchemy's spelling (32 lowercase hex) if any, as rows_by_id finds it.
    seen: dict[str, int] = {}
    twins = 0
    with store.feed() as feed:
        with read(ctx.engine) as conn:
            rows = conn.execute(query.execution_options(yield_per=5000))
            for note_id, stored_id, values in _row_values(rows, wanted, fast):
                if note_id in seen:
                    twins += 1
                    place = seen[note_id]
                    if place >= 0 and fast and stored_id == note_id.replace("-", ""):
                        notes[place] = note_record(values, with_vector=False)
                        _feed_again(feed, dropped, note_id, _trusted_text(values, trusted) if with_vector else None)
                    continue
                if note_id in overlay.removed or not in_shard(values, ctx.scope):
                    seen[note_id] = -1
                    continue
                seen[note_id] = len(notes)
                notes.append(note_record(values, with_vector=False))
                store.stale(note_id)  # its vector: this row's, or none until with_vectors reads it
                text = _trusted_text(values, trusted) if with_vector else None
                if text is not None:
                    feed.add(note_id, text)
    store.forget(dropped)
    return notes, twins


def _row_values(rows: Iterable[Any], wanted: list[str], fast: list[str]) -> Iterator[tuple[str, Any, dict[str, Any]]]:
    """Yield each row's note ID (lowercase), its ID as stored, and its values by column name."""
    shared = [c for c in SHARED_VALUES if c in wanted]
    one: dict[Any, Any] = {}  # a value -> the one object of it this load keeps
    for row in rows:
        # a plain dict: RowMapping.get is a Python-level call per column, dict.get is not
        values = dict(zip(wanted, row))
        stored_id = values["ID"]
        for column in fast:
            values[column] = sqlite_guid(values[column])
        for column in shared:
            value = values[column]
            if value is not None:
                values[column] = one.setdefault(value, value)
        yield str(values["ID"]).lower(), stored_id, values


def _feed_again(feed: Feed, dropped: set[str], note_id: str, text: Optional[str]) -> None:
    """Feed the text of the row now kept for `note_id`, or mark its vector dropped when it has none."""
    if text is None:
        dropped.add(note_id)
    else:
        dropped.discard(note_id)
        feed.add(note_id, text, again=True)  # this row's text, whatever was fed before


def _with_overlay(ctx: PhaseContext, overlay: Overlay, notes: list[NoteRecord]) -> list[NoteRecord]:
    """Return `notes` with the overlay's changes applied and its additions in this load's scope appended."""
    if overlay.changed:
        notes = [note_record(as_planned(record_row(n), overlay.changed)) if n.id in overlay.changed else n for n in notes]
    holds = in_slice(ctx)
    notes.extend(added for added in overlay.added_for(ctx.scope.agent_id) if holds(added.agent_id))
    return notes


def with_vectors(ctx: PhaseContext, groups: dict[PartitionKey, list[NoteRecord]]) -> dict[PartitionKey, list[NoteRecord]]:
    """Read into the run's StoredVectors the vector text of the notes of `groups` loaded without it.

    Return `groups` unchanged. Only notes of the trusted stored model are read. Few notes: by ID,
    in chunks; most of the store: one scan of the Active notes.
    """
    store = stored_vectors(ctx)
    trusted = store.trusted
    if not trusted:
        return groups
    wanted = {
        n.id for notes in groups.values() for n in notes
        if n.embedding_vector is None and store.trusts(n.embedding_model_id) and not store.has(n.id)
    }
    if not wanted:
        return groups
    t = m.note
    query = sa.select(t.c.ID, t.c.EmbeddingVector)
    with store.feed() as feed:
        with read(ctx.engine) as conn:
            if len(wanted) > SCAN_ABOVE:
                query = query.where(
                    t.c.Status == "Active", t.c.EmbeddingVector.is_not(None),
                    *agent_filter(t, ctx.scope, ctx.engine), *agent_condition(t, ctx),
                )
                rows: Iterable[Any] = conn.execute(query.execution_options(yield_per=5000))
            else:
                ids = sorted(wanted)
                rows = (row for chunk in chunks(ids) for row in conn.execute(query.where(id_in(t, chunk, ctx.engine))))
            for stored_id, text in rows:
                note_id = str(stored_id).lower()
                if note_id in wanted and text is not None:
                    feed.add(note_id, text)
                    wanted.discard(note_id)  # an ID's first row, as the texts were taken before
    # a note gone or changed meanwhile keeps no vector: its partition is embedded by the compute
    # embedder this run, and its unit's guard stops any change planned on stale data
    return groups


def _trusted_text(values: dict[str, Any], trusted: str) -> Optional[str]:
    """Return the row's EmbeddingVector text when its EmbeddingModelID is the trusted model's, else None."""
    text = values.get("EmbeddingVector")
    if text is None or (values.get("EmbeddingModelID") or "").lower() != trusted:
        return None
    return text


def is_new(note: NoteRecord, since: Optional[datetime]) -> bool:
    """Return whether `note` was created or changed after `since` (everything is new without one)."""
    return since is None or note.created_at > since or note.updated_at > since


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


def revoke_into(note: NoteRecord, into: str, comment: str) -> Mutation:
    """Return the mutation that revokes `note` into the note with ID `into`, guarded by `note` as read."""
    return Mutation("AIAgentNote", note.id, "revoke", {"Status": "Revoked", "ConsolidatedIntoNoteID": into}, comment=comment, guard=note_guard(note))


def consolidatable(note: NoteRecord) -> bool:
    """Return whether memctl may merge or revoke a note (memctl.protection)."""
    return revocable(note.protection_tier, note.is_auto_generated)
