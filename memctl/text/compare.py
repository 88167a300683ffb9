"""Two sentences compared: what the second is to the first (the same fact, an elaboration, a
conflicting value, a different subject or a complementary statement), and the evidence it rests
on. The rules are told in memctl/text/decide.py, which decides between notes from these findings."""

from __future__ import annotations

from dataclasses import dataclass, replace
from difflib import SequenceMatcher
from functools import lru_cache
from typing import Iterable, Optional, Sequence

from memctl.text import english, lexicon
from memctl.text.statement import PREPOSITIONS, TENSE_MODAL_WORDS, Sentence, stem, verb_base
from memctl.text.tokens import tokens

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
    sentences: tuple[str, str] = ("", "")

    @property
    def hard(self) -> bool:
        """Rests on hard evidence: numbers, IDs, e-mails, URLs (or names in a subject's place)."""
        return self.evidence in ("hard", "name")


def _joined(words: Sequence[str], spaceless: bool) -> str:
    return lexicon.join(words) if spaceless else " ".join(words)


def inflection(left: Sequence[str], right: Sequence[str]) -> bool:
    """Say whether two one-word places are one word inflected ("prefiere" / "prefieren", "Bericht" / "Berichte")."""
    if len(left) != 1 or len(right) != 1:
        return False
    a, b = left[0], right[0]
    if not (a + b).isalpha() and any(c.isdigit() for c in a + b):  # a letter is never a digit: most words skip the scan
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
    """Say whether a place differs only in a few hiragana after a kanji or katakana word: a particle or
    verb ending ("は" / "が", "する" / "します"), a wording, not a value."""
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
    """Return what sentence `b` is to sentence `a` (see memctl.text.decide's docstring).

    In order: which subject each sentence is about (hard evidence, names, position), a negation,
    exclusive values and the English attribute patterns, roles swapped, then one template's values.
    """
    if not a.words or not b.words:
        return Decision(COMPLEMENTARY, "a sentence with no words", sentences=(a.text, b.text))
    if a.signed == b.signed:
        return Decision(SAME, "the same words", template=True, sentences=(a.text, b.text))
    p = _pair(a, b)
    return _subjects(p) or _negation(p) or _exclusive(p) or _roles(p) or _values(p)


@dataclass
class _Pair:
    """Two sentences aligned word by word, with what every step of `compare` reads."""

    a: Sentence
    b: Sentence
    x: Sequence[str]
    y: Sequence[str]
    pair: tuple[str, str]
    spaceless: bool
    template: bool
    hedged: bool
    rule: Optional[english.Conflict]
    diff: "_Diff"
    hard_a: list[str]
    hard_b: list[str]

    @property
    def places(self) -> list[_Place]:
        return self.diff.places


def _pair(a: Sentence, b: Sentence) -> _Pair:
    x, y = a.words, b.words
    matcher = SequenceMatcher(a=x, b=y, autojunk=False)
    common = sum(block.size for block in matcher.get_matching_blocks())
    hedged = a.hedged or b.hedged
    hard_a, hard_b = _hard_difference(a, b)
    return _Pair(
        a, b, x, y, (a.text, b.text), a.spaceless or b.spaceless,
        template=common >= TEMPLATE_MIN_WORDS and common >= TEMPLATE_SHARE * max(len(x), len(y)),
        hedged=hedged,
        rule=english.find_conflict([a], [b]) if not hedged else None,  # the English rules read the sentence as a whole
        diff=_places(matcher, x, y, a, b), hard_a=hard_a, hard_b=hard_b,
    )


def _subjects(p: _Pair) -> Optional[Decision]:
    """Hard evidence and names: different subjects, or a number or ID only a person may settle."""
    a, b, x, y, diff, rule, template, pair = p.a, p.b, p.x, p.y, p.diff, p.rule, p.template, p.pair
    places, hard_a, hard_b = diff.places, p.hard_a, p.hard_b
    differing = places + diff.additions
    hard_places = [q for q in differing if (set(q.left) | set(q.right)) & (a.hard | b.hard) or _next_to_hard(q, x, y, a, b)]
    if template and rule is None and any(_in_subject(q, x, y, a, b, "hard") for q in hard_places):
        shown = hard_a or hard_b or sorted({w for q in hard_places for w in q.left + q.right})
        return Decision(DIFFERENT, f"different subjects: {', '.join(hard_a or shown)} / {', '.join(hard_b or shown)}",
                        evidence="hard", template=True, sentences=pair)
    only_hard = all(set(q.left + q.right) <= a.hard | b.hard or _next_to_hard(q, x, y, a, b) for q in diff.additions)
    amended = not places and diff.additions and all(_next_to_hard(q, x, y, a, b) for q in diff.additions)
    if template and ((hard_a and hard_b) or amended) and (rule is not None or (len(places) == 1 and only_hard) or amended):
        hard_a = hard_a or [lexicon.join(q.left) for q in diff.additions if q.left]
        hard_b = hard_b or [lexicon.join(q.right) for q in diff.additions if q.right]
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
        named = [q for q in differing if (set(q.left) | set(q.right) | _within(names_a | names_b, q.left + q.right)) & (names_a | names_b)]
        single = len(places) == 1 and not diff.additions and named == places
        # a name that ends both sentences is a value even when something else changed ("lives in Lyon" / "moved to Bordeaux")
        ending = all(_ends(q, x, y) for q in named)
        if any(_in_subject(q, x, y, a, b, "name") for q in named) or (names_a and names_b and not single and not ending):
            return Decision(DIFFERENT, f"different subjects: {', '.join(sorted(names_a))} / {', '.join(sorted(names_b))}",
                            evidence="name", template=True, sentences=pair)
    # words on both sides only ("from sales" / "from the legal department") differ like a replaced place
    both = diff.additions if len(diff.sides) == 2 else []
    subject = next((q for q in places + both if _in_subject(q, x, y, a, b, "plain")), None) or next(
        (q for q in diff.inflected if _in_subject(q, x, y, a, b, "inflected")), None)
    if template and subject is not None and rule is None and not exclusive:
        return Decision(DIFFERENT, f"different subjects: {_joined(subject.left, p.spaceless)} / {_joined(subject.right, p.spaceless)}",
                        evidence="position", template=True, sentences=pair)
    related = bool(set(_content_index(x)) & set(_content_index(y)) - a.hard - b.hard)
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
    return None


