"""Issue 12, deliverable 7: export / import carry every column of the tables they touch.

Columns memctl does not model (a MemberJunction database's AuthorType, EmbeddingVectorBinary,
Company.Description...) are exported and imported too; export -> import into a fresh database of
the same shape -> export is byte-identical; a column the target lacks stops the import naming it
(exit 2), unless `--drop-unknown-columns`.
"""

from __future__ import annotations

import io
import json
import uuid
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

import pytest
import sqlalchemy as sa
from conftest import Db, MjDb, make_db, make_mj_db
from factory import NOW, Store, at
from typer.testing import CliRunner

from memctl import api
from memctl.cli import app
from memctl.errors import InputError
from memctl.store import models as m
from memctl.store.created import binary_vector
from memctl.store.live import live_table, translated_schema
from memctl.transfer import export_records, import_records
from mj_fixture import NEWEST_ONLY

runner = CliRunner()

# Columns a MemberJunction database has and memctl's own schema does not (MJ v6.2 types).
EXTRA_DDL = {
    "Company": [('"Description"', "VARCHAR(200) NOT NULL DEFAULT ''")],
    "AIAgentNote": [('"AuthorType"', "VARCHAR(20) NOT NULL DEFAULT 'MemoryManager'"), ('"EmbeddingVectorBinary"', "{binary}"), ('"Weight"', "NUMERIC(18, 6)")],
    "AIAgentRun": [('"TotalTokensUsed"', "INTEGER DEFAULT 0"), ('"AgentState"', "TEXT"), ('"Paused"', "BOOLEAN NOT NULL DEFAULT FALSE")],
}


def widen(db: Db) -> None:
    """Give a memctl store some of MJ's unmodelled columns."""
    binary = "BYTEA" if db.backend == "postgresql" else "BLOB"
    with db.engine.begin() as conn:
        schema = translated_schema(conn)
        for table, columns in EXTRA_DDL.items():
            name = f'"{schema}"."{table}"' if schema else f'"{table}"'
            for column, ddl in columns:
                conn.exec_driver_sql(f"ALTER TABLE {name} ADD COLUMN {column} {ddl.format(binary=binary)}")


def fresh(db: Db, tmp_path: Path, name: str) -> Db:
    """Return a new empty store on the same backend as `db` (a new schema on PostgreSQL)."""
    if db.backend == "sqlite":
        return make_db("sqlite", tmp_path / name)
    return make_db("postgresql", tmp_path / name, schema=f"{db.settings.db_schema}_{name}"[:40] + uuid.uuid4().hex[:4])


def drop(db: Db) -> None:
    if db.settings.db_schema:
        with db.engine.begin() as conn:
            conn.exec_driver_sql(f'DROP SCHEMA IF EXISTS "{db.settings.db_schema}" CASCADE')
    db.engine.dispose()


def exported(db: Db) -> str:
    buffer = io.StringIO()
    export_records(db.engine, buffer)
    return buffer.getvalue()


def seed(db: Db) -> dict[str, str]:
    store = Store(db.engine)
    agent, acme = store.agent(), store.company()
    note = store.note("User prefers email.", AgentID=agent, CompanyID=acme, EmbeddingVector="[0.5, -0.25, 1.0]")
    plain = store.note("User works remotely.", AgentID=agent)
    run_id = "5f0c0c52-1f43-4a8e-9a57-000000000001"
    with db.engine.begin() as conn:
        conn.execute(m.run.insert().values(ID=run_id, AgentID=agent, RunName="Memory Manager", Status="Completed", StartedAt=NOW, __mj_CreatedAt=NOW, __mj_UpdatedAt=NOW))
    return {"agent": agent, "company": acme, "note": note, "plain": plain, "run": run_id}


def set_extras(db: Db, ids: dict[str, str]) -> None:
    with db.engine.begin() as conn:
        note = live_table(conn, m.note)
        conn.execute(note.update().where(note.c.ID == ids["note"]).values(
            AuthorType="Agent", EmbeddingVectorBinary=binary_vector("[0.5, -0.25, 1.0]"), Weight=12.345678,
        ))
        company = live_table(conn, m.company)
        conn.execute(company.update().where(company.c.ID == ids["company"]).values(Description="Makes anvils"))
        run = live_table(conn, m.run)
        conn.execute(run.update().where(run.c.ID == ids["run"]).values(TotalTokensUsed=1234, AgentState='{"step": 3}', Paused=True))


