"""Import, step two: in one write transaction, check the validated rows against the store (IDs
already there, references), order parents first, and insert them all or nothing."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterable, Sequence
from datetime import datetime, timezone
from typing import Any, TextIO

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from memctl.errors import InputError
from memctl.store import models
from memctl.store.engine import write
from memctl.store.ids import chunks
from memctl.store.live import live_table
from memctl.transfer.kinds import KINDS, SELF_REFERENCES
from memctl.transfer.validation import RULES, Rows, Target, read_records, read_target

# Import inserts parents before the rows that reference them: on a MemberJunction database
# notes and examples have foreign keys to runs (SourceAIAgentRunID).
INSERT_ORDER = ("company", "user", "conversation", "agent", "note_type", "run", "run_step", "note", "example")

INSERT_BATCH = 1000  # rows per executemany while importing
IN_LIST_CHUNK = 1000  # IDs per IN-list (SQL Server allows ~2,100 parameters a statement)


def _present(conn: Connection, table: sa.Table, ids: Iterable[str]) -> set[str]:
    """Return which of `ids` exist in `table`."""
    wanted = sorted(set(ids))
    found: set[str] = set()
    for chunk in chunks(wanted, IN_LIST_CHUNK):
        result = conn.execute(sa.select(table.c.ID).where(table.c.ID.in_(chunk)))
        found.update(str(uuid.UUID(str(value))) for value in result.scalars())
    return found


def _references(conn: Connection, batch: dict[str, Rows], kind: str, column: str, target_kind: str, errors: list[tuple[int, str]]) -> None:
    """Record an error for each row whose `column` names a row in neither the file nor the store."""
    rows, position = batch[kind], RULES[kind].index[column]
    in_file = batch[target_kind].line_of
    outside = {row[position] for row in rows.rows if row[position] is not None and row[position] not in in_file}
    if not outside:
        return
    missing = outside - _present(conn, KINDS[target_kind], outside)
    for row, line in zip(rows.rows, rows.lines):
        if row[position] in missing:
            errors.append((line, f"{column}: {target_kind} {row[position]} is neither in the file nor in the store"))


def _parents_first(rows: Rows, parents: Sequence[Any], column: str, errors: list[tuple[int, str]]) -> list[int]:
    """Return row indexes ordered so that a row's parent (`parents[i]`, when in the file) comes before it."""
    unseen, on_path = -1, -2
    index = {row[0]: i for i, row in enumerate(rows.rows)}
    depth = [unseen] * len(rows.rows)
    for start in range(len(rows.rows)):
        path: list[int] = []
        current: int | None = start
        while current is not None and depth[current] < 0:
            if depth[current] == on_path:
                lines = [rows.lines[i] for i in path[path.index(current) :]]
                chain = " -> ".join(f"line {line}" for line in lines + lines[:1])
                errors.append((min(lines), f"{column}: rows point at each other in a cycle ({chain})"))
                break
            depth[current] = on_path
            path.append(current)
            parent = parents[current]
            current = index.get(parent) if parent is not None else None
        base = depth[current] if current is not None and depth[current] >= 0 else -1
        for i in reversed(path):
            base += 1
            depth[i] = base
    return sorted(range(len(rows.rows)), key=depth.__getitem__)


def _check_and_order(conn: Connection, batch: dict[str, Rows], target: Target) -> dict[str, list[tuple[tuple[Any, ...], dict[str, Any]]]]:
    """Check the file against the store; return the rows to insert per kind, in insert order."""
    errors: list[tuple[int, str]] = []
    skipped: set[int] = set()
    for kind, rows in batch.items():
        if not rows.rows:
            continue
        for existing in sorted(_present(conn, KINDS[kind], rows.line_of)):
            line = rows.line_of[existing]
            if kind == "agent" and existing == models.MEMCTL_AGENT_ID:
                skipped.add(line)  # the store's own memctl agent: keep the one it has
            else:
                errors.append((line, f"ID: {kind} {existing} already exists in the store"))
    _references(conn, batch, "note", "ConsolidatedIntoNoteID", "note", errors)
    _references(conn, batch, "run_step", "AgentRunID", "run", errors)
    _references(conn, batch, "run_step", "ParentID", "run_step", errors)
    ordered: dict[str, list[tuple[tuple[Any, ...], dict[str, Any]]]] = {}
    for kind, rows in batch.items():
        reference = SELF_REFERENCES.get(kind)
        if reference:
            position = RULES[kind].index[reference]
            order = _parents_first(rows, [row[position] for row in rows.rows], reference, errors)
        elif target.self_references.get(kind):
            # an unmodelled self-reference of the target (MJ's AIAgent.ParentID, AIAgentRun.ParentRunID)
            reference = target.self_references[kind][0]
            order = _parents_first(rows, [extras.get(reference) for extras in rows.extras], reference, errors)
        else:
            order = range(len(rows.rows))
        ordered[kind] = [(rows.rows[i], rows.extras[i]) for i in order if rows.lines[i] not in skipped]
    if errors:
        line, message = min(errors)
        raise InputError(f"line {line}: {message}")
    return ordered


def import_records(engine: Engine, source: TextIO | str | os.PathLike[str], now: datetime, drop_unknown_columns: bool = False) -> dict[str, int]:
    """Import a JSON Lines file all-or-nothing; return the rows inserted per kind.

    Missing audit timestamps take `now`. The memctl agent row is skipped when the store has it; any
    other ID already in the store is an error, as is an unmodelled column the target lacks (unless
    `drop_unknown_columns`).
    """
    if now.tzinfo is None:
        raise ValueError("now must be a timezone-aware datetime")
    target = read_target(engine, drop_unknown_columns)
    batch = read_records(source, now.astimezone(timezone.utc), target)
    try:
        with write(engine) as conn:
            ordered = _check_and_order(conn, batch, target)
            for kind in INSERT_ORDER:
                table, names = live_table(conn, KINDS[kind]), RULES[kind].names
                for chunk in chunks(ordered[kind], INSERT_BATCH):
                    # one executemany per set of unmodelled columns given (an omitted one takes its default)
                    by_columns: dict[tuple[str, ...], list[dict[str, Any]]] = {}
                    for row, extras in chunk:
                        by_columns.setdefault(tuple(extras), []).append({**dict(zip(names, row)), **extras})
                    for params in by_columns.values():
                        conn.execute(table.insert(), params)
    except sa.exc.IntegrityError as exc:
        reason = str(exc.orig).strip().splitlines()[0] if exc.orig is not None else type(exc).__name__
        raise InputError(f"the database refused the file, nothing was imported: {reason}") from None
    return {kind: len(ordered[kind]) for kind in KINDS}
