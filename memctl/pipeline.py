"""The pipeline every command runs: gate -> lock -> phases in order (plan, then apply) -> record.

`execute` is the one place where phases are planned and applied, where run records are written
and where a phase failure is contained (FR-004): a phase that raises is recorded Failed and the
next phase still runs. Dry-runs go through the same code with a null recorder and without the
apply step; the overlay lets later phases plan on the state the earlier plans would produce, so
a dry-run shows what a real run would do, and its saved plan can be applied as previewed.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Optional, Sequence, Union

from memctl import lock as leases
from memctl.agent import agent_id, require_agent
from memctl import stopping
from memctl import preview
from memctl.context import PhaseContext
from memctl.errors import MemctlError
from memctl.gate import SKIPPED_SUFFIX, GateDecision, check_gate, last_completed_maintenance
from memctl.phases import registry
from memctl.phases.base import Overlay, Phase
from memctl.plan import PhasePlan, Plan
from memctl.preview import Entry
from memctl.recorder import FinishedStep, NullRecorder, Recorder, RunRecorder
from memctl.records import note_record
from memctl.store import models as m
from memctl.store.changes import ApplyContext, UnitOutcome, apply_batch, batches, to_db_values
from memctl.store.engine import read, scrub
from memctl.store.failures import describe
from memctl.stopping import Deadline, RunStopped
from memctl.vectors import close_vectors

PHASE_ORDER = ("consolidate", "contradictions", "prune", "archive")
GATE_STEP = "Check Maintenance Gate"
LEASE_STEP = "Check Run Lease"
#: how far past the run deadline (on the next attempt's clock) a live lease must be before it is
#: reported as stuck: room for clock skew between hosts and for the holder's own closing
OVERDUE_GRACE_SECONDS = 60.0


@dataclass
class PhaseReport:
    """What one phase did (or would do, in a dry-run)."""

    phase: str
    step_name: str
    outcome: str
    message: str = ""
    input: dict[str, Any] = field(default_factory=dict)
    output: dict[str, Any] = field(default_factory=dict)
    applied: int = 0
    applied_by_action: dict[str, int] = field(default_factory=dict)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    error: Optional[str] = None
    rows: list[tuple[str, str, str, str]] = field(default_factory=list)
    seconds: float = 0.0
    #: the changes with their texts (memctl.preview); in --json, never in the run record
    entries: list[Entry] = field(default_factory=list)

    def to_dict(self, entries: bool = False) -> dict[str, Any]:
        out = {
            "phase": self.phase,
            "step": self.step_name,
            "outcome": self.outcome,
            "message": self.message,
            "input": self.input,
            "output": self.output,
            "applied": self.applied,
            "appliedByAction": self.applied_by_action,
            "skipped": [{"record": r, "reason": why} for r, why in self.skipped],
            "error": self.error,
            "seconds": round(self.seconds, 3),
        }
        if entries:
            out["changes"] = [e.to_dict() for e in self.entries]
        return out


@dataclass
class RunReport:
    """The result of one invocation."""

    command: str
    status: str  # completed | failed | skipped | locked | dry-run
    message: str
    run_id: Optional[str] = None
    phases: list[PhaseReport] = field(default_factory=list)
    gate: Optional[dict[str, Any]] = None
    plan: Optional[Plan] = None
    seconds: float = 0.0
    #: why the run was stopped from outside (deadline, SIGINT, SIGTERM), and the exit code that goes with it
    stopped: Optional[str] = None
    stop_exit_code: int = 1
    #: the live lease that refused this run when its holder is past the run deadline
    stuck_lease: Optional[dict[str, Any]] = None

    @property
    def exit_code(self) -> int:
        if self.stopped is not None:
            return self.stop_exit_code
        if self.status == "failed" or any(p.outcome == "failed" for p in self.phases):
            return 1
        return 0

    def to_dict(self, entries: bool = False) -> dict[str, Any]:
        """Return the report as JSON data; `entries` adds every change with its texts (for --json)."""
        return {
            "command": self.command,
            "status": self.status,
            "success": self.exit_code == 0,
            "message": self.message,
            "runId": self.run_id,
            "gate": self.gate,
            "phases": [p.to_dict(entries) for p in self.phases],
            "seconds": round(self.seconds, 3),
            "stopped": self.stopped,
            "stuckLease": self.stuck_lease,
        }


class FixedPlanPhase:
    """Replays a saved phase plan (`memctl apply`): apply never re-decides."""

    def __init__(self, plan: PhasePlan) -> None:
        self.name = plan.phase
        self.step_name = plan.step_name
        self._plan = plan

    def plan(self, ctx: PhaseContext, overlay: Overlay) -> PhasePlan:
        return self._plan


def maintenance_phases() -> list[Phase]:
    """Return the four maintenance phases in the fixed order (FR-001)."""
    return [registry.phase(name) for name in PHASE_ORDER]


def simulate(plan: PhasePlan, overlay: Overlay) -> None:
    """Fold a phase plan's effects into the overlay as if it had been applied (dry-run)."""
    for unit in plan.units:
        for mutation in unit.mutations:
            if mutation.action == "insert":
                values = to_db_values(m.note, mutation.values)
                overlay.added.append(note_record(values))
                overlay.created_by_run.add(mutation.record_id.lower())
            elif mutation.values.get("Status") in ("Archived", "Revoked"):
                overlay.removed.add(mutation.record_id.lower())
            elif mutation.action == "credit":
                overlay.changed.setdefault(mutation.record_id.lower(), {}).update(mutation.values)


