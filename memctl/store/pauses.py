"""Paused questions: a question whose reply was unusable is asked again later, not every night.

At temperature 0 the same question gets the same unusable reply, so the n-th unusable reply in a row
pauses it (by verdict-cache key) for 2**n days, at most `MAX_PAUSE_DAYS`; a usable reply ends the
pause. Only real runs write pauses; `undo` leaves them, as it leaves the verdict cache.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Iterable

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from memctl.store import models as m
from memctl.store.engine import read, write
from memctl.store.ids import chunks

#: the longest pause, in days: a question is asked at least this often
MAX_PAUSE_DAYS = 30
#: the reason kept with a pause is one bounded line
REASON_CHARS = 500


def pause_length(unusable: int) -> timedelta:
    """Return how long a question is paused after its `unusable`-th unusable reply in a row."""
    return timedelta(days=min(2 ** min(max(unusable, 1), 10), MAX_PAUSE_DAYS))


@dataclass(frozen=True)
class Pause:
    """A paused question: how many unusable replies in a row, the last one's time, when it is asked again."""

    key: str
    kind: str
    unusable: int
    last_at: datetime
    ask_again_at: datetime
    reason: str = ""


class Pauses:
    """Read the pauses of questions in bulk; record unusable replies and clear pauses (never in a dry-run)."""

    def __init__(self, engine: Engine, dry_run: bool = False) -> None:
        self.engine = engine
        self.dry_run = dry_run

    def get_many(self, keys: Iterable[str]) -> dict[str, Pause]:
        """Return the pauses recorded for those of `keys` that have one (ended ones included)."""
        wanted = sorted(set(keys))
        found: dict[str, Pause] = {}
        p = m.pause
        query = sa.select(p.c.CacheKey, p.c.Kind, p.c.Unusable, p.c.LastAt, p.c.AskAgainAt, p.c.Reason)
        with read(self.engine) as conn:
            for chunk in chunks(wanted):
                for row in conn.execute(query.where(p.c.CacheKey.in_(chunk))):
                    found[row.CacheKey] = Pause(row.CacheKey, row.Kind, int(row.Unusable), row.LastAt, row.AskAgainAt, row.Reason or "")
        return found

    def record(self, entries: Iterable[tuple[str, str, str, str]], now: datetime, known: dict[str, Pause]) -> dict[str, Pause]:
        """Pause each (key, kind, model, reason) after an unusable reply at `now`, counting on from `known`."""
        rows = {}
        for key, kind, model, reason in entries:
            count = known[key].unusable + 1 if key in known else 1
            line = " ".join(reason.split())
            rows[key] = {
                "CacheKey": key, "Kind": kind[:32], "Model": model[:255], "Unusable": count, "LastAt": now,
                "AskAgainAt": now + pause_length(count), "Reason": line if len(line) <= REASON_CHARS else line[: REASON_CHARS - 3] + "...",
            }
        pauses = {key: Pause(key, r["Kind"], r["Unusable"], now, r["AskAgainAt"], r["Reason"]) for key, r in rows.items()}
        if self.dry_run or not rows:
            return pauses
        keys = sorted(rows)
        try:
            with write(self.engine) as conn:
                for chunk in chunks(keys):
                    conn.execute(m.pause.delete().where(m.pause.c.CacheKey.in_(chunk)))
                conn.execute(m.pause.insert(), [rows[key] for key in keys])
        except sa.exc.IntegrityError:
            pass  # a shard worker paused the same question at the same moment: its row will do
        return pauses

    def clear(self, keys: Iterable[str]) -> None:
        """End the pauses of `keys` (their questions got a usable reply)."""
        wanted = sorted(set(keys))
        if self.dry_run or not wanted:
            return
        with write(self.engine) as conn:
            for chunk in chunks(wanted):
                conn.execute(m.pause.delete().where(m.pause.c.CacheKey.in_(chunk)))
