"""What a column accepts as memctl writes it: the value checks that apply and plan checking share.

A value is checked before the driver sees it, so a bad one is refused by name, never echoed
back inside a driver's error.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Optional

import sqlalchemy as sa

from memctl.settings import Settings, parse_time
from memctl.similarity import GUID  # an identifier: its hex digits are ASCII by definition
from memctl.store import models as m

LONG_TEXT_CAP = 200_000  # other long text columns of an inserted note (an embedding vector as JSON text)
INT_MAX = 2**31 - 1


def value_problem(column: sa.Column, value: Any, settings: Optional[Settings]) -> Optional[str]:
    """Return why `value` cannot go into `column` as memctl writes it, or None."""
    kind = column.type
    if value is None:
        return None if column.nullable else "may not be null"
    if isinstance(kind, sa.Uuid):
        return None if isinstance(value, str) and GUID.fullmatch(value) else "not a GUID"
    if isinstance(kind, m.UTCDateTime):
        if isinstance(value, datetime):
            return None
        if not isinstance(value, str):
            return "not an ISO 8601 timestamp"
        try:
            parse_time(value)
        except (ValueError, OverflowError):
            return "not an ISO 8601 timestamp"
        return None
    if isinstance(kind, sa.Boolean):
        return None if isinstance(value, bool) else "not true or false"
    if isinstance(kind, sa.Integer):
        return None if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= INT_MAX else f"not a whole number from 0 to {INT_MAX}"
    if isinstance(kind, sa.Numeric):
        ok = isinstance(value, (int, float)) and not isinstance(value, bool) and abs(value) < 10 ** ((kind.precision or 18) - (kind.scale or 0))
        return None if ok else "not a number in the column's range"
    if not isinstance(value, str):
        return "not text"
    if "\x00" in value:
        return "holds a NUL byte"
    cap = settings.max_note_chars if column.name == "Note" and settings is not None else getattr(kind, "length", None) or LONG_TEXT_CAP
    if len(value) > cap:
        return f"{len(value)} characters (at most {cap})"
    choices = {"Status": m.NOTE_STATUSES, "Type": m.NOTE_TYPES, "ProtectionTier": m.PROTECTION_TIERS}.get(column.name)
    if choices and column.table is m.note and value not in choices:
        return f"{value[:32]!r} is not one of {', '.join(choices)}"
    return None
