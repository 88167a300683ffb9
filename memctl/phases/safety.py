"""Guards that keep a weak judge from doing harm in the contradictions phase.

Two rules, both deterministic and both applied after the judge has answered:

1. **A contradiction never removes a fact the winner does not state.** The judge only says that
   two notes conflict; the loser may also hold facts that have nothing to do with the conflict
   ("Alice prefers a short email summary. Summaries should be sent the same day."). memctl
   revokes the loser only when it is a single statement (then that statement is the conflicting
   one) or when the winner states every sentence of it. A loser of several sentences with one
   the winner does not state is flagged for review instead, naming the sentence that would be
   lost. memctl does not write a new note with the loser's other facts: deciding which sentence
   conflicts is the judgement a weak model gets wrong, and a person resolves the flag in seconds.
   Two notes that state the same facts are duplicates, never a contradiction: such a verdict is
   not acted on (consolidation merges duplicates).
   "States": the winner has a sentence holding every content word of the loser's sentence in
   order, with no extra negation (memctl.text.statement.states; `memctl eval` grades with its own).

   With `consolidate_keep_every_sentence` (for weak local models), a consolidation reply is
   held to the same test: a merged note that does not state every sentence of the notes it
   replaces is rejected, so a run never revokes a fact no Active note states. It also rejects
   merges that rightly drop a superseded value; the contradictions phase decides those instead.

2. **A judge that answers the same way to nearly every question is not believed.** Among the
   pairs a run judged (cached answers included), when at least `uniform_min_pairs` (default 20)
   were judged and at least `uniform_share` (default 0.9) of them were called contradictions,
   none of those verdicts is applied and the step says why. Similar notes of one partition are
   mostly compatible (complements, paraphrases); a judge that calls nine in ten of them
   contradictions is not reading them (SmolLM2-135M called 56 of 60 "contradiction" at 0.95).
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


def unstated(note: NoteRecord, by: NoteRecord) -> list[str]:
    """Return the sentences of `note` that `by` does not state."""
    return unstated_text(_sentences(note), [words for _, words in _sentences(by)])


def unstated_text(sentences: Sequence[tuple[str, tuple[str, ...]]], theirs: Sequence[tuple[str, ...]]) -> list[str]:
    return [text for text, words in sentences if words and not any(states(other, words) for other in theirs)]


def merge_loses(sources: Sequence[NoteRecord], merged: str) -> list[str]:
    """Return the sentences of `sources` that the merged note does not state (consolidate_keep_every_sentence)."""
    theirs = [words for _, words in _text_sentences(merged)]
    return [text for note in sources for text in unstated_text(_sentences(note), theirs)]


def loser_keeps(loser: NoteRecord, winner: NoteRecord) -> Optional[str]:
    """Return why revoking `loser` would lose a fact the winner does not state, or None when it is safe."""
    sentences = _sentences(loser)
    if len(sentences) <= 1:
        return None
    lost = unstated(loser, winner)
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


def uniformity(verdicts: Sequence[bool], min_pairs: int, share: float) -> Uniformity:
    """Return the uniformity of a run's verdicts (True = called a contradiction)."""
    return Uniformity(len(verdicts), sum(verdicts), min_pairs, share)
