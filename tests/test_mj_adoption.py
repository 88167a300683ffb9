"""Running on a MemberJunction database: the fixture follows MJ's migrations; adoption leaves MJ's objects alone.

The MJ database is tests/mj_fixture.py (newest and older MJ, on PostgreSQL; its SQL Server DDL
is rendered as text, there is no server here).
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
import sqlalchemy as sa

from conftest import PG_URL, MjDb
from mj_fixture import MJ_TABLES, NEWEST_ONLY, catalog, mj_database, mj_ddl

pytestmark = pytest.mark.postgres


@pytest.mark.parametrize("version", ["newest", "older"])
def test_the_fixture_builds_mj_tables_with_checks_fks_indexes_and_triggers(pg_schema: str, version: str) -> None:
    engine = sa.create_engine(PG_URL)
    mj_database(engine, pg_schema, version)
    objects = catalog(engine, pg_schema)
    note = objects["AIAgentNote"]
    assert all(objects[t]["triggers"] for t in MJ_TABLES)
    assert ("AIAgentNote_ConsolidatedIntoNoteID_fkey" in note["constraints"]) == (version == "newest")
    assert set(NEWEST_ONLY["AIAgentNote"]) <= set(note["columns"]) if version == "newest" else not set(NEWEST_ONLY["AIAgentNote"]) & set(note["columns"])
    assert "Archived" not in objects["AIAgentExample"]["constraints"]["AIAgentExample_Status_check"]
    fk_index = "idx_auto_mj_fkey_ai_agent_note_agent_id" if version == "newest" else "IDX_AUTO_MJ_FKEY_AIAgentNote_AgentID"
    assert fk_index in note["indexes"]
    agent, user = str(uuid.uuid4()), str(uuid.uuid4())
    with engine.begin() as conn:
        s = pg_schema
        conn.exec_driver_sql(f"""INSERT INTO "{s}"."AIAgent" ("ID", "Name") VALUES ('{agent}', 'Sage')""")
        conn.exec_driver_sql(f"""INSERT INTO "{s}"."User" ("ID", "Name", "Email", "Type") VALUES ('{user}', 'Ann', 'ann@example.com', 'User')""")
        conn.exec_driver_sql(f"""INSERT INTO "{s}"."AIAgentNote" ("AgentID", "UserID", "Note", "__mj_UpdatedAt") VALUES ('{agent}', '{user}', 'likes tea', '2020-01-01Z')""")
        conn.exec_driver_sql(f"""UPDATE "{s}"."AIAgentNote" SET "Note" = 'likes green tea', "__mj_UpdatedAt" = '2020-01-01Z'""")
        stamped = conn.exec_driver_sql(f"""SELECT "__mj_UpdatedAt" FROM "{s}"."AIAgentNote" """).scalar_one()
        assert stamped.year > 2020  # MJ's trigger overwrote the value the UPDATE wrote
    with pytest.raises(sa.exc.IntegrityError):
        with engine.begin() as conn:
            conn.exec_driver_sql(f"""INSERT INTO "{pg_schema}"."AIAgentExample" ("AgentID", "ExampleInput", "ExampleOutput", "Status") VALUES ('{agent}', 'q', 'a', 'Archived')""")
    engine.dispose()


@pytest.mark.parametrize("version", ["newest", "older"])
def test_the_fixture_renders_for_sql_server(version: str) -> None:
    ddl = "\n;\n".join(mj_ddl("mssql", "__mj", version))
    assert "CREATE TRIGGER [__mj].trgUpdateAIAgentNote" in ddl and "__mj_UpdatedAt = GETUTCDATE()" in ddl
    assert "CREATE INDEX [IDX_AUTO_MJ_FKEY_AIAgentNote_AgentID] ON __mj.[AIAgentNote] ([AgentID])" in ddl
    assert "[__mj_UpdatedAt] DATETIMEOFFSET NOT NULL DEFAULT GETUTCDATE()" in ddl
    assert "CHECK ([Status] IN ('Active', 'Pending', 'Revoked'))" in ddl
    assert ("[EmbeddingVectorBinary] VARBINARY(max) NULL" in ddl) == (version == "newest")
    assert ("CHECK ([ProtectionTier] IN ('Immutable', 'Protected', 'Standard', 'Ephemeral'))" in ddl) == (version == "newest")


def test_mj_db_fixture_yields_an_upgraded_store(mj_db: MjDb) -> None:
    tables = set(sa.inspect(mj_db.engine).get_table_names(schema=mj_db.settings.db_schema))
    assert {"memctl_change", "AIAgentNote"} <= tables
