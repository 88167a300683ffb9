"""The run lease: one maintenance run per database (or per shard) at a time.

A lease is a row in memctl_lock with an expiry, renewed by a background thread while the run
works. A second holder is refused while the lease is live; a lease whose holder died expires,
and the next run takes it over and closes the dead run as Failed.
"""

from __future__ import annotations

import os
import socket
import threading
from dataclasses import dataclass
from datetime import timedelta
from typing import Optional

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from memctl.recorder import Clock, close_dead_run
from memctl.store import models as m
from memctl.store.engine import write


def holder_name() -> str:
    """Describe this process for the lock row (host and pid)."""
    return f"{socket.gethostname()}:{os.getpid()}"


@dataclass(frozen=True)
class LeaseRefused:
    """Someone else holds a live lease."""

    name: str
    holder: str
    run_id: Optional[str]
    expires_at: str


class Lease:
    """A held lease; renew it with `keep_alive()` and give it back with `release()`."""

    def __init__(self, engine: Engine, name: str, holder: str, run_id: Optional[str], seconds: float, clock: Clock) -> None:
        self.engine = engine
        self.name = name
        self.holder = holder
        self.run_id = run_id
        self.seconds = seconds
        self.clock = clock
        self.taken_over_run: Optional[str] = None
        self.lost = threading.Event()
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None

    def renew(self) -> bool:
        """Extend the lease; return False (and set `lost`) when it is no longer ours."""
        now = self.clock()
        with write(self.engine) as conn:
            changed = conn.execute(
                m.lease.update()
                .where(m.lease.c.Name == self.name, m.lease.c.Holder == self.holder)
                .values(ExpiresAt=now + timedelta(seconds=self.seconds))
            ).rowcount
        if changed != 1:
            self.lost.set()
        return changed == 1

    def keep_alive(self) -> None:
        """Renew the lease from a daemon thread every third of its lifetime."""

        def loop() -> None:
            while not self._stop.wait(self.seconds / 3):
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

    def __enter__(self) -> "Lease":
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def acquire(engine: Engine, name: str, run_id: Optional[str], seconds: float, clock: Clock, holder: Optional[str] = None) -> Lease | LeaseRefused:
    """Take the lease `name`, taking over an expired one; return the Lease or who holds it."""
    holder = holder or holder_name()
    now = clock()
    expires = now + timedelta(seconds=seconds)
    lease = Lease(engine, name, holder, run_id, seconds, clock)
    try:
        with write(engine) as conn:
            row = conn.execute(sa.select(m.lease).where(m.lease.c.Name == name).with_for_update()).mappings().first()
            if row is None:
                conn.execute(m.lease.insert().values(Name=name, Holder=holder, RunID=run_id, AcquiredAt=now, ExpiresAt=expires))
                return lease
            if row["ExpiresAt"] > now:
                return LeaseRefused(name, row["Holder"], row["RunID"], row["ExpiresAt"].isoformat())
            taken = conn.execute(
                m.lease.update()
                .where(m.lease.c.Name == name, m.lease.c.Holder == row["Holder"], m.lease.c.ExpiresAt == row["ExpiresAt"])
                .values(Holder=holder, RunID=run_id, AcquiredAt=now, ExpiresAt=expires)
            ).rowcount
            if taken != 1:
                return LeaseRefused(name, row["Holder"], row["RunID"], row["ExpiresAt"].isoformat())
            if row["RunID"]:
                close_dead_run(conn, row["RunID"], now, f"lease expired: holder {row['Holder']} stopped renewing it (process died?)")
                lease.taken_over_run = row["RunID"]
            return lease
    except sa.exc.IntegrityError:
        with engine.connect() as conn:
            row = conn.execute(sa.select(m.lease).where(m.lease.c.Name == name)).mappings().first()
        if row is None:
            raise
        return LeaseRefused(name, row["Holder"], row["RunID"], row["ExpiresAt"].isoformat())
