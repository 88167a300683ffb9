"""The AIAgent row memctl's runs belong to.

By default memctl's own row (`models.MEMCTL_AGENT_ID`), created on the first recorded run,
flagged like MJ's Memory Manager (`MAINTENANCE_FLAGS`) and left out of retention archival. An
operator may name an existing row instead (`agent_id`); memctl never creates or changes it, and
refuses to run (exit 2) when it does not exist.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from memctl.errors import ConfigError
from memctl.settings import Settings
from memctl.store import models as m
from memctl.store.ids import other_spelling
from memctl.store.live import live_table

DESCRIPTION = "memctl: scheduled maintenance of agent memory (consolidate, contradictions, prune, archive). Not for users."
#: as on MJ's Memory Manager row (restricted, injects nothing, writes no memory); set where the column exists
MAINTENANCE_FLAGS: dict[str, Any] = {"IsRestricted": True, "InjectNotes": False, "InjectExamples": False, "AllowMemoryWrite": False}


def agent_id(settings: Settings) -> str:
    return str(uuid.UUID(settings.agent_id)) if settings.agent_id else m.MEMCTL_AGENT_ID


def require_agent(conn: Connection, settings: Settings) -> None:
    """Refuse an `agent_id` setting that names no AIAgent row (the default row is created when needed)."""
    if settings.agent_id is None:
        return
    wanted = agent_id(settings)
    if conn.execute(sa.select(m.agent.c.ID).where(m.agent.c.ID == wanted)).first() is None:
        stored = other_spelling(conn, m.agent, wanted)
        if stored is not None:
            raise ConfigError(
                f"setting 'agent_id' names agent {wanted}, whose AIAgent row is stored as {stored!r} (another application's spelling of "
                "the GUID): SQLite compares the run rows' foreign key to it as text, so memctl cannot record its runs under that row; "
                "unset agent_id to use memctl's own row, or rewrite the row's ID as 32 lower-case hex digits"
            )
        raise ConfigError(f"setting 'agent_id' names agent {wanted}, which is not in the AIAgent table: name an existing agent, or unset it to use memctl's own")


def ensure_agent(conn: Connection, wanted: str, now: datetime) -> None:
    """Create memctl's own AIAgent row when `wanted` is it and it is missing.

    The insert runs in a savepoint: two workers starting on a new store may race, and losing is fine.
    """
    if conn.execute(sa.select(m.agent.c.ID).where(m.agent.c.ID == wanted)).first() is not None:
        return
    if wanted != m.MEMCTL_AGENT_ID:
        raise ConfigError(f"agent {wanted} (setting 'agent_id') is not in the AIAgent table")
    table = live_table(conn, m.agent)
    values: dict[str, Any] = {
        "ID": m.MEMCTL_AGENT_ID, "Name": m.MEMCTL_AGENT_NAME, "Status": "Active", "AutoArchiveEnabled": False,
        "__mj_CreatedAt": now, "__mj_UpdatedAt": now,
    }
    values.update({column: value for column, value in {**MAINTENANCE_FLAGS, "Description": DESCRIPTION}.items() if column in table.c})
    try:
        with conn.begin_nested():
            conn.execute(table.insert().values(**values))
    except sa.exc.IntegrityError as exc:
        if conn.execute(sa.select(m.agent.c.ID).where(m.agent.c.ID == wanted)).first() is None:
            reason = str(exc.orig).strip().splitlines()[0] if exc.orig is not None else type(exc).__name__
            raise ConfigError(f"cannot create memctl's AIAgent row here ({reason}): name an existing agent with the agent_id setting") from None
