"""What a sentence states: its content words, its negations, and the hard evidence it names.

`analyse` reads a sentence once (cached) into a `Sentence`: `signed` is its content words in
comparison form (filler and a "Label:" preamble dropped, contractions and elisions split, -s endings
folded) with "<not>" where a negation of any listed language stood; `hard` holds numbers, IDs,
e-mail addresses and URLs (an "as of <date>" that memctl.temporal wrote for "currently" is not evidence).
`covers` (one sentence already states another) and `states` (the retention test) read these.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable, Optional, Sequence

from memctl.text import lexicon
from memctl.text.tokens import CHAR, NUMBER, WORD, Token, ascii_digits, is_caseless, normal, sentences, tokens

NOT = "<not>"

_CONTRACTIONS = (
    (re.compile(r"\bwon't\b", re.I), "will not"),
    (re.compile(r"\bcan't\b", re.I), "can not"),
    (re.compile(r"\bcannot\b", re.I), "can not"),
    (re.compile(r"\bain't\b", re.I), "is not"),
    (re.compile(r"(?<=[a-z])n't\b", re.I), " not"),
    (re.compile(r"\b(it|he|she|that|there|what|who|here)'s\b", re.I), r"\1 is"),
    (re.compile(r"(?<=[a-z])'re\b", re.I), " are"),
    (re.compile(r"\b(i)'m\b", re.I), r"\1 am"),
    (re.compile(r"(?<=[a-z])'ve\b", re.I), " have"),
    (re.compile(r"(?<=[a-z])'ll\b", re.I), " will"),
    (re.compile(r"(?<=[a-z])'d\b", re.I), " would"),
    (re.compile(r"(?<=\w)'s\b", re.I), ""),
    (re.compile(r"(?<=s)'(?=\s|$)", re.I), ""),
)
#: "as of 2026-03-16": what memctl.temporal writes for "currently", "recently", "right now"
AS_OF = re.compile(r",?\s*\bas of \d{4}-\d{2}-\d{2}\b,?", re.I)
#: a "Label:" preamble ("Confirmed:", "Per the account team:", "备注：") says who or when, not what
_PREAMBLE = re.compile(r"^\s*([^:：\n]{1,60}?)\s*[:：]\s+(?=\S)")
#: what separates the clauses of one sentence: a cue in one clause says nothing of a value in another
_PARENS = re.compile(r"\([^()]*\)|\[[^\[\]]*\]|（[^（）]*）")
_CLAUSE_BREAK = re.compile(r"[,;:，；、،]|\s[-–—]\s")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_ELISION = re.compile(r"^(l|d|n|j|m|t|s|c|qu|jusqu|lorsqu|puisqu)'(.+)$")
_POSSESSIVE_OPENER = re.compile(r"^\W*([^\W\d_][\w-]*)['’]s\b")
_LATIN = re.compile(r"^[a-zà-öø-ÿ'-]+$")
_NEGATED_PRONOUNS = {"nobody": "someone", "nothing": "something", "none": None}


def expand_contractions(text: str) -> str:
    """Return `text` with English contractions expanded ("doesn't" -> "does not"), possessive 's dropped."""
    text = text.replace("\u2019", "'")
    if "'" not in text and "annot" not in text and "ANNOT" not in text:
        return text
    for pattern, replacement in _CONTRACTIONS:
        text = pattern.sub(replacement, text)
    return text


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """Fold a Latin-script plural or third-person ending ("likes" / "like", "cats" / "cat" compare equal)."""
    if len(word) <= 3 or not _LATIN.match(word):
        return word
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("sses", "ches", "shes", "xes", "zes", "oes")):
        return word[:-2]
    if word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def verb_base(word: str) -> str:
    """Fold an English -ing form onto its verb ("getting" -> "get"); other words as they are."""
    if len(word) > 5 and word.endswith("ing") and _LATIN.match(word):
        base = word[:-3]
        return base[:-1] if base[-1] == base[-2] and base[-1] not in "aeiouls" else base
    return word


@dataclass(frozen=True)
class Sentence:
    """One sentence as written (dates made absolute) and what it states."""

    text: str
    #: content words, negations taken out
    words: tuple[str, ...]
    #: content words with NOT where each negation stood
    signed: tuple[str, ...]
    negations: int
    #: every negation is a quantifier ("there is no", "no <noun>", "nobody", "nothing", "none")
    existential: bool = False
    hard: frozenset[str] = frozenset()
    #: the same, in the order the sentence names them
    hard_seq: tuple[str, ...] = ()
    names: frozenset[str] = frozenset()
    opener: Optional[str] = None
    #: content words written with a capital, the first word included (a name, or a capital by position)
    capitals: frozenset[str] = frozenset()
    single: bool = False
    multi: bool = False
    hedged: bool = False
    #: every token's comparison form, filler included (what the lexicon's cue lists are matched on)
    raw: tuple[str, ...] = ()
    #: the content words are characters of a script written without spaces
    spaceless: bool = False
    #: written in a script without capitals (names cannot be seen)
    caseless: bool = False
    #: the clause (between commas, semicolons, colons) each of `words` stands in
    word_clauses: tuple[int, ...] = ()
    #: each of `words` stands inside parentheses or brackets ("Maria Lopez (sales)")
    word_parens: tuple[bool, ...] = ()
    #: where each of `words` stands in `raw` (filler included)
    word_raw: tuple[int, ...] = ()


