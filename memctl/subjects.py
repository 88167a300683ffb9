"""Decide whether notes may share one merged note: one subject, no conflicting values (issue 13).

A merged note must state one subject's facts and no two values of one attribute; otherwise a
conflict hides inside one note where the contradiction phase cannot see it, and the authority
rule (dates, access counts, protection) is decided by whatever the merge kept. These checks are
plain code, applied to every cluster before any judge is asked and to every synthesis after,
whether the offline merge or an LLM wrote it. They trade recall for precision: a pair they
cannot tell apart is kept apart.

Two notes are incompatible when any pair of their sentences
1. contradicts by the offline judge's rules (a statement and its negation, two values of a
   single-valued attribute: `memctl.llm.offline_judge.find_conflict`);
2. names different subjects: each sentence's named subject is the run of capitalised words,
   numbers and IDs it opens with ("Account 17", "Tom's", "The Acme account" -> "acme"); generic
   openers ("User", "The customer", "He", "Asked") name none. Notes whose named subjects are both
   known and share none are about different subjects; so are notes that open with different
   lone capitalised words ("Globex ..." / "Initech ...", which also keeps "Met ..." / "Demo ..."
   apart: recall is what pays), and notes giving one single-valued attribute of different
   subjects ("The timezone of Initech ..." / "The timezone of Account 18 ...");
3. shares a template with a different slot value: the normalised word sequences (a "Label:"
   preamble, articles, determiners and auxiliaries dropped, stemmed) agree on at least half of
   the longer sentence and at least two words, and differ by a substitution ("Account 17 uses
   the billing module" / "Account 18 uses the reports module"; "wants his reports weekly" /
   "... monthly") or by a negation on one side. Pure additions are elaborations, not conflicts
   ("weekly" / "weekly by email"), and so are substitutions between synonyms of one exclusive
   set ("brief" / "concise");
4. refers to one keyed identifier with different values ("ticket 48213" / "ticket 5512",
   "order #12" / "order #13"): a number or ID keyed by the word before it.

A cluster is split into groups of mutually compatible notes (greedy, in the order given: the
phase passes newest first); a note incompatible with one already kept is left out, and keeps its
own date, access count and protection for the contradiction phase.
"""

from __future__ import annotations

import re
from difflib import SequenceMatcher
from functools import lru_cache
from typing import Any, Callable, Optional, Sequence, TypeVar

from memctl.llm.offline_judge import EXCLUSIVE_SETS, find_conflict, read_facts
from memctl.llm.offline_text import _NOT, _PREPOSITIONS, Sentence, _stem, analyse, split_sentences

T = TypeVar("T")

#: a template shared by two sentences: this share of the longer one's words in common, in order
TEMPLATE_SHARE = 0.5
TEMPLATE_MIN_WORDS = 2
#: a negation on one side only: this share of the shorter sentence's words in common is a denial
DENIAL_SHARE = 0.33

_TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9'\u2019]*(?:[-@./:+_#][A-Za-z0-9]+)*|#\d+")
#: prepositions swapped by a paraphrase ("as a spreadsheet" / "in spreadsheet form")
_LINKS = _PREPOSITIONS | {"as"}
#: a "Label:" preamble ("Confirmed:", "Noted again:") says who or when, not what: left out of the comparison
_PREAMBLE = re.compile(r"^\s*[A-Za-z]+(?: [A-Za-z0-9-]+){0,6}:\s+")
_ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_DIGIT = re.compile(r"\d")
#: openers that name no one in particular (lower-cased, possessive dropped)
_GENERIC = frozenset(
    """a an the this that these those some any each every all both no my our your his her their its
    i we you he she they it there here user users customer customers client clients person people
    company team agent assistant account member members admin owner manager staff employee
    employees colleague colleagues when if for on in at to by from with after before during as
    always never please do don't use send keep reply replies avoid prefer prefers note notes
    confirmed reminder restated noted per repeated known mentioned asked requested reported had
    has have is was are were also only every one new current previous""".split()
)
#: single letters and words that stay capitalised anywhere without naming a subject
_NOT_NAMES = frozenset({"i", "ok"})


