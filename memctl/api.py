"""memctl as a library: every command is one function here; the CLI only parses and renders.

Two exceptions: `memctl eval`, whose harness (memctl.evaluation) sits above this module and drives
the product through it, and `memctl db`, which works on the schema itself (memctl.store.schema).

    from memctl import api
    from memctl.settings import resolve
    report = api.dream(resolve(), force=True)
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Sequence, TextIO

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from memctl import orient as views
from memctl.agent import agent_id, require_agent
from memctl.context import NullReporter, PhaseContext, Reporter, Scope
from memctl.errors import UsageError
from memctl.gate import dream_run_name
from memctl.phases import registry
from memctl.pipeline import PHASE_ORDER, FixedPlanPhase, RunReport, execute, maintenance_phases
from memctl.plan import load_plan
from memctl.plancheck import check_plan
from memctl.report import from_stored_run, markdown
from memctl.review import ReviewItem, open_reviews, settle
from memctl.runs import resolve_run_id
from memctl.settings import UUID_RE, Settings
from memctl.store import models as m
from memctl.store.capabilities import archive_statuses
from memctl.store.changes import unknown_actions
from memctl.store.engine import check_connection, make_engine, read, write
from memctl.store.schema import ensure_ready
from memctl.transfer import export_records, import_records
from memctl.undo import UndoPhase
from memctl.verify import Breach
from memctl.verify import verify as check_store


def open_store(settings: Settings, migrate: bool = True) -> Engine:
    """Connect to the configured store and make sure its schema is at head."""
    engine = make_engine(settings)
    check_connection(engine, settings)
    if migrate:
        ensure_ready(engine, settings)
    return engine


def parse_shard(text: Optional[str]) -> Optional[tuple[int, int]]:
    """Parse `--shard i/n` (0 <= i < n)."""
    if text is None:
        return None
    match = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text)
    if not match:
        raise UsageError(f"--shard must look like i/n, e.g. 0/4 (got {text!r})")
    index, count = int(match.group(1)), int(match.group(2))
    if count < 1 or not 0 <= index < count:
        raise UsageError(f"--shard {text}: need 0 <= i < n")
    return index, count


def parse_agent(text: Optional[str]) -> Optional[str]:
    """Validate `--agent ID` (a UUID)."""
    if text is None:
        return None
    if not UUID_RE.match(text.strip()):
        raise UsageError(f"--agent must be an agent ID (a UUID), got {text!r}")
    return str(uuid.UUID(text.strip()))


@dataclass(frozen=True)
class RunOptions:
    """What every phase-running command accepts."""

    dry_run: bool = False
    agent: Optional[str] = None
    shard: Optional[str] = None
    plan_out: Optional[str] = None


def context(settings: Settings, engine: Engine, options: RunOptions, reporter: Optional[Reporter] = None) -> PhaseContext:
    """Build the planning context for one invocation."""
    scope = Scope(agent_id=parse_agent(options.agent), shard=parse_shard(options.shard))
    return PhaseContext(engine=engine, settings=settings, now=settings.current_time(), scope=scope, reporter=reporter or NullReporter())


def dream(settings: Settings, options: RunOptions = RunOptions(), force: bool = False, reporter: Optional[Reporter] = None, engine: Optional[Engine] = None) -> RunReport:
    """Run the nightly pass: gate, lock, the four phases in order, records."""
    engine = engine or open_store(settings)
    ctx = context(settings, engine, options, reporter)
    scoped = ctx.scope.agent_id is not None
    # A dream limited to one agent is not a full maintenance run: it must not close the gate.
    run_name = dream_run_name(ctx.scope.shard) + (f" --agent {ctx.scope.agent_id}" if scoped else "")
    return execute(
        ctx, "memctl dream", maintenance_phases(), dry_run=options.dry_run, gated=True, force=force,
        plan_out=options.plan_out, run_name=run_name,
    )


def run_phase(settings: Settings, name: str, options: RunOptions = RunOptions(), reporter: Optional[Reporter] = None, engine: Optional[Engine] = None) -> RunReport:
    """Run one phase by hand (not gated, recorded like any run)."""
    if name not in registry.STEP_NAMES:
        raise UsageError(f"unknown phase {name!r}")
    engine = engine or open_store(settings)
    ctx = context(settings, engine, options, reporter)
    return execute(ctx, f"memctl {name}", [registry.phase(name)], dry_run=options.dry_run, plan_out=options.plan_out)


def apply_plan(settings: Settings, path: str, reporter: Optional[Reporter] = None, engine: Optional[Engine] = None) -> RunReport:
    """Apply a saved plan exactly; actions whose rows changed since planning are skipped.

    The whole plan is validated first (memctl/plancheck.py): one action memctl could not have
    planned refuses it (exit 2) before anything is written.
    """
    plan = load_plan(path)
    engine = engine or open_store(settings)
    check_plan(plan, settings, source=str(path), archive_statuses=archive_statuses(engine, settings.db_schema))
    scope = plan.scope or {}
    ctx = context(settings, engine, RunOptions(agent=scope.get("agent"), shard=scope.get("shard")), reporter)
    phases = [FixedPlanPhase(p) for p in plan.phases]
    return execute(ctx, "memctl apply", phases, run_name=f"memctl apply ({plan.command})")


def undo(settings: Settings, run_id: str, dry_run: bool = False, force: bool = False, reporter: Optional[Reporter] = None, engine: Optional[Engine] = None) -> RunReport:
    """Put back every record a run changed (a recorded run itself)."""
    engine = engine or open_store(settings)
    run_id = _undoable(engine, run_id)
    ctx = context(settings, engine, RunOptions(dry_run=dry_run), reporter)
    return execute(ctx, "memctl undo", [UndoPhase(run_id, force)], dry_run=dry_run, run_name=f"memctl undo {run_id}")


def runs(settings: Settings, limit: int = 20, all_agents: bool = False, engine: Optional[Engine] = None) -> list[dict[str, Any]]:
    """Return memctl's newest runs first: the configured agent's, or every agent's."""
    engine = engine or open_store(settings)
    with read(engine) as conn:
        require_agent(conn, settings)
    return views.list_runs(engine, limit, None if all_agents else agent_id(settings))


