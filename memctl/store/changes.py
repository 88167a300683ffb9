"""Apply planned units, several per transaction, writing a change-log row per mutation; plan undo.

Apply never re-decides: it re-reads the rows a unit touches inside the transaction (locking them
where the backend can), checks each against the guard it was planned with and against the
protection rules, and then writes exactly what the plan says. Units that touch no common record
share a transaction (`batches`, `apply_batch`): their reads and writes are one statement of each
kind, and each unit is still decided alone and applies whole or not at all. The change log keeps
each row's state before and after, which is what `memctl undo` and `memctl verify` read.
"""

from __future__ import annotations

import json
import uuid
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from functools import lru_cache
from typing import Any, Collection, Iterable, Mapping, Optional, Sequence

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from memctl.plan import DATABASE_STAMPED, GUARD_COLUMNS, SCOPE_COLUMNS, Mutation, Unit, guard_mismatch, jsonable
from memctl.settings import parse_time
from memctl.store import models as m
from memctl.store.created import created_note, loggable
from memctl.store.engine import write
from memctl.store.values import value_problem

TABLE_OBJECTS: dict[str, sa.Table] = {"AIAgentNote": m.note, "AIAgentExample": m.example, "memctl_review": m.review}
REVIEW_TABLE = "memctl_review"
CHUNK = 500  # IN-list size: well under SQL Server's ~2,100 parameters per statement

# What each action may do to a row, checked at apply time whatever the plan says.
STATUS_CHANGING = {"archive", "revoke"}
SETTABLE = {
    "archive": {"Status"},
    "revoke": {"Status", "ConsolidatedIntoNoteID"},
    "resolve": {"Status", "ConsolidatedIntoNoteID"},
    "annotate": set(),
    "check": set(),
    # a standing note absorbs notes of its fact: their accesses become its own, and it counts as
    # consolidated (ConsolidationCount), so later wordings of its fact are absorbed into it
    "credit": {"AccessCount", "LastAccessedAt", "ConsolidationCount"},
    "restore": {"Status", "ConsolidatedIntoNoteID", "Comments", "__mj_UpdatedAt", "AccessCount", "LastAccessedAt", "ConsolidationCount"},
}
CHANGE_COLUMNS = ("Status", "ConsolidatedIntoNoteID", "Comments", "__mj_UpdatedAt")
#: columns the change log also keeps, for a note whose mutation sets them (a credit, its undo)
CREDITED_COLUMNS = ("AccessCount", "LastAccessedAt", "ConsolidationCount")

# memctl_review holds contradictions flagged for an operator. A flag is part of a plan like any
# mutation (so a dry-run writes none and a saved plan raises it when applied), and it is logged,
# so `undo` removes the flags a run raised and reopens the pairs an operator settled.
REVIEW_STATUSES = ("Open", "Resolved", "Dismissed")
REVIEW_SETTABLE = {
    "flag": {"NoteAID", "NoteBID", "Reason"},  # insert an Open row for a pair (NoteAID < NoteBID)
    "review": {"Status", "KeptNoteID", "ResolvedAt"},  # an operator settles the pair
    "restore": {"Status", "KeptNoteID", "ResolvedAt"},  # undo of "review"
    "unflag": set(),  # undo of "flag": the row goes
}
REVIEW_CHANGE_COLUMNS = ("Status", "KeptNoteID", "ResolvedAt")


def change_columns(table: str) -> tuple[str, ...]:
    """Return the columns whose before/after states the change log keeps for `table`."""
    return REVIEW_CHANGE_COLUMNS if table == REVIEW_TABLE else CHANGE_COLUMNS


def logged_columns(table: str, values: Collection[str]) -> tuple[str, ...]:
    """Return the columns the change log keeps for a mutation of `table` setting `values`:
    `change_columns`, and the access figures when the mutation sets them."""
    extra = tuple(c for c in CREDITED_COLUMNS if c in values) if table == "AIAgentNote" else ()
    return change_columns(table) + extra


@dataclass
class UnitOutcome:
    """What happened to one unit."""

    key: str
    kind: str
    applied: list[Mutation] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)

    @property
    def fully_applied(self) -> bool:
        return not self.skipped