def records(text: str) -> dict[str, dict[str, Any]]:
    return {json.loads(line)["ID"]: json.loads(line) for line in text.splitlines()}


def test_export_carries_columns_memctl_does_not_model(db: Db) -> None:
    widen(db)
    ids = seed(db)
    set_extras(db, ids)
    out = records(exported(db))
    note, plain, company, run = out[ids["note"]], out[ids["plain"]], out[ids["company"]], out[ids["run"]]
    assert note["AuthorType"] == "Agent" and note["Weight"] == 12.345678
    assert note["EmbeddingVectorBinary"] == "AAAAP wAAgL4AAIA/".replace(" ", "")  # base64 of float32 LE 0.5, -0.25, 1.0
    assert plain["AuthorType"] == "MemoryManager" and plain["EmbeddingVectorBinary"] is None
    assert company["Description"] == "Makes anvils"
    assert (run["TotalTokensUsed"], run["AgentState"], run["Paused"]) == (1234, '{"step": 3}', True)
    # memctl's columns first, in the models' order, then the others in the table's order
    assert list(note)[-3:] == ["AuthorType", "EmbeddingVectorBinary", "Weight"]


def test_export_import_export_is_byte_identical_with_unmodelled_columns(db: Db, tmp_path: Path) -> None:
    widen(db)
    set_extras(db, seed(db))
    first = exported(db)
    target = fresh(db, tmp_path, "copy")
    try:
        widen(target)
        import_records(target.engine, io.StringIO(first), NOW)
        assert exported(target) == first
    finally:
        drop(target)


def test_importing_a_column_the_target_lacks_stops_naming_it(db: Db, tmp_path: Path) -> None:
    widen(db)
    set_extras(db, seed(db))
    text = exported(db)
    target = fresh(db, tmp_path, "plain")
    try:
        with pytest.raises(InputError, match=r"line \d+: Description: the target's Company table has no such column"):
            import_records(target.engine, io.StringIO(text), NOW)
        with target.engine.connect() as conn:
            assert conn.execute(sa.select(sa.func.count()).select_from(m.note)).scalar() == 0  # all or nothing
        counts = import_records(target.engine, io.StringIO(text), NOW, drop_unknown_columns=True)
        assert counts["note"] == 2 and counts["company"] == 1 and counts["run"] == 1
        again = records(exported(target))
        assert all("AuthorType" not in r and "Description" not in r for r in again.values())
    finally:
        drop(target)


def test_a_required_unmodelled_column_must_be_given(sqlite_db: Db) -> None:
    with sqlite_db.engine.begin() as conn:
        conn.exec_driver_sql('ALTER TABLE "Company" ADD COLUMN "Code" VARCHAR(10) NOT NULL DEFAULT \'x\'')
    # a NOT NULL column with a default may be left out: the database fills it
    import_records(sqlite_db.engine, io.StringIO('{"kind":"company","ID":"00000000-0000-4000-8000-000000000001","Name":"Acme"}\n'), NOW)
    assert records(exported(sqlite_db))["00000000-0000-4000-8000-000000000001"]["Code"] == "x"
    with pytest.raises(InputError, match="line 1: Code: must not be null"):
        import_records(sqlite_db.engine, io.StringIO('{"kind":"company","Name":"Beta","Code":null}\n'), NOW)
    with pytest.raises(InputError, match="line 1: EmbeddingVectorBinary: the target's AIAgentNote table has no such column"):
        import_records(sqlite_db.engine, io.StringIO('{"kind":"note","Note":"x","EmbeddingVectorBinary":"AAAAPw=="}\n'), NOW)
    with pytest.raises(InputError, match=r"line 1: code: unknown column for kind company \(did you mean Code\?\)"):
        import_records(sqlite_db.engine, io.StringIO('{"kind":"company","Name":"Beta","code":"y"}\n'), NOW)


