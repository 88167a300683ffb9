"""Phase 4, archive expired items (DESIGN 4.4, FR-040..044).

Active auto-generated notes and examples are archived when ExpiresAt has passed, or when not
accessed (never accessed: since created) within the agent's retention: NoteRetentionDays (default
90) for notes, ExampleRetentionDays (default 180) for examples scoring below `low_score_threshold`.
Retention days apply when > 0; AutoArchiveEnabled = false turns retention archival (not expiry)
off for an agent. Manual, Immutable and Protected records are never archived (FR-043). The
database filters coarsely (down to the shortest retention in force); the per-agent rule runs here.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Mapping, Optional

import sqlalchemy as sa

from memctl.context import PhaseContext
from memctl.phases.base import Overlay
from memctl.phases.common import agent_filter, archive_units, as_planned, in_shard, plural, read_rows, within_refusal
from memctl.plan import GUARD_COLUMNS, PhasePlan, StepResult
from memctl.protection import revocable, revocable_rows
from memctl.records import record_row
from memctl.settings import Settings
from memctl.store import models as m
from memctl.store.capabilities import archive_refusal
from memctl.store.engine import read

NAME = "archive"
STEP_NAME = "Archive Expired Items"
SCOPE_COLUMNS = ("AgentID", "CompanyID", "UserID", "PrimaryScopeEntityID", "PrimaryScopeRecordID", "SecondaryScopes")


@dataclass(frozen=True)
class Retention:
    """Per-agent retention: days for notes and examples, and whether retention archival is on."""

    agents: Mapping[str, Mapping[str, Any]]
    settings: Settings

    def _agent(self, agent_id: Optional[str]) -> Optional[Mapping[str, Any]]:
        return None if agent_id is None else self.agents.get(str(agent_id).lower())

    def enabled(self, agent_id: Optional[str]) -> bool:
        agent = self._agent(agent_id)
        return True if agent is None else bool(agent["AutoArchiveEnabled"])

    def note_days(self, agent_id: Optional[str]) -> int:
        return self._days(agent_id, "NoteRetentionDays", self.settings.note_retention_days)

    def example_days(self, agent_id: Optional[str]) -> int:
        return self._days(agent_id, "ExampleRetentionDays", self.settings.example_retention_days)

    def _days(self, agent_id: Optional[str], column: str, default: int) -> int:
        """The agent's `column` when it is set and > 0, else the setting's `default`."""
        agent = self._agent(agent_id)
        days = agent[column] if agent is not None else None
        return days if days and days > 0 else default


def last_use(row: Mapping[str, Any]) -> datetime:
    """Return when a row was last accessed, or created if it never was."""
    return row["LastAccessedAt"] or row["__mj_CreatedAt"]


def note_verdict(row: Mapping[str, Any], retention: Retention, now: datetime) -> Optional[tuple[str, str]]:
    """Return (`ArchiveResult` field, comment) when a note is to be archived, else None."""
    if row["ExpiresAt"] is not None and row["ExpiresAt"] <= now:
        return "notes_expired", f"Archived: Expired (ExpiresAt {row['ExpiresAt'].isoformat()})"
    if not retention.enabled(row["AgentID"]):
        return None
    days = retention.note_days(row["AgentID"])
    idle = now - last_use(row)
    if idle > timedelta(days=days):
        return "notes_stale", f"Archived: Stale ({idle.days} days without access; retention {days} days)"
    return None


def example_verdict(row: Mapping[str, Any], retention: Retention, now: datetime, low_score: float) -> Optional[tuple[str, str]]:
    """Return (`ArchiveResult` field, comment) when an example is to be archived, else None."""
    if row["ExpiresAt"] is not None and row["ExpiresAt"] <= now:
        return "examples_expired", f"Archived: Expired (ExpiresAt {row['ExpiresAt'].isoformat()})"
    if row["SuccessScore"] is None or float(row["SuccessScore"]) >= low_score or not retention.enabled(row["AgentID"]):
        return None
    days = retention.example_days(row["AgentID"])
    idle = now - last_use(row)
    if idle > timedelta(days=days):
        return "examples_stale", f"Archived: Stale low-score (SuccessScore {float(row['SuccessScore']):g}; {idle.days} days without access; retention {days} days)"
    return None


@dataclass
class ArchiveResult(StepResult):
    notes_expired: int = 0
    notes_stale: int = 0
    examples_expired: int = 0
    examples_stale: int = 0
    #: the database's refusal of Status 'Archived' and the rows it held back (see `within_refusal`)
    refused: Optional[list[dict[str, Any]]] = None


class ArchivePhase:
    """Archive expired notes and examples, and stale auto-generated ones."""

    name = NAME
    step_name = STEP_NAME

    def plan(self, ctx: PhaseContext, overlay: Overlay) -> PhasePlan:
        now = ctx.now
        with read(ctx.engine) as conn:
            agents = load_agents(conn)
            retention = Retention(agents, ctx.settings)
            shortest_note = min([retention.note_days(a) for a in agents] + [ctx.settings.note_retention_days])
            shortest_example = min([retention.example_days(a) for a in agents] + [ctx.settings.example_retention_days])
            notes = self._candidates(conn, m.note, ctx, now - timedelta(days=shortest_note), overlay)
            examples = self._candidates(conn, m.example, ctx, now - timedelta(days=shortest_example), overlay)
            refusals = {t: archive_refusal(conn, t, ctx.settings.db_schema) for t in ("AIAgentNote", "AIAgentExample")}
        notes.extend(self._added(overlay, ctx))

        counts: Counter[str] = Counter()
        note_actions, example_actions = [], []
        for row in notes:
            verdict = note_verdict(row, retention, now)
            if verdict:
                counts[verdict[0]] += 1
                note_actions.append((row, "archive", verdict[1]))
        for row in examples:
            verdict = example_verdict(row, retention, now, ctx.settings.low_score_threshold)
            if verdict:
                counts[verdict[0]] += 1
                example_actions.append((row, "archive", verdict[1]))
        result = ArchiveResult(**counts)

        note_status, note_actions = within_refusal(note_actions, refusals["AIAgentNote"], result)
        example_status, example_actions = within_refusal(example_actions, refusals["AIAgentExample"], result)
        plan = PhasePlan(
            phase=NAME,
            step_name=STEP_NAME,
            units=archive_units("AIAgentNote", note_actions, status=note_status) + archive_units("AIAgentExample", example_actions, status=example_status),
            input={"agentsChecked": len(agents), "notesChecked": len(notes), "examplesChecked": len(examples)},
            output=result.as_output(),
        )
        if not note_actions and not example_actions:
            plan.outcome = "no items"
            plan.message = "nothing expired or stale"
        else:
            plan.message = f"{plural(len(note_actions), 'note')} and {plural(len(example_actions), 'example')} to archive"
        plan.message += "".join(f"; {refusal_line(r)}" for r in result.refused or ())
        return plan

    @staticmethod
    def _candidates(conn: sa.Connection, table: sa.Table, ctx: PhaseContext, oldest_allowed: datetime, overlay: Overlay) -> list[Mapping[str, Any]]:
        name = table.name
        columns = dict.fromkeys(("ID", *GUARD_COLUMNS[name], "AgentID", "__mj_CreatedAt", *SCOPE_COLUMNS))
        used = sa.func.coalesce(table.c.LastAccessedAt, table.c["__mj_CreatedAt"])
        conditions = [
            table.c.Status == "Active",
            *revocable_rows(table),
            sa.or_(table.c.ExpiresAt <= ctx.now, used < oldest_allowed),
            *agent_filter(table, ctx.scope, ctx.engine),
        ]
        found = read_rows(conn, [table.c[c] for c in columns], conditions, (table.c["__mj_CreatedAt"], table.c.ID))
        rows = [r for r in found if str(r["ID"]).lower() not in overlay.removed and in_shard(r, ctx.scope)]
        return [as_planned(r, overlay.changed) for r in rows] if name == "AIAgentNote" and overlay.changed else rows

    @staticmethod
    def _added(overlay: Overlay, ctx: PhaseContext) -> list[Mapping[str, Any]]:
        return [record_row(note) for note in overlay.added_for(ctx.scope.agent_id) if revocable(note.protection_tier, note.is_auto_generated)]


def refusal_line(entry: Mapping[str, Any]) -> str:
    """Say, in the step message, what the database refused and what memctl wrote instead."""
    table = str(entry["column"]).split(".")[0]
    what = plural(int(entry["rows"]), "example" if table == "AIAgentExample" else "note")
    instead = "left Active" if entry["instead"] is None else f"set to {entry['instead']!r}"
    return f"{what} {instead}: the database refuses Status 'Archived' ({entry['constraint']})"


def load_agents(conn: sa.Connection) -> dict[str, Mapping[str, Any]]:
    """Return every agent's retention settings, keyed by lowercase ID (one query)."""
    a = m.agent
    query = sa.select(a.c.ID, a.c.NoteRetentionDays, a.c.ExampleRetentionDays, a.c.AutoArchiveEnabled)
    return {str(r["ID"]).lower(): r for r in conn.execute(query).mappings()}
