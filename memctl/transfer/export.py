"""Export: every row of the selected kinds as one canonical JSON line, in ID order, from one snapshot."""

from __future__ import annotations

import base64
import json
import math
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import date, datetime, time, timezone
from decimal import Decimal
from typing import Any, TextIO

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from memctl.errors import UsageError
from memctl.store import models
from memctl.store.live import live_table
from memctl.transfer.kinds import KINDS

EXPORT_BATCH = 1000  # rows fetched per round trip while exporting


def export_records(engine: Engine, out: TextIO, kinds: Sequence[str] | None = None) -> dict[str, int]:
    """Write every row of the selected kinds to `out`, one JSON object a line; return rows per kind."""
    selected = _select_kinds(kinds)
    counts: dict[str, int] = {}
    with _snapshot(engine) as conn:
        for kind in selected:
            model = KINDS[kind]
            table = live_table(conn, model)
            encoders = [(column.name, _encoder(column, column.name in model.c)) for column in table.columns]
            stmt = sa.select(table).order_by(_id_order(conn, table))
            result = conn.execution_options(yield_per=EXPORT_BATCH).execute(stmt)
            count = 0
            for rows in result.partitions():
                out.write("".join(_export_line(kind, encoders, row) for row in rows))
                count += len(rows)
            counts[kind] = count
    return counts


def _select_kinds(kinds: Sequence[str] | None) -> list[str]:
    if kinds is None:
        return list(KINDS)
    unknown = [kind for kind in kinds if kind not in KINDS]
    if unknown:
        raise UsageError(f"unknown kind {unknown[0]!r}: expected one of {', '.join(KINDS)}")
    return [kind for kind in KINDS if kind in kinds]


@contextmanager
def _snapshot(engine: Engine) -> Iterator[Connection]:
    """Open one read transaction that sees a single snapshot of every table (REPEATABLE READ on Postgres)."""
    with engine.connect() as conn:
        if conn.dialect.name == "postgresql":
            conn = conn.execution_options(isolation_level="REPEATABLE READ")
        with conn.begin():
            yield conn


def _id_order(conn: Connection, table: sa.Table) -> sa.ColumnElement[Any]:
    # SQL Server sorts uniqueidentifier by its last byte group first; its text sorts like other backends'.
    if conn.dialect.name == "mssql":
        return sa.cast(table.c.ID, sa.Unicode(36))
    return table.c.ID


def _export_line(kind: str, encoders: list[tuple[str, Callable[[Any], Any]]], row: sa.Row[Any]) -> str:
    record: dict[str, Any] = {"kind": kind}
    for (name, encode), value in zip(encoders, row):
        record[name] = None if value is None else encode(value)
    # ASCII-only output: the file is byte-identical whatever encoding the stream uses.
    return json.dumps(record, separators=(",", ":")) + "\n"


def _encoder(column: sa.Column[Any], modelled: bool) -> Callable[[Any], Any]:
    """Return the JSON encoding of a column; one memctl does not model is chosen by its reflected type."""
    column_type = column.type
    if isinstance(column_type, models.UTCDateTime):
        return _encode_timestamp
    if isinstance(column_type, sa.LargeBinary):
        return _encode_binary
    if isinstance(column_type, sa.Uuid):
        return _encode_uuid
    if isinstance(column_type, sa.DateTime):
        return _encode_any_timestamp
    if isinstance(column_type, sa.Boolean):
        return bool
    if isinstance(column_type, sa.Integer):
        return int
    if isinstance(column_type, sa.Float):
        return float
    if isinstance(column_type, sa.Numeric):
        # a modelled Decimal(5, 2) value has a shortest float repr equal to its decimal text
        return float if modelled else _encode_decimal
    if isinstance(column_type, sa.String):
        return str
    if modelled:
        raise TypeError(f"no export rule for {column.table.name}.{column.name} ({column_type!r})")
    return _encode_value


def _encode_binary(value: Any) -> str:
    return base64.b64encode(bytes(value)).decode("ascii")


def _encode_any_timestamp(value: datetime) -> str:
    # a column without a time zone keeps its naive value; an aware one is written in UTC
    return value.isoformat(timespec="microseconds") if value.tzinfo is None else _encode_timestamp(value)


def _encode_decimal(value: Any) -> Any:
    """Return a decimal as a JSON number when a float says it exactly, else as its text."""
    if isinstance(value, float):
        return value
    number = Decimal(value)
    as_float = float(number)
    return as_float if math.isfinite(as_float) and Decimal(repr(as_float)) == number else str(number)


def _encode_value(value: Any) -> Any:
    """Encode a value of a type reflection could not name (e.g. SQLite's untyped columns)."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return _encode_binary(value)
    if isinstance(value, datetime):
        return _encode_any_timestamp(value)
    if isinstance(value, (date, time)):
        return value.isoformat()
    if isinstance(value, Decimal):
        return _encode_decimal(value)
    if isinstance(value, uuid.UUID):
        return str(value)
    return value


def _encode_uuid(value: Any) -> str:
    # SQLAlchemy hands back the hyphenated form; only its case varies by backend (SQL Server).
    if isinstance(value, str) and len(value) == 36:
        return value.lower()
    return str(uuid.UUID(str(value)))


def _encode_timestamp(value: datetime) -> str:
    return value.astimezone(timezone.utc).isoformat(timespec="microseconds")
