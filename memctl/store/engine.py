"""One engine per invocation, configured for the backend, with the schema applied by translation."""

from __future__ import annotations

import functools
import re
from contextlib import contextmanager
from datetime import datetime, timezone
from typing import Any, Iterator

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.engine import Connection, Engine

from memctl.errors import DatabaseError
from memctl.settings import Settings, mask_secrets, mask_url

SQLITE_BUSY_TIMEOUT_MS = 30_000
#: WAL pages after which a commit of memctl's checkpoints (SQLite's default is 1,000)
SQLITE_WAL_CHECKPOINT_PAGES = 10_000


def make_engine(settings: Settings) -> Engine:
    """Create the engine for `settings.db_url`, with `settings.db_schema` applied to every table."""
    url = sa.engine.make_url(settings.db_url)
    # Statement parameters hold note texts: never let an error message carry them.
    kwargs: dict = {"future": True, "hide_parameters": True}
    if url.get_backend_name() == "sqlite":
        kwargs["connect_args"] = {"timeout": SQLITE_BUSY_TIMEOUT_MS / 1000, "check_same_thread": False}
    else:
        kwargs["pool_pre_ping"] = True
    try:
        engine = sa.create_engine(url, **kwargs)
    except ImportError as exc:
        raise DatabaseError(f"no driver for {mask_url(settings.db_url)}: {exc} (install the matching extra, e.g. memctl[postgres] or memctl[mssql])") from None
    except Exception as exc:
        raise DatabaseError(f"invalid database URL {mask_url(settings.db_url)}: {scrub(str(exc), settings)}") from None
    if url.get_backend_name() == "sqlite":
        _configure_sqlite(engine)
    elif engine.dialect.driver == "psycopg":
        _configure_psycopg(engine)
    if settings.db_schema:
        engine = engine.execution_options(schema_translate_map={None: settings.db_schema})
    return engine


def _configure_sqlite(engine: Engine) -> None:
    """Use WAL (synchronous NORMAL), enforce foreign keys, and take the write lock up front in writes.

    Writes use BEGIN IMMEDIATE: a deferred read-then-write transaction would fail with
    SQLITE_BUSY_SNAPSHOT when another connection committed in between.
    """

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection, _record) -> None:  # type: ignore[no-untyped-def]
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute(f"PRAGMA busy_timeout = {SQLITE_BUSY_TIMEOUT_MS}")
        cursor.execute("PRAGMA foreign_keys = ON")
        if engine.url.database not in (None, "", ":memory:"):
            cursor.execute("PRAGMA journal_mode = WAL")
            # NORMAL syncs at checkpoints, not every commit. A power cut may roll back the last
            # units (each whole, with its change-log rows), which the next run redoes.
            cursor.execute("PRAGMA synchronous = NORMAL")
            # Fewer checkpoints of the same hot pages while a dream commits thousands of small units.
            cursor.execute(f"PRAGMA wal_autocheckpoint = {SQLITE_WAL_CHECKPOINT_PAGES}")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        write = conn.get_execution_options().get("memctl_write", False)
        conn.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")


def _configure_psycopg(engine: Engine) -> None:
    """Read PostgreSQL's 'infinity' / '-infinity' and out-of-range timestamps as the last / first datetime.

    psycopg refuses to load them (e.g. ExpiresAt = 'infinity'), which would fail every phase reading the row.
    """

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection, _record) -> None:  # type: ignore[no-untyped-def]
        for name in ("timestamptz", "timestamp"):
            dbapi_connection.adapters.register_loader(name, _bounded_loader(name))


@functools.cache
def _bounded_loader(name: str) -> type:
    from psycopg import DataError, adapters, pq
    from psycopg.adapt import Loader
    from psycopg.postgres import types

    base = adapters.get_loader(types[name].oid, pq.Format.TEXT)  # the C loader with psycopg[binary]
    assert base is not None
    tz = timezone.utc if name == "timestamptz" else None
    top, bottom = datetime.max.replace(tzinfo=tz), datetime.min.replace(tzinfo=tz)

    class BoundedLoader(Loader):
        def __init__(self, oid: int, context: Any = None) -> None:
            super().__init__(oid, context)
            self._inner = base(oid, context)  # the C loader cannot be subclassed: delegate to it

        def load(self, data: Any) -> datetime:
            raw = bytes(data)
            if raw == b"infinity":
                return top
            if raw == b"-infinity":
                return bottom
            try:
                return self._inner.load(data)
            except DataError:
                return bottom if raw.endswith(b" BC") or raw.startswith(b"0") else top

    return BoundedLoader


@contextmanager
def write(engine: Engine) -> Iterator[Connection]:
    """Open one write transaction (a unit of work): committed on success, rolled back on error."""
    with engine.connect() as conn:
        conn = conn.execution_options(memctl_write=True)
        with conn.begin():
            yield conn


@contextmanager
def read(engine: Engine) -> Iterator[Connection]:
    with engine.connect() as conn, conn.begin():
        yield conn


def check_connection(engine: Engine, settings: Settings) -> None:
    """Connect once, turning driver errors into a DatabaseError with the password masked."""
    try:
        with engine.connect() as conn:
            conn.exec_driver_sql("SELECT 1")
    except sa.exc.DBAPIError as exc:
        reason = str(exc.orig).strip().splitlines()[0] if exc.orig is not None else str(exc)
        raise DatabaseError(f"cannot connect to {settings.masked_db_url}: {scrub(reason, settings)}") from None
    except sa.exc.ArgumentError as exc:
        raise DatabaseError(f"invalid database URL {settings.masked_db_url}: {scrub(str(exc), settings)}") from None


def scrub(text: str, settings: Settings) -> str:
    """Remove every secret of `settings` (and any URL password) from `text`."""
    text = mask_secrets(text, settings.secrets())
    return re.sub(r"(://[^:/@\s]*:)[^@\s]*@", r"\1***@", text)
