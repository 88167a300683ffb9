"""Bounded runs (issue 14): a run deadline, SIGINT / SIGTERM, and a lock held past its deadline.

A hostile LLM server on 127.0.0.1 answers every request with headers and then one byte of body
every 0.5 s, for ever: the request timeout bounds each read, not the call. Against it:
- `memctl dream` with `run_deadline_seconds` set to a few seconds ends by itself (the subprocess
  timeout is the bound), exits 1, its run row is Failed naming the deadline, the lease row is
  gone, no note changed, and the next dream (against a well-behaved server) completes;
- the same when the run is blocked outside the LLM calls (an embedding request to that server,
  in the main thread): the watchdog stops it a few seconds after the deadline;
- SIGINT and SIGTERM sent while a dream waits on that server end the process (exit 130 / 143)
  with the run Failed, the lease released and no note changed;
- a deadline passing between two units of work leaves the first applied whole (with its
  change-log rows) and the second untouched;
- a lease is never written or renewed past its run's deadline;
- a live lease taken longer ago than the run deadline (a stuck run, or a memctl without
  deadlines, still renewing it) is reported by the next attempt: exit 1, stderr, a Failed run
  with a Failed "Check Run Lease" step, and `memctl_lock_overdue_seconds` in the metrics file.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Iterator

import pytest
import sqlalchemy as sa
from typer.testing import CliRunner

from conftest import Db
from factory import NOW, Store, at, days, new_id
from llmstub import LLMStub
from memctl import api, lock
from memctl.cli import app
from memctl.phases import registry
from memctl.pipeline import execute
from memctl.stopping import Deadline
from memctl.store import models as m
from memctl.store.engine import write
from memctl.verify import verify

DEADLINE = 15
#: the subprocess bound: the deadline, the watchdog's grace and room for a loaded machine
ENDS_WITHIN = DEADLINE + 20
CONTRADICTIONS = "Detect Note Contradictions"


class TricklingServer:
    """An HTTP server that accepts any request and then sends its body one byte every `interval` s."""

    def __init__(self, interval: float = 0.5) -> None:
        self.interval = interval
        self.requests = 0
        self.asked = threading.Event()
        self._stop = threading.Event()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.2)
        self._thread = threading.Thread(target=self._serve, name="trickle", daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._listener.getsockname()[1]}/v1"

    def __enter__(self) -> "TricklingServer":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self._listener.close()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._listener.accept()
            except OSError:
                continue
            threading.Thread(target=self._trickle, args=(conn,), daemon=True).start()

    def _trickle(self, conn: socket.socket) -> None:
        body = b'{"id": "x", "object": "chat.completion", "choices": [' + b" " * 100_000 + b"]}"
        with conn:
            try:
                conn.recv(65536)
                self.requests += 1
                self.asked.set()
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n" + f"Content-Length: {len(body)}\r\n\r\n".encode())
                for i in range(len(body)):
                    if self._stop.wait(self.interval):
                        return
                    conn.sendall(body[i : i + 1])
            except OSError:
                return


@pytest.fixture
def trickle() -> Iterator[TricklingServer]:
    with TricklingServer() as server:
        yield server


def seed_pair(db: Db) -> list[str]:
    """Two notes of one partition that the contradictions phase asks the LLM about."""
    store = Store(db.engine, datetime.now(timezone.utc))
    agent = store.agent()
    return [
        store.note("The user prefers email for billing updates.", AgentID=agent, age_days=3),
        store.note("The user does not prefer email for billing updates.", AgentID=agent, age_days=2),
    ]


def memctl_env(db: Db, base_url: str, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMCTL_", "OPENAI_"))}
    env.update(db.env())
    env.update({
        "MEMCTL_LLM_BASE_URL": base_url, "MEMCTL_LLM_MODEL": "stub-model", "MEMCTL_LLM_API_KEY": "sk-deadline-test-key",
        "MEMCTL_LLM_TIMEOUT": "2", "MEMCTL_LLM_MAX_RETRIES": "0", "MEMCTL_LEASE_SECONDS": "5",
    })
    env.update(extra)
    return env


def dream_command(*extra: str) -> list[str]:
    return [sys.executable, "-m", "memctl", "dream", "--force", *extra]


def runs(db: Db) -> list[dict]:
    with db.engine.connect() as conn:
        return [dict(r) for r in conn.execute(sa.select(m.run).order_by(m.run.c.StartedAt)).mappings()]


def steps(db: Db, run_id: str) -> dict[str, dict]:
    with db.engine.connect() as conn:
        rows = conn.execute(sa.select(m.run_step).where(m.run_step.c.AgentRunID == run_id)).mappings()
        return {r["StepName"]: dict(r) for r in rows}


def leases(db: Db) -> list[dict]:
    with db.engine.connect() as conn:
        return [dict(r) for r in conn.execute(sa.select(m.lease).where(m.lease.c.Name != lock.GUARD_ROW)).mappings()]


def statuses(db: Db, ids: list[str]) -> list[str]:
    with db.engine.connect() as conn:
        by_id = {str(r.ID).lower(): r.Status for r in conn.execute(sa.select(m.note.c.ID, m.note.c.Status))}
    return [by_id[i.lower()] for i in ids]


def test_trickling_server_dream_stops_at_the_run_deadline(db: Db, trickle: TricklingServer, tmp_path: Path) -> None:
    notes = seed_pair(db)
    metrics = tmp_path / "memctl.prom"
    # a call deadline longer than the run's: the run deadline is what stops this dream
    env = memctl_env(db, trickle.base_url, MEMCTL_RUN_DEADLINE_SECONDS=str(DEADLINE), MEMCTL_LLM_TIMEOUT="60")
    result = subprocess.run(dream_command("--metrics-file", str(metrics)), env=env, capture_output=True, text=True, cwd=db.path, timeout=ENDS_WITHIN)

    assert result.returncode == 1, result.stderr
    assert trickle.requests >= 1
    assert "run deadline" in result.stderr
    [run] = runs(db)
    assert run["Status"] == "Failed" and run["Success"] is False
    assert f"run deadline ({DEADLINE} s" in run["ErrorMessage"]
    step = steps(db, run["ID"])[CONTRADICTIONS]
    assert step["Status"] == "Failed" and "run deadline" in step["ErrorMessage"]
    assert leases(db) == []
    assert statuses(db, notes) == ["Active", "Active"]
    assert 'memctl_run_stopped{command="dream",reason="deadline"} 1' in metrics.read_text()

    # The next dream, against a well-behaved server, works.
    with LLMStub() as good:
        again = subprocess.run(dream_command(), env=memctl_env(db, good.base_url), capture_output=True, text=True, cwd=db.path, timeout=120)
    assert again.returncode == 0, again.stderr
    assert runs(db)[-1]["Status"] == "Completed"
    assert leases(db) == []


def test_trickling_server_call_ends_at_the_call_deadline(db: Db, trickle: TricklingServer) -> None:
    """The request timeout (2 s here) bounds a whole call, slow body included (issue 15), well
    inside the run deadline: the phase fails on its own, the dream exits 1 long before the run's end."""
    notes = seed_pair(db)
    env = memctl_env(db, trickle.base_url, MEMCTL_RUN_DEADLINE_SECONDS="600")
    started = time.monotonic()
    result = subprocess.run(dream_command(), env=env, capture_output=True, text=True, cwd=db.path, timeout=ENDS_WITHIN)
    assert result.returncode == 1, result.stderr
    assert "timed out after 2s" in result.stderr and "run deadline" not in result.stderr
    assert time.monotonic() - started < ENDS_WITHIN
    [run] = runs(db)
    assert run["Status"] == "Failed"
    step = steps(db, run["ID"])[CONTRADICTIONS]
    assert step["Status"] == "Failed" and "every judge call failed" in step["ErrorMessage"]
    assert leases(db) == []
    assert statuses(db, notes) == ["Active", "Active"]


