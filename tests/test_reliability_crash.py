"""Crashes: `memctl dream` killed with SIGKILL at random moments never loses or half-writes a record.

Each round seeds a fresh store from the same generator (orphans, expired and stale records,
clusters of paraphrases, contradictory pairs) and starts `memctl dream --force` as a subprocess
again and again, against tests/llmstub.py's deterministic server running as a separate process
(50 ms per call), killing it with SIGKILL: while a consolidation or contradiction request is in
flight, just after its first unit committed, inside prune or archive, or at a random moment.
After every kill: `memctl verify` passes, the audit explains every difference from the seed by
the change log (nothing lost, no unit half-applied), and only the dead run is still Running. The
next run takes the dead run's lease over and closes that run as Failed. Finally one uninterrupted
dream completes, and the store ends exactly like a twin store dreamt once, never interrupted.

The test clock (`--now`) advances by lease_seconds + 1 between runs, so a killed run's lease is
expired for the next one without waiting in real time (one test waits it out on the real clock).
End states are compared modulo what depends on when a run ran rather than on what it decided:
the run tag in Comments lines, the __mj_UpdatedAt memctl set, and the ID and created time of a
consolidated note (derived from the run's clock; it is renamed after its sources). The per-run
caps (prune_cap, max_pairs) are lifted, since an interrupted store gets several runs' worth.
"""

from __future__ import annotations

import io
import json
import os
import random
import re
import signal
import subprocess
import sys
import time
import uuid
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Callable, Iterator, Optional

import pytest
import sqlalchemy as sa
from typer.testing import CliRunner

from conftest import Db, make_db
from factory import NOW
from memctl.cli import app
from memctl.store import models as m
from memctl.transfer import export_records
from test_reliability_audit import audit, generate_corpus, snapshot

pytestmark = pytest.mark.slow

LEASE_SECONDS = 5
LEASE = "maintenance"  # the unsharded dream's lease row
STEP = timedelta(seconds=LEASE_SECONDS + 1)
STORE_KINDS = ["company", "user", "conversation", "agent", "note_type", "note", "example"]
CORPUS = {"notes": 600, "examples": 200, "seed": 11, "llm_groups": 8}
# rounds per backend; each round starts from a freshly generated store and kills 8 dreams in it
ROUNDS = {"sqlite": int(os.environ.get("MEMCTL_CRASH_ROUNDS", "4")), "postgresql": int(os.environ.get("MEMCTL_CRASH_ROUNDS", "2"))}
CONSOLIDATE, CONTRADICTIONS = "Consolidate Related Notes", "Detect Note Contradictions"
PRUNE, ARCHIVE = "Prune Stale References", "Archive Expired Items"
# The kill moments of one round, in order. Each dream redoes what the killed one left undone,
# so this order walks the kills through the whole pipeline: a consolidation LLM request in flight
# (nothing of the run committed), inside a transaction holding several consolidation units (all
# written, none committed: tests/crashhook.py, DESIGN 4.1), a
# contradiction LLM request in flight (the consolidations committed), just after the first
# contradiction unit, inside prune, just after the next committed unit, inside archive, and at a
# random moment.
STRATEGIES = ("llm:" + CONSOLIDATE, "mid-batch", "llm:" + CONTRADICTIONS, "in-writes", "step:" + PRUNE, "in-writes", "step:" + ARCHIVE, "timed")
TESTS_DIR = Path(__file__).resolve().parent
# tests/llmstub.py's server in its own process, answering with its deterministic default responder;
# it also appends a line to a log file as each chat request arrives, so the test can kill memctl
# while a request is in flight (the stub holds every reply for its latency, 50 ms).
STUB_MAIN = """
import signal, sys, threading
sys.path.insert(0, sys.argv[1])
import llmstub
log = open(sys.argv[2], "a", buffering=1)
def responder(body):
    log.write("asked\\n")
    return llmstub.default_responder(body)
stub = llmstub.LLMStub(responder, latency=float(sys.argv[3])).start()
print(stub.base_url, flush=True)
done = threading.Event()
signal.signal(signal.SIGTERM, lambda *_: done.set())
done.wait()
stub.stop()
"""