def test_a_binary_column_takes_base64(sqlite_db: Db) -> None:
    with sqlite_db.engine.begin() as conn:
        conn.exec_driver_sql('ALTER TABLE "AIAgentNote" ADD COLUMN "EmbeddingVectorBinary" BLOB')
    with pytest.raises(InputError, match="line 1: EmbeddingVectorBinary: 'not base64!' is not base64"):
        import_records(sqlite_db.engine, io.StringIO('{"kind":"note","Note":"x","EmbeddingVectorBinary":"not base64!"}\n'), NOW)


def test_cli_import_exits_2_naming_the_column_and_drops_it_when_told(db: Db, tmp_path: Path) -> None:
    widen(db)
    set_extras(db, seed(db))
    source = tmp_path / "store.jsonl"
    source.write_text(exported(db), encoding="utf-8")
    target = fresh(db, tmp_path, "cli")
    try:
        env = {**target.env(), "MEMCTL_NOW": NOW.isoformat()}
        refused = runner.invoke(app, ["import", str(source)], env=env)
        assert refused.exit_code == 2 and "Description" in refused.output
        dropped = runner.invoke(app, ["import", "--drop-unknown-columns", str(source)], env=env)
        assert dropped.exit_code == 0, dropped.output
        assert "2 note" in dropped.output
    finally:
        drop(target)


# --- on the MJ fixture (tests/mj_fixture.py: MJ's own tables, newest and older, PostgreSQL) ------


def seed_mj(db: MjDb) -> dict[str, str]:
    """Fill an MJ database the way MJ would (its own columns too), then let memctl dream on it."""
    s = db.settings.db_schema
    ids = {k: str(uuid.uuid4()) for k in ("company", "user", "conversation", "agent", "manager", "mj_run")}
    with db.engine.begin() as conn:
        conn.exec_driver_sql(f"""INSERT INTO "{s}"."Company" ("ID", "Name", "Description", "Website") VALUES ('{ids["company"]}', 'Acme', 'Makes anvils', 'acme.example')""")
        conn.exec_driver_sql(f"""INSERT INTO "{s}"."User" ("ID", "Name", "Email", "Type", "IsActive", "FirstName") VALUES ('{ids["user"]}', 'Ann', 'ann@example.com', 'User', true, 'Ann')""")
        conn.exec_driver_sql(f"""INSERT INTO "{s}"."Conversation" ("ID", "UserID", "Name", "IsPinned") VALUES ('{ids["conversation"]}', '{ids["user"]}', 'chat', true)""")
        conn.exec_driver_sql(f"""INSERT INTO "{s}"."AIAgent" ("ID", "Name", "Status", "MaxNotesToInject") VALUES ('{ids["agent"]}', 'Sage', 'Active', 7)""")
        conn.exec_driver_sql(f"""INSERT INTO "{s}"."AIAgent" ("ID", "Name", "Status", "IsRestricted") VALUES ('{ids["manager"]}', 'Memory Manager', 'Active', true)""")
        conn.exec_driver_sql(
            f"""INSERT INTO "{s}"."AIAgentRun" ("ID", "AgentID", "Status", "StartedAt", "ConversationID", "UserID", "TotalTokensUsed", "TotalCost", "AgentState", "RunName")
            VALUES ('{ids["mj_run"]}', '{ids["manager"]}', 'Completed', '2026-06-01T10:00:00+00', '{ids["conversation"]}', '{ids["user"]}', 1200, 0.012345, '{{"x": 1}}', 'Memory Manager 2')"""
        )
    store = Store(db.engine)
    # three wordings that each add a detail, so the merge writes a new note (copies in the same words need none)
    texts = ["User prefers a short email summary after each support call.",
             "User prefers a short email summary after every support call. The summary goes to the team lead.",
             "User prefers short email summaries after each support call. Summaries are written in English."]
    for i, text in enumerate(texts):
        store.note(text, AgentID=ids["agent"], UserID=ids["user"], CompanyID=ids["company"], SourceConversationID=ids["conversation"],
                   SourceAIAgentRunID=ids["mj_run"], age_days=30 - 5 * i, AccessCount=i + 1, EmbeddingVector=json.dumps([0.5, -0.25, float(i)]))
    if db.mj_version == "newest":
        with db.engine.begin() as conn:
            note = live_table(conn, m.note)
            conn.execute(note.update().where(note.c.Note == texts[0]).values(AuthorType="Agent", EmbeddingVectorBinary=binary_vector("[0.5, -0.25, 0.0]")))
    # MJ's sub-agents and sub-agent runs point at their parent row, whose ID may sort after theirs
    ids.update(parent="ffffffff-0000-4000-8000-000000000001", child="00000000-0000-4000-8000-000000000002",
               parent_run="ffffffff-0000-4000-8000-000000000003", child_run="00000000-0000-4000-8000-000000000004")
    with db.engine.begin() as conn:
        conn.exec_driver_sql(f"""INSERT INTO "{s}"."AIAgent" ("ID", "Name", "Status") VALUES ('{ids["parent"]}', 'Planner', 'Active')""")
        conn.exec_driver_sql(f"""INSERT INTO "{s}"."AIAgent" ("ID", "Name", "Status", "ParentID") VALUES ('{ids["child"]}', 'Researcher', 'Active', '{ids["parent"]}')""")
        conn.exec_driver_sql(f"""INSERT INTO "{s}"."AIAgentRun" ("ID", "AgentID", "Status") VALUES ('{ids["parent_run"]}', '{ids["parent"]}', 'Paused')""")
        conn.exec_driver_sql(f"""INSERT INTO "{s}"."AIAgentRun" ("ID", "AgentID", "Status", "ParentRunID") VALUES ('{ids["child_run"]}', '{ids["child"]}', 'Completed', '{ids["parent_run"]}')""")
    report = api.dream(at(db.settings, NOW), force=True, engine=db.engine)
    assert report.exit_code == 0, report.message
    return ids


