"""The maintenance phases by name, in the fixed order of FR-001."""

from __future__ import annotations

from memctl.phases.archive import ArchivePhase
from memctl.phases.base import Phase
from memctl.phases.consolidate import ConsolidatePhase
from memctl.phases.contradictions import ContradictionPhase
from memctl.phases.prune import PrunePhase

STEP_NAMES = {
    "consolidate": "Consolidate Related Notes",
    "contradictions": "Detect Note Contradictions",
    "prune": "Prune Stale References",
    "archive": "Archive Expired Items",
}


def phase(name: str) -> Phase:
    if name == "consolidate":
        return ConsolidatePhase()
    if name == "contradictions":
        return ContradictionPhase()
    if name == "prune":
        return PrunePhase()
    if name == "archive":
        return ArchivePhase()
    raise KeyError(name)