@dataclass(frozen=True)
class ApplyContext:
    """Who is applying, for the change log and the comment tag."""

    engine: Engine
    run_id: str
    step_id: Optional[str]
    now: datetime
    #: SQLite, per table: whether every stored ID was in SQLAlchemy's spelling when this apply
    #: began (then each ID is looked up in that one spelling instead of four; see rows_by_id)
    plain_ids: dict[str, bool] = field(default_factory=dict, compare=False)


def comment_tag(run_id: str, now: datetime) -> str:
    """Return the prefix of every Comments line memctl writes (verify looks for it)."""
    return f"[memctl {now.date().isoformat()} run {run_id[:8]}]"


def append_comment(existing: Optional[str], line: str) -> str:
    """Append `line` to Comments, keeping what was there."""
    return line if not existing else f"{existing.rstrip()}\n{line}"


def policy_refusal(action: str, table: str, row: Mapping[str, Any], values: Optional[Mapping[str, Any]] = None) -> Optional[str]:
    """Return why the protection rules forbid `action` (setting `values`) on `row`, or None when allowed.

    Checked for every action that writes, `restore` included: an Immutable note is never
    changed; a Protected or manual record is never made Revoked or Archived by memctl (an
    operator's `review resolve` excepted, which is their explicit decision), whether a phase
    or an undo asks; a Protected note's access figures are never credited (memctl may only
    annotate its Comments).
    """
    if action == "check" or table == REVIEW_TABLE:
        return None  # a check writes nothing (an Immutable note may be the one a unit relies on)
    tier = row.get("ProtectionTier") if table == "AIAgentNote" else None
    tier = str(tier).capitalize() if tier else tier  # 'protected' on a case-insensitive collation is Protected
    if tier == "Immutable":
        return "the note is Immutable"
    if action == "credit" and tier == "Protected":
        return "the note is Protected (memctl only annotates it)"
    lowers = action in STATUS_CHANGING or (action == "restore" and (values or {}).get("Status") not in (None, "Active"))
    if lowers:
        if tier == "Protected":
            return "the note is Protected"
        if not row["IsAutoGenerated"]:
            return "the record is manual (IsAutoGenerated = false)"
    return None


def to_db_values(table: sa.Table, values: Mapping[str, Any]) -> dict[str, Any]:
    """Convert JSON plan values into what the table's column types bind."""
    out: dict[str, Any] = {}
    for name, value in values.items():
        column = table.c[name]
        if value is not None and isinstance(column.type, m.UTCDateTime):
            value = parse_time(value) if isinstance(value, str) else value
        elif value is not None and isinstance(column.type, sa.Numeric):
            value = Decimal(str(value))
        out[name] = value
    return out


def _check_mutation(mutation: Mutation) -> None:
    """Refuse what no backend stores, before the driver sees it (its error would print the values)."""
    if mutation.table not in TABLE_OBJECTS:
        raise ValueError(f"unknown table {mutation.table!r}")
    if mutation.comment is not None and "\x00" in mutation.comment:
        raise ValueError("the comment holds a NUL byte")
    if mutation.table == REVIEW_TABLE:
        _check_review_mutation(mutation)
        return
    if mutation.action == "insert":
        if mutation.table != "AIAgentNote":
            raise ValueError("only notes are inserted")
        unknown = set(mutation.values) - set(m.note.c.keys())
        if unknown:
            raise ValueError(f"unknown columns {sorted(unknown)}")
        for name, value in mutation.values.items():
            why = value_problem(m.note.c[name], value, None)
            if why:
                raise ValueError(f"{name}: {why}")
        return
    allowed = SETTABLE.get(mutation.action)
    if allowed is None:
        raise ValueError(f"unknown action {mutation.action!r}")
    extra = set(mutation.values) - allowed
    if extra:
        raise ValueError(f"action {mutation.action!r} may not set {sorted(extra)}")
    status = mutation.values.get("Status")
    statuses = m.NOTE_STATUSES if mutation.table == "AIAgentNote" else m.EXAMPLE_STATUSES
    if status is not None and status not in statuses:
        raise ValueError(f"invalid Status {status!r}")


