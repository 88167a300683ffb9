"""Guards and undo that survive database-side writes (issue 12.3): MJ's update triggers stamp
__mj_UpdatedAt on every UPDATE, so no guard may rest on it.

The store here is memctl's own schema on PostgreSQL with MJ's per-table update trigger added
(tests/mj_triggers.py); the same scenarios run on the real MJ fixture in tests/test_mj_undo.py.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any, Iterator

import pytest
import sqlalchemy as sa

from conftest import Db, make_db
from factory import NOW, Store, at
from memctl import api
from memctl.demo import seed
from memctl.store import models as m
from memctl.transfer import export_records
from memctl.verify import verify
from mj_triggers import add_mj_update_triggers

STORE_KINDS = ["company", "user", "conversation", "agent", "note_type", "note", "example"]


@pytest.fixture
def mj_db(pg_schema: str, tmp_path: Path) -> Iterator[Db]:
    """Yield a PostgreSQL store whose tables stamp __mj_UpdatedAt on every UPDATE, as MJ's do."""
    store = make_db("postgresql", tmp_path, schema=pg_schema)
    add_mj_update_triggers(store.engine, pg_schema)
    yield store
    store.engine.dispose()


def rows_by_id(db: Db, skip: frozenset[str] = frozenset({"__mj_UpdatedAt"})) -> dict[str, dict[str, Any]]:
    """Export the store and return every row by ID, without the columns the database stamps."""
    buffer = io.StringIO()
    export_records(db.engine, buffer, STORE_KINDS)
    out = {}
    for line in buffer.getvalue().splitlines():
        row = json.loads(line)
        if row.get("ID") == m.MEMCTL_AGENT_ID:
            continue
        out[row["ID"]] = {k: v for k, v in row.items() if k not in skip}
    return out


def created_by(db: Db, run_id: str) -> set[str]:
    with db.engine.connect() as conn:
        query = sa.select(m.change.c.RecordID).where(m.change.c.RunID == run_id, m.change.c.Action == "insert")
        return {str(r) for r in conn.execute(query).scalars()}


def assert_put_back(db: Db, before: dict[str, dict[str, Any]], run_id: str) -> None:
    """Every pre-existing row is back in every column but __mj_UpdatedAt; created notes are Revoked."""
    after = rows_by_id(db)
    created = created_by(db, run_id)
    assert created, "the run created no note: the scenario tests nothing"
    for note_id in created:
        assert after.pop(note_id)["Status"] == "Revoked"
    assert after == before


def test_undo_of_a_dream_under_mj_update_triggers_puts_every_row_back(mj_db: Db) -> None:
    seed(mj_db.engine, NOW)
    before = rows_by_id(mj_db)
    report = api.dream(at(mj_db.settings, NOW), engine=mj_db.engine)
    changed = sum(p.applied for p in report.phases)
    assert report.exit_code == 0 and changed > 5
    preview = api.undo(at(mj_db.settings, NOW), report.run_id, dry_run=True, engine=mj_db.engine)
    assert preview.exit_code == 0, preview.phases[0].error
    undone = api.undo(at(mj_db.settings, NOW), report.run_id, engine=mj_db.engine)
    assert undone.exit_code == 0, undone.phases[0].error
    assert_put_back(mj_db, before, report.run_id)
    assert verify(mj_db.engine) == []


def test_undo_force_under_mj_update_triggers_puts_whole_rows_back(mj_db: Db) -> None:
    seed(mj_db.engine, NOW)
    before = rows_by_id(mj_db)
    report = api.dream(at(mj_db.settings, NOW), engine=mj_db.engine)
    undone = api.undo(at(mj_db.settings, NOW), report.run_id, force=True, engine=mj_db.engine)
    assert undone.exit_code == 0, undone.phases[0].error
    assert_put_back(mj_db, before, report.run_id)


def test_the_undo_of_an_undo_under_mj_update_triggers_redoes_the_run(mj_db: Db) -> None:
    store = Store(mj_db.engine)
    note = store.note("x", AgentID=store.agent(status="Disabled"))
    report = api.run_phase(at(mj_db.settings, NOW), "prune", engine=mj_db.engine)
    undone = api.undo(at(mj_db.settings, NOW), report.run_id, engine=mj_db.engine)
    assert undone.exit_code == 0 and store.status(note) == "Active"
    redone = api.undo(at(mj_db.settings, NOW), undone.run_id, engine=mj_db.engine)
    assert redone.exit_code == 0, redone.phases[0].error
    assert store.status(note) == "Archived"


def test_a_record_changed_after_the_run_still_blocks_undo_under_mj_update_triggers(mj_db: Db) -> None:
    store = Store(mj_db.engine)
    note = store.note("x", AgentID=store.agent(status="Disabled"))
    report = api.run_phase(at(mj_db.settings, NOW), "prune", engine=mj_db.engine)
    with mj_db.engine.begin() as conn:
        conn.execute(m.note.update().where(m.note.c.ID == note).values(Comments="edited by hand"))
    refused = api.undo(at(mj_db.settings, NOW), report.run_id, engine=mj_db.engine)
    assert refused.exit_code == 1 and note in (refused.phases[0].error or "")
    assert store.status(note) == "Archived"


def test_a_saved_plan_applies_under_mj_update_triggers(mj_db: Db, tmp_path: Path) -> None:
    seed(mj_db.engine, NOW)
    plan_file = tmp_path / "plan.json"
    preview = api.dream(at(mj_db.settings, NOW), api.RunOptions(dry_run=True, plan_out=str(plan_file)), engine=mj_db.engine)
    planned = sum(len(p.rows) for p in preview.phases)
    applied = api.apply_plan(at(mj_db.settings, NOW), str(plan_file), engine=mj_db.engine)
    assert [p.skipped for p in applied.phases] == [[], [], [], []]
    assert sum(p.applied for p in applied.phases) == planned > 5
    undone = api.undo(at(mj_db.settings, NOW), applied.run_id, engine=mj_db.engine)
    assert undone.exit_code == 0, undone.phases[0].error


def test_review_resolve_and_its_undo_under_mj_update_triggers(mj_db: Db) -> None:
    store = Store(mj_db.engine)
    agent, user = store.agent(), store.user()
    cet = store.note("Carol's timezone is CET.", age_days=4, AccessCount=3, AgentID=agent, UserID=user)
    pst = store.note("Carol's timezone is PST.", age_days=4.1, AccessCount=3, AgentID=agent, UserID=user)
    flagged = api.run_phase(at(mj_db.settings, NOW), "contradictions", engine=mj_db.engine)
    assert flagged.phases[0].output["contradictionsFlagged"] == 1
    with mj_db.engine.connect() as conn:
        pair = str(conn.execute(sa.select(m.review.c.ID)).scalar_one())
    before = rows_by_id(mj_db)
    resolved = api.review_resolve(at(mj_db.settings, NOW), pair, keep=cet, engine=mj_db.engine)
    assert resolved.exit_code == 0 and store.status(pst) == "Revoked"
    undone = api.undo(at(mj_db.settings, NOW), resolved.run_id, engine=mj_db.engine)
    assert undone.exit_code == 0, undone.phases[0].error
    assert rows_by_id(mj_db) == before
    with mj_db.engine.connect() as conn:
        assert conn.execute(sa.select(m.review.c.Status)).scalar_one() == "Open"
