"""`memctl undo` is all-or-nothing (issue 14): every change is checked first, then all are put back
in one transaction, or none is and each record in the way is named; an unknown action is exit 2."""

from __future__ import annotations

import io

import sqlalchemy as sa
from typer.testing import CliRunner

from conftest import Db
from factory import NOW, Store, at
from memctl import api
from memctl.cli import app
from memctl.demo import seed
from memctl.store import models as m
from memctl.transfer import export_records


def cli(db: Db, *args: str) -> object:
    base = ["--db-url", db.settings.db_url, *(["--db-schema", db.settings.db_schema] if db.settings.db_schema else []), "--now", NOW.isoformat()]
    return CliRunner().invoke(app, [*base, *args])


def export(db: Db) -> str:
    buffer = io.StringIO()
    export_records(db.engine, buffer, ["note", "example"])
    return buffer.getvalue()


def test_undo_when_one_revoked_source_was_later_made_immutable_changes_nothing_and_names_it(db: Db) -> None:
    seed(db.engine, NOW)
    report = api.dream(at(db.settings, NOW), engine=db.engine)
    with db.engine.connect() as conn:
        revoked = sorted(str(r) for r in conn.execute(sa.select(m.change.c.RecordID).where(m.change.c.RunID == report.run_id, m.change.c.Action == "revoke")).scalars())
    assert len(revoked) >= 3
    with db.engine.begin() as conn:  # an operator pins one of the revoked sources
        conn.execute(m.note.update().where(m.note.c.ID == revoked[1]).values(ProtectionTier="Immutable"))
    before = export(db)
    result = cli(db, "undo", report.run_id)
    assert result.exit_code == 1, result.output
    assert revoked[1] in result.output and "Immutable" in result.output and "nothing undone" in result.output
    assert export(db) == before
    forced = cli(db, "undo", report.run_id, "--force")
    assert forced.exit_code == 1 and revoked[1] in forced.output
    assert export(db) == before


def test_undo_names_every_record_in_the_way(db: Db) -> None:
    store = Store(db.engine)
    legacy = store.agent(status="Disabled")
    notes = [store.note(f"n{i}", AgentID=legacy) for i in range(5)]
    report = api.run_phase(at(db.settings, NOW), "prune", engine=db.engine)
    with db.engine.begin() as conn:
        conn.execute(m.note.update().where(m.note.c.ID == notes[0]).values(Comments="edited"))
        conn.execute(m.note.update().where(m.note.c.ID == notes[3]).values(ProtectionTier="Immutable"))
    refused = api.undo(at(db.settings, NOW), report.run_id, engine=db.engine)
    assert refused.exit_code == 1
    error = refused.phases[0].error or ""
    assert "2 record(s)" in error and notes[0] in error and notes[3] in error
    assert [store.status(n) for n in notes] == ["Archived"] * 5


def test_undo_puts_back_all_records_in_one_transaction(db: Db) -> None:
    store = Store(db.engine)
    legacy = store.agent(status="Disabled")
    notes = [store.note(f"n{i}", AgentID=legacy) for i in range(7)]
    report = api.run_phase(at(db.settings, NOW), "prune", engine=db.engine)
    undone = api.undo(at(db.settings, NOW), report.run_id, engine=db.engine)
    assert undone.exit_code == 0 and undone.phases[0].applied == 7
    assert [store.status(n) for n in notes] == ["Active"] * 7
    with db.engine.connect() as conn:  # one unit: every change of the undo is logged by the same step
        steps = set(conn.execute(sa.select(m.change.c.StepID).where(m.change.c.RunID == undone.run_id)).scalars())
    assert len(steps) == 1


def test_an_unknown_action_in_the_change_log_is_exit_2_naming_it(db: Db) -> None:
    store = Store(db.engine)
    note = store.note("x", AgentID=store.agent(status="Disabled"))
    report = api.run_phase(at(db.settings, NOW), "prune", engine=db.engine)
    with db.engine.begin() as conn:  # a newer memctl logged an action this one does not know
        conn.execute(m.change.insert().values(RunID=report.run_id, TableName="AIAgentNote", RecordID=note, Action="teleport", Before="{}", After="{}", ChangedAt=NOW))
    result = cli(db, "undo", report.run_id)
    assert result.exit_code == 2, result.output
    assert "'teleport'" in result.output and "Traceback" not in result.output and "TypeError" not in result.output
    assert store.status(note) == "Archived"


def test_undo_of_a_run_still_running_is_exit_2_and_starts_no_run(db: Db) -> None:
    store = Store(db.engine)
    note = store.note("x", AgentID=store.agent(status="Disabled"))
    report = api.run_phase(at(db.settings, NOW), "prune", engine=db.engine)
    with db.engine.begin() as conn:  # as a run a crash left behind reads
        conn.execute(m.run.update().where(m.run.c.ID == report.run_id).values(Status="Running"))
    with db.engine.connect() as conn:
        runs_before = conn.execute(sa.select(sa.func.count()).select_from(m.run)).scalar_one()
    result = cli(db, "undo", report.run_id)
    assert result.exit_code == 2, result.output
    assert "still Running" in result.output and "Traceback" not in result.output
    with db.engine.connect() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(m.run)).scalar_one() == runs_before
    assert store.status(note) == "Archived"
