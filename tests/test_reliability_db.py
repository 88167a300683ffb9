"""Database faults and concurrency: a killed backend, four dreams at once, an application writing meanwhile.

- PostgreSQL terminates the session's backend in the middle of a unit (pg_terminate_backend from
  a SQLAlchemy hook, on a second connection): the phase fails cleanly (Failed step, exit 1), the
  unit in flight is rolled back whole, the units before it stay applied with their change-log
  rows, later phases still run, and the next dream completes the work.
- Four `memctl dream` processes start at once: exactly one works, the others exit 0 saying the
  store is locked, and only one run is recorded.
- An application changes notes after they were planned (between a saved plan and `memctl apply`,
  and between plan and apply inside one dream): the guard, checked inside the unit's transaction,
  skips those units; nothing is revoked or archived on stale data; the next run reconsiders them.
  And an application thread editing notes as fast as it can while a real dream process runs:
  not one of its edits is lost.
- A pooled connection the server dropped while idle is replaced without the run noticing.
- A SQLite store's WAL is checkpointed every 10,000 pages while memctl writes; another program
  sees each commit meanwhile, and the .db file alone holds everything once memctl closes it.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import threading
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy import event

from conftest import PG_URL, Db
from factory import NOW, Store, at
from llmstub import LLMStub
from memctl import api, pipeline
from memctl.settings import Settings, replace
from memctl.store import models as m
from memctl.verify import verify
from test_reliability_audit import audit, generate_corpus, snapshot

KEY = "sk-db-faults-test-key"


def llm(db: Db, stub: LLMStub, now=NOW, **changes: Any) -> Settings:  # type: ignore[no-untyped-def]
    return replace(at(db.settings, now), llm_base_url=stub.base_url, llm_model="stub-model", llm_api_key=KEY, max_pairs=1000, **changes)


@pytest.fixture
def pg(db: Db) -> Db:
    if db.backend != "postgresql":
        pytest.skip("PostgreSQL only: terminates server backends")
    return db


class BackendKiller:
    """Terminate the backend of the connection that is about to run the Nth matching note statement
    (each N of `nth`: a batch's statement, then one of the units applied again one by one)."""

    def __init__(self, db: Db, matches: str, nth: "int | tuple[int, ...]") -> None:
        self.matches = matches
        self.nth = (nth,) if isinstance(nth, int) else tuple(nth)
        self.seen = 0
        self.killed: list[int] = []
        self.admin = sa.create_engine(PG_URL)
        event.listen(db.engine, "before_cursor_execute", self)

    def __call__(self, conn: Any, cursor: Any, statement: str, params: Any, context: Any, executemany: bool) -> None:
        if not statement.startswith(self.matches) or '"AIAgentNote" SET' not in statement:
            return
        self.seen += 1
        if self.seen not in self.nth:
            return
        pid = conn.connection.dbapi_connection.info.backend_pid
        self.killed.append(pid)
        with self.admin.connect() as admin:
            assert admin.execute(sa.text("SELECT pg_terminate_backend(:pid)"), {"pid": pid}).scalar_one() is True
            # give the signal a moment to land; a backend that has not exited yet dies on the next statement anyway
            deadline = time.monotonic() + 2
            while time.monotonic() < deadline and admin.execute(sa.text("SELECT count(*) FROM pg_stat_activity WHERE pid = :pid"), {"pid": pid}).scalar_one():
                time.sleep(0.01)

    def remove(self, db: Db) -> None:
        event.remove(db.engine, "before_cursor_execute", self)
        self.admin.dispose()


def steps(db: Db, run_id: str) -> dict[str, dict]:
    with db.engine.connect() as conn:
        rows = conn.execute(sa.select(m.run_step).where(m.run_step.c.AgentRunID == run_id, m.run_step.c.ParentID.is_(None))).mappings()
        return {r["StepName"]: dict(r) for r in rows}


def test_backend_killed_mid_consolidation_unit_rolls_that_unit_back(pg: Db) -> None:
    db = pg
    generate_corpus(db.engine, NOW, notes=150, examples=30, seed=21, llm_groups=6)
    baseline = snapshot(db.engine)
    # The six cluster units are one batch (one transaction): the backend dies as the batch revokes
    # their sources (the first UPDATE), so the batch rolls back and its units are applied again one
    # transaction each; then it dies again as the third unit revokes its sources (the fourth UPDATE).
    killer = BackendKiller(db, 'UPDATE', nth=(1, 4))
    try:
        with LLMStub() as stub:
            report = api.dream(llm(db, stub), force=True, engine=db.engine)
    finally:
        killer.remove(db)
    assert len(killer.killed) == 2, "the hook did not fire twice"
    assert report.exit_code == 1 and report.status == "failed"
    phases = {p.phase: p for p in report.phases}
    assert phases["consolidate"].outcome == "failed" and "terminat" in (phases["consolidate"].error or "").lower()
    assert [p.outcome for p in report.phases[1:]] == ["done", "done", "done"], [p.error for p in report.phases]  # FR-004: the next phases still ran
    recorded = steps(db, report.run_id)
    assert recorded["Consolidate Related Notes"]["Status"] == "Failed"
    assert recorded["Prune Stale References"]["Status"] == "Completed"
    with db.engine.connect() as conn:
        run = conn.execute(sa.select(m.run).where(m.run.c.ID == report.run_id)).mappings().one()
        created = conn.execute(sa.select(m.note.c.ID).where(m.note.c.DerivedFromNoteIDs.is_not(None))).scalars().all()
    assert run["Status"] == "Failed"
    assert len(created) == 2  # units 1 and 2 applied; unit 3's insert was rolled back with its revocations
    assert audit(db.engine, baseline) == [] and verify(db.engine) == []

    with LLMStub() as stub:
        again = api.dream(llm(db, stub, NOW + timedelta(minutes=5)), force=True, engine=db.engine)
    assert again.status == "completed", again.message
    with db.engine.connect() as conn:
        created = conn.execute(sa.select(m.note.c.ID).where(m.note.c.DerivedFromNoteIDs.is_not(None))).scalars().all()
    assert len(created) == 6
    assert audit(db.engine, baseline) == [] and verify(db.engine) == []


def test_backend_killed_mid_batch_applies_its_units_again_one_by_one(pg: Db) -> None:
    """Several units in one transaction (DESIGN 4.1): a backend killed in it loses none of them.

    The batch rolls back whole (no half unit is ever visible), and its units are applied again
    one transaction each, re-checked against the rows as they are: the phase completes with every
    cluster merged once, and the change log holds each change once.
    """
    db = pg
    generate_corpus(db.engine, NOW, notes=150, examples=30, seed=21, llm_groups=6)
    baseline = snapshot(db.engine)
    killer = BackendKiller(db, 'UPDATE', nth=1)
    try:
        with LLMStub() as stub:
            report = api.dream(llm(db, stub), force=True, engine=db.engine)
    finally:
        killer.remove(db)
    assert killer.killed, "the hook never fired"
    assert report.status == "completed" and report.exit_code == 0, [p.error for p in report.phases]
    with db.engine.connect() as conn:
        created = conn.execute(sa.select(m.note.c.ID).where(m.note.c.DerivedFromNoteIDs.is_not(None))).scalars().all()
        changes = conn.execute(sa.select(m.change.c.RecordID, m.change.c.Action).where(m.change.c.RunID == report.run_id)).all()
    assert len(created) == 6
    assert len(changes) == len(set(changes)) and sum(1 for _, action in changes if action == "insert") == 6
    assert audit(db.engine, baseline) == [] and verify(db.engine) == []


def test_backend_killed_mid_archive_batch_keeps_whole_batches(pg: Db) -> None:
    db = pg
    store = Store(db.engine)
    agent = store.agent()
    from memctl.store.engine import write

    rows = [{"ID": f"00000000-0000-4000-8000-{i:012d}", "AgentID": agent, "Note": f"expired fact {i}", "Type": "Context",
             "IsAutoGenerated": True, "Status": "Active", "ProtectionTier": "Standard", "AccessCount": 0,
             "ExpiresAt": NOW - timedelta(days=1), "__mj_CreatedAt": NOW - timedelta(days=2, seconds=i), "__mj_UpdatedAt": NOW - timedelta(days=2)}
            for i in range(1200)]
    with write(db.engine) as conn:
        conn.execute(m.note.insert(), rows)
    baseline = snapshot(db.engine)
    killer = BackendKiller(db, 'UPDATE', nth=2)  # the second unit of 500 archivals (a transaction of its own)
    try:
        report = api.run_phase(at(db.settings, NOW), "archive", engine=db.engine)
    finally:
        killer.remove(db)
    assert report.exit_code == 1 and report.phases[0].outcome == "failed"
    assert steps(db, report.run_id)["Archive Expired Items"]["Status"] == "Failed"
    store_now = snapshot(db.engine)
    archived = sum(1 for r in store_now.values() if r["Status"] == "Archived")
    with db.engine.connect() as conn:
        logged = conn.execute(sa.select(sa.func.count()).select_from(m.change).where(m.change.c.RunID == report.run_id)).scalar_one()
    assert archived == logged == 500  # batch 1 whole, batch 2 rolled back whole, batch 3 never started
    assert audit(db.engine, baseline) == [] and verify(db.engine) == []
    again = api.run_phase(at(db.settings, NOW + timedelta(minutes=1)), "archive", engine=db.engine)
    assert again.exit_code == 0 and again.phases[0].applied == 700
    assert audit(db.engine, baseline) == [] and verify(db.engine) == []


def test_a_backend_killed_while_idle_in_the_pool_is_replaced(pg: Db) -> None:
    """pool_pre_ping: a connection the server dropped between units is replaced, the run is unaffected."""
    db = pg
    generate_corpus(db.engine, NOW, notes=300, examples=50, seed=22)
    admin = sa.create_engine(PG_URL)
    seen_writes: list[str] = []
    killed: list[int] = []

    def note_writes(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if statement.startswith("INSERT INTO") and "memctl_change" in statement:
            seen_writes.append(statement)

    def kill_on_checkin(dbapi_connection: Any, record: Any) -> None:
        # the first unit has committed and its connection is back in the pool, idle: the server drops it
        if killed or not seen_writes or dbapi_connection is None:
            return
        pid = dbapi_connection.info.backend_pid
        killed.append(pid)
        with admin.connect() as a:
            a.execute(sa.text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and a.execute(sa.text("SELECT count(*) FROM pg_stat_activity WHERE pid = :pid"), {"pid": pid}).scalar_one():
                time.sleep(0.01)

    event.listen(db.engine, "after_cursor_execute", note_writes)
    event.listen(db.engine.pool, "checkin", kill_on_checkin)
    try:
        report = api.dream(at(db.settings, NOW), force=True, engine=db.engine)
    finally:
        event.remove(db.engine, "after_cursor_execute", note_writes)
        event.remove(db.engine.pool, "checkin", kill_on_checkin)
        admin.dispose()
    assert killed
    assert report.status == "completed" and report.exit_code == 0, report.message
    assert verify(db.engine) == []


# --- concurrency -----------------------------------------------------------------------------


def test_four_dreams_at_once_exactly_one_works(db: Db, tmp_path: Path) -> None:
    generate_corpus(db.engine, NOW, notes=300, examples=50, seed=23, llm_groups=4)
    baseline = snapshot(db.engine)
    with LLMStub(latency=2.0) as stub:  # each LLM call takes 2 s: the winner holds the lease for seconds
        env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMCTL_", "OPENAI_"))}
        env.update(db.env())
        env.update({"MEMCTL_LLM_BASE_URL": stub.base_url, "MEMCTL_LLM_MODEL": "stub-model", "MEMCTL_LLM_API_KEY": KEY})
        gate = threading.Barrier(4)
        results: list[subprocess.CompletedProcess] = []

        def dream() -> None:
            gate.wait()
            results.append(subprocess.run([sys.executable, "-m", "memctl", "--now", NOW.isoformat(), "dream", "--force"],
                                          env=env, capture_output=True, text=True, cwd=tmp_path, timeout=120))

        workers = [threading.Thread(target=dream) for _ in range(4)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
    assert [r.returncode for r in results] == [0, 0, 0, 0], [r.stderr for r in results]
    worked = [r for r in results if "completed" in r.stdout]
    locked = [r for r in results if "the store is locked by" in r.stdout]
    assert len(worked) == 1 and len(locked) == 3, [r.stdout[-300:] for r in results]
    with db.engine.connect() as conn:
        names = conn.execute(sa.select(m.run.c.RunName, m.run.c.Status)).all()
    assert names == [("memctl dream", "Completed")]
    assert audit(db.engine, baseline) == [] and verify(db.engine) == []


def test_a_saved_plan_skips_notes_the_application_changed_and_the_next_run_reconsiders_them(db: Db, tmp_path: Path) -> None:
    corpus = generate_corpus(db.engine, NOW, notes=0, examples=0, seed=24, llm_groups=3)
    groups = corpus["groups"]
    store = Store(db.engine)
    orphan = store.note("a note whose agent is gone", AgentID="00000000-0000-4000-8000-0000000000aa")
    expired = store.note("an expired note", ExpiresAt=NOW - timedelta(hours=1))
    plan_file = tmp_path / "plan.json"
    with LLMStub() as stub:
        preview = api.dream(llm(db, stub), api.RunOptions(dry_run=True, plan_out=str(plan_file)), force=True, engine=db.engine)
        planned = {p.phase: len(p.rows) for p in preview.phases}
        assert planned["consolidate"] == 15 and planned["prune"] == 1 and planned["archive"] == 1
        # the application, after planning: edits a cluster source, reads a contradiction's loser, touches the orphan, extends the expiry
        edited, touched = groups[0]["cluster"][1], groups[1]["pair"][0]
        later = NOW + timedelta(minutes=1)
        with db.engine.begin() as conn:
            conn.execute(m.note.update().where(m.note.c.ID == edited).values(Note=m.note.c.Note + " Confirmed again.", __mj_UpdatedAt=later))
            conn.execute(m.note.update().where(m.note.c.ID == touched).values(AccessCount=m.note.c.AccessCount + 1, LastAccessedAt=later, __mj_UpdatedAt=later))
            conn.execute(m.note.update().where(m.note.c.ID == orphan).values(LastAccessedAt=later, __mj_UpdatedAt=later))
            conn.execute(m.note.update().where(m.note.c.ID == expired).values(ExpiresAt=NOW + timedelta(days=30), __mj_UpdatedAt=later))
        baseline = snapshot(db.engine)
        applied = api.apply_plan(at(db.settings, NOW), str(plan_file), engine=db.engine)
        skipped = {record for p in applied.phases for record, _ in p.skipped}
        # the whole cluster unit is skipped (atomic), the other units applied
        assert set(groups[0]["cluster"]) | {orphan, expired} <= skipped
        assert touched in skipped or store.status(touched) == "Active"
        for note in groups[0]["cluster"] + [orphan, expired, touched]:
            assert store.status(note) == "Active", note
        for note in groups[2]["cluster"]:
            assert store.status(note) == "Revoked"
        assert audit(db.engine, baseline) == [] and verify(db.engine) == []
        # the next run plans on fresh data: the edited cluster is asked again, the orphan archived, the extended note kept
        asked_before = len(stub.chat_requests)
        again = api.dream(llm(db, stub, NOW + timedelta(minutes=2)), force=True, engine=db.engine)
        assert again.status == "completed", again.message
        fresh = [r for r in stub.chat_requests[asked_before:] if r.body["response_format"]["json_schema"]["name"] == "consolidation_reply"]
        assert any("Confirmed again." in r.message("user") for r in fresh)
    assert store.status(orphan) == "Archived" and store.status(expired) == "Active"
    assert all(store.status(n) == "Revoked" for n in groups[0]["cluster"])
    assert verify(db.engine) == []


def test_a_note_changed_between_plan_and_apply_inside_one_dream_is_not_revoked(db: Db, monkeypatch: pytest.MonkeyPatch) -> None:
    """The application commits a change after the phase planned and before its unit's transaction: the guard skips it."""
    corpus = generate_corpus(db.engine, NOW, notes=0, examples=0, seed=25, llm_groups=3)
    groups = corpus["groups"]
    store = Store(db.engine)
    stale = store.note("stale but about to be read", age_days=200, accessed_days_ago=150)
    original_apply = pipeline._apply
    later = NOW + timedelta(seconds=30)

    def application_writes_then_apply(ctx, plan, recorder, step_id, lease, outcomes):  # type: ignore[no-untyped-def]
        with db.engine.begin() as conn:  # another process, committing while memctl is between plan and apply
            if plan.phase == "consolidate":
                conn.execute(m.note.update().where(m.note.c.ID == groups[0]["cluster"][0]).values(Note=m.note.c.Note + " Confirmed again.", __mj_UpdatedAt=later))
            if plan.phase == "contradictions":
                conn.execute(m.note.update().where(m.note.c.ID.in_(groups[1]["pair"])).values(LastAccessedAt=later, __mj_UpdatedAt=later))
            if plan.phase == "archive":
                conn.execute(m.note.update().where(m.note.c.ID == stale).values(LastAccessedAt=later, AccessCount=1, __mj_UpdatedAt=later))
        return original_apply(ctx, plan, recorder, step_id, lease, outcomes)

    monkeypatch.setattr(pipeline, "_apply", application_writes_then_apply)
    with LLMStub() as stub:
        report = api.dream(llm(db, stub), force=True, engine=db.engine)
    monkeypatch.undo()
    assert report.status == "completed"
    by_phase = {p.phase: p for p in report.phases}
    assert {r for r, _ in by_phase["consolidate"].skipped} >= set(groups[0]["cluster"])
    assert all(store.status(n) == "Active" for n in groups[0]["cluster"])
    assert all(store.status(n) == "Revoked" for n in groups[2]["cluster"])
    assert all(store.status(n) == "Active" for n in groups[1]["pair"])  # its loser was read meanwhile: not revoked on stale data
    assert store.status(stale) == "Active"
    assert "changed since planning" in " ".join(why for _, why in by_phase["archive"].skipped)
    assert verify(db.engine) == []
    with LLMStub() as stub:
        again = api.dream(llm(db, stub, NOW + timedelta(minutes=1)), force=True, engine=db.engine)
    assert again.status == "completed"
    assert all(store.status(n) == "Revoked" for n in groups[0]["cluster"])  # reconsidered and consolidated
    assert sorted(store.status(n) for n in groups[1]["pair"]) == ["Active", "Revoked"]
    assert store.status(stale) == "Active"  # it was read: no longer stale
    assert verify(db.engine) == []


def test_an_application_writing_while_a_dream_runs_loses_no_update(db: Db, tmp_path: Path) -> None:
    """A real dream process and an application thread write the same notes: every application edit survives.

    The application appends to Comments, bumps AccessCount and __mj_UpdatedAt, one transaction per
    edit, as fast as it can while the dream runs. memctl re-reads each row under a lock inside its
    unit's transaction (SELECT ... FOR UPDATE; SQLite's write lock), so neither side overwrites the
    other, and a unit whose rows the application touched after planning is skipped, not applied.
    """
    from memctl.store.engine import write

    generate_corpus(db.engine, NOW, notes=600, examples=100, seed=26, llm_groups=6)
    with db.engine.connect() as conn:
        targets = [str(i) for i in conn.execute(sa.select(m.note.c.ID).where(m.note.c.Status == "Active")).scalars()]
    edits: list[tuple[str, str]] = []
    rng = random.Random(26)
    with LLMStub(latency=0.05) as stub:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMCTL_", "OPENAI_"))}
        env.update(db.env())
        env.update({"MEMCTL_LLM_BASE_URL": stub.base_url, "MEMCTL_LLM_MODEL": "stub-model", "MEMCTL_LLM_API_KEY": KEY})
        # Files, not pipes: the loop below does not read while the dream runs, and a report of
        # more than a pipe's buffer (64 KiB; the --json report carries every change's texts)
        # would block the dream on its write for ever.
        stdout, stderr = (tmp_path / "dream.out").open("w+"), (tmp_path / "dream.err").open("w+")
        proc = subprocess.Popen([sys.executable, "-m", "memctl", "--now", NOW.isoformat(), "dream", "--force", "--json"],
                                env=env, stdout=stdout, stderr=stderr, text=True, cwd=tmp_path)
        number = 0
        while proc.poll() is None:
            note = rng.choice(targets)
            number += 1
            marker = f"app edit {number}"
            with write(db.engine) as conn:
                conn.execute(m.note.update().where(m.note.c.ID == note).values(
                    Comments=sa.func.coalesce(m.note.c.Comments, "") + "\n" + marker,
                    AccessCount=m.note.c.AccessCount + 1, __mj_UpdatedAt=NOW + timedelta(seconds=number),
                ))
            edits.append((note, marker))
        proc.wait(timeout=60)
    out, err = (tmp_path / "dream.out").read_text(), (tmp_path / "dream.err").read_text()
    stdout.close(), stderr.close()
    assert proc.returncode == 0, err
    report = json.loads(out)
    assert report["status"] == "completed"
    assert sum(p["applied"] for p in report["phases"]) > 50 and len(edits) > 20
    with db.engine.connect() as conn:
        comments = {str(r.ID): r.Comments or "" for r in conn.execute(sa.select(m.note.c.ID, m.note.c.Comments))}
    lost = [(note, marker) for note, marker in edits if marker not in comments[note].split("\n")]
    assert lost == []
    skipped = sum(len(p["skipped"]) for p in report["phases"])
    print(f"\n{db.backend}: {len(edits)} application edits during the dream, none lost; {skipped} planned changes skipped as stale")
    assert verify(db.engine) == []


def test_a_sqlite_store_checkpoints_every_10000_wal_pages_and_is_whole_in_its_file_after_close(tmp_path: Path) -> None:
    """memctl's commits leave the WAL to grow to 10,000 pages before a checkpoint (SQLite's default
    is 1,000: a dream's thousands of small units spent their commits checkpointing); another
    program sees every commit meanwhile, and once memctl closes the store the .db file alone holds it all."""
    import sqlite3

    from conftest import make_db
    from memctl.store import engine as store_engine

    db = make_db("sqlite", tmp_path)
    path = Path(db.engine.url.database)  # type: ignore[arg-type]
    with db.engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA wal_autocheckpoint").scalar() == store_engine.SQLITE_WAL_CHECKPOINT_PAGES == 10_000
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert conn.exec_driver_sql("PRAGMA synchronous").scalar() == 1  # NORMAL
    with store_engine.write(db.engine) as conn:
        conn.exec_driver_sql("CREATE TABLE filler (n INTEGER, pad BLOB)")
    for n in range(1_500):  # one small transaction each, as apply commits units: ~2 pages each
        with store_engine.write(db.engine) as conn:
            conn.exec_driver_sql("INSERT INTO filler VALUES (?, randomblob(3000))", (n,))
    other = sqlite3.connect(path)
    try:
        assert other.execute("SELECT count(*) FROM filler").fetchone()[0] == 1_500
        frames = other.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()[1]
        assert frames >= 1_500, frames  # no checkpoint at 1,000 pages reset the WAL
    finally:
        other.close()
    db.engine.dispose()
    wal = path.with_name(path.name + "-wal")
    assert not wal.exists() or wal.stat().st_size == 0  # the last connection checkpointed it all
    copy = tmp_path / "copy.db"
    copy.write_bytes(path.read_bytes())
    alone = sqlite3.connect(copy)
    try:
        assert alone.execute("SELECT count(*) FROM filler").fetchone()[0] == 1_500
    finally:
        alone.close()


def test_a_stop_after_a_phase_recorded_its_children_keeps_the_count_and_records_them_once(db: Db, monkeypatch: pytest.MonkeyPatch) -> None:
    """The deadline passes after consolidate applied its units and recorded a child step per cluster,
    as its step is closed: the step says what was applied, and no child is written twice."""
    from memctl.stopping import DeadlineExceeded

    groups = generate_corpus(db.engine, NOW, notes=0, examples=0, seed=25, llm_groups=3)["groups"]
    original_record, original_finish = pipeline._record_children, pipeline._finish
    plan_children: list = []

    def record(recorder, plan, outcomes, step_id, only_applied=False):  # type: ignore[no-untyped-def]
        if plan.phase == "consolidate" and not only_applied:
            plan_children.extend(plan.children)
        original_record(recorder, plan, outcomes, step_id, only_applied)

    def finish_then_stop(recorder, step_id, input_data, output, *, success, error=None):  # type: ignore[no-untyped-def]
        if success and plan_children and output.get("outcome") == "done":
            raise DeadlineExceeded("stopped at the run deadline (test) after the children were recorded")
        original_finish(recorder, step_id, input_data, output, success=success, error=error)

    monkeypatch.setattr(pipeline, "_record_children", record)
    monkeypatch.setattr(pipeline, "_finish", finish_then_stop)
    with LLMStub() as stub:
        report = api.dream(llm(db, stub), force=True, engine=db.engine)
    monkeypatch.undo()

    assert report.stopped == "deadline"
    revoked = [n for g in groups for n in g["cluster"] if Store(db.engine).status(n) == "Revoked"]
    assert revoked, "consolidate applied its units before the stop"
    with db.engine.connect() as conn:
        [step] = conn.execute(sa.select(m.run_step).where(m.run_step.c.AgentRunID == report.run_id, m.run_step.c.ParentID.is_(None),
                                                          m.run_step.c.StepName == report.phases[0].step_name)).mappings().all()
        children = conn.execute(sa.select(m.run_step.c.InputData).where(m.run_step.c.ParentID == step["ID"])).scalars().all()
        changes = conn.execute(sa.select(sa.func.count()).select_from(m.change).where(m.change.c.RunID == report.run_id)).scalar()
    assert step["Status"] == "Failed" and json.loads(step["OutputData"])["applied"] == changes == report.phases[0].applied
    assert len(children) == len(set(children)) == len(plan_children)
    assert verify(db.engine) == []
