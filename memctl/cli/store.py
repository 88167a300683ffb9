"""The store's schema (`memctl db`) and memctl's caches in it (`memctl cache`)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import typer
from sqlalchemy.engine import make_url

from memctl import api
from memctl.cli.shell import _state, app, db_app, guarded, out
from memctl.errors import UsageError
from memctl.settings import Settings
from memctl.store import capabilities, schema


@db_app.command("upgrade")
@guarded
def db_upgrade(
    sql: bool = typer.Option(False, "--sql", help="Print the statements it would run on the configured database instead of running them."),
    dialect: Optional[str] = typer.Option(None, "--dialect", help="With --sql: print the full script for an empty sqlite, postgresql or mssql database (no connection).", metavar="NAME"),
) -> None:
    """Create or upgrade the schema (adopting an existing MemberJunction database)."""
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
    url = make_url(settings.db_url)
    return url.get_backend_name() == "sqlite" and (not url.database or url.database == ":memory:" or not Path(url.database).exists())


@db_app.command("current")
@guarded
def db_current() -> None:
    """Show the schema revision of the database and the one this memctl ships."""
    settings = _state().settings()
    engine = api.open_store(settings, migrate=False)
    with engine.connect() as conn:
        revision = schema.current_revision(conn, settings.db_schema)
    head = schema.head_revision()
    state = "at head" if revision == head else "behind: run `memctl db upgrade`"
    if revision not in (None, head) and not schema.is_known(revision):
        state = "unknown to this memctl: a newer memctl upgraded it"
    out.print(f"{settings.masked_db_url}: revision {revision or '(none)'} (head {head}, {state})", markup=False)


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
