"""Running on a MemberJunction database: the fixture follows MJ's migrations; adoption leaves MJ's objects alone.

The MJ database is tests/mj_fixture.py (newest and older MJ, on PostgreSQL; its SQL Server DDL
is rendered as text, there is no server here).
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
import sqlalchemy as sa
from typer.testing import CliRunner

from conftest import PG_URL, MjDb, make_mj_db
from factory import NOW, Store, at, days
from memctl import api
from memctl.cli import app
from memctl.store import models as m
from memctl.store import schema
from memctl.store.capabilities import values_allowed
from mj_fixture import MJ_TABLES, NEWEST_ONLY, catalog, mj_database, mj_ddl

runner = CliRunner()
# What `db upgrade` adds to an MJ database older than v5.26 (docs/memberjunction.md).
ADDED_NOTE_COLUMNS = {"ConsolidatedIntoNoteID", "ConsolidationCount", "DerivedFromNoteIDs", "ProtectionTier", "ImportanceScore"}
MEMCTL_OBJECTS = set(m.MEMCTL_TABLES) | {m.VERSION_TABLE}


def _cli(store: MjDb, *args: str):  # type: ignore[no-untyped-def]
    return runner.invoke(app, ["--db-url", PG_URL, "--db-schema", str(store.settings.db_schema), *args])


def _mj_only(tmp_path: Path, pg_schema: str, version: str) -> MjDb:
    """Return an MJ database memctl has not upgraded yet."""
    return make_mj_db(tmp_path, pg_schema, version, migrate=False)


def _statements(script: str) -> list[str]:
    """Return the SQL statements of a script, comment lines left out."""
    text = "\n".join(line for line in script.splitlines() if not line.lstrip().startswith("--"))
    return [s.strip() for s in text.split(";") if s.strip()]


def _seed(store: MjDb) -> dict[str, str]:
    """Insert an agent and a user the way MJ would, and notes / examples for every phase to act on."""
    s = store.settings.db_schema
    ids = {"agent": str(uuid.uuid4()), "user": str(uuid.uuid4()), "gone": str(uuid.uuid4())}
    with store.engine.begin() as conn:
        conn.exec_driver_sql(f"""INSERT INTO "{s}"."AIAgent" ("ID", "Name", "Status") VALUES ('{ids["agent"]}', 'Sage', 'Active')""")
        conn.exec_driver_sql(f"""INSERT INTO "{s}"."User" ("ID", "Name", "Email", "Type", "IsActive") VALUES ('{ids["user"]}', 'Ann', 'ann@example.com', 'User', true)""")
        conn.exec_driver_sql(f"""INSERT INTO "{s}"."User" ("ID", "Name", "Email", "Type", "IsActive") VALUES ('{ids["gone"]}', 'Bob', 'bob@example.com', 'User', false)""")
    st = Store(store.engine)
    # one fact said four ways (distinct invoice numbers would be four facts, kept apart: issue 13)
    for text in ("User prefers email for invoices.", "User prefers email for invoices.",
                 "The user prefers email for invoices.", "User prefers email for invoices and receipts."):
        st.note(text, AgentID=ids["agent"], UserID=ids["user"])
    st.note("User likes tea.", AgentID=ids["agent"], UserID=ids["user"], ExpiresAt=NOW - days(1))
    ids["orphan"] = st.note("User works nights.", AgentID=ids["agent"], UserID=ids["gone"])
    ids["expired_example"] = st.example(AgentID=ids["agent"], ExpiresAt=NOW - days(1))
    ids["stale_example"] = st.example(AgentID=ids["agent"], score=10, accessed_days_ago=400)
    return ids

pytestmark = pytest.mark.postgres


@pytest.mark.parametrize("version", ["newest", "older"])
def test_the_fixture_builds_mj_tables_with_checks_fks_indexes_and_triggers(pg_schema: str, version: str) -> None:
    engine = sa.create_engine(PG_URL)
    mj_database(engine, pg_schema, version)
    objects = catalog(engine, pg_schema)
    note = objects["AIAgentNote"]
    assert all(objects[t]["triggers"] for t in MJ_TABLES)
    assert ("AIAgentNote_ConsolidatedIntoNoteID_fkey" in note["constraints"]) == (version == "newest")
    newest_note_columns = set(NEWEST_ONLY["AIAgentNote"]) - {"AuthoredBy"}  # SQL Server's name for AuthorType
    assert newest_note_columns <= set(note["columns"]) if version == "newest" else not newest_note_columns & set(note["columns"])
    assert ("CK_AIAgentNote_Status" in note["constraints"]) == (version == "newest")
    assert "Archived" not in objects["AIAgentExample"]["constraints"]["AIAgentExample_Status_check"]
    step, run = objects["AIAgentRunStep"]["constraints"], objects["AIAgentRun"]["constraints"]
    assert {"CK_AIAgentRunStep_StepType", "CK_AIAgentRunStep_Status", "CK_AIAgentRunStep_StepNumber"} <= set(step) and "CK_AIAgentRun_Status" in run
    assert ("'Skill'" in step["CK_AIAgentRunStep_StepType"]) == (version == "newest")  # MJ v5.44 added Plan / Skill
    assert "ON DELETE CASCADE" in step["FK_AIAgentRunStep_AgentRunID"] and "ON DELETE SET NULL" in run["FK_AIAgentRun_UserID"]
    fk_index = "idx_auto_mj_fkey_ai_agent_note_agent_id" if version == "newest" else "IDX_AUTO_MJ_FKEY_AIAgentNote_AgentID"
    assert fk_index in note["indexes"] and "WHERE" in note["indexes"]["IX_AIAgentNote_Lifecycle"]
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
    assert "CREATE INDEX [IX_AIAgentExample_ExpiresAt] ON __mj.[AIAgentExample] ([ExpiresAt]) WHERE [ExpiresAt] IS NOT NULL AND [Status] = 'Active'" in ddl
    assert "[__mj_UpdatedAt] DATETIMEOFFSET NOT NULL DEFAULT GETUTCDATE()" in ddl
    assert "CHECK ([Status] IN ('Active', 'Pending', 'Revoked'))" in ddl
    assert ("[EmbeddingVectorBinary] VARBINARY(max) NULL" in ddl) == (version == "newest")
    assert ("CHECK ([ProtectionTier] IN ('Immutable', 'Protected', 'Standard', 'Ephemeral'))" in ddl) == (version == "newest")
    # The SQL Server migration calls the note author column AuthoredBy (PostgreSQL's conversion: AuthorType).
    assert ("CONSTRAINT [CK_AIAgentNote_AuthoredBy] CHECK ([AuthoredBy] IN ('Agent', 'MemoryManager', 'User'))" in ddl) == (version == "newest")
    assert ("CONSTRAINT [CK_AIAgentNote_Status] CHECK ([Status] IN ('Active', 'Pending', 'Revoked', 'Archived', 'Provisional'))" in ddl) == (version == "newest")


def test_mj_db_fixture_yields_an_upgraded_store(mj_db: MjDb) -> None:
    tables = set(sa.inspect(mj_db.engine).get_table_names(schema=mj_db.settings.db_schema))
    assert {"memctl_change", "AIAgentNote"} <= tables


@pytest.mark.parametrize("version", ["newest", "older"])
def test_upgrade_on_mj_adds_only_memctl_tables_and_the_listed_columns(pg_schema: str, tmp_path: Path, version: str) -> None:
    store = _mj_only(tmp_path, pg_schema, version)
    before = catalog(store.engine, pg_schema)
    tables_before = set(sa.inspect(store.engine).get_table_names(schema=pg_schema))
    schema.upgrade(store.engine, store.settings)
    after = catalog(store.engine, pg_schema)
    assert set(sa.inspect(store.engine).get_table_names(schema=pg_schema)) - tables_before == MEMCTL_OBJECTS
    for table in MJ_TABLES:
        added = set(after[table]["columns"]) - set(before[table]["columns"])
        assert added == (ADDED_NOTE_COLUMNS if version == "older" and table == "AIAgentNote" else set()), table
        for kind in ("columns", "constraints", "indexes", "triggers"):
            kept = {k: v for k, v in after[table][kind].items() if k in before[table][kind]}
            assert kept == before[table][kind], (table, kind)  # nothing of MJ's dropped or changed
        assert after[table]["indexes"].keys() == before[table]["indexes"].keys(), table  # no index added to MJ's tables
        assert after[table]["triggers"] == before[table]["triggers"], table
        new_constraints = set(after[table]["constraints"]) - set(before[table]["constraints"])
        assert new_constraints == ({"FK_AIAgentNote_ConsolidatedIntoNote"} if version == "older" and table == "AIAgentNote" else set()), table


@pytest.mark.parametrize("version", ["newest", "older"])
def test_db_upgrade_sql_on_mj_prints_only_what_it_would_run_there(pg_schema: str, tmp_path: Path, version: str) -> None:
    store = _mj_only(tmp_path, pg_schema, version)
    printed = _cli(store, "db", "upgrade", "--sql")
    assert printed.exit_code == 0, printed.output
    statements = _statements(printed.output)
    touched = {s.split()[2].split(".")[-1].strip('"') for s in statements if s.startswith(("CREATE TABLE", "ALTER TABLE", "INSERT INTO"))}
    assert touched == (MEMCTL_OBJECTS | ({"AIAgentNote"} if version == "older" else set()))
    assert not [s for s in statements if s.startswith(("DROP", "CREATE INDEX")) and "memctl_" not in s]
    alters = [s for s in statements if s.startswith("ALTER TABLE")]
    assert len(alters) == (len(ADDED_NOTE_COLUMNS) + 1 if version == "older" else 0)
    assert "CHECK" not in " ".join(alters)

    # Run exactly what was printed: the database ends up as `db upgrade` leaves it.
    with store.engine.begin() as conn:
        conn.exec_driver_sql(printed.output)
    twin_schema = pg_schema + "_twin"
    twin = make_mj_db(tmp_path / "twin", twin_schema, version)
    try:
        def normalised(engine: sa.engine.Engine, name: str) -> str:
            tables = tuple(sa.inspect(engine).get_table_names(schema=name))
            return json.dumps(catalog(engine, name, tables), sort_keys=True, default=str).replace(name, "S")

        assert normalised(store.engine, pg_schema) == normalised(twin.engine, twin_schema)
    finally:
        with twin.engine.begin() as conn:
            conn.exec_driver_sql(f'DROP SCHEMA "{twin_schema}" CASCADE')
        twin.engine.dispose()
    again = _cli(store, "db", "upgrade", "--sql")
    assert again.exit_code == 0 and "nothing to run" in again.output
    assert _statements(again.output) == []


def test_db_upgrade_on_mj_reports_the_refused_archived_value(pg_schema: str, tmp_path: Path) -> None:
    store = _mj_only(tmp_path, pg_schema, "older")
    result = _cli(store, "db", "upgrade")
    assert result.exit_code == 0, result.output
    assert "AIAgentExample.Status" in result.output and "does not allow 'Archived'" in result.output and "'Revoked' instead" in result.output
    assert "AIAgentNote.Status" not in result.output  # the older MJ has no note Status check at all


def test_archive_on_mj_sets_examples_revoked_where_archived_is_refused_and_says_so(mj_db: MjDb) -> None:
    ids = _seed(mj_db)
    check_before = catalog(mj_db.engine, str(mj_db.settings.db_schema))["AIAgentExample"]["constraints"]
    report = api.run_phase(at(mj_db.settings, NOW), "archive", engine=mj_db.engine)
    phase = report.phases[0]
    assert phase.outcome == "done"
    assert phase.output["refused"] == [
        {"column": "AIAgentExample.Status", "refused": "Archived", "instead": "Revoked", "constraint": "AIAgentExample_Status_check", "rows": 2}
    ]
    assert "2 examples set to 'Revoked'" in phase.message
    st = Store(mj_db.engine)
    for key in ("expired_example", "stale_example"):
        row = st.row(m.example, ids[key])
        assert row["Status"] == "Revoked"
        assert "Archived as Revoked (the database's Status check refuses 'Archived')" in row["Comments"]
    with mj_db.engine.connect() as conn:
        step = conn.execute(sa.select(m.run_step.c.OutputData).where(m.run_step.c.StepName == "Archive Expired Items")).scalar_one()
    assert json.loads(step)["refused"][0]["instead"] == "Revoked"
    assert catalog(mj_db.engine, str(mj_db.settings.db_schema))["AIAgentExample"]["constraints"] == check_before  # never widened


def test_a_saved_archive_plan_with_the_fallback_status_applies_on_mj(mj_db: MjDb, tmp_path: Path) -> None:
    """memctl's own plan on MJ archives examples as 'Revoked': `apply` accepts exactly that there."""
    ids = _seed(mj_db)
    plan = tmp_path / "archive.json"
    api.run_phase(at(mj_db.settings, NOW), "archive", api.RunOptions(dry_run=True, plan_out=str(plan)), engine=mj_db.engine)
    assert Store(mj_db.engine).row(m.example, ids["expired_example"])["Status"] == "Active"
    report = api.apply_plan(at(mj_db.settings, NOW), str(plan), engine=mj_db.engine)
    assert report.exit_code == 0, report.message
    assert Store(mj_db.engine).row(m.example, ids["expired_example"])["Status"] == "Revoked"


