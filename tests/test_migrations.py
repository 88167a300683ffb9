"""The schema: Alembic creates it on every backend, matches the models, renders for SQL Server.

Adopting a MemberJunction database is tests/test_mj_adoption.py, on tests/mj_fixture.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext

from conftest import Db, make_db
from memctl.errors import SchemaBehindError
from memctl.settings import replace
from memctl.store import models as m
from memctl.store import schema
from memctl.store.engine import make_engine


def test_upgrade_creates_every_table_at_head(db: Db) -> None:
    inspector = sa.inspect(db.engine)
    tables = set(inspector.get_table_names(schema=db.settings.db_schema))
    assert set(m.MJ_TABLES) | set(m.MEMCTL_TABLES) | {m.VERSION_TABLE} <= tables
    with db.engine.connect() as conn:
        assert schema.current_revision(conn, db.settings.db_schema) == schema.head_revision()


def test_upgrade_twice_is_a_no_op(db: Db) -> None:
    before, after = schema.upgrade(db.engine, db.settings)
    assert before == after == schema.head_revision()


def test_models_and_migrations_do_not_drift(db: Db) -> None:
    with db.engine.connect() as conn:
        if db.settings.db_schema:
            conn.exec_driver_sql(f'SET search_path TO "{db.settings.db_schema}"')
        ctx = MigrationContext.configure(conn, opts={"compare_type": True, "version_table": m.VERSION_TABLE})
        diffs = [d for d in compare_metadata(ctx, m.metadata) if not (isinstance(d, tuple) and d[0] == "remove_table" and d[1].name == m.VERSION_TABLE)]
    assert diffs == []


def test_mssql_ddl_has_the_self_fk_and_the_protection_tier_check() -> None:
    ddl = schema.upgrade_sql("mssql", "__mj")
    assert "IF SCHEMA_ID(N'__mj') IS NULL" in ddl
    assert "CONSTRAINT [FK_AIAgentNote_ConsolidatedIntoNote] FOREIGN KEY([ConsolidatedIntoNoteID]) REFERENCES __mj.[AIAgentNote] ([ID])" in ddl
    assert "CONSTRAINT [CK_AIAgentNote_ProtectionTier] CHECK ([ProtectionTier] IN ('Immutable', 'Protected', 'Standard', 'Ephemeral'))" in ddl
    assert "UNIQUEIDENTIFIER" in ddl and "DATETIMEOFFSET" in ddl and "NVARCHAR(max)" in ddl
    assert "NTEXT" not in ddl and "CREATE TABLE __mj.memctl_alembic_version" in ddl


def test_postgresql_and_sqlite_ddl_render() -> None:
    pg = schema.upgrade_sql("postgresql", "__mj")
    assert 'CREATE SCHEMA IF NOT EXISTS "__mj"' in pg and 'CREATE TABLE __mj."AIAgentNote"' in pg
    assert "TIMESTAMP WITH TIME ZONE" in pg and "UUID" in pg
    lite = schema.upgrade_sql("sqlite", None)
    assert 'CREATE TABLE "AIAgentNote"' in lite and "memctl_alembic_version" in lite


def test_a_database_behind_head_is_refused_with_the_command_to_run(pg_schema: str, tmp_path: Path) -> None:
    store = make_db("postgresql", tmp_path, schema=pg_schema, migrate=False)
    with pytest.raises(SchemaBehindError, match="memctl db upgrade"):
        schema.ensure_ready(store.engine, store.settings)


def test_the_embedded_sqlite_store_is_upgraded_automatically(tmp_path: Path) -> None:
    store = make_db("sqlite", tmp_path, migrate=False)
    schema.ensure_ready(store.engine, store.settings)
    with store.engine.connect() as conn:
        assert schema.current_revision(conn, None) == schema.head_revision()


def test_sqlite_refuses_a_schema_name(tmp_path: Path) -> None:
    store = make_db("sqlite", tmp_path, migrate=False)
    from memctl.errors import UsageError

    with pytest.raises(UsageError, match="SQLite has no schemas"):
        schema.upgrade(make_engine(store.settings), replace(store.settings, db_schema="x"))
