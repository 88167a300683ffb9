"""The verdict cache: a judge's reply, keyed by what was asked, so nothing is asked twice.

The key hashes the kind, the template hash, the model and the inputs exactly as the judge sees
them, so changing any of them asks again.
"""

from __future__ import annotations

import hashlib
import json
from datetime import datetime
from typing import Any, Iterable

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from memctl.store import models as m
from memctl.store.engine import read, write
from memctl.store.ids import chunks


def verdict_key(kind: str, template_hash: str, model: str, inputs: Any) -> str:
    canonical = json.dumps([kind, template_hash, model, inputs], sort_keys=True, separators=(",", ":"), default=str, ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


class VerdictCache:
    """Read cached replies in bulk; store new ones (never during a dry-run)."""

    def __init__(self, engine: Engine, dry_run: bool = False) -> None:
        self.engine = engine
        self.dry_run = dry_run

    def get_many(self, keys: Iterable[str]) -> dict[str, dict[str, Any]]:
        """Return the cached replies (parsed JSON) for those of `keys` that are cached."""
        wanted = sorted(set(keys))
        found: dict[str, dict[str, Any]] = {}
        with read(self.engine) as conn:
            for chunk in chunks(wanted):
                for key, reply in conn.execute(sa.select(m.verdict.c.CacheKey, m.verdict.c.Reply).where(m.verdict.c.CacheKey.in_(chunk))):
                    found[key] = json.loads(reply)
        return found

    def put_many(self, entries: Iterable[tuple[str, str, str, dict[str, Any]]], now: datetime) -> int:
        """Store (key, kind, model, reply) entries not already cached; return how many were new."""
        rows = {key: {"CacheKey": key, "Kind": kind, "Model": model[:255], "Reply": json.dumps(reply, sort_keys=True), "CreatedAt": now} for key, kind, model, reply in entries}
        if self.dry_run or not rows:
            return 0
        with write(self.engine) as conn:
            present: set[str] = set()
            for chunk in chunks(sorted(rows)):
                present.update(conn.execute(sa.select(m.verdict.c.CacheKey).where(m.verdict.c.CacheKey.in_(chunk))).scalars())
            new = [row for key, row in rows.items() if key not in present]
            if new:
                conn.execute(m.verdict.insert(), new)
        return len(new)

    def forget(self, keys: Iterable[str]) -> None:
        """Delete the entries of `keys` (replies found unusable when read: the question is asked again)."""
        wanted = sorted(set(keys))
        if self.dry_run or not wanted:
            return
        with write(self.engine) as conn:
            for chunk in chunks(wanted):
                conn.execute(m.verdict.delete().where(m.verdict.c.CacheKey.in_(chunk)))
