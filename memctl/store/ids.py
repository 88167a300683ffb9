"""How GUIDs are compared and read on each backend: the one place that knows SQLite's spellings.

SQLite keeps a GUID as text that another application may have written upper-case or dashed, so every
lookup by ID outside store/ goes through `id_in` / `guid_in`, every GUID scan through `readable`.
"""

from __future__ import annotations

import re
import uuid
from functools import lru_cache
from typing import Any, Callable, Iterator, Optional, Sequence, TypeVar

import sqlalchemy as sa

T = TypeVar("T")
CHUNK = 500  # IDs per IN-list and rows per archive batch: well under SQL Server's ~2,100 parameters per statement


def chunks(items: Sequence[T], size: int = CHUNK) -> Iterator[Sequence[T]]:
    """Yield `items` in slices of at most `size`, for batched IN-lists."""
    for start in range(0, len(items), size):
        yield items[start : start + size]


def on_sqlite(bind: Any) -> bool:
    """Say whether `bind` (an engine, a connection or a dialect) is SQLite."""
    return getattr(bind, "dialect", bind).name == "sqlite"


def id_spellings(record_id: str) -> list[str]:
    """The ways a GUID may be stored as text on SQLite: 32 hex digits or dashed, in either case."""
    hexed = uuid.UUID(record_id).hex
    dashed = str(uuid.UUID(hexed))
    return [hexed, hexed.upper(), dashed, dashed.upper()]


def id_in(table: sa.Table, ids: Sequence[str], bind: Any, plain: bool = False) -> sa.ColumnElement[bool]:
    """SQL: the row's ID is one of `ids`; on SQLite as text in every spelling (only SQLAlchemy's with `plain`)."""
    return guid_in(table.c.ID, ids, bind, plain)


def guid_in(column: sa.ColumnElement[Any], ids: Sequence[str], bind: Any, plain: bool = False) -> sa.ColumnElement[bool]:
    """SQL: the GUID column's value is one of `ids`, as `id_in` compares a row's ID."""
    if not on_sqlite(bind):
        return column.in_(ids)
    return sa.type_coerce(column, sa.String).in_(id_texts(ids, plain))


def id_texts(ids: Sequence[str], plain: bool) -> list[str]:
    """The texts a SQLite row's ID is looked up by (an ID that is no GUID: as given)."""
    return [t for i in ids for t in (_spelled(i, plain) or [i])]


def _spelled(record_id: str, plain: bool) -> Optional[list[str]]:
    try:
        return [uuid.UUID(record_id).hex] if plain else id_spellings(record_id)
    except ValueError:
        return None


_HEX32 = re.compile(r"[0-9a-fA-F]{32}")


@lru_cache(maxsize=1 << 16)
def sqlite_guid(value: Optional[str]) -> Optional[str]:
    """A GUID column's stored SQLite text as SQLAlchemy's Uuid type reads it (lower-case, dashed)."""
    if value is None:
        return None
    if _HEX32.fullmatch(value):
        low = value.lower()
        return f"{low[:8]}-{low[8:12]}-{low[12:16]}-{low[16:20]}-{low[20:]}"
    return str(uuid.UUID(value))


def as_stored(column: sa.ColumnElement[Any], bind: Any) -> sa.ColumnElement[Any]:
    """The GUID column as the store holds it: on SQLite its text, in whatever spelling it was written."""
    return sa.type_coerce(column, sa.String) if on_sqlite(bind) else column


def guid_reader(bind: Any) -> Callable[[Any], Optional[str]]:
    """A function from a GUID read through `as_stored` to its lower-case dashed text."""
    if on_sqlite(bind):
        return sqlite_guid
    return lambda value: None if value is None else str(value).lower()


def readable(columns: Sequence[sa.ColumnElement[Any]], bind: Any) -> tuple[list[sa.ColumnElement[Any]], list[str]]:
    """Return the columns to select for a large scan and the GUID columns the caller spells with `sqlite_guid`.

    On SQLite those are read as text: SQLAlchemy's Uuid processing builds a slow uuid.UUID per value."""
    if not on_sqlite(bind):
        return list(columns), []
    fast = [c.name for c in columns if isinstance(c.type, sa.Uuid)]
    return [sa.type_coerce(c, sa.String).label(c.name) if c.name in fast else c for c in columns], fast


def by_id_status(column: sa.ColumnElement[Any], bind: Any) -> sa.ColumnElement[Any]:
    """The Status column for a query that also names IDs: on SQLite an expression, or it would
    take the Status index and read every Active note for each chunk of IDs."""
    return column.concat("") if on_sqlite(bind) else column


def other_spelling(conn: sa.Connection, table: sa.Table, wanted: str) -> Optional[str]:
    """The stored ID of `wanted`'s row on SQLite, in whatever spelling (elsewhere None)."""
    if not on_sqlite(conn):
        return None
    found = conn.execute(sa.select(sa.type_coerce(table.c.ID, sa.String)).where(guid_in(table.c.ID, [wanted], conn))).scalar()
    return None if found is None else str(found)
