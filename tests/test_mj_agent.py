"""Issue 12, deliverables 5 and 6: memctl's agent row, and whose runs `runs list` / `orient` show.

memctl's own AIAgent row looks like MJ's maintenance agent (restricted, injects nothing, writes
no memory) where the table has MJ's flag columns; `agent_id` names an existing row instead
(exit 2 when it does not exist); `runs list` and `orient` show memctl's runs unless `--all`.
"""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import timedelta
from typing import Any

import pytest
import sqlalchemy as sa
from conftest import Db, MjDb
from factory import NOW, Store, at, new_id
from typer.testing import CliRunner

from memctl import api
from memctl.agent import MAINTENANCE_FLAGS
from memctl.cli import app
from memctl.errors import ConfigError
from memctl.orient import list_runs, orient
from memctl.store import models as m
from memctl.store.live import live_table, translated_schema

runner = CliRunner()


def add_mj_agent_flags(db: Db) -> None:
    """Give the store's AIAgent MJ's flag columns with MJ's defaults (an ordinary agent's values)."""
    with db.engine.begin() as conn:
        schema = translated_schema(conn)
        table = f'"{schema}"."AIAgent"' if schema else '"AIAgent"'
        for column, default in (("IsRestricted", "false"), ("InjectNotes", "true"), ("InjectExamples", "true"), ("AllowMemoryWrite", "true")):
            conn.exec_driver_sql(f'ALTER TABLE {table} ADD COLUMN "{column}" BOOLEAN NOT NULL DEFAULT {default}')
        conn.exec_driver_sql(f'ALTER TABLE {table} ADD COLUMN "Description" TEXT')


def agent_row(db: Db, agent_id: str) -> dict[str, Any]:
    with db.engine.connect() as conn:
        table = live_table(conn, m.agent)
        return dict(conn.execute(sa.select(table).where(table.c.ID == agent_id)).mappings().one())


def other_agents_run(db: Db, agent_id: str, name: str, started_after: timedelta) -> str:
    run_id = new_id()
    with db.engine.begin() as conn:
        conn.execute(m.run.insert().values(
            ID=run_id, AgentID=agent_id, RunName=name, Status="Completed", StartedAt=NOW + started_after,
            __mj_CreatedAt=NOW + started_after, __mj_UpdatedAt=NOW + started_after,
        ))
    return run_id


def dream(db: Db, **changes: Any) -> api.RunReport:
    return api.dream(at(db.settings, NOW, **changes), force=True, engine=db.engine)


def cli(db: Db, *args: str, **env: str) -> Any:
    return runner.invoke(app, list(args), env={**db.env(), "MEMCTL_NOW": NOW.isoformat(), **env})


def test_memctls_agent_row_is_restricted_injects_nothing_and_writes_no_memory(db: Db) -> None:
    add_mj_agent_flags(db)
    report = dream(db)
    row = agent_row(db, m.MEMCTL_AGENT_ID)
    assert {k: row[k] for k in MAINTENANCE_FLAGS} == MAINTENANCE_FLAGS
    assert row["Name"] == "memctl" and row["AutoArchiveEnabled"] is False and "memctl" in row["Description"]
    with db.engine.connect() as conn:
        assert str(conn.execute(sa.select(m.run.c.AgentID).where(m.run.c.ID == report.run_id)).scalar()).lower() == m.MEMCTL_AGENT_ID


def test_memctls_agent_row_on_memctls_own_schema_is_a_plain_row(db: Db) -> None:
    dream(db)
    row = agent_row(db, m.MEMCTL_AGENT_ID)
    assert set(MAINTENANCE_FLAGS).isdisjoint(row)
    assert row["Name"] == "memctl"


def test_an_operator_names_an_existing_agent_row_for_memctls_runs(db: Db) -> None:
    add_mj_agent_flags(db)
    store = Store(db.engine)
    manager = store.agent("Memory Manager")
    report = dream(db, agent_id=manager.upper())
    with db.engine.connect() as conn:
        assert str(conn.execute(sa.select(m.run.c.AgentID).where(m.run.c.ID == report.run_id)).scalar()).lower() == manager
        assert conn.execute(sa.select(sa.func.count()).select_from(m.agent).where(m.agent.c.ID == m.MEMCTL_AGENT_ID)).scalar() == 0
    row = agent_row(db, manager)
    assert row["IsRestricted"] is False and row["InjectNotes"] is True  # memctl never changes a row it was pointed at
    # the gate reads the named row's runs: a second dream without --force is skipped
    again = api.dream(at(db.settings, NOW + timedelta(hours=1), agent_id=manager), engine=db.engine)
    assert again.status == "skipped"


def test_naming_an_agent_row_that_does_not_exist_is_a_usage_error(db: Db) -> None:
    missing = new_id()
    with pytest.raises(ConfigError, match=missing):
        dream(db, agent_id=missing)
    with db.engine.connect() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(m.run)).scalar() == 0
    result = cli(db, "dream", "--force", MEMCTL_AGENT_ID=missing)
    assert result.exit_code == 2 and missing in result.output
    assert cli(db, "runs", "list", MEMCTL_AGENT_ID=missing).exit_code == 2
    assert cli(db, "orient", MEMCTL_AGENT_ID=missing).exit_code == 2


def test_agent_id_must_be_a_uuid(db: Db) -> None:
    result = cli(db, "orient", MEMCTL_AGENT_ID="memory-manager")
    assert result.exit_code == 2 and "agent_id" in result.output


