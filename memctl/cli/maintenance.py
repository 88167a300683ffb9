"""The commands that run maintenance: the nightly dream, one phase by hand, a saved plan, an undo."""

from __future__ import annotations

import inspect
from pathlib import Path

import typer

from memctl import api
from memctl.cli.shell import Agent, AsJson, DryRun, Format, MaxPairs, MetricsFile, PlanOut, Quiet, Replan, Shard, _run, _state, app, guarded


@app.command()
@guarded
def dream(
    dry_run: DryRun = False,
    force: bool = typer.Option(False, "--force", help="Run even if the maintenance gate is closed."),
    plan_out: PlanOut = None,
    shard: Shard = None,
    agent: Agent = None,
    max_pairs: MaxPairs = None,
    replan: Replan = False,
    metrics_file: MetricsFile = None,
    as_json: AsJson = False,
    quiet: Quiet = False,
    fmt: Format = "text",
) -> None:
    """Run the nightly pass: consolidate, contradictions, prune, archive (gated, locked, recorded)."""
    _state().flags.update(max_pairs=max_pairs, replan=replan or None)
    options = api.RunOptions(dry_run=dry_run, agent=agent, shard=shard, plan_out=plan_out)
    _run(_state(), as_json, quiet, lambda s, r: api.dream(s, options, force=force, reporter=r), metrics_file, fmt)


def _phase_command(name: str, doc: str, *extra: str) -> None:
    """Register the command of one phase; of --max-pairs and --replan it takes only those in `extra`."""

    @guarded
    def command(
        dry_run: DryRun = False,
        agent: Agent = None,
        plan_out: PlanOut = None,
        shard: Shard = None,
        max_pairs: MaxPairs = None,
        replan: Replan = False,
        metrics_file: MetricsFile = None,
        as_json: AsJson = False,
        quiet: Quiet = False,
        fmt: Format = "text",
    ) -> None:
        _state().flags.update(max_pairs=max_pairs, replan=replan or None)  # None: not given
        options = api.RunOptions(dry_run=dry_run, agent=agent, shard=shard, plan_out=plan_out)
        _run(_state(), as_json, quiet, lambda s, r: api.run_phase(s, name, options, reporter=r), metrics_file, fmt)

    # Typer reads the options off the signature: the command shows and accepts only its own
    signature = inspect.signature(command, eval_str=True)
    kept = [p for p in signature.parameters.values() if p.name not in ("max_pairs", "replan") or p.name in extra]
    command.__signature__ = signature.replace(parameters=kept)  # type: ignore[attr-defined]
    command.__doc__ = doc
    command.__name__ = name
    app.command(name=name)(command)


_phase_command("consolidate", "Merge clusters of similar notes into one note each (phase 1; not gated).", "replan")
_phase_command("contradictions", "Find contradicting notes and revoke the less authoritative one (phase 2; not gated).", "max_pairs", "replan")
_phase_command("prune", "Archive notes whose agent, user, company or conversation is gone (phase 3; not gated).")
_phase_command("archive", "Archive expired notes and examples, and stale auto-generated ones (phase 4; not gated).")


@app.command("apply")
@guarded
def apply_command(plan: Path = typer.Argument(..., help="A plan saved with --plan-out.", metavar="PLAN.json"), as_json: AsJson = False, quiet: Quiet = False, fmt: Format = "text") -> None:
    """Apply a saved plan exactly; actions whose records changed since planning are skipped."""
    _run(_state(), as_json, quiet, lambda s, r: api.apply_plan(s, str(plan), reporter=r), fmt=fmt)


@app.command()
@guarded
def undo(
    run_id: str = typer.Argument(..., help="The run to reverse: its ID or a unique prefix (see `memctl runs list`).", metavar="RUN_ID"),
    dry_run: DryRun = False,
    force: bool = typer.Option(False, "--force", help="Overwrite records changed since the run."),
    as_json: AsJson = False,
    quiet: Quiet = False,
    fmt: Format = "text",
) -> None:
    """Put back every record a run changed (refuses records changed since, unless --force)."""
    _run(_state(), as_json, quiet, lambda s, r: api.undo(s, run_id, dry_run=dry_run, force=force, reporter=r), fmt=fmt)