def _negation(p: _Pair) -> Optional[Decision]:
    """One sentence denies and the other does not: a negation of the same statement, or of something else."""
    a, b, rule, pair = p.a, p.b, p.rule, p.pair
    if (a.negations == 0) == (b.negations == 0):
        return None
    if p.hedged:
        return Decision(COMPLEMENTARY, "a hedged statement and a denial", template=p.template, sentences=pair)
    # the same words but for the negation; the denying side may add words ("no longer ...
    # anymore", "keine Berichte mehr"), the affirming side may not (it would be narrower)
    denying = "a" if a.negations else "b"
    # in Japanese the verb ending changes around the negation ("受け取っている" / "受け取らなくなった"): hiragana aside
    kana_free = [q for q in p.places if not (_kana(q.left) and _kana(q.right))]
    additions = [q for q in p.diff.additions if not _kana(q.left + q.right)]
    sides = {"a" if q.left else "b" for q in additions}
    extra = {w for q in additions for w in q.left + q.right} if not kana_free and sides <= {denying} else None
    if p.x == p.y or (rule is not None and rule.kind == "negation") or (extra is not None and extra <= lexicon.NEGATION_COMPANIONS):
        reason = rule.reason() if rule is not None else f'Negation of the same statement: "{a.text}" vs "{b.text}".'
        return Decision(CONFLICT, f"conflicting values: {reason}", kind="negation", slot="statement", values=pair, certain=True,
                        evidence="rule", template=True, confidence=english.NEGATION_CONFIDENCE, sentences=pair)
    unsure = _unsure(a, b, denying=a if a.negations else b)
    if unsure is not None:  # "wants push notifications for every message" / "no longer wants push notifications"
        return replace(unsure, kind="negation")
    return Decision(COMPLEMENTARY, "a denial of something else", template=p.template, sentences=pair)


def _exclusive(p: _Pair) -> Optional[Decision]:
    """Exclusive values (the lexicon's single-valued attributes), then the English attribute patterns."""
    a, b, rule, pair = p.a, p.b, p.rule, p.pair
    multi = (a.multi or b.multi) and not (a.single or b.single)
    clash = lexicon.clash(a.raw, b.raw, a.single, b.single) if not p.hedged and not multi else None
    if clash is not None and _another_place(p.places, clash[1:]):
        clash = None  # a second slot differs too ("email for invoices" / "phone calls for support")
    if rule is not None and (clash is None or rule.attribute != "preference"):
        return Decision(CONFLICT, f"conflicting values: {rule.reason()}", kind=rule.kind, slot=rule.attribute,
                        values=(rule.value_a, rule.value_b), certain=True, evidence="rule", template=p.template,
                        confidence=rule.confidence, sentences=pair)
    if clash is not None:
        attribute, va, vb = clash
        reason = f'Competing values for the single-valued attribute "{attribute}": "{va}" vs "{vb}" ("{a.text}" / "{b.text}").'
        return Decision(CONFLICT, f"conflicting values: {reason}", kind="competing_value", slot=attribute, values=(va, vb),
                        certain=True, evidence="rule", template=p.template, confidence=CERTAIN_CONFIDENCE, sentences=pair)
    return None


def _roles(p: _Pair) -> Optional[Decision]:
    """Roles swapped: the same words in another order, no clause moved whole."""
    free_a, free_b = _free(p.a), _free(p.b)
    xs, ys = [w for w in p.x if w not in free_a], [w for w in p.y if w not in free_b]
    swapped = SequenceMatcher(a=xs, b=ys, autojunk=False).get_matching_blocks() if xs and sorted(xs) == sorted(ys) and xs != ys else None
    if swapped and (max(block.size for block in swapped) <= len(xs) / 2 or (xs[0] == ys[-1] and xs[-1] == ys[0] != xs[0])):
        return Decision(CONFLICT, f'one template, different values: "{p.a.text}" / "{p.b.text}" (the same words in another order)',
                        kind="competing_value", slot="roles", values=(" ".join(p.x), " ".join(p.y)), evidence="template",
                        template=True, confidence=UNCERTAIN_CONFIDENCE, sentences=p.pair)
    return None


