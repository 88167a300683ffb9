"""Phase 3, prune stale references (DESIGN 4.3, FR-030..034).

A note whose agent is missing or Disabled, whose user is missing or inactive, or whose company or
source conversation is missing is archived, with one Comments line naming every missing reference;
a Protected one is annotated once instead. Lookups are one query per entity type per run (chunked
IN-lists). The first read takes only IDs and references; whole rows are read for the orphans
alone, and one whose references changed in between waits for the next run, as do the orphans
beyond `prune_cap` (oldest first).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from functools import cache
from typing import Any, Mapping, Optional

import sqlalchemy as sa

from memctl.context import PhaseContext
from memctl.phases.base import Overlay
from memctl.phases.common import (
    agent_filter, archive_units, as_planned, in_shard, lookup_ids, plural, read_rows, within_refusal,
)
from memctl.plan import GUARD_COLUMNS, PhasePlan, StepResult
from memctl.protection import refusal, writable_rows
from memctl.records import record_row
from memctl.store import models as m
from memctl.store.capabilities import Refusal, archive_refusal
from memctl.store.ids import as_stored, by_id_status, chunks, guid_reader, id_in
from memctl.store.engine import read

NAME = "prune"
STEP_NAME = "Prune Stale References"
REFERENCE_COLUMNS = ("AgentID", "UserID", "CompanyID", "SourceConversationID")
SELECT_COLUMNS = tuple(dict.fromkeys(("ID", *GUARD_COLUMNS["AIAgentNote"], *REFERENCE_COLUMNS, "Comments", "__mj_CreatedAt",
                                      "PrimaryScopeEntityID", "PrimaryScopeRecordID", "SecondaryScopes", "Type")))
#: a candidate's partition, which the first read takes with --shard only
PARTITION_COLUMNS = ("PrimaryScopeEntityID", "PrimaryScopeRecordID", "SecondaryScopes")
ENTITY = {"AgentID": "agent", "UserID": "user", "CompanyID": "company", "SourceConversationID": "conversation"}


@dataclass(frozen=True)
class References:
    """The referenced entities that exist, looked up once per run (FR-034)."""

    agents: Mapping[str, Mapping[str, Any]]
    users: Mapping[str, Mapping[str, Any]]
    companies: Mapping[str, Any]
    conversations: Mapping[str, Any]

    def gone(self, column: str, ref_id: Optional[str]) -> Optional[str]:
        """Return why the entity a note's `column` names (lower-case ID) is gone, or None."""
        if ref_id is None:
            return None
        if column == "AgentID":
            agent = self.agents.get(ref_id)
            if agent is None:
                return f"agent {ref_id} no longer exists"
            return f"agent {ref_id} ({agent['Name']}) is Disabled" if agent["Status"] == "Disabled" else None
        if column == "UserID":
            user = self.users.get(ref_id)
            if user is None:
                return f"user {ref_id} no longer exists"
            return None if user["IsActive"] else f"user {ref_id} ({user['Name']}) is inactive"
        if column == "CompanyID":
            return None if ref_id in self.companies else f"company {ref_id} no longer exists"
        return None if ref_id in self.conversations else f"source conversation {ref_id} no longer exists"

    def problems(self, row: Mapping[str, Any]) -> list[tuple[str, str]]:
        """Return (column, description) for every reference of `row` that is gone."""
        found = [(column, self.gone(column, _key(row[column]))) for column in REFERENCE_COLUMNS]
        return [(column, why) for column, why in found if why is not None]


def _key(value: Optional[str]) -> Optional[str]:
    return None if value is None else str(value).lower()


def _references(row: Mapping[str, Any]) -> tuple[Optional[str], ...]:
    return tuple(_key(row[c]) for c in REFERENCE_COLUMNS)


