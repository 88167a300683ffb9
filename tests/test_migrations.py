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
from factory import NOW
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


@pytest.mark.parametrize("backend", ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def test_a_store_at_0001_gets_the_pause_table_and_keeps_its_rows(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    """Issue 28's migration: 0001 -> 0002 adds memctl_pause and nothing else; `--sql` on such a store renders only that."""
    store = make_db(backend, tmp_path, schema=request.getfixturevalue("pg_schema") if backend == "postgresql" else None, migrate=False)
    schema.upgrade(store.engine, store.settings, "0001")
    row = {"CacheKey": "k" * 64, "Kind": "contradiction", "Model": "m", "Reply": "{}", "CreatedAt": NOW}
    with store.engine.begin() as conn:
        conn.execute(m.verdict.insert().values(**row))
    script = schema.database_upgrade_sql(store.engine, store.settings)
    assert "memctl_pause" in script and "AIAgentNote" not in script and "memctl_verdict" not in script
    mssql = schema.database_upgrade_sql(store.engine, store.settings, "mssql")
    assert "[AskAgainAt] DATETIMEOFFSET NOT NULL" in mssql and "version_num='0002'" in mssql
    before, after = schema.upgrade(store.engine, store.settings)
    assert (before, after) == ("0001", "0002") == ("0001", schema.head_revision())
    tables = set(sa.inspect(store.engine).get_table_names(schema=store.settings.db_schema))
    assert "memctl_pause" in tables
    with store.engine.connect() as conn:
        assert conn.execute(sa.select(m.verdict.c.CacheKey)).scalars().all() == [row["CacheKey"]]
    store.engine.dispose()


def test_mssql_ddl_of_the_pause_migration() -> None:
    ddl = schema.upgrade_sql("mssql", "__mj", "0001:0002")
    assert "CREATE TABLE __mj.memctl_pause (" in ddl and "[CacheKey] NVARCHAR(64) NOT NULL" in ddl and "PRIMARY KEY ([CacheKey])" in ddl
    assert "[Reason] NVARCHAR(max) NULL" in ddl and "NTEXT" not in ddl
    assert "AIAgentNote" not in ddl and "UPDATE __mj.memctl_alembic_version SET version_num='0002'" in ddl


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
