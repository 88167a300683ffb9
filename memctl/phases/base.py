"""What every phase shares: the overlay of earlier phases and the protocol (context: memctl/context.py)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional, Protocol

from memctl.context import PhaseContext
from memctl.plan import PhasePlan
from memctl.records import NoteRecord


@dataclass
class Overlay:
    """The effects of the phases already planned in this invocation.

    A real run applies each plan before the next phase plans, so the overlay only carries which
    notes this run created; a dry-run applies nothing, so it also carries the planned removals and
    additions, and later phases plan on the state the earlier plans would produce.
    """

    removed: set[str] = field(default_factory=set)
    added: list[NoteRecord] = field(default_factory=list)
    created_by_run: set[str] = field(default_factory=set)
    #: dry-run: columns earlier plans set on notes they keep Active (credited AccessCount, LastAccessedAt),
    #: as plan values by note ID, so later phases plan and guard on the rows as they will be
    changed: dict[str, dict[str, Any]] = field(default_factory=dict)

    def added_for(self, agent_id: Optional[str]) -> list[NoteRecord]:
        """Return the notes earlier plans add and later ones keep, of `agent_id`'s (every agent's when None)."""
        wanted = (agent_id or "").lower()
        return [n for n in self.added if n.id not in self.removed and (not wanted or (n.agent_id or "").lower() == wanted)]


class Phase(Protocol):
    """A maintenance phase: a pure planner whose plan the pipeline applies."""

    name: str
    step_name: str

    def plan(self, ctx: PhaseContext, overlay: Overlay) -> PhasePlan: ...
