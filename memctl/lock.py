"""The run lease: one maintenance run per database (or per shard) at a time.

A lease is a memctl_lock row with an expiry, renewed by a background thread while the run works.
A live lease refuses a second holder; a dead holder's lease expires, and the next run takes it over
and closes the dead run as Failed. No lease lasts past its run's deadline (`run_deadline_seconds`),
so a run kept alive by a server trickling its replies cannot hold the store for ever.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any, Optional

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from memctl.recorder import Clock, close_dead_run
from memctl.store import models as m
from memctl.store.engine import write


@dataclass(frozen=True)
class LeaseRefused:
    """Someone else holds a live lease."""

    name: str
    holder: str
    run_id: Optional[str]
    expires_at: str
    #: None when unknown
    acquired_at: Optional[datetime] = None


class Lease:
    """A held lease; renew it with `keep_alive()` and give it back with `release()`."""

    def __init__(
        self, engine: Engine, name: str, holder: str, run_id: Optional[str], seconds: float, clock: Clock,
        deadline_seconds: Optional[float] = None,
    ) -> None:
        self.engine = engine
        self.name = name
        self.holder = holder
        self.run_id = run_id
        self.seconds = seconds
        self.clock = clock
        # The run's deadline, on the lease's clock (for the expiry written) and on the monotonic
        # clock (for when renewals stop; the lease clock may be frozen with --now).
        self.deadline_at: Optional[datetime] = None if deadline_seconds is None else clock() + timedelta(seconds=deadline_seconds)
        self._renew_until = None if deadline_seconds is None else time.monotonic() + deadline_seconds
        self.taken_over_run: Optional[str] = None
        self.lost = threading.Event()
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None

    def expiry(self, now: datetime) -> datetime:
        """Return the expiry a renewal at `now` writes: a lease lifetime on, never past the deadline."""
        until = now + timedelta(seconds=self.seconds)
        return until if self.deadline_at is None else min(until, self.deadline_at)

    @property
    def past_deadline(self) -> bool:
        return self._renew_until is not None and time.monotonic() >= self._renew_until

    def renew(self) -> bool:
        """Extend the lease; return False (and set `lost`) when it is no longer ours."""
        if self.past_deadline:
            return True  # still ours until it expires, but never extended past the run's deadline
        now = self.clock()
        with write(self.engine) as conn:
            changed = conn.execute(
                m.lease.update()
                .where(m.lease.c.Name == self.name, m.lease.c.Holder == self.holder)
                .values(ExpiresAt=self.expiry(now))
            ).rowcount
        if changed != 1:
            self.lost.set()
        return changed == 1

    def keep_alive(self) -> None:
        """Renew the lease from a daemon thread every third of its lifetime."""

        def loop() -> None:
            while not self._stop.wait(self.seconds / 3) and not self.past_deadline:
                try:
                    if not self.renew():
                        return
                except Exception:  # noqa: BLE001 - a failed renewal is retried; expiry is the backstop
                    continue

        self._thread = threading.Thread(target=loop, name=f"lease:{self.name}", daemon=True)
        self._thread.start()

    def release(self) -> None:
        """Stop renewing and delete the lease row, if it is still ours."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        with write(self.engine) as conn:
            conn.execute(m.lease.delete().where(m.lease.c.Name == self.name, m.lease.c.Holder == self.holder))


# Every acquisition first locks this row, so checking for overlapping leases and taking one is
# atomic on every backend (SQLite serialises writers anyway; PostgreSQL and SQL Server row-lock).
GUARD_ROW = "memctl:acquire"
FAR_FUTURE = datetime(9999, 1, 1, tzinfo=timezone.utc)


def overlaps(name: str, other: str) -> bool:
    """Return whether two lease names cover some partition in common.

    The unsharded lease ("maintenance") covers everything; shard leases of the same count n
    ("maintenance:shard i/n") are disjoint; shard leases of different counts overlap.
    """
    if name == other:
        return True
    if GUARD_ROW in (name, other):
        return False
    shard_a, shard_b = name.partition(":shard ")[2], other.partition(":shard ")[2]
    if not shard_a or not shard_b:
        return True
    return shard_a.split("/")[1] != shard_b.split("/")[1]


def _lock_guard(conn: sa.Connection, now: datetime) -> None:
    query = sa.select(m.lease.c.Name).where(m.lease.c.Name == GUARD_ROW).with_for_update()
    if conn.execute(query).first() is None:
        try:
            with conn.begin_nested():
                conn.execute(m.lease.insert().values(Name=GUARD_ROW, Holder="-", RunID=None, AcquiredAt=now, ExpiresAt=FAR_FUTURE))
        except sa.exc.IntegrityError:
            pass  # another process created it first
        conn.execute(query).first()


def acquire(
    engine: Engine, name: str, run_id: Optional[str], seconds: float, clock: Clock, holder: Optional[str] = None,
    deadline_seconds: Optional[float] = None,
) -> Lease | LeaseRefused:
    """Take the lease `name`, taking over an expired one; return the Lease or who holds it.

    A live lease that `overlaps` it refuses it. With `deadline_seconds` the lease never expires
    later than that many seconds from now.
    """
    holder = holder or f"{socket.gethostname()}:{os.getpid()}"  # this process: host and pid
    now = clock()
    lease = Lease(engine, name, holder, run_id, seconds, clock, deadline_seconds)
    expires = lease.expiry(now)
    try:
        with write(engine) as conn:
            _lock_guard(conn, now)
            live = conn.execute(sa.select(m.lease).where(m.lease.c.Name != name, m.lease.c.Name != GUARD_ROW, m.lease.c.ExpiresAt > now)).mappings().all()
            for other in live:
                if overlaps(name, other["Name"]):
                    return _refused(other)
            row = conn.execute(sa.select(m.lease).where(m.lease.c.Name == name).with_for_update()).mappings().first()
            if row is None:
                conn.execute(m.lease.insert().values(Name=name, Holder=holder, RunID=run_id, AcquiredAt=now, ExpiresAt=expires))
                return lease
            if row["ExpiresAt"] > now:
                return _refused(row)
            taken = conn.execute(
                m.lease.update()
                .where(m.lease.c.Name == name, m.lease.c.Holder == row["Holder"], m.lease.c.ExpiresAt == row["ExpiresAt"])
                .values(Holder=holder, RunID=run_id, AcquiredAt=now, ExpiresAt=expires)
            ).rowcount
            if taken != 1:
                return _refused(row)
            if row["RunID"]:
                close_dead_run(conn, row["RunID"], now, f"lease expired: holder {row['Holder']} stopped renewing it (process died?)")
                lease.taken_over_run = row["RunID"]
            return lease
    except sa.exc.IntegrityError:
        with engine.connect() as conn:
            row = conn.execute(sa.select(m.lease).where(m.lease.c.Name == name)).mappings().first()
        if row is None:
            raise
        return _refused(row)


def _refused(row: Any) -> LeaseRefused:
    return LeaseRefused(row["Name"], row["Holder"], row["RunID"], row["ExpiresAt"].isoformat(), row["AcquiredAt"])
