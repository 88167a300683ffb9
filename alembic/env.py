"""Alembic environment for memctl.

`memctl db upgrade` passes its connection (or, for --sql, a dialect name) and the schema in
`config.attributes`. Run as plain `alembic upgrade head` from a checkout, the database and
schema come from memctl's settings (MEMCTL_DB_URL, memctl.toml, ...).
"""

from __future__ import annotations

from alembic import context

from memctl.store.models import VERSION_TABLE, metadata
from memctl.store.schema import create_schema_sql

config = context.config


def _options(schema: str | None) -> dict:
    return {
        "target_metadata": metadata,
        "version_table": VERSION_TABLE,
        "version_table_schema": schema,
        "include_schemas": False,
        "compare_type": True,
        "transaction_per_migration": True,
    }


def run_offline() -> None:
    schema = config.attributes.get("schema")
    dialect = config.attributes["dialect"]
    # A live SQL Server connection detects NVARCHAR(max) support itself; offline it must be told,
    # or UnicodeText renders as the deprecated NTEXT.
    dialect_opts = {"deprecate_large_types": True} if dialect == "mssql" else {}
    context.configure(dialect_name=dialect, dialect_opts=dialect_opts, literal_binds=True, **_options(schema))
    with context.begin_transaction():
        if schema:
            context.execute(create_schema_sql(dialect, schema))
        context.run_migrations()


def run_online() -> None:
    connection = config.attributes.get("connection")
    schema = config.attributes.get("schema")
    if connection is None:
        from memctl.settings import resolve
        from memctl.store.engine import make_engine

        settings = resolve()
        engine = make_engine(settings)
        schema = settings.db_schema
        with engine.connect() as conn:
            if schema:
                with conn.begin():
                    conn.exec_driver_sql(create_schema_sql(conn.dialect.name, schema))
            _migrate(conn, schema)
        return
    _migrate(connection, schema)


def _migrate(connection, schema: str | None) -> None:  # type: ignore[no-untyped-def]
    context.configure(connection=connection, **_options(schema))
    with context.begin_transaction():
        context.run_migrations()


if context.is_offline_mode():
    run_offline()
else:
    run_online()
