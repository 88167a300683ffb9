"""Settled partitions: a partition whose planning found nothing to do is not planned again until it changes.

A partition planned to nothing with every question answered (none failed, paused or deferred)
gets a *settled mark*: a key hashing all planning depends on: the phase and `VERSION`;
`plan_settings`; the judge's model and template hashes; every note as planning sees it
(`__mj_UpdatedAt` included, the vector text not: rewriting a vector moves `__mj_UpdatedAt`); and
whatever else the phase compares it with (broader partitions, pairs under review). Being
content-addressed, a mark can be written while planning and needs no undo: any edit, setting or
prompt change gives another key. Marks live in the verdict cache (kind `settled:<phase>`); a
dry-run never writes them, `--replan` ignores them.

Each run records its settled share (`save_share`); the next run predicts from it how to read
vectors, which changes only speed, never a plan.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import operator
from typing import Any, Callable, Iterable, Optional, Sequence

import sqlalchemy as sa

from memctl.context import PhaseContext
from memctl.errors import MemctlError
from memctl.plan import jsonable
from memctl.records import NoteRecord
from memctl.settings import Settings
from memctl.store import models as m
from memctl.store.engine import read, write
from memctl.store.verdicts import VerdictCache

#: bump when what a settled mark covers changes: every old mark is then ignored
VERSION = 2

#: settings that cannot change what a phase plans (how it runs, where, when, and secrets)
RUNTIME_SETTINGS = frozenset(
    {
        "db_url", "db_schema", "db_auto_upgrade", "llm_api_key", "embed_api_key", "llm_timeout", "llm_max_retries",
        "llm_concurrency", "llm_concurrency_max", "embed_batch_size", "now", "gate_hours", "gate_min_new_notes", "lease_seconds", "replan",
        "max_pairs", "offline_max_pairs", "prune_cap", "note_retention_days", "example_retention_days", "low_score_threshold",
        "slice_notes",
    }
)

#: NoteRecord fields of a note's state: all but the vector text (see the module docstring)
_NOTE_FIELDS = tuple(f.name for f in dataclasses.fields(NoteRecord) if f.name != "embedding_vector")
_note_values = operator.attrgetter(*_NOTE_FIELDS)
#: where note_state keeps a record's state (not a field: equality, replace() and asdict() ignore it)
_STATE = "_memctl_state"


def plan_settings(settings: Settings) -> dict[str, Any]:
    """Return the settings that can change a plan, as JSON data (no secrets)."""
    return {f.name: jsonable(getattr(settings, f.name)) for f in dataclasses.fields(settings) if f.name not in RUNTIME_SETTINGS}


def note_state(note: NoteRecord) -> str:
    """Return a note as planning sees it, minus its vector text, as canonical text.

    The repr of its values is unambiguous and much cheaper than JSON. It is kept on the (frozen)
    record, since both LLM phases digest the same records.
    """
    state = note.__dict__.get(_STATE)
    if state is None:
        state = repr(_note_values(note))
        object.__setattr__(note, _STATE, state)
    return state


def notes_digest(notes: Iterable[NoteRecord], extra: Optional[Callable[[NoteRecord], Any]] = None) -> str:
    """Return a digest of the states of `notes`, whatever their order; `extra(note)` joins each state."""
    if extra is None:
        states = sorted(map(note_state, notes))
    else:
        states = sorted(f"{note_state(n)}{extra(n)!r}" for n in notes)
    return hashlib.sha256("\n".join(states).encode("utf-8", "surrogatepass")).hexdigest()


#: the settled share from which a phase predicts a mostly settled run (`SettledMarks.mostly_settled`)
MOSTLY_SETTLED = 0.5


class SettledMarks:
    """Look up and record settled marks for one phase in one run."""

    def __init__(
        self, cache: VerdictCache, phase: str, settings: Settings, judge_model: str, templates: Sequence[str], now: Any, enabled: bool = True
    ) -> None:
        self.cache = cache
        self.kind = f"settled:{phase}"
        self.model = judge_model
        self.enabled = enabled
        self._prefix = [self.kind, VERSION, plan_settings(settings), judge_model, list(templates)]
        self._share_key = hashlib.sha256(f"share:{self.kind}".encode()).hexdigest()
        self._now = now
        # this run's tally, for the share `save_share` records
        self.considered = self.skipped = self.marked = 0

    def key(self, *parts: Any) -> str:
        """Return the mark key of a partition described by `parts` (its notes' states, what they meet)."""
        canonical = json.dumps([*self._prefix, *parts], sort_keys=True, separators=(",", ":"), default=str, ensure_ascii=False)
        return hashlib.sha256(canonical.encode("utf-8")).hexdigest()

    def mostly_settled(self) -> bool:
        """Return whether most partitions were settled after this phase's last run (a prediction).

        Then the phase reads notes without their vector text and fetches vectors only for the
        partitions it plans; otherwise one scan with the vectors is cheaper than two.
        """
        return self.settled_share() >= MOSTLY_SETTLED

    def settled_share(self) -> float:
        """Return the share of partitions settled after this phase's last run (0 if unknown or disabled)."""
        if not self.enabled:
            return 0.0
        with read(self.cache.engine) as conn:
            reply = conn.execute(sa.select(m.verdict.c.Reply).where(m.verdict.c.CacheKey == self._share_key)).scalar()
        try:
            share = json.loads(reply) if reply else {}
            settled, partitions = int(share["settled"]), int(share["partitions"])
        except (ValueError, KeyError, TypeError):
            return 0.0
        return settled / partitions if partitions > 0 and settled >= 0 else 0.0

    def save_share(self) -> None:
        """Record how many of the partitions this run considered are settled now (never in a dry-run)."""
        if self.cache.dry_run or not self.considered:
            return
        row = {
            "CacheKey": self._share_key, "Kind": f"share:{self.kind}"[:32], "Model": self.model[:255],
            "Reply": json.dumps({"settled": self.skipped + self.marked, "partitions": self.considered}), "CreatedAt": self._now,
        }
        try:
            with write(self.cache.engine) as conn:
                conn.execute(m.verdict.delete().where(m.verdict.c.CacheKey == self._share_key))
                conn.execute(m.verdict.insert().values(**row))
        except sa.exc.IntegrityError:
            pass  # a shard worker wrote it at the same moment: either figure will do for a prediction

    def settled(self, keys: Iterable[str]) -> set[str]:
        """Return which of `keys` (every partition this run considers) are marked settled."""
        keys = list(keys)
        self.considered += len(keys)
        found = set(self.cache.get_many(keys)) if self.enabled else set()
        self.skipped += len(found)
        return found

    def record(self, keys: Iterable[str]) -> int:
        """Mark `keys` settled (never in a dry-run); return how many marks were new."""
        entries = [(key, self.kind, self.model, {"settled": True}) for key in keys]
        self.marked += len(entries)
        return self.cache.put_many(entries, self._now)


def marks_for(ctx: PhaseContext, phase: str, kinds: Sequence[str]) -> Optional[SettledMarks]:
    """Return the settled marks of `phase` (whose judge asks questions of `kinds`) for this run.

    None when no judge can be built: then every partition is planned, and the phase fails only
    if it must actually ask something.
    """
    try:
        judge = ctx.judge()
    except MemctlError:
        return None
    templates = [judge.template_hash(kind) for kind in kinds]
    cache = VerdictCache(ctx.engine, ctx.dry_run)
    return SettledMarks(cache, phase, ctx.settings, judge.model, templates, ctx.settings.current_time(), enabled=not ctx.settings.replan)
