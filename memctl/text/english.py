"""English rules the generic ones do not cover: a quantifier negation, and attribute patterns.

Tuned on the SICK train split and English agent notes; the multilingual rules (memctl.text.decide)
do not need them, they add recall in English. Rule 1 is `negation_conflict`; rule 2,
`attribute_conflict`, reads "S prefers X", "S lives in X", "S's <attr> is X" and the like.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Optional, Sequence

from memctl.text import lexicon
from memctl.text.statement import (
    AS_OF as _AS_OF,
    CONJUNCTIONS as _CONJUNCTIONS,
    EPISTEMIC_HEDGES as _EPISTEMIC_HEDGES,
    PREPOSITIONS as _PREPOSITIONS,
    TENSE_MODAL_WORDS as _TENSE_MODAL_WORDS,
    VALUE_HEDGES as _VALUE_HEDGES,
    Sentence,
    alignment as _alignment,
    expand_contractions as _expand_contractions,
    stem as _stem,
    verb_base,
)

_WORD = re.compile(r"[^\W_]+(?:[-@./:+_][^\W_]+)*")
_CASED_WORD = re.compile(r"[^\W_]+(?:[-@./:+_][^\W_]+)*|,")

NEGATION_CONFIDENCE = 0.9
ATTRIBUTE_CONFIDENCE = 0.85
PREFERENCE_CONFIDENCE = 0.8


@dataclass(frozen=True)
class Conflict:
    """Why two sentences contradict: the rule, the attribute and the two values as written."""

    kind: str  # "negation" | "competing_value"
    attribute: str
    value_a: str
    value_b: str
    confidence: float
    sentence_a: str
    sentence_b: str

    def reason(self) -> str:
        if self.kind == "negation":
            return f'Negation of the same statement: "{self.sentence_a}" vs "{self.sentence_b}".'
        return (
            f'Competing values for the single-valued attribute "{self.attribute}": "{self.value_a}" vs '
            f'"{self.value_b}" ("{self.sentence_a}" / "{self.sentence_b}").'
        )


def negation_conflict(a: Sentence, b: Sentence) -> Optional[Conflict]:
    """Rule 1: a statement and its negation.

    The negated side says the same words, one negation per clause at most. A quantifier negation
    ("there is no biker jumping") also denies a more specific positive ("a lone biker is jumping"),
    which may add any words but tense, modal and hedge words.
    """
    positive, negative = (a, b) if not a.negations else (b, a)
    if positive.negations or not negative.negations or len(negative.words) < 2:
        return None
    if _EPISTEMIC_HEDGES.intersection(a.words + b.words):
        return None
    if negative.negations > 1 + sum(word in _CONJUNCTIONS for word in negative.words):
        return None
    same = positive.words == negative.words
    if not same and not (negative.existential and _is_narrowing(negative.words, positive.words)):
        return None
    return Conflict("negation", "statement", a.text, b.text, NEGATION_CONFIDENCE, a.text, b.text)


def _is_narrowing(general: Sequence[str], specific: Sequence[str]) -> bool:
    """Say whether `specific` is `general` with modifiers added.

    The added words may not be tense, modal or hedge words, nor a preposition inside the
    general statement's span: "cutting the tape on the box" is not "cutting a box".
    """
    positions = _alignment(general, specific)
    if positions is None:
        return False
    matched = set(positions)
    added = [word for index, word in enumerate(specific) if index not in matched]
    inside = [specific[i] for i in range(positions[0], positions[-1]) if i not in matched]
    return not _TENSE_MODAL_WORDS.intersection(added) and not _PREPOSITIONS.intersection(inside)


@dataclass(frozen=True)
class Fact:
    """An attribute statement read off one sentence: subject, attribute and value."""

    attribute: str
    kind: str  # "named" (capitalised value) | "preference" | "plain"
    subject: tuple[str, ...]
    value: str
    head: tuple[str, ...]
    qualifier: tuple[str, ...]
    head_capitalised: bool


_SUBJECT = r"^(?P<s>.*?)\b"
_VERB_PATTERNS = (
    ("preference", "preference", r"prefers?"),
    ("home", "named", r"(?:lives?|resides?) in"),
    ("base", "named", r"(?:is )?(?:based|located) in"),
    ("employer", "named", r"(?:works? (?:at|for)|is employed (?:at|by))"),
    ("manager", "named", r"reports? to"),
    ("spouse", "named", r"is married to"),
    ("primary language", "plain", r"(?:speaks? (?:primarily|mainly)|(?:primarily|mainly) speaks?)"),
)
_AGE_PATTERN = re.compile(_SUBJECT + r"is (?P<v>\d+) years? old$", re.I)

#: single-valued attribute nouns; the value on the right is the canonical attribute name
_ATTRIBUTE_NOUNS = {
    "time zone": "timezone", "time-zone": "timezone", "timezone": "timezone",
    "native language": "native language", "preferred language": "preferred language",
    "primary language": "primary language", "language": "language",
    "currency": "currency", "email address": "email", "e-mail address": "email", "email": "email",
    "e-mail": "email", "phone number": "phone number", "telephone number": "phone number",
    "mobile number": "phone number", "phone": "phone number", "age": "age", "birthday": "birthday",
    "date of birth": "birthday", "birth date": "birthday", "full name": "name", "first name": "first name",
    "last name": "last name", "surname": "last name", "name": "name", "job title": "job title",
    "employer": "employer", "manager": "manager", "home city": "city", "city": "city",
    "home country": "country", "country": "country", "home address": "address", "address": "address",
    "nationality": "nationality", "unit system": "unit system", "measurement system": "unit system",
    "deadline": "deadline", "due date": "deadline", "budget": "budget", "owner": "owner", "status": "status",
}
_SINGLE_VALUE_MODIFIERS = r"(?:favou?rite|preferred|primary|default|usual)"
_ATTRIBUTE = (
    r"(?P<a>" + "|".join(re.escape(n) for n in sorted(_ATTRIBUTE_NOUNS, key=len, reverse=True))
    + "|" + _SINGLE_VALUE_MODIFIERS + r" [a-z-]+(?: [a-z-]+){0,2}?)"
)
_NOUN_PATTERNS = (
    re.compile(_SUBJECT + _ATTRIBUTE + r" (?:is|are) (?P<v>.+)$", re.I),
    re.compile(r"^" + _ATTRIBUTE + r" of (?P<s>.+?) (?:is|are) (?P<v>.+)$", re.I),
)
_VERB_REGEXES = tuple(
    (attribute, kind, re.compile(_SUBJECT + verb + r" (?P<v>.+)$", re.I)) for attribute, kind, verb in _VERB_PATTERNS
)

_SURFACE_DROPS = re.compile(
    r"\b(?:a|an|the|now|currently|still|really|strongly|definitely|actually|much)\b\s*", re.I
)
_QUALIFIERS = frozenset(
    "for when during on at in while with except before after from by because since but and via".split()
)
_COMPARATIVES = frozenset({"over", "than", "rather", "instead", "to"})
_DEFAULT_SUBJECTS = {(), ("user",)}
_MAX_VALUE_WORDS = 6


def _surface(text: str) -> str:
    """Return the sentence in its own casing with contractions expanded and filler words removed (an "as of <date>"
    that memctl.temporal wrote for "currently" is a time stamp, not a value)."""
    text = _SURFACE_DROPS.sub("", _AS_OF.sub(" ", _expand_contractions(text)))
    return " ".join(text.split()).rstrip(" .!?;:")


def _subject_key(subject: str) -> tuple[str, ...]:
    words = tuple(_stem(w) for w in _WORD.findall(subject.lower()))
    return () if words in _DEFAULT_SUBJECTS else words


def _split_value(value: str, kind: str) -> tuple[list[str], list[str]]:
    """Split a value into its head and its qualifier ("tea" / "in the morning")."""
    tokens = _CASED_WORD.findall(value)
    if kind == "preference":
        cut = next((i for i, t in enumerate(tokens) if i and t.lower() in _COMPARATIVES), len(tokens))
        tokens = tokens[:cut]
    cut = next((i for i, t in enumerate(tokens) if i and (t == "," or t.lower() in _QUALIFIERS)), len(tokens))
    return tokens[:cut], [t for t in tokens[cut:] if t != ","]


def _fact(attribute: str, kind: str, subject: str, value: str) -> Optional[Fact]:
    head, qualifier = _split_value(value, kind)
    if not head or len(head) > _MAX_VALUE_WORDS:
        return None
    return Fact(
        attribute=attribute,
        kind=kind,
        subject=_subject_key(subject),
        value=value,
        head=tuple(_stem(t.lower()) for t in head),
        qualifier=tuple(_stem(t.lower()) for t in qualifier),
        head_capitalised=head[0][0].isupper(),
    )


@lru_cache(maxsize=65536)
def read_facts(text: str) -> tuple[Fact, ...]:
    """Read every single-valued attribute statement the patterns find in one sentence (cached)."""
    surface = _surface(text)
    facts: list[Optional[Fact]] = []
    for attribute, kind, regex in _VERB_REGEXES:
        match = regex.match(surface)
        if match:
            facts.append(_fact(attribute, kind, match["s"], match["v"]))
    match = _AGE_PATTERN.match(surface)
    if match:
        facts.append(_fact("age", "plain", match["s"], match["v"]))
    for regex in _NOUN_PATTERNS:
        match = regex.match(surface)
        if match:
            noun = match["a"].lower()
            facts.append(_fact(_ATTRIBUTE_NOUNS.get(noun, noun), "plain", match["s"], match["v"]))
    return tuple(fact for fact in facts if fact is not None)


#: words two wordings of one value swap freely: determiners, possessives, "to" ("to get answers" / "getting answers")
_FREE_VALUE_WORDS = frozenset(lexicon.FREE_BY_LANGUAGE["en"]) | {"to"}


def _value_words(words: Sequence[str]) -> set[str]:
    return {verb_base(w) for w in words if w not in _FREE_VALUE_WORDS}


def _values_compete(a: Fact, b: Fact) -> bool:
    """Say whether two values of one attribute exclude each other (rule 2).

    Values whose words (determiners, possessives, -ing forms aside) are one part of the other are
    two wordings of one value. Named values must be capitalised; a qualifier on one side only is
    ignored for them, other values need the same qualifier.
    """
    words_a, words_b = _value_words(a.head + a.qualifier), _value_words(b.head + b.qualifier)
    if words_a <= words_b or words_b <= words_a or _synonymous(a.head, b.head):
        return False
    if a.kind == "named":
        one_unqualified = not a.qualifier or not b.qualifier
        return a.head_capitalised and b.head_capitalised and (one_unqualified or a.qualifier == b.qualifier)
    if a.qualifier != b.qualifier:
        return False
    if a.kind == "preference":
        return a.head[-1] == b.head[-1] or (len(a.head) == 1 and len(b.head) == 1)
    return True


def _synonymous(a: Sequence[str], b: Sequence[str]) -> bool:
    """Say whether two word sequences differ only by synonyms ("brief" / "concise")."""
    return len(a) == len(b) and all(x == y or lexicon.synonyms([x], [y]) for x, y in zip(a, b))


def attribute_conflict(a: Sentence, b: Sentence) -> Optional[Conflict]:
    """Rule 2: one subject, one single-valued attribute, two different values."""
    if a.negations or b.negations or set(a.words + b.words) & _VALUE_HEDGES:
        return None
    for fact_a in read_facts(a.text):
        for fact_b in read_facts(b.text):
            if fact_a.attribute != fact_b.attribute or fact_a.subject != fact_b.subject:
                continue
            if _values_compete(fact_a, fact_b):
                confidence = PREFERENCE_CONFIDENCE if fact_a.kind == "preference" else ATTRIBUTE_CONFIDENCE
                return Conflict(
                    "competing_value", fact_a.attribute, fact_a.value, fact_b.value, confidence, a.text, b.text
                )
    return None


def find_conflict(a: Sequence[Sentence], b: Sequence[Sentence]) -> Optional[Conflict]:
    """Return the strongest rule-backed contradiction between two lists of sentences, if any."""
    for rule in (negation_conflict, attribute_conflict):
        for sentence_a in a:
            for sentence_b in b:
                conflict = rule(sentence_a, sentence_b)
                if conflict:
                    return conflict
    return None