def _values(p: _Pair) -> Decision:
    """One template: the same fact, one adding to the other, or one place with two values."""
    a, b, pair, spaceless, added = p.a, p.b, p.pair, p.spaceless, p.diff.added
    if not p.template:
        return _unsure(a, b) or Decision(COMPLEMENTARY, "different statements", sentences=pair)
    if not p.places and len(p.diff.sides) < 2:
        if added:
            return Decision(ELABORATION, f'"{b.text}" and "{a.text}": one adds to the other', template=True, sentences=pair)
        return Decision(SAME, "the same fact in other words", template=True, sentences=pair)
    if p.hedged:
        return Decision(COMPLEMENTARY, "a hedged statement", template=True, sentences=pair)
    single = a.single or b.single
    multi = (a.multi or b.multi) and not single
    if len(p.places) == 1:
        place = p.places[0]
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
            # two names in the one place ("call Ana" / "call Inés"; not acronyms such as "EU" / "US") may be
            # two people as well as two values: evidence "named", so no judge's verdict settles it by the rule
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
            if inflection(left, right):
                # names are not inflected forms of each other ("Ana" / "Anja", "Faro" / "Farola")
                (diff.places if set(left) & names or set(right) & names else diff.inflected).append(_Place(left, right, i1, j1))
                continue
            if set(left) | set(right) <= _LINKS:
                continue
            if set(left) - _LINKS <= sy and set(right) - _LINKS <= sx:
                continue  # words that moved ("every Friday ... by email" / "email ... every Friday")
            diff.places.append(_Place(left, right, i1, j1))
            if inflection(left[:1], right[:1]) and not (set(left[:1]) | set(right[:1])) & names:
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


def _free(sentence: Sentence) -> frozenset[str]:
    """Return the determiners and possessives a wording may swap freely, bar capitalised ones ("CET")."""
    return lexicon.free_words(sentence.raw) - sentence.capitals


def _anchors(sentence: Sentence) -> list[str]:
    """Return the words that say what a sentence is about besides its subject: no opener, cue, hedge or function word."""
    return [w for w in _content_index(sentence.words)[1:] if w not in lexicon.OPENER_WORDS and not lexicon.cue(w)]


def _unsure(a: Sentence, b: Sentence, denying: Optional[Sentence] = None) -> Optional[Decision]:
    """Return an uncertain conflict when two sentences say different things about one subject and one attribute.

    The same first word, another word in common, and words of its own on each side ("The plan is
    Basic." / "Customer upgraded; their plan is Premium."). Rules cannot tell a new value from a
    second fact, so a person decides.
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
        anchors_a, anchors_b = ([w for w in _content_index(s.words) if not lexicon.cue(w)] for s in (a, b))
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
    return a == b or inflection([a], [b])


def _another_place(places: Sequence[_Place], values: Sequence[str]) -> bool:
    """Say whether a replaced place holds none of the clashing values (a second slot that differs)."""
    words = {w for value in values for w in value.split()} | {c for value in values for c in value if not c.isspace()}
    return any(not (set(p.left) | set(p.right)) & words for p in places)


def opening_hard(sentence: Sentence) -> frozenset[str]:
    """Return the hard evidence a sentence names in its opening words: what it is about ("Account 1000 ...")."""
    words = sentence.words
    reach = max(OPENING_CHARS if sentence.spaceless else OPENING_WORDS, len(words) / 3)
    return frozenset(w for i, w in enumerate(words) if i < reach and w in sentence.hard)


def _content_index(words: Sequence[str], end: Optional[int] = None) -> list[str]:
    """Return the words before `end` (all by default) that are neither free nor function words."""
    return [w for w in words[:end] if w not in lexicon.FREE_WORDS and w not in lexicon.FUNCTION_WORDS]


#: Japanese particles that close the topic or subject of a sentence
_TOPIC_PARTICLES = frozenset({"は", "が"})


def _in_subject(place: _Place, x: Sequence[str], y: Sequence[str], a: Sentence, b: Sentence, kind: str = "plain") -> bool:
    """Say whether a differing place lies in what the sentences are about rather than in what they say of it.

    `kind`: "hard" (a number, ID, e-mail, URL or date), "name", "inflected" ("mweber" / "mwebert")
    or "plain". On either side the place is the subject when it opens the sentence or what precedes
    it names a subject: a subject word right before it (hard), only generic subject words and names
    (name, inflected), or a name it qualifies (plain); scripts without spaces or capitals use
    position instead. A place that ends the sentence is a value on that side.
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
        if not _content_index(after):
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
        content = len(_content_index(words))
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
    return not _content_index(rest)


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
