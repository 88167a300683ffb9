"""`memctl runs`: what memctl's runs did."""

from __future__ import annotations

import json
import sys

import typer
from rich.table import Table

from memctl import api
from memctl.cli.shell import AllAgents, AsJson, Format, _check_format, _shortened, _state, guarded, out, runs_app
from memctl.render import print_run


@runs_app.command("list")
@guarded
def runs_list(limit: int = typer.Option(20, "--limit", help="How many runs to show, newest first."), as_json: AsJson = False, all_agents: AllAgents = False) -> None:
    """List memctl's newest runs (--all: every agent's)."""
    runs = api.runs(_state().settings(), limit, all_agents)
    if as_json:
        out.print_json(json.dumps(runs, default=str))
        return
    table = Table()
    for column in ("run", "command", "status", "started", "seconds", "message"):
        table.add_column(column, overflow="fold")
    for r in runs:
        table.add_row(r["id"], r["name"], r["status"], r["startedAt"] or "", str(r["seconds"] or ""), _shortened(r["error"] or r["message"] or "", 200))
    out.print(table)


@runs_app.command("show")
@guarded
def runs_show(
    run_id: str = typer.Argument(..., metavar="RUN_ID", help="A run ID (or a unique prefix of at least 4 characters)."),
    as_json: AsJson = False,
    fmt: Format = "text",
) -> None:
    """Show a run and its steps, with their input and output data (markdown: what it changed, with the texts)."""
    _check_format(fmt)
    settings = _state().settings()
    if fmt == "markdown" and not as_json:
        sys.stdout.write(api.run_markdown(settings, run_id))
        return
    run, steps = api.run(settings, run_id)
    if as_json:
        out.print_json(json.dumps({"run": run, "steps": [s.to_dict() for s in steps]}, default=str))
        return
    print_run(out, run, steps)