def test_watchdog_stops_a_run_blocked_outside_the_llm_calls(sqlite_db: Db, trickle: TricklingServer) -> None:
    """An embedding request to the trickling server blocks the main thread itself: the watchdog stops it."""
    db = sqlite_db
    notes = seed_pair(db)
    env = memctl_env(db, trickle.base_url, MEMCTL_RUN_DEADLINE_SECONDS=str(DEADLINE), MEMCTL_EMBED_PROVIDER="openai",
                     MEMCTL_EMBED_MODEL="stub-embedder", MEMCTL_EMBED_BASE_URL=trickle.base_url)
    result = subprocess.run(dream_command(), env=env, capture_output=True, text=True, cwd=db.path, timeout=ENDS_WITHIN)

    assert result.returncode == 1, result.stderr
    assert "watchdog" in result.stderr
    [run] = runs(db)
    assert run["Status"] == "Failed" and "run deadline" in run["ErrorMessage"]
    assert leases(db) == []
    assert statuses(db, notes) == ["Active", "Active"]


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_signal_ends_a_dream_blocked_on_a_slow_server(db: Db, trickle: TricklingServer, signum: int) -> None:
    notes = seed_pair(db)
    proc = subprocess.Popen(dream_command(), env=memctl_env(db, trickle.base_url), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=db.path)
    try:
        assert trickle.asked.wait(60), "the dream never asked the LLM"
        proc.send_signal(signum)
        _, stderr = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()

    assert proc.returncode == 128 + signum, stderr
    assert f"interrupted by {signal.Signals(signum).name}" in stderr
    [run] = runs(db)
    assert run["Status"] == "Failed" and f"interrupted by {signal.Signals(signum).name}" in run["ErrorMessage"]
    assert steps(db, run["ID"])[CONTRADICTIONS]["Status"] == "Failed"
    assert leases(db) == []
    assert statuses(db, notes) == ["Active", "Active"]