def _check_review_mutation(mutation: Mutation) -> None:
    allowed = REVIEW_SETTABLE.get(mutation.action)
    if allowed is None:
        raise ValueError(f"unknown action {mutation.action!r} on {REVIEW_TABLE}")
    extra = set(mutation.values) - allowed
    if extra:
        raise ValueError(f"action {mutation.action!r} may not set {sorted(extra)}")
    if mutation.action == "flag":
        a, b = (str(mutation.values.get(k) or "").lower() for k in ("NoteAID", "NoteBID"))
        if not a or not b or a >= b:
            raise ValueError("a flag needs NoteAID < NoteBID")
    status = mutation.values.get("Status")
    if status is not None and status not in REVIEW_STATUSES:
        raise ValueError(f"invalid review Status {status!r}")
    if mutation.action == "review" and status not in ("Resolved", "Dismissed"):
        raise ValueError("a review settles a pair as Resolved or Dismissed")


RAW_ID = "__memctl_raw_id"  # on SQLite, the ID column's text exactly as stored


def id_spellings(record_id: str) -> list[str]:
    """Return the ways a GUID may be stored as text on SQLite (SQLAlchemy's 32 hex digits, or
    another application's dashed form), in either case."""
    hexed = uuid.UUID(record_id).hex
    dashed = str(uuid.UUID(hexed))
    return [hexed, hexed.upper(), dashed, dashed.upper()]


def id_in(table: sa.Table, ids: Sequence[str], sqlite: bool, plain: bool = False) -> sa.ColumnElement[bool]:
    """Return "the row's ID is one of `ids`": on SQLite, compared as stored text in every spelling
    (`id_spellings`), or only SQLAlchemy's with `plain`; elsewhere as the GUID type compares."""
    return guid_in(table.c.ID, ids, sqlite, plain)


def guid_in(column: sa.ColumnElement[Any], ids: Sequence[str], sqlite: bool, plain: bool = False) -> sa.ColumnElement[bool]:
    """Return "the GUID column's value is one of `ids`", as `id_in` compares a row's ID."""
    if not sqlite:
        return column.in_(ids)
    return sa.type_coerce(column, sa.String).in_(_id_texts(ids, plain))


def _id_texts(ids: Sequence[str], plain: bool) -> list[str]:
    """The texts `id_in` looks a SQLite row's ID up by (an ID that is no GUID: as given)."""
    return [t for i in ids for t in (_spelled(i, plain) or [i])]


def _spelled(record_id: str, plain: bool) -> Optional[list[str]]:
    try:
        return [uuid.UUID(record_id).hex] if plain else id_spellings(record_id)
    except ValueError:
        return None


@lru_cache(maxsize=64)
def _by_id_query(table: sa.Table, sqlite: bool, lock: bool, skip: tuple[str, ...]) -> sa.Select:
    """`rows_by_id`'s read, built once per table and shape: the IDs are one expanding parameter,
    "ids" (the same SQL as `id_in` renders; building and keying a new statement for each of a
    dream's ~1,800 units cost half of each lock read: 1,800 of them 1.1-1.3 s -> 0.5-0.6 s)."""
    read_columns = [c for c in table.c if c.name not in skip]
    ids = sa.bindparam("ids", expanding=True)
    if sqlite:
        raw = sa.type_coerce(table.c.ID, sa.String)
        query = sa.select(*read_columns, raw.label(RAW_ID)).where(raw.in_(ids))
    else:
        query = sa.select(*read_columns).where(table.c.ID.in_(ids))
    return query.with_for_update() if lock else query


def plain_ids(conn: Connection, table: sa.Table) -> bool:
    """Return whether every ID of `table` is stored as SQLAlchemy spells it on SQLite (32 lowercase hex digits).

    One scan of the ID index. A row another application writes later in another spelling is
    not one any plan of this apply names (plans name rows they read), unless it is the twin of
    a planned row, which is then found in SQLAlchemy's spelling, as rows_by_id prefers anyway.
    """
    raw = sa.type_coerce(table.c.ID, sa.String)
    odd = sa.or_(sa.func.length(raw) != 32, raw.op("GLOB")("*[^0-9a-f]*"))
    return conn.execute(sa.select(sa.literal(1)).where(odd).limit(1)).first() is None


