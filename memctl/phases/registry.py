"""The maintenance phases by name, in the fixed order of FR-001."""

from __future__ import annotations

from memctl.phases.archive import ArchivePhase
from memctl.phases.base import Phase
from memctl.phases.consolidate import ConsolidatePhase
from memctl.phases.contradictions import ContradictionPhase
from memctl.phases.prune import PrunePhase

PHASES = {cls.name: cls for cls in (ConsolidatePhase, ContradictionPhase, PrunePhase, ArchivePhase)}
STEP_NAMES = {name: cls.step_name for name, cls in PHASES.items()}


def phase(name: str) -> Phase:
    return PHASES[name]()
