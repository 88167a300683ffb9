"""The offline merge: consolidation without a model, by extracting distinct sentences.

Notes are taken newest first, then most accessed. A sentence a kept one states is dropped; one that
states a kept one replaces it; a restricting word keeps both (lossless beats terse). memctl.authority
settles a certain conflict, or nothing merges. A merge over MAX_CONTENT_CHARS or with relative time
words left is refused.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Optional, Sequence

from memctl.authority import authority
from memctl.records import NoteRecord
from memctl.temporal import find_relative, normalise
from memctl.text.decide import CONFLICT, SAME, Decision, NoteText, compare, read_note
from memctl.text.statement import Sentence, analyse, covers, split_sentences

MAX_CONTENT_CHARS = 2000
MERGE_CONFIDENCE = 0.9


def order_notes(notes: Sequence[NoteRecord]) -> list[NoteRecord]:
    return sorted(notes, key=lambda n: (-n.created_at.timestamp(), -n.access_count, n.id))


def choose_type(ordered: Sequence[NoteRecord]) -> str:
    """Return the most common type; a tie goes to the newest note's type among the tied ones."""
    counts = Counter(note.type for note in ordered)
    top = max(counts.values())
    return next(note.type for note in ordered if counts[note.type] == top)


def note_text(note: NoteRecord) -> NoteText:
    """Return a note's analysed text, relative dates made absolute against its created date."""
    return read_note(note.note, note.created_at)


def note_sentences(note: NoteRecord) -> list[Sentence]:
    """Return the sentences of `note`, relative dates made absolute against its created date."""
    return [analyse(normalise(piece, note.created_at)) for piece in split_sentences(note.note)]


@dataclass
class Merge:
    """The sentences an extractive merge keeps, and what it left out."""

    kept: list[tuple[Sentence, NoteRecord]]
    superseded: int = 0
    undecided: Optional[Decision] = None


def merge_sentences(ordered: Sequence[NoteRecord]) -> Merge:
    """Keep every distinct sentence of the notes, in order; settle rule-backed contradictions."""
    merge = Merge(kept=[])
    for note in ordered:
        for sentence in note_sentences(note):
            _add(merge, sentence, note)
            if merge.undecided:
                return merge
    return merge


def _add(merge: Merge, sentence: Sentence, note: NoteRecord) -> None:
    if not sentence.words or any(covers(kept, sentence) or compare(kept, sentence).relation == SAME for kept, _ in merge.kept):
        return
    for index, (kept, kept_note) in enumerate(merge.kept):
        found = compare(kept, sentence)
        if found.relation != CONFLICT or not found.certain:
            continue
        decided = authority(kept_note, note)
        if decided is None:
            merge.undecided = found
        else:
            merge.superseded += 1
            if decided.winner is note:
                merge.kept[index] = (sentence, note)
        return
    contained = [i for i, (kept, _) in enumerate(merge.kept) if covers(sentence, kept)]
    if contained:
        merge.kept[contained[0]] = (sentence, note)
        for index in reversed(contained[1:]):
            del merge.kept[index]
    else:
        merge.kept.append((sentence, note))


def _merge_reason(count: int, merge: Merge) -> str:
    reason = f"Extractive merge of {count} notes ({len(merge.kept)} distinct sentences kept"
    if merge.superseded:
        reason += f"; {merge.superseded} superseded by newer or more accessed statements"
    return reason + ")"


def _refusal(content: str) -> Optional[str]:
    """Return why a merged text must not be proposed, or None when it can be."""
    if len(content) > MAX_CONTENT_CHARS:
        return (
            f"Not merged: the merge keeps every distinct sentence but is {len(content)} characters, "
            f"over the {MAX_CONTENT_CHARS}-character cap."
        )
    leftover = find_relative(content)
    if leftover:
        return f"Not merged: relative time words could not be made absolute: {', '.join(leftover)}."
    return None
