"""The offline judge: memctl's embedded default, answering the Judge's questions by explicit rules.

No network and no model weights: every answer is computed from the note texts, so it is
deterministic, free (calls=0, zero usage) and explainable. It trades recall for precision. When
no rule applies the answer is "no" (isContradiction / isCovered False) with a low confidence, so
the phases take no action: the offline judge never revokes on a guess.

Text normalisation (shared by every rule)
  A note is split into sentences (at . ! ? followed by a space, and at line breaks). Relative
  dates in each sentence are made absolute with `memctl.temporal.normalise`, using the created
  date of the note the sentence comes from. Words are lower-cased, contractions expanded
  ("doesn't" -> "does not"), possessive 's dropped, articles (a/an/the), present-tense
  auxiliaries (is/are/am/do/does) and a "there is/are" opener dropped, and a light suffix
  stemmer folds "likes"/"like". Negations (not, no, never, no longer, nobody, no one, nothing,
  none) are taken out of the word sequence and counted. Past tense ("was", "did") is kept, so
  "was in Paris" never equals "is not in Paris".

Consolidation: an extractive merge
  Notes are ordered newest first, then most accessed, then by id, and their sentences are taken
  in that order. A sentence is a near-duplicate of a kept one when its normalised words, with its
  negations in place, are an ordered subsequence of the kept sentence's, it has as many negations,
  and the kept sentence adds no restricting word (preposition, condition, tense, modal, frequency
  or hedge word). That is a containment threshold of 1.0 on content words: "lives in Paris" and
  "lives in Berlin" both survive, "lives in Paris, France" states "lives in Paris", but "prefers
  dark mode in the evening" does not state "prefers dark mode" (both are kept: lossless beats
  terse). A negated sentence is only a duplicate of the same words with the same negations.
  A duplicate is dropped (the first wording, i.e. the newest / most accessed, wins); a
  sentence that states a kept one replaces it in place, since it says more. Two sentences that
  contradict each other by the rules below are settled by memctl's authority rule (created more
  than 7 days apart: the newer; otherwise the higher AccessCount); the loser is reported as
  superseded and lives on in its revoked source note. When authority cannot decide, the cluster
  is not merged (the contradiction phase flags it). A merge longer than MAX_CONTENT_CHARS, or
  one that still has relative time words, is not made either: no fact is ever dropped silently.

Contradiction rules (applied to every pair of sentences of the two notes)
  1. negation: one side has no negation, the other has at most one per clause, and the two
     word sequences are identical once negations are taken out ("user likes email updates" /
     "user does not like email updates", "there is no man playing guitar" / "a man is playing
     guitar", "is not X and is not Y" / "is X and Y"). A quantifier negation ("there is no",
     "no <noun>", "nobody") also denies a more specific positive: "user has no pets" / "user has
     two pets", "nobody is riding" / "two people are riding" ("nobody" denies any word for a
     person). The positive may add modifiers, but
     no tense, modal or hedge word ("there was once ...") and no preposition inside the denied
     phrase ("no man cutting a box" / "a man cutting the tape on the box"). A "not" negation
     never narrows: "does not like email updates" / "likes weekly email updates" is no
     contradiction. Epistemic hedges (maybe, probably, might) switch the rule off. Confidence 0.9.
  2. competing value, a single-valued attribute with two different values for the same subject;
     neither sentence may be negated or hedged (maybe, sometimes, also, if, ...):
     a. exclusive values: the sequences differ in exactly one word, and the two words are
        different members of one mutually exclusive set (metric/imperial, celsius/fahrenheit,
        dark/light, formal/casual, enabled/disabled, empty/full, ...; time-of-day, frequency and
        answer-length sets only next to a preference word such as "prefers" or "favourite").
        Attitude verbs (likes, loves, has, ...) switch this off. Confidence 0.9.
     b. attribute patterns: "S prefers X", "S lives in X", "S is based in X", "S works at/for X",
        "S reports to X", "S is married to X", "S speaks primarily X", "S is N years old", and
        "S's <attr> is X" / "the <attr> of S is X" for a lexicon of single-valued attributes
        (timezone, language, currency, email, phone number, birthday, name, city, deadline, ...)
        and any attribute led by favourite/preferred/primary/default. The subjects must match
        ("user", "the user" and no subject at all are the same); the values must differ, neither
        containing the other nor being synonyms of one exclusive set ("brief" / "concise").
        Named values (residence, employer, manager, spouse) must be capitalised, and a qualifier
        on one side only is ignored ("Paris with his wife" is "Paris"; "Acme on Mondays" /
        "Globex on Fridays" is no contradiction); other values must have the same qualifier
        ("in the morning"), and "prefers" values must be either single words or share their
        head word ("email updates" / "sms updates"). Confidence 0.85 (0.8 for "prefers").
  3. anything else is not a contradiction (confidence 0.3): complementary facts ("likes coffee" /
     "likes tea"), other subjects, other attributes, paraphrases.
  Measured by benchmarks/eval_contradictions.py on SICK 2014 (rules written from the train split):
  held-out test precision 99.8%, recall 67.2% on CONTRADICTION.

Absorption
  The broader note covers the narrower one when every sentence of the narrower note is a
  near-duplicate (the consolidation measure above) of some sentence of the broader note.

Limits (by design; an LLM judge does better)
  No synonyms or world knowledge: "lives in Paris" / "lives in France" is called a competing
  value, "user quit Acme" / "user works at Acme" is missed, and so is any paraphrased negation.
  "prefers email updates" / "prefers weekly updates" share a head word and are called competing,
  and so are any two single-word preferences ("prefers Python" / "prefers email"): the judge
  cannot tell that they answer different questions.
  Temporal supersession ("moved to Berlin") is not recognised.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from dataclasses import dataclass
from datetime import timedelta
from typing import Optional, Sequence

from pydantic import BaseModel

from memctl.llm.base import JudgeResult, Usage
from memctl.llm.replies import AbsorptionReply, ConsolidatedNote, ConsolidationReply, ContradictionReply
from memctl.records import NoteRecord

MODEL = "memctl-offline-v1"

#: bump the version of a kind whenever its rules change: it invalidates cached verdicts
RULES_VERSION = {"consolidate": "extractive-1", "contradiction": "rules-1", "absorb": "containment-1"}

MAX_CONTENT_CHARS = 2000
SUPERSEDE_AFTER = timedelta(days=7)

MERGE_CONFIDENCE = 0.9
NEGATION_CONFIDENCE = 0.9
EXCLUSIVE_CONFIDENCE = 0.9
ATTRIBUTE_CONFIDENCE = 0.85
PREFERENCE_CONFIDENCE = 0.8
NO_RULE_CONFIDENCE = 0.3
COVERED_EXACT_CONFIDENCE = 0.95
COVERED_CONFIDENCE = 0.85
NOT_COVERED_CONFIDENCE = 0.6


# --- text normalisation -------------------------------------------------------------------------

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


# --- contradiction rules --------------------------------------------------------------------------


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

    The negated side must say the same words as the positive one, one negation per clause at
    most (so "is not X and is not Y" denies "is X and Y"). A quantifier negation ("there is no
    biker jumping") also denies a more specific positive ("a lone biker is jumping"): its words
    need only appear in order in the positive, which may add any words but tense, modal and
    hedge words ("there was once a biker jumping" is no contradiction).
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


@dataclass(frozen=True)
class ExclusiveSet:
    """Values of which one thing has only one; synonyms share a group."""

    attribute: str
    groups: tuple[frozenset[str], ...]
    needs_preference: bool = False

    def group_of(self, word: str) -> Optional[int]:
        return next((index for index, group in enumerate(self.groups) if word in group), None)


def _groups(*groups: str) -> tuple[frozenset[str], ...]:
    return tuple(frozenset(_stem(word) for word in group.split()) for group in groups)


EXCLUSIVE_SETS = (
    ExclusiveSet("unit system", _groups("metric", "imperial")),
    ExclusiveSet("temperature scale", _groups("celsius centigrade", "fahrenheit")),
    ExclusiveSet("clock format", _groups("12-hour 12h", "24-hour 24h")),
    ExclusiveSet("colour scheme", _groups("dark", "light")),
    ExclusiveSet("tone", _groups("formal", "casual informal")),
    ExclusiveSet("setting", _groups("enabled", "disabled")),
    ExclusiveSet("fill state", _groups("empty", "full")),
    ExclusiveSet("open state", _groups("open", "closed")),
    ExclusiveSet("marital status", _groups("single", "married", "divorced", "widowed")),
    ExclusiveSet("handedness", _groups("left-handed", "right-handed")),
    ExclusiveSet("time of day", _groups("morning", "afternoon", "evening", "night nighttime"), True),
    ExclusiveSet("frequency", _groups("daily", "weekly", "monthly", "yearly annually"), True),
    ExclusiveSet("answer length", _groups("short brief concise", "long detailed verbose lengthy"), True),
)
_PREFERENCE_CUES = frozenset(_stem(w) for w in "prefer preferred favorite favourite default best always only".split())
_ATTITUDE_VERBS = frozenset(_stem(w) for w in "like love enjoy hate dislike own has have know want".split())


def exclusive_conflict(a: Sentence, b: Sentence) -> Optional[Conflict]:
    """Rule 2a: the same sentence but for one word, two members of a mutually exclusive set."""
    if len(a.words) != len(b.words) or a.negations or b.negations:
        return None
    differing = [(x, y) for x, y in zip(a.words, b.words) if x != y]
    if len(differing) != 1:
        return None
    context = set(a.words)
    if context & (_ATTITUDE_VERBS | _VALUE_HEDGES) or set(b.words) & (_ATTITUDE_VERBS | _VALUE_HEDGES):
        return None
    x, y = differing[0]
    for exclusive in EXCLUSIVE_SETS:
        group_x, group_y = exclusive.group_of(x), exclusive.group_of(y)
        if group_x is None or group_y is None or group_x == group_y:
            continue
        if exclusive.needs_preference and not context & _PREFERENCE_CUES:
            continue
        return Conflict("competing_value", exclusive.attribute, x, y, EXCLUSIVE_CONFIDENCE, a.text, b.text)
    return None


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


#: memctl.temporal rewrites "currently" / "right now" as "as of <date>": a time stamp, not a value
_AS_OF = re.compile(r",?\s*\bas of \d{4}-\d{2}-\d{2}\b,?", re.I)


def _surface(text: str) -> str:
    """Return the sentence in its own casing with contractions expanded and filler words removed."""
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


def read_facts(text: str) -> list[Fact]:
    """Read every single-valued attribute statement the patterns find in one sentence."""
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
    return [fact for fact in facts if fact is not None]


def _values_compete(a: Fact, b: Fact) -> bool:
    """Say whether two values of one attribute exclude each other (see rule 2b)."""
    words_a, words_b = set(a.head + a.qualifier), set(b.head + b.qualifier)
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
    """Say whether two word sequences differ only by words of one exclusive-set group ("brief"/"concise")."""
    return len(a) == len(b) and all(x == y or _same_group(x, y) for x, y in zip(a, b))


def _same_group(x: str, y: str) -> bool:
    return any(
        exclusive.group_of(x) is not None and exclusive.group_of(x) == exclusive.group_of(y) for exclusive in EXCLUSIVE_SETS
    )


def attribute_conflict(a: Sentence, b: Sentence) -> Optional[Conflict]:
    """Rule 2b: one subject, one single-valued attribute, two different values."""
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
    for rule in (negation_conflict, exclusive_conflict, attribute_conflict):
        for sentence_a in a:
            for sentence_b in b:
                conflict = rule(sentence_a, sentence_b)
                if conflict:
                    return conflict
    return None


# --- consolidation --------------------------------------------------------------------------------


def order_notes(notes: Sequence[NoteRecord]) -> list[NoteRecord]:
    """Order notes newest first, then most accessed, then by id."""
    return sorted(notes, key=lambda n: (-n.created_at.timestamp(), -n.access_count, n.id))


def choose_type(ordered: Sequence[NoteRecord]) -> str:
    """Return the most common type; a tie goes to the newest note's type among the tied ones."""
    counts = Counter(note.type for note in ordered)
    top = max(counts.values())
    return next(note.type for note in ordered if counts[note.type] == top)