def record_applied(outcomes: Sequence[UnitOutcome], overlay: Overlay) -> None:
    """Remember which notes this run created (contradictions skip pairs of them)."""
    for outcome in outcomes:
        for mutation in outcome.applied:
            if mutation.action == "insert":
                overlay.created_by_run.add(mutation.record_id.lower())


def execute(
    ctx: PhaseContext,
    command: str,
    phases: Sequence[Phase],
    *,
    dry_run: bool = False,
    gated: bool = False,
    force: bool = False,
    plan_out: Optional[str] = None,
    run_name: Optional[str] = None,
    deadline: Optional[Deadline] = None,
) -> RunReport:
    """Run `phases` in order under the lock, recording everything; see the module docstring.

    The run's deadline starts now, `run_deadline_seconds` long, unless `deadline` is given.
    """
    started = time.monotonic()
    settings = ctx.settings
    ctx.dry_run = dry_run
    ctx.deadline = deadline or Deadline(settings.run_deadline_seconds)
    run_name = run_name or command
    decision = _read_gate(ctx, gated)
    gate_info = None if decision is None else {**decision.as_dict(), "forced": force}
    if decision is not None and not decision.open and not force:
        report = _skipped(ctx, command, run_name, decision, gate_info, force)
        report.seconds = time.monotonic() - started
        return report
    lease: Optional[leases.Lease] = None
    recorder: Recorder = NullRecorder()
    if not dry_run:
        run_recorder = RunRecorder(ctx.engine, settings.current_time, run_name, agent_id=agent_id(settings))
        got = _take_lease(ctx, run_recorder)
        if isinstance(got, leases.LeaseRefused):
            report = _refused(run_recorder, command, got, settings, gate_info)
            report.seconds = time.monotonic() - started
            return report
        recorder, lease = run_recorder, got

    plan = Plan(command=command, created_at=ctx.now.isoformat(), database=settings.masked_db_url, scope=ctx.scope.as_dict())
    report = RunReport(command, "dry-run" if dry_run else "completed", "", run_id=recorder.run_id, gate=gate_info, plan=plan)
    try:
        if decision is not None:
            step = recorder.start_step(GATE_STEP, "Decision", _gate_input(settings, force))
            recorder.finish_step(step, success=True, output_data={**gate_info, "outcome": "forced" if not decision.open else "open"})
        _run_phases(ctx, phases, recorder, lease, plan, report)
        if plan_out:
            plan.save(plan_out)
        report.seconds = time.monotonic() - started
        # Close the run while the lease still points at it: a crash after the release would
        # leave a Running run that no lease takeover ever closes.
        recorder.finish_run(success=report.exit_code == 0, message=report.message, result=report.to_dict())
    except RunStopped as stop:
        _stopped(ctx, report, stop, recorder, lease, started)
        lease = None
    except BaseException as exc:
        _aborted(report, exc, recorder, settings)
        raise
    finally:
        _close_services(ctx)
        if lease is not None:
            lease.release()
    return report


