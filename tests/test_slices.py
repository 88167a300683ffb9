"""A large store is read agent by agent (`slice_notes`, memctl/phases/slices.py), deciding as if read whole.

Two identical stores from the benchmark corpus generator (several agents, planted duplicates,
contradictions, absorptions, orphans) are dreamt, one at once and one in slices of whole
agents, with a pair budget small enough to bind: which absorption checks and contradiction
pairs are asked is chosen across every slice, so both end in the same notes and review rows.
The stores also hold notes of no agent, and on SQLite one agent's ID in two spellings (a
partition must never be cut in two by a slice).
"""

from __future__ import annotations

import json
import sys
import uuid
from pathlib import Path
from typing import Any, Iterator

import pytest
import sqlalchemy as sa

from conftest import PG_URL, Db, make_db, require_postgres
from llmstub import LLMStub
from memctl import api
from memctl.recorder import ensure_memctl_agent
from memctl.settings import Settings, replace
from memctl.store import models as m
from memctl.store.engine import write

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks.corpus import NOW, CorpusSpec, build  # noqa: E402
from test_shards import settings_for as shard_settings, state  # noqa: E402

SPEC = CorpusSpec(notes=900, agents=6, dim=384, seed=31, duplicate_share=0.15, contradiction_share=0.05, absorption_share=0.03)
#: small enough to bind: the whole store's pairs and checks compete for it, not each slice's
BUDGET = 6