def stronger(a: NoteRecord, b: NoteRecord) -> Optional[NoteRecord]:
    """Apply memctl's authority rule: newer by over 7 days, else more accessed, else undecided."""
    if abs(a.created_at - b.created_at) > SUPERSEDE_AFTER:
        return a if a.created_at > b.created_at else b
    if a.access_count != b.access_count:
        return a if a.access_count > b.access_count else b
    return None


@dataclass
class Merge:
    """The sentences an extractive merge keeps, and what it left out."""

    kept: list[tuple[Sentence, NoteRecord]]
    superseded: int = 0
    undecided: Optional[Conflict] = None


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
    if not sentence.words or any(covers(kept, sentence) for kept, _ in merge.kept):
        return
    for index, (kept, kept_note) in enumerate(merge.kept):
        conflict = find_conflict([kept], [sentence])
        if conflict is None:
            continue
        winner = stronger(kept_note, note)
        if winner is None:
            merge.undecided = conflict
        elif winner is note:
            merge.kept[index] = (sentence, note)
            merge.superseded += 1
        else:
            merge.superseded += 1
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


# --- the judge ------------------------------------------------------------------------------------


def _result(reply: BaseModel) -> JudgeResult:
    return JudgeResult(reply=reply, usage=Usage(), calls=0, raw=reply.model_dump_json())