def rows_by_id(
    conn: Connection, table: sa.Table, ids: Sequence[str], lock: bool = False, plain: bool = False, skip: Collection[str] = ()
) -> dict[str, Mapping[str, Any]]:
    """Return the rows of `table` whose ID is in `ids`, by lowercase ID.

    On SQLite a GUID is text: another application may have stored it upper-case or with dashes,
    which SQLAlchemy's comparison (32 lowercase hex digits) never matches. There every spelling
    is looked up and the stored text is kept (RAW_ID) so the row is written back by it; of rows
    whose IDs differ only in spelling, the one in SQLAlchemy's spelling is the record. With
    `plain` (`plain_ids` found no other spelling in the table), that spelling alone is looked up.
    The columns named in `skip` are not read.
    """
    rows: dict[str, Mapping[str, Any]] = {}
    sqlite = conn.dialect.name == "sqlite"
    query = _by_id_query(table, sqlite, lock, tuple(sorted(skip)))
    for start in range(0, len(ids), CHUNK):
        chunk = list(ids[start : start + CHUNK])
        for row in conn.execute(query, {"ids": _id_texts(chunk, plain) if sqlite else chunk}).mappings():
            key = str(row["ID"]).lower()
            if key not in rows or (sqlite and row[RAW_ID] == uuid.UUID(key).hex):
                rows[key] = row
    return rows


#: columns apply never reads from a locked row (no guard, change log, rule or write uses them):
#: a note's vector text is most of its bytes (TOASTed on PostgreSQL: 4.2 ms against 1.8 ms to
#: lock five notes of a 100k store with it and without it)
LOCK_SKIPPED = ("EmbeddingVector",)


def _lock_rows(conn: Connection, ctx: ApplyContext, table: sa.Table, ids: Sequence[str]) -> dict[str, Mapping[str, Any]]:
    plain = False
    if conn.dialect.name == "sqlite":
        if table.name not in ctx.plain_ids:
            ctx.plain_ids[table.name] = plain_ids(conn, table)
        plain = ctx.plain_ids[table.name]
    return rows_by_id(conn, table, ids, lock=True, plain=plain, skip=LOCK_SKIPPED)


def _stored_id(row: Mapping[str, Any]) -> Any:
    return row[RAW_ID] if RAW_ID in row else row["ID"]


def _row_state(row: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in row.items() if k != RAW_ID}


#: units applied in one transaction (DESIGN 4.1): one commit, one lock read, one write of each
#: kind and one change-log insert per batch instead of per unit. A kill mid-batch loses the batch
#: (the next run plans it again), never half a unit: the transaction commits whole or not at all.
BATCH_UNITS = 50
#: and at most this many mutations, whatever the units (a unit larger than this goes alone): a
#: transaction stays short, and a batch of archivals (500 a unit) is still a transaction of its own
BATCH_MUTATIONS = 500


@dataclass
class _Writes:
    """What a batch writes, gathered unit by unit and sent a statement per kind."""

    notes: list[tuple[sa.Table, dict[str, Any]]] = field(default_factory=list)
    flags: list[dict[str, Any]] = field(default_factory=list)
    updates: dict[tuple[sa.Table, tuple[str, ...]], list[dict[str, Any]]] = field(default_factory=lambda: defaultdict(list))
    deletes: list[tuple[sa.Table, Any]] = field(default_factory=list)
    changes: list[dict[str, Any]] = field(default_factory=list)

    def extend(self, other: "_Writes") -> None:
        self.notes += other.notes
        self.flags += other.flags
        for key, params in other.updates.items():
            self.updates[key] += params
        self.deletes += other.deletes
        self.changes += other.changes


@dataclass
class _Read:
    """The rows a batch relies on, read once inside its transaction (locked where the backend can)."""

    existing_notes: set[str] = field(default_factory=set)
    #: (NoteAID, NoteBID) -> Status of the pairs already under review
    reviewed: dict[tuple[str, str], str] = field(default_factory=dict)
    rows: dict[str, dict[str, Mapping[str, Any]]] = field(default_factory=dict)


def unit_records(unit: Unit) -> set[str]:
    """Return what a unit touches: the records its mutations name, and the note pairs it flags."""
    out = {f"{mu.table}:{mu.record_id.lower()}" for mu in unit.mutations}
    for mu in unit.mutations:
        if mu.action == "flag":
            out.add("pair:" + ":".join(str(mu.values.get(k) or "").lower() for k in ("NoteAID", "NoteBID")))
    return out


