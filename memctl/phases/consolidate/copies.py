"""Exact copies, and wordings of one fact that differ only in punctuation, case and filler: in
one partition they are one note, joined into the note that stands without asking a model."""

from __future__ import annotations

from collections import defaultdict
from functools import partial
from typing import Any, Callable, Sequence

from memctl.phases.consolidate.rules import analysed, contested_notes, outlives, short_key, standing_order, standing_unit
from memctl.phases.notes import consolidatable
from memctl.plan import Unit
from memctl.records import NoteRecord, PartitionKey
from memctl.text.decide import NoteText, wording_key
from memctl.text.tokens import same_text_key
from memctl.vectors import PartitionVectors, VectorIndex

#: how a copy's Comments line says what it is
EXACT_COPY = "an exact copy of it (the same text)"
SAME_WORDS = "the same fact in its words (punctuation, case and filler aside)"


def copy_groups(notes: Sequence[NoteRecord], key_of: Callable[[NoteRecord], Any] = lambda n: same_text_key(n.note)) -> list[list[NoteRecord]]:
    """Return the groups of 2+ notes with the same key that hold a note memctl may revoke.

    The key: the same text (`same_text_key`), or the same words bar punctuation, case and filler
    (`memctl.text.decide.wording_key`).
    """
    by_key: dict[Any, list[NoteRecord]] = defaultdict(list)
    for note in notes:
        key = key_of(note)
        if key:
            by_key[key].append(note)
    return [group for group in by_key.values() if len(group) > 1 and any(consolidatable(n) for n in group)]


def plan_copies(
    index: VectorIndex,
    found: dict[PartitionKey, list[list[NoteRecord]]],
    vectors: dict[PartitionKey, PartitionVectors],
    texts: dict[str, NoteText],
    what: str,
) -> tuple[list[Unit], set[PartitionKey]]:
    """Plan the absorption of copies; return the units and the partitions that have some.

    Per group, the note `standing_order` puts first stays (as does any note memctl may not revoke)
    and absorbs the copies it `outlives`. When an Active note contradicts the copies, the newest
    copy stays and absorbs only older ones, so the contradiction phase sees the fact's latest date
    with the access counts of all.
    """
    units: list[Unit] = []
    copied: set[PartitionKey] = set()
    for key, groups in found.items():
        pv = vectors[key]
        contested = contested_notes(pv, {n.id for group in groups for n in group}, min(index.thresholds(pv.model)), texts)
        for group in groups:
            dated = any(n.id in contested for n in group)
            takes = partial(_takes_copy, dated=dated)
            remaining = sorted(group, key=partial(standing_order, newest_first=dated))
            while len(remaining) > 1:
                # the first in order that may take every other note memctl may revoke, else the first
                revocable = [n for n in remaining if consolidatable(n)]
                stay = next((s for s in remaining if all(takes(s, o) for o in revocable if o is not s)), remaining[0])
                rest = [n for n in remaining if n is not stay]
                absorbed = [n for n in rest if takes(stay, n)]
                if absorbed:
                    copied.add(key)
                    shown = ", ".join(n.id for n in absorbed[:10]) + (f" and {len(absorbed) - 10} more" if len(absorbed) > 10 else "")
                    units.append(standing_unit(
                        "copies", f"copies:{stay.id}", stay, absorbed,
                        f"Absorbed {copies_text(len(absorbed))} of this note ({shown})",
                        f"Consolidated into note {stay.id}: {what}",
                        {"partition": short_key(key), "copies": len(absorbed), "standing": stay.id},
                    ))
                remaining = [n for n in rest if n not in absorbed]
    return units, copied


def _takes_copy(stay: NoteRecord, other: NoteRecord, dated: bool) -> bool:
    """Return whether copy `other` may be revoked into `stay` (`dated`: never a newer into an older)."""
    return consolidatable(other) and outlives(stay, other) and (not dated or other.created_at <= stay.created_at)


def wording(texts: dict[str, NoteText], note: NoteRecord) -> Any:
    return wording_key(analysed(texts, note))


def copies_text(count: int) -> str:
    return f"{count} exact {'copy' if count == 1 else 'copies'}"