def _read_gate(ctx: PhaseContext, gated: bool) -> Optional[GateDecision]:
    """Check the agent, and the gate of a gated run; set when maintenance last completed."""
    with read(ctx.engine) as conn:
        require_agent(conn, ctx.settings)
        if not gated:
            ctx.last_maintenance_at = last_completed_maintenance(conn, ctx.scope.shard, agent_id(ctx.settings))
            return None
        decision = check_gate(conn, ctx.settings, ctx.now, ctx.scope.shard)
    ctx.last_maintenance_at = decision.last_completed_at
    return decision


def _skipped(ctx: PhaseContext, command: str, run_name: str, decision: GateDecision, gate_info: dict[str, Any], force: bool) -> RunReport:
    """Report a closed gate, recorded as a finished run with its gate step (not in a dry-run)."""
    report = RunReport(command, "skipped", f"gate closed: {decision.reason} (use --force to run anyway)", gate=gate_info)
    if not ctx.dry_run:
        settings = ctx.settings
        recorder = RunRecorder(ctx.engine, settings.current_time, run_name + SKIPPED_SUFFIX, agent_id=agent_id(settings))
        report.run_id = recorder.run_id
        gate_step = FinishedStep(GATE_STEP, "Decision", _gate_input(settings, force), {**gate_info, "outcome": "skipped"}, success=True)
        recorder.record_finished_run(report.message, report.to_dict(), [gate_step])
    return report


def _take_lease(ctx: PhaseContext, recorder: RunRecorder) -> Union[leases.Lease, leases.LeaseRefused]:
    """Take the scope's lease for the run (kept alive while it runs) and record the run as started."""
    settings = ctx.settings
    got = leases.acquire(
        ctx.engine, ctx.scope.lock_name(), recorder.run_id, settings.lease_seconds, settings.current_time,
        deadline_seconds=ctx.deadline.remaining(),
    )
    if isinstance(got, leases.LeaseRefused):
        return got
    got.keep_alive()
    try:
        recorder.start_run()
    except BaseException:
        got.release()
        raise
    return got


def _run_phases(ctx: PhaseContext, phases: Sequence[Phase], recorder: Recorder, lease: Optional[leases.Lease], plan: Plan, report: RunReport) -> None:
    """Plan and apply each phase in turn (each sees the earlier ones' plans in a dry-run), then sum up."""
    overlay = Overlay()
    for phase in phases:
        ctx.deadline.check(f"before the {phase.name} phase")
        report.phases.append(_run_phase(ctx, phase, overlay, recorder, lease, plan, ctx.dry_run))
    failed = [p.phase for p in report.phases if p.outcome == "failed"]
    report.status = "dry-run" if ctx.dry_run else ("failed" if failed else "completed")
    report.message = _summary(report, failed)


def _stopped(ctx: PhaseContext, report: RunReport, stop: RunStopped, recorder: Recorder, lease: Optional[leases.Lease], started: float) -> None:
    """The deadline passed or a signal came: close the run Failed and give the lease back (exit 1 at the
    deadline, 130/143 on SIGINT/SIGTERM)."""
    with stopping.closing():
        if stop.phase_report is not None:
            report.phases.append(stop.phase_report)
        report.status, report.stopped, report.stop_exit_code = "failed", stop.reason, stop.exit_code
        report.message = scrub(str(stop), ctx.settings)
        report.seconds = time.monotonic() - started
        recorder.finish_run(success=False, message=report.message, error=report.message, result=report.to_dict())
        _close_services(ctx)
        if lease is not None:
            lease.release()


