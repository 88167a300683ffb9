"""Rewrite relative time expressions in note text as absolute dates.

"Yesterday we moved to Redis" is only true relative to the day it was written, so notes are rewritten
against their created date before a merge, and a consolidated note is refused while `find_relative`
still finds one (FR-015). Both run the same scanner: `find_relative(normalise(text, day)) == []`.

Conventions (reference Monday 2026-03-16):

- Resolution is the UTC day: "yesterday" -> "on 2026-03-15".
- Weeks are ISO weeks named by their Monday ("last week" -> "in the week of 2026-03-09"), weekends
  by their Saturday; "last" / "this" / "next" Friday is that day of the previous / current / next
  ISO week. Months, quarters and years are calendar units ("last quarter" -> "in Q4 2025").
- Vague stays vague: "recently" -> "as of 2026-03-16", "a few days ago" -> "a few days before 2026-03-16".
- The wording fits the grammar: bare after a preposition or as a subject ("since the week of
  2026-03-09"), attributive for a possessive ("the 2026-03-15 meeting"); capitals are kept.
- German, Spanish, French, Russian, Chinese, Japanese and Arabic day words become the bare ISO date
  ("昨天" -> "2026-03-15"), ambiguous words guarded (see _OTHER_DAYS).
- Left alone, so not reported: a bare weekday ("on Friday": maybe recurring), bare "now", expressions
  relative to another event ("3 days later"), absolute uses ("the last week of March"), hyphenated
  compounds. "in 3 days" is a future date: notes state plans far more often than durations.

Matching is case-insensitive on whole words; of overlapping expressions the first wins, then the longer.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from functools import lru_cache

__all__ = ["find_relative", "normalise"]

# English names, not calendar.month_name: that one follows the process locale.
_MONTHS = (
    "January", "February", "March", "April", "May", "June",
    "July", "August", "September", "October", "November", "December",
)  # fmt: skip
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_NUMBERS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
    "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12,
}  # fmt: skip

_START = r"(?<![\w-])"
_END = r"(?![\w-])"
_POSSESSIVE = r"(?:(?P<poss>['’]s)(?![\w-]))?"
_NOT_OF = r"(?!\s+of\b)"
_NOT_AFTER_THE = r"(?<!\bthe\s)"
_COUNT = r"\d{1,3}|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve"
_PART = r"morning|afternoon|evening|night"
_UNIT = r"second|minute|hour|day|week|month|quarter|year"
_WHICH = r"last|next|this\s+past|this\s+coming|this"
_WHICH_SHIFT = {"last": -1, "next": 1, "this past": -1, "this coming": 1, "this": 0}

# After a preposition an expression takes the bare form: "since last week", not "since in the week of ...".
_PREPOSITION_BEFORE = re.compile(
    r"(?<![\w-])(?:since|until|till|til|up\s+to|before|after|by|from|to|through|thru|of|on|for"
    r"|during|between)\s+\Z",
    re.IGNORECASE,
)
_CLAUSE_START = re.compile(r"(?:\A|[.!?;:\n])[\s\"'“‘(\[]*\Z")
_COPULA_AFTER = re.compile(r"\s+(?:is|was|will\s+be|would\s+be|has\s+been|had\s+been|marks|marked)\b", re.IGNORECASE)


@dataclass(frozen=True)
class _Phrase:
    """The absolute wording of one expression, in the three grammatical slots it can fill."""

    adverbial: str  # "we met on 2026-03-15"
    bare: str  # "since 2026-03-15", "2026-03-15 was busy"
    attributive: str  # "the 2026-03-15 meeting"

    @classmethod
    def same(cls, text: str) -> _Phrase:
        return cls(text, text, text)


@dataclass(frozen=True)
class _Shift:
    """A calendar offset from the reference day: `amount` units of `unit` (day, week, ...)."""

    unit: str
    amount: int
    part: str | None = None


_Resolver = Callable[[re.Match[str], date], _Phrase | _Shift]


@dataclass(frozen=True)
class _Rule:
    pattern: re.Pattern[str]
    resolve: _Resolver


def _count(word: str) -> int:
    return int(word) if word.isdigit() else _NUMBERS[word.lower()]


def _words(text: str) -> str:
    return " ".join(text.lower().split())


def _day_phrase(day: date, part: str | None) -> _Phrase:
    iso = day.isoformat()
    if part is None:
        return _Phrase(f"on {iso}", iso, f"the {iso}")
    return _Phrase(f"on the {part} of {iso}", f"the {part} of {iso}", f"the {iso} {part}")


def _month_index(day: date, months: int) -> tuple[int, int]:
    year, month0 = divmod(day.year * 12 + day.month - 1 + months, 12)
    if not 1 <= year <= 9999:
        raise OverflowError("year out of range")
    return year, month0 + 1


def _shift_phrase(shift: _Shift, reference: date) -> _Phrase:
    unit, amount = shift.unit, shift.amount
    try:
        if unit == "day":
            return _day_phrase(reference + timedelta(days=amount), shift.part)
        if unit in ("week", "weekend"):
            monday = reference - timedelta(days=reference.weekday()) + timedelta(weeks=amount)
            if unit == "week":
                text = f"the week of {monday.isoformat()}"
                return _Phrase(f"in {text}", text, f"{text}'s")
            text = f"the weekend of {(monday + timedelta(days=5)).isoformat()}"
            return _Phrase(f"on {text}", text, f"{text}'s")
        if unit == "month":
            year, month = _month_index(reference, amount)
            text = f"{_MONTHS[month - 1]} {year:04d}"
        elif unit == "quarter":
            year, month = _month_index(reference, 3 * amount)
            text = f"Q{(month - 1) // 3 + 1} {year:04d}"
        else:
            year, _ = _month_index(reference, 12 * amount)
            text = f"{year:04d}"
        return _Phrase(f"in {text}", text, f"the {text}")
    except OverflowError:
        # Only references at the ends of the calendar get here; say what we know instead.
        size = abs(amount)
        direction = "after" if amount > 0 else "before"
        return _Phrase.same(f"{size} {unit}{'' if size == 1 else 's'} {direction} {reference.isoformat()}")


def _resolve_day(match: re.Match[str], reference: date) -> _Shift:
    offsets = {
        "the day before yesterday": -2, "yesterday": -1, "today": 0, "tomorrow": 1,
        "the day after tomorrow": 2,
    }  # fmt: skip
    part = match.group("part")
    return _Shift("day", offsets[_words(match.group("day"))], part.lower() if part else None)


def _resolve_part(match: re.Match[str], reference: date) -> _Shift:
    words = _words(match.group("when"))
    if words == "tonight":
        return _Shift("day", 0, "night")
    if words == "last night":
        return _Shift("day", -1, "night")
    return _Shift("day", 0, words.removeprefix("this "))


def _resolve_weekday(match: re.Match[str], reference: date) -> _Shift:
    which = _words(match.group("which"))
    delta = _WEEKDAYS.index(match.group("weekday").lower()) - reference.weekday()
    if which == "this past":
        delta = -((-delta) % 7 or 7)
    elif which == "this coming":
        delta = delta % 7 or 7
    else:
        delta += 7 * _WHICH_SHIFT[which]
    part = match.group("part")
    return _Shift("day", delta, part.lower() if part else None)


def _resolve_unit(match: re.Match[str], reference: date) -> _Shift:
    return _Shift(match.group("unit").lower(), _WHICH_SHIFT[_words(match.group("which"))])


def _quantity_shift(count: int, unit: str) -> _Shift:
    if unit in ("second", "minute", "hour"):
        return _Shift("day", 0)
    return _Shift(unit, count)


def _resolve_quantity(match: re.Match[str], reference: date) -> _Shift:
    sign = -1 if match.group("direction").lower() == "ago" else 1
    return _quantity_shift(sign * _count(match.group("count")), match.group("unit").lower())


def _resolve_in(match: re.Match[str], reference: date) -> _Phrase | _Shift:
    if match.group("count"):
        return _quantity_shift(_count(match.group("count")), match.group("unit").lower())
    return _Phrase.same(f"{match.group('span')} after {reference.isoformat()}")


def _resolve_the(match: re.Match[str], reference: date) -> _Phrase:
    direction = "before" if match.group("direction").lower() in ("past", "last") else "after"
    text = f"the {match.group('span')} {direction} {reference.isoformat()}"
    return _Phrase(text, text, f"{text}'s")


def _resolve_ago(match: re.Match[str], reference: date) -> _Phrase:
    return _Phrase.same(f"{match.group('span') or ''}before {reference.isoformat()}")


#: the relative day words of other languages, as day offsets, rewritten as the bare ISO date (no
#: grammar is attempted). Ambiguous words are guarded: German "Morgen" (morning) is only read in lower
#: case, Spanish "mañana" not after "la" (the morning), Arabic "اليوم" (also "the day") not at all.
_OTHER_DAYS = {
    "vorgestern": -2, "gestern": -1, "heute": 0, "morgen": 1, "übermorgen": 2,
    "anteayer": -2, "antier": -2, "ayer": -1, "hoy": 0, "mañana": 1, "pasado mañana": 2,
    "avant-hier": -2, "hier": -1, "aujourd'hui": 0, "aujourd’hui": 0, "demain": 1, "après-demain": 2,
    "позавчера": -2, "вчера": -1, "сегодня": 0, "завтра": 1, "послезавтра": 2,
    "前天": -2, "昨天": -1, "今天": 0, "明天": 1, "后天": 2,
    "一昨日": -2, "おととい": -2, "昨日": -1, "きのう": -1, "今日": 0, "きょう": 0, "明日": 1, "あした": 1, "あす": 1,
    "明後日": 2, "あさって": 2,
    "أول أمس": -2, "أمس": -1, "البارحة": -1, "غدا": 1, "غداً": 1, "بعد غد": 2,
}  # fmt: skip
_SPACED_DAYS = "|".join(sorted((re.escape(w) for w in _OTHER_DAYS if not re.match(r"[\u3040-\u30ff\u4e00-\u9fff]", w)), key=len, reverse=True))
_CJK_DAYS = "|".join(sorted((re.escape(w) for w in _OTHER_DAYS if re.match(r"[\u3040-\u30ff\u4e00-\u9fff]", w)), key=len, reverse=True))


def _resolve_other_day(match: re.Match[str], reference: date) -> _Phrase:
    word = match.group(0).lower()
    return _Phrase.same((reference + timedelta(days=_OTHER_DAYS[word])).isoformat())


def _as_of(until: str) -> _Resolver:
    def resolve(match: re.Match[str], reference: date) -> _Phrase:
        iso = reference.isoformat()
        return _Phrase(f"as of {iso}", until.format(iso), f"as of {iso}")

    return resolve


def _fixed(template: str) -> _Resolver:
    def resolve(match: re.Match[str], reference: date) -> _Phrase:
        return _Phrase.same(template.format(reference.isoformat()))

    return resolve


def _rule(pattern: str, resolve: _Resolver) -> _Rule:
    return _Rule(re.compile(pattern, re.IGNORECASE), resolve)


_WEEKDAY = "|".join(_WEEKDAYS)

# Where two rules match the same text, the earlier one wins: "3 days ago" is computed by the
# counted rule, and the last rule only rewords the "... ago" that no other rule can compute.
_RULES = (
    _rule(
        rf"{_START}(?P<day>the\s+day\s+before\s+yesterday|the\s+day\s+after\s+tomorrow|yesterday"
        rf"|today|tomorrow){_END}(?:\s+(?P<part>{_PART}){_END})?{_POSSESSIVE}",
        _resolve_day,
    ),
    _rule(
        rf"{_START}(?P<when>tonight|last\s+night|this\s+(?:morning|afternoon|evening)){_END}{_POSSESSIVE}",
        _resolve_part,
    ),
    _rule(
        rf"{_START}{_NOT_AFTER_THE}(?P<which>{_WHICH})\s+(?P<weekday>{_WEEKDAY}){_END}"
        rf"(?:\s+(?P<part>{_PART}){_END})?{_POSSESSIVE}{_NOT_OF}",
        _resolve_weekday,
    ),
    _rule(
        rf"{_START}{_NOT_AFTER_THE}(?P<which>{_WHICH})\s+(?P<unit>week|weekend|month|quarter|year)"
        rf"{_END}{_POSSESSIVE}{_NOT_OF}",
        _resolve_unit,
    ),
    _rule(
        rf"(?<![\w.,-])(?P<count>{_COUNT}|an?)\s+(?P<unit>{_UNIT})s?\s+(?P<direction>ago|from\s+now)"
        rf"{_END}",
        _resolve_quantity,
    ),
    _rule(
        rf"{_START}in\s+(?P<span>(?:(?P<count>{_COUNT})|a\s+few|a\s+couple(?:\s+of)?|several)\s+"
        rf"(?P<unit>{_UNIT})s?){_END}(?!\s+(?:after|before|from|of)\b)",
        _resolve_in,
    ),
    _rule(
        rf"{_START}the\s+(?P<direction>past|last|next|coming)\s+(?P<span>(?:(?:{_COUNT}|few"
        rf"|couple(?:\s+of)?|several)\s+)?(?:{_UNIT})s|week|weekend|month|quarter|year){_END}"
        rf"{_POSSESSIVE}(?!\s+(?:of|before|after)\b)",
        _resolve_the,
    ),
    _rule(rf"{_START}(?:recently|lately){_END}", _as_of("shortly before {}")),
    _rule(
        rf"{_START}(?:currently|nowadays|(?<!\bof\s)these\s+days|at\s+present|right\s+now|for\s+now"
        rf"|at\s+the\s+moment(?!\s+(?:of|when|that)\b)){_END}",
        _as_of("{}"),
    ),
    _rule(rf"{_START}just\s+now{_END}", _fixed("on {}")),
    _rule(rf"{_START}the\s+other\s+day{_END}", _fixed("shortly before {}")),
    # Bare "now" is too idiomatic to rewrite ("now that"); after these prepositions it is a date. "now" is
    # matched first and the preposition looked for behind it: eight look-behinds at every position are slow.
    _rule(
        rf"now(?:(?<=\bsince\snow)|(?<=\buntil\snow)|(?<=\btill\snow)|(?<=\btil\snow)|(?<=\bto\snow)|(?<=\bby\snow)"
        rf"|(?<=\bof\snow)|(?<=\bfrom\snow)){_END}",
        _fixed("{}"),
    ),
    _Rule(re.compile(rf"(?<![\w-])(?!(?-i:Morgen))(?<!\bla\s)(?<!\blas\s)(?:{_SPACED_DAYS})(?![\w-])|(?:{_CJK_DAYS})", re.IGNORECASE),
          _resolve_other_day),
    # Any other "... ago" keeps its words: "a few days ago" -> "a few days before 2026-03-16".
    _rule(
        rf"{_START}(?P<span>(?:(?:a\s+few|a\s+couple(?:\s+of)?|several|many|some|[\d,.]+|an?)\s+)?"
        rf"(?:{_UNIT}|fortnight|while|moment|time)s?\s+)?ago{_END}",
        _resolve_ago,
    ),
)


@lru_cache(maxsize=16384)
def _expressions(text: str) -> tuple[tuple[_Rule, re.Match[str]], ...]:
    """Return `_scan(text)`, memoised: it does not depend on the reference day, and a dream normalises many texts repeatedly."""
    return tuple(_scan(text))


def _scan(text: str) -> Iterator[tuple[_Rule, re.Match[str]]]:
    """Yield the relative expressions of `text`, left to right, without overlaps."""
    position = 0
    while True:
        best: tuple[_Rule, re.Match[str]] | None = None
        for rule in _RULES:
            found = rule.pattern.search(text, position)
            if found and (best is None or (found.start(), -found.end()) < (best[1].start(), -best[1].end())):
                best = (rule, found)
        if best is None:
            return
        yield best
        position = best[1].end()


def utc(moment: datetime) -> datetime:
    """Return `moment` in UTC; a naive one is UTC already (as memctl stores it)."""
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def _reference_day(reference: date | datetime) -> date:
    return utc(reference).date() if isinstance(reference, datetime) else reference


def _replacement(text: str, rule: _Rule, match: re.Match[str], reference: date) -> str:
    resolved = rule.resolve(match, reference)
    phrase = _shift_phrase(resolved, reference) if isinstance(resolved, _Shift) else resolved
    start = match.start()
    if match.groupdict().get("poss"):
        wording = phrase.attributive
    elif _PREPOSITION_BEFORE.search(text, 0, start) or (_CLAUSE_START.search(text, 0, start) and _COPULA_AFTER.match(text, match.end())):
        wording = phrase.bare
    else:
        wording = phrase.adverbial
    if match.group(0)[0].isupper():
        wording = wording[0].upper() + wording[1:]
    return wording


def normalise(text: str, reference: date | datetime) -> str:
    """Return `text` with its relative time expressions made absolute against `reference`."""
    day = _reference_day(reference)
    pieces: list[str] = []
    done = 0
    for rule, match in _expressions(text):
        pieces.append(text[done : match.start()])
        pieces.append(_replacement(text, rule, match, day))
        done = match.end()
    pieces.append(text[done:])
    return "".join(pieces)


def forget() -> None:
    """Empty the memoised expressions (memctl/phases/slices.py, between slices of a large store)."""
    _expressions.cache_clear()


def find_relative(text: str) -> list[str]:
    """Return the relative time expressions left in `text`, as written, in order."""
    return [match.group(0) for _, match in _expressions(text)]