def batches(units: Sequence[Unit], size: Optional[int] = None) -> list[list[Unit]]:
    """Cut `units` into consecutive batches of at most `size` (BATCH_UNITS) units and BATCH_MUTATIONS
    mutations, in plan order.

    Two units of one batch never touch one record (a batch starts anew at the unit that would):
    each unit is then checked against the rows as they were when the batch began, which is what
    it would see applied alone after the units before it.
    """
    size = size or BATCH_UNITS
    out: list[list[Unit]] = []
    seen: set[str] = set()
    mutations = 0
    for unit in units:
        touched = unit_records(unit)
        if not out or len(out[-1]) >= size or touched & seen or mutations + len(unit.mutations) > BATCH_MUTATIONS:
            out.append([])
            seen, mutations = set(), 0
        out[-1].append(unit)
        seen |= touched
        mutations += len(unit.mutations)
    return out


def apply_unit(ctx: ApplyContext, unit: Unit) -> UnitOutcome:
    """Apply one unit in one transaction; return what was applied and what was skipped and why."""
    return apply_batch(ctx, [unit])[0]


def apply_batch(ctx: ApplyContext, units: Sequence[Unit]) -> list[UnitOutcome]:
    """Apply units that touch no common record (`batches`) in one transaction, in order.

    Each unit is decided as it would be alone: an invalid unit is skipped before the database
    sees it, a guarded row that changed skips its mutation (and an atomic unit's every
    mutation), and only what is applied is written and logged. The batch then commits whole. When
    a statement fails (a trigger, a CHECK, a lost connection), the batch rolls back and its units
    are applied again one transaction each: the ones before the failing unit commit, and that
    unit fails exactly as it would have alone.
    """
    outcomes: list[Optional[UnitOutcome]] = [_invalid(unit) for unit in units]
    valid = [unit for unit, outcome in zip(units, outcomes) if outcome is None]
    if valid:
        try:
            with write(ctx.engine) as conn:
                decided = _apply_in(conn, ctx, valid)
        except Exception:  # noqa: BLE001 - re-raised by the unit that fails alone (RunStopped is no Exception)
            if len(valid) == 1:
                raise
            decided = [apply_unit(ctx, unit) for unit in valid]
        found = iter(decided)
        outcomes = [outcome if outcome is not None else next(found) for outcome in outcomes]
    return [o for o in outcomes if o is not None]


def _invalid(unit: Unit) -> Optional[UnitOutcome]:
    """Return the outcome of a unit whose plan no backend could store (every mutation skipped), or None."""
    for mutation in unit.mutations:
        try:
            _check_mutation(mutation)
        except ValueError as exc:
            return UnitOutcome(unit.key, unit.kind, skipped=[(mu.record_id, f"invalid plan: {exc}") for mu in unit.mutations])
    return None


def _apply_in(conn: Connection, ctx: ApplyContext, units: Sequence[Unit]) -> list[UnitOutcome]:
    read = _read(conn, ctx, units)
    writes = _Writes()
    outcomes = []
    for unit in units:
        outcome, unit_writes = _decide(conn, ctx, unit, read)
        if unit.atomic and outcome.skipped:
            outcome = _skipped_whole(unit, outcome)
        else:
            writes.extend(unit_writes)
        outcomes.append(outcome)
    for table, row in writes.notes:
        conn.execute(table.insert(), row)
    if writes.flags:
        conn.execute(m.review.insert(), writes.flags)
    for (table, keys), params in writes.updates.items():
        conn.execute(_update_by_id(table, keys, conn.dialect.name == "sqlite"), params)
    for table, stored in writes.deletes:
        conn.execute(sa.delete(table).where(_id_is(conn, table, stored)))
    if writes.changes:
        conn.execute(m.change.insert(), writes.changes)
    return outcomes


def _skipped_whole(unit: Unit, outcome: UnitOutcome) -> UnitOutcome:
    """An atomic unit with a skipped mutation: every mutation skipped, each saying why."""
    reasons = dict(outcome.skipped)
    why = "; ".join(f"{rid}: {reason}" for rid, reason in outcome.skipped)
    whole = UnitOutcome(unit.key, unit.kind)
    for mutation in unit.mutations:
        reason = reasons.get(mutation.record_id) if mutation.record_id in reasons else f"unit skipped ({why})"
        whole.skipped.append((mutation.record_id, reason or why))
    return whole