class StubProcess:
    """The stub LLM server running as a separate process."""

    def __init__(self, tmp: Path, latency: float = 0.05) -> None:
        self.log = tmp / "stub-requests.log"
        self.log.touch()
        self.proc = subprocess.Popen([sys.executable, "-c", STUB_MAIN, str(TESTS_DIR), str(self.log), str(latency)], stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline().strip()  # type: ignore[union-attr]
        assert line.startswith("http://127.0.0.1:"), line
        self.base_url = line

    def requests(self) -> int:
        return self.log.stat().st_size // len("asked\n")

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=10)
        self.proc.stdout.close()  # type: ignore[union-attr]


@pytest.fixture(scope="module")
def stub_process(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StubProcess]:
    stub = StubProcess(tmp_path_factory.mktemp("stub"))
    yield stub
    stub.stop()


def cli_args(db: Db) -> list[str]:
    return ["--db-url", db.settings.db_url, *(["--db-schema", db.settings.db_schema] if db.settings.db_schema else [])]


def memctl_env(db: Db, stub: Optional[StubProcess] = None, **extra: str) -> dict[str, str]:
    """Environment of a memctl subprocess: this store, a 5 s lease, no per-run caps, the stub LLM."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMCTL_", "OPENAI_"))}
    env.update(db.env())
    env.update({"MEMCTL_LEASE_SECONDS": str(LEASE_SECONDS), "MEMCTL_PRUNE_CAP": "1000000", "MEMCTL_MAX_PAIRS": "1000000"})
    if stub is not None:
        env.update({"MEMCTL_LLM_BASE_URL": stub.base_url, "MEMCTL_LLM_MODEL": "stub-model", "MEMCTL_LLM_API_KEY": "sk-crash-test",
                    "MEMCTL_LLM_MAX_RETRIES": "0"})
    env.update(extra)
    return env


def start_dream(db: Db, now: datetime, stub: Optional[StubProcess], read: bool = True, kill_file: Optional[Path] = None) -> subprocess.Popen:
    """Start a dream; with `read` False its output is thrown away (nobody drains a pipe of a dream
    that is watched until it is killed, and a report longer than the pipe's buffer would block it).
    With `kill_file` the dream kills itself inside its first transaction of several units
    (tests/crashhook.py) and writes there how many change rows that transaction held."""
    where = subprocess.PIPE if read else subprocess.DEVNULL
    command, extra = [sys.executable, "-m", "memctl"], {}
    if kill_file is not None:
        command = [sys.executable, str(TESTS_DIR / "crashhook.py")]
        extra = {"MEMCTL_TEST_KILL_ROWS": "2", "MEMCTL_TEST_KILL_FILE": str(kill_file)}
    return subprocess.Popen(
        [*command, "--now", now.isoformat(), "dream", "--force", "--json"],
        env=memctl_env(db, stub, **extra), stdout=where, stderr=where, text=True, cwd=db.path,
    )


def finish(proc: subprocess.Popen) -> dict:
    out, err = proc.communicate(timeout=180)
    assert proc.returncode == 0, err
    return json.loads(out)


@contextmanager
def fresh_store(backend: str, path: Path) -> Iterator[Db]:
    schema = "t_" + uuid.uuid4().hex[:12] if backend == "postgresql" else None
    store = make_db(backend, path, schema=schema)
    try:
        yield store
    finally:
        if schema:
            with store.engine.begin() as conn:
                conn.exec_driver_sql(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
        store.engine.dispose()


def end_state(db: Db) -> str:
    """Export the records (not the run records) in a form that does not depend on when runs ran.

    Blanked: the run tag of memctl's Comments lines and the __mj_UpdatedAt memctl set (different
    runs at different clock readings made the interrupted store's changes). A note memctl
    created by consolidation has an ID derived from its sources, content and run time: it is
    renamed after its sources (everywhere it is referenced) and its created time blanked.
    """
    buffer = io.StringIO()
    export_records(db.engine, buffer, STORE_KINDS)
    records = [json.loads(line) for line in buffer.getvalue().splitlines() if m.MEMCTL_AGENT_ID not in line]
    renamed = {}
    for record in records:
        if record["kind"] == "note" and record.get("DerivedFromNoteIDs") and "[memctl " in (record.get("Comments") or ""):
            renamed[record["ID"]] = "created-from:" + ",".join(sorted(json.loads(record["DerivedFromNoteIDs"])))
            record["__mj_CreatedAt"] = "(run time)"
            record["SourceAIAgentRunID"] = "(the run that created it)"
    lines = []
    for record in records:
        if record.get("Comments") and "[memctl " in record["Comments"]:
            record["Comments"] = re.sub(r"run [0-9a-f]{8}\]", "run ########]", record["Comments"])
            record["__mj_UpdatedAt"] = "(set by memctl)"
        line = json.dumps(record, sort_keys=True)
        for old, new in renamed.items():
            line = line.replace(old, new)
        lines.append(line)
    return "\n".join(sorted(lines))


def runs(db: Db) -> dict[str, dict]:
    with db.engine.connect() as conn:
        return {str(r["ID"]): dict(r) for r in conn.execute(sa.select(m.run)).mappings()}


def wait_until(proc: subprocess.Popen, probe: Callable[[], bool], timeout: float = 60.0) -> bool:
    """Poll `probe` until it holds (True) or the process ends first (False)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return False
        try:
            if probe():
                return True
        except sa.exc.OperationalError:
            pass  # SQLite may be checkpointing; poll again
        time.sleep(0.003)
    return False


def current_run(db: Db, proc: subprocess.Popen) -> Optional[str]:
    with db.engine.connect() as conn:
        row = conn.execute(sa.select(m.lease.c.RunID, m.lease.c.Holder).where(m.lease.c.Name == LEASE)).first()
    if row is None or not str(row.Holder).endswith(f":{proc.pid}"):
        return None
    return str(row.RunID)


def has_written(db: Db, proc: subprocess.Popen) -> bool:
    run_id = current_run(db, proc)
    if run_id is None:
        return False
    with db.engine.connect() as conn:
        return conn.execute(sa.select(sa.func.count()).select_from(m.change).where(m.change.c.RunID == run_id)).scalar_one() > 0


def in_step(db: Db, proc: subprocess.Popen, step: str) -> bool:
    run_id = current_run(db, proc)
    if run_id is None:
        return False
    with db.engine.connect() as conn:
        found = conn.execute(
            sa.select(m.run_step.c.ID).where(m.run_step.c.AgentRunID == run_id, m.run_step.c.StepName == step, m.run_step.c.Status == "Running")
        ).first()
    return found is not None


@dataclass
class KillReport:
    strategy: str
    where: str
    writes: int
    llm_in_flight: bool = False


def kill_once(db: Db, now: datetime, strategy: str, rng: random.Random, calibrated: float, stub: StubProcess) -> KillReport:
    """Start a dream, SIGKILL it at a moment chosen by `strategy`; say where it died."""
    before = set(runs(db))
    kill_file = db.path / "mid-batch.kill" if strategy == "mid-batch" else None
    if kill_file is not None and kill_file.exists():
        kill_file.unlink()
    proc = start_dream(db, now, stub, read=False, kill_file=kill_file)
    in_flight = False
    try:
        if strategy == "mid-batch":
            proc.wait(timeout=120)  # it kills itself
            assert kill_file is not None and kill_file.exists(), "the dream ended without a transaction of several units"
            return _mid_batch_report(db, before, int(kill_file.read_text()))
        if strategy == "timed":
            time.sleep(rng.uniform(0.3, 0.9 * calibrated))
        elif strategy == "in-writes":
            if wait_until(proc, lambda: has_written(db, proc)):
                time.sleep(rng.uniform(0, 0.03))
        elif strategy.startswith("llm:"):
            # kill as a chat request arrives: the stub holds it for 50 ms, so memctl is waiting on it
            if wait_until(proc, lambda: in_step(db, proc, strategy[4:])):
                asked = stub.requests()
                target = asked + 1 + rng.randrange(3)
                in_flight = wait_until(proc, lambda: stub.requests() >= target, timeout=30)
        else:
            if wait_until(proc, lambda: in_step(db, proc, strategy[5:])):
                time.sleep(rng.uniform(0, 0.05))
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait(timeout=60)
    new = [r for rid, r in runs(db).items() if rid not in before]
    if not new:
        return KillReport(strategy, "before its run record", 0)
    assert len(new) == 1, new
    run = new[0]
    with db.engine.connect() as conn:
        open_steps = conn.execute(
            sa.select(m.run_step.c.StepName).where(m.run_step.c.AgentRunID == run["ID"], m.run_step.c.Status == "Running").order_by(m.run_step.c.StepNumber)
        ).scalars().all()
        writes = conn.execute(sa.select(sa.func.count()).select_from(m.change).where(m.change.c.RunID == run["ID"])).scalar_one()
    if run["Status"] != "Running":
        return KillReport(strategy, f"after it finished ({run['Status']})", writes)
    return KillReport(strategy, f"in {open_steps[-1]}" if open_steps else "between steps", writes, in_flight)


def _mid_batch_report(db: Db, before: set[str], rows: int) -> KillReport:
    """Where a self-killed dream died: inside a transaction of several units, none of whose
    `rows` change rows may be in the store (the audit then checks that no unit is half there)."""
    new = [r for rid, r in runs(db).items() if rid not in before]
    assert len(new) == 1 and new[0]["Status"] == "Running", new
    with db.engine.connect() as conn:
        writes = conn.execute(sa.select(sa.func.count()).select_from(m.change).where(m.change.c.RunID == new[0]["ID"])).scalar_one()
    assert writes == 0, f"{writes} change rows committed before the first batch of the run"
    return KillReport("mid-batch", f"mid-batch ({rows} change rows written, none committed)", writes)


def verify_ok(db: Db) -> bool:
    result = CliRunner().invoke(app, [*cli_args(db), "verify"])
    return result.exit_code == 0


def check_after_kill(db: Db, baseline: dict, killed: KillReport) -> None:
    result = CliRunner().invoke(app, [*cli_args(db), "verify"])
    assert result.exit_code == 0, f"verify failed after a kill {killed.where}: {result.output}"
    problems = audit(db.engine, baseline)
    assert problems == [], f"after a kill {killed.where}: {problems[:10]}"
    running = [r for r in runs(db).values() if r["Status"] == "Running"]
    assert len(running) <= 1, f"dead runs were not closed: {running}"


def crash_rounds(tmp_path: Path, backend: str, rounds: int, stub: StubProcess) -> list[KillReport]:
    """Run the crash loop; return where every kill landed."""
    rng = random.Random(20260615)
    kills = len(STRATEGIES)
    final_now = NOW + STEP * (kills + 1)

    with fresh_store(backend, tmp_path / "twin") as twin:
        generate_corpus(twin.engine, NOW, **CORPUS)
        started = time.monotonic()
        report = finish(start_dream(twin, final_now, stub))
        calibrated = time.monotonic() - started
        assert report["status"] == "completed"
        assert report["phases"][0]["output"]["clustersConsolidated"] == CORPUS["llm_groups"]
        assert report["phases"][1]["output"]["contradictionsFound"] == CORPUS["llm_groups"]
        expected = end_state(twin)

    reports: list[KillReport] = []
    for round_number in range(rounds):
        with fresh_store(backend, tmp_path / f"round{round_number}") as store:
            generate_corpus(store.engine, NOW, **CORPUS)
            baseline = snapshot(store.engine)
            lease_checked = False
            for i in range(kills):
                now = NOW + STEP * i
                killed = kill_once(store, now, STRATEGIES[i], rng, calibrated, stub)
                reports.append(killed)
                check_after_kill(store, baseline, killed)
                with store.engine.connect() as conn:
                    lease = conn.execute(sa.select(m.lease).where(m.lease.c.Name == LEASE)).mappings().first()
                if lease is not None and not lease_checked:
                    # the dead run's lease is still live at the same clock reading: a new dream is refused
                    refused = CliRunner().invoke(app, [*cli_args(store), "--now", now.isoformat(), "dream", "--force"], env=memctl_env(store))
                    assert refused.exit_code == 0 and "locked by" in refused.output, refused.output
                    lease_checked = True
            dead = {rid for rid, r in runs(store).items() if r["Status"] == "Running"}
            final = finish(start_dream(store, final_now, stub))
            assert final["status"] == "completed", final
            assert verify_ok(store)
            assert audit(store.engine, baseline) == []
            every_run = runs(store)
            assert not [r for r in every_run.values() if r["Status"] == "Running"]
            for rid in dead:
                assert every_run[rid]["Status"] == "Failed" and "lease expired" in every_run[rid]["ErrorMessage"]
            killed_runs = [r for r in every_run.values() if r["ID"] != final["runId"] and r["Status"] == "Failed"]
            assert all("lease expired" in (r["ErrorMessage"] or "") for r in killed_runs)
            with store.engine.connect() as conn:
                assert conn.execute(sa.select(sa.func.count()).select_from(m.lease).where(m.lease.c.Name == LEASE)).scalar_one() == 0
                open_steps = conn.execute(sa.select(sa.func.count()).select_from(m.run_step).where(m.run_step.c.Status == "Running")).scalar_one()
            assert open_steps == 0
            assert end_state(store) == expected, "the interrupted store did not reach the uninterrupted end state"
    return reports


def test_sigkill_at_random_moments_loses_nothing_and_converges(db: Db, tmp_path: Path, stub_process: StubProcess) -> None:
    rounds = ROUNDS[db.backend]
    kills = len(STRATEGIES)
    reports = crash_rounds(tmp_path, db.backend, rounds, stub_process)
    assert len(reports) == rounds * kills
    mid_phase = [r for r in reports if r.where.startswith("in ")]
    mid_write = [r for r in mid_phase if r.writes > 0]
    in_llm_wait = [r for r in mid_phase if r.llm_in_flight and r.where in ("in " + CONSOLIDATE, "in " + CONTRADICTIONS)]
    summary: dict[str, int] = {}
    for r in reports:
        summary[r.where] = summary.get(r.where, 0) + 1
    detail = f"{db.backend}: {len(reports)} kills: {summary}; {len(mid_write)} after the dead run had committed writes; {len(in_llm_wait)} during an LLM request"
    print("\n" + detail)
    # the kills must really land inside phases: during LLM waits and after writes began
    # (bounds below what the strategies aim for, so a slow machine does not make the test flaky)
    mid_batch = [r for r in reports if r.where.startswith("mid-batch")]
    assert len(mid_batch) == rounds, detail  # every round killed one inside a transaction of several units
    assert len(mid_phase) + len(mid_batch) >= rounds * (kills - 3), detail
    assert len(mid_write) >= rounds, detail  # two "in-writes" kills per round aim there
    assert len(in_llm_wait) >= rounds, detail


def test_a_dead_runs_lease_expires_in_real_time_and_the_next_run_takes_over(sqlite_db: Db) -> None:
    """The real clock this time: the lease blocks a new dream until it expires, then the dream recovers it."""
    db = sqlite_db
    generate_corpus(db.engine, NOW, notes=3000, examples=300, seed=3)
    env = memctl_env(db)
    proc = subprocess.Popen([sys.executable, "-m", "memctl", "dream", "--force"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=db.path)
    assert wait_until(proc, lambda: has_written(db, proc)), "the dream finished before it could be killed"
    dead_run = current_run(db, proc)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    killed_at = time.monotonic()
    locked = subprocess.run([sys.executable, "-m", "memctl", "dream", "--force"], env=env, capture_output=True, text=True, cwd=db.path)
    assert locked.returncode == 0 and "locked by" in locked.stdout + locked.stderr
    time.sleep(max(0.0, LEASE_SECONDS + 0.5 - (time.monotonic() - killed_at)))
    recovered = subprocess.run([sys.executable, "-m", "memctl", "dream", "--force", "--json"], env=env, capture_output=True, text=True, cwd=db.path)
    assert recovered.returncode == 0, recovered.stderr
    assert json.loads(recovered.stdout)["status"] == "completed"
    dead = runs(db)[dead_run]
    assert dead["Status"] == "Failed" and "lease expired" in dead["ErrorMessage"]
    assert verify_ok(db)


@pytest.mark.parametrize("fails", [False, True])
def test_the_run_is_closed_before_its_lease_is_released(db: Db, monkeypatch: pytest.MonkeyPatch, fails: bool) -> None:
    """Found by the crash loop: a kill between releasing the lease and closing the run left it Running forever."""
    from memctl import api, lock
    from memctl.phases.prune import PrunePhase
    from memctl.pipeline import execute
    from factory import at

    class Boom:
        name, step_name = "boom", "Exploding Phase"

        def plan(self, ctx, overlay):  # type: ignore[no-untyped-def]
            raise RuntimeError("the phase broke")

    generate_corpus(db.engine, NOW, notes=50, examples=10, seed=4)
    at_release: list[str] = []
    release = lock.Lease.release

    def checked_release(self: lock.Lease) -> None:
        with db.engine.connect() as conn:
            at_release.append(conn.execute(sa.select(m.run.c.Status).where(m.run.c.ID == self.run_id)).scalar_one())
        release(self)

    monkeypatch.setattr(lock.Lease, "release", checked_release)
    ctx = api.context(at(db.settings, NOW), db.engine, api.RunOptions())
    report = execute(ctx, "memctl dream", [Boom(), PrunePhase()] if fails else [PrunePhase()])
    assert report.status == ("failed" if fails else "completed")
    assert at_release == ["Failed" if fails else "Completed"]
