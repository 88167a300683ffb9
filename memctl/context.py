"""The context a maintenance run plans in: store, settings, clock, scope, progress reporting,
and the services (judge, embedder...) it builds once.

It lives under the phases so that the helpers that read the store for them (vectors, settled
partitions, reviews) need not reach up into them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Optional, Protocol

from sqlalchemy.engine import Engine

from memctl.llm.base import Judge
from memctl.llm.factory import make_judge
from memctl.records import NoteRecord
from memctl.settings import Settings
from memctl.stopping import Deadline


class Reporter(Protocol):
    """Progress reporting; the CLI passes a rich one, tests and cron a silent one."""

    def start(self, label: str, total: Optional[int] = None) -> None: ...

    def advance(self, amount: int = 1) -> None: ...

    def finish(self) -> None: ...

    def log(self, message: str) -> None: ...


class NullReporter(Reporter):
    """Report nothing: the protocol's methods do nothing."""


@dataclass(frozen=True)
class Scope:
    """Which part of the store an invocation works on."""

    agent_id: Optional[str] = None
    shard: Optional[tuple[int, int]] = None
    #: one slice of the scope's agents, every spelling of their IDs in the store (None: no agent);
    #: the LLM phases plan a large store slice by slice (memctl/phases/slices.py)
    agents: Optional[tuple[Any, ...]] = None

    def lock_name(self) -> str:
        return "maintenance" if self.shard is None else f"maintenance:shard {self.shard[0]}/{self.shard[1]}"

    def as_dict(self) -> dict[str, Any]:
        return {"agent": self.agent_id, "shard": f"{self.shard[0]}/{self.shard[1]}" if self.shard else None}


@dataclass(frozen=True)
class Snapshot:
    """The Active notes the consolidate phase loaded, for the contradictions phase of the same run.

    `touched`: the notes consolidate's units name (lower-case IDs), read again; the rest are
    taken as loaded. A row another application changed in between is planned on as loaded, and
    the guard of a unit planned on it refuses the unit at apply.
    """

    notes: list[NoteRecord]
    with_vectors: bool
    touched: frozenset[str] = frozenset()


@dataclass
class Services:
    """What a run builds once and its phases share."""

    judge: Optional[Judge] = None
    #: a memctl.vectors VectorIndex (Any: that module sits above this one)
    index: Any = None
    #: a memctl.vectors StoredVectors
    stored: Any = None
    #: left by consolidate for contradictions, which takes it
    snapshot: Optional[Snapshot] = None


@dataclass
class PhaseContext:
    """Everything a phase needs to plan: the store, settings, the clock and its scope."""

    engine: Engine
    settings: Settings
    now: datetime
    scope: Scope = field(default_factory=Scope)
    reporter: Reporter = field(default_factory=NullReporter)
    last_maintenance_at: Optional[datetime] = None
    #: a dry-run writes nothing at all, not even memctl's own caches
    dry_run: bool = False
    services: Services = field(default_factory=Services)
    #: set by the pipeline from run_deadline_seconds
    deadline: Deadline = field(default_factory=Deadline.unbounded)

    def judge(self) -> Judge:
        """Return the run's judge, built on first use (a store with nothing to ask needs no LLM configuration)."""
        if self.services.judge is None:
            self.services.judge = make_judge(self.settings)
        return self.services.judge