def _tokens(sentence: str) -> list[str]:
    return _TOKEN.findall(sentence.replace("\u2019", "'"))


def _bare(token: str) -> str:
    word = token.lower()
    return word[:-2] if word.endswith("'s") else word.rstrip("'")


def _is_name(token: str) -> bool:
    if _ISO_DATE.match(token):
        return False
    return token[0].isupper() or bool(_DIGIT.search(token))


def named_subject(sentence: str) -> Optional[str]:
    """Return the named subject a sentence opens with, lower-cased, or None when it names none.

    The subject is the run of capitalised words, numbers and IDs at the start, after generic
    openers ("The Acme account is overdue" -> "acme"; "Account 17 uses ..." -> "account 17";
    "User 17 ..." -> "user 17"). A lone capitalised first word is only a name when it is
    possessive ("Tom's"), written in capitals ("IBM") or followed by another name word ("Acme
    Corp"): any sentence starts with a capital, so "Prefers ..." or "Demo is ..." name no one.
    """
    tokens = _tokens(_PREAMBLE.sub("", sentence))
    i = 0
    while i < min(len(tokens) - 1, 3) and _bare(tokens[i]) in _GENERIC and not _DIGIT.search(tokens[i + 1]):
        i += 1
    run: list[str] = []
    start = i
    while i < len(tokens) and _is_name(tokens[i]) and _bare(tokens[i]) not in _NOT_NAMES:
        run.append(_bare(tokens[i]))
        if tokens[i].lower().endswith("'s"):
            break
        i += 1
    if len(run) == 1 and start == 0:
        first = tokens[0]
        if not (first.lower().endswith("'s") or _DIGIT.search(first) or (len(first) > 1 and first.isupper())):
            return None
    if run and start == 0 and len(run) > 1 and _bare(tokens[0]) in _GENERIC and not _DIGIT.search(tokens[1]):
        run = run[1:]
    return " ".join(run) or None


def _lone_opener(sentence: str) -> Optional[str]:
    """Return a sentence's capitalised first word when it may be a name (not a generic opener), or None."""
    tokens = _PREAMBLE.sub("", sentence).split()
    if not tokens or named_subject(sentence):
        return None
    first = tokens[0].strip(",.;:!?")
    if not first or not first[0].isupper() or _bare(first) in _GENERIC:
        return None
    return _bare(first)


def _keyed_ids(sentence: str) -> dict[str, str]:
    """Return {key word: value} for numbers and IDs keyed by the word before them ("ticket" -> "48213")."""
    tokens = _tokens(sentence)
    found: dict[str, str] = {}
    for before, token in zip(tokens, tokens[1:]):
        if _DIGIT.search(token) and not _ISO_DATE.match(token) and not _DIGIT.search(before):
            found.setdefault(_bare(before), token.lstrip("#").lower())
    return found


#: words a paraphrase swaps freely; left out of the template comparison
_FREE_WORDS = frozenset(
    "a an the each every all any some this that these those his her their my our your its per one".split()
)


def _synonyms(x: Sequence[str], y: Sequence[str]) -> bool:
    if len(x) != len(y):
        return False
    for a, b in zip(x, y):
        if a == b:
            continue
        if not any(s.group_of(a) is not None and s.group_of(a) == s.group_of(b) for s in EXCLUSIVE_SETS):
            return False
    return True




@lru_cache(maxsize=65536)
def _body(sentence: Sentence) -> Sentence:
    stripped = _PREAMBLE.sub("", sentence.text)
    return sentence if stripped == sentence.text else analyse(stripped)


