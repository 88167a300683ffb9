"""The dream pipeline: order, failure containment, dry-run, plan files, undo, verify, the lock."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import sqlalchemy as sa
from typer.testing import CliRunner

from conftest import Db, make_db
from factory import NOW, Store, at
from memctl import api, lock
from memctl.cli import app
from memctl.context import PhaseContext
from memctl.demo import seed
from memctl.phases.base import Overlay
from memctl.phases.prune import PrunePhase
from memctl.pipeline import execute
from memctl.store import models as m
from memctl.transfer import export_records
from memctl.verify import verify

STORE_KINDS = ["company", "user", "conversation", "agent", "note_type", "note", "example"]


def export(db: Db, kinds=None) -> str:  # type: ignore[no-untyped-def]
    """Export the store; with `kinds`, leave out memctl's own agent row (a run record)."""
    buffer = io.StringIO()
    export_records(db.engine, buffer, kinds)
    if kinds is None:
        return buffer.getvalue()
    return "".join(line for line in buffer.getvalue().splitlines(keepends=True) if m.MEMCTL_AGENT_ID not in line)


def without_run_tags(text: str) -> str:
    """Mask what names the run: Comments tags and a created note's SourceAIAgentRunID."""
    text = re.sub(r'"SourceAIAgentRunID":"[0-9a-f-]{36}"', '"SourceAIAgentRunID":"#"', text)
    return re.sub(r"run [0-9a-f]{8}\]", "run ########]", text)


def memctl_rows(db: Db) -> dict[str, int]:
    with db.engine.connect() as conn:
        return {t.name: conn.execute(sa.select(sa.func.count()).select_from(t)).scalar_one() for t in (m.change, m.lease, m.run, m.run_step, m.verdict)}


def test_dream_runs_the_phases_in_the_fixed_order(db: Db) -> None:
    seed(db.engine, NOW)
    report = api.dream(at(db.settings, NOW), engine=db.engine)
    assert [p.phase for p in report.phases] == ["consolidate", "contradictions", "prune", "archive"]
    with db.engine.connect() as conn:
        steps = conn.execute(sa.select(m.run_step.c.StepName).where(m.run_step.c.AgentRunID == report.run_id, m.run_step.c.ParentID.is_(None)).order_by(m.run_step.c.StepNumber)).scalars().all()
        run = conn.execute(sa.select(m.run).where(m.run.c.ID == report.run_id)).mappings().one()
    assert steps[0] == "Check Maintenance Gate"
    assert steps.index("Consolidate Related Notes") < steps.index("Detect Note Contradictions") < steps.index("Prune Stale References") < steps.index("Archive Expired Items")
    assert run["Status"] == "Completed" and run["Success"] is True and run["CompletedAt"] is not None


class Boom:
    name = "boom"
    step_name = "Exploding Phase"

    def plan(self, ctx: PhaseContext, overlay: Overlay):  # type: ignore[no-untyped-def]
        raise RuntimeError("the phase broke")


def test_a_failing_phase_is_recorded_and_the_next_still_runs(db: Db) -> None:
    store = Store(db.engine)
    orphan = store.note("x", AgentID=store.agent(status="Disabled"))
    ctx = api.context(at(db.settings, NOW), db.engine, api.RunOptions())
    report = execute(ctx, "memctl dream", [Boom(), PrunePhase()])
    assert report.exit_code == 1 and report.status == "failed"
    assert [p.outcome for p in report.phases] == ["failed", "done"]
    assert store.status(orphan) == "Archived"
    with db.engine.connect() as conn:
        run = conn.execute(sa.select(m.run).where(m.run.c.ID == report.run_id)).mappings().one()
        steps = {r["StepName"]: r for r in conn.execute(sa.select(m.run_step).where(m.run_step.c.AgentRunID == report.run_id)).mappings()}
    assert run["Success"] is False and run["Status"] == "Failed"
    assert steps["Exploding Phase"]["Status"] == "Failed" and "the phase broke" in steps["Exploding Phase"]["ErrorMessage"]
    assert steps["Prune Stale References"]["Status"] == "Completed"


