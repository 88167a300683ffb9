"""`--shard i/n` (DESIGN 5): n workers split one database without overlap, each under its own lock.

PostgreSQL only: shard workers are separate hosts or pods writing to one server at once. The
store comes from the benchmark corpus generator (planted near-duplicates, contradictions,
orphans, expired and stale items over several agents), and the LLM is the HTTP stub's default
responder, so every phase has work in every shard.
"""

from __future__ import annotations

import sys
import threading
import uuid
from collections import defaultdict
from pathlib import Path
from typing import Any, Iterator, Optional

import pytest
import sqlalchemy as sa

from conftest import PG_URL, Db, make_db, require_postgres
from llmstub import LLMStub
from memctl import api
from memctl.lock import GUARD_ROW
from memctl.context import NullReporter, Scope
from memctl.phases.common import in_shard
from memctl.pipeline import RunReport
from memctl.recorder import ensure_memctl_agent
from memctl.settings import Settings, replace
from memctl.store import models as m
from memctl.store.engine import make_engine, write

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks.corpus import MODEL_ID, NOW, CorpusSpec, build  # noqa: E402

pytestmark = pytest.mark.postgres

SPEC = CorpusSpec(notes=800, agents=5, dim=384, seed=23, orphan_share=0.03, contradiction_share=0.04)
PHASE_STEPS = {"Consolidate Related Notes", "Detect Note Contradictions", "Prune Stale References", "Archive Expired Items"}



@pytest.fixture
def stores(tmp_path: Path) -> Iterator[list[Db]]:
    """Yield two migrated PostgreSQL stores holding the same corpus (one sharded, one not)."""
    require_postgres()
    names = ["t_" + uuid.uuid4().hex[:12] for _ in range(2)]
    made = []
    try:
        for i, name in enumerate(names):
            db = make_db("postgresql", tmp_path / str(i), schema=name)
            build(db.engine, SPEC)
            # memctl's own agent row exists after the first run (the race to create it on a new
            # store is covered by test_shard_workers_starting_together_on_a_new_store_both_run)
            with write(db.engine) as conn:
                ensure_memctl_agent(conn, NOW)
            made.append(db)
        yield made
    finally:
        for db in made:
            db.engine.dispose()
        admin = sa.create_engine(PG_URL)
        with admin.begin() as conn:
            for name in names:
                conn.exec_driver_sql(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')
        admin.dispose()


def settings_for(db: Db, stub: LLMStub) -> Settings:
    # prune_cap and max_pairs high: a cap is per invocation, so n shards may do up to n x cap,
    # and the sharded and unsharded runs are only comparable when no cap binds
    return replace(
        db.settings,
        now=NOW.isoformat(),
        llm_base_url=stub.base_url,
        llm_model="stub-model",
        llm_api_key="test",
        embed_provider="stored",
        embed_model=MODEL_ID,
        prune_cap=100_000,
        max_pairs=100_000,
    )


def dream(settings: Settings, shard: Optional[str] = None, reporter: Any = None) -> RunReport:
    """Run a forced dream with its own engine, as a separate worker would."""
    engine = make_engine(settings)
    try:
        return api.dream(settings, api.RunOptions(shard=shard), force=True, reporter=reporter, engine=engine)
    finally:
        engine.dispose()


def in_threads(*calls: Any) -> list[Any]:
    """Run the calls at the same time; return their results (re-raising the first failure)."""
    results: list[Any] = [None] * len(calls)
    errors: list[BaseException] = []

    def run(i: int) -> None:
        try:
            results[i] = calls[i]()
        except BaseException as exc:  # noqa: BLE001 - handed to the test thread
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(calls))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    if errors:
        raise errors[0]
    return results


