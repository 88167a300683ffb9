"""Undo, apply and review undo on a real MemberJunction database (issue 12.3).

The database is tests/mj_fixture.py (MJ's tables with their CHECKs, FKs, defaults and the update
triggers that stamp __mj_UpdatedAt), newest and older MJ, with memctl upgraded on top. The store
is the demo corpus less what MJ's foreign keys refuse (notes naming a user or conversation that
does not exist) and less examples (MJ's example Status CHECK has no 'Archived', issue 12.2).
"""

from __future__ import annotations

import io
import json
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from conftest import MjDb
from factory import NOW, at
from memctl import api
from memctl.demo import _rows
from memctl.store import models as m
from memctl.transfer import export_records
from memctl.verify import verify

pytestmark = pytest.mark.postgres
KINDS = ["company", "user", "conversation", "agent", "note"]


def seed_mj(db: MjDb, now: datetime) -> None:
    """Insert the demo corpus through MJ's own table definitions (its required columns filled)."""
    rows = _rows(now)
    rows.pop("AIAgentExample")
    users = {u["ID"] for u in rows["User"]}
    conversations = {c["ID"] for c in rows["Conversation"]}
    rows["AIAgentNote"] = [
        n for n in rows["AIAgentNote"]
        if (n["UserID"] is None or n["UserID"] in users) and (n["SourceConversationID"] is None or n["SourceConversationID"] in conversations)
    ]
    for company in rows["Company"]:
        company["Description"] = company["Name"]
    for user in rows["User"]:
        user["Type"] = "User"
    metadata = sa.MetaData()
    with db.engine.begin() as conn:
        for name, batch in rows.items():
            table = sa.Table(name, metadata, autoload_with=conn, schema=db.settings.db_schema)
            conn.execute(table.insert(), batch)


def rows_by_id(db: MjDb) -> dict[str, dict[str, Any]]:
    """Every row of the store by ID, without __mj_UpdatedAt (MJ's trigger stamps it)."""
    buffer = io.StringIO()
    export_records(db.engine, buffer, KINDS)
    out = {}
    for line in buffer.getvalue().splitlines():
        row = json.loads(line)
        if row.get("ID") != m.MEMCTL_AGENT_ID:
            out[row["ID"]] = {k: v for k, v in row.items() if k != "__mj_UpdatedAt"}
    return out


def assert_put_back(db: MjDb, before: dict[str, dict[str, Any]], run_id: str) -> None:
    after = rows_by_id(db)
    with db.engine.connect() as conn:
        created = {str(r) for r in conn.execute(sa.select(m.change.c.RecordID).where(m.change.c.RunID == run_id, m.change.c.Action == "insert")).scalars()}
    assert created
    for note_id in created:  # notes the run created end up Revoked (kept: the change log names them)
        assert after.pop(note_id)["Status"] == "Revoked"
    assert after == before


def test_undo_of_a_dream_on_an_mj_database_puts_every_row_back(mj_db: MjDb) -> None:
    seed_mj(mj_db, NOW)
    before = rows_by_id(mj_db)
    report = api.dream(at(mj_db.settings, NOW), engine=mj_db.engine)
    assert report.exit_code == 0, report.message
    assert sum(p.applied for p in report.phases) > 5
    preview = api.undo(at(mj_db.settings, NOW), report.run_id, dry_run=True, engine=mj_db.engine)
    assert preview.exit_code == 0, preview.phases[0].error
    undone = api.undo(at(mj_db.settings, NOW), report.run_id, engine=mj_db.engine)
    assert undone.exit_code == 0, undone.phases[0].error
    assert_put_back(mj_db, before, report.run_id)
    assert verify(mj_db.engine) == []


def test_a_saved_plan_and_its_undo_apply_on_an_mj_database(mj_db: MjDb, tmp_path: Path) -> None:
    seed_mj(mj_db, NOW)
    before = rows_by_id(mj_db)
    plan_file = tmp_path / "plan.json"
    preview = api.dream(at(mj_db.settings, NOW), api.RunOptions(dry_run=True, plan_out=str(plan_file)), engine=mj_db.engine)
    applied = api.apply_plan(at(mj_db.settings, NOW), str(plan_file), engine=mj_db.engine)
    assert [p.skipped for p in applied.phases] == [[], [], [], []]
    assert sum(p.applied for p in applied.phases) == sum(len(p.rows) for p in preview.phases) > 5
    undone = api.undo(at(mj_db.settings, NOW), applied.run_id, engine=mj_db.engine)
    assert undone.exit_code == 0, undone.phases[0].error
    assert_put_back(mj_db, before, applied.run_id)


def test_review_resolve_and_its_undo_on_an_mj_database(mj_db: MjDb) -> None:
    seed_mj(mj_db, NOW)
    dream = api.dream(at(mj_db.settings, NOW), engine=mj_db.engine)
    assert dream.exit_code == 0
    [item, *_] = api.review_list(at(mj_db.settings, NOW), engine=mj_db.engine)
    before = rows_by_id(mj_db)
    resolved = api.review_resolve(at(mj_db.settings, NOW), item.id, keep=item.note_a_id, engine=mj_db.engine)
    assert resolved.exit_code == 0 and resolved.phases[0].applied >= 2
    undone = api.undo(at(mj_db.settings, NOW), resolved.run_id, engine=mj_db.engine)
    assert undone.exit_code == 0, undone.phases[0].error
    assert rows_by_id(mj_db) == before
    assert [i.id for i in api.review_list(at(mj_db.settings, NOW), engine=mj_db.engine)][0] == item.id
