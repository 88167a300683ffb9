"""The commands that work on a store of their own, never the operator's: the demo and the evaluation."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer
from rich.table import Table

from memctl.cli.shell import AsJson, ConsoleReporter, _state, app, guarded, out
from memctl.demo import run_demo
from memctl.evaluation import evaluate


@app.command()
@guarded
def demo(
    directory: Path = typer.Option(Path("demo"), "--dir", help="Folder for the demo store (created; an old demo store there is replaced)."),
    as_json: AsJson = False,
) -> None:
    """Seed a fresh SQLite store with planted problems and dream it (offline)."""
    report = run_demo(directory, out if not as_json else None)
    if as_json:
        out.print_json(json.dumps(report.to_dict(), default=str))
    raise typer.Exit(report.exit_code)


@app.command("eval")
@guarded
def eval_command(
    only: Optional[str] = typer.Option(None, "--only", help="Measure one part only: consolidation or contradictions.", metavar="PART"),
    limit: Optional[int] = typer.Option(None, "--limit", min=1, help="Cap the work: the first N personas and the first N labelled pairs.", metavar="N"),
    as_json: AsJson = False,
) -> None:
    """Measure the configured LLM (or the offline provider), embedder and prompts on shipped labelled data.

    Consolidation runs the real phase on a scratch copy of a labelled persona corpus; contradictions
    asks the judge about labelled SICK and persona pairs. The operator's store is never opened.
    Exit 1 when a part produced no figures (the phase failed, or no reply from the LLM was usable).
    """
    state = _state()
    report = evaluate(state.settings(), only=only, limit=limit, reporter=ConsoleReporter(state, as_json))
    if as_json:
        out.print_json(json.dumps(report.to_dict(), default=str))
        raise typer.Exit(report.exit_code)
    out.print(f"judge {report.judge} ({report.provider}); prompt hashes " + ", ".join(f"{k} {v}" for k, v in report.prompts.items()), markup=False)
    for title, rows in report.tables():
        table = Table(title=title, title_justify="left", show_header=False)
        table.add_column("metric")
        table.add_column("value", overflow="fold")
        for metric, value in rows:
            table.add_row(metric, value)
        out.print(table)
    raise typer.Exit(report.exit_code)
