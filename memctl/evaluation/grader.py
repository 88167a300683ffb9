"""Fact retention: does a note still state a labelled fact (the test `memctl eval` grades with).

It imports nothing from memctl (tests/test_eval.py checks), so consolidation is never graded by its
own text functions. A fact is retained when a sentence of an active note of its partition `states`
its wording, both normalised by `statement`, minus relative dates (consolidation must rewrite them).
"""

from __future__ import annotations

import re
import unicodedata
from typing import Iterable, Protocol, Sequence

NOT = "<not>"

_SENTENCE_BREAK = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])|\n+")
_CONTRACTIONS = (
    (re.compile(r"\bwon't\b"), "will not"),
    (re.compile(r"\bcan't\b"), "can not"),
    (re.compile(r"\bcannot\b"), "can not"),
    (re.compile(r"\bain't\b"), "is not"),
    (re.compile(r"n't\b"), " not"),
    (re.compile(r"'re\b"), " are"),
    (re.compile(r"'m\b"), " am"),
    (re.compile(r"'ve\b"), " have"),
    (re.compile(r"'ll\b"), " will"),
    (re.compile(r"'d\b"), " would"),
    (re.compile(r"'s\b"), ""),
)
_USER = frozenset({"i", "me", "my", "mine", "myself"})
_NEGATIONS = frozenset({"not", "no", "never", "nor", "neither", "nobody", "nothing", "none", "nowhere"})
#: "was", "did", "will" stay: a new tense is a new fact
_DROPPED = frozenset({"a", "an", "the", "am", "is", "are", "do", "does"})
_IRREGULAR = {"has": "have", "goes": "go"}
_ASCII_WORD = re.compile(r"^[a-z]+$")

_COUNT = r"(?:\d+|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|thirty|a\s+few|a\s+couple\s+of|several)"
_UNIT = r"(?:minute|hour|day|week|month|year)s?"
_DAYTIME = r"(?:morning|afternoon|evening|night|week|weekend|month|year|monday|tuesday|wednesday|thursday|friday|saturday|sunday)"
_RELATIVE = re.compile(
    r"\b(?:the\s+day\s+before\s+yesterday|the\s+day\s+after\s+tomorrow"
    rf"|(?<!the\s)(?:this|last|next)\s+{_DAYTIME}"
    rf"|{_COUNT}\s+{_UNIT}\s+ago|in\s+{_COUNT}\s+{_UNIT}"
    r"|yesterday|today|tonight|tomorrow"
    r"|recently|currently|lately|nowadays|these\s+days|right\s+now|at\s+the\s+moment|the\s+other\s+day)\b",
    re.IGNORECASE,
)


class Labelled(Protocol):
    """A labelled fact: its original sentence and its rephrasing."""

    original: str
    revised: str


def relative_dates(text: str) -> list[str]:
    """Return the relative time expressions of `text`, as written, in order."""
    return [match.group(0) for match in _RELATIVE.finditer(text)]


def without_relative_dates(text: str) -> str:
    """Return `text` without its relative time expressions (consolidation must rewrite them)."""
    return _RELATIVE.sub(" ", text)


def _words(text: str) -> list[str]:
    """Split `text` into runs of letters, marks and digits, digits of any script read as ASCII."""
    words, current = [], []
    for char in text:
        category = unicodedata.category(char)
        if category[0] in "LM":
            current.append(char)
        elif category[0] == "N":
            digit = unicodedata.decimal(char, None)
            current.append(char if digit is None else str(digit))
        elif current:
            words.append("".join(current))
            current = []
    if current:
        words.append("".join(current))
    return words


def _fold(word: str) -> str:
    """Fold a plural or third-person -s of an ASCII word ("dogs" -> "dog", "eats" -> "eat")."""
    if word in _IRREGULAR:
        return _IRREGULAR[word]
    if len(word) < 4 or not _ASCII_WORD.match(word):
        return word
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("sses", "ches", "shes", "xes", "zes")):
        return word[:-2]
    if word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def statement(text: str) -> tuple[str, ...]:
    """Return a sentence as the retention test compares it: normalised words, negations as NOT."""
    text = unicodedata.normalize("NFKC", text).casefold().replace("\u2019", "'").replace("\u2018", "'")
    for pattern, replacement in _CONTRACTIONS:
        text = pattern.sub(replacement, text)
    out: list[str] = []
    for word in _words(text):
        if word in _USER:
            out.append("user")
        elif word in _NEGATIONS:
            out.append(NOT)
        elif word not in _DROPPED:
            out.append(_fold(word))
    return tuple(out)


def states(sentence: Sequence[str], fact: Sequence[str]) -> bool:
    """Say whether `sentence` states `fact`: its words in order, no extra negation inside the span.

    Each word of the fact is matched at its first place after the previous one; a negation the
    sentence holds between the first and the last matched word, and the fact does not, denies it.
    """
    if not fact:
        return False
    at, started = 0, False
    for word in fact:
        while at < len(sentence) and sentence[at] != word:
            if started and sentence[at] == NOT:
                return False
            at += 1
        if at == len(sentence):
            return False
        started, at = True, at + 1
    return True


def split_sentences(text: str) -> list[str]:
    """Cut a note into sentences (after . ! ? and a space, after 。！？, at line breaks), dropping empty pieces."""
    pieces = (piece.strip() for piece in _SENTENCE_BREAK.split(text))
    return [piece for piece in pieces if _words(piece)]


def sentences_of(texts: Iterable[str]) -> list[tuple[str, ...]]:
    """Return every sentence of `texts`, normalised for the retention test."""
    return [statement(piece) for text in texts for piece in split_sentences(text)]


def retained(fact: Labelled, sentences: Sequence[Sequence[str]]) -> bool:
    """Say whether one of `sentences` states the fact's original or revised wording (its relative dates left out)."""
    forms = [statement(without_relative_dates(fact.original)), statement(without_relative_dates(fact.revised))]
    return any(states(sentence, form) for form in forms for sentence in sentences)