def _aborted(report: RunReport, exc: BaseException, recorder: Recorder, settings: Any) -> None:
    """Close the run Failed on an unexpected error or an interrupt (the caller re-raises it)."""
    report.status = "failed"
    if isinstance(exc, KeyboardInterrupt):
        report.message = "interrupted (KeyboardInterrupt)"
    else:
        report.message = f"aborted: {scrub(describe(exc), settings)}"
    with stopping.closing():
        recorder.finish_run(success=False, message=report.message, error=report.message, result=report.to_dict())


def _close_services(ctx: PhaseContext) -> None:
    """Close the run's stored-vector file and the LLM client's connections (an answer still trickling in is not awaited)."""
    close_vectors(ctx)
    if ctx.services.judge is not None:
        try:
            ctx.services.judge.close()
        except Exception:  # noqa: BLE001 - closing is best effort; the process is about to end
            pass


def _refused(recorder: RunRecorder, command: str, refused: leases.LeaseRefused, settings: Any, gate_info: Optional[dict[str, Any]]) -> RunReport:
    """Report a held lock: a skip (exit 0), or a failure when its holder is past the run deadline.

    A lease is never renewed past its run's deadline, so a live lease taken more than
    run_deadline_seconds ago belongs to a run that is stuck (or to a memctl without deadlines).
    Skipping quietly would hide that for ever: this attempt records a Failed run with a Failed
    "Check Run Lease" step, says so on stderr and in the metrics, and exits 1.
    """
    held = f"the store is locked by {refused.holder} (run {refused.run_id}, lease until {refused.expires_at})"
    held_for = (settings.current_time() - refused.acquired_at).total_seconds() if refused.acquired_at is not None else 0.0
    overdue = held_for - settings.run_deadline_seconds
    if refused.acquired_at is None or overdue <= OVERDUE_GRACE_SECONDS:
        return RunReport(command, "locked", f"{held}; nothing done", gate=gate_info)
    message = (
        f"{held}, taken {held_for:.0f} s ago: {overdue:.0f} s past the run deadline ({settings.run_deadline_seconds:g} s), "
        f"so that run is stuck or has no deadline; nothing done: stop process {refused.holder} and its lease expires within lease_seconds"
    )
    stuck = {
        "lease": refused.name, "holder": refused.holder, "runId": refused.run_id, "acquiredAt": refused.acquired_at.isoformat(),
        "expiresAt": refused.expires_at, "heldSeconds": round(held_for, 1), "overdueSeconds": round(overdue, 1),
        "runDeadlineSeconds": settings.run_deadline_seconds,
    }
    report = RunReport(command, "failed", message, run_id=recorder.run_id, gate=gate_info, stuck_lease=stuck)
    step = FinishedStep(LEASE_STEP, "Validation", {"lease": refused.name, "runDeadlineSeconds": settings.run_deadline_seconds}, {**stuck, "outcome": "stuck"}, success=False, error=message)
    recorder.record_finished_run(message, report.to_dict(), [step], success=False)
    return report


def _gate_input(settings: Any, force: bool) -> dict[str, Any]:
    return {"gateHours": settings.gate_hours, "gateMinNewNotes": settings.gate_min_new_notes, "force": force}


def _summary(report: RunReport, failed: list[str]) -> str:
    parts = []
    for p in report.phases:
        if p.outcome == "failed":
            parts.append(f"{p.phase}: FAILED")
        elif p.outcome in ("not available", "skipped", "no items"):
            parts.append(f"{p.phase}: {p.outcome}")
        else:
            changed = p.applied if report.status != "dry-run" else len(p.rows)
            parts.append(f"{p.phase}: {changed} {'planned' if report.status == 'dry-run' else 'changed'}" + (f", {len(p.skipped)} skipped" if p.skipped else ""))
    return "; ".join(parts) + (f" ({', '.join(failed)} failed)" if failed else "")


#: what every phase's output reports of its LLM use: requests and tokens
LLM_FIGURES = ("llmCalls", "promptTokens", "completionTokens", "tokens")


@dataclass
class _PhaseRun:
    """One phase under way: what a stop or a failure needs to close its step."""

    report: PhaseReport
    step_id: Optional[str]
    started: float
    phase_plan: Optional[PhasePlan] = None
    #: filled as units apply, so a stop still knows what stays applied
    applied: list[UnitOutcome] = field(default_factory=list)
    children_recorded: bool = False


