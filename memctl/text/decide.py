"""The decision layer: one notion of "same fact", "conflicting value", "different subject" and
"complementary", for both LLM phases, in any language (DESIGN 4, "Decisions").

`decide(a, b)` compares two notes sentence by sentence. Two sentences are aligned on their
content words (memctl.text.statement; CJK characters are words here), and what differs between
them is read in this order:

1. Hard evidence. Numbers (any digit system), IDs, e-mail addresses and URLs that each side has
   and the other lacks name different subjects ("Account 1000 ..." / "Account 1009 ..."):
   `different_subject`, evidence "hard". One exception: when the two sentences share a template
   and differ only in one place, after the opening words (a third of the sentence, and at least
   the first two words), that place is a value ("budget is 500" / "budget is 700"): a
   `conflicting_value` with evidence "hard", which only a person may settle (review), never the
   authority rule. Names (capitalised words, in scripts with case) work the same way, except
   that a name in that one value place is an ordinary value ("home city is Paris" / "Lyon").
2. The subject place. A shared template whose first word differs ("Ana prefers tea" / "Bob
   prefers tea", "汤姆..." / "安娜...") is about different subjects (evidence "position"); two
   sentences without a shared template whose capitalised first words differ and name someone
   ("Globex ..." / "Initech ...") likewise (evidence "opener").
3. Negation: the same words with a negation on one side only ("likes email" / "does not like
   email", "好む" / "好まない"): a certain `conflicting_value` (kind "negation").
4. Values. Members of different groups of one exclusive set (weekly / monthly, 毎週 / 毎月,
   metric / imperial), the English attribute patterns (memctl.text.english), or one word
   replaced in a shared template next to a single-valued cue ("prefers", "bevorzugt", "想要"):
   a certain `conflicting_value`, which the authority rule settles. One word replaced next to a
   multi-valued cue ("likes tea" / "likes coffee", "speaks German" / "speaks French") is
   `complementary`. One word replaced with no cue is a `conflicting_value` that is not certain:
   a person settles it (review). A hedge on either side ("usually", "vielleicht") makes no
   value certain.
5. Wording. Punctuation, case, filler and adverbs are gone before the comparison; synonyms of
   one group, inflections of one word (a long shared beginning), kana-only differences
   (particles and verb endings), swapped prepositions and moved words are wordings of the same
   fact. Words added on one side only are an `elaboration` (it states more).

Notes: a note whose every sentence the other states is the same fact or an elaboration of it,
whatever else the other says. Otherwise the strongest sentence-level finding decides: different
subjects on hard evidence or names, then a conflict, then other subjects, then complementary.

Who uses what (the contract of DESIGN 4):
- Offline (no model) consolidation merges only notes that are the same fact, an elaboration,
  or complementary statements about one subject that share no template; everything else is kept
  apart, and a pair kept apart as a conflicting value goes to the contradiction phase, whose
  offline judge reads this same decision (certain: authority rule; not certain: review).
- With a model, the model decides: consolidation keeps apart only notes whose hard evidence or
  subject names differ, and then verifies the synthesis (`synthesis_problem`).
- Any judge's contradiction verdict between notes that name different subjects (hard evidence,
  names, a different subject place) is never applied; between notes that differ in a hard value
  it is only flagged for review (`verdict_guard`).
- Any judge's absorption "yes" (a broader or a merged note states every fact of another) is not
  applied when the other note holds hard evidence the broader one lacks, or the two name different
  subjects (`absorption_veto`).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, replace
from difflib import SequenceMatcher
from functools import lru_cache
from typing import Callable, Iterable, Optional, Sequence, TypeVar

from memctl.text import english, lexicon
from memctl.text.statement import NOT, PREPOSITIONS, TENSE_MODAL_WORDS, Sentence, analyse, covers, split_sentences, stem, verb_base
from memctl.text.tokens import CHAR, WORD, same_text_key, tokens

T = TypeVar("T")

SAME = "same_fact"
ELABORATION = "elaboration"
CONFLICT = "conflicting_value"
DIFFERENT = "different_subject"
COMPLEMENTARY = "complementary"

#: a template shared by two sentences: this share of the longer one's words in common, in order
TEMPLATE_SHARE = 0.5
TEMPLATE_MIN_WORDS = 2
#: a value place holds at most this many words a side (characters, in scripts without spaces)
VALUE_WORDS = 3
VALUE_CHARS = 4
#: the opening of a sentence, where its subject is named: this many words (characters without spaces) or a third
OPENING_WORDS = 3
OPENING_CHARS = 6
#: two words sharing a beginning this long (and this share of the shorter) are one word inflected;
#: a word that begins another one and is at most 2/3 as long is its abbreviation
INFLECTION_PREFIX = 4
INFLECTION_SHARE = 0.6
CERTAIN_CONFIDENCE = 0.9
UNCERTAIN_CONFIDENCE = 0.75

#: prepositions swapped by a paraphrase ("as a spreadsheet" / "in spreadsheet form")
_LINKS = PREPOSITIONS | {"as"}
_HIRAGANA = range(0x3040, 0x30A0)


@dataclass(frozen=True)
class Decision:
    """What two notes (or sentences) are to each other, and why."""

    relation: str
    reason: str
    #: for a conflict: "negation" or "competing_value"
    kind: str = ""
    #: the attribute and the two values of a conflict or a complementary pair
    slot: str = ""
    values: tuple[str, str] = ("", "")
    #: a conflict the authority rule may settle (False: only a person may)
    certain: bool = False
    #: what a different subject or a conflict rests on: "hard", "name", "position", "opener", "rule", "template", ""
    evidence: str = ""
    #: the two share a template (most of their words, in order)
    template: bool = False
    confidence: float = 0.0
    #: the two sentences the finding is about
    sentences: tuple[str, str] = ("", "")

    @property
    def hard(self) -> bool:
        """Rests on hard evidence: numbers, IDs, e-mails, URLs (or names in a subject's place)."""
        return self.evidence in ("hard", "name")


def _value(words: Sequence[str]) -> str:
    return " ".join(w for w in words if w != NOT)


def _joined(words: Sequence[str], spaceless: bool) -> str:
    return lexicon.join(words) if spaceless else " ".join(words)


def _inflection(left: Sequence[str], right: Sequence[str]) -> bool:
    """Say whether two one-word places are one word inflected ("prefiere" / "prefieren", "Bericht" / "Berichte")."""
    if len(left) != 1 or len(right) != 1:
        return False
    a, b = left[0], right[0]
    if any(c.isdigit() for c in a + b):
        return False  # "2026-03-11" / "2026-03-10" are two values, however alike
    if verb_base(a) == verb_base(b):
        return True  # "get" / "getting"
    short, long = sorted((a, b), key=len)
    if len(short) >= 3 and long.startswith(short) and len(long) >= 1.5 * len(short):
        return True  # an abbreviation ("Abo" / "Abonnement", "サブスク" / "サブスクリプション")
    shared = 0
    for x, y in zip(a, b):
        if x != y:
            break
        shared += 1
    return shared >= INFLECTION_PREFIX and shared >= INFLECTION_SHARE * min(len(a), len(b))


def _kana(words: Sequence[str]) -> bool:
    return bool(words) and all(len(w) == 1 and ord(w) in _HIRAGANA for w in words)


#: a difference in hiragana only, this short, after a kanji or katakana word, is grammar (a particle, a verb ending)
GRAMMAR_KANA = 3


def _grammar(left: Sequence[str], right: Sequence[str], before: str = "") -> bool:
    """Say whether a place differs only in a few hiragana after a kanji or katakana word: a particle or a verb
    ending ("は" / "が", "する" / "します"), a wording, not a value. Hiragana words ("おじいちゃん" /
    "おばあちゃん") and longer endings ("している" / "をやめた") are not."""
    if not (left or right) or len(left) > GRAMMAR_KANA or len(right) > GRAMMAR_KANA:
        return False
    if not ((_kana(left) or not left) and (_kana(right) or not right)):
        return False
    return bool(before) and not (len(before) == 1 and ord(before) in _HIRAGANA)


def _small(words: Sequence[str], spaceless: bool) -> bool:
    return len(words) <= (VALUE_CHARS if spaceless else VALUE_WORDS)


@dataclass
class _Place:
    left: tuple[str, ...]
    right: tuple[str, ...]
    i: int
    j: int


@lru_cache(maxsize=262144)
def compare(a: Sentence, b: Sentence) -> Decision:
    """Return what sentence `b` is to sentence `a` (see the module docstring)."""
    pair = (a.text, b.text)
    if not a.words or not b.words:
        return Decision(COMPLEMENTARY, "a sentence with no words", sentences=pair)
    if a.signed == b.signed:
        return Decision(SAME, "the same words", template=True, sentences=pair)
    x, y = a.words, b.words
    spaceless = a.spaceless or b.spaceless
    matcher = SequenceMatcher(a=x, b=y, autojunk=False)
    blocks = matcher.get_matching_blocks()
    common = sum(block.size for block in blocks)
    template = common >= TEMPLATE_MIN_WORDS and common >= TEMPLATE_SHARE * max(len(x), len(y))
    hedged = a.hedged or b.hedged

    # the English rules read the sentence as a whole (their attribute names and values)
    rule = english.find_conflict([a], [b]) if not hedged else None

    # --- hard evidence and names: which subject each sentence is about
    diff = _places(matcher, x, y, a, b)
    places, added, sides = diff.places, diff.added, diff.sides
    hard_a, hard_b = _hard_difference(a, b)
    differing = places + diff.additions
    hard_places = [p for p in differing if (set(p.left) | set(p.right)) & (a.hard | b.hard) or _next_to_hard(p, x, y, a, b)]
    if template and rule is None and any(_in_subject(p, x, y, a, b, "hard") for p in hard_places):
        shown = hard_a or hard_b or sorted({w for p in hard_places for w in p.left + p.right})
        return Decision(DIFFERENT, f"different subjects: {', '.join(hard_a or shown)} / {', '.join(hard_b or shown)}",
                        evidence="hard", template=True, sentences=pair)
    only_hard = all(set(p.left + p.right) <= a.hard | b.hard or _next_to_hard(p, x, y, a, b) for p in diff.additions)
    amended = not places and diff.additions and all(_next_to_hard(p, x, y, a, b) for p in diff.additions)
    if template and ((hard_a and hard_b) or amended) and (rule is not None or (len(places) == 1 and only_hard) or amended):
        hard_a, hard_b = hard_a or [lexicon.join(p.left) for p in diff.additions if p.left], hard_b or [lexicon.join(p.right) for p in diff.additions if p.right]
        va, vb = (rule.value_a, rule.value_b) if rule is not None else (", ".join(hard_a), ", ".join(hard_b))
        shown = rule.reason() if rule is not None else f'one template, different values: "{a.text}" / "{b.text}" ({va} / {vb})'
        return Decision(
            CONFLICT, f"{shown.rstrip('.')}; they differ in a number or ID, so only a person may settle it",
            kind="competing_value", slot=rule.attribute if rule else "value", values=(va, vb),
            certain=False, evidence="hard", template=template, confidence=UNCERTAIN_CONFIDENCE, sentences=pair,
        )
    if template and hard_a and hard_b:
        return Decision(DIFFERENT, f"different subjects: {', '.join(hard_a)} / {', '.join(hard_b)}", evidence="hard",
                        template=True, sentences=pair)
    # a name the other sentence opens with is no other subject ("... validé par Claire." / "Claire doit valider ...")
    names_a, names_b = a.names - b.capitals, b.names - a.capitals
    exclusive = lexicon.clash(a.raw, b.raw, True, True)
    if template and (names_a or names_b) and not (rule is not None and rule.kind == "competing_value") and not exclusive:
        named = [p for p in differing if (set(p.left) | set(p.right) | _within(names_a | names_b, p.left + p.right)) & (names_a | names_b)]
        single = len(places) == 1 and not diff.additions and named == places
        # a name that ends both sentences is a value even when something else changed ("lives in Lyon" / "moved to Bordeaux")
        ending = all(_ends(p, x, y) for p in named)
        if any(_in_subject(p, x, y, a, b, "name") for p in named) or (names_a and names_b and not single and not ending):
            return Decision(DIFFERENT, f"different subjects: {', '.join(sorted(names_a))} / {', '.join(sorted(names_b))}",
                            evidence="name", template=True, sentences=pair)
    # words on both sides only ("from sales" / "from the legal department") differ like a replaced place
    both = diff.additions if len(sides) == 2 else []
    subject = next((p for p in places + both if _in_subject(p, x, y, a, b, "plain")), None) or next(
        (p for p in diff.inflected if _in_subject(p, x, y, a, b, "inflected")), None)
    if template and subject is not None and rule is None and not exclusive:
        return Decision(DIFFERENT, f"different subjects: {_joined(subject.left, spaceless)} / {_joined(subject.right, spaceless)}",
                        evidence="position", template=True, sentences=pair)
    related = bool(set(_content_index(x, len(x))) & set(_content_index(y, len(y))) - a.hard - b.hard)
    if not template and rule is None and related:
        open_a, open_b = opening_hard(a) - b.hard, opening_hard(b) - a.hard
        if open_a or open_b:  # "Проект «Орбита»" / "Проект «Орбита-2»": one names what the other does not
            return Decision(DIFFERENT, f"different subjects: {', '.join(sorted(open_a)) or '(none)'} / {', '.join(sorted(open_b)) or '(none)'}",
                            evidence="hard", sentences=pair)
    # two capitalised first words name two subjects ("Globex ..." / "Initech ...", "Sofía, la hija ..." / "Bruno, el hijo ..."),
    # unless each is only a capital by position: a word the other sentence uses too ("Formule de l'abonné" / "L'abonné ... la formule")
    if (not template and a.opener and b.opener and a.opener != b.opener and rule is None
            and a.opener not in b.words and b.opener not in a.words):
        return Decision(DIFFERENT, f"different subjects: {a.opener} / {b.opener}", evidence="opener", sentences=pair)

    # --- negation
    if (a.negations == 0) != (b.negations == 0):
        if hedged:
            return Decision(COMPLEMENTARY, "a hedged statement and a denial", template=template, sentences=pair)
        # the same words but for the negation; the denying side may add words ("no longer ...
        # anymore", "keine Berichte mehr"), the affirming side may not (it would be narrower)
        denying = "a" if a.negations else "b"
        # in Japanese the verb ending changes around the negation ("受け取っている" / "受け取らなくなった"): hiragana aside
        kana_free = [p for p in places if not (_kana(p.left) and _kana(p.right))]
        additions = [p for p in diff.additions if not _kana(p.left + p.right)]
        sides = {"a" if p.left else "b" for p in additions}
        extra = {w for p in additions for w in p.left + p.right} if not kana_free and sides <= {denying} else None
        if x == y or (rule is not None and rule.kind == "negation") or (extra is not None and extra <= lexicon.NEGATION_COMPANIONS):
            reason = rule.reason() if rule is not None else f'Negation of the same statement: "{a.text}" vs "{b.text}".'
            return Decision(CONFLICT, f"conflicting values: {reason}", kind="negation", slot="statement", values=pair, certain=True,
                            evidence="rule", template=True, confidence=english.NEGATION_CONFIDENCE, sentences=pair)
        unsure = _unsure(a, b, denying=a if a.negations else b)
        if unsure is not None:  # "wants push notifications for every message" / "no longer wants push notifications"
            return replace(unsure, kind="negation")
        return Decision(COMPLEMENTARY, "a denial of something else", template=template, sentences=pair)
    # --- exclusive values, then the English attribute patterns
    single = a.single or b.single
    multi = (a.multi or b.multi) and not single
    clash = lexicon.clash(a.raw, b.raw, a.single, b.single) if not hedged and not multi else None
    if clash is not None and _another_place(places, clash[1:]):
        clash = None  # a second slot differs too ("email for invoices" / "phone calls for support")
    if rule is not None and (clash is None or rule.attribute != "preference"):
        return Decision(CONFLICT, f"conflicting values: {rule.reason()}", kind=rule.kind, slot=rule.attribute,
                        values=(rule.value_a, rule.value_b), certain=True, evidence="rule", template=template,
                        confidence=rule.confidence, sentences=pair)
    if clash is not None:
        attribute, va, vb = clash
        reason = f'Competing values for the single-valued attribute "{attribute}": "{va}" vs "{vb}" ("{a.text}" / "{b.text}").'
        return Decision(CONFLICT, f"conflicting values: {reason}", kind="competing_value", slot=attribute, values=(va, vb),
                        certain=True, evidence="rule", template=template, confidence=CERTAIN_CONFIDENCE, sentences=pair)

    # --- roles swapped: the same words in another order, no clause moved whole
    free_a, free_b = _free(a), _free(b)
    xs, ys = [w for w in x if w not in free_a], [w for w in y if w not in free_b]
    swapped = SequenceMatcher(a=xs, b=ys, autojunk=False).get_matching_blocks() if xs and sorted(xs) == sorted(ys) and xs != ys else None
    if swapped and (max(block.size for block in swapped) <= len(xs) / 2 or (xs[0] == ys[-1] and xs[-1] == ys[0] != xs[0])):
        return Decision(CONFLICT, f'one template, different values: "{a.text}" / "{b.text}" (the same words in another order)',
                        kind="competing_value", slot="roles", values=(" ".join(x), " ".join(y)), evidence="template",
                        template=True, confidence=UNCERTAIN_CONFIDENCE, sentences=pair)

    if not template:
        return _unsure(a, b) or Decision(COMPLEMENTARY, "different statements", sentences=pair)
    if not places and len(sides) < 2:
        if added:
            return Decision(ELABORATION, f'"{b.text}" and "{a.text}": one adds to the other', template=True, sentences=pair)
        return Decision(SAME, "the same fact in other words", template=True, sentences=pair)
    if hedged:
        return Decision(COMPLEMENTARY, "a hedged statement", template=True, sentences=pair)
    if len(places) == 1:
        place = places[0]
        va, vb = _joined(place.left, spaceless), _joined(place.right, spaceless)
        shown = f'one template, different values: "{a.text}" / "{b.text}" ({va} / {vb})'
        # two phrases with no word in common name two attributes ("dark mode" / "short answers"); characters are not words
        named = set(place.left + place.right) <= a.capitals | b.capitals
        distinct = spaceless or named or not (len(place.left) > 1 and len(place.right) > 1 and not set(place.left) & set(place.right))
        if _small(place.left, spaceless) and _small(place.right, spaceless) and distinct and not (added and not single):
            if multi:
                return Decision(COMPLEMENTARY, f"{shown}: both can hold, both kept", slot="value", values=(va, vb), template=True,
                                sentences=pair)
            if single:
                return Decision(CONFLICT, shown, kind="competing_value", slot="value", values=(va, vb), certain=True,
                                evidence="template", template=True, confidence=english.PREFERENCE_CONFIDENCE, sentences=pair)
            # two names in the one place ("call Ana" / "call Inés", "Javier Martín" / "Javier Marín"; not acronyms
            # such as "EU" / "US", "CET" / "PST") may be two
            # people as well as two values: evidence "named", so no judge's verdict settles it by the rule (a model
            # may still merge them: German capitalises every noun, and its synthesis is checked for two values)
            person = set(place.left + place.right) <= _titled(a.text) | _titled(b.text)
            return Decision(CONFLICT, f"{shown}; no rule says the value is single, so only a person may settle it",
                            kind="competing_value", slot="value", values=(va, vb), evidence="named" if person else "template",
                            template=True, confidence=UNCERTAIN_CONFIDENCE, sentences=pair)
    return _unsure(a, b) or Decision(COMPLEMENTARY, f'one template, several words differ: "{a.text}" / "{b.text}"', evidence="template",
                    template=True, sentences=pair)


@dataclass
class _Diff:
    """Where two aligned sentences differ: value places, one word inflected, and words added on one side."""

    places: list[_Place]
    #: a word replaced by an inflection or abbreviation of itself ("prefiere" / "prefieren"): a wording,
    #: unless it is where the subject is named ("mweber" / "mwebert", "Faro" / "Farola")
    inflected: list[_Place]
    #: words on one side only, as places with an empty other side
    additions: list[_Place]

    @property
    def added(self) -> list[tuple[str, ...]]:
        return [p.left or p.right for p in self.additions]

    @property
    def sides(self) -> set[str]:
        return {"a" if p.left else "b" for p in self.additions}


def _places(matcher: SequenceMatcher, x: Sequence[str], y: Sequence[str], a: Sentence, b: Sentence) -> _Diff:
    """Return where two aligned sentences differ, wordings (synonyms, particles, moved words) left out."""
    diff = _Diff([], [], [])
    sx, sy = set(x), set(y)
    names = a.capitals | b.capitals
    free_a, free_b = _free(a), _free(b)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            continue
        left = tuple(w for w in x[i1:i2] if w not in free_a)
        right = tuple(w for w in y[j1:j2] if w not in free_b)
        if not left and not right:
            continue  # a determiner or possessive swapped ("each" / "every", "his" / "the")
        previous = x[i1 - 1] if i1 else ""
        if left and right:
            if lexicon.synonyms(left, right) or _grammar(left, right, previous):
                continue
            verbs = (tuple(w for w in left if w not in _LINKS), tuple(w for w in right if w not in _LINKS))
            if len(left) + len(right) == 3 and len(verbs[0]) == len(verbs[1]) == 1 and verb_base(verbs[0][0]) == verb_base(verbs[1][0]):
                continue  # "to get" / "getting": one verb
            if _inflection(left, right):
                # names are not inflected forms of each other ("Ana" / "Anja", "Faro" / "Farola")
                (diff.places if set(left) & names or set(right) & names else diff.inflected).append(_Place(left, right, i1, j1))
                continue
            if set(left) | set(right) <= _LINKS:
                continue
            if set(left) - _LINKS <= sy and set(right) - _LINKS <= sx:
                continue  # words that moved ("every Friday ... by email" / "email ... every Friday")
            diff.places.append(_Place(left, right, i1, j1))
            if _inflection(left[:1], right[:1]) and not (set(left[:1]) | set(right[:1])) & names:
                diff.inflected.append(diff.places[-1])  # "jlopez" / "jlopezm solo": an identifier changed, for the subject check
        else:
            words = left or right
            other = sy if left else sx
            if set(words) <= other or (_kana(words) and _grammar(left, right, previous)) or set(words) <= _LINKS:
                continue  # moved, a particle, a preposition
            diff.additions.append(_Place(left, right, i1, j1))
    return diff


@lru_cache(maxsize=65536)
def _titled(text: str) -> frozenset[str]:
    """Return the words `text` writes with a capital and then small letters ("Ana", "Martín"; not "EU"), as compared."""
    return frozenset(w for t in tokens(text) if t.capital and not t.text.isupper() for w in (t.norm, stem(t.norm)))


@lru_cache(maxsize=65536)
def _piece_names(piece: str) -> frozenset[str]:
    """Return the words of one sentence that read as names: a Titlecase word after the first ("Ana",
    not "EU"), and a word in another script than the sentence's ("ppetrov" in Russian, "Slack" in Japanese)."""
    words = [t for t in tokens(piece) if t.kind in (WORD, CHAR)]
    scripts = [_script(t.text) for t in words]
    main = max(set(scripts), key=scripts.count) if scripts else None
    return frozenset(t.norm for i, (t, script) in enumerate(zip(words, scripts))
                     if (t.capital and i > 0 and not t.text.isupper()) or (t.kind == WORD and script != main))


def _numbers(note: NoteText) -> frozenset[str]:
    """Return a note's hard evidence with a unit written onto a number dropped ("30-day", "3pm" read as 30, 3;
    IDs such as "QX7P2L", dates such as "02.09.2024", e-mails and URLs as they are)."""
    return frozenset(m.group(1) if (m := _UNIT_ON_NUMBER.match(h)) else h for h in note.hard)


_UNIT_ON_NUMBER = re.compile(r"^(\d+)(?:-[^\W\d_]{2,}|[^\W\d_]+)$")  # "30-day", "3pm", "14h"; not "88-A"


def _name_words(note: NoteText) -> frozenset[str]:
    return frozenset().union(*(_piece_names(p) for p in note.pieces)) if note.pieces else frozenset()


def _script(word: str) -> str:
    """Return the Unicode script of a word's first letter, from its character name ("LATIN", "CYRILLIC", "CJK"...)."""
    letter = next((c for c in word if c.isalpha()), "")
    name = unicodedata.name(letter, "") if letter else ""
    return name.split(" ", 1)[0] if name else ""


def _free(sentence: Sentence) -> frozenset[str]:
    """Return the words a wording of `sentence` swaps freely: its language's determiners and possessives, none written with a capital ("CET")."""
    return lexicon.free_words(sentence.raw) - sentence.capitals


def _anchors(sentence: Sentence) -> list[str]:
    """Return the words that say what a sentence is about besides its subject: no opener, cue, hedge or function word."""
    words = [w for w in sentence.words if w not in lexicon.FREE_WORDS and w not in lexicon.FUNCTION_WORDS]
    return [w for w in words[1:] if w not in lexicon.OPENER_WORDS and not lexicon.cue(w)]


def _unsure(a: Sentence, b: Sentence, denying: Optional[Sentence] = None) -> Optional[Decision]:
    """Return an uncertain conflict when two sentences say different things about one subject and one attribute.

    "The customer's plan is Basic." / "Customer upgraded; their plan is Premium.", "Lucía drinks
    coffee." / "Lucía has stopped drinking coffee.": the same first word, another word in common
    (inflections and abbreviations count), and words of its own on each side. Without a model
    nothing tells a new value in other words from a second fact, so a person decides (review).
    """
    if a.hedged or b.hedged or not a.words or not b.words or opening_hard(a) ^ opening_hard(b):
        return None
    same_subject = a.words[0] == b.words[0] or (_inflection_or_same(a.words[0], b.words[0]) and a.words[0] not in a.capitals)
    if (a.caseless or b.caseless) and len(a.words) > 1 and len(b.words) > 1:
        same_subject = same_subject or a.words[1] == b.words[1]  # verb first (Arabic): the subject comes second
    anchors_a, anchors_b = _anchors(a), _anchors(b)
    if not same_subject:
        # the subject is named elsewhere in one of them ("The plan of the customer is Basic." / "The customer moved to Premium."):
        # two words in common, whatever their place
        anchors_a, anchors_b = [w for w in a.words if w not in lexicon.FUNCTION_WORDS and w not in lexicon.FREE_WORDS and not lexicon.cue(w)], [
            w for w in b.words if w not in lexicon.FUNCTION_WORDS and w not in lexicon.FREE_WORDS and not lexicon.cue(w)]
    shared = [w for w in anchors_a if any(_inflection_or_same(w, v) for v in anchors_b)]
    if not same_subject and len(shared) < 2:
        return None
    if same_subject and not shared and (lexicon.changes(a.raw) or lexicon.changes(b.raw)):
        # "lives in Lisbon" / "has moved to Porto": a change said of the same subject supersedes something
        return Decision(
            CONFLICT, f'one subject, and one note says it changed: "{a.text}" / "{b.text}"; only a person may say what it replaced',
            kind="temporal_supersession", slot="change", values=(a.text, b.text), evidence="unsure", confidence=UNCERTAIN_CONFIDENCE,
            sentences=(a.text, b.text),
        )
    own_a = [w for w in anchors_a if not any(_inflection_or_same(w, v) for v in anchors_b)]
    own_b = [w for w in anchors_b if not any(_inflection_or_same(w, v) for v in anchors_a)]
    if denying is not None:
        # a denial of (a broader form of) the other statement: the denying side adds nothing of
        # its own, and the affirming side adds no tense or modal word ("was in Paris")
        own, affirming = (own_a, b) if denying is a else (own_b, a)
        narrower = set(affirming.words) - set(denying.words)
        if not shared or not set(own) <= lexicon.NEGATION_COMPANIONS or narrower & TENSE_MODAL_WORDS:
            return None
    elif not shared or not own_a or not own_b:
        return None
    return Decision(
        CONFLICT, f'one subject, one attribute ({lexicon.join(shared[:3])}), other words: "{a.text}" / "{b.text}"; the rules cannot '
        "tell a new value from a second fact, so only a person may settle it", kind="competing_value", slot=lexicon.join(shared[:3]),
        values=(lexicon.join(own_a[:3]), lexicon.join(own_b[:3])), evidence="hard" if a.hard ^ b.hard else "unsure",
        confidence=UNCERTAIN_CONFIDENCE, sentences=(a.text, b.text),
    )


def _inflection_or_same(a: str, b: str) -> bool:
    return a == b or _inflection([a], [b])


def _another_place(places: Sequence[_Place], values: Sequence[str]) -> bool:
    """Say whether a replaced place holds none of the clashing values (a second slot that differs)."""
    words = {w for value in values for w in value.split()} | {c for value in values for c in value if not c.isspace()}
    return any(not (set(p.left) | set(p.right)) & words for p in places)


def opening_hard(sentence: Sentence) -> frozenset[str]:
    """Return the hard evidence a sentence names in its opening words: what it is about ("Account 1000 ...")."""
    words = sentence.words
    reach = max(OPENING_CHARS if sentence.spaceless else OPENING_WORDS, len(words) / 3)
    return frozenset(w for i, w in enumerate(words) if i < reach and w in sentence.hard)


def _content_index(words: Sequence[str], end: int) -> list[str]:
    return [w for w in words[:end] if w not in lexicon.FREE_WORDS and w not in lexicon.FUNCTION_WORDS]


#: Japanese particles that close the topic or subject of a sentence
_TOPIC_PARTICLES = frozenset({"は", "が"})


def _in_subject(place: _Place, x: Sequence[str], y: Sequence[str], a: Sentence, b: Sentence, kind: str = "plain") -> bool:
    """Say whether a differing place lies in what the sentences are about rather than in what they say of it.

    `kind` is what differs there: "hard" (a number, ID, e-mail, URL or date), "name", "inflected"
    (one word with another ending: "mweber" / "mwebert") or "plain". On either side the place is
    the subject when it opens the sentence (an inflected word there is rather a verb: "Incluye" /
    "No incluyas"), or when:
    - hard: the word right before it names a subject ("Account 1000", "the website store.zahra.ae",
      "账户1000") and is in the same clause; "has 12 seats", "Budget: 1,200 €" are values;
    - name, inflected: only generic subject words ("user", "account", "the room") and names come
      before it ("Lucía Fernández" / "Lucía Hernández", "user mweber" / "user mwebert");
    - plain: it qualifies a name, in parentheses or after a preposition ("Maria Lopez (sales)",
      "Наталья Козлова из отдела продаж");
    - in Japanese, it comes before the topic particle (は, が); in Chinese, it lies in the first
      quarter with no honorific ("女士") closing a name before it; in a script without capitals
      (Arabic), in the first third: names cannot be seen there, so the opening words must do.
    A place that ends the sentence is a value on that side ("prefers tea" / "prefers coffee", "the
    owner is Omar Haddad" / "Chloe Martin").
    """
    for words, start, length, sentence in ((x, place.i, len(place.left), a), (y, place.j, len(place.right), b)):
        if not length and kind == "plain":
            continue
        before = _content_index(words, start)
        if not before:
            if kind == "inflected":
                continue  # one word inflected where the sentence opens is a verb ("Incluye" / "No incluyas")
            return True
        after = words[start + length:]
        if not [w for w in after if w not in lexicon.FREE_WORDS and w not in lexicon.FUNCTION_WORDS]:
            continue  # it ends the sentence: a value, on this side
        if any(w in _TOPIC_PARTICLES for w in words):
            if place.left and place.right and any(w in _TOPIC_PARTICLES for w in after) and not any(w in _TOPIC_PARTICLES for w in words[:start]):
                return True
            continue
        generic = all(w in lexicon.OPENER_WORDS or lexicon.subject_noun(w) for w in before)
        named = all(w in lexicon.OPENER_WORDS or lexicon.subject_noun(w) or w in sentence.capitals for w in before)
        if kind == "hard":
            # the word right before it, filler included ("Account 1000" names; "is 150", "has 12", "Budget: 3" give a value)
            at = sentence.word_raw[start] if start < len(sentence.word_raw) else len(sentence.raw)
            previous = sentence.raw[at - 1] if at else ""
            same_clause = start < len(sentence.word_clauses) and sentence.word_clauses[start - 1] == sentence.word_clauses[start]
            if same_clause and (lexicon.subject_noun(previous) or stem(previous) in sentence.names):
                return True
            if sentence.spaceless and lexicon.ends_with_subject_noun("".join(before)):
                return True
            continue
        if kind in ("name", "inflected") and (generic or named):
            return True
        # a qualifier of a name: in parentheses, or led by a preposition ("Maria Lopez (sales)", "Козлова из отдела продаж")
        qualifier = start < len(sentence.word_parens) and sentence.word_parens[start] or (start and words[start - 1] in lexicon.FUNCTION_WORDS)
        if kind == "plain" and named and qualifier and any(w in sentence.names for w in before):
            return True
        content = len(_content_index(words, len(words)))
        if sentence.spaceless and len(before) < content / 4 and not "".join(before).endswith(lexicon.HONORIFICS):
            return True
        if sentence.caseless and len(before) < content / 3:
            return True
    return False


def _next_to_hard(place: _Place, x: Sequence[str], y: Sequence[str], a: Sentence, b: Sentence) -> bool:
    """Say whether words added on one side stand right after a number ("7点" / "7点半", "at 7" / "at 7 sharp"): the number's value changed."""
    if place.left and place.right:
        return False
    words, at, hard = (x, place.i, a.hard) if place.left else (y, place.j, b.hard)
    # right after it, or after its one-character unit ("7点半", "3時半")
    return bool(at) and (words[at - 1] in hard or (at > 1 and words[at - 2] in hard and len(words[at - 1]) == 1))


def _ends(place: _Place, x: Sequence[str], y: Sequence[str]) -> bool:
    """Say whether a place ends both sentences (only function and free words after it)."""
    rest = list(x[place.i + len(place.left):]) + list(y[place.j + len(place.right):])
    return all(w in lexicon.FREE_WORDS or w in lexicon.FUNCTION_WORDS for w in rest)


def _hard_difference(a: Sentence, b: Sentence) -> tuple[list[str], list[str]]:
    """Return the numbers, IDs, e-mails and URLs each sentence names and the other does not (in order; swapped ones too)."""
    only_a = [h for h in a.hard_seq if h not in b.hard]
    only_b = [h for h in b.hard_seq if h not in a.hard]
    if not only_a and not only_b and a.hard_seq != b.hard_seq and sorted(a.hard_seq) == sorted(b.hard_seq):
        return list(a.hard_seq), list(b.hard_seq)  # the same numbers in another order ("3/5" / "5/3")
    return only_a, only_b


def _within(tokens: Iterable[str], words: Sequence[str]) -> set[str]:
    """Return the tokens found inside the words of a place (a stemmed name is inside its word)."""
    text = " ".join(words)
    return {t for t in tokens if t in text}


# --- notes --------------------------------------------------------------------------------------


class NoteText:
    """One note's sentences, analysed once (relative dates made absolute by `dated` when given)."""

    def __init__(self, text: str, dated: Optional[Callable[[str], str]] = None) -> None:
        pieces = tuple(dated(p) if dated else p for p in split_sentences(text))
        self.text = text
        self.pieces = pieces
        self.sentences = _analysis(pieces)
        self.key = same_text_key(" ".join(pieces))

    @property
    def hard(self) -> frozenset[str]:
        return frozenset().union(*(s.hard for s in self.sentences)) if self.sentences else frozenset()


@lru_cache(maxsize=16384)
def _analysis(pieces: tuple[str, ...]) -> tuple[Sentence, ...]:
    return tuple(analyse(p) for p in pieces)


def wording_key(note: NoteText) -> tuple[tuple[str, ...], ...]:
    """Return what two wordings of one fact share: each sentence's words, negations in place, once
    punctuation, case, filler and adverbs are set aside (equal keys: the same fact, `SAME`)."""
    return tuple(s.signed for s in note.sentences if s.words)


def _rank(d: Decision) -> int:
    """Order findings from the one that decides a note pair first: hard subjects, hard values, negations, values..."""
    if d.relation == DIFFERENT:
        return {"hard": 0, "name": 1, "position": 6, "opener": 7}.get(d.evidence, 8)
    if d.relation == CONFLICT:
        if d.evidence == "hard":
            return 2
        if d.certain:
            return 3 if d.kind == "negation" else 4
        return 5
    if d.relation == COMPLEMENTARY:
        return 9 if d.template else 10
    return 11


def decide(a: NoteText, b: NoteText) -> Decision:
    """Return what note `b` is to note `a`: one of SAME, ELABORATION, CONFLICT, DIFFERENT, COMPLEMENTARY."""
    key = (a.pieces, b.pieces)
    found = _DECISIONS.get(key)
    if found is None:
        if len(_DECISIONS) >= _DECISIONS_MAX:
            _DECISIONS.clear()
        found = _DECISIONS[key] = _decide(a, b)
    return found


_DECISIONS: dict[tuple[tuple[str, ...], tuple[str, ...]], Decision] = {}
_DECISIONS_MAX = 131072


def _decide(a: NoteText, b: NoteText) -> Decision:
    if a.key == b.key:
        return Decision(SAME, "the same text", template=True)
    if a.sentences and [s.signed for s in a.sentences] == [s.signed for s in b.sentences]:
        return Decision(SAME, "the same words (punctuation, case or filler aside)", template=True)
    sa = [s for s in a.sentences if s.words]
    sb = [s for s in b.sentences if s.words]
    if not sa or not sb:
        return Decision(COMPLEMENTARY, "a note with no words")
    b_in_a = all(any(states(x, y) for x in sa) for y in sb)
    a_in_b = all(any(states(y, x) for y in sb) for x in sa)
    if b_in_a and a_in_b:
        return Decision(SAME, "each note states every sentence of the other", template=True)
    if b_in_a or a_in_b:
        return Decision(ELABORATION, "one note states every sentence of the other", template=True)
    # each sentence is judged against the other note's sentences; one that the other note states
    # (the same fact) is settled, and its pairings with the other note's other sentences do not count
    findings = []
    shares = False
    for y in sb:
        found = [compare(x, y) for x in sa]
        settled = any(d.relation == SAME for d in found)
        shares = shares or settled
        findings += found if not settled else []
    for x in sa:
        found = [compare(x, y) for y in sb]
        if any(d.relation == SAME for d in found):
            findings = [d for d in findings if d.sentences[0] != x.text]
    findings = findings or [compare(x, y) for x in sa for y in sb]
    worst = min(findings, key=_rank)
    if worst.relation in (DIFFERENT, CONFLICT):
        return worst
    open_a = frozenset().union(*(opening_hard(s) for s in sa)) - b.hard
    open_b = frozenset().union(*(opening_hard(s) for s in sb)) - a.hard
    if open_a and open_b:
        return Decision(DIFFERENT, f"different subjects: {', '.join(sorted(open_a))} / {', '.join(sorted(open_b))}", evidence="hard")
    if (shares or any(d.relation in (SAME, ELABORATION) for d in findings)) and not any(d.template and d.relation == COMPLEMENTARY for d in findings):
        return Decision(ELABORATION, "the notes share a statement and add others", template=True)
    if worst.relation == COMPLEMENTARY and worst.template:
        return worst
    if not _same_opening(sa[0], sb[0]):
        return Decision(DIFFERENT, f'not one subject for certain: "{sa[0].text}" / "{sb[0].text}"', evidence="")
    return Decision(COMPLEMENTARY, "different statements about one subject")


def states(kept: Sentence, candidate: Sentence) -> bool:
    """Say whether `kept` states `candidate`: the same fact, or `candidate` contained in it with no other subject."""
    found = compare(kept, candidate)
    return found.relation == SAME or (found.relation == ELABORATION and covers(kept, candidate))


def _same_opening(a: Sentence, b: Sentence) -> bool:
    """Say whether two sentences open with the same word (inflected or not; the same two characters without spaces)."""
    width = 2 if (a.spaceless or b.spaceless) else 1
    return a.words[:width] == b.words[:width] or _inflection(a.words[:1], b.words[:1])


def mergeable(d: Decision) -> bool:
    """Say whether notes so related may share one merged note without a model (offline).

    Only wordings of one fact (and one note stating more of it). Two statements the rules call
    complementary may still be a value change in other words ("plan is Basic" / "upgraded to
    Premium", "smokes" / "stopped smoking"): without a model nothing tells them apart, so they
    stay two notes.
    """
    return d.relation in (SAME, ELABORATION)


def model_veto(d: Decision) -> bool:
    """Say whether notes so related must stay apart even when a model would merge them: hard evidence or subject names."""
    return d.hard and d.relation in (DIFFERENT, CONFLICT)


def incompatibility(a: NoteText, b: NoteText, model: bool = False) -> Optional[str]:
    """Return why two notes must not share a merged note, or None (offline rules; `model`: hard evidence only)."""
    d = decide(a, b)
    if model:
        if model_veto(d) and not (d.relation == CONFLICT and _numbers(a) == _numbers(b)):
            # a conflict read from the words around one and the same number or ID ("El pedido 40219 se envió
            # con SEUR." / "El pedido 40219 efectivamente se envió con SEUR.") is the model's to decide; its
            # synthesis is refused if it holds two values of one slot (synthesis_problem)
            return d.reason
        # "The timezone of Account 17 is EST." / "The timezone of Project Apollo is JST.": each names something
        # the other lacks, one of them a number or ID, so they may be two accounts' notes whatever the rules
        # read. A note that only adds to the other ("Ticket 4410 is about SSO." / "... SSO, reported at
        # 09:00") may be merged, and so may two that differ only in capitalised words (German nouns).
        hard_a, hard_b = _numbers(a) - _numbers(b), _numbers(b) - _numbers(a)
        only_a, only_b = hard_a | (_name_words(a) - _name_words(b)), hard_b | (_name_words(b) - _name_words(a))
        if only_a and only_b and (hard_a or hard_b):
            return f"each note names what the other does not, a number or ID among it ({', '.join(sorted(only_a))} / {', '.join(sorted(only_b))})"
        return None
    return None if mergeable(d) else d.reason


def compatible_groups(items: Sequence[T], text_of: Callable[[T], NoteText], model: bool = False) -> tuple[list[list[T]], list[str]]:
    """Split `items` into groups of mutually compatible notes, greedily in the order given.

    Returns the groups (largest first; ties keep the order of their first member) and the reasons
    notes were kept apart.
    """
    groups: list[list[T]] = []
    reasons: list[str] = []
    for item in items:
        text = text_of(item)
        for group in groups:
            problem = next((p for p in (incompatibility(text_of(g), text, model) for g in group) if p), None)
            if problem is None:
                group.append(item)
                break
            reasons.append(problem)
        else:
            groups.append([item])
    order = sorted(range(len(groups)), key=lambda i: (-len(groups[i]), i))
    return [groups[i] for i in order], reasons


def conflict(a: NoteText, b: NoteText) -> Optional[Decision]:
    """Return the decision when two notes hold conflicting values, else None."""
    d = decide(a, b)
    return d if d.relation == CONFLICT else None


# --- the guards around a judge's answers -----------------------------------------------------------


@dataclass(frozen=True)
class Guard:
    """What to do with a judge's contradiction verdict: apply it, flag it for review, or drop it."""

    action: str  # "apply" | "flag" | "veto" | "duplicate"
    reason: str = ""


def verdict_guard(a: NoteText, b: NoteText, rules_judge: bool = False) -> Guard:
    """Check a contradiction verdict between two notes against hard evidence (any judge's verdict).

    Notes that name different subjects (numbers, IDs, e-mails, URLs, names, a different subject
    place) are never made winner and loser: "veto". Notes that differ in a hard value are only
    flagged for review: "flag". The offline rules' own uncertain conflicts are flagged too
    (`rules_judge`). Two notes that state the same facts are "duplicate".
    """
    d = decide(a, b)
    if d.relation == SAME:
        return Guard("duplicate", d.reason)
    if d.relation == DIFFERENT and d.evidence in ("hard", "name", "position", "opener"):
        return Guard("veto", f"the notes name different subjects ({d.reason.removeprefix('different subjects: ')}), so neither replaces the other")
    if d.relation == CONFLICT and d.evidence == "hard":
        return Guard("flag", "the notes differ in a number or ID, so only a person may say which holds")
    if d.relation == CONFLICT and d.evidence == "named" and not d.certain:
        return Guard("flag", "the notes differ in a name that may be another person or thing, so only a person may say which holds")
    if not (d.relation == CONFLICT and d.certain):
        # no rule says these are two values of one single slot: a number, ID or name only one note holds may
        # be another account, person or thing ("Faro ... Ana Ruiz" / "Farola ... Diego Paz", "ppetrov" / "ppetrova")
        if a.hard ^ b.hard:
            return Guard("flag", "the notes differ in a number, ID or date and no rule says they are one slot, so only a person may say which holds")
        if _name_words(a) ^ _name_words(b):
            return Guard("flag", "the notes differ in a name that may be another person or thing, so only a person may say which holds")
    if rules_judge and not (d.relation == CONFLICT and d.certain):
        return Guard("flag", "no offline rule is sure the value is single, so only a person may say which holds")
    return Guard("apply")


def absorption_veto(broader: NoteText, narrower: NoteText) -> Optional[str]:
    """Check a judge's "the broader note states every fact of the narrower one" against hard evidence.

    Return why the "yes" must not be applied, or None: the narrower note holds hard evidence (a
    number in any digit system, an ID, e-mail, URL or date) the broader note does not state, or
    the two name different subjects or hold conflicting values by hard evidence.
    """
    lost = narrower.hard - broader.hard
    if lost:
        return f"the narrower note states {', '.join(sorted(lost))}, which the broader note does not"
    d = decide(broader, narrower)
    if model_veto(d):
        return d.reason
    return None


def synthesis_problem(content: str, sources: Sequence[NoteText], model: bool = False,
                      authority: Optional[Callable[[int, int], Optional[int]]] = None) -> Optional[str]:
    """Return why a merged note must be refused, or None.

    Refused: it loses a source's hard evidence (a number, ID, e-mail or URL some source states),
    it names hard evidence no source states, two of its sentences hold conflicting values (a
    source that already holds such a pair itself lets it keep it), it joins subjects no single
    source joins, or, when two sources hold a certain conflict, it does not keep the value the
    authority rule keeps (`authority(i, j)` -> the index of the winner, or None when it cannot
    decide; then the merge is refused and the pair is left for the contradiction phase).
    """
    merged = NoteText(content)
    own = merged.hard
    theirs = frozenset().union(*(s.hard for s in sources)) if sources else frozenset()
    lost = theirs - own
    if lost:
        return f"the synthesis loses {', '.join(sorted(lost))}, which a source states"
    invented = own - theirs
    if invented:
        return f"the synthesis names {', '.join(sorted(invented))}, which no source states"
    sentences = [NoteText(piece) for piece in merged.pieces]
    if not any(_inner_conflict(source) for source in sources):
        for i, x in enumerate(sentences):
            for y in sentences[i + 1:]:
                d = decide(x, y)
                if d.relation == CONFLICT:  # certain or not: a merged note holds one value per slot
                    return f"the synthesis states {d.reason}"
                if d.relation == DIFFERENT and d.hard and not any(_joins(s, x, y) for s in sources):
                    return f"the synthesis joins {d.reason}"
    if authority is not None:
        for i, s in enumerate(sources):
            for j in range(i + 1, len(sources)):
                d = decide(s, sources[j])
                if d.relation != CONFLICT or not d.certain:
                    continue
                winner = authority(i, j)
                if winner is None:
                    return f"two sources conflict and neither has authority ({d.reason}); left for the contradiction phase"
                loser = sources[j] if winner == i else sources[i]
                if any(decide(x, NoteText(t)).relation in (SAME, ELABORATION) for x in sentences for t in loser.pieces) or any(
                    decide(sources[winner], x).relation == CONFLICT for x in sentences
                ):
                    return f"the synthesis keeps a superseded value ({d.reason})"
    return None


def _joins(source: NoteText, x: NoteText, y: NoteText) -> bool:
    """Say whether one source already states both sentences' subjects (the merge joins nothing new)."""
    return x.hard <= source.hard and y.hard <= source.hard


def _inner_conflict(note: NoteText) -> bool:
    pieces = [NoteText(p) for p in note.pieces]
    return any(decide(x, y).relation == CONFLICT for i, x in enumerate(pieces) for y in pieces[i + 1:])


def hard_differences(notes: Iterable[NoteText]) -> list[str]:
    """Return the hard evidence tokens of every note (for messages and tests)."""
    return sorted(frozenset().union(*(n.hard for n in notes)))


__all__ = [
    "COMPLEMENTARY", "CONFLICT", "DIFFERENT", "Decision", "ELABORATION", "Guard", "NoteText", "SAME", "compare",
    "compatible_groups", "conflict", "decide", "incompatibility", "mergeable", "model_veto", "same_text_key",
    "synthesis_problem", "verdict_guard",
]