def state(db: Db) -> dict[str, Any]:
    """Return what a dream decides, without run-specific text (Comments carry the run ID)."""
    n, e, r = m.note, m.example, m.review
    with db.engine.connect() as conn:
        notes = {
            str(row.ID): (
                row.Status,
                str(row.ConsolidatedIntoNoteID or ""),
                row.Note,
                row.AccessCount,
                row.DerivedFromNoteIDs,
                row.AgentID,
                row.UserID,
            )
            for row in conn.execute(sa.select(n))
        }
        examples = {str(row.ID): row.Status for row in conn.execute(sa.select(e.c.ID, e.c.Status))}
        reviews = {
            (str(row.NoteAID), str(row.NoteBID), row.Status) for row in conn.execute(sa.select(r.c.NoteAID, r.c.NoteBID, r.c.Status))
        }
    return {"notes": notes, "examples": examples, "reviews": reviews}


def shard_of(conn: sa.Connection, table: str, record_id: str, count: int) -> int:
    """Return the shard a changed record belongs to (its partition's hash mod n)."""
    if table == "memctl_review":
        record_id = str(conn.execute(sa.select(m.review.c.NoteAID).where(m.review.c.ID == record_id)).scalar_one())
        table = "AIAgentNote"
    t = m.note if table == "AIAgentNote" else m.example
    row = conn.execute(sa.select(t).where(t.c.ID == record_id)).mappings().one()
    return next(i for i in range(count) if in_shard(row, Scope(shard=(i, count))))


def test_two_shard_workers_cover_every_partition_exactly_once(stores: list[Db], stub: LLMStub) -> None:
    sharded, whole = stores
    single = dream(settings_for(whole, stub))
    assert single.status == "completed", single.message
    # each worker also reads its shard agent by agent (slices of at most 200 notes, memctl/phases/slices.py):
    # a broader partition of another shard is still found for absorption, in the slice of its agent
    s = replace(settings_for(sharded, stub), slice_notes=200)
    first, second = in_threads(lambda: dream(s, "0/2"), lambda: dream(s, "1/2"))
    assert (first.status, second.status) == ("completed", "completed"), (first.message, second.message)

    with sharded.engine.connect() as conn:
        changes = conn.execute(sa.select(m.change.c.RunID, m.change.c.TableName, m.change.c.RecordID, m.change.c.Action)).all()
        runs = dict(conn.execute(sa.select(m.run.c.ID, m.run.c.RunName).where(m.run.c.ID.in_([first.run_id, second.run_id]))).all())
        steps = conn.execute(sa.select(m.run_step.c.AgentRunID, m.run_step.c.StepName).where(m.run_step.c.ParentID.is_(None))).all()
        handled_by: dict[tuple[str, str], set[str]] = defaultdict(set)
        for run_id, table, record, _action in changes:
            handled_by[(table, str(record))].add(str(run_id))
        # every changed record was handled by exactly one worker, and by the one its partition belongs to
        assert all(len(workers) == 1 for workers in handled_by.values())
        index = {str(first.run_id): 0, str(second.run_id): 1}
        for (table, record), workers in handled_by.items():
            assert shard_of(conn, table, record, 2) == index[next(iter(workers))], (table, record)
    assert set(runs.values()) == {"memctl dream --shard 0/2", "memctl dream --shard 1/2"}
    for run_id in (first.run_id, second.run_id):
        assert PHASE_STEPS <= {name for owner, name in steps if str(owner) == str(run_id)}
    by_worker = [sum(1 for workers in handled_by.values() if str(run_id) in workers) for run_id in (first.run_id, second.run_id)]
    assert all(count > 0 for count in by_worker), "each shard has work in this corpus"
    with whole.engine.connect() as conn:
        single_changes = conn.execute(sa.select(sa.func.count()).select_from(m.change)).scalar_one()
    assert len(changes) == single_changes

    # together the shards did exactly what one unsharded worker did on an identical store
    sharded_state, whole_state = state(sharded), state(whole)
    assert sharded_state["notes"] == whole_state["notes"]
    assert sharded_state["examples"] == whole_state["examples"]
    assert sharded_state["reviews"] == whole_state["reviews"]
    statuses = {status for status, *_ in whole_state["notes"].values()}
    assert {"Revoked", "Archived", "Active"} <= statuses, "the corpus exercises consolidation, contradictions, prune and archive"


