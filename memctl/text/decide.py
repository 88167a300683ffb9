"""The decision layer: one notion of "same fact", "conflicting value", "different subject" and
"complementary", for both LLM phases, in any language (DESIGN 4, "Decisions").

`decide(a, b)` compares two notes sentence by sentence (memctl.text.compare): hard evidence and
names, the subject place, negation, values (exclusive sets, English patterns, single- or
multi-valued cues), then wording. A note whose every sentence the other states is the same fact or
an elaboration; otherwise the strongest finding decides. Offline, findings decide merges and verdicts
(`verdict_guard`, `absorption_veto`); with a model, memctl.text.evidence checks its quotes and
`synthesis_problem` still checks the merged text.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from datetime import date, datetime
from functools import cached_property, lru_cache, partial
from typing import Callable, Optional, Sequence, TypeVar

from memctl.temporal import normalise
from memctl.text.compare import COMPLEMENTARY, CONFLICT, DIFFERENT, ELABORATION, SAME, Decision, compare, inflection, opening_hard
from memctl.text.statement import Sentence, analyse, covers, german_nouns, split_sentences
from memctl.text.tokens import CHAR, WORD, same_text_key, tokens

T = TypeVar("T")


# --- names a note holds (what the offline guards compare) -----------------------------------------


@lru_cache(maxsize=65536)
def _piece_names(piece: str) -> frozenset[str]:
    """Return the words of one sentence that read as names: a Titlecase word after the first (not "EU",
    not a German common noun), and a word in another script than the sentence's ("Slack" in Japanese)."""
    toks = tokens(piece)
    nouns = german_nouns(toks)
    words = [(j, t) for j, t in enumerate(toks) if t.kind in (WORD, CHAR)]
    scripts = [_script(t.text) for _, t in words]
    main = max(set(scripts), key=scripts.count) if scripts else None
    return frozenset(t.norm for i, ((j, t), script) in enumerate(zip(words, scripts))
                     if (t.capital and i > 0 and not t.text.isupper() and j not in nouns) or (t.kind == WORD and script != main))


def _name_words(note: NoteText) -> frozenset[str]:
    return frozenset().union(*(_piece_names(p) for p in note.pieces)) if note.pieces else frozenset()


def _script(word: str) -> str:
    """Return the Unicode script of a word's first letter, from its character name ("LATIN", "CYRILLIC", "CJK"...)."""
    letter = next((c for c in word if c.isalpha()), "")
    name = unicodedata.name(letter, "") if letter else ""
    return name.split(" ", 1)[0] if name else ""


# --- notes --------------------------------------------------------------------------------------


class NoteText:
    """One note's sentences, analysed once (relative dates made absolute by `dated` when given)."""

    def __init__(self, text: str, dated: Optional[Callable[[str], str]] = None) -> None:
        pieces = tuple(dated(p) if dated else p for p in split_sentences(text))
        self.text = text
        self.pieces = pieces
        self.sentences = _analysis(pieces)

    @cached_property
    def key(self) -> str:
        """The same-text key of its (dated) sentences: only a pair `decide` reads needs it, not every note analysed."""
        return same_text_key(" ".join(self.pieces))

    @property
    def hard(self) -> frozenset[str]:
        return frozenset().union(*(s.hard for s in self.sentences)) if self.sentences else frozenset()


def read_note(text: str, created: date | datetime) -> NoteText:
    """Return a note's text read sentence by sentence, its relative dates made absolute against its created date."""
    return NoteText(text, partial(normalise, reference=created))


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


def forget_decisions() -> None:
    """Empty `decide`'s memo (memctl.text.forget: between slices of a large store)."""
    _DECISIONS.clear()


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
    return a.words[:width] == b.words[:width] or inflection(a.words[:1], b.words[:1])


def mergeable(d: Decision) -> bool:
    """Say whether notes so related may share one merged note without a model (offline).

    Only wordings of one fact: complementary statements may be a value change in other words
    ("plan is Basic" / "upgraded to Premium"), which nothing tells apart without a model.
    """
    return d.relation in (SAME, ELABORATION)


def model_veto(d: Decision) -> bool:
    """Say whether notes so related must stay apart even when a model would merge them: hard evidence or subject names."""
    return d.hard and d.relation in (DIFFERENT, CONFLICT)


def incompatibility(a: NoteText, b: NoteText) -> Optional[str]:
    """Return why two notes must not share a merged note without a model, or None (offline rules)."""
    d = decide(a, b)
    return None if mergeable(d) else d.reason


def compatible_groups(items: Sequence[T], text_of: Callable[[T], NoteText]) -> tuple[list[list[T]], list[str]]:
    """Split `items` greedily, in order, into groups of mutually compatible notes.

    Return the groups (largest first, stable) and the reasons notes were kept apart."""
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


def conflict(a: NoteText, b: NoteText) -> Optional[Decision]:
    """Return the decision when two notes hold conflicting values, else None."""
    d = decide(a, b)
    return d if d.relation == CONFLICT else None


# --- the guards around a judge's answers -----------------------------------------------------------


@dataclass(frozen=True)
class Guard:
    """What to do with a judge's contradiction verdict: apply it, flag it for review, or drop it."""

    action: str  # "apply" | "flag" | "veto" | "duplicate" | "unproven" (a model's quotes show no one subject)
    reason: str = ""


def verdict_guard(a: NoteText, b: NoteText, rules_judge: bool = False) -> Guard:
    """Check a contradiction verdict between two notes against hard evidence (any judge's verdict).

    Different subjects: "veto"; a differing hard value, or the offline rules' own uncertain
    conflict (`rules_judge`): "flag" for review; the same facts: "duplicate".
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


def lost_evidence(broader: NoteText, narrower: NoteText) -> Optional[str]:
    """Return why absorbing `narrower` into `broader` would lose hard evidence (a number, ID, e-mail, URL or date), or None."""
    lost = narrower.hard - broader.hard
    return f"the narrower note states {', '.join(sorted(lost))}, which the broader note does not" if lost else None


def absorption_veto(broader: NoteText, narrower: NoteText) -> Optional[str]:
    """Return why a judge's "broader states every fact of narrower" must not apply (`lost_evidence`, `model_veto`), or None."""
    lost = lost_evidence(broader, narrower)
    if lost:
        return lost
    d = decide(broader, narrower)
    if model_veto(d):
        return d.reason
    return None


def synthesis_problem(content: str, sources: Sequence[NoteText], model: bool = False,
                      authority: Optional[Callable[[int, int], Optional[int]]] = None) -> Optional[str]:
    """Return why a merged note must be refused, or None.

    Refused when it loses or invents hard evidence, two of its sentences conflict (unless two of a
    source's do), it joins subjects no single source joins, or it drops the value the authority rule keeps
    between two certainly conflicting sources (`authority(i, j)` -> the winner's index, or None:
    refused, left for the contradiction phase). With `model`, a conflict between sources counts only
    on hard evidence or a listed rule: aligning two wordings is a guess, which does not overrule it.
    """
    def counted(d: Decision) -> bool:
        return not model or d.evidence in ("hard", "rule")

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
                if d.relation != CONFLICT or not d.certain or not counted(d):
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


__all__ = [
    "COMPLEMENTARY", "CONFLICT", "DIFFERENT", "Decision", "ELABORATION", "Guard", "NoteText", "SAME", "compare",
    "compatible_groups", "conflict", "decide", "incompatibility", "lost_evidence", "mergeable", "model_veto", "same_text_key",
    "synthesis_problem", "verdict_guard",
]