def test_a_second_concurrent_dream_exits_0_saying_locked(db: Db) -> None:
    held = lock.acquire(db.engine, "maintenance", None, 300, db.settings.current_time, holder="other-host:42")
    assert isinstance(held, lock.Lease)
    env = db.env()
    result = CliRunner().invoke(app, ["--db-url", env["MEMCTL_DB_URL"], *(["--db-schema", env["MEMCTL_DB_SCHEMA"]] if "MEMCTL_DB_SCHEMA" in env else []), "dream"])
    assert result.exit_code == 0, result.output
    assert "locked by other-host:42" in result.output
    held.release()


def test_dry_run_writes_nothing(db: Db) -> None:
    seed(db.engine, NOW)
    before, rows_before = export(db), memctl_rows(db)
    report = api.dream(at(db.settings, NOW), api.RunOptions(dry_run=True), engine=db.engine)
    assert report.status == "dry-run" and sum(len(p.rows) for p in report.phases) > 5
    assert export(db) == before and memctl_rows(db) == rows_before
    for name in ("prune", "archive"):
        api.run_phase(at(db.settings, NOW), name, api.RunOptions(dry_run=True), engine=db.engine)
    assert export(db) == before and memctl_rows(db) == rows_before


def test_a_saved_plan_applied_later_reaches_the_same_end_state(db: Db, tmp_path: Path) -> None:
    twin = make_db(db.backend, tmp_path / "twin", schema=None) if db.backend == "sqlite" else None
    if twin is None:
        import uuid

        twin_schema = "t_" + uuid.uuid4().hex[:12]
        twin = make_db("postgresql", tmp_path / "twin", schema=twin_schema)
    try:
        seed(db.engine, NOW)
        seed(twin.engine, NOW)
        plan_file = tmp_path / "plan.json"
        preview = api.dream(at(twin.settings, NOW), api.RunOptions(dry_run=True, plan_out=str(plan_file)), engine=twin.engine)
        planned = sum(len(p.rows) for p in preview.phases)
        applied = api.apply_plan(at(twin.settings, NOW), str(plan_file), engine=twin.engine)
        direct = api.dream(at(db.settings, NOW), engine=db.engine)
        assert sum(p.applied for p in applied.phases) == planned == sum(p.applied for p in direct.phases)
        assert without_run_tags(export(twin, STORE_KINDS)) == without_run_tags(export(db, STORE_KINDS))
    finally:
        if twin.settings.db_schema:
            with twin.engine.begin() as conn:
                conn.exec_driver_sql(f'DROP SCHEMA "{twin.settings.db_schema}" CASCADE')
        twin.engine.dispose()


def test_a_plan_whose_rows_changed_is_partially_skipped_and_says_so(db: Db, tmp_path: Path) -> None:
    store = Store(db.engine)
    legacy = store.agent(status="Disabled")
    first, second = store.note("a", AgentID=legacy), store.note("b", AgentID=legacy)
    plan_file = tmp_path / "plan.json"
    api.run_phase(at(db.settings, NOW), "prune", api.RunOptions(dry_run=True, plan_out=str(plan_file)), engine=db.engine)
    with db.engine.begin() as conn:  # the application touches one note after planning
        conn.execute(m.note.update().where(m.note.c.ID == second).values(AccessCount=5, __mj_UpdatedAt=NOW))
    report = api.apply_plan(at(db.settings, NOW), str(plan_file), engine=db.engine)
    phase = report.phases[0]
    assert phase.applied == 1 and len(phase.skipped) == 1
    assert phase.skipped[0][0] == second and "changed since planning" in phase.skipped[0][1] and "AccessCount" in phase.skipped[0][1]
    assert store.status(first) == "Archived" and store.status(second) == "Active"
    result = CliRunner().invoke(app, ["--db-url", db.settings.db_url, *(["--db-schema", db.settings.db_schema] if db.settings.db_schema else []), "--now", NOW.isoformat(), "apply", str(plan_file)])
    assert result.exit_code == 0 and "skipped" in result.output


def test_undo_after_a_dream_restores_the_store_exactly(db: Db) -> None:
    seed(db.engine, NOW)
    before = export(db, STORE_KINDS)
    report = api.dream(at(db.settings, NOW), engine=db.engine)
    assert export(db, STORE_KINDS) != before
    undone = api.undo(at(db.settings, NOW), report.run_id, engine=db.engine)
    assert undone.exit_code == 0 and undone.phases[0].applied > 0
    with db.engine.connect() as conn:  # undo revokes the notes the run created; every other row is as before
        created = set(conn.execute(sa.select(m.change.c.RecordID).where(m.change.c.RunID == report.run_id, m.change.c.Action == "insert")).scalars())
        statuses = set(conn.execute(sa.select(m.note.c.Status).where(m.note.c.ID.in_(created))).scalars())
    assert created and statuses == {"Revoked"}
    assert "".join(line for line in export(db, STORE_KINDS).splitlines(keepends=True) if not any(str(c) in line for c in created)) == before
    assert verify(db.engine) == []