def prepare(db: Db) -> None:
    """Build the corpus, give one agent's notes no agent, and (SQLite) respell another agent's ID on half its notes."""
    build(db.engine, SPEC)
    n = m.note
    with write(db.engine) as conn:
        ensure_memctl_agent(conn, NOW)
        # the agents with the most notes first (the corpus also holds a few notes of agents since deleted)
        counts = conn.execute(sa.select(n.c.AgentID, sa.func.count()).where(n.c.AgentID.is_not(None)).group_by(n.c.AgentID)).all()
        agents = [str(a) for a, _ in sorted(counts, key=lambda row: (-row[1], str(row[0])))]
        conn.execute(sa.update(n).where(n.c.AgentID == agents[0]).values(AgentID=None))
        if db.backend == "sqlite":  # as SQL Server or another writer spells a GUID: upper case, dashed
            raw = sa.type_coerce(n.c.AgentID, sa.String)
            stored = agents[1].replace("-", "")
            ids = conn.execute(sa.select(sa.type_coerce(n.c.ID, sa.String)).where(raw == stored).order_by(n.c.ID)).scalars().all()
            conn.execute(
                sa.update(n).where(sa.type_coerce(n.c.ID, sa.String).in_(ids[::2])).values({raw: str(uuid.UUID(agents[1])).upper()})
            )


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def stores(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[list[Db]]:
    """Yield two identical stores on one backend."""
    names = []
    if request.param == "postgresql":
        require_postgres()
        names = ["t_" + uuid.uuid4().hex[:12] for _ in range(2)]
    made = []
    try:
        for i in range(2):
            db = make_db(request.param, tmp_path / str(i), schema=names[i] if names else None)
            made.append(db)
            prepare(db)
        yield made
    finally:
        for db in made:
            db.engine.dispose()
        if names:
            admin = sa.create_engine(PG_URL)
            with admin.begin() as conn:
                for name in names:
                    conn.exec_driver_sql(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')
            admin.dispose()


def settings_for(db: Db, stub: LLMStub, slice_notes: int) -> Settings:
    return replace(shard_settings(db, stub), max_pairs=BUDGET, slice_notes=slice_notes)


def step_inputs(db: Db, run_id: str) -> dict[str, dict[str, Any]]:
    s = m.run_step
    with db.engine.connect() as conn:
        rows = conn.execute(sa.select(s.c.StepName, s.c.InputData).where(s.c.AgentRunID == run_id, s.c.ParentID.is_(None))).all()
    return {name: json.loads(data) for name, data in rows if data}


def test_a_store_read_agent_by_agent_ends_as_one_read_at_once(stores: list[Db], stub: LLMStub) -> None:
    whole, sliced = stores
    dry = [api.dream(settings_for(db, stub, size), api.RunOptions(dry_run=True), force=True) for db, size in ((whole, 0), (sliced, 200))]
    planned = [sorted((u.kind, u.key, tuple(mu.record_id for mu in u.mutations)) for p in r.plan.phases for u in p.units) for r in dry]
    assert planned[0] == planned[1] and planned[0], "a dry-run plans the same units either way"

    reports = [api.dream(settings_for(db, stub, size), force=True) for db, size in ((whole, 0), (sliced, 200))]
    assert [r.status for r in reports] == ["completed", "completed"], [r.message for r in reports]
    one, many = (step_inputs(db, r.run_id) for db, r in zip(stores, reports))
    for step in ("Consolidate Related Notes", "Detect Note Contradictions"):
        assert "slices" not in one[step]
        assert many[step]["slices"] >= 4, many[step]  # six agents and the notes of none, at most 200 notes a slice
    by_phase = [{p.phase: p for p in r.phases} for r in reports]
    # the budget binds: pairs are left for the next run, the same ones either way
    assert by_phase[0]["contradictions"].output["pairsLeftForNextRun"] > 0
    for key in ("pairsLeftForNextRun", "contradictionsFound", "questionsAsked"):
        assert by_phase[0]["contradictions"].output[key] == by_phase[1]["contradictions"].output[key], key
    for key in ("absorptionsChecked", "notesAbsorbed", "clustersFound", "notesRevoked"):
        assert by_phase[0]["consolidate"].output[key] == by_phase[1]["consolidate"].output[key], key
    assert by_phase[0]["consolidate"].output["notesRevoked"] > 0

    first, second = state(whole), state(sliced)
    assert first["notes"] == second["notes"]
    assert first["reviews"] == second["reviews"]
    statuses = {status for status, *_ in first["notes"].values()}
    assert {"Revoked", "Archived", "Active"} <= statuses

    # and the next night, each settled partition is skipped the same way
    again = [api.dream(settings_for(db, stub, size), force=True) for db, size in ((whole, 0), (sliced, 200))]
    assert [{p.phase: p.input.get("partitionsSettled") for p in r.phases} for r in again][0] == [
        {p.phase: p.input.get("partitionsSettled") for p in r.phases} for r in again
    ][1]
    assert state(whole)["notes"] == state(sliced)["notes"]


def test_the_text_analyses_of_a_slice_are_not_carried_into_the_next(sqlite_db: Db) -> None:
    from functools import _lru_cache_wrapper
    from importlib import import_module

    from memctl import temporal
    from memctl.context import PhaseContext
    from memctl.phases.slices import between_slices
    from memctl.text import _MEMOISED
    from memctl.text.decide import NoteText

    from memctl.text import decide as decisions

    first = NoteText("Renews the plan every 3 months since last week.", lambda piece: temporal.normalise(piece, NOW))
    decisions.decide(first, NoteText("Renews the plan every 6 months."))
    assert decisions._DECISIONS
    caches = [v for name in _MEMOISED for v in vars(import_module(f"memctl.text.{name}")).values() if isinstance(v, _lru_cache_wrapper)]
    caches.append(temporal._expressions)
    assert temporal._expressions.cache_info().currsize and sum(c.cache_info().currsize for c in caches)
    ctx = PhaseContext(sqlite_db.engine, sqlite_db.settings, NOW)
    between_slices([ctx])  # one slice: the whole scope, its analyses kept for later phases
    assert temporal._expressions.cache_info().currsize
    between_slices([ctx, ctx])
    assert sum(c.cache_info().currsize for c in caches) == 0
    assert not decisions._DECISIONS
