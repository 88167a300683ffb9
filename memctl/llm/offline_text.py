"""Text normalisation shared by the offline merge and the offline judge.

Text normalisation (shared by every rule)
  A note is split into sentences (at . ! ? followed by a space, and at line breaks). Relative
  dates in each sentence are made absolute with `memctl.temporal.normalise`, using the created
  date of the note the sentence comes from. Words are lower-cased, contractions expanded
  ("doesn't" -> "does not"), possessive 's dropped, articles (a/an/the), present-tense
  auxiliaries (is/are/am/do/does) and a "there is/are" opener dropped, and a light suffix
  stemmer folds "likes"/"like". Negations (not, no, never, no longer, nobody, no one, nothing,
  none) are taken out of the word sequence and counted. Past tense ("was", "did") is kept, so
  "was in Paris" never equals "is not in Paris".
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional, Sequence

from memctl.records import NoteRecord

_SENTENCE_BREAK = re.compile(r"(?<=[.!?])\s+|\n+")
_WORD = re.compile(r"[a-z0-9]+(?:[-@./:+_][a-z0-9]+)*")
_CASED_WORD = re.compile(r"[A-Za-z0-9]+(?:[-@./:+_][A-Za-z0-9]+)*|,")

_CONTRACTIONS = (
    (re.compile(r"\bwon't\b", re.I), "will not"),
    (re.compile(r"\bcan't\b", re.I), "can not"),
    (re.compile(r"\bcannot\b", re.I), "can not"),
    (re.compile(r"\bain't\b", re.I), "is not"),
    (re.compile(r"n't\b", re.I), " not"),
    (re.compile(r"\b(it|he|she|that|there|what|who|here)'s\b", re.I), r"\1 is"),
    (re.compile(r"'re\b", re.I), " are"),
    (re.compile(r"'m\b", re.I), " am"),
    (re.compile(r"'ve\b", re.I), " have"),
    (re.compile(r"'ll\b", re.I), " will"),
    (re.compile(r"'d\b", re.I), " would"),
    (re.compile(r"'s\b", re.I), ""),
    (re.compile(r"(?<=s)'(?=\s|$)", re.I), ""),
)

_NEGATIONS = frozenset({"not", "no", "never"})
_NOT = "<not>"
_NEGATED_PRONOUNS = {"nobody": "someone", "nothing": "something", "none": None}
_DROPPED = frozenset({"a", "an", "the", "is", "are", "am", "do", "does"})
_EPISTEMIC_HEDGES = frozenset({"maybe", "perhap", "probably", "possibly", "might"})
#: stemmed, like the words they are compared with ("sometimes" -> "sometime")
_VALUE_HEDGES = _EPISTEMIC_HEDGES | {"sometime", "occasionally", "also", "too", "either", "both", "if", "unless"}


def _expand_contractions(text: str) -> str:
    text = text.replace("\u2019", "'")
    for pattern, replacement in _CONTRACTIONS:
        text = pattern.sub(replacement, text)
    return text


def _stem(word: str) -> str:
    """Fold plural and third-person endings, so "likes"/"like" and "cats"/"cat" compare equal."""
    if len(word) <= 3 or not word.isalpha():
        return word
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("sses", "ches", "shes", "xes", "zes", "oes")):
        return word[:-2]
    if word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


_PERSON_WORDS = frozenset(
    _stem(word) for word in "person people man men woman women boy girl child children kid lady guy user".split()
)


_PREPOSITIONS = frozenset(
    """in on at of with by for from to into onto over under near behind beside between through across
    around along against about off out up down""".split()
)
_CONJUNCTIONS = frozenset({"and", "but", "or", "nor", "while", "yet"})
_TENSE_MODAL_WORDS = frozenset(
    _stem(word)
    for word in """was were did had will would could should shall may might must can used formerly
    previously once until before after if unless when only almost nearly hardly barely rarely seldom
    fake toy former ex""".split()
) | _VALUE_HEDGES
_RESTRICTIVE_WORDS = (
    _PREPOSITIONS
    | _TENSE_MODAL_WORDS
    | frozenset(_stem(word) for word in "except but while during per each usually often mostly generally typically".split())
)


@dataclass(frozen=True)
class Sentence:
    """One sentence as written (dates made absolute) and its normalised word sequence."""

    text: str
    #: content words, negations taken out
    words: tuple[str, ...]
    #: content words with a "not" where each negation stood
    signed: tuple[str, ...]
    negations: int
    #: every negation is a quantifier ("there is no", "no <noun>", "nobody", "nothing", "none")
    existential: bool = False


def analyse(text: str) -> Sentence:
    """Normalise one sentence into content words and a negation count."""
    tokens = _WORD.findall(_expand_contractions(text).lower())
    signed: list[str] = []
    negations = existential = 0
    i = 0
    while i < len(tokens):
        token, following = tokens[i], tokens[i + 1] if i + 1 < len(tokens) else ""
        step = 1
        if token == "there" and following in ("is", "are"):
            step = 2
        elif token == "no" and following == "longer":
            negations, step = negations + 1, 2
            signed.append(_NOT)
        elif token == "no" and following == "one":
            negations, existential, step = negations + 1, existential + 1, 2
            signed += [_NOT, "someone"]
        elif token == "any" and following == "longer" or token == "anymore":
            step = 2 if token == "any" else 1
        elif token in _NEGATIONS:
            negations += 1
            existential += token == "no"
            signed.append(_NOT)
        elif token in _NEGATED_PRONOUNS:
            negations, existential = negations + 1, existential + 1
            signed.append(_NOT)
            if _NEGATED_PRONOUNS[token]:
                signed.append(_NEGATED_PRONOUNS[token])
        elif token == "somebody":
            signed.append("someone")
        elif token not in _DROPPED:
            signed.append(_stem(token))
        i += step
    return Sentence(
        text=text,
        words=tuple(word for word in signed if word != _NOT),
        signed=tuple(signed),
        negations=negations,
        existential=0 < negations == existential,
    )


def split_sentences(text: str) -> list[str]:
    """Split a note into its sentences, each stripped, with empty pieces removed."""
    return [piece.strip() for piece in _SENTENCE_BREAK.split(text) if piece and piece.strip(" .!?;\t")]


def note_sentences(note: NoteRecord) -> list[Sentence]:
    """Return the sentences of `note`, relative dates made absolute against its created date."""
    from memctl.temporal import normalise

    return [analyse(normalise(piece, note.created_at)) for piece in split_sentences(note.note)]


def covers(kept: Sentence, candidate: Sentence) -> bool:
    """Say whether `kept` already states `candidate`.

    Every word of `candidate` must appear in `kept`, in order, and what `kept`
    adds must not restrict or shift it: no preposition, condition, tense, modal, frequency or hedge
    word ("prefers dark mode in the evening" does not state "prefers dark mode", "was vegetarian"
    does not state "is vegetarian"; "lives in Paris, France" does state "lives in Paris").
    """
    if not candidate.words or kept.negations != candidate.negations:
        return False
    if candidate.negations:
        # a negation turns entailment around: "does not like marketing email" does not state
        # "does not like email", so a negated sentence is only stated by the same words
        return kept.signed == candidate.signed
    positions = _alignment(candidate.signed, kept.signed)
    if positions is None:
        return False
    matched = set(positions)
    added = {word for index, word in enumerate(kept.signed) if index not in matched}
    return not added & _RESTRICTIVE_WORDS


def _terminated(text: str) -> str:
    text = " ".join(text.split())
    return text if text.endswith((".", "!", "?")) else text.rstrip(",;:") + "."



def _alignment(general: Sequence[str], specific: Sequence[str]) -> Optional[list[int]]:
    """Return the leftmost positions of `general`'s words in `specific`, in order, or None.

    "someone" (what "nobody" / "no one" deny) also matches any word for a person.
    """
    positions, start = [], 0
    for word in general:
        match = next((i for i in range(start, len(specific)) if _names(word, specific[i])), None)
        if match is None:
            return None
        positions.append(match)
        start = match + 1
    return positions


def _names(general: str, specific: str) -> bool:
    return general == specific or (general == "someone" and specific in _PERSON_WORDS)