def test_deadline_between_units_leaves_each_unit_whole(db: Db) -> None:
    """1,200 expired notes are three archive units of 500; the deadline passes once the first has committed."""
    agent = Store(db.engine).agent()
    created = NOW - days(30)
    rows = [
        {"ID": new_id(), "AgentID": agent, "Note": f"Expired fact {i}.", "Type": "Context", "IsAutoGenerated": True, "Status": "Active",
         "ProtectionTier": "Standard", "AccessCount": 0, "ExpiresAt": NOW - days(1), "__mj_CreatedAt": created, "__mj_UpdatedAt": created}
        for i in range(1200)
    ]
    with write(db.engine) as conn:
        conn.execute(m.note.insert(), rows)

    def clock() -> float:  # jumps past the deadline as soon as a unit has committed
        with db.engine.connect() as conn:
            return 1e9 if conn.execute(sa.select(sa.func.count()).select_from(m.change)).scalar() else 0.0

    ctx = api.context(at(db.settings, NOW), db.engine, api.RunOptions())
    report = execute(ctx, "memctl archive", [registry.phase("archive")], deadline=Deadline(60, clock=clock))

    assert report.stopped == "deadline" and report.exit_code == 1
    with db.engine.connect() as conn:
        by_status = dict(conn.execute(sa.select(m.note.c.Status, sa.func.count()).group_by(m.note.c.Status)).all())
        changes = conn.execute(sa.select(sa.func.count()).select_from(m.change).where(m.change.c.RunID == report.run_id)).scalar()
    assert by_status == {"Archived": 500, "Active": 700}
    assert changes == 500
    [run] = runs(db)
    assert run["Status"] == "Failed" and "after 1 of 3 unit(s) of the archive phase" in run["ErrorMessage"]
    step = steps(db, run["ID"])["Archive Expired Items"]
    assert step["Status"] == "Failed" and '"applied":500' in step["OutputData"]
    assert report.phases[-1].applied == 500
    assert leases(db) == []
    assert verify(db.engine) == []