def slot_conflict(a: Sentence, b: Sentence) -> Optional[tuple[str, str]]:
    """Return the two differing slot values of sentences that share a template, or None (rule 3).

    Two sentences share a template when, "Label:" preambles and free words (articles,
    determiners, possessives) left out, at least half of the longer one's words are common, in
    order. Then a substitution is a different value when both sides are value-like (a name, a
    number or ID, a member of an exclusive set: "Paris" / "Berlin", "17" / "18", "weekly" /
    "monthly"), or when it is the only difference of two otherwise identical sentences ("works as
    a nurse" / "works as a teacher"), or when the template goes on after it ("is dunking the
    basketball and a crowd ..." / "is missing the basket and a crowd ..."); a different trailing
    qualifier of two or more words on each side ("sent the same day" / "with ticket numbers") is an
    elaboration, not a value, but a one-word ending is one ("kids are fasting" / "kids are eating
    corndogs"). Whatever the share, these are different values too: a negation on one
    side only with a share of DENIAL_SHARE of the shorter sentence ("no band playing" / "a band is
    performing"), members of different groups of one exclusive set ("empty" / "full"), and the
    same words in another order when no clause moved whole ("the turtle follows the fish" / "the
    fish follows the turtle"). Swapped prepositions alone are a paraphrase.
    Pure additions are elaborations ("weekly" / "weekly by email").
    """
    a, b = _body(a), _body(b)
    x = [w for w in a.signed if w not in _FREE_WORDS]
    y = [w for w in b.signed if w not in _FREE_WORDS]
    if not x or not y or x == y:
        return None
    matcher = SequenceMatcher(a=x, b=y, autojunk=False)
    blocks = matcher.get_matching_blocks()
    common = sum(block.size for block in blocks)
    if sorted(x) == sorted(y) and (max(block.size for block in blocks) <= len(x) / 2 or (x[0] == y[-1] and x[-1] == y[0] != x[0])):
        # the same words in another order, not a moved clause ("the kangaroo is picking up the
        # woman" / "the woman is picking up the kangaroo"): roles swapped
        return " ".join(x), " ".join(y)
    if not common:
        return None
    plain_x, plain_y = [w for w in x if w != _NOT], [w for w in y if w != _NOT]
    if (a.negations == 0) != (b.negations == 0) and common >= DENIAL_SHARE * min(len(plain_x), len(plain_y)):
        return a.text, b.text  # a statement and a denial of much of it
    clash = _exclusive_clash(set(x), set(y)) or _opposite(set(a.signed), set(b.signed))
    if clash:
        return clash
    if common < TEMPLATE_MIN_WORDS or common < TEMPLATE_SHARE * max(len(x), len(y)):
        return None
    names = _names(a) | _names(b)
    replaces = [(x[i1:i2], y[j1:j2], i2 < len(x) and j2 < len(y)) for op, i1, i2, j1, j2 in matcher.get_opcodes() if op == "replace"]
    only = len(replaces) == 1 and len(x) == len(y) == common + 1
    for left, right, inner in replaces:
        if _synonyms(left, right) or set(left) | set(right) <= _LINKS:
            continue
        if set(left) - _LINKS <= set(y) and set(right) - _LINKS <= set(x):
            continue  # words that moved ("every Friday ... by email" / "email ... every Friday"), not a value that changed
        if only or inner or min(len(left), len(right)) == 1 or (_value_like(left, names) and _value_like(right, names)):
            return " ".join(left), " ".join(right)
    # where words moved, the alignment can pair a value with a moved word: a value-like word on
    # each side only is a different value ("every Monday" / "every Friday ... by email")
    only_x, only_y = sorted(set(x) - set(y) - _LINKS), sorted(set(y) - set(x) - _LINKS)
    if only_x and only_y and _value_like(only_x, names) and _value_like(only_y, names):
        return " ".join(only_x), " ".join(only_y)
    return None


@lru_cache(maxsize=65536)
def _names(sentence: Sentence) -> frozenset[str]:
    """Return the normalised words a sentence writes capitalised after its first word, or with digits."""
    tokens = _TOKEN.findall(_PREAMBLE.sub("", sentence.text))
    found = {_stem(_bare(t)) for t in tokens[1:] if t[0].isupper() and _bare(t) not in _NOT_NAMES}
    return frozenset(found | {w for w in sentence.words if _DIGIT.search(w)})


def _value_like(words: Sequence[str], names: frozenset[str]) -> bool:
    return any(w in names or _DIGIT.search(w) or any(s.group_of(w) is not None for s in EXCLUSIVE_SETS) for w in words)


