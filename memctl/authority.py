"""The authority rule (FR-022): which of two conflicting notes is the current truth.

The order is that of MemberJunction's own contradiction prompt. The contradiction phase picks
winners by it; consolidation checks that a merged note keeps the winner's value.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Optional

from memctl.records import NoteRecord

#: created further apart than this, the newer note is the current truth (FR-022)
SUPERSEDE_AFTER = timedelta(days=7)


@dataclass(frozen=True)
class Authority:
    """Which note of a contradictory pair is the current truth, and by which rule."""

    winner: NoteRecord
    loser: NoteRecord
    rule: str


def authority(a: NoteRecord, b: NoteRecord) -> Optional[Authority]:
    """Apply FR-022: newer by over 7 days, else more important, else more accessed; None: a person decides (`memctl review`)."""
    gap = abs(a.created_at - b.created_at)
    if gap > SUPERSEDE_AFTER:
        newer, older = (a, b) if a.created_at > b.created_at else (b, a)
        return Authority(newer, older, f"the newer note (created {days(gap)} later)")
    if a.importance_score is not None and b.importance_score is not None and a.importance_score != b.importance_score:
        more, less = (a, b) if a.importance_score > b.importance_score else (b, a)
        return Authority(more, less, f"the more important note (ImportanceScore {more.importance_score:g} vs {less.importance_score:g})")
    if a.access_count != b.access_count:
        more, less = (a, b) if a.access_count > b.access_count else (b, a)
        return Authority(more, less, f"the more used note (accessed {more.access_count} times vs {less.access_count})")
    return None


def days(gap: timedelta) -> str:
    """Return a gap as the rule's messages write it ("14 days", "2.5 days")."""
    count = gap.total_seconds() / 86400
    return f"{count:.0f} days" if count >= 10 else f"{count:.1f} days"
