"""Agent by agent: the LLM phases read a large store in slices of whole agents.

A partition never spans two agents (DESIGN 3) and absorption stays within an agent, so an agent's
notes are planned without any other agent's in memory. A scope over `slice_notes` Active notes is
cut, in ID order, into runs of whole agents of at most `slice_notes` notes (a bigger agent is a
slice alone) and `SLICE_AGENTS` agents. No decision depends on the slicing: which questions the
budget allows is chosen after every slice is read. A slice names its agents in every spelling the
store holds (SQLite may hold one GUID in several), so no partition is cut in two.
"""

from __future__ import annotations

import gc
from collections import defaultdict
from dataclasses import replace
from typing import Any, Callable, Optional

import sqlalchemy as sa

from memctl import temporal, text
from memctl.context import PhaseContext
from memctl.similarity import normalise_id
from memctl.store import models as m
from memctl.store.engine import read
from memctl.store.ids import as_stored, guid_reader

#: agents named in one slice at most: one IN-list of their spellings (SQL Server takes ~2,100 parameters)
SLICE_AGENTS = 500


def agent_slices(ctx: PhaseContext) -> list[PhaseContext]:
    """Return the contexts to plan the scope in: `ctx` alone, or one per slice of whole agents."""
    limit = ctx.settings.slice_notes
    if ctx.scope.agent_id or ctx.scope.agents is not None or limit <= 0:
        return [ctx]
    t = m.note
    column = as_stored(t.c.AgentID, ctx.engine)  # as the store holds it: on SQLite its text, in whatever spelling
    query = sa.select(column.label("agent"), sa.func.count().label("notes")).where(t.c.Status == "Active").group_by(column)
    with read(ctx.engine) as conn:
        rows = conn.execute(query).all()
    if sum(count for _, count in rows) <= limit:
        return [ctx]
    # one agent in every spelling: the key its notes' partitions carry
    spellings: dict[Optional[str], list[Any]] = defaultdict(list)
    counts: dict[Optional[str], int] = defaultdict(int)
    for stored, count in rows:
        key = _key_of_stored(ctx, stored)
        spellings[key].append(stored)
        counts[key] += count
    slices: list[tuple[Any, ...]] = []
    current: list[Any] = []
    size = 0
    for key in sorted(spellings, key=lambda k: (k is not None, k or "")):
        if current and (size + counts[key] > limit or len(current) + len(spellings[key]) > SLICE_AGENTS):
            slices.append(tuple(current))
            current, size = [], 0
        current += spellings[key]
        size += counts[key]
    slices.append(tuple(current))
    return [replace(ctx, scope=replace(ctx.scope, agents=agents)) for agents in slices]


def between_slices(slices: list[PhaseContext]) -> None:
    """Between slices, empty the memoised text analyses (bounded, but large when full) and collect cyclic garbage."""
    if len(slices) > 1:
        text.forget()
        temporal.forget()
        gc.collect()


def agent_condition(table: sa.Table, ctx: PhaseContext) -> list[Any]:
    """Return the SQL condition that limits rows to the slice's agents (none without a slice)."""
    agents = ctx.scope.agents
    if agents is None:
        return []
    named = [a for a in agents if a is not None]
    conditions = [as_stored(table.c.AgentID, ctx.engine).in_(named)] if named else []
    if len(named) < len(agents):  # the notes of no agent
        conditions.append(table.c.AgentID.is_(None))
    return [sa.or_(*conditions)]


def in_slice(ctx: PhaseContext) -> Callable[[Optional[str]], bool]:
    """Return whether a note of an agent ID (a dry-run's addition, not read from the store) is in it."""
    agents = ctx.scope.agents
    if agents is None:
        return lambda agent_id: True
    keys = {_key_of_stored(ctx, a) for a in agents}
    return lambda agent_id: _agent_key(agent_id) in keys


def _key_of_stored(ctx: PhaseContext, stored: Any) -> Optional[str]:
    """The agent part of a partition key for an AgentID as the store holds it (`as_stored`)."""
    return _agent_key(guid_reader(ctx.engine)(stored))


def _agent_key(agent_id: Optional[Any]) -> Optional[str]:
    """The agent part of a partition key, as `partition_key` spells it."""
    return normalise_id(None if agent_id is None else str(agent_id))
