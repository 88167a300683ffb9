"""Fact retention: does a note still state a labelled fact (the test `memctl eval` grades with).

A fact is retained when one sentence of an active note of its partition states its original or
its revised wording. "States" is the offline judge's normalisation (contractions expanded,
articles and auxiliaries dropped, plurals folded, negations kept as tokens) after the first
person is read as "user" ("i have two dogs" ~ "User has two dogs"), then an ordered containment
test: every word of the fact, in order, in that sentence, with no extra negation inside the
matched span. The fact's own relative dates ("visiting tomorrow") are left out of the test, since
consolidation must rewrite them.
"""

from __future__ import annotations

import re
from typing import Iterable, Sequence

from memctl.evaluation.corpus import Fact

_FIRST_PERSON = re.compile(r"\b(?:i|me|myself|my|mine)\b", re.I)
_NOT = "<not>"


def statement(text: str) -> tuple[str, ...]:
    """Return a sentence as the retention test compares it: normalised words, negations as tokens."""
    from memctl.text.statement import analyse

    words = analyse(_FIRST_PERSON.sub(lambda m: "user's" if m.group(0).lower() in ("my", "mine") else "user", text)).signed
    return tuple("have" if w == "has" else w for w in words)


def states(sentence: Sequence[str], fact: Sequence[str]) -> bool:
    """Say whether `sentence` states `fact`: its words in order, no extra negation inside the span."""
    if not fact:
        return False
    positions, start = [], 0
    for word in fact:
        found = next((i for i in range(start, len(sentence)) if sentence[i] == word), None)
        if found is None:
            return False
        positions.append(found)
        start = found + 1
    matched = set(positions)
    return not any(sentence[i] == _NOT and i not in matched for i in range(positions[0], positions[-1] + 1))


def sentences_of(texts: Iterable[str]) -> list[tuple[str, ...]]:
    """Return every sentence of `texts`, normalised for the retention test."""
    from memctl.text.statement import split_sentences

    return [statement(piece) for text in texts for piece in split_sentences(text)]


def without_relative_dates(text: str) -> str:
    """Return `text` without its relative time expressions (consolidation must rewrite them)."""
    from memctl.temporal import find_relative

    for expression in find_relative(text):
        text = text.replace(expression, " ", 1)
    return text


def retained(fact: Fact, sentences: Sequence[Sequence[str]]) -> bool:
    """Say whether one of `sentences` states the fact's original or revised wording.

    The fact's own relative dates ("my mom is visiting tomorrow") are left out of the test: a
    consolidated note must rewrite them, and whether the date it wrote is right is not measured.
    """
    forms = [statement(without_relative_dates(fact.original)), statement(without_relative_dates(fact.revised))]
    return any(states(sentence, form) for form in forms for sentence in sentences)
