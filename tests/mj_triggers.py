"""Give a PostgreSQL test store MemberJunction's update triggers: every UPDATE stamps __mj_UpdatedAt.

MJ's migrations (the v6.2 `Binary_Vector_Columns` migration and its PostgreSQL conversion, see
../shared/mj/SOURCES.md) create one trigger per table, `trgUpdate<Table>`, that sets
`__mj_UpdatedAt` to the current time on every UPDATE, whatever the statement wrote. This helper
adds the same behaviour to memctl's own tables in a test schema, so guards and undo can be tested
against database-side writes before (and besides) the full MJ fixture.
"""

from __future__ import annotations

from sqlalchemy.engine import Engine

STAMPED_TABLES = ("AIAgentNote", "AIAgentExample", "AIAgent", "User", "Company", "Conversation", "AIAgentRun", "AIAgentRunStep")


def add_mj_update_triggers(engine: Engine, schema: str) -> None:
    """Create a BEFORE UPDATE trigger stamping "__mj_UpdatedAt" = now() on each MJ table of `schema`."""
    with engine.begin() as conn:
        conn.exec_driver_sql(
            f'CREATE OR REPLACE FUNCTION "{schema}".mj_stamp_updated_at() RETURNS trigger AS $$ '
            'BEGIN NEW."__mj_UpdatedAt" := now(); RETURN NEW; END $$ LANGUAGE plpgsql'
        )
        for table in STAMPED_TABLES:
            conn.exec_driver_sql(
                f'CREATE TRIGGER "trgUpdate{table}" BEFORE UPDATE ON "{schema}"."{table}" '
                f'FOR EACH ROW EXECUTE FUNCTION "{schema}".mj_stamp_updated_at()'
            )
