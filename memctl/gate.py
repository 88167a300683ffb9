"""The maintenance gate (FR-003): does `memctl dream` have work to do yet?

Open when no maintenance run has completed, or the last completed one started `gate_hours` ago
and (when `gate_min_new_notes` is set) that many active notes arrived since: Auto Dream's dual
gate. A failed run, a gate skip, a single-phase command or a dry-run never closes the gate.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Optional

import sqlalchemy as sa

from memctl.agent import agent_id as memctl_agent
from memctl.settings import Settings
from memctl.store import models as m

DREAM_RUN = "memctl dream"
SKIPPED_SUFFIX = " (skipped)"


def dream_run_name(shard: Optional[tuple[int, int]] = None) -> str:
    """Return the RunName of a maintenance run (per shard: each shard has its own gate)."""
    return DREAM_RUN if shard is None else f"{DREAM_RUN} --shard {shard[0]}/{shard[1]}"


@dataclass(frozen=True)
class GateDecision:
    open: bool
    reason: str
    last_completed_at: Optional[datetime]
    new_notes: Optional[int]

    def as_dict(self) -> dict:
        return {
            "open": self.open,
            "reason": self.reason,
            "lastCompletedAt": self.last_completed_at.isoformat() if self.last_completed_at else None,
            "newNotes": self.new_notes,
        }


def last_completed_maintenance(conn: sa.Connection, shard: Optional[tuple[int, int]] = None, agent_id: str = m.MEMCTL_AGENT_ID) -> Optional[datetime]:
    """Return when the last completed maintenance run of this shard (under `agent_id`) started."""
    return conn.execute(
        sa.select(sa.func.max(m.run.c.StartedAt)).where(
            m.run.c.AgentID == agent_id,
            m.run.c.RunName == dream_run_name(shard),
            m.run.c.Status == "Completed",
        )
    ).scalar()


def check_gate(conn: sa.Connection, settings: Settings, now: datetime, shard: Optional[tuple[int, int]] = None) -> GateDecision:
    last = last_completed_maintenance(conn, shard, memctl_agent(settings))
    if last is None:
        return GateDecision(True, "no maintenance run has completed yet", None, None)
    due = last + timedelta(hours=settings.gate_hours)
    if now < due:
        hours = (now - last).total_seconds() / 3600
        return GateDecision(False, f"last maintenance run started {hours:.1f} h ago (gate: {settings.gate_hours:g} h)", last, None)
    if settings.gate_min_new_notes <= 0:
        return GateDecision(True, f"last maintenance run started at {last.isoformat()}, {settings.gate_hours:g} h have passed", last, None)
    new_notes = conn.execute(
        sa.select(sa.func.count()).select_from(m.note).where(m.note.c.Status == "Active", m.note.c["__mj_CreatedAt"] > last)
    ).scalar_one()
    if new_notes < settings.gate_min_new_notes:
        return GateDecision(False, f"{new_notes} new active notes since the last maintenance run (gate: {settings.gate_min_new_notes})", last, new_notes)
    return GateDecision(True, f"{settings.gate_hours:g} h passed and {new_notes} new active notes arrived", last, new_notes)
