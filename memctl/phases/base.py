"""What every phase shares: the context it plans in, the overlay of earlier phases, the protocol."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Callable, Optional, Protocol

from sqlalchemy.engine import Engine

from memctl.plan import PhasePlan
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

    def lock_name(self) -> str:
        return "maintenance" if self.shard is None else f"maintenance:shard {self.shard[0]}/{self.shard[1]}"

    def as_dict(self) -> dict[str, Any]:
        return {"agent": self.agent_id, "shard": f"{self.shard[0]}/{self.shard[1]}" if self.shard else None}


@dataclass
class Overlay:
    """The effects of the phases already planned in this invocation.

    In a real run each phase's plan is applied before the next phase plans, so the database
    already shows those effects; the overlay then only carries which notes this run created.
    In a dry-run nothing is applied, so the overlay also carries the planned removals and
    additions, and later phases plan on the state the earlier plans would produce.
    """

    removed: set[str] = field(default_factory=set)
    added: list[NoteRecord] = field(default_factory=list)
    created_by_run: set[str] = field(default_factory=set)
    #: dry-run: the columns the earlier plans set on notes they keep Active (a standing note's
    #: credited AccessCount and LastAccessedAt), as plan values, by note ID: later phases plan,
    #: and guard, on the rows as they will be
    changed: dict[str, dict[str, Any]] = field(default_factory=dict)


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
    services: dict[str, Any] = field(default_factory=dict)
    #: the run's deadline (the pipeline sets it from run_deadline_seconds)
    deadline: Deadline = field(default_factory=Deadline.unbounded)

    def service(self, name: str, factory: Callable[[], Any]) -> Any:
        """Return a lazily built shared service (judge, embedder...)."""
        if name not in self.services:
            self.services[name] = factory()
        return self.services[name]


class Phase(Protocol):
    """A maintenance phase: a pure planner whose plan the pipeline applies."""

    name: str
    step_name: str

    def plan(self, ctx: PhaseContext, overlay: Overlay) -> PhasePlan: ...
