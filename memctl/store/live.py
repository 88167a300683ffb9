"""The tables as the database has them, including the columns memctl does not model.

A MemberJunction database has more columns than memctl's models; export, import and created notes
need them, so `live_table` reflects the real table once per engine. Like the models, it is declared
without a schema (the engine's schema translation applies it).
"""

from __future__ import annotations

import threading
import weakref
from typing import Any, Optional

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

_cache: "weakref.WeakKeyDictionary[Engine, dict[str, sa.Table]]" = weakref.WeakKeyDictionary()
_self_refs: "weakref.WeakKeyDictionary[Engine, dict[str, list[str]]]" = weakref.WeakKeyDictionary()
_mutex = threading.Lock()


def translated_schema(conn: Connection) -> Optional[str]:
    """Return the schema the connection's engine puts the models in (None: the default one)."""
    return (conn.get_execution_options().get("schema_translate_map") or {}).get(None)


def _plain(column_type: Any) -> Any:
    """Return a reflected type as memctl binds it: GUIDs as their text, like the models' columns."""
    return sa.Uuid(as_uuid=False) if isinstance(column_type, sa.Uuid) else column_type


def _reflect(conn: Connection, model: sa.Table) -> sa.Table:
    found = sa.inspect(conn).get_columns(model.name, schema=translated_schema(conn))
    modelled = {c.name for c in model.columns}
    extras = [
        sa.Column(
            info["name"], _plain(info["type"]), nullable=bool(info.get("nullable", True)),
            server_default=sa.text(str(info["default"])) if info.get("default") is not None else None,
        )
        for info in found
        if info["name"] not in modelled
    ]
    columns = [sa.Column(c.name, c.type, primary_key=c.primary_key, nullable=c.nullable, server_default=c.server_default) for c in model.columns]
    return sa.Table(model.name, sa.MetaData(), *columns, *extras)


def live_table(conn: Connection, model: sa.Table) -> sa.Table:
    """Return `model` extended by the columns the database's table has and memctl does not model.

    Reflected once per engine; modelled columns keep the model's types.
    """
    with _mutex:
        tables = _cache.setdefault(conn.engine, {})
        table = tables.get(model.name)
    if table is None:
        table = _reflect(conn, model)
        with _mutex:
            tables[model.name] = table
    return table


def extra_columns(table: sa.Table, model: sa.Table) -> list[sa.Column[Any]]:
    """Return the columns of the live `table` that `model` does not declare, in table order."""
    modelled = {c.name for c in model.columns}
    return [c for c in table.columns if c.name not in modelled]


def self_references(conn: Connection, model: sa.Table) -> list[str]:
    """Return the table's single-column foreign keys to itself (reflected once per engine)."""
    engine = conn.engine
    with _mutex:
        found = _self_refs.setdefault(engine, {}).get(model.name)
    if found is None:
        keys = sa.inspect(conn).get_foreign_keys(model.name, schema=translated_schema(conn))
        found = [fk["constrained_columns"][0] for fk in keys if fk["referred_table"] == model.name and len(fk["constrained_columns"]) == 1]
        with _mutex:
            _self_refs[engine][model.name] = found
    return found
