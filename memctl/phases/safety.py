"""Guards that keep a weak judge from doing harm, both deterministic and applied after it answers.

1. **A contradiction never removes a fact the winner does not state.** The loser may hold facts
   unrelated to the conflict, so it is revoked only when it is a single statement or the winner
   states every sentence of it; otherwise the pair is flagged for review, naming the sentence that
   would be lost (picking the conflicting sentence is what a weak model gets wrong). Two notes
   stating the same facts are duplicates: such a verdict is not acted on. "States"
   (memctl.text.statement.states): a sentence holds every content word of the other, in order,
   with no extra negation. With `consolidate_keep_every_sentence`, a merge that does not state
   every sentence it replaces is rejected the same way (even one that rightly drops a superseded
   value: the contradictions phase decides those).

2. **A judge that answers the same way to nearly every question is not believed.** When at least
   `uniform_min_pairs` (default 20) pairs of a run were judged (cached included) and at least
   `uniform_share` (default 0.9) were called contradictions, none of those verdicts is applied:
   similar notes of one partition are mostly compatible, so such a judge is not reading them.
   Answering "none" to everything does no harm and is not limited.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

from memctl.records import NoteRecord
from memctl.temporal import normalise
from memctl.text.statement import split_sentences, statement, states


def _sentences(note: NoteRecord) -> list[tuple[str, tuple[str, ...]]]:
    return _text_sentences(normalise(note.note, note.created_at))


def _text_sentences(text: str) -> list[tuple[str, tuple[str, ...]]]:
    pieces = split_sentences(text) or [text]
    return [(piece, statement(piece)) for piece in pieces]


def unstated_text(sentences: Sequence[tuple[str, tuple[str, ...]]], theirs: Sequence[tuple[str, ...]]) -> list[str]:
    """Return the texts of `sentences` that no statement of `theirs` states."""
    return [text for text, words in sentences if words and not any(states(other, words) for other in theirs)]


def merge_loses(sources: Sequence[NoteRecord], merged: str) -> list[str]:
    """Return the sentences of `sources` that the merged note does not state."""
    theirs = [words for _, words in _text_sentences(merged)]
    return [text for note in sources for text in unstated_text(_sentences(note), theirs)]


def loser_keeps(loser: NoteRecord, winner: NoteRecord) -> Optional[str]:
    """Return why revoking `loser` would lose a fact the winner does not state, or None."""
    sentences = _sentences(loser)
    if len(sentences) <= 1:
        return None
    lost = unstated_text(sentences, [words for _, words in _sentences(winner)])
    if not lost:
        return None
    first = lost[0] if len(lost[0]) <= 200 else lost[0][:197] + "..."
    more = f" and {len(lost) - 1} more sentence(s)" if len(lost) > 1 else ""
    return f"note {loser.id} says more than the conflicting statement; revoking it would lose {first!r}{more}"


@dataclass(frozen=True)
class Uniformity:
    """How one-sided a run's verdicts were, and whether that is too one-sided to believe."""

    judged: int
    contradictions: int
    min_pairs: int
    share: float

    @property
    def distrusted(self) -> bool:
        return self.judged >= self.min_pairs and self.contradictions >= self.share * self.judged

    def reason(self) -> str:
        return (
            f"the judge called {self.contradictions} of {self.judged} pairs contradictions "
            f"(at least {self.share:.0%} of at least {self.min_pairs} pairs): it is not telling pairs apart, "
            "so none of its contradiction verdicts was applied; measure the model with `memctl eval`"
        )
