"""What every `memctl` command shares: the Typer app and its sub-apps, the global options and the
state they resolve, this invocation's consoles, the mapping of errors to exit codes, the shared
options and the rendering of a run report."""

from __future__ import annotations

import functools
import json
import sys
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Annotated, Any, Callable, Optional, TypeVar, cast

import typer
from rich.progress import Progress
from rich.table import Table

from memctl import metrics, stopping
from memctl.errors import MemctlError
from memctl.pipeline import RunReport
from memctl.render import SafeConsole, print_preview
from memctl.report import from_run_report, markdown
from memctl.settings import Settings, mask_url, resolve
from memctl.store.engine import scrub
from memctl.store.failures import describe, read_only_error

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


class _Current:
    """The console of the invocation under way, for stdout or for stderr.

    `main_options` makes new consoles on every invocation; the commands, in several modules, print
    through `out` and `err`, which pass every use on to the console of the moment.
    """

    def __init__(self, console: SafeConsole) -> None:
        self.console = console

    def __getattr__(self, name: str) -> Any:
        return getattr(self.console, name)


_out, _err = (_Current(console) for console in _consoles())
out, err = cast(SafeConsole, _out), cast(SafeConsole, _err)


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
            message, code = str(exc), exc.exit_code
        except stopping.RunStopped as exc:
            message, code = _scrub(state, str(exc)), exc.exit_code
        except KeyboardInterrupt:
            message, code = "interrupted", 130
        except Exception as exc:  # noqa: BLE001 - the one place unexpected errors become exit 3
            if state.traceback:
                err.print_exception()
            read_only = _read_only(state, exc)
            if read_only is not None:
                message, code = str(read_only), read_only.exit_code
            else:
                message, code = f"unexpected error: {_scrub(state, describe(exc))}", 3
                if not state.traceback:
                    message += " (run with --traceback for details)"
        _error(state, message, code)
        raise typer.Exit(code) from None

    return wrapper  # type: ignore[return-value]


def _read_only(state: State, exc: BaseException) -> Optional[MemctlError]:
    """Return the one-sentence error when `exc` is a write a read-only store refused."""
    try:
        url = state.settings().masked_db_url
    except MemctlError:
        url = mask_url(str(state.flags.get("db_url") or "the store"))
    return read_only_error(exc, url)


def _scrub(state: State, text: str) -> str:
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
    global _STATE
    _out.console, _err.console = _consoles()
    if log_format not in ("text", "json"):
        raise typer.BadParameter("must be text or json", param_hint="--log-format")
    flags = {"db_url": db_url, "db_schema": db_schema, "llm_base_url": llm_base_url, "llm_model": llm_model, "embed_provider": embed_provider, "now": now,
             "llm_log": str(log_llm) if log_llm else None}
    _STATE = State(flags=flags, config=str(config) if config else None, traceback=traceback, log_format=log_format)


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
        if err.is_terminal and self.state.log_format == "text":
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
    elif fmt == "markdown" and not (quiet and code == 0):
        sys.stdout.write(markdown(from_run_report(report)))
    elif not (quiet and code == 0):
        if report.status == "dry-run":
            for phase in report.phases:
                print_preview(out, phase)
        _render_summary(report)
    raise typer.Exit(code)


def _shortened(text: str, limit: int) -> str:
    """Return `text` cut to `limit` characters with a visible ellipsis (never silently)."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _check_format(fmt: str) -> None:
    if fmt not in ("text", "markdown"):
        raise typer.BadParameter("must be text or markdown", param_hint="--format")


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
        metrics.write(metrics_file, report)
    if state.log_format == "json":
        err.print(json.dumps({"event": "run", "time": datetime.now(timezone.utc).isoformat(), **report.to_dict()}, default=str), markup=False, soft_wrap=True)
    render_report(report, as_json, quiet, fmt)
