"""The `memctl` command: parse options, resolve settings once, call one library function, render.

Exit codes: 0 done (a gate or lock skip included), 1 a phase failed, `verify` found a breach, the
run reached its deadline, or the store is locked by a run past its deadline, 2 usage or
configuration error (a read-only store included), 3 unexpected error (the traceback only with
--traceback), 130 / 143 interrupted by SIGINT / SIGTERM (the run closed Failed, the lock released).
"""

from __future__ import annotations

import functools
import json
import sys
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Annotated, Any, Callable, Optional, TypeVar

import typer
from rich.table import Table

from memctl import api, stopping
from memctl.errors import MemctlError, UsageError
from memctl.pipeline import RunReport
from memctl.render import SafeConsole
from memctl.settings import Settings, resolve

app = typer.Typer(
    name="memctl",
    help="Keep an AI agent memory store healthy: the nightly 'dream' pass and its phases.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)
db_app = typer.Typer(help="Create, upgrade and inspect the store's schema.", no_args_is_help=True)
runs_app = typer.Typer(help="Show what memctl runs did.", no_args_is_help=True)
app.add_typer(db_app, name="db")
app.add_typer(runs_app, name="runs")

F = TypeVar("F", bound=Callable[..., Any])


@dataclass
class State:
    flags: dict[str, Any] = field(default_factory=dict)
    config: Optional[str] = None
    traceback: bool = False
    log_format: str = "text"
    _settings: Optional[Settings] = None

    def settings(self, **extra: Any) -> Settings:
        if self._settings is None or extra:
            self._settings = resolve(flags={**self.flags, **extra}, config_file=self.config)
        return self._settings


_STATE = State()


def _state() -> State:
    """Return this invocation's state (reset by the top-level callback on every invocation)."""
    return _STATE


def _consoles() -> tuple[SafeConsole, SafeConsole]:
    """Consoles for stdout and stderr. Rich reads the terminal's settings (COLUMNS, TTY_COMPATIBLE,
    NO_COLOR) when a console is made, so every invocation makes its own."""
    return (SafeConsole(highlight=False, soft_wrap=True, markup=False),
            SafeConsole(stderr=True, highlight=False, soft_wrap=True, markup=False))


out, err = _consoles()


def guarded(fn: F) -> F:
    """Map memctl errors to exit codes; hide tracebacks unless --traceback."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        state = _state()
        try:
            return fn(*args, **kwargs)
        except (typer.Exit, typer.Abort, typer.BadParameter):
            raise
        except MemctlError as exc:
            if state.traceback:
                err.print_exception()
            _error(state, str(exc), exc.exit_code)
            raise typer.Exit(exc.exit_code) from None
        except stopping.RunStopped as exc:
            _error(state, _scrub(state, str(exc)), exc.exit_code)
            raise typer.Exit(exc.exit_code) from None
        except KeyboardInterrupt:
            _error(state, "interrupted", 130)
            raise typer.Exit(130) from None
        except Exception as exc:  # noqa: BLE001 - the one place unexpected errors become exit 3
            if state.traceback:
                err.print_exception()
            read_only = _read_only(state, exc)
            if read_only is not None:
                _error(state, str(read_only), read_only.exit_code)
                raise typer.Exit(read_only.exit_code) from None
            message = f"unexpected error: {_scrub(state, _describe(exc))}"
            if not state.traceback:
                message += " (run with --traceback for details)"
            _error(state, message, 3)
            raise typer.Exit(3) from None

    return wrapper  # type: ignore[return-value]


def _describe(exc: BaseException) -> str:
    from memctl.store.failures import describe

    return describe(exc)


def _read_only(state: State, exc: BaseException) -> Optional[MemctlError]:
    """Return the one-sentence error when `exc` is a write a read-only store refused."""
    from memctl.settings import mask_url
    from memctl.store.failures import read_only_error

    try:
        url = state.settings().masked_db_url
    except MemctlError:
        url = mask_url(str(state.flags.get("db_url") or "the store"))
    return read_only_error(exc, url)


def _scrub(state: State, text: str) -> str:
    from memctl.store.engine import scrub

    try:
        return scrub(text, state.settings())
    except MemctlError:
        return text


def _error(state: State, message: str, code: int) -> None:
    if state.log_format == "json":
        err.print(json.dumps({"event": "error", "exitCode": code, "message": message}), markup=False, soft_wrap=True)
    else:
        err.print(f"memctl: error: {message}", markup=False)


# --- shared options --------------------------------------------------------------------------

DryRun = Annotated[bool, typer.Option("--dry-run", help="Show the plan and write nothing at all (not even a run record).")]
Agent = Annotated[Optional[str], typer.Option("--agent", help="Limit the work to one agent (its ID).", metavar="ID")]
PlanOut = Annotated[Optional[str], typer.Option("--plan-out", help="Save the plan as JSON, to apply later with `memctl apply`.", metavar="FILE")]
Shard = Annotated[Optional[str], typer.Option("--shard", help="Work on shard i of n (partitions whose stable hash mod n is i).", metavar="i/n")]
AsJson = Annotated[bool, typer.Option("--json", help="Print one machine-readable JSON summary.")]
AllAgents = Annotated[bool, typer.Option("--all", help="Show every agent's runs, not only memctl's (its agent row, setting agent_id).")]
MetricsFile = Annotated[Optional[Path], typer.Option("--metrics-file", help="Write Prometheus metrics of the run here (node_exporter textfile collector), atomically.", metavar="FILE")]
Quiet = Annotated[bool, typer.Option("--quiet", "-q", help="Print nothing on success (cron mails only on failure).")]
Replan = Annotated[
    bool,
    typer.Option(
        "--replan",
        help="Plan every partition, even those unchanged since a run found nothing to do in them (replan; answers still come from the verdict cache).",
    ),
]
Format = Annotated[
    str,
    typer.Option("--format", help="text (default) or markdown: a report for cron mail or a ticket, with every text (dry-run: what would change).", metavar="FORMAT"),
]
MaxPairs = Annotated[Optional[int], typer.Option("--max-pairs", min=0, help="Ask an LLM judge at most N uncached contradiction pairs and N absorption checks per run (max_pairs; default 50). The offline judge makes no LLM calls and is bounded by offline_max_pairs instead (MEMCTL_OFFLINE_MAX_PAIRS, default 5000).", metavar="N")]


@app.callback()
def main_options(
    db_url: Optional[str] = typer.Option(None, "--db-url", help="Database URL (default: sqlite file memctl.db here). Env: MEMCTL_DB_URL.", metavar="URL"),
    db_schema: Optional[str] = typer.Option(None, "--db-schema", help="Schema holding the tables (e.g. __mj). Env: MEMCTL_DB_SCHEMA.", metavar="NAME"),
    config: Optional[Path] = typer.Option(None, "--config", help="Config file (default: ./memctl.toml if present).", metavar="FILE"),
    llm_base_url: Optional[str] = typer.Option(None, "--llm-base-url", help="OpenAI-compatible API base URL. Env: MEMCTL_LLM_BASE_URL.", metavar="URL"),
    llm_model: Optional[str] = typer.Option(None, "--llm-model", help="Chat model name. Env: MEMCTL_LLM_MODEL.", metavar="NAME"),
    embed_provider: Optional[str] = typer.Option(None, "--embed-provider", help="hashing (default, offline) | stored | openai | sentence-transformers.", metavar="NAME"),
    now: Optional[str] = typer.Option(None, "--now", hidden=True, help="Freeze the clock (ISO 8601), for reproducible demos."),
    traceback: bool = typer.Option(False, "--traceback", help="Show the full traceback of an unexpected error."),
    log_format: str = typer.Option("text", "--log-format", help="text (human) or json (one object per event, on stderr).", metavar="FORMAT"),
    log_llm: Optional[Path] = typer.Option(None, "--log-llm", help="Append every LLM request and reply to FILE as JSON Lines (secrets scrubbed). Env: MEMCTL_LLM_LOG.", metavar="FILE"),
) -> None:
    """Keep an AI agent memory store healthy."""
    global _STATE, out, err
    _STATE = state = State()
    out, err = _consoles()
    state.flags = {"db_url": db_url, "db_schema": db_schema, "llm_base_url": llm_base_url, "llm_model": llm_model, "embed_provider": embed_provider, "now": now,
                   "llm_log": str(log_llm) if log_llm else None}
    state.config = str(config) if config else None
    state.traceback = traceback
    if log_format not in ("text", "json"):
        raise typer.BadParameter("must be text or json", param_hint="--log-format")
    state.log_format = log_format


# --- rendering -------------------------------------------------------------------------------


class ConsoleReporter:
    """Progress bars on a TTY, plain (or JSON) log lines otherwise."""

    def __init__(self, state: State, quiet: bool) -> None:
        self.state = state
        self.quiet = quiet
        self._progress: Any = None
        self._task: Any = None

    def start(self, label: str, total: Optional[int] = None) -> None:
        if self.quiet or not total:
            return
        if err.is_terminal and self.state.log_format == "text" and total:
            from rich.progress import Progress

            self._progress = Progress(console=err, transient=True)
            self._progress.start()
            self._task = self._progress.add_task(label, total=total)
        else:
            self.log(f"{label}: {total} item(s)")

    def advance(self, amount: int = 1) -> None:
        if self._progress is not None:
            self._progress.advance(self._task, amount)

    def finish(self) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None

    def log(self, message: str) -> None:
        if self.quiet:
            return
        if self.state.log_format == "json":
            err.print(json.dumps({"event": "log", "time": datetime.now(timezone.utc).isoformat(), "message": message}), markup=False)
        else:
            err.print(message, markup=False)


def render_report(report: RunReport, as_json: bool, quiet: bool, fmt: str = "text") -> None:
    """Print a run report and exit with its code."""
    code = report.exit_code
    if as_json:
        out.print_json(json.dumps(report.to_dict(entries=True), default=str))
    elif not (quiet and code == 0):
        if fmt == "markdown":
            from memctl.report import from_run_report, markdown

            sys.stdout.write(markdown(from_run_report(report)))
            raise typer.Exit(code)
        if report.status == "dry-run":
            from memctl.render import print_preview

            for phase in report.phases:
                print_preview(out, phase)
        _render_summary(report)
    raise typer.Exit(code)


def _shortened(text: str, limit: int) -> str:
    """Return `text` cut to `limit` characters with a visible ellipsis (never silently)."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _check_format(fmt: str) -> str:
    if fmt not in ("text", "markdown"):
        raise typer.BadParameter("must be text or markdown", param_hint="--format")
    return fmt


def _render_summary(report: RunReport) -> None:
    table = Table(title=f"{report.command}: {report.status}" + (f" (run {report.run_id})" if report.run_id and report.status != "dry-run" else ""), title_justify="left")
    for column in ("phase", "outcome", "changed", "skipped", "details"):
        table.add_column(column, overflow="fold")
    for p in report.phases:
        changed = str(len(p.rows)) + " planned" if report.status == "dry-run" else str(p.applied)
        table.add_row(p.step_name, p.outcome, changed, str(len(p.skipped)) if p.skipped else "", p.error or p.message)
    if report.phases:
        out.print(table)
    skipped = [s for p in report.phases for s in p.skipped]
    for record, why in skipped[:20]:
        out.print(f"  skipped {record}: {why}", markup=False)
    if len(skipped) > 20:
        out.print(f"  ... and {len(skipped) - 20} more skipped (--json or --format markdown lists them)", markup=False)
    out.print(report.message, markup=False)


def _run(state: State, as_json: bool, quiet: bool, call: Callable[[Settings, Any], RunReport], metrics_file: Optional[Path] = None, fmt: str = "text") -> None:
    _check_format(fmt)
    settings = state.settings()
    reporter = ConsoleReporter(state, quiet or as_json)
    with stopping.stop_on_signals(settings.run_deadline_seconds):
        report = call(settings, reporter)
    if report.stuck_lease is not None or report.stopped is not None:
        _error(state, report.message, report.exit_code)
    if metrics_file is not None:
        from memctl import metrics

        metrics.write(metrics_file, report)
    if state.log_format == "json":
        err.print(json.dumps({"event": "run", "time": datetime.now(timezone.utc).isoformat(), **report.to_dict()}, default=str), markup=False, soft_wrap=True)
    render_report(report, as_json, quiet, fmt)


# --- commands --------------------------------------------------------------------------------


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


def _phase_command(name: str, doc: str) -> None:
    @guarded
    def command(
        dry_run: DryRun = False,
        agent: Agent = None,
        plan_out: PlanOut = None,
        shard: Shard = None,
        metrics_file: MetricsFile = None,
        as_json: AsJson = False,
        quiet: Quiet = False,
        fmt: Format = "text",
    ) -> None:
        options = api.RunOptions(dry_run=dry_run, agent=agent, shard=shard, plan_out=plan_out)
        _run(_state(), as_json, quiet, lambda s, r: api.run_phase(s, name, options, reporter=r), metrics_file, fmt)

    command.__doc__ = doc
    command.__name__ = name
    app.command(name=name)(command)


@app.command("consolidate")
@guarded
def consolidate(
    dry_run: DryRun = False,
    agent: Agent = None,
    plan_out: PlanOut = None,
    shard: Shard = None,
    replan: Replan = False,
    metrics_file: MetricsFile = None,
    as_json: AsJson = False,
    quiet: Quiet = False,
    fmt: Format = "text",
) -> None:
    """Merge clusters of similar notes into one note each (phase 1; not gated)."""
    _state().flags["replan"] = replan or None
    options = api.RunOptions(dry_run=dry_run, agent=agent, shard=shard, plan_out=plan_out)
    _run(_state(), as_json, quiet, lambda s, r: api.run_phase(s, "consolidate", options, reporter=r), metrics_file, fmt)


@app.command("contradictions")
@guarded
def contradictions(
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
    """Find contradicting notes and revoke the less authoritative one (phase 2; not gated)."""
    _state().flags.update(max_pairs=max_pairs, replan=replan or None)
    options = api.RunOptions(dry_run=dry_run, agent=agent, shard=shard, plan_out=plan_out)
    _run(_state(), as_json, quiet, lambda s, r: api.run_phase(s, "contradictions", options, reporter=r), metrics_file, fmt)


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


@app.command()
@guarded
def verify(as_json: AsJson = False) -> None:
    """Check the store's invariants; exit 1 listing every breach."""
    from memctl.verify import verify as check

    breaches = check(api.open_store(_state().settings()))
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
    from memctl.orient import orient as summarise

    settings = _state().settings()
    view = summarise(api.open_store(settings), settings, all_agents=all_agents)
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


@db_app.command("upgrade")
@guarded
def db_upgrade(
    sql: bool = typer.Option(False, "--sql", help="Print the statements it would run on the configured database instead of running them."),
    dialect: Optional[str] = typer.Option(None, "--dialect", help="With --sql: print the full script for an empty sqlite, postgresql or mssql database (no connection).", metavar="NAME"),
) -> None:
    """Create or upgrade the schema (adopting an existing MemberJunction database)."""
    from memctl.store import capabilities, schema

    settings = _state().settings()
    if dialect and not sql:
        raise UsageError("--dialect only goes with --sql")
    if sql and (dialect or _empty_sqlite_target(settings)):
        sys.stdout.write(schema.upgrade_sql(dialect or "sqlite", settings.db_schema))
        return
    engine = api.open_store(settings, migrate=False)
    if sql:
        statements = schema.database_upgrade_sql(engine, settings)
        sys.stdout.write(statements or f"-- {settings.masked_db_url} is at revision {schema.head_revision()}: nothing to run\n")
        for refusal in capabilities.refusals(engine, settings.db_schema):
            sys.stdout.write(f"-- note: {refusal.describe()}\n")
        return
    before, after = schema.upgrade(engine, settings)
    if before == after:
        out.print(f"{settings.masked_db_url}: already at revision {after}", markup=False)
    else:
        out.print(f"{settings.masked_db_url}: upgraded {before or '(empty)'} -> {after}", markup=False)
    for refusal in capabilities.refusals(engine, settings.db_schema):
        out.print(f"note: {refusal.describe()}", markup=False)


def _empty_sqlite_target(settings: Settings) -> bool:
    """Return whether the configured database is a SQLite file that does not exist yet."""
    from sqlalchemy.engine import make_url

    url = make_url(settings.db_url)
    return url.get_backend_name() == "sqlite" and (not url.database or url.database == ":memory:" or not Path(url.database).exists())


@db_app.command("current")
@guarded
def db_current() -> None:
    """Show the schema revision of the database and the one this memctl ships."""
    from memctl.store import schema

    settings = _state().settings()
    engine = api.open_store(settings, migrate=False)
    with engine.connect() as conn:
        revision = schema.current_revision(conn, settings.db_schema)
    head = schema.head_revision()
    state = "at head" if revision == head else "behind: run `memctl db upgrade`"
    if revision not in (None, head) and not schema.is_known(revision):
        state = "unknown to this memctl: a newer memctl upgraded it"
    out.print(f"{settings.masked_db_url}: revision {revision or '(none)'} (head {head}, {state})", markup=False)


@runs_app.command("list")
@guarded
def runs_list(limit: int = typer.Option(20, "--limit", help="How many runs to show, newest first."), as_json: AsJson = False, all_agents: AllAgents = False) -> None:
    """List memctl's newest runs (--all: every agent's)."""
    from memctl.agent import agent_id, require_agent
    from memctl.orient import list_runs
    from memctl.store.engine import read

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
    from memctl.orient import show_run

    _check_format(fmt)
    engine = api.open_store(_state().settings())
    run, steps = show_run(engine, run_id)
    if as_json:
        out.print_json(json.dumps({"run": run, "steps": [s.to_dict() for s in steps]}, default=str))
        return
    if fmt == "markdown":
        from memctl.report import from_stored_run, markdown

        sys.stdout.write(markdown(from_stored_run(engine, run, steps)))
        return
    from memctl.render import print_run

    print_run(out, run, steps)


cache_app = typer.Typer(help="Clear memctl's caches (cached vectors, cached LLM verdicts).", no_args_is_help=True)
app.add_typer(cache_app, name="cache")


@cache_app.command("clear")
@guarded
def cache_clear(
    model: Optional[str] = typer.Option(None, "--model", help="Only the vectors of this embedding model.", metavar="NAME"),
    verdicts: bool = typer.Option(False, "--verdicts", help="Also drop cached LLM verdicts and question pauses (they are asked again)."),
) -> None:
    """Drop cached vectors (e.g. after the embedding model changed behind the same name); the next run embeds again."""
    removed = api.clear_cache(_state().settings(), model=model, verdicts=verdicts)
    out.print(", ".join(f"{count} cached {kind} removed" for kind, count in removed.items()), markup=False)


review_app = typer.Typer(help="List contradictions flagged for review, and settle them.")
app.add_typer(review_app, name="review")


@review_app.callback(invoke_without_command=True)
@guarded
def review_list(ctx: typer.Context, as_json: AsJson = False) -> None:
    """List flagged, unresolved contradictions: both texts, created dates, access counts, reason."""
    if ctx.invoked_subcommand is not None:
        return
    items = api.review_list(_state().settings())
    if as_json:
        out.print_json(json.dumps([item.to_dict() for item in items], default=str))
        return
    if not items:
        out.print("no contradictions awaiting review", markup=False)
        return
    for item in items:
        by_run = f" by run {item.run_id}" if item.run_id else ""
        out.print(f"pair {item.id}  flagged {item.created_at:%Y-%m-%d %H:%M} UTC{by_run}", markup=False)
        out.print(f"  reason: {item.reason}", markup=False)
        for label, note_id, note in (("A", item.note_a_id, item.note_a), ("B", item.note_b_id, item.note_b)):
            if note is None:
                out.print(f"  {label} {note_id}  (no longer exists)", markup=False)
                continue
            tags = [note.status] if note.status != "Active" else []
            tags += [note.protection_tier] if note.protection_tier != "Standard" else []
            tags += [] if note.is_auto_generated else ["manual"]
            shown = f"  [{', '.join(tags)}]" if tags else ""
            out.print(f"  {label} {note.id}  created {note.created_at:%Y-%m-%d}  accessed {note.access_count}x  {note.type}{shown}", markup=False)
            out.print(f"    {note.text}", markup=False)
        out.print(f"  settle: memctl review resolve {item.id} --keep A   |   --keep B   |   --dismiss (keep both)\n", markup=False)
    out.print(f"{len(items)} pair(s) awaiting review", markup=False)


@review_app.command("resolve")
@guarded
def review_resolve(
    pair_id: str = typer.Argument(..., help="The flagged pair (see `memctl review`).", metavar="PAIR_ID"),
    keep: Optional[str] = typer.Option(None, "--keep", help="The note to keep: A or B (the pair's first or second note, as `memctl review` lists them) or its ID; the other one is revoked into it.", metavar="A|B|NOTE_ID"),
    dismiss: bool = typer.Option(False, "--dismiss", help="Keep both notes and close the flag."),
    dry_run: DryRun = False,
    as_json: AsJson = False,
    quiet: Quiet = False,
    fmt: Format = "text",
) -> None:
    """Settle a flagged pair: keep one note (the other is revoked) or dismiss the flag (recorded; undoable)."""
    _run(_state(), as_json, quiet, lambda s, r: api.review_resolve(s, pair_id, keep=keep, dismiss=dismiss, dry_run=dry_run, reporter=r), fmt=fmt)


@app.command("import")
@guarded
def import_command(
    file: Path = typer.Argument(..., help="JSON lines in MJ field names: README.md, section 'Import format'.", metavar="FILE.jsonl"),
    drop_unknown_columns: bool = typer.Option(
        False, "--drop-unknown-columns", help="Leave out columns the target's tables lack (default: stop, naming the column)."
    ),
) -> None:
    """Import records (all or nothing; a bad line is reported with its number).

    One JSON object a line: "kind" (company, user, conversation, agent, note_type, note, example,
    run, run_step) and MJ column names, e.g. {"kind": "note", "AgentID": "...", "Note": "...",
    "IsAutoGenerated": true}. Missing columns take their defaults; a note without IsAutoGenerated
    is manual, and memctl never changes a manual note. The README's section 'Import format'
    describes every field with an example.
    """
    from memctl.transfer import import_records

    settings = _state().settings()
    counts = import_records(api.open_store(settings), file, settings.current_time(), drop_unknown_columns=drop_unknown_columns)
    out.print("imported " + (", ".join(f"{n} {k}" for k, n in counts.items() if n) or "nothing"), markup=False)


@app.command("export")
@guarded
def export_command(
    file: Optional[Path] = typer.Argument(None, help="Where to write (default: standard output).", metavar="[FILE.jsonl]"),
    kind: Optional[list[str]] = typer.Option(None, "--kind", help="Only this kind (repeatable): company, user, conversation, agent, note_type, note, example, run, run_step."),
) -> None:
    """Export records as JSON lines (export -> import into an empty store reproduces it)."""
    from memctl.transfer import export_records

    engine = api.open_store(_state().settings())
    if file is None:
        export_records(engine, sys.stdout, kind or None)
        return
    tmp = file.with_name(file.name + ".tmp")
    with tmp.open("w", encoding="utf-8") as handle:
        counts = export_records(engine, handle, kind or None)
    tmp.replace(file)
    err.print("exported " + (", ".join(f"{n} {k}" for k, n in counts.items() if n) or "nothing"), markup=False)


@app.command()
@guarded
def demo(
    directory: Path = typer.Option(Path("demo"), "--dir", help="Folder for the demo store (created; an old demo store there is replaced)."),
    as_json: AsJson = False,
) -> None:
    """Seed a fresh SQLite store with planted problems and dream it (offline)."""
    from memctl.demo import run_demo

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
    from memctl.evaluation import evaluate  # the harness sits above api: api does not import it

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


def main() -> None:
    """Entry point of the `memctl` console script."""
    app()


if __name__ == "__main__":
    main()
