"""`memctl runs`: what memctl's runs did."""

from __future__ import annotations

import json
import sys

import typer
from rich.table import Table

from memctl import api
from memctl.agent import agent_id, require_agent
from memctl.cli.shell import AllAgents, AsJson, Format, _check_format, _shortened, _state, guarded, out, runs_app
from memctl.orient import list_runs, show_run
from memctl.render import print_run
from memctl.report import from_stored_run, markdown
from memctl.store.engine import read


@runs_app.command("list")
@guarded
def runs_list(limit: int = typer.Option(20, "--limit", help="How many runs to show, newest first."), as_json: AsJson = False, all_agents: AllAgents = False) -> None:
    """List memctl's newest runs (--all: every agent's)."""
    settings = _state().settings()
    engine = api.open_store(settings)
    with read(engine) as conn:
        require_agent(conn, settings)
    runs = list_runs(engine, limit, None if all_agents else agent_id(settings))
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
    engine = api.open_store(_state().settings())
    run, steps = show_run(engine, run_id)
    if as_json:
        out.print_json(json.dumps({"run": run, "steps": [s.to_dict() for s in steps]}, default=str))
        return
    if fmt == "markdown":
        sys.stdout.write(markdown(from_stored_run(engine, run, steps)))
        return
    print_run(out, run, steps)
