"""SQL Server support, checked without a server: every statement memctl issues compiles for mssql.

There is no SQL Server here. This test runs the main jobs on SQLite while recording every SQL
expression memctl executes, then compiles each one with the mssql dialect (pyodbc is not needed
to compile). The DDL side is covered by test_migrations (offline `--sql` rendering).
"""

from __future__ import annotations

import io
from pathlib import Path

from sqlalchemy import event
from sqlalchemy.dialects import mssql
from sqlalchemy.sql import ClauseElement

from conftest import Db, make_db
from factory import NOW, at
from memctl import api
from memctl.demo import seed
from memctl.orient import list_runs, orient, show_run
from memctl.settings import replace
from memctl.transfer import export_records, import_records
from memctl.verify import verify


def test_every_statement_of_the_main_jobs_compiles_for_sql_server(sqlite_db: Db, tmp_path: Path) -> None:
    seen: list[ClauseElement] = []

    def record(conn, clauseelement, multiparams, params, execution_options):  # type: ignore[no-untyped-def]
        if isinstance(clauseelement, ClauseElement):
            seen.append(clauseelement)

    engine = sqlite_db.engine
    event.listen(engine, "before_execute", record)
    try:
        seed(engine, NOW)
        settings = at(sqlite_db.settings, NOW)
        # slice_notes=1: the LLM phases read the store agent by agent, with their slice queries
        report = api.dream(replace(settings, slice_notes=1), engine=engine)
        api.run_phase(settings, "prune", engine=engine)
        api.undo(settings, report.run_id, engine=engine)
        orient(engine, settings)
        show_run(engine, report.run_id)
        list_runs(engine)
        verify(engine)
        buffer = io.StringIO()
        export_records(engine, buffer)
    finally:
        event.remove(engine, "before_execute", record)
    copy = make_db("sqlite", tmp_path / "copy")
    event.listen(copy.engine, "before_execute", record)
    try:
        import_records(copy.engine, io.StringIO(buffer.getvalue()), NOW)
    finally:
        event.remove(copy.engine, "before_execute", record)
    assert len(seen) > 50
    dialect = mssql.dialect()
    kinds = set()
    for statement in seen:
        compiled = statement.compile(dialect=dialect)
        text = str(compiled)
        assert "LIMIT" not in text and '"' not in text.replace("N'", "'"), text
        kinds.add(text.split()[0])
    assert {"SELECT", "INSERT", "UPDATE", "DELETE"} <= kinds