# Words of opposite meaning, as analyse() spells them: a pair of them, one on each side only, is a
# different value even where both are prepositions ("jumping into the pool" / "out of the pool").
_OPPOSITES = frozenset(frozenset(pair) for pair in (
    ("in", "out"), ("into", "out"), ("inside", "outside"), ("on", "off"), ("onto", "off"), ("up", "down"),
    ("over", "under"), ("above", "below"), ("before", "after"), ("with", "without"), ("to", "from"),
    ("open", "closed"), ("opened", "closed"), ("start", "stop"), ("starting", "stopping"), ("started", "stopped"),
    ("rising", "falling"), ("rise", "fall"), ("entering", "leaving"), ("arriving", "leaving"),
    ("win", "lose"), ("winning", "losing"), ("won", "lost"), ("accept", "reject"), ("accepted", "rejected"),
    ("allow", "forbid"), ("allowed", "forbidden"), ("enable", "disable"), ("enabled", "disabled"),
    ("true", "false"), ("yes", "no"), ("speaking", "silent"), ("talking", "silent"), ("eating", "fasting"),
    ("asleep", "awake"), ("sleeping", "awake"), ("naked", "dressed"), ("naked", "wearing"), ("one", "both"),
    ("sitting", "standing"), ("sitting", "getting"), ("making", "hanging"), ("putting", "removing"),
    ("include", "exclude"), ("included", "excluded"), ("always", "never"), ("increase", "decrease"),
))


def _opposite(x: set[str], y: set[str]) -> Optional[tuple[str, str]]:
    """Return two words of opposite meaning, one on each side only ("into" / "out"), or None."""
    for a in x - y:
        for b in y - x:
            if frozenset((a, b)) in _OPPOSITES:
                return a, b
    return None


def _exclusive_clash(x: set[str], y: set[str]) -> Optional[tuple[str, str]]:
    """Return two members of different groups of one exclusive set, one on each side only ("empty" / "full")."""
    for a in x - y:
        for b in y - x:
            for exclusive in EXCLUSIVE_SETS:
                ga, gb = exclusive.group_of(a), exclusive.group_of(b)
                if ga is not None and gb is not None and ga != gb:
                    return a, b
    return None


class NoteText:
    """One note's sentences, named subjects and keyed identifiers, computed once.

    Everything here depends only on the note's sentences (dates made absolute), so the analysis
    of a sentence tuple is kept (`_analysis`, bounded) and shared by notes and merges that repeat
    it: templated facts recur across partitions, and a merge is checked once as a reply and again
    as a verdict. Nothing reads these sets to change them.
    """

    def __init__(self, text: str, dated: Optional[Callable[[str], str]] = None) -> None:
        pieces = tuple(dated(p) if dated else p for p in split_sentences(text))
        self.text = text
        self.pieces = pieces
        self.sentences, self.subjects, self.weak, self.facts, self.ids = _analysis(pieces)


@lru_cache(maxsize=16384)
def _analysis(pieces: tuple[str, ...]) -> tuple[list[Sentence], frozenset[str], frozenset[str], frozenset[tuple[str, Any]], dict[str, frozenset[str]]]:
    sentences = [analyse(p) for p in pieces]
    subjects = frozenset(s for s in (named_subject(p) for p in pieces) if s)
    #: lone capitalised first words ("Globex uses ..."): a name or just a capital; only compared with named subjects
    weak = frozenset(w for w in (_lone_opener(p) for p in pieces) if w)
    #: (attribute, subject) of the single-valued attribute statements the offline judge reads
    facts = frozenset((f.attribute, f.subject) for p in pieces for f in read_facts(_PREAMBLE.sub("", p)))
    ids: dict[str, set[str]] = {}
    for piece in pieces:
        for key, value in _keyed_ids(piece).items():
            ids.setdefault(key, set()).add(value)
    return sentences, subjects, weak, facts, {key: frozenset(values) for key, values in ids.items()}


#: incompatibility verdicts by the two notes' sentence tuples (cleared when it reaches the bound)
_VERDICTS: dict[tuple[tuple[str, ...], tuple[str, ...]], Optional[str]] = {}
_VERDICTS_MAX = 65536
_UNKNOWN = object()


