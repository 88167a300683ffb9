"""Run memctl's Alembic migrations from the package: upgrade, offline DDL, current revision.

The migration scripts live in `alembic/` at the repository root and are shipped inside the wheel
as `memctl/_alembic`, so an installed memctl can upgrade a database with no checkout.
"""

from __future__ import annotations

import io
from functools import lru_cache
from pathlib import Path
from typing import Optional

import sqlalchemy as sa
from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from alembic.util.exc import CommandError
from sqlalchemy.engine import Connection, Engine

from memctl.errors import DatabaseError, SchemaBehindError, UsageError
from memctl.settings import Settings
from memctl.store.engine import scrub
from memctl.store.models import VERSION_TABLE

SQL_DIALECTS = ("sqlite", "postgresql", "mssql")


def script_location() -> Path:
    """Return the directory holding env.py and versions/ (packaged copy first, then the checkout)."""
    here = Path(__file__).resolve().parent.parent
    for candidate in (here / "_alembic", here.parent / "alembic"):
        if (candidate / "env.py").is_file():
            return candidate
    raise DatabaseError("memctl's migration scripts are missing from this installation")


def _config(**attributes: object) -> Config:
    cfg = Config(output_buffer=attributes.pop("output_buffer", None), attributes=attributes)
    cfg.set_main_option("script_location", str(script_location()))
    return cfg


@lru_cache(maxsize=1)
def head_revision() -> str:
    head = ScriptDirectory.from_config(_config()).get_current_head()
    assert head is not None
    return head


def is_known(revision: str) -> bool:
    try:
        ScriptDirectory.from_config(_config()).get_revision(revision)
    except CommandError:
        return False
    return True


def require_known(revision: Optional[str], settings: Settings) -> None:
    """Refuse a database whose revision this memctl does not ship (a newer memctl upgraded it)."""
    if revision is not None and not is_known(revision):
        raise DatabaseError(
            f"the database {settings.masked_db_url} is at revision {revision}, which this memctl (head {head_revision()}) "
            "does not know: a newer memctl upgraded it; upgrade memctl"
        )


def _refuse_sqlite_schema(dialect: str, schema: Optional[str]) -> None:
    if schema and dialect == "sqlite":
        raise UsageError("SQLite has no schemas: leave db_schema unset for SQLite databases")


def create_schema_sql(dialect: str, schema: str) -> str:
    """Return the statement that creates `schema` when it does not exist yet."""
    if dialect == "mssql":
        return f"IF SCHEMA_ID(N'{schema}') IS NULL EXEC(N'CREATE SCHEMA [{schema}]')"
    if dialect == "sqlite":
        raise UsageError("SQLite has no schemas: leave db_schema unset for SQLite databases")
    return f'CREATE SCHEMA IF NOT EXISTS "{schema}"'


def current_revision(conn: Connection, schema: Optional[str]) -> Optional[str]:
    """Return the database's migration revision, or None when memctl never upgraded it."""
    ctx = MigrationContext.configure(conn, opts={"version_table": VERSION_TABLE, "version_table_schema": schema})
    return ctx.get_current_revision()


def upgrade(engine: Engine, settings: Settings, revision: str = "head") -> tuple[Optional[str], str]:
    """Upgrade the database to `revision`; return (revision before, revision after)."""
    schema = settings.db_schema
    _refuse_sqlite_schema(engine.dialect.name, schema)
    with engine.connect() as conn:
        before = current_revision(conn, schema)
        conn.commit()
        require_known(before, settings)
        if schema:
            with conn.begin():
                conn.exec_driver_sql(create_schema_sql(engine.dialect.name, schema))
        command.upgrade(_config(connection=conn, schema=schema), revision)
        conn.commit()
        after = current_revision(conn, schema)
        conn.commit()
    return before, after or ""


def upgrade_sql(dialect: str, schema: Optional[str], revision: str = "head") -> str:
    """Return the DDL that upgrades an empty database of `dialect` to `revision` (Alembic offline mode)."""
    if dialect not in SQL_DIALECTS:
        raise UsageError(f"--dialect must be one of {', '.join(SQL_DIALECTS)} (got {dialect!r})")
    _refuse_sqlite_schema(dialect, schema)
    buffer = io.StringIO()
    command.upgrade(_config(dialect=dialect, schema=schema, output_buffer=buffer), revision, sql=True)
    return buffer.getvalue()


def database_upgrade_sql(engine: Engine, settings: Settings, dialect: Optional[str] = None) -> str:
    """Return the statements `upgrade` would run here ("" at head), writing nothing.

    The migrations get an inspector of the live database, so an existing MemberJunction database gets
    its adoption statements, not a full CREATE script. `dialect` renders them for another backend.
    """
    schema = settings.db_schema
    _refuse_sqlite_schema(engine.dialect.name, schema)
    with engine.connect() as conn:
        before = current_revision(conn, schema)
        require_known(before, settings)
        if before == head_revision():
            return ""
        buffer = io.StringIO()
        cfg = _config(dialect=dialect or engine.dialect.name, schema=schema, output_buffer=buffer, inspector=sa.inspect(conn))
        command.upgrade(cfg, f"{before}:head" if before else "head", sql=True)
    return buffer.getvalue()


def ensure_ready(engine: Engine, settings: Settings) -> None:
    """Make sure the database is at head: upgrade the embedded SQLite default, refuse the others."""
    try:
        with engine.connect() as conn:
            revision = current_revision(conn, settings.db_schema)
    except sa.exc.DBAPIError as exc:
        reason = str(exc.orig).strip().splitlines()[0] if exc.orig is not None else str(exc)
        raise DatabaseError(f"cannot read the schema version of {settings.masked_db_url}: {scrub(reason, settings)}") from None
    if revision == head_revision():
        return
    require_known(revision, settings)
    if settings.db_auto_upgrade or (engine.dialect.name == "sqlite" and (revision is None or settings.is_embedded_default)):
        upgrade(engine, settings)
        return
    state = "has no memctl schema" if revision is None else f"is at revision {revision}, not {head_revision()}"
    raise SchemaBehindError(f"the database {settings.masked_db_url} {state}: run `memctl db upgrade` first")
