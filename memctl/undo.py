"""Undo a run: put back every record it changed, from the change log (DESIGN 1).

The undo is itself a run with its own change log, so an undo can be undone too. It is all or
nothing: every change is checked first (the record's state against the one the run left, minus
the columns the database stamps itself, and the protection rules); if any record is in the way,
nothing is restored and each such record is named (`--force` overrides the state check, never
the protection rules); otherwise every record is put back in one transaction.
"""

from __future__ import annotations

from dataclasses import dataclass

import sqlalchemy as sa

from memctl.context import PhaseContext
from memctl.errors import FailedError, UsageError
from memctl.phases.base import Overlay
from memctl.plan import PhasePlan, StepResult
from memctl.store import models as m
from memctl.store.changes import TABLE_OBJECTS, mutation_refusal, rows_by_id, undo_units
from memctl.store.engine import read

STEP_NAME = "Undo Run"


@dataclass
class UndoResult(StepResult):
    records_to_restore: int
    created_notes_to_revoke: int


class UndoPhase:
    """Plan the reversal of one run's changes."""

    name = "undo"
    step_name = STEP_NAME

    def __init__(self, run_id: str, force: bool = False) -> None:
        self.run_id = run_id.lower()
        self.force = force

    def plan(self, ctx: PhaseContext, overlay: Overlay) -> PhasePlan:
        with read(ctx.engine) as conn:
            # api.undo refused a missing or Running run before this run began; a finished run stays finished
            run = conn.execute(sa.select(m.run.c.RunName).where(m.run.c.ID == self.run_id)).mappings().first()
            if run is None:
                raise UsageError(f"no run {self.run_id} in this store (see `memctl runs list`)")
            units = undo_units(conn, self.run_id, self.force)
            conflicts = self._conflicts(conn, units)
        if conflicts:
            listed = "; ".join(f"{rid}: {why}" for rid, why in conflicts[:100])
            more = f" (and {len(conflicts) - 100} more)" if len(conflicts) > 100 else ""
            hint = "" if self.force else " (--force overwrites records changed since, never a protected one)"
            raise FailedError(f"{len(conflicts)} record(s) of run {self.run_id[:8]} in the way; nothing undone{hint}: {listed}{more}")
        mutations = [mu for u in units for mu in u.mutations]
        revoke = sum(1 for mu in mutations if mu.values == {"Status": "Revoked"})
        plan = PhasePlan(
            phase="undo", step_name=STEP_NAME, units=units,
            input={"runId": self.run_id, "runName": run["RunName"], "force": self.force},
            output=UndoResult(len(mutations) - revoke, revoke).as_output(),
            all_or_nothing=True,
            message=f"{len(mutations)} record(s) of run {self.run_id[:8]} ({run['RunName']}) to put back",
        )
        if not units:
            plan.outcome = "no items"
            plan.message = f"run {self.run_id[:8]} changed nothing"
        return plan

    @staticmethod
    def _conflicts(conn: sa.Connection, units: list) -> list[tuple[str, str]]:
        by_table: dict[str, list] = {}
        # a review flag raised again is not checked: apply skips it if the pair is flagged already
        for mutation in (mu for unit in units for mu in unit.mutations if mu.action != "flag"):
            by_table.setdefault(mutation.table, []).append(mutation)
        conflicts = []
        for table_name, mutations in by_table.items():
            rows = rows_by_id(conn, TABLE_OBJECTS[table_name], [mu.record_id for mu in mutations])
            for mutation in mutations:
                why = mutation_refusal(mutation, rows.get(mutation.record_id))
                if why:
                    conflicts.append((mutation.record_id, why))
        return conflicts
