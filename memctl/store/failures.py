"""Database errors told to people: the driver's own message, never the statement or its values.

Statement parameters hold note texts, so every message about a database error comes from `describe`,
which drops the lines that quote data (PostgreSQL's DETAIL, LINE, CONTEXT).
"""

from __future__ import annotations

import re
from typing import Optional

import sqlalchemy as sa

from memctl.errors import DatabaseError

MAX_CHARS = 300
SQLITE_READONLY = 8  # the primary result code; extended codes keep it in the low byte
# PostgreSQL: read_only_sql_transaction (a read-only transaction, role or standby) and
# insufficient_privilege (a role granted SELECT only); SQL Server: 3906 (read-only database).
READ_ONLY_SQLSTATES = {"25006": "the connection is read-only", "42501": "the database user may not write"}
READ_ONLY_WORDS = ("readonly database", "read-only database", "read-only transaction", "read only database")


# PostgreSQL's lines that may quote the row or the statement (and LINE's caret line)
_QUOTING_LINES = re.compile(r"^\s*(DETAIL|CONTEXT|LINE \d+|QUERY|STATEMENT|WHERE)\b|^\s*\^\s*$")


def driver_message(exc: BaseException) -> str:
    """Return the driver's own message of `exc` on one line, without the lines that quote data."""
    orig = exc.orig if isinstance(exc, sa.exc.StatementError) and exc.orig is not None else exc
    lines = [line.strip() for line in str(orig).strip().splitlines() if line.strip() and not _QUOTING_LINES.match(line)]
    return (" ".join(lines) or type(orig).__name__)[:MAX_CHARS]


def describe(exc: BaseException) -> str:
    """Return `ExceptionType: message` for any error; a database error never shows its statement."""
    if isinstance(exc, sa.exc.StatementError):
        orig = exc.orig if exc.orig is not None else exc
        return f"{type(orig).__name__}: {driver_message(exc)}"
    return f"{type(exc).__name__}: {exc}"


def read_only_reason(exc: BaseException) -> Optional[str]:
    """Return why the store refused a write because it is read-only, or None for other errors."""
    if not isinstance(exc, sa.exc.DBAPIError) or exc.orig is None:
        return None
    orig = exc.orig
    code = getattr(orig, "sqlite_errorcode", None)
    if isinstance(code, int) and code & 0xFF == SQLITE_READONLY:
        return "the SQLite file is read-only"
    state = getattr(orig, "sqlstate", None) or getattr(getattr(orig, "diag", None), "sqlstate", None)
    if state in READ_ONLY_SQLSTATES:
        return READ_ONLY_SQLSTATES[state]
    text = str(orig).lower()
    return "the database is read-only" if any(words in text for words in READ_ONLY_WORDS) else None


def read_only_error(exc: BaseException, masked_url: str) -> Optional[DatabaseError]:
    """Return the one-sentence error for a write refused by a read-only store, else None."""
    reason = read_only_reason(exc)
    if reason is None:
        return None
    return DatabaseError(
        f"cannot write to {masked_url}: {reason}; dream, the phases, apply, undo and import need write access "
        "(orient, verify, runs and export only read)"
    )
