"""The context a maintenance run plans in: the store, the settings, the clock, the scope it
works on, how it reports progress, and the services (judge, embedder...) it builds once.

The phases plan in it, and so do the helpers below them that read the store for a phase
(vectors, settled partitions, reviews): it lives under the phases so that those need not
reach up into them.
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


class NullReporter:
    """Reports nothing."""

    def start(self, label: str, total: Optional[int] = None) -> None:
        return None

    def advance(self, amount: int = 1) -> None:
        return None

    def finish(self) -> None:
        return None

    def log(self, message: str) -> None:
        return None


@dataclass(frozen=True)
class Scope:
    """Which part of the store an invocation works on."""

    agent_id: Optional[str] = None
    shard: Optional[tuple[int, int]] = None
    #: a slice of the scope's agents, every spelling the store holds their IDs in (None: no
    #: agent), which the LLM phases plan one at a time in a large store (memctl/phases/slices.py)
    agents: Optional[tuple[Any, ...]] = None

    def lock_name(self) -> str:
        return "maintenance" if self.shard is None else f"maintenance:shard {self.shard[0]}/{self.shard[1]}"

    def as_dict(self) -> dict[str, Any]:
        return {"agent": self.agent_id, "shard": f"{self.shard[0]}/{self.shard[1]}" if self.shard else None}


@dataclass(frozen=True)
class Snapshot:
    """The Active notes the consolidate phase loaded, for the contradictions phase of the same run.

    `touched`: the notes consolidate's units name (lower-case IDs), read again (`refreshed`);
    every other note is taken as loaded. A row another application changed in between is
    planned on as loaded, and the guard of a unit planned on it refuses the unit at apply.
    """

    notes: list[NoteRecord]
    with_vectors: bool
    touched: frozenset[str] = frozenset()


@dataclass
class Services:
    """What a run builds once and its phases share."""

    judge: Optional[Judge] = None
    #: the VectorIndex both LLM phases search: built and typed by memctl.vectors.vector_index,
    #: which sits above this module
    index: Any = None
    #: the StoredVectors both LLM phases decode: built and typed by memctl.vectors.stored_vectors
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
    #: the run's deadline (the pipeline sets it from run_deadline_seconds)
    deadline: Deadline = field(default_factory=Deadline.unbounded)

    def judge(self) -> Judge:
        """Return the run's judge, built on first use (a store with nothing to ask needs no LLM configuration)."""
        if self.services.judge is None:
            self.services.judge = make_judge(self.settings)
        return self.services.judge