class HoldAtFirstProgress(NullReporter):
    """Stop a worker at its first progress report (it holds its lease by then) until released."""

    def __init__(self, arrived: threading.Barrier, release: threading.Barrier) -> None:
        self.arrived, self.release = arrived, release
        self.held = False

    def start(self, label: str, total: Optional[int] = None) -> None:
        if not self.held:
            self.held = True
            self.arrived.wait()
            self.release.wait()


def held_shards(settings: Settings, body: Any) -> list[RunReport]:
    """Run shard workers 0/2 and 1/2, and call `body()` while both are inside their runs."""
    arrived, release = threading.Barrier(3, timeout=120), threading.Barrier(3, timeout=120)
    outcome: list[Any] = []

    def control() -> None:
        arrived.wait()
        try:
            outcome.append(body())
        finally:
            release.wait()

    workers = in_threads(
        lambda: dream(settings, "0/2", HoldAtFirstProgress(arrived, release)),
        lambda: dream(settings, "1/2", HoldAtFirstProgress(arrived, release)),
        control,
    )
    return [*workers[:2], *outcome]


def live_leases(settings: Settings) -> set[str]:
    engine = make_engine(settings)
    try:
        with engine.connect() as conn:
            return set(conn.execute(sa.select(m.lease.c.Name).where(m.lease.c.Name != GUARD_ROW)).scalars())
    finally:
        engine.dispose()


def test_shard_workers_hold_their_locks_at_once_and_a_second_worker_on_a_shard_is_refused(stores: list[Db], stub: LLMStub) -> None:
    s = settings_for(stores[0], stub)

    def while_both_run() -> tuple[set[str], RunReport, RunReport]:
        return live_leases(s), dream(s, "0/2"), dream(s, "1/2")

    first, second, (leases, again_first, again_second) = held_shards(s, while_both_run)
    assert leases == {"maintenance:shard 0/2", "maintenance:shard 1/2"}
    for refused in (again_first, again_second):
        assert refused.status == "locked" and refused.run_id is None and "locked by" in refused.message
    assert (first.status, second.status) == ("completed", "completed")
    assert live_leases(s) == set()


@pytest.mark.parametrize("other", [None, "0/3"], ids=["unsharded", "other-shard-count"])
def test_a_run_overlapping_live_shard_workers_is_refused(stores: list[Db], stub: LLMStub, other: Optional[str]) -> None:
    s = settings_for(stores[0], stub)
    *_, overlapping = held_shards(s, lambda: dream(s, other))
    assert overlapping.status == "locked"


def test_shard_workers_starting_together_on_a_new_store_both_run(stores: list[Db], stub: LLMStub) -> None:
    s = settings_for(stores[0], stub)
    with stores[0].engine.begin() as conn:
        conn.execute(sa.delete(m.agent).where(m.agent.c.ID == m.MEMCTL_AGENT_ID))
    both_looked = threading.Barrier(2, timeout=30)

    def after_the_lookup(conn, cursor, statement, parameters, context, executemany):  # type: ignore[no-untyped-def]
        if statement.startswith("INSERT INTO") and '"AIAgent" (' in statement:
            both_looked.wait()  # both workers found no row: now they insert

    engines = [make_engine(s) for _ in range(2)]
    for engine in engines:
        sa.event.listen(engine, "before_cursor_execute", after_the_lookup)
    errors: list[str] = []

    def worker(engine: Any, shard: str) -> RunReport:
        try:
            return api.dream(s, api.RunOptions(shard=shard), force=True, engine=engine)
        except Exception as exc:  # noqa: BLE001 - the failure is what this test looks for
            errors.append(f"{type(exc).__name__}: {exc}".splitlines()[0])
            raise

    try:
        in_threads(lambda: worker(engines[0], "0/2"), lambda: worker(engines[1], "1/2"))
    except Exception:  # noqa: BLE001 - recorded in `errors`
        pass
    finally:
        for engine in engines:
            engine.dispose()
    assert errors == []
