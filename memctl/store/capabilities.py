"""What the database lets memctl write, read from its own constraints (not guessed from a version).

memctl never widens a constraint. Where a Status check refuses 'Archived' (MJ's AIAgentExample
check does), an example is set to 'Revoked' instead (MJ injects Active examples only); a note has no
such fallback (a revoked note points to its replacement), so it is left Active.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

ARCHIVED = "Archived"
# The nearest status memctl may write instead of 'Archived', per table, in order of preference.
ARCHIVE_FALLBACKS: dict[str, tuple[str, ...]] = {"AIAgentExample": ("Revoked",), "AIAgentNote": ()}
_LITERAL = re.compile(r"'((?:[^']|'')*)'")


@dataclass(frozen=True)
class Refusal:
    """A value memctl would write that the database's constraint refuses, and what it writes instead."""

    table: str
    column: str
    value: str
    instead: Optional[str]
    constraint: str

    def describe(self) -> str:
        what = f"{self.table}.{self.column}: the database's check {self.constraint} does not allow {self.value!r}"
        if self.instead is None:
            return f"{what}; memctl leaves those rows as they are and reports them in the step output"
        return f"{what}; memctl writes {self.instead!r} instead (noted in Comments, reported in the step output)"

    def to_dict(self) -> dict[str, Optional[str]]:
        return {"column": f"{self.table}.{self.column}", "refused": self.value, "instead": self.instead, "constraint": self.constraint}


def allowed_values(conn: Connection, table: str, column: str, schema: Optional[str]) -> tuple[Optional[frozenset[str]], str]:
    """Return the values the table's checks on `column` allow (None: unconstrained) and the checks' names."""
    checks = sa.inspect(conn).get_check_constraints(table, schema=schema)
    return values_allowed(column, [(str(c.get("name") or "(unnamed)"), c.get("sqltext") or "") for c in checks])


def values_allowed(column: str, checks: list[tuple[str, str]]) -> tuple[Optional[frozenset[str]], str]:
    """Return the string values a set of (name, check text) allows in `column`, in any dialect's spelling,
    e.g. SQL Server's `([Status]='Active' OR [Status]='Pending')`."""
    allowed: Optional[frozenset[str]] = None
    names = []
    pattern = re.compile(rf"""(?<![A-Za-z0-9_])["\[`]?{re.escape(column)}["\]`]?(?![A-Za-z0-9_])""")
    for name, text in checks:
        if not pattern.search(text):
            continue
        values = frozenset(v.replace("''", "'") for v in _LITERAL.findall(text))
        allowed = values if allowed is None else allowed & values
        names.append(name)
    return allowed, ", ".join(names)


def archive_refusal(conn: Connection, table: str, schema: Optional[str]) -> Optional[Refusal]:
    """Return how the table refuses Status 'Archived', or None when it allows it."""
    allowed, names = allowed_values(conn, table, "Status", schema)
    if allowed is None or ARCHIVED in allowed:
        return None
    instead = next((v for v in ARCHIVE_FALLBACKS.get(table, ()) if v in allowed), None)
    return Refusal(table, "Status", ARCHIVED, instead, names)


def archive_statuses(engine: Engine, schema: Optional[str]) -> dict[str, frozenset[str]]:
    """Return, per table, the Status an archive writes on this database: 'Archived', the nearest
    value its check allows instead, or nothing (the archive phase leaves such rows alone)."""
    found = {r.table: r for r in refusals(engine, schema)}
    return {
        table: frozenset({ARCHIVED}) if table not in found else frozenset(v for v in (found[table].instead,) if v is not None)
        for table in ARCHIVE_FALLBACKS
    }


def refusals(engine: Engine, schema: Optional[str]) -> list[Refusal]:
    """Return every value memctl writes that this database refuses (what `db upgrade` reports)."""
    with engine.connect() as conn:
        present = set(sa.inspect(conn).get_table_names(schema=schema))
        return [r for t in ARCHIVE_FALLBACKS if t in present and (r := archive_refusal(conn, t, schema)) is not None]