def test_lease_is_never_written_or_renewed_past_the_run_deadline(db: Db) -> None:
    now = datetime.now(timezone.utc)
    held = lock.acquire(db.engine, "maintenance", None, 300, lambda: now, deadline_seconds=2)
    assert isinstance(held, lock.Lease)
    [row] = leases(db)
    assert row["ExpiresAt"] <= now + timedelta(seconds=2)
    later = now + timedelta(seconds=1)
    held.clock = lambda: later
    assert held.renew()
    [row] = leases(db)
    assert row["ExpiresAt"] <= now + timedelta(seconds=2)
    held.release()


def plant_lease(db: Db, acquired: datetime, holder: str = "ghost-host:4242") -> str:
    """A live lease and its Running run, as a stuck run (or a memctl without deadlines) leaves them."""
    run_id = str(uuid.uuid4())
    with write(db.engine) as conn:
        from memctl.recorder import ensure_memctl_agent

        ensure_memctl_agent(conn, acquired)
        conn.execute(m.run.insert().values(ID=run_id, AgentID=m.MEMCTL_AGENT_ID, RunName="memctl dream", Status="Running", StartedAt=acquired,
                                           __mj_CreatedAt=acquired, __mj_UpdatedAt=acquired))
        conn.execute(m.lease.insert().values(Name="maintenance", Holder=holder, RunID=run_id, AcquiredAt=acquired,
                                             ExpiresAt=datetime.now(timezone.utc) + timedelta(minutes=5)))
    return run_id


def cli(db: Db, *args: str) -> list[str]:
    return ["--db-url", db.url, *(["--db-schema", db.settings.db_schema] if db.settings.db_schema else []), *args]


def test_lease_held_past_the_run_deadline_is_reported_by_the_next_attempt(db: Db, tmp_path: Path) -> None:
    stuck_run = plant_lease(db, datetime.now(timezone.utc) - timedelta(hours=2))
    metrics = tmp_path / "memctl.prom"
    result = CliRunner().invoke(app, cli(db, "dream", "--force", "--metrics-file", str(metrics)), env={"MEMCTL_RUN_DEADLINE_SECONDS": "3600"})

    assert result.exit_code == 1, result.output
    assert "ghost-host:4242" in result.stderr and "past the run deadline" in result.stderr
    reported = [r for r in runs(db) if r["ID"] != stuck_run]
    assert len(reported) == 1 and reported[0]["Status"] == "Failed" and "past the run deadline" in reported[0]["ErrorMessage"]
    step = steps(db, reported[0]["ID"])["Check Run Lease"]
    assert step["Status"] == "Failed" and stuck_run in step["OutputData"]
    prom = metrics.read_text()
    overdue = next(line for line in prom.splitlines() if line.startswith("memctl_lock_overdue_seconds{"))
    assert float(overdue.split()[-1]) > 3000
    # the stuck holder keeps its lease: memctl reports it, the operator decides
    assert [row["Holder"] for row in leases(db)] == ["ghost-host:4242"]


def test_lease_within_its_deadline_is_still_a_quiet_skip(db: Db) -> None:
    plant_lease(db, datetime.now(timezone.utc) - timedelta(minutes=1))
    result = CliRunner().invoke(app, cli(db, "dream", "--force"))
    assert result.exit_code == 0, result.output
    assert "locked by ghost-host:4242" in result.output
    assert [r["Status"] for r in runs(db)] == ["Running"]  # only the holder's run; a skip records nothing


def test_run_deadline_setting_is_validated() -> None:
    result = CliRunner().invoke(app, ["orient"], env={"MEMCTL_RUN_DEADLINE_SECONDS": "0"})
    assert result.exit_code == 2
    assert "run_deadline_seconds" in result.stderr