def test_capabilities_come_from_the_constraint_not_the_version(mj_db: MjDb) -> None:
    s = mj_db.settings.db_schema
    with mj_db.engine.begin() as conn:  # an operator who widened MJ's check themselves
        conn.exec_driver_sql(f'ALTER TABLE "{s}"."AIAgentExample" DROP CONSTRAINT "AIAgentExample_Status_check"')
        conn.exec_driver_sql(f"""ALTER TABLE "{s}"."AIAgentExample" ADD CONSTRAINT "CK_wide" CHECK ("Status" IN ('Active', 'Pending', 'Revoked', 'Archived'))""")
    ids = _seed(mj_db)
    phase = api.run_phase(at(mj_db.settings, NOW), "archive", engine=mj_db.engine).phases[0]
    assert "refused" not in phase.output
    assert Store(mj_db.engine).row(m.example, ids["expired_example"])["Status"] == "Archived"


def test_dream_on_mj_runs_every_phase_within_mj_constraints(mj_db: MjDb) -> None:
    ids = _seed(mj_db)
    # at the seed's clock: on today's, every seeded note is months without access and archived stale
    result = _cli(mj_db, "--now", NOW.isoformat(), "dream", "--force", "--json")
    assert result.exit_code == 0, result.output
    outcomes = {p["phase"]: p["outcome"] for p in json.loads(result.output)["phases"]}
    assert outcomes == {"consolidate": "done", "contradictions": "no items", "prune": "done", "archive": "done"}
    st = Store(mj_db.engine)
    assert st.status(ids["orphan"]) == "Archived"
    assert st.row(m.example, ids["expired_example"])["Status"] == "Revoked"
    with mj_db.engine.connect() as conn:
        n = m.note
        facts = conn.execute(sa.select(n.c.Note).where(n.c.Status == "Active", n.c.UserID == ids["user"], n.c.Note.contains("invoices"))).scalars().all()
        credits = conn.execute(sa.select(sa.func.count()).select_from(m.change).where(m.change.c.Action == "credit")).scalar_one()
        steps = conn.execute(sa.select(m.run_step.c.StepType, m.run_step.c.Status)).all()
    # the four notes of one fact are one: the copy joined, then the wordings into the note that states them all
    assert facts == ["User prefers email for invoices and receipts."] and credits == 2
    assert steps and all(status == "Completed" for _, status in steps)