class OfflineJudge:
    """Answer the Judge's questions with explicit, documented rules; no network, no cost."""

    model = MODEL

    def template_hash(self, kind: str) -> str:
        """Return a constant hash of the rule-set version used for `kind`."""
        if kind not in RULES_VERSION:
            raise ValueError(f"unknown judge question {kind!r}; expected one of {sorted(RULES_VERSION)}")
        return hashlib.sha256(f"{MODEL}:{kind}:{RULES_VERSION[kind]}".encode()).hexdigest()

    def consolidate(self, notes: Sequence[NoteRecord], reference_date: str) -> JudgeResult:
        """Merge the cluster into one note that keeps each distinct sentence once.

        Relative dates are resolved against each note's own created date, so `reference_date`
        (the run date) is not needed.
        """
        if len(notes) < 2:
            return _declined("Fewer than 2 notes.")
        ordered = order_notes(notes)
        merge = merge_sentences(ordered)
        if merge.undecided:
            return _declined(f"Not merged: {merge.undecided.reason()} Neither note has authority; left for review.")
        content = " ".join(_terminated(sentence.text) for sentence, _ in merge.kept)
        refusal = _refusal(content)
        if refusal:
            return _declined(refusal)
        note = ConsolidatedNote(type=choose_type(ordered), content=content, confidence=MERGE_CONFIDENCE)
        reply = ConsolidationReply(
            shouldConsolidate=True,
            consolidatedNote=note,
            sourceNoteIds=[n.id for n in notes],
            reason=_merge_reason(len(notes), merge),
        )
        return _result(reply)

    def contradiction(self, a: NoteRecord, b: NoteRecord) -> JudgeResult:
        """Say whether `a` and `b` contradict by the negation or competing-value rule."""
        conflict = find_conflict(note_sentences(a), note_sentences(b))
        if conflict is None:
            reply = ContradictionReply(
                isContradiction=False,
                contradictionType="none",
                reason="No offline rule applies (negation of the same statement, or competing values "
                "of a single-valued attribute); not treated as a contradiction.",
                confidence=NO_RULE_CONFIDENCE,
            )
        else:
            reply = ContradictionReply(
                isContradiction=True,
                contradictionType=conflict.kind,
                reason=conflict.reason(),
                confidence=conflict.confidence,
            )
        return _result(reply)

    def absorption(self, broader: NoteRecord, narrower: NoteRecord) -> JudgeResult:
        """Say whether every sentence of `narrower` is already stated by `broader`."""
        broad = note_sentences(broader)
        narrow = [sentence for sentence in note_sentences(narrower) if sentence.words]
        if not narrow:
            reply = AbsorptionReply(isCovered=False, reason="The narrower note states nothing.", confidence=NO_RULE_CONFIDENCE)
            return _result(reply)
        missing = [s for s in narrow if not any(covers(kept, s) for kept in broad)]
        if missing:
            reason = f'Not covered: "{missing[0].text}" is not stated by the broader note.'
            return _result(AbsorptionReply(isCovered=False, reason=reason, confidence=NOT_COVERED_CONFIDENCE))
        exact = all(any(kept.words == s.words for kept in broad) for s in narrow)
        reason = f"Every sentence of the narrower note ({len(narrow)}) is stated by the broader note."
        confidence = COVERED_EXACT_CONFIDENCE if exact else COVERED_CONFIDENCE
        return _result(AbsorptionReply(isCovered=True, reason=reason, confidence=confidence))


def _declined(reason: str) -> JudgeResult:
    """Answer "leave the cluster as is", in the reply shape the consolidation prompt asks for."""
    return _result(ConsolidationReply(shouldConsolidate=False, consolidatedNote=None, sourceNoteIds=[], reason=reason))


def _refusal(content: str) -> Optional[str]:
    """Return why a merged text must not be proposed, or None when it can be."""
    from memctl.temporal import find_relative

    if len(content) > MAX_CONTENT_CHARS:
        return (
            f"Not merged: the merge keeps every distinct sentence but is {len(content)} characters, "
            f"over the {MAX_CONTENT_CHARS}-character cap."
        )
    leftover = find_relative(content)
    if leftover:
        return f"Not merged: relative time words could not be made absolute: {', '.join(leftover)}."
    return None