def _orphan_references(
    conn: sa.Connection, where: list[Any], ctx: PhaseContext, overlay: Overlay, added: list[Mapping[str, Any]]
) -> tuple[int, dict[str, set[tuple[Optional[str], ...]]], References]:
    """The first read: every candidate's ID and references (and with --shard its partition), no more.

    Return how many candidates were checked, the references (lower-case IDs) of each row with
    one gone, by note ID, and the referenced entities looked up. Most notes are not orphans, so
    their full rows are never read.
    """
    t = m.note
    columns = ("ID", *REFERENCE_COLUMNS, *(PARTITION_COLUMNS if ctx.scope.shard is not None else ()))
    selected = [as_stored(t.c[c], conn) if isinstance(t.c[c].type, sa.Uuid) else t.c[c] for c in columns]
    spell = cache(guid_reader(conn))  # few distinct references among many rows
    rows = conn.execute(sa.select(*selected).where(*where)).all()
    if overlay.removed or ctx.scope.shard is not None:
        rows = [r for r in rows if spell(r[0]) not in overlay.removed
                and in_shard({c: spell(v) if isinstance(t.c[c].type, sa.Uuid) else v for c, v in zip(columns, r)}, ctx.scope)]
    raw = [{r[i + 1] for r in rows} for i in range(len(REFERENCE_COLUMNS))]  # each column's values as read
    per_column = [({spell(v) for v in values} | {_key(a[c]) for a in added}) - {None} for values, c in zip(raw, REFERENCE_COLUMNS)]
    refs = References(
        agents=lookup_ids(conn, m.agent, per_column[0], ("ID", "Name", "Status")),  # type: ignore[arg-type]
        users=lookup_ids(conn, m.user, per_column[1], ("ID", "Name", "IsActive")),  # type: ignore[arg-type]
        companies=lookup_ids(conn, m.company, per_column[2]),  # type: ignore[arg-type]
        conversations=lookup_ids(conn, m.conversation, per_column[3]),  # type: ignore[arg-type]
    )
    bad = [{v for v in values if refs.gone(c, spell(v)) is not None} for c, values in zip(REFERENCE_COLUMNS, raw)]
    # by note ID, since rows whose IDs differ only in spelling on SQLite (twins) may both be orphans
    orphans: dict[str, set[tuple[Optional[str], ...]]] = {}
    for r in rows:
        if any(v in gone for v, gone in zip(r[1:], bad)):
            orphans.setdefault(spell(r[0]), set()).add(tuple(spell(v) for v in r[1 : 1 + len(REFERENCE_COLUMNS)]))  # type: ignore[arg-type]
    return len(rows), orphans, refs


def _active_by_id(conn: sa.Connection, ids: list[str], where: list[Any]) -> list[dict[str, Any]]:
    """Return SELECT_COLUMNS of the Active notes matching `where` whose ID is in `ids` (a query per chunk)."""
    t = m.note
    status = by_id_status(t.c.Status, conn)
    found: list[dict[str, Any]] = []
    for chunk in chunks(ids):
        found.extend(read_rows(conn, [t.c[c] for c in SELECT_COLUMNS], [status == "Active", *where, id_in(t, chunk, conn)]))
    return found


def _capped_orphans(
    rows: list[Mapping[str, Any]], refs: References, cap: int
) -> tuple[list[tuple[Mapping[str, Any], str, str]], Counter[str], int, int]:
    """Return (row, action, comment) of the first `cap` orphans, their gone entity types, how many are Protected, and all orphans."""
    orphans: list[tuple[Mapping[str, Any], str, str]] = []
    by_entity: Counter[str] = Counter()
    protected = 0
    orphan_total = 0
    for row in rows:
        problems = refs.problems(row)
        if not problems:
            continue
        orphan_total += 1
        if len(orphans) >= cap:
            continue
        by_entity.update(ENTITY[column] for column, _ in problems)
        text = "; ".join(description for _, description in problems)
        if refusal("archive", row["ProtectionTier"], True):  # Protected: annotated instead
            comment = f"Stale references (kept: Protected): {text}"
            if comment in (row["Comments"] or ""):
                orphan_total -= 1
                continue
            protected += 1
            orphans.append((row, "annotate", comment))
        else:
            orphans.append((row, "archive", f"Archived: stale references: {text}"))
    return orphans, by_entity, protected, orphan_total