def test_adoption_statements_render_for_sql_server(pg_schema: str, tmp_path: Path) -> None:
    store = _mj_only(tmp_path, pg_schema, "older")
    ddl = schema.database_upgrade_sql(store.engine, store.settings, dialect="mssql")
    statements = [s for s in _statements(ddl.replace("\nGO\n", "\n")) if s not in ("BEGIN TRANSACTION", "COMMIT")]
    assert f"ALTER TABLE {pg_schema}.[AIAgentNote] ADD [ConsolidatedIntoNoteID] UNIQUEIDENTIFIER NULL" in statements
    assert f"ALTER TABLE {pg_schema}.[AIAgentNote] ADD [ProtectionTier] NVARCHAR(20) NOT NULL DEFAULT 'Standard'" in statements
    assert any(s.startswith(f"CREATE TABLE {pg_schema}.memctl_change") and "DATETIMEOFFSET" in s for s in statements)
    mj_statements = [s for s in statements if "memctl_" not in s and not s.startswith("IF SCHEMA_ID")]
    assert len(mj_statements) == len(ADDED_NOTE_COLUMNS) + 1 and all(s.startswith(f"ALTER TABLE {pg_schema}.[AIAgentNote] ADD ") for s in mj_statements)


def test_refused_values_are_read_from_each_dialects_check_text() -> None:
    mssql = ("CK__AIAgentEx__Statu__1A2B", "([Status]='Revoked' OR [Status]='Pending' OR [Status]='Active')")
    postgres = ("AIAgentExample_Status_check", """(("Status")::text = ANY ((ARRAY['Active'::character varying, 'Archived'::character varying])::text[]))""")
    other = ("CK_score", "([SuccessScore]>=(0) AND [SuccessScore]<=(100))")
    assert values_allowed("Status", [mssql, other]) == (frozenset({"Active", "Pending", "Revoked"}), "CK__AIAgentEx__Statu__1A2B")
    assert values_allowed("Status", [postgres])[0] == frozenset({"Active", "Archived"})
    assert values_allowed("Status", [other]) == (None, "")
