"""Undo a run: put back every record it changed, from the change log (DESIGN 1, issue 'undo').

The undo is itself a run with its own change log, so an undo can be undone too. It is all or
nothing: if any record the run changed has been changed again since, nothing is restored
unless `--force` is given.
"""

from __future__ import annotations

import sqlalchemy as sa

from memctl.errors import FailedError, UsageError
from memctl.phases.base import Overlay, PhaseContext
from memctl.phases.common import chunks
from memctl.plan import PhasePlan, guard_mismatch
from memctl.store import models as m
from memctl.store.changes import TABLE_OBJECTS, undo_units
from memctl.store.engine import read

STEP_NAME = "Undo Run"


class UndoPhase:
    """Plan the reversal of one run's changes."""

    name = "undo"
    step_name = STEP_NAME

    def __init__(self, run_id: str, force: bool = False) -> None:
        self.run_id = run_id.lower()
        self.force = force

    def plan(self, ctx: PhaseContext, overlay: Overlay) -> PhasePlan:
        with read(ctx.engine) as conn:
            run = conn.execute(sa.select(m.run.c.ID, m.run.c.RunName, m.run.c.Status).where(m.run.c.ID == self.run_id)).mappings().first()
            if run is None:
                raise UsageError(f"no run {self.run_id} in this store (see `memctl runs list`)")
            if run["Status"] == "Running":
                raise UsageError(f"run {self.run_id} is still Running; undo it once it has finished")
            units = undo_units(conn, self.run_id, self.force)
            conflicts = [] if self.force else self._conflicts(conn, units)
        if conflicts:
            listed = "; ".join(f"{rid}: {why}" for rid, why in conflicts[:20])
            more = f" (and {len(conflicts) - 20} more)" if len(conflicts) > 20 else ""
            raise FailedError(f"{len(conflicts)} record(s) changed since run {self.run_id[:8]}; nothing undone (use --force to overwrite): {listed}{more}")
        revoke = sum(1 for u in units if u.mutations[0].values == {"Status": "Revoked"})
        plan = PhasePlan(
            phase="undo", step_name=STEP_NAME, units=units,
            input={"runId": self.run_id, "runName": run["RunName"], "force": self.force},
            output={"recordsToRestore": len(units) - revoke, "createdNotesToRevoke": revoke},
            message=f"{len(units)} record(s) of run {self.run_id[:8]} ({run['RunName']}) to put back",
        )
        if not units:
            plan.outcome = "no items"
            plan.message = f"run {self.run_id[:8]} changed nothing"
        return plan

    @staticmethod
    def _conflicts(conn: sa.Connection, units: list) -> list[tuple[str, str]]:
        conflicts = []
        by_table: dict[str, list] = {}
        for unit in units:
            for mutation in unit.mutations:
                by_table.setdefault(mutation.table, []).append(mutation)
        for table_name, mutations in by_table.items():
            table = TABLE_OBJECTS[table_name]
            rows = {}
            for chunk in chunks([mu.record_id for mu in mutations]):
                for row in conn.execute(sa.select(table).where(table.c.ID.in_(chunk))).mappings():
                    rows[str(row["ID"]).lower()] = row
            for mutation in mutations:
                if mutation.guard is None:
                    continue  # unguarded, as apply treats it (a review flag raised again)
                why = guard_mismatch(mutation.guard, rows.get(mutation.record_id), table_name)
                if why:
                    conflicts.append((mutation.record_id, why))
        return conflicts
