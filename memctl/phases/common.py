"""Helpers the phases share: scope filters, batching, archive units, reference lookups."""

from __future__ import annotations

from typing import Any, Iterable, Iterator, Mapping, Optional, Sequence

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from memctl.context import Scope
from memctl.plan import Mutation, Unit, guard_of
from memctl.records import note_record
from memctl.similarity import partition_key, stable_hash
from memctl.store import models as m
from memctl.store.capabilities import Refusal
from memctl.store.changes import to_db_values
from memctl.store.ids import chunks, guid_in, id_in, readable, sqlite_guid


def agent_filter(table: sa.Table, scope: Scope, bind: Any) -> list[sa.ColumnElement[bool]]:
    """Return the SQL condition that limits rows to `--agent`, if given."""
    return [guid_in(table.c.AgentID, [scope.agent_id], bind)] if scope.agent_id else []


def in_shard(row: Mapping[str, Any], scope: Scope) -> bool:
    """Return whether a note or example row belongs to this invocation's shard.

    A row's shard is its partition's stable hash mod n, so a partition and all of its rows are
    handled by exactly one of n workers, whatever the phase.
    """
    if scope.shard is None:
        return True
    index, count = scope.shard
    values = {"PrimaryScopeEntityID": None, "PrimaryScopeRecordID": None, "SecondaryScopes": None, "Type": "", "Note": "", **row}
    return stable_hash(partition_key(note_record(values, with_vector=False))) % count == index


def as_planned(row: dict[str, Any], changed: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """Return a note row with the values earlier plans of a dry-run set on it (`Overlay.changed`)."""
    values = changed.get(str(row["ID"]).lower())
    return {**row, **to_db_values(m.note, values)} if values else row


def lookup_ids(conn: Connection, table: sa.Table, ids: Iterable[str], columns: Sequence[str] = ("ID",)) -> dict[str, Mapping[str, Any]]:
    """Fetch the rows of `table` whose ID is in `ids`: one query per chunk of the IN-list."""
    wanted = sorted({str(i).lower() for i in ids if i is not None})
    found: dict[str, Mapping[str, Any]] = {}
    for chunk in chunks(wanted):
        query = sa.select(*[table.c[c] for c in columns]).where(id_in(table, chunk, conn))
        for row in conn.execute(query).mappings():
            found[str(row["ID"]).lower()] = row
    return found


def archive_units(table: str, rows: Sequence[tuple[Mapping[str, Any], str, str]], kind: str = "archive", status: str = "Archived") -> list[Unit]:
    """Build batches of independent archivals: (row, action, comment) -> non-atomic units setting `status`."""
    units = []
    for number, batch in enumerate(chunks(list(rows)), start=1):
        mutations = tuple(
            Mutation(
                table=table,
                record_id=str(row["ID"]).lower(),
                action=action,
                values={"Status": status} if action == "archive" else {},
                comment=comment,
                guard=guard_of(table, row),
            )
            for row, action, comment in batch
        )
        units.append(Unit(kind=kind, key=f"{kind}:{table}:{number}", reason=f"{kind} batch {number}", mutations=mutations, atomic=False))
    return units


def within_refusal(
    rows: Sequence[tuple[Mapping[str, Any], str, str]], refusal: Optional[Refusal], result: Any
) -> tuple[str, list[tuple[Mapping[str, Any], str, str]]]:
    """Fit planned archivals to a database that refuses Status 'Archived' (memctl/store/capabilities.py).

    Return the status to write and the (row, action, comment) list: archivals take the database's
    nearest allowed status, said in Comments, or are dropped when it has none. The refusal and its
    row count are added to `result.refused`.
    """
    if refusal is None:
        return "Archived", list(rows)
    archivals = sum(1 for _, action, _ in rows if action == "archive")
    result.refused = [*(result.refused or ()), {**refusal.to_dict(), "rows": archivals}]
    if refusal.instead is None:
        return "Archived", [r for r in rows if r[1] != "archive"]
    prefix = f"Archived as {refusal.instead} (the database's Status check refuses 'Archived')"
    fitted = [(row, action, f"{prefix}: {comment.removeprefix('Archived: ')}" if action == "archive" else comment) for row, action, comment in rows]
    return refusal.instead, fitted


def plural(count: int, word: str) -> str:
    """Return '1 note' / '2 notes'."""
    return f"{count} {word}" + ("" if count == 1 else "s")


def read_rows(conn: Connection, columns: Sequence[sa.Column], where: Sequence[Any], order_by: Sequence[Any] = ()) -> Iterator[dict[str, Any]]:
    """Yield the rows of a query on `columns` as plain dicts, values as SQLAlchemy's types read them."""
    selected, fast = readable(columns, conn)
    names = [c.name for c in columns]
    query = sa.select(*selected).where(*where).order_by(*order_by)
    for row in conn.execute(query.execution_options(yield_per=5000)):
        values = dict(zip(names, row))
        for name in fast:
            values[name] = sqlite_guid(values[name])
        yield values