def _run_phase(ctx: PhaseContext, phase: Phase, overlay: Overlay, recorder: Recorder, lease: Optional[leases.Lease], plan: Plan, dry_run: bool) -> PhaseReport:
    """Plan one phase, then apply it (in a dry-run, fold it into the overlay), and close its step."""
    started = time.monotonic()
    report = PhaseReport(phase.name, phase.step_name, "planned")
    run = _PhaseRun(report, recorder.start_step(phase.step_name, "Decision"), started)
    try:
        phase_plan = _plan_phase(ctx, phase, overlay, plan, run, dry_run)
        if dry_run:
            simulate(phase_plan, overlay)
            report.outcome = phase_plan.outcome
            report.entries = preview.entries(phase_plan)
        else:
            _apply_phase(ctx, phase_plan, recorder, lease, overlay, run)
        _finish_phase(recorder, run)
    except (RunStopped, KeyboardInterrupt) as stop:
        _phase_stopped(ctx, recorder, run, stop)
        raise
    except Exception as exc:  # noqa: BLE001 - FR-004: a failing phase must not stop the next one
        _phase_failed(ctx, phase, recorder, run, exc)
    return report


def _plan_phase(ctx: PhaseContext, phase: Phase, overlay: Overlay, plan: Plan, run: _PhaseRun, dry_run: bool) -> PhasePlan:
    """Plan the phase into `plan` and its report; a failed plan raises PhaseError."""
    report = run.report
    phase_plan = run.phase_plan = phase.plan(ctx, overlay)
    preview.attach_texts(ctx.engine, phase_plan, {n.id: n.note for n in overlay.added} if dry_run else None)
    plan.phases.append(phase_plan)
    report.input, report.output, report.message = dict(phase_plan.input), dict(phase_plan.output), phase_plan.message
    for key in LLM_FIGURES:  # every phase reports what it asked of an LLM, 0 for those that never ask
        report.output.setdefault(key, 0)
    report.rows = phase_plan.rows()
    if phase_plan.outcome == "failed":
        raise PhaseError(phase_plan.error or phase_plan.message or "planning failed")
    return phase_plan


def _apply_phase(ctx: PhaseContext, phase_plan: PhasePlan, recorder: Recorder, lease: Optional[leases.Lease], overlay: Overlay, run: _PhaseRun) -> None:
    """Apply the phase's units, count them into its report and record its child steps."""
    report, applied = run.report, run.applied
    _apply(ctx, phase_plan, recorder, run.step_id, lease, applied)
    record_applied(applied, overlay)
    _count_applied(report, applied)
    if phase_plan.all_or_nothing and report.skipped:
        raise PhaseError(f"nothing applied: {len(report.skipped)} record(s) in the way: " + "; ".join(f"{r}: {why}" for r, why in report.skipped[:100]))
    report.entries = preview.entries(phase_plan, report.skipped)
    report.outcome = phase_plan.outcome if phase_plan.outcome != "planned" else "done"
    run.children_recorded = True  # before the write: a stop inside it must not record them again
    _record_children(recorder, phase_plan, applied, run.step_id)


def _finish_phase(recorder: Recorder, run: _PhaseRun) -> None:
    """Close the phase's step as succeeded, with what it did and skipped."""
    report = run.report
    report.seconds = time.monotonic() - run.started
    output = {**report.output, "outcome": report.outcome, "applied": report.applied, "skippedChanged": len(report.skipped), "seconds": round(report.seconds, 3)}
    if report.skipped:
        output["skippedRecords"] = [{"record": r, "reason": why} for r, why in report.skipped[:100]]
    _finish(recorder, run.step_id, report.input, output, success=True)


