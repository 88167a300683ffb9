"""Find a run by its full ID or a unique prefix, as every command that takes a RUN_ID does.

A prefix needs at least 4 characters (as git asks of an abbreviated commit), so a slip of the
finger cannot pick a run; an ambiguous one is a usage error listing the matches, newest first.
"""

from __future__ import annotations

import re

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from memctl.errors import UsageError
from memctl.store import models as m

MIN_PREFIX = 4
MAX_LISTED = 10
_ID_TEXT = re.compile(r"^[0-9a-f-]+$")


def resolve_run_id(conn: Connection, text: str) -> str:
    """Return the full ID of the one run whose ID is `text` or starts with it; UsageError otherwise."""
    wanted = text.strip().lower()
    if not _ID_TEXT.match(wanted) or len(wanted) > 36:
        raise UsageError(f"RUN_ID must be a run's ID or a prefix of it (hex digits), got {text!r} (see `memctl runs list`)")
    if len(wanted) < MIN_PREFIX:
        raise UsageError(f"RUN_ID {text!r} is too short: give at least {MIN_PREFIX} characters of the run's ID (see `memctl runs list`)")
    r = m.run
    if len(wanted) == 36:
        where = r.c.ID == wanted
    else:
        # the text form of a UUID column differs by backend (SQL Server's is upper case, SQLite's
        # has no dashes): compare hex digits only
        digits = wanted.replace("-", "")
        where = sa.func.replace(sa.func.lower(sa.cast(r.c.ID, sa.String(36))), "-", "").like(digits + "%")
    rows = conn.execute(
        sa.select(r.c.ID, r.c.RunName, r.c.Status, r.c.StartedAt).where(where).order_by(r.c.StartedAt.desc(), r.c.ID).limit(MAX_LISTED + 1)
    ).all()
    if not rows:
        raise UsageError(f"no run {text.strip()} in this store (see `memctl runs list`)")
    if len(rows) > 1:
        listed = "\n".join(
            f"  {str(row.ID).lower()}  {row.RunName}  {row.Status}  {row.StartedAt.isoformat() if row.StartedAt else ''}" for row in rows[:MAX_LISTED]
        )
        more = "\n  ..." if len(rows) > MAX_LISTED else ""
        raise UsageError(f"RUN_ID {text.strip()!r} is ambiguous; it matches:\n{listed}{more}\ngive more characters")
    return str(rows[0].ID).lower()