def _split(token: Token) -> list[str]:
    norm = token.norm
    if token.kind == WORD and "'" in norm:
        match = _ELISION.match(norm)
        if match:
            return [match.group(1), match.group(2)]
        return [norm.replace("'", "")]
    return [norm]


def body(text: str) -> str:
    """Return a sentence without its "Label:" preamble: label words ("Confirmed:", "Per the account team:")
    before a sentence of 3+ words; never "Ticket #4512:", "Budget:" or "Anna Weber:"."""
    match = _PREAMBLE.match(text)
    if not match:
        return text
    label = tokens(match.group(1))
    # a date says when it was noted ("Said on 2026-03-14:"); any other number or ID is what the note is about
    if len(label) > 7 or any(t.hard and not _DATE.match(t.norm) for t in label) or len(tokens(text[match.end():])) < 3:
        return text
    # only a label saying who noted it or how, never what it is about ("Budget: 500 EUR", "Anna: ...")
    if all(lexicon.label_word(t.norm) or _DATE.match(t.norm) for t in label):
        return text[match.end():]
    return text


#: what stands before a German common noun: articles, determiners, possessives, fused prepositions
_GERMAN_DETERMINERS = frozenset("""der die das den dem des ein eine einen einem einer eines kein keine keinen keinem keiner keines
    im am zum zur vom beim ins ans mein meine meinen meinem meiner sein seine seinen seinem seiner ihr ihre ihren ihrem ihrer
    unser unsere unseren unserem unserer dieser diese dieses diesem diesen jeder jede jedes jeden jedem alle allen""".split())
#: titles that stand before a name and are not one
_GERMAN_TITLES = frozenset({"herr", "herrn", "frau"})
_GERMAN_ADJECTIVE_ENDING = re.compile(r"[^\W\d_]{2,}(?:e|en|er|es|em)$")


def german_nouns(toks: Sequence[Token]) -> frozenset[int]:
    """Return the positions of the capitalised words of a German sentence that are common nouns.

    German capitalises every noun: one is a title ("Frau") or stands after an article, determiner,
    number or small-letter adjective; "Frau Lorenz", "der Kunde Meier" keep their name."""
    words = [t.norm for t in toks]
    if not (lexicon.language_markers("de") & set(words)):
        return frozenset()
    out = set()
    for i, t in enumerate(toks):
        if not t.capital or t.kind != WORD:
            continue
        before = toks[i - 1] if i else None
        after = toks[i + 1] if i + 1 < len(toks) else None
        if after is not None and after.capital and t.norm not in _GERMAN_TITLES:
            continue  # a name of several words: "Die Müller Bau GmbH", "der Kunde Meier"
        if t.norm in _GERMAN_TITLES or (before is not None and (
                (before.kind == WORD and before.norm in _GERMAN_DETERMINERS) or before.kind == NUMBER
                or (before.kind == WORD and not before.capital and _GERMAN_ADJECTIVE_ENDING.fullmatch(before.norm)))):
            out.add(i)
    return frozenset(out)


def _pieces(toks: Sequence[Token], flat: str) -> tuple[list[str], list[int], list[bool]]:
    """Return every token's comparison pieces, the clause each stands in and whether it stands in parentheses."""
    cuts = [m.start() for m in _CLAUSE_BREAK.finditer(flat)]
    parens = [(m.start(), m.end()) for m in _PARENS.finditer(flat)]
    raw: list[str] = []
    clause_of: list[int] = []
    paren_of: list[bool] = []
    for token in toks:
        clause = bisect_left(cuts, token.start)  # the cuts before it (`cuts` is in order)
        inside = any(start < token.start < end for start, end in parens) if parens else False
        for piece in _split(token):
            raw.append(piece)
            clause_of.append(clause)
            paren_of.append(inside)
    return raw, clause_of, paren_of


def _marks(size: int, lists: dict[str, list[tuple[int, int]]]) -> tuple[list[bool], list[bool]]:
    """Return which pieces to drop (filler, a negation's later words) and which open a negation."""
    drop = [False] * size
    negated = [False] * size
    for start, end in lists["negation"]:
        negated[start] = True
        for i in range(start + 1, end):
            drop[i] = True
    for start, end in lists["filler"]:
        if not any(negated[start:end]):
            for i in range(start, end):
                drop[i] = True
    return drop, negated