@dataclass
class PruneResult(StepResult):
    orphans_found: int
    changed_while_planning: int
    notes_to_archive: int
    protected_annotated: int
    orphaned_agents: int
    orphaned_users: int
    orphaned_companies: int
    orphaned_conversations: int
    left_for_next_run: int
    #: the database's refusal of Status 'Archived' and the rows it held back (see `within_refusal`)
    refused: Optional[list[dict[str, Any]]] = None


class PrunePhase:
    """Archive notes whose agent, user, company or source conversation is gone."""

    name = NAME
    step_name = STEP_NAME

    def plan(self, ctx: PhaseContext, overlay: Overlay) -> PhasePlan:
        checked, rows, changed, refs, refused_status = self._read(ctx, overlay)
        orphans, by_entity, protected, orphan_total = _capped_orphans(rows, refs, ctx.settings.prune_cap)
        left = orphan_total - len(orphans)
        result = PruneResult(
            orphan_total, changed, len(orphans) - protected, protected,
            by_entity["agent"], by_entity["user"], by_entity["company"], by_entity["conversation"], left,
        )
        status, fitted = within_refusal(orphans, refused_status, result)
        plan = PhasePlan(
            phase=NAME,
            step_name=STEP_NAME,
            units=archive_units("AIAgentNote", fitted, status=status),
            input={"notesChecked": checked, "cap": ctx.settings.prune_cap},
            output=result.as_output(),
        )
        if not orphans:
            plan.outcome = "no items"
            plan.message = f"{plural(checked, 'note')} checked, no stale references"
        else:
            plan.message = f"{plural(len(orphans) - protected, 'orphaned note')} to archive" + (f", {left} left for the next run (cap {ctx.settings.prune_cap})" if left else "")
        return plan

    def _read(self, ctx: PhaseContext, overlay: Overlay) -> tuple[int, list[Mapping[str, Any]], int, References, Optional[Refusal]]:
        """Return (notes checked, candidate rows oldest first, orphans changed while planning, references, archive refusal)."""
        t = m.note
        has_reference = sa.or_(*[t.c[c].is_not(None) for c in REFERENCE_COLUMNS])
        rest = [t.c.IsAutoGenerated == sa.true(), *writable_rows(t), has_reference, *agent_filter(t, ctx.scope, ctx.engine)]
        with read(ctx.engine) as conn:
            added = self._added(overlay, ctx)
            checked, gone, refs = _orphan_references(conn, [t.c.Status == "Active", *rest], ctx, overlay, added)
            rows: list[Mapping[str, Any]] = [
                as_planned(r, overlay.changed) for r in _active_by_id(conn, list(gone), rest)
                # a row whose references changed since the first read was not looked up: next run
                if _references(r) in gone.get(str(r["ID"]).lower(), ()) and in_shard(r, ctx.scope)
            ]
            # orphans of the first read the second did not find as they were (changed meanwhile)
            changed = sum(len(found) for found in gone.values()) - len({(str(r["ID"]).lower(), _references(r)) for r in rows})
            rows.extend(added)
            rows.sort(key=lambda r: (r["__mj_CreatedAt"], str(r["ID"])))
            refused_status = archive_refusal(conn, "AIAgentNote", ctx.settings.db_schema)
        return checked + len(added), rows, changed, refs, refused_status

    @staticmethod
    def _added(overlay: Overlay, ctx: PhaseContext) -> list[Mapping[str, Any]]:
        rows = [
            {**record_row(note), "Comments": ""} for note in overlay.added_for(ctx.scope.agent_id)
            if note.is_auto_generated and not refusal("annotate", note.protection_tier, True)
        ]
        return [row for row in rows if any(row[c] is not None for c in REFERENCE_COLUMNS)]