def _read(conn: Connection, ctx: ApplyContext, units: Sequence[Unit]) -> _Read:
    """Read, once for the batch, the rows its units rely on: created IDs already taken, pairs
    already under review, and every row a unit changes or checks (locked)."""
    read = _Read()
    inserted = [mu.record_id for unit in units for mu in unit.mutations if mu.action == "insert"]
    for start in range(0, len(inserted), CHUNK):
        query = sa.select(m.note.c.ID).where(m.note.c.ID.in_(inserted[start : start + CHUNK]))
        read.existing_notes |= {_guid(i) for i in conn.execute(query).scalars()}
    firsts = sorted({str(mu.values["NoteAID"]).lower() for unit in units for mu in unit.mutations if mu.action == "flag"})
    r = m.review
    for start in range(0, len(firsts), CHUNK):
        query = sa.select(r.c.NoteAID, r.c.NoteBID, r.c.Status).where(r.c.NoteAID.in_(firsts[start : start + CHUNK]))
        read.reviewed.update({(str(a).lower(), str(b).lower()): s for a, b, s in conn.execute(query)})
    changed: dict[str, list[str]] = defaultdict(list)
    for unit in units:
        for mu in unit.mutations:
            if mu.action not in ("insert", "flag"):
                changed[mu.table].append(mu.record_id.lower())
    for table_name, ids in changed.items():
        read.rows[table_name] = _lock_rows(conn, ctx, TABLE_OBJECTS[table_name], ids)
    return read


def _decide(conn: Connection, ctx: ApplyContext, unit: Unit, read: _Read) -> tuple[UnitOutcome, _Writes]:
    """Decide one unit against the batch's rows: what it applies and skips, and what that writes."""
    outcome = UnitOutcome(unit.key, unit.kind)
    writes = _Writes()
    tag = comment_tag(ctx.run_id, ctx.now)
    sqlite = conn.dialect.name == "sqlite"
    order = {"insert": 0, "flag": 1}
    for mutation in sorted(unit.mutations, key=lambda mu: order.get(mu.action, 2)):  # inserts, flags, then the rest (stable)
        if mutation.action == "insert":
            values = to_db_values(m.note, mutation.values)
            if _guid(values["ID"]) in read.existing_notes:
                # a saved plan applied twice: its notes exist already (and its guarded rows have changed)
                outcome.skipped.append((mutation.record_id, "a note with this ID exists already (was the plan applied before?)"))
                continue
            if mutation.comment:
                values["Comments"] = append_comment(values.get("Comments"), f"{tag} {mutation.comment}")
            table, values = created_note(conn, values, ctx.run_id)
            read.existing_notes.add(_guid(values["ID"]))  # a second insert of the ID is skipped, as the database would refuse it
            writes.notes.append((table, values))
            outcome.applied.append(mutation)
            writes.changes.append(_change_row(ctx, unit, mutation, None, jsonable(loggable(values))))
            continue
        if mutation.action == "flag":
            a, b = (str(mutation.values[k]).lower() for k in ("NoteAID", "NoteBID"))
            existing = read.reviewed.get((a, b))
            if existing is not None:
                outcome.skipped.append((mutation.record_id, f"the pair is already under review (Status {existing})"))
                continue
            row = {"ID": mutation.record_id, "NoteAID": a, "NoteBID": b, "Reason": mutation.values.get("Reason"),
                   "Status": "Open", "RunID": ctx.run_id, "CreatedAt": ctx.now}
            read.reviewed[(a, b)] = "Open"
            writes.flags.append(row)
            outcome.applied.append(mutation)
            writes.changes.append(_change_row(ctx, unit, mutation, None, jsonable(row)))
            continue
        table_name = mutation.table
        table = TABLE_OBJECTS[table_name]
        rows = read.rows.get(table_name, {})
        row = rows.get(mutation.record_id.lower())
        reason = guard_mismatch(mutation.guard, row, table_name) if mutation.guard is not None else None
        if reason is None and row is None:
            reason = "the record no longer exists"
        if reason is None and row is not None:
            reason = policy_refusal(mutation.action, table_name, row, mutation.values)
        if reason is not None:
            outcome.skipped.append((mutation.record_id, reason))
            continue
        assert row is not None
        if mutation.action == "check":
            continue  # a guard only: the row this unit relies on (e.g. an absorbing note) is unchanged
        if mutation.action == "unflag":
            writes.deletes.append((table, _stored_id(row)))
            writes.changes.append(_change_row(ctx, unit, mutation, jsonable(_row_state(row)), None))
            outcome.applied.append(mutation)
            continue
        new = to_db_values(table, mutation.values)
        if mutation.comment and "Comments" in table.c:
            new["Comments"] = append_comment(row["Comments"], f"{tag} {mutation.comment}")
        if "__mj_UpdatedAt" in table.c:
            new.setdefault("__mj_UpdatedAt", ctx.now)
        keys = tuple(sorted(new))
        written = _sqlite_ids(table, new, _unit_rows(unit, rows)) if sqlite else new
        writes.updates[(table, keys)].append({"b_id": _stored_id(row), **{f"b_{k}": v for k, v in written.items()}})
        before = {c: jsonable(row[c]) for c in logged_columns(table_name, new) if c in table.c}
        after = dict(before)
        after.update(jsonable({k: v for k, v in new.items() if k in before}))
        into = new.get("ConsolidatedIntoNoteID")
        if into is not None and (scope := _into_scope(unit, rows, str(into))) is not None:
            after[INTO_SCOPE] = scope
        writes.changes.append(_change_row(ctx, unit, mutation, before, after))
        outcome.applied.append(mutation)
    return outcome, writes


