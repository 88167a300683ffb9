"""Relative -> absolute date normalisation, and the validator's view of what is left relative."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memctl.temporal import find_relative, normalise

MONDAY = date(2026, 3, 16)
SATURDAY = date(2026, 3, 21)
SUNDAY = date(2026, 3, 22)
NEW_YEAR = date(2026, 1, 1)
LEAP_MARCH_END = date(2024, 3, 31)

CASES = [
    # Days, with the adverbial form taking its own preposition.
    (MONDAY, "Yesterday we decided to use Redis", "On 2026-03-15 we decided to use Redis"),
    (MONDAY, "we moved to Redis yesterday", "we moved to Redis on 2026-03-15"),
    (MONDAY, "today", "on 2026-03-16"),
    (MONDAY, "The deploy is tomorrow", "The deploy is on 2026-03-17"),
    (MONDAY, "the day before yesterday", "on 2026-03-14"),
    (MONDAY, "the day after tomorrow", "on 2026-03-18"),
    (MONDAY, "this morning", "on the morning of 2026-03-16"),
    (MONDAY, "this afternoon", "on the afternoon of 2026-03-16"),
    (MONDAY, "This evening", "On the evening of 2026-03-16"),
    (MONDAY, "tonight", "on the night of 2026-03-16"),
    (MONDAY, "last night", "on the night of 2026-03-15"),
    (MONDAY, "yesterday afternoon", "on the afternoon of 2026-03-15"),
    (MONDAY, "tomorrow morning", "on the morning of 2026-03-17"),
    (MONDAY, "just now", "on 2026-03-16"),
    (MONDAY, "earlier today", "earlier on 2026-03-16"),
    # Counted units, ago and ahead.
    (MONDAY, "3 days ago", "on 2026-03-13"),
    (MONDAY, "a day ago", "on 2026-03-15"),
    (MONDAY, "an hour ago", "on 2026-03-16"),
    (MONDAY, "45 minutes ago", "on 2026-03-16"),
    (MONDAY, "two weeks ago", "in the week of 2026-03-02"),
    (MONDAY, "a week ago", "in the week of 2026-03-09"),
    (MONDAY, "twelve months ago", "in March 2025"),
    (MONDAY, "5 months ago", "in October 2025"),
    (MONDAY, "two quarters ago", "in Q3 2025"),
    (MONDAY, "3 years ago", "in 2023"),
    (MONDAY, "in 3 days", "on 2026-03-19"),
    (MONDAY, "in two weeks", "in the week of 2026-03-30"),
    (MONDAY, "in 10 months", "in January 2027"),
    (MONDAY, "in eleven years", "in 2037"),
    (MONDAY, "4 days from now", "on 2026-03-20"),
    # Calendar units: ISO weeks named by their Monday, weekends by their Saturday.
    (MONDAY, "last week", "in the week of 2026-03-09"),
    (MONDAY, "this week", "in the week of 2026-03-16"),
    (MONDAY, "next week", "in the week of 2026-03-23"),
    (SUNDAY, "this week", "in the week of 2026-03-16"),
    (SUNDAY, "last week", "in the week of 2026-03-09"),
    (MONDAY, "this past week", "in the week of 2026-03-09"),
    (MONDAY, "last weekend", "on the weekend of 2026-03-14"),
    (MONDAY, "this weekend", "on the weekend of 2026-03-21"),
    (MONDAY, "next weekend", "on the weekend of 2026-03-28"),
    (MONDAY, "last month", "in February 2026"),
    (MONDAY, "this month", "in March 2026"),
    (MONDAY, "next month", "in April 2026"),
    (MONDAY, "last quarter", "in Q4 2025"),
    (MONDAY, "this quarter", "in Q1 2026"),
    (MONDAY, "last year", "in 2025"),
    (MONDAY, "this year", "in 2026"),
    (MONDAY, "next year", "in 2027"),
    (MONDAY, "earlier this week", "earlier in the week of 2026-03-16"),
    # Weekdays: last / this / next = that day of the previous / current / following ISO week.
    (MONDAY, "next Monday", "on 2026-03-23"),
    (MONDAY, "last Friday", "on 2026-03-13"),
    (MONDAY, "this Friday", "on 2026-03-20"),
    (MONDAY, "this Monday", "on 2026-03-16"),
    (SATURDAY, "this Friday", "on 2026-03-20"),
    (SATURDAY, "last Friday", "on 2026-03-13"),
    (SATURDAY, "next Friday", "on 2026-03-27"),
    (SATURDAY, "this past Friday", "on 2026-03-20"),
    (SATURDAY, "this coming Friday", "on 2026-03-27"),
    (MONDAY, "this past Monday", "on 2026-03-09"),
    (MONDAY, "this coming Monday", "on 2026-03-23"),
    (MONDAY, "Next Tuesday evening", "On the evening of 2026-03-24"),
    (MONDAY, "last SUNDAY", "on 2026-03-15"),
    # Vague expressions keep their vagueness but gain an anchor.
    (MONDAY, "We recently moved to Redis", "We as of 2026-03-16 moved to Redis"),
    (MONDAY, "Recently, the user switched to vim", "As of 2026-03-16, the user switched to vim"),
    (MONDAY, "Lately he prefers tea", "As of 2026-03-16 he prefers tea"),
    (MONDAY, "The team currently uses Postgres", "The team as of 2026-03-16 uses Postgres"),
    (MONDAY, "nowadays", "as of 2026-03-16"),
    (MONDAY, "These days she works remotely", "As of 2026-03-16 she works remotely"),
    (MONDAY, "at the moment", "as of 2026-03-16"),
    (MONDAY, "at present", "as of 2026-03-16"),
    (MONDAY, "right now", "as of 2026-03-16"),
    (MONDAY, "SQLite for now", "SQLite as of 2026-03-16"),
    (MONDAY, "until recently", "until shortly before 2026-03-16"),
    (MONDAY, "We talked the other day", "We talked shortly before 2026-03-16"),
    (MONDAY, "a few days ago", "a few days before 2026-03-16"),
    (MONDAY, "A couple of weeks ago we met", "A couple of weeks before 2026-03-16 we met"),
    (MONDAY, "several years ago", "several years before 2026-03-16"),
    (MONDAY, "long ago", "long before 2026-03-16"),
    (MONDAY, "1,000 days ago", "1,000 days before 2026-03-16"),
    (MONDAY, "in a few weeks", "a few weeks after 2026-03-16"),
    (MONDAY, "in the last two weeks", "in the two weeks before 2026-03-16"),
    (MONDAY, "over the past 24 hours", "over the 24 hours before 2026-03-16"),
    (MONDAY, "within the next few days", "within the few days after 2026-03-16"),
    (MONDAY, "The past week was rough", "The week before 2026-03-16 was rough"),
    (MONDAY, "until now", "until 2026-03-16"),
    (MONDAY, "as of now", "as of 2026-03-16"),
    (MONDAY, "from now on", "from 2026-03-16 on"),
    (MONDAY, "Paid since now", "Paid since 2026-03-16"),
    (MONDAY, "done till now, and til NOW", "done till 2026-03-16, and til 2026-03-16"),
    (MONDAY, "up to now; shipped by now", "up to 2026-03-16; shipped by 2026-03-16"),
    # After a preposition, or as a sentence's subject, the bare form.
    (MONDAY, "since yesterday", "since 2026-03-15"),
    (MONDAY, "Since last week", "Since the week of 2026-03-09"),
    (MONDAY, "until tomorrow", "until 2026-03-17"),
    (MONDAY, "postponed to next week", "postponed to the week of 2026-03-23"),
    (MONDAY, "by the end of this month", "by the end of March 2026"),
    (MONDAY, "from next month", "from April 2026"),
    (MONDAY, "planned for next Monday", "planned for 2026-03-23"),
    (MONDAY, "as of today", "as of 2026-03-16"),
    (MONDAY, "since 3 days ago", "since 2026-03-13"),
    (MONDAY, "Tomorrow is the deadline", "2026-03-17 is the deadline"),
    (MONDAY, "Last year was hard. Next month will be calmer", "2025 was hard. April 2026 will be calmer"),
    (MONDAY, "Ok. Yesterday was busy", "Ok. 2026-03-15 was busy"),
    # Possessives become attributes; "today's" is as relative as "today".
    (MONDAY, "yesterday's meeting", "the 2026-03-15 meeting"),
    (MONDAY, "Yesterday's meeting ran long", "The 2026-03-15 meeting ran long"),
    (MONDAY, "today's standup", "the 2026-03-16 standup"),
    (MONDAY, "at this morning's standup", "at the 2026-03-16 morning standup"),
    (MONDAY, "tonight’s dinner", "the 2026-03-16 night dinner"),
    (MONDAY, "last Friday's demo", "the 2026-03-13 demo"),
    (MONDAY, "last week's release", "the week of 2026-03-09's release"),
    (MONDAY, "last month's invoice", "the February 2026 invoice"),
    (MONDAY, "last year's budget", "the 2025 budget"),
    # Several expressions in one text.
    (
        MONDAY,
        "Yesterday we chose Redis; last week it was Memcached, and next month we migrate.",
        "On 2026-03-15 we chose Redis; in the week of 2026-03-09 it was Memcached, and in April 2026 we migrate.",
    ),
    (
        MONDAY,
        "Moved standup to tomorrow. Since last Friday, the user prefers tea; 2 days ago coffee.",
        "Moved standup to 2026-03-17. Since 2026-03-13, the user prefers tea; on 2026-03-14 coffee.",
    ),
    # Month and year boundaries, month lengths, leap years.
    (NEW_YEAR, "last month", "in December 2025"),
    (NEW_YEAR, "yesterday", "on 2025-12-31"),
    (NEW_YEAR, "last week", "in the week of 2025-12-22"),
    (NEW_YEAR, "this week", "in the week of 2025-12-29"),
    (NEW_YEAR, "last quarter", "in Q4 2025"),
    (NEW_YEAR, "twelve months ago", "in January 2025"),
    (date(2025, 12, 31), "tomorrow", "on 2026-01-01"),
    (date(2025, 12, 31), "next month", "in January 2026"),
    (date(2025, 11, 30), "in 3 months", "in February 2026"),
    (LEAP_MARCH_END, "last month", "in February 2024"),
    (LEAP_MARCH_END, "a month ago", "in February 2024"),
    (date(2025, 3, 31), "last month", "in February 2025"),
    (date(2026, 5, 31), "next month", "in June 2026"),
    (date(2024, 3, 1), "yesterday", "on 2024-02-29"),
    (date(2023, 3, 1), "yesterday", "on 2023-02-28"),
    (date(2024, 2, 28), "tomorrow", "on 2024-02-29"),
    (date(2024, 2, 29), "a year ago", "in 2023"),
    (date(2024, 2, 29), "in 7 days", "on 2024-03-07"),
    # The ends of the calendar: the offset is stated rather than computed.
    (date(9999, 12, 31), "next year", "1 year after 9999-12-31"),
    (date(1, 1, 1), "yesterday", "1 day before 0001-01-01"),
]

UNCHANGED = [
    "We meet on Mondays",
    "Standups are on Monday and Friday",
    "Every Friday the report is sent",
    "The todayish feeling",
    "The user now prefers dark mode",
    "Now that we use Redis, caching is simple",
    "Sent to nowhere, then to snow country, from-now tokens and by  now-ish",
    "the last week of March is a freeze",
    "the last Friday of the month",
    "the last Friday before the release",
    "Three days later the fix shipped",
    "The following week they moved on",
    "one of these days",
    "at the moment of signing",
    "a today-only discount",
    "Released on 2026-03-15 in the week of 2026-03-09",
    "In February 2026 the limit was 5",
    "The nextweek flag and the lastyear table",
    "He was yesterdays news",
    "",
]

GOOD = [
    "On 2026-03-15 the user chose Redis.",
    "As of 2026-03-16 the team uses Postgres.",
    "The 2026-03-13 demo went well; standups are on Mondays.",
    "In Q4 2025 revenue doubled.",
]

BAD = [
    ("The user chose Redis yesterday.", ["yesterday"]),
    ("Last week the team moved; recently it moved back.", ["Last week", "recently"]),
    ("Since last Friday's outage, 3 days ago and a few weeks ago", ["last Friday's", "3 days ago", "a few weeks ago"]),
    ("We ship in two weeks, not next month or this weekend.", ["in two weeks", "next month", "this weekend"]),
    ("Until now, at the moment, the other day", ["now", "at the moment", "the other day"]),
    ("Over the past 24 hours and the next few days", ["the past 24 hours", "the next few days"]),
    ("today's plan is TONIGHT", ["today's", "TONIGHT"]),
]


@pytest.mark.parametrize(("reference", "text", "expected"), CASES)
def test_normalise(reference: date, text: str, expected: str) -> None:
    assert normalise(text, reference) == expected
    assert find_relative(expected) == []


@pytest.mark.parametrize(("reference", "text", "expected"), CASES)
def test_every_case_is_reported_before_normalising(reference: date, text: str, expected: str) -> None:
    assert find_relative(text) != []


@pytest.mark.parametrize("text", UNCHANGED)
def test_text_without_relative_expressions_is_unchanged(text: str) -> None:
    assert normalise(text, MONDAY) == text
    assert find_relative(text) == []


@pytest.mark.parametrize("text", GOOD)
def test_find_relative_accepts_absolute_text(text: str) -> None:
    assert find_relative(text) == []


@pytest.mark.parametrize(("text", "expected"), BAD)
def test_find_relative_reports_each_expression_as_written(text: str, expected: list[str]) -> None:
    assert find_relative(text) == expected


@pytest.mark.parametrize(
    ("reference", "expected"),
    [
        (datetime(2026, 3, 16, 23, 30, tzinfo=UTC), "on 2026-03-15"),
        (datetime(2026, 3, 17, 0, 30, tzinfo=timezone(timedelta(hours=2))), "on 2026-03-15"),
        (datetime(2026, 3, 16, 20, 0, tzinfo=timezone(timedelta(hours=-5))), "on 2026-03-16"),
        (datetime(2026, 3, 16, 23, 59), "on 2026-03-15"),
    ],
)
def test_datetime_reference_is_reduced_to_its_utc_date(reference: datetime, expected: str) -> None:
    assert normalise("yesterday", reference) == expected


PHRASES = [
    "yesterday", "today", "tomorrow", "tonight", "last night", "this morning", "this afternoon",
    "this evening", "the day before yesterday", "the day after tomorrow", "yesterday morning",
    "3 days ago", "a day ago", "an hour ago", "two weeks ago", "five months ago", "12 years ago",
    "one quarter ago", "in 3 days", "in two weeks", "in 7 months", "in ten years", "in a few days",
    "in a couple of weeks", "2 days from now", "last week", "this week", "next week", "this past week",
    "last weekend", "this weekend", "next weekend", "last month", "this month", "next month",
    "last quarter", "next quarter", "last year", "this year", "next year", "next Monday",
    "last Friday", "this Friday", "this past Sunday", "this coming Wednesday", "next Tuesday night",
    "recently", "lately", "currently", "nowadays", "these days", "at the moment", "at present",
    "right now", "for now", "just now", "the other day", "a few days ago", "a couple of weeks ago",
    "several years ago", "long ago", "the past week", "the last two weeks", "the next few days",
    "the past 24 hours", "until now", "from now on", "yesterday's", "today's", "last week's",
    "last Friday's", "this morning's",
]  # fmt: skip
FILLERS = [
    "we", "the", "of", "in", "on", "since", "until", "to", "for", "by", "from", "as", "is", "was",
    "Redis", "meeting", "Mondays", "Friday", "now", "that", "later", ".", ",", ";", "and", "2026",
    "before", "after", "week", "last", "next", "this", "days", "ago", "'s", "-",
]  # fmt: skip


def _cased(word: str, style: int) -> str:
    return (word, word.capitalize(), word.upper())[style]


texts = st.lists(
    st.tuples(st.sampled_from(PHRASES + FILLERS), st.integers(min_value=0, max_value=2)),
    max_size=12,
).map(lambda words: " ".join(_cased(word, style) for word, style in words))
references = st.one_of(
    st.dates(min_value=date(1900, 1, 1), max_value=date(2100, 12, 31)),
    st.dates(),
)


@settings(max_examples=400, deadline=None)
@given(text=texts, reference=references)
def test_normalised_text_has_no_relative_expressions(text: str, reference: date) -> None:
    normalised = normalise(text, reference)
    assert find_relative(normalised) == []
    assert normalise(normalised, reference) == normalised


@settings(max_examples=200, deadline=None)
@given(phrase=st.sampled_from(PHRASES), style=st.integers(min_value=0, max_value=2), reference=references)
def test_every_supported_phrase_is_reported_and_resolved(phrase: str, style: int, reference: date) -> None:
    text = f"Noted {_cased(phrase, style)} here"
    assert find_relative(text) != []
    assert find_relative(normalise(text, reference)) == []


@pytest.mark.parametrize(
    "text,expected",
    [
        ("Ana rief gestern an.", "Ana rief 2026-03-15 an."),
        ("Tom kommt morgen.", "Tom kommt 2026-03-17."),
        ("Am Morgen ist es kalt.", "Am Morgen ist es kalt."),
        ("Ana llamó ayer por la mañana.", "Ana llamó 2026-03-15 por la mañana."),
        ("Tom est venu avant-hier.", "Tom est venu 2026-03-14."),
        ("Том звонил вчера.", "Том звонил 2026-03-15."),
        ("汤姆昨天打电话了。", "汤姆2026-03-15打电话了。"),
        ("トムは明日来る。", "トムは2026-03-17来る。"),
        ("اتصل توم أمس.", "اتصل توم 2026-03-15."),
    ],
)
def test_day_words_of_other_languages_become_dates(text: str, expected: str) -> None:
    assert normalise(text, date(2026, 3, 16)) == expected
    assert find_relative(expected) == []
