"""The read-only views of the store: its invariants checked, and a summary of it."""

from __future__ import annotations

import json

import typer
from rich.table import Table

from memctl import api
from memctl.cli.shell import AllAgents, AsJson, _state, app, guarded, out


@app.command()
@guarded
def verify(as_json: AsJson = False) -> None:
    """Check the store's invariants; exit 1 listing every breach."""
    breaches = api.verify(_state().settings())
    if as_json:
        out.print_json(json.dumps({"ok": not breaches, "breaches": [b.__dict__ for b in breaches]}))
    elif breaches:
        for b in breaches:
            out.print(f"BREACH {b.rule}: {b.record}: {b.detail}", markup=False)
        out.print(f"{len(breaches)} breach(es)")
    else:
        out.print("ok: every invariant holds")
    raise typer.Exit(1 if breaches else 0)


@app.command()
@guarded
def orient(as_json: AsJson = False, all_agents: AllAgents = False) -> None:
    """Summarise the store (read-only): counts, partitions, memctl's last run, gate state."""
    settings = _state().settings()
    view = api.orient(settings, all_agents=all_agents)
    if as_json:
        out.print_json(json.dumps(view.to_dict(), default=str))
        return
    out.print(f"store: {settings.masked_db_url}", markup=False)
    table = Table(title="records by status", title_justify="left")
    table.add_column("status")
    table.add_column("notes", justify="right")
    table.add_column("examples", justify="right")
    for status in sorted(set(view.notes_by_status) | set(view.examples_by_status)):
        table.add_row(status, str(view.notes_by_status.get(status, 0)), str(view.examples_by_status.get(status, 0)))
    out.print(table)
    agents = Table(title="active notes by agent", title_justify="left")
    for column in ("agent", "name", "notes"):
        agents.add_column(column)
    for agent_id, name, count in view.active_notes_by_agent[:20]:
        agents.add_row(agent_id, name, str(count))
    if len(view.active_notes_by_agent) > 20:
        agents.caption = f"... and {len(view.active_notes_by_agent) - 20} more agents (--json lists them all)"
    out.print(agents)
    out.print("active notes by type: " + (", ".join(f"{k} {v}" for k, v in view.active_notes_by_type.items()) or "none"), markup=False)
    out.print(f"partitions with active notes: {view.partitions} (largest: {', '.join(map(str, view.largest_partitions)) or '-'})", markup=False)
    last = view.last_run
    out.print("last run: " + (f"{last['name']} {last['status']} at {last['startedAt']} ({last['id']})" if last else "none"), markup=False)
    out.print(f"gate: {'open' if view.gate['open'] else 'closed'} ({view.gate['reason']})", markup=False)
    if view.open_reviews:
        out.print(f"contradictions awaiting review: {view.open_reviews} (memctl review)", markup=False)
