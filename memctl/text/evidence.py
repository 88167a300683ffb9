"""A model's quoted evidence, checked against the notes (DESIGN 4, "Decisions").

Every model verdict that would change the store quotes, from each note, the subject it is about
and the value it states. Code checks the quotes rather than guessing the subject: each occurs in
its note at word edges; the subject quotes are the same words; and every number or ID in which
the notes differ lies inside a value quote (one left out may tell two subjects apart).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Optional, Sequence

from memctl.text.tokens import ascii_digits, is_spaceless, normal, tokens

#: what `check` finds: the quotes hold; they show different subjects; they do not show one subject
HOLDS, DIFFERENT, UNSHOWN = "holds", "different", "unshown"


@dataclass(frozen=True)
class Quoted:
    """One note's text and the model's two quotes from it."""

    text: str
    subject: str
    value: str


@dataclass(frozen=True)
class Finding:
    outcome: str
    reason: str = ""

    @property
    def holds(self) -> bool:
        return self.outcome == HOLDS


def _key(text: str) -> tuple[str, ...]:
    return tuple(t.norm for t in tokens(text))


@lru_cache(maxsize=16384)
def _folded(text: str) -> tuple[str, tuple[int, ...]]:
    """Return `text` in the form quotes are matched in (NFKC, one space between words, ASCII digits, case
    folded) and, per character of it, the position in `normal(ascii_digits(text))` it comes from."""
    base = normal(ascii_digits(text))
    chars, origin = [], []
    for i, char in enumerate(base):
        folded = char.casefold()
        chars.append(folded)
        origin.extend([i] * len(folded))
    return "".join(chars), tuple(origin)


def _joins(a: str, b: str) -> bool:
    """Say whether a quote may begin or end between characters `a` and `b` (not inside a word of a script with spaces)."""
    return not (a.isalnum() and b.isalnum()) or is_spaceless(a + b)


def _covered(text: str, quote: str) -> Optional[list[tuple[int, int]]]:
    """Return where `quote` occurs in `text` (spans of `normal(ascii_digits(text))`), or None.

    Matched folded, edge punctuation set aside; it must begin and end at a word's edge.
    """
    wanted = _folded(quote)[0].strip(_EDGE)
    if not any(c.isalnum() for c in wanted):
        return None
    whole, origin = _folded(text)
    found, at = [], whole.find(wanted)
    while at >= 0:
        end = at + len(wanted)
        if (at == 0 or _joins(whole[at - 1], whole[at])) and (end == len(whole) or _joins(whole[end - 1], whole[end])):
            found.append((origin[at], origin[end - 1] + 1))
        at = whole.find(wanted, at + 1)
    return found or None


#: what a quote's edges may carry that is not part of it: spaces and punctuation
_EDGE = " \t\n.,;:!?\"'“”‘’«»„()[]{}。、，！？：；「」『』()…-–—"


def unfound(notes: Sequence[Quoted], names: Sequence[str]) -> Optional[str]:
    """Return why the quotes cannot be read as evidence (one missing, or not in its note), or None."""
    for note, name in zip(notes, names, strict=True):
        for what, quote in (("subject", note.subject), ("value", note.value)):
            if not _key(quote):
                return f"the reply quotes no {what} from {name}"
            if _covered(note.text, quote) is None:
                return f"the {what} quoted from {name} ({_short(quote)!r}) is not in that note"
    return None


def check(notes: Sequence[Quoted]) -> Finding:
    """Check the quotes of two or more notes that a verdict joins (a contradiction, a merge, an absorption)."""
    first = notes[0]
    for other in notes[1:]:
        if _key(other.subject) != _key(first.subject):
            theirs, ours = _hard(first.subject), _hard(other.subject)
            if theirs != ours:
                shown = " / ".join(", ".join(sorted(h)) or "none" for h in (theirs, ours))
                return Finding(DIFFERENT, f"the quoted subjects differ in a number or ID ({shown})")
            return Finding(UNSHOWN, f"the quoted subjects are not the same words ({_short(first.subject)!r} / {_short(other.subject)!r})")
    shared = frozenset.intersection(*(frozenset(_hard(n.text)) for n in notes))
    outside: set[str] = set()
    orders: list[list[str]] = []
    for note in notes:
        values = _covered(note.text, note.value) or []
        unquoted = [t.norm for t in tokens(note.text) if t.hard
                    and not any(start <= t.start and t.start + len(t.text) <= end for start, end in values)]
        outside.update(h for h in unquoted if h not in shared)
        orders.append([h for h in unquoted if h in shared])
    if outside:
        return Finding(DIFFERENT, f"{', '.join(sorted(outside))}: not in every note and not in the quoted values, so it may name another subject")
    if any(sorted(o) == sorted(orders[0]) and o != orders[0] for o in orders[1:]):
        # "2024年3月5日" / "2024年5月3日": the same numbers in another order outside the values
        return Finding(DIFFERENT, f"the numbers outside the quoted values stand in another order ({' '.join(orders[0])} / ...)")
    return Finding(HOLDS)


def values_apart(a: Quoted, b: Quoted) -> bool:
    """Say whether the value quotes lie where the notes differ: one holds a word the other note lacks."""
    return bool(set(_key(a.value)) - set(_key(b.text)) or set(_key(b.value)) - set(_key(a.text)))


def same_value(a: Quoted, b: Quoted) -> bool:
    """Say whether two notes' value quotes are the same words (a contradiction between them is no contradiction)."""
    return _key(a.value) == _key(b.value)


def _hard(text: str) -> set[str]:
    return {t.norm for t in tokens(text) if t.hard}


def _short(text: str, limit: int = 80) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
