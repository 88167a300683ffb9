"""Read-only views of the store: `memctl orient`, `memctl runs list`, `memctl runs show`."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Optional

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from memctl.agent import agent_id as memctl_agent
from memctl.agent import require_agent
from memctl.gate import check_gate
from memctl.records import note_record
from memctl.runs import resolve_run_id
from memctl.settings import Settings
from memctl.similarity import partition_key
from memctl.store import models as m
from memctl.store.engine import read


@dataclass
class Orientation:
    notes_by_status: dict[str, int]
    examples_by_status: dict[str, int]
    active_notes_by_type: dict[str, int]
    active_notes_by_agent: list[tuple[str, str, int]]
    partitions: int
    largest_partitions: list[int]
    last_run: Optional[dict[str, Any]]
    gate: dict[str, Any]
    open_reviews: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "notesByStatus": self.notes_by_status,
            "examplesByStatus": self.examples_by_status,
            "activeNotesByType": self.active_notes_by_type,
            "activeNotesByAgent": [{"agentId": a, "name": n, "notes": c} for a, n, c in self.active_notes_by_agent],
            "partitions": self.partitions,
            "largestPartitions": self.largest_partitions,
            "lastRun": self.last_run,
            "gate": self.gate,
            "openReviews": self.open_reviews,
        }


def _counts(conn: sa.Connection, column: sa.Column, *where: Any) -> dict[str, int]:
    query = sa.select(column, sa.func.count()).where(*where).group_by(column).order_by(column)
    return {str(k): int(v) for k, v in conn.execute(query).all()}


def orient(engine: Engine, settings: Settings, all_agents: bool = False) -> Orientation:
    """Summarise the store without changing it; the last run is memctl's own unless `all_agents`."""
    n = m.note
    now = settings.current_time()
    with read(engine) as conn:
        require_agent(conn, settings)
        by_agent = conn.execute(
            sa.select(n.c.AgentID, m.agent.c.Name, sa.func.count())
            .select_from(n.outerjoin(m.agent, m.agent.c.ID == n.c.AgentID))
            .where(n.c.Status == "Active")
            .group_by(n.c.AgentID, m.agent.c.Name)
            .order_by(sa.func.count().desc())
        ).all()
        scope_columns = [n.c[c] for c in ("ID", "AgentID", "CompanyID", "UserID", "PrimaryScopeEntityID", "PrimaryScopeRecordID", "SecondaryScopes", "Type", "Note", "__mj_CreatedAt")]
        sizes: Counter = Counter()
        for row in conn.execute(sa.select(*scope_columns).where(n.c.Status == "Active")).mappings():
            sizes[partition_key(note_record(row, with_vector=False))] += 1
        runs = sa.select(m.run) if all_agents else sa.select(m.run).where(m.run.c.AgentID == memctl_agent(settings))
        last = conn.execute(runs.order_by(m.run.c.StartedAt.desc()).limit(1)).mappings().first()
        gate = check_gate(conn, settings, now)
        reviews = conn.execute(sa.select(sa.func.count()).select_from(m.review).where(m.review.c.Status == "Open")).scalar_one()
        return Orientation(
            notes_by_status=_counts(conn, n.c.Status),
            examples_by_status=_counts(conn, m.example.c.Status),
            active_notes_by_type=_counts(conn, n.c.Type, n.c.Status == "Active"),
            active_notes_by_agent=[(str(a) if a else "-", name or "(missing agent)", int(c)) for a, name, c in by_agent],
            partitions=len(sizes),
            largest_partitions=sorted(sizes.values(), reverse=True)[:5],
            last_run=_run_dict(last) if last else None,
            gate=gate.as_dict(),
            open_reviews=int(reviews),
        )


def _run_dict(row: Any) -> dict[str, Any]:
    started, completed = row["StartedAt"], row["CompletedAt"]
    return {
        "id": str(row["ID"]).lower(),
        "name": row["RunName"],
        "status": row["Status"],
        "success": row["Success"],
        "startedAt": started.isoformat() if started else None,
        "completedAt": completed.isoformat() if completed else None,
        "seconds": round((completed - started).total_seconds(), 3) if started and completed else None,
        "message": row["Message"],
        "error": row["ErrorMessage"],
    }


def list_runs(engine: Engine, limit: int = 20, agent_id: Optional[str] = None) -> list[dict[str, Any]]:
    """Return the newest runs first: those recorded under `agent_id`, or every agent's when None."""
    query = sa.select(m.run) if agent_id is None else sa.select(m.run).where(m.run.c.AgentID == agent_id)
    with read(engine) as conn:
        rows = conn.execute(query.order_by(m.run.c.StartedAt.desc(), m.run.c.ID).limit(limit)).mappings().all()
    return [_run_dict(r) for r in rows]


@dataclass
class StepView:
    id: str
    number: int
    name: str
    step_type: str
    status: str
    input: Any
    output: Any
    error: Optional[str]
    children: list["StepView"] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id, "number": self.number, "name": self.name, "type": self.step_type, "status": self.status,
            "input": self.input, "output": self.output, "error": self.error, "children": [c.to_dict() for c in self.children],
        }


def _json_or_text(value: Any) -> Any:
    """A step's InputData / OutputData: JSON as memctl writes it, or the text another agent wrote."""
    if not value:
        return None
    try:
        return json.loads(value)
    except (TypeError, ValueError):
        return str(value)


def show_run(engine: Engine, run_id: str) -> tuple[dict[str, Any], list[StepView]]:
    """Return a run and its steps as a tree (children under their parent step)."""
    with read(engine) as conn:
        run = conn.execute(sa.select(m.run).where(m.run.c.ID == resolve_run_id(conn, run_id))).mappings().all()
        steps = conn.execute(sa.select(m.run_step).where(m.run_step.c.AgentRunID == run[0]["ID"]).order_by(m.run_step.c.StepNumber)).mappings().all()
    views = {str(s["ID"]): StepView(
        str(s["ID"]), s["StepNumber"], s["StepName"], s["StepType"], s["Status"],
        _json_or_text(s["InputData"]), _json_or_text(s["OutputData"]), s["ErrorMessage"],
    ) for s in steps}
    roots = []
    for s in steps:
        view = views[str(s["ID"])]
        parent = views.get(str(s["ParentID"])) if s["ParentID"] else None
        (parent.children if parent else roots).append(view)
    return _run_dict(run[0]), roots