def incompatibility(a: NoteText, b: NoteText) -> Optional[str]:
    """Return why two notes must not share a merged note (rules 1-4 above), or None."""
    key = (a.pieces, b.pieces)
    found = _VERDICTS.get(key, _UNKNOWN)  # one lookup: another thread may clear the cache in between
    if found is not _UNKNOWN:
        return found  # type: ignore[return-value]
    if len(_VERDICTS) >= _VERDICTS_MAX:
        _VERDICTS.clear()
    verdict = _VERDICTS[key] = _incompatibility(a, b)
    return verdict


def _incompatibility(a: NoteText, b: NoteText) -> Optional[str]:
    conflict = find_conflict(a.sentences, b.sentences)
    if conflict is not None:
        return f"conflicting values: {conflict.reason()}"
    if a.subjects and b.subjects and not a.subjects & b.subjects:
        return f"different subjects: {', '.join(sorted(a.subjects))} / {', '.join(sorted(b.subjects))}"
    for named, other in ((a, b), (b, a)):
        words = {w for subject in named.subjects | named.weak for w in subject.split()}
        if (named.subjects or named.weak) and not other.subjects and other.weak and not other.weak & words:
            return f"different subjects: {', '.join(sorted(named.subjects | named.weak))} / {', '.join(sorted(other.weak))}"
    for attribute, subject in a.facts:
        others = {s for at, s in b.facts if at == attribute}
        if others and subject not in others:
            return f"different subjects of {attribute}: {' '.join(subject) or 'user'} / {' '.join(sorted(others)[0]) or 'user'}"
    for key in a.ids.keys() & b.ids.keys():
        if not a.ids[key] & b.ids[key]:
            return f"different {key}: {', '.join(sorted(a.ids[key]))} / {', '.join(sorted(b.ids[key]))}"
    for sa in a.sentences:
        for sb in b.sentences:
            slot = slot_conflict(sa, sb)
            if slot:
                return f'one template, different values: "{sa.text}" / "{sb.text}" ({slot[0]} / {slot[1]})'
    return None


def compatible_groups(items: Sequence[T], text_of: Callable[[T], NoteText]) -> tuple[list[list[T]], list[str]]:
    """Split `items` into groups of mutually compatible notes, greedily in the order given.

    Returns the groups (largest first; ties keep the order of their first member) and the reasons
    notes were kept apart.
    """
    groups: list[list[T]] = []
    reasons: list[str] = []
    for item in items:
        text = text_of(item)
        for group in groups:
            problem = next((p for p in (incompatibility(text_of(g), text) for g in group) if p), None)
            if problem is None:
                group.append(item)
                break
            reasons.append(problem)
        else:
            groups.append([item])
    order = sorted(range(len(groups)), key=lambda i: (-len(groups[i]), i))
    return [groups[i] for i in order], reasons


def synthesis_problem(content: str, sources: Sequence[NoteText]) -> Optional[str]:
    """Return why a synthesised note must be refused, or None.

    Refused: two of its sentences are incompatible (two values of one attribute, one template
    with different values) or it names subjects no single source names together. A source
    that already holds such a pair itself lets the synthesis keep it: what the merge did not
    join, it is not blamed for.
    """
    sentences = [NoteText(piece) for piece in split_sentences(content)]
    if not any(_inner_problem(source) for source in sources):
        for i, a in enumerate(sentences):
            for b in sentences[i + 1 :]:
                problem = incompatibility(a, b)
                if problem and not problem.startswith("different subjects"):
                    return f"the synthesis states {problem}"
    own = {s for text in sentences for s in text.subjects}
    if len(own) > 1 and not any(own <= source.subjects for source in sources):
        return f"the synthesis joins different subjects: {', '.join(sorted(own))}"
    return None


def _inner_problem(note: NoteText) -> bool:
    pieces = [NoteText(s.text) for s in note.sentences]
    return any(incompatibility(a, b) for i, a in enumerate(pieces) for b in pieces[i + 1 :])