@contextmanager
def other_mj(db: MjDb, tmp_path: Path, version: str) -> Iterator[MjDb]:
    """Yield a fresh MJ database (its own schema) at `version`, upgraded by memctl."""
    schema = "t_" + uuid.uuid4().hex[:12]
    target = make_mj_db(tmp_path / schema, schema, version)
    try:
        yield target
    finally:
        drop(target)


@pytest.mark.postgres
def test_on_mj_export_import_into_a_fresh_mj_export_is_byte_identical(mj_db: MjDb, tmp_path: Path) -> None:
    ids = seed_mj(mj_db)
    first = exported(mj_db)
    out = records(first)
    assert out[ids["company"]]["Description"] == "Makes anvils" and out[ids["mj_run"]]["TotalTokensUsed"] == 1200
    assert out[ids["agent"]]["MaxNotesToInject"] == 7 and out[ids["conversation"]]["IsPinned"] is True
    assert out[ids["child"]]["ParentID"] == ids["parent"] and out[ids["child_run"]]["ParentRunID"] == ids["parent_run"]
    if mj_db.mj_version == "newest":
        assert {r.get("AuthorType") for r in out.values() if r["kind"] == "note"} == {"Agent", "MemoryManager"}
    with other_mj(mj_db, tmp_path, mj_db.mj_version) as target:
        counts = import_records(target.engine, io.StringIO(first), NOW)
        assert counts["note"] == 4 and counts["run"] >= 2
        assert exported(target) == first


@pytest.mark.postgres
def test_on_mj_importing_newest_into_older_stops_naming_the_column_unless_dropped(pg_schema: str, tmp_path: Path) -> None:
    newest = make_mj_db(tmp_path / "newest", pg_schema, "newest")
    try:
        seed_mj(newest)
        text = exported(newest)
        with other_mj(newest, tmp_path, "older") as older:
            with pytest.raises(InputError, match="has no such column") as refused:
                import_records(older.engine, io.StringIO(text), NOW)
            named = str(refused.value).split(": ")[1]
            assert named in {c for columns in NEWEST_ONLY.values() for c in columns}
            env = {**older.env(), "MEMCTL_NOW": NOW.isoformat()}
            source = tmp_path / "newest.jsonl"
            source.write_text(text, encoding="utf-8")
            assert runner.invoke(app, ["import", str(source)], env=env).exit_code == 2
            dropped = runner.invoke(app, ["import", "--drop-unknown-columns", str(source)], env=env)
            assert dropped.exit_code == 0, dropped.output
            again = records(exported(older))
            assert {r["ID"] for r in again.values()} == {r["ID"] for r in records(text).values()}
            assert all("AuthorType" not in r and "EmbeddingVectorBinary" not in r for r in again.values())
    finally:
        newest.engine.dispose()