def test_runs_list_and_orient_show_memctls_runs_unless_all(db: Db) -> None:
    store = Store(db.engine)
    manager = store.agent("Memory Manager")
    ours = dream(db).run_id
    theirs = other_agents_run(db, manager, "Memory Manager 2", timedelta(hours=2))
    assert [r["id"] for r in list_runs(db.engine, agent_id=m.MEMCTL_AGENT_ID)] == [ours]
    assert [r["id"] for r in list_runs(db.engine)] == [theirs, ours]
    settings = at(db.settings, NOW)
    assert orient(db.engine, settings).last_run["id"] == ours  # type: ignore[index]
    assert orient(db.engine, settings, all_agents=True).last_run["id"] == theirs  # type: ignore[index]

    listed = json.loads(cli(db, "runs", "list", "--json").output)
    assert [r["id"] for r in listed] == [ours]
    listed = json.loads(cli(db, "runs", "list", "--json", "--all").output)
    assert [r["id"] for r in listed] == [theirs, ours]
    assert json.loads(cli(db, "orient", "--json").output)["lastRun"]["id"] == ours
    assert json.loads(cli(db, "orient", "--json", "--all").output)["lastRun"]["name"] == "Memory Manager 2"


def test_runs_list_follows_the_named_agent_row(db: Db) -> None:
    store = Store(db.engine)
    manager = store.agent("Memory Manager")
    dream(db)  # under memctl's own row
    named = dream(db, agent_id=manager).run_id
    listed = json.loads(cli(db, "runs", "list", "--json", MEMCTL_AGENT_ID=manager).output)
    assert [r["id"] for r in listed] == [named]


def test_runs_list_all_is_in_help() -> None:
    out = subprocess.run([sys.executable, "-m", "memctl", "runs", "list", "--help"], capture_output=True, text=True, check=True).stdout
    assert "--all" in out


# --- on the MJ fixture (tests/mj_fixture.py: MJ's own tables, newest and older, PostgreSQL) ------


def mj_agent(db: MjDb, name: str, **columns: Any) -> str:
    """Insert an AIAgent row the way MJ does (its defaults: an ordinary, unrestricted agent)."""
    agent_id = new_id()
    with db.engine.begin() as conn:
        table = live_table(conn, m.agent)
        conn.execute(table.insert().values(ID=agent_id, Name=name, Status="Active", **columns))
    return agent_id


def mj_run(db: MjDb, agent_id: str, name: str, started_after: timedelta) -> str:
    """Insert an AIAgentRun of one of MJ's agents, with MJ's own columns."""
    run_id = new_id()
    with db.engine.begin() as conn:
        table = live_table(conn, m.run)
        conn.execute(table.insert().values(
            ID=run_id, AgentID=agent_id, RunName=name, Status="Completed", StartedAt=NOW + started_after, TotalTokensUsed=812,
            AgentState='{"phase": "done"}',
        ))
    return run_id


@pytest.mark.postgres
def test_on_mj_memctls_agent_row_looks_like_mjs_memory_manager(mj_db: MjDb) -> None:
    manager = mj_agent(mj_db, "Memory Manager", IsRestricted=True, InjectNotes=False, InjectExamples=False)
    report = dream(mj_db)
    assert report.exit_code == 0, report.message
    ours, theirs = agent_row(mj_db, m.MEMCTL_AGENT_ID), agent_row(mj_db, manager)
    flags = [c for c in MAINTENANCE_FLAGS if c in theirs]
    assert flags == (list(MAINTENANCE_FLAGS) if mj_db.mj_version == "newest" else ["IsRestricted", "InjectNotes", "InjectExamples"])
    assert {c: ours[c] for c in flags} == {c: MAINTENANCE_FLAGS[c] for c in flags}
    assert {c: theirs[c] for c in ("IsRestricted", "InjectNotes", "InjectExamples")} == {c: ours[c] for c in ("IsRestricted", "InjectNotes", "InjectExamples")}
    assert ours["AutoArchiveEnabled"] is False and ours["Status"] == "Active"


@pytest.mark.postgres
def test_on_mj_an_operator_records_memctls_runs_under_mjs_memory_manager(mj_db: MjDb) -> None:
    manager = mj_agent(mj_db, "Memory Manager", IsRestricted=True, InjectNotes=False, InjectExamples=False)
    report = dream(mj_db, agent_id=manager)
    assert report.exit_code == 0, report.message
    listed = json.loads(cli(mj_db, "runs", "list", "--json", MEMCTL_AGENT_ID=manager).output)
    assert [r["id"] for r in listed] == [report.run_id]
    with mj_db.engine.connect() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(m.agent).where(m.agent.c.ID == m.MEMCTL_AGENT_ID)).scalar() == 0
    assert cli(mj_db, "dream", "--force", MEMCTL_AGENT_ID=new_id()).exit_code == 2


@pytest.mark.postgres
def test_on_mj_runs_list_and_orient_leave_out_mjs_own_runs_unless_all(mj_db: MjDb) -> None:
    manager = mj_agent(mj_db, "Memory Manager", IsRestricted=True)
    ours = dream(mj_db).run_id
    theirs = mj_run(mj_db, manager, "Memory Manager 2", timedelta(hours=3))
    assert [r["id"] for r in json.loads(cli(mj_db, "runs", "list", "--json").output)] == [ours]
    assert [r["id"] for r in json.loads(cli(mj_db, "runs", "list", "--json", "--all").output)] == [theirs, ours]
    shown = cli(mj_db, "orient")
    assert shown.exit_code == 0 and "Memory Manager 2" not in shown.output and ours in shown.output
    assert "Memory Manager 2" in cli(mj_db, "orient", "--all").output