#: a revoke's After also keeps the scope of the note it was revoked into, as that note was then:
#: absorption into a broader note is legitimate, so only this tells `memctl verify` that the
#: note was widened afterwards
INTO_SCOPE = "IntoScope"


def _into_scope(unit: Unit, rows: Mapping[str, Mapping[str, Any]], target: str) -> Optional[dict[str, Any]]:
    """The scope of `target` as this unit finds it: its row, or the note the unit inserts."""
    row: Optional[Mapping[str, Any]] = rows.get(target.lower())
    if row is None:
        row = next((mu.values for mu in unit.mutations if mu.action == "insert" and str(mu.values.get("ID")).lower() == target.lower()), None)
    return None if row is None else {c: jsonable(row.get(c)) for c in SCOPE_COLUMNS}


def _guid(value: Any) -> str:
    """A GUID as one text whatever the backend returns (SQL Server upper-case, SQLite hex digits)."""
    return str(uuid.UUID(str(value)))


def _unit_rows(unit: Unit, rows: Mapping[str, Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    """The batch's rows this unit names (a GUID value is spelt by its stored text only for those)."""
    named = {mu.record_id.lower() for mu in unit.mutations}
    return {k: rows[k] for k in named if k in rows}


@lru_cache(maxsize=256)
def _update_by_id(table: sa.Table, keys: tuple[str, ...], sqlite: bool) -> sa.Update:
    """The update of `keys` of the row whose ID is "b_id" (each value "b_<column>"), built once per
    table and set of columns. On SQLite the IDs are the text they are stored as (rows_by_id)."""
    if sqlite:
        return sa.update(table).where(sa.type_coerce(table.c.ID, sa.String) == sa.bindparam("b_id", type_=sa.String)).values(
            {k: sa.bindparam(f"b_{k}", type_=sa.String) if isinstance(table.c[k].type, sa.Uuid) else sa.bindparam(f"b_{k}") for k in keys}
        )
    return sa.update(table).where(table.c.ID == sa.bindparam("b_id")).values({k: sa.bindparam(f"b_{k}") for k in keys})


def _id_is(conn: Connection, table: sa.Table, stored: Any) -> sa.ColumnElement[bool]:
    if conn.dialect.name == "sqlite":
        return sa.type_coerce(table.c.ID, sa.String) == sa.literal(stored, sa.String)
    return table.c.ID == stored


def _sqlite_ids(table: sa.Table, values: Mapping[str, Any], rows: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """Spell the GUIDs of `values` as SQLite stores them: a row of this unit by its stored text
    (a foreign key compares text exactly), any other in SQLAlchemy's 32 hex digits."""
    out = dict(values)
    for name, value in values.items():
        if isinstance(value, str) and isinstance(table.c[name].type, sa.Uuid):
            known = rows.get(value.lower())
            out[name] = known[RAW_ID] if known is not None and RAW_ID in known else uuid.UUID(value).hex
    return out


def _change_row(ctx: ApplyContext, unit: Unit, mutation: Mutation, before: Optional[dict], after: Optional[dict]) -> dict[str, Any]:
    return {
        "RunID": ctx.run_id,
        "StepID": ctx.step_id,
        "TableName": mutation.table,
        "RecordID": mutation.record_id,
        "Action": mutation.action,
        "Reason": (mutation.comment or unit.reason)[:4000],
        "Before": json.dumps(before, sort_keys=True) if before is not None else None,
        "After": json.dumps(after, sort_keys=True) if after is not None else None,
        "ChangedAt": ctx.now,
    }


# --- undo -------------------------------------------------------------------------------------


def run_changes(conn: Connection, run_id: str) -> list[Mapping[str, Any]]:
    """Return the change-log rows of `run_id` in the order they were written."""
    return list(conn.execute(sa.select(m.change).where(m.change.c.RunID == run_id).order_by(m.change.c.ID)).mappings())


# Every action a change-log row may hold; undo refuses (exit 2, naming it) a log it cannot read.
LOGGED_ACTIONS = ("insert", "revoke", "archive", "annotate", "credit", "resolve", "restore", "flag", "unflag", "review")


def unknown_actions(conn: Connection, run_id: str) -> list[str]:
    """Return the actions in `run_id`'s change log that this version of memctl does not know."""
    query = sa.select(m.change.c.Action).where(m.change.c.RunID == run_id).distinct()
    return sorted(str(a) for a in conn.execute(query).scalars() if a not in LOGGED_ACTIONS)


def _undo_guard(table: str, state: Optional[Mapping[str, Any]], force: bool) -> Optional[dict[str, Any]]:
    """Guard an undo on the state the run left the record in: what memctl controls, no stamped column."""
    if force or state is None:
        return None
    watched = set(GUARD_COLUMNS[table]) | set(change_columns(table))
    return {c: v for c, v in state.items() if c in watched and c not in DATABASE_STAMPED}


def undo_units(conn: Connection, run_id: str, force: bool = False) -> list[Unit]:
    """Plan the reversal of every change `run_id` made: one mutation per record, all in one unit.

    A record changed several times by the run goes back to its state before the first change;
    a note the run created is revoked (kept, not deleted: other rows and the change log name
    it). Each mutation is guarded by the state the run left the record in, minus the columns
    the database stamps itself, so a record changed since is refused (unless `force`). The one
    unit is atomic: undo puts back every record or none.
    """
    per_record: dict[tuple[str, str], list[Mapping[str, Any]]] = defaultdict(list)
    for change in run_changes(conn, run_id):
        if change["Action"] not in LOGGED_ACTIONS:
            raise UnknownActionError(f"the change log of run {run_id} holds action {change['Action']!r} (record {change['RecordID']}), unknown to this memctl; nothing undone")
        per_record[(change["TableName"], str(change["RecordID"]).lower())].append(change)
    mutations = []
    for (table, record_id), changes in per_record.items():
        first, last = changes[0], changes[-1]
        last_after = json.loads(last["After"]) if last["After"] else None
        if first["Action"] == "insert":
            mutation = Mutation(table, record_id, "restore", {"Status": "Revoked"}, f"Undone: created by run {run_id}", _undo_guard(table, last_after, force))
        elif first["Action"] == "flag":
            mutation = Mutation(table, record_id, "unflag", {}, f"Undone: flagged by run {run_id}", _undo_guard(table, last_after, force))
        elif first["Action"] == "unflag":
            before = json.loads(first["Before"])
            values = {k: before[k] for k in ("NoteAID", "NoteBID", "Reason")}
            mutation = Mutation(table, record_id, "flag", values, f"Undone: flag removed by run {run_id}", None)
        else:
            before = json.loads(first["Before"])
            values = {c: before[c] for c in logged_columns(table, before) if c in before}
            mutation = Mutation(table, record_id, "restore", values, None, _undo_guard(table, last_after, force))
        mutations.append(mutation)
    if not mutations:
        return []
    return [Unit(kind="undo", key=f"undo:{run_id}", reason=f"put back the records of run {run_id[:8]}", mutations=tuple(mutations))]


class UnknownActionError(ValueError):
    """The change log holds an action this version of memctl cannot reverse."""


def affected_records(changes: Iterable[Mapping[str, Any]]) -> set[str]:
    """Return the record IDs a set of change rows touched."""
    return {str(c["RecordID"]).lower() for c in changes}


def new_id() -> str:
    """Return a fresh record ID."""
    return str(uuid.uuid4())