def run(settings: Settings, run_id: str, engine: Optional[Engine] = None) -> tuple[dict[str, Any], list[views.StepView]]:
    """Return a run (its ID or a unique prefix) and its steps as a tree."""
    return views.show_run(engine or open_store(settings), run_id)


def run_markdown(settings: Settings, run_id: str, engine: Optional[Engine] = None) -> str:
    """Return a Markdown report of what a run changed, with the notes' texts."""
    engine = engine or open_store(settings)
    found, steps = views.show_run(engine, run_id)
    return markdown(from_stored_run(engine, found, steps))


def verify(settings: Settings, engine: Optional[Engine] = None) -> list[Breach]:
    """Check the store's invariants; return every breach (none: the store is sound)."""
    return check_store(engine or open_store(settings))


def orient(settings: Settings, all_agents: bool = False, engine: Optional[Engine] = None) -> views.Orientation:
    """Summarise the store (read-only): counts, partitions, memctl's last run, gate state."""
    return views.orient(engine or open_store(settings), settings, all_agents=all_agents)


def import_file(settings: Settings, path: Path, drop_unknown_columns: bool = False, engine: Optional[Engine] = None) -> dict[str, int]:
    """Import JSON-lines records (all or nothing); return how many of each kind."""
    return import_records(engine or open_store(settings), path, settings.current_time(), drop_unknown_columns=drop_unknown_columns)


def export(settings: Settings, into: TextIO, kinds: Optional[Sequence[str]] = None, engine: Optional[Engine] = None) -> dict[str, int]:
    """Write the store's records (all, or these kinds) as JSON lines; return how many of each kind."""
    return export_records(engine or open_store(settings), into, list(kinds) if kinds else None)


def review_list(settings: Settings, engine: Optional[Engine] = None) -> list[ReviewItem]:
    """Return the contradictions flagged for review and not yet settled, with both notes."""
    return open_reviews(engine or open_store(settings))


def review_resolve(
    settings: Settings, pair_id: str, keep: Optional[str] = None, dismiss: bool = False, dry_run: bool = False,
    reporter: Optional[Reporter] = None, engine: Optional[Engine] = None,
) -> RunReport:
    """Settle a flagged pair: keep one note (the other is revoked into it) or dismiss the flag (a recorded run)."""
    engine = engine or open_store(settings)
    return settle(context(settings, engine, RunOptions(dry_run=dry_run), reporter), pair_id, keep=keep, dismiss=dismiss, dry_run=dry_run)


def _undoable(engine: Engine, run_id: str) -> str:
    """Return the full ID of the run `run_id` names (its ID or a unique prefix of at least 4 characters);
    refuse a run that is missing or still Running, or whose change log holds actions this memctl does not know."""
    with read(engine) as conn:
        run_id = resolve_run_id(conn, run_id)
        status = conn.execute(sa.select(m.run.c.Status).where(m.run.c.ID == run_id)).scalar()
        if status is None:
            raise UsageError(f"no run {run_id} in this store (see `memctl runs list`)")
        if status == "Running":
            raise UsageError(f"run {run_id} is still Running; undo it once it has finished")
        unknown = unknown_actions(conn, run_id)
    if unknown:
        raise UsageError(
            f"run {run_id}'s change log holds action(s) {', '.join(repr(a) for a in unknown)} that this version of memctl does not know; "
            "nothing undone (undo it with the memctl version that made it)"
        )
    return run_id


def clear_cache(settings: Settings, model: Optional[str] = None, verdicts: bool = False, engine: Optional[Engine] = None) -> dict[str, int]:
    """Drop cached vectors (all, or one model's) and, with `verdicts`, LLM verdicts and question pauses.

    Return rows removed per kind. Safe at any time: a cache only saves work; the next run embeds
    (and asks) again, paused questions included.
    """
    engine = engine or open_store(settings)
    removed = {}
    with write(engine) as conn:
        query = sa.delete(m.embedding)
        if model is not None:
            query = query.where(m.embedding.c.Model == model)
        removed["vectors"] = conn.execute(query).rowcount
        if verdicts:
            removed["verdicts"] = conn.execute(sa.delete(m.verdict)).rowcount
            removed["question pauses"] = conn.execute(sa.delete(m.pause)).rowcount
    return removed


def phases_available() -> Sequence[str]:
    """Return the phase names in pipeline order."""
    return PHASE_ORDER