def test_undo_refuses_records_changed_since_unless_forced(db: Db) -> None:
    store = Store(db.engine)
    note = store.note("x", AgentID=store.agent(status="Disabled"))
    report = api.run_phase(at(db.settings, NOW), "prune", engine=db.engine)
    with db.engine.begin() as conn:
        conn.execute(m.note.update().where(m.note.c.ID == note).values(Comments="edited by hand", __mj_UpdatedAt=NOW))
    refused = api.undo(at(db.settings, NOW), report.run_id, engine=db.engine)
    assert refused.exit_code == 1 and "changed since" in (refused.phases[0].error or "")
    assert store.status(note) == "Archived"
    forced = api.undo(at(db.settings, NOW), report.run_id, force=True, engine=db.engine)
    assert forced.exit_code == 0 and store.status(note) == "Active"


def test_undo_dry_run_writes_nothing_and_the_undo_is_itself_undoable(db: Db) -> None:
    store = Store(db.engine)
    note = store.note("x", AgentID=store.agent(status="Disabled"))
    report = api.run_phase(at(db.settings, NOW), "prune", engine=db.engine)
    archived = export(db)
    preview = api.undo(at(db.settings, NOW), report.run_id, dry_run=True, engine=db.engine)
    assert preview.status == "dry-run" and len(preview.phases[0].rows) == 1 and export(db) == archived
    undo_report = api.undo(at(db.settings, NOW), report.run_id, engine=db.engine)
    assert store.status(note) == "Active"
    api.undo(at(db.settings, NOW), undo_report.run_id, engine=db.engine)
    assert store.status(note) == "Archived"
    assert verify(db.engine) == []


def test_verify_catches_hand_made_breaches(db: Db) -> None:
    store = Store(db.engine)
    target = store.note("target")
    active_linked = store.note("linked but active", ConsolidatedIntoNoteID=target)
    a = store.note("a", Status="Revoked")
    b = store.note("b", Status="Revoked", ConsolidatedIntoNoteID=a)
    with db.engine.begin() as conn:
        conn.execute(m.note.update().where(m.note.c.ID == a).values(ConsolidatedIntoNoteID=b))
    unlogged = store.note("x", Comments="[memctl 2026-01-01 run deadbeef] Archived: forged", Status="Archived")
    rules = {(b.rule, b.record) for b in verify(db.engine)}
    assert ("link-status", active_linked) in rules
    assert ("unlogged", unlogged) in rules
    assert any(rule == "cycle" for rule, _ in rules)
    result = CliRunner().invoke(app, ["--db-url", db.settings.db_url, *(["--db-schema", db.settings.db_schema] if db.settings.db_schema else []), "verify", "--json"])
    assert result.exit_code == 1 and json.loads(result.output)["ok"] is False


def test_verify_flags_a_changed_immutable_note(db: Db) -> None:
    store = Store(db.engine)
    note = store.note("x", AgentID=store.agent(status="Disabled"))
    api.run_phase(at(db.settings, NOW), "prune", engine=db.engine)
    assert verify(db.engine) == []
    with db.engine.begin() as conn:  # someone later marks the note Immutable: memctl's change is now a breach
        conn.execute(m.note.update().where(m.note.c.ID == note).values(ProtectionTier="Immutable"))
    assert [b.rule for b in verify(db.engine)] == ["immutable"]


def test_json_and_quiet_output(db: Db) -> None:
    args = ["--db-url", db.settings.db_url, *(["--db-schema", db.settings.db_schema] if db.settings.db_schema else []), "--now", NOW.isoformat()]
    Store(db.engine).note("x", AgentID=Store(db.engine).agent(status="Disabled"))
    quiet = CliRunner().invoke(app, [*args, "dream", "--quiet"])
    assert quiet.exit_code == 0 and quiet.stdout == ""
    summary = CliRunner().invoke(app, [*args, "dream", "--json"])
    data = json.loads(summary.stdout)
    assert data["status"] == "skipped" and data["success"] is True and data["gate"]["open"] is False
