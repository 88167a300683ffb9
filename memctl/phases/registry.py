"""The maintenance phases by name, in the fixed order of FR-001."""

from __future__ import annotations

from memctl.phases.base import Phase

STEP_NAMES = {
    "consolidate": "Consolidate Related Notes",
    "contradictions": "Detect Note Contradictions",
    "prune": "Prune Stale References",
    "archive": "Archive Expired Items",
}


def phase(name: str) -> Phase:
    """Return the phase called `name`."""
    if name == "consolidate":
        from memctl.phases.consolidate import ConsolidatePhase

        return ConsolidatePhase()
    if name == "contradictions":
        from memctl.phases.contradictions import ContradictionPhase

        return ContradictionPhase()
    if name == "prune":
        from memctl.phases.prune import PrunePhase

        return PrunePhase()
    if name == "archive":
        from memctl.phases.archive import ArchivePhase

        return ArchivePhase()
    raise KeyError(name)