def _sign(word: str, following: str, negated: bool) -> tuple[int, bool, bool, Optional[str]]:
    """Read one kept piece: the pieces it takes, whether it is a negation, whether a quantifier one, its content word."""
    if word == "there" and following in ("is", "are"):
        return 2, False, False, None
    if word == "no" and following == "one":
        return 2, True, True, "someone"
    if (word == "any" and following == "longer") or word == "anymore":
        return (2 if word == "any" else 1), False, False, None
    if word in _NEGATED_PRONOUNS:
        return 1, True, True, _NEGATED_PRONOUNS[word]
    if negated:
        return 1, True, word == "no", None
    return 1, False, False, "someone" if word == "somebody" else stem(word)


def _signed_words(raw: list[str], drop: list[bool], negated: list[bool]) -> tuple[tuple[str, ...], list[int], int, int]:
    """Return the kept pieces as content words with NOT where each negation stood, where each word stands
    in `raw`, the number of negations and how many of them are quantifiers."""
    signed: list[str] = []
    word_raw: list[int] = []
    negations = existential = 0
    i = 0
    while i < len(raw):
        if drop[i]:
            i += 1
            continue
        following = raw[i + 1] if i + 1 < len(raw) else ""
        step, negation, quantifier, content = _sign(raw[i], following, negated[i])
        if negation:
            negations += 1
            existential += quantifier
            signed.append(NOT)
        if content is not None:
            signed.append(content)
            word_raw.append(i)
        i += step
    return tuple(signed), word_raw, negations, existential


def _opener(first: Optional[Token], bodied: str) -> Optional[str]:
    """Return the name a sentence opens with, stemmed: a capitalised possessive ("Anna's"), else its capitalised first word."""
    possessive = _POSSESSIVE_OPENER.match(bodied)
    if possessive and possessive.group(1)[0].isupper():
        return stem(possessive.group(1).casefold())
    if first is not None and first.capital:
        bare = _split(first)[-1]  # "L'abonné" opens with "abonné"
        if bare not in lexicon.OPENER_WORDS:
            return stem(bare)
    return None


@lru_cache(maxsize=131072)
def analyse(text: str) -> Sentence:
    """Read one sentence into a `Sentence` (see the module docstring)."""
    bodied = body(text)
    expanded = expand_contractions(AS_OF.sub(" ", bodied))
    toks = tokens(expanded)
    raw, clause_of, paren_of = _pieces(toks, normal(ascii_digits(expanded)))
    lists = lexicon.read(raw)
    drop, negated = _marks(len(raw), lists)
    signed, word_raw, negations, existential = _signed_words(raw, drop, negated)
    hard_seq = tuple(t.norm for t in toks if t.hard or (t.kind == WORD and t.norm in lexicon.MONTHS))
    words = tuple(w for w in signed if w != NOT)
    first = next((t for t in toks if t.kind in (WORD, CHAR)), None)
    nouns = german_nouns(toks)
    return Sentence(
        text=text,
        words=words,
        signed=signed,
        negations=negations,
        existential=0 < negations == existential,
        hard=frozenset(hard_seq),
        hard_seq=hard_seq,
        names=frozenset(stem(t.norm.replace("'", "")) for i, t in enumerate(toks) if t.capital and t is not first and i not in nouns),
        opener=_opener(first, bodied),
        capitals=frozenset(stem(t.norm.replace("'", "")) for t in toks if t.capital),
        single=bool(lists["single"]),
        multi=bool(lists["multi"]),
        hedged=bool(lists["hedge"]),
        raw=tuple(raw),
        spaceless=bool(words) and all(t.kind == CHAR for t in toks if t.kind in (WORD, CHAR)),
        caseless=is_caseless(expanded) and not any(t.capital for t in toks),
        word_clauses=tuple(clause_of[i] for i in word_raw),
        word_parens=tuple(paren_of[i] for i in word_raw),
        word_raw=tuple(word_raw),
    )


def split_sentences(text: str) -> list[str]:
    """Split a note into its sentences (any script), each stripped, empty pieces removed."""
    return list(sentences(text))


# --- does one sentence state another ----------------------------------------------------------

