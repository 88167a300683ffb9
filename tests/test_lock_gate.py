"""The lease lock (one maintenance run at a time) and the maintenance gate (FR-003)."""

from __future__ import annotations

from datetime import timedelta

import sqlalchemy as sa

from conftest import Db
from factory import NOW, Store, at
from memctl import api, lock
from memctl.gate import check_gate
from memctl.recorder import RunRecorder
from memctl.store import models as m


def clock(now=NOW):  # type: ignore[no-untyped-def]
    return lambda: now


def test_a_second_holder_is_refused(db: Db) -> None:
    first = lock.acquire(db.engine, "maintenance", None, 60, clock(), holder="host-a:1")
    assert isinstance(first, lock.Lease)
    second = lock.acquire(db.engine, "maintenance", None, 60, clock(), holder="host-b:2")
    assert isinstance(second, lock.LeaseRefused) and second.holder == "host-a:1"
    first.release()
    third = lock.acquire(db.engine, "maintenance", None, 60, clock(), holder="host-b:2")
    assert isinstance(third, lock.Lease)
    third.release()


def test_an_expired_lease_is_taken_over_and_its_dead_run_closed_as_failed(db: Db) -> None:
    dead = RunRecorder(db.engine, clock(), "memctl dream")
    dead.start_run()
    step = dead.start_step("Prune Stale References")
    held = lock.acquire(db.engine, "maintenance", dead.run_id, 30, clock(), holder="crashed:1")
    assert isinstance(held, lock.Lease)
    # the holder dies: nobody renews; 31 s later the lease has expired
    later = clock(NOW + timedelta(seconds=31))
    taker = lock.acquire(db.engine, "maintenance", None, 30, later, holder="next:2")
    assert isinstance(taker, lock.Lease) and taker.taken_over_run == dead.run_id
    with db.engine.connect() as conn:
        run = conn.execute(sa.select(m.run).where(m.run.c.ID == dead.run_id)).mappings().one()
        step_row = conn.execute(sa.select(m.run_step).where(m.run_step.c.ID == step)).mappings().one()
    assert run["Status"] == "Failed" and run["Success"] is False and "lease expired" in run["ErrorMessage"]
    assert step_row["Status"] == "Failed"
    # the dead holder cannot renew any more
    assert held.renew() is False and held.lost.is_set()
    taker.release()


def test_a_live_lease_is_renewed(db: Db) -> None:
    times = [NOW]
    held = lock.acquire(db.engine, "maintenance", None, 30, lambda: times[0], holder="a:1")
    assert isinstance(held, lock.Lease)
    times[0] = NOW + timedelta(seconds=25)
    assert held.renew()
    times[0] = NOW + timedelta(seconds=40)  # past the first expiry, within the renewed one
    assert isinstance(lock.acquire(db.engine, "maintenance", None, 30, lambda: times[0], holder="b:2"), lock.LeaseRefused)
    held.release()


def _gate(db: Db, now, **changes):  # type: ignore[no-untyped-def]
    with db.engine.connect() as conn:
        return check_gate(conn, at(db.settings, now, **changes), now)


def test_gate_closed_within_24h_of_a_completed_maintenance_run_and_open_after(db: Db) -> None:
    assert _gate(db, NOW).open
    report = api.dream(at(db.settings, NOW), engine=db.engine)
    assert report.status == "completed"
    assert not _gate(db, NOW + timedelta(hours=23)).open
    assert _gate(db, NOW + timedelta(hours=24)).open
    skipped = api.dream(at(db.settings, NOW + timedelta(hours=1)), engine=db.engine)
    assert skipped.status == "skipped" and skipped.exit_code == 0
    forced = api.dream(at(db.settings, NOW + timedelta(hours=2)), force=True, engine=db.engine)
    assert forced.status == "completed"


def test_a_skipped_run_is_recorded_and_does_not_move_the_gate(db: Db) -> None:
    api.dream(at(db.settings, NOW), engine=db.engine)
    api.dream(at(db.settings, NOW + timedelta(hours=12)), engine=db.engine)
    with db.engine.connect() as conn:
        names = [r for r in conn.execute(sa.select(m.run.c.RunName).order_by(m.run.c.StartedAt)).scalars()]
        gate_steps = conn.execute(sa.select(m.run_step.c.OutputData).where(m.run_step.c.StepName == "Check Maintenance Gate")).scalars().all()
    assert names == ["memctl dream", "memctl dream (skipped)"]
    assert any('"outcome":"skipped"' in s for s in gate_steps)
    assert _gate(db, NOW + timedelta(hours=24)).open


def test_a_run_that_only_failed_does_not_close_the_gate(db: Db) -> None:
    failed = RunRecorder(db.engine, clock(), "memctl dream")
    failed.start_run()
    failed.finish_run(success=False, message="boom")
    assert _gate(db, NOW + timedelta(hours=1)).open


def test_single_phase_commands_and_dry_runs_do_not_close_the_gate(db: Db) -> None:
    api.run_phase(at(db.settings, NOW), "prune", engine=db.engine)
    api.dream(at(db.settings, NOW), api.RunOptions(dry_run=True), engine=db.engine)
    assert _gate(db, NOW + timedelta(hours=1)).open


def test_new_note_threshold(db: Db) -> None:
    store = Store(db.engine)
    api.dream(at(db.settings, NOW), engine=db.engine)
    later = NOW + timedelta(hours=30)
    decision = _gate(db, later, gate_min_new_notes=3)
    assert not decision.open and decision.new_notes == 0
    for i in range(3):
        store.note(f"fact {i}", __mj_CreatedAt=NOW + timedelta(hours=2), __mj_UpdatedAt=NOW + timedelta(hours=2))
    assert _gate(db, later, gate_min_new_notes=3).open
    assert not _gate(db, later, gate_min_new_notes=4).open


def test_overlapping_lease_names() -> None:
    assert lock.overlaps("maintenance", "maintenance:shard 0/2")
    assert lock.overlaps("maintenance:shard 1/2", "maintenance")
    assert lock.overlaps("maintenance:shard 0/2", "maintenance:shard 0/3")
    assert not lock.overlaps("maintenance:shard 0/2", "maintenance:shard 1/2")
    assert lock.overlaps("maintenance:shard 1/2", "maintenance:shard 1/2")


def test_an_unsharded_run_is_refused_while_a_shard_worker_holds_its_lease(db: Db) -> None:
    shard = lock.acquire(db.engine, "maintenance:shard 0/2", None, 60, clock(), holder="w0:1")
    other = lock.acquire(db.engine, "maintenance:shard 1/2", None, 60, clock(), holder="w1:2")
    assert isinstance(shard, lock.Lease) and isinstance(other, lock.Lease)
    refused = lock.acquire(db.engine, "maintenance", None, 60, clock(), holder="all:3")
    assert isinstance(refused, lock.LeaseRefused) and refused.holder in ("w0:1", "w1:2")
    shard.release()
    other.release()
    assert isinstance(lock.acquire(db.engine, "maintenance", None, 60, clock(), holder="all:3"), lock.Lease)