def _phase_stopped(ctx: PhaseContext, recorder: Recorder, run: _PhaseRun, stop: BaseException) -> None:
    """Close the phase's step with the stop's reason and hand its report to the pipeline, which closes the run."""
    report, applied = run.report, run.applied
    report.outcome, report.error = "failed", scrub(str(stop) or "interrupted (KeyboardInterrupt)", ctx.settings)
    report.seconds = time.monotonic() - run.started
    if isinstance(stop, RunStopped):
        stop.phase_report = report
    if applied:
        _count_applied(report, applied)  # the units applied before the stop stay applied
    with stopping.closing():
        try:
            if applied and run.phase_plan is not None and not run.children_recorded:
                _record_children(recorder, run.phase_plan, applied, run.step_id, only_applied=True)
        except Exception:  # noqa: BLE001 - the change log still holds every applied change
            pass
        try:
            _finish(recorder, run.step_id, report.input, {**report.output, "outcome": "stopped", "applied": report.applied}, success=False, error=report.error)
        except Exception:  # noqa: BLE001 - the run row still says why
            pass


def _phase_failed(ctx: PhaseContext, phase: Phase, recorder: Recorder, run: _PhaseRun, exc: Exception) -> None:
    """Record the phase as failed (its step Failed, the error logged); the next phase still runs."""
    report = run.report
    report.outcome = "failed"
    report.error = scrub(describe(exc) if not isinstance(exc, MemctlError) else str(exc), ctx.settings)
    report.seconds = time.monotonic() - run.started
    detail = scrub(describe(exc), ctx.settings)
    ctx.reporter.log(f"{phase.name} failed: {report.error}")
    try:
        _finish(recorder, run.step_id, report.input, {**report.output, "outcome": "failed", "applied": report.applied}, success=False, error=detail)
    except Exception:  # noqa: BLE001 - the database may be what failed; the run row says the rest
        pass


def _finish(recorder: Recorder, step_id: Optional[str], input_data: dict, output: dict, *, success: bool, error: Optional[str] = None) -> None:
    recorder.finish_step(step_id, success=success, output_data=output, error=error, input_data=input_data)


class PhaseError(MemctlError):
    """A phase could not do its work (recorded as a Failed step; the run exits 1)."""

    exit_code = 1


def _apply(
    ctx: PhaseContext, plan: PhasePlan, recorder: Recorder, step_id: Optional[str], lease: Optional[leases.Lease], outcomes: list[UnitOutcome]
) -> None:
    """Apply `plan`'s units in batches, appending each batch's outcomes to `outcomes` as it commits."""
    assert recorder.run_id is not None
    apply_ctx = ApplyContext(ctx.engine, recorder.run_id, step_id, ctx.now)
    ctx.reporter.start(plan.step_name, total=len(plan.units))
    try:
        for batch in batches(plan.units):
            ctx.deadline.check(f"after {len(outcomes)} of {len(plan.units)} unit(s) of the {plan.phase} phase")
            if lease is not None and lease.lost.is_set():
                raise PhaseError("the run lost its lease (another process took it over); stopping before the next unit")
            outcomes += apply_batch(apply_ctx, batch)
            ctx.reporter.advance(len(batch))
    finally:
        ctx.reporter.finish()


def _count_applied(report: PhaseReport, outcomes: Sequence[UnitOutcome]) -> None:
    report.applied = sum(len(o.applied) for o in outcomes)
    report.applied_by_action = dict(Counter(mutation.action for o in outcomes for mutation in o.applied))
    report.skipped = [s for o in outcomes for s in o.skipped]


def _record_children(recorder: Recorder, plan: PhasePlan, outcomes: Sequence[UnitOutcome], step_id: Optional[str], only_applied: bool = False) -> None:
    by_key = {o.key: o for o in outcomes}
    steps = []
    for child in plan.children:
        output = dict(child.output)
        outcome = by_key.get(child.unit_key) if child.unit_key else None
        if only_applied and outcome is None:
            continue
        if outcome is not None:
            output["applied"] = outcome.fully_applied
            if outcome.skipped:
                output["skipped"] = [{"record": r, "reason": why} for r, why in outcome.skipped]
        success = child.success and (outcome is None or outcome.fully_applied)
        steps.append(FinishedStep(child.name, child.step_type, child.input, output, success, child.error))
    recorder.record_steps(steps, parent_id=step_id)