PREPOSITIONS = frozenset(
    """in on at of with by for from to into onto over under near behind beside between through across
    around along against about off out up down""".split()
)
CONJUNCTIONS = frozenset({"and", "but", "or", "nor", "while", "yet"})
#: stemmed, like the words they are compared with ("sometimes" -> "sometime")
EPISTEMIC_HEDGES = frozenset({"maybe", "perhap", "probably", "possibly", "might"})
VALUE_HEDGES = EPISTEMIC_HEDGES | {"sometime", "occasionally", "also", "too", "either", "both", "if", "unless"}
TENSE_MODAL_WORDS = frozenset(
    stem(word)
    for word in """was were did had will would could should shall may might must can used formerly
    previously once until before after if unless when only almost nearly hardly barely rarely seldom
    fake toy former ex""".split()
) | VALUE_HEDGES
#: words that restrict or shift what a sentence states, in the languages the lexicon covers: a
#: sentence that adds one of them does not state the shorter one ("in the evening", "nur montags",
#: "平日だけ", "только утром")
_OTHER_RESTRICTIVE = frozenset(
    stem(t.norm)
    for entry in """
    in, an, auf, für, mit, bei, außer, nur, wenn, aber, am, im, um, ab, bis, war, waren, hatte, früher, ehemals,
    en, con, para, por, sin, excepto, solo, sólo, cuando, si, pero, era, fue, estaba, antes,
    à, au, aux, avec, pour, par, sans, sauf, seulement, uniquement, quand, mais, était, avant,
    在, 于, 只, 仅, 除, 如果, 但, 时, 曾, 以前, 过,
    で, に, 時, だけ, のみ, 以外, なら, 場合, 以前, かつて, でした, 前,
    в, на, с, для, по, кроме, только, когда, если, но, был, была, были, раньше,
    في, على, مع, الا, فقط, عندما, اذا, لكن, كان, كانت, سابقا
    """.replace("\n", ",").split(",") if entry.strip()
    for t in tokens(entry.strip())
)
RESTRICTIVE_WORDS = (
    PREPOSITIONS
    | TENSE_MODAL_WORDS
    | frozenset(stem(word) for word in "except but while during per each usually often mostly generally typically".split())
    | _OTHER_RESTRICTIVE
    | frozenset(w for e in lexicon.HEDGE_ENTRIES.entries for w in e.words)
)
_PERSON_WORDS = frozenset(stem(word) for word in "person people man men woman women boy girl child children kid lady guy user".split())


def _names(general: str, specific: str) -> bool:
    return general == specific or (general == "someone" and specific in _PERSON_WORDS)


def alignment(general: Sequence[str], specific: Sequence[str], same: Callable[[str, str], bool] = _names) -> Optional[list[int]]:
    """Return the leftmost positions of `general`'s words in `specific`, in order, or None.

    By default "someone" (what "nobody" / "no one" deny) also matches any word for a person.
    """
    positions, start = [], 0
    for word in general:
        match = next((i for i in range(start, len(specific)) if same(word, specific[i])), None)
        if match is None:
            return None
        positions.append(match)
        start = match + 1
    return positions


def covers(kept: Sentence, candidate: Sentence) -> bool:
    """Say whether `kept` already states `candidate`.

    Every word of `candidate` must appear in `kept`, in order, and what `kept` adds must not
    restrict or shift it (no preposition, condition, tense, modal, frequency or hedge word):
    "prefers dark mode in the evening" does not state "prefers dark mode".
    """
    if not candidate.words or kept.negations != candidate.negations:
        return False
    if candidate.negations:
        # negation reverses entailment: a negated sentence is only stated by the same words
        return kept.signed == candidate.signed
    positions = alignment(candidate.signed, kept.signed)
    if positions is None:
        return False
    matched = set(positions)
    added = {word for index, word in enumerate(kept.signed) if index not in matched}
    return not added & RESTRICTIVE_WORDS


def terminated(text: str) -> str:
    """Return one sentence with single spaces, ending in a full stop unless it ends in . ! ? or 。"""
    text = " ".join(text.split())
    return text if text.endswith((".", "!", "?", "。", "؟")) else text.rstrip(",;:、，") + ("。" if analyse(text).spaceless else ".")


# --- the retention test: does a sentence state a fact ------------------------------------------

_FIRST_PERSON = re.compile(r"\b(i|me|my|mine|myself)\b", re.I)


def statement(text: str) -> tuple[str, ...]:
    """Return a sentence as the retention test compares it: signed words, the first person read as "user"."""
    words = analyse(_FIRST_PERSON.sub(lambda m: "user's" if m.group(0).lower() in ("my", "mine") else "user", text)).signed
    return tuple("have" if w == "has" else w for w in words)


def states(sentence: Sequence[str], fact: Sequence[str]) -> bool:
    """Say whether `sentence` states `fact`: its words in order, no extra negation inside the span."""
    positions = alignment(fact, sentence, str.__eq__) if fact else None
    if positions is None:
        return False
    matched = set(positions)
    return not any(sentence[i] == NOT and i not in matched for i in range(positions[0], positions[-1] + 1))
