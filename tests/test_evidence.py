"""A model's quoted evidence, checked by code (memctl/text/evidence.py; DESIGN 4, "Decisions").

The quotes decide what code may act on: a quote not in its note makes the reply unusable; subject
quotes that differ, or a number or ID the notes differ in left outside the quoted values, keep a
verdict from being applied. No word's position, case or part of speech counts.
"""

from __future__ import annotations

import pytest

from memctl.text.evidence import DIFFERENT, HOLDS, UNSHOWN, Quoted, check, same_value, unfound, values_apart


def q(text: str, subject: str, value: str) -> Quoted:
    return Quoted(text, subject, value)


@pytest.mark.parametrize(("a", "b"), [
    # the seed's scenario: a changed time is a value, not another subject
    (q("Preferred meeting slot is 9am.", "Preferred meeting slot", "9am"), q("Preferred meeting slot is 4pm.", "Preferred meeting slot", "4pm")),
    # two imperative verbs around one person are no evidence of two subjects
    (q("Give all times to Ann Lee in CET.", "Ann Lee", "CET"), q("Schedule calls with Ann Lee in PST.", "Ann Lee", "PST")),
    (q("Alle Uhrzeiten für Anna Lehmann in MEZ angeben.", "Anna Lehmann", "MEZ"), q("Telefonate mit Anna Lehmann nach PST planen.", "Anna Lehmann", "PST")),
    (q("Для Анны Ли все время указывать в CET.", "Анны Ли", "CET"), q("Звонки для Анны Ли планировать по PST.", "Анны Ли", "PST")),
    # a budget in any digit system, the subject quoted in another case
    (q("Ana's travel budget is 5000 EUR.", "ana's travel budget", "5000 EUR"), q("Ana's travel budget is 7000 EUR.", "Ana's Travel Budget", "7000 EUR")),
    (q("ميزانية السفر لآنا ٥٠٠٠ يورو.", "ميزانية السفر لآنا", "٥٠٠٠ يورو"), q("ميزانية السفر لآنا 7000 يورو.", "ميزانية السفر لآنا", "7000 يورو")),
    (q("山田さんの会議は9時です。", "山田さんの会議", "9時"), q("山田さんの会議は１６時です。", "山田さんの会議", "16時")),
    # a fact a merge adds, its number inside the quoted value
    (q("Ticket 4410 is about SSO.", "Ticket 4410", "about SSO"), q("Ticket 4410 is about SSO, reported at 09:00.", "Ticket 4410", "about SSO, reported at 09:00")),
])
def test_quotes_that_hold(a: Quoted, b: Quoted) -> None:
    assert unfound([a, b], ["A", "B"]) is None
    assert check([a, b]).outcome == HOLDS


@pytest.mark.parametrize(("a", "b", "outcome", "named"), [
    # the whole noun phrase: subjects that differ in a number
    (q("Account 1000 uses the billing module.", "Account 1000", "the billing module"),
     q("Account 1009 uses the reporting module.", "Account 1009", "the reporting module"), DIFFERENT, "1000"),
    # a shorter span that leaves the number out: the number is outside the quoted values
    (q("Account 1000 uses the billing module.", "Account", "the billing module"),
     q("Account 1009 uses the reporting module.", "Account", "the reporting module"), DIFFERENT, "1009"),
    (q("Konto ١٠٠٠ nutzt das Abrechnungsmodul.", "Konto", "das Abrechnungsmodul"),
     q("Konto 1013 nutzt das Berichtsmodul.", "Konto", "das Berichtsmodul"), DIFFERENT, "1013"),
    (q("Mail ana@example.com gets the weekly digest.", "Mail", "the weekly digest"),
     q("Mail bob@example.com gets the daily digest.", "Mail", "the daily digest"), DIFFERENT, "bob@example.com"),
    (q("SKU 88-A is out of stock in Leeds.", "SKU", "out of stock in Leeds"),
     q("SKU 88-B is out of stock in York.", "SKU", "out of stock in York"), DIFFERENT, "88-a"),
    (q("Die Lieferung vom 02.09.2024 war vollständig.", "Die Lieferung", "vollständig"),
     q("Die Lieferung vom 09.02.2024 war unvollständig.", "Die Lieferung", "unvollständig"), DIFFERENT, "2024"),
    (q("Flat 2A rent is 1150 per month.", "rent", "1150 per month"), q("Flat 2B rent is 1200 per month.", "rent", "1200 per month"), DIFFERENT, "2a"),
    # two people named as the subjects
    (q("Ana Ruiz prefers email.", "Ana Ruiz", "email"), q("Diego Paz prefers phone calls.", "Diego Paz", "phone calls"), UNSHOWN, "Ana Ruiz"),
    (q("王建国的时区是CET。", "王建国", "CET"), q("王建军的时区是PST。", "王建军", "PST"), UNSHOWN, "王建国"),
])
def test_quotes_that_do_not_show_one_subject(a: Quoted, b: Quoted, outcome: str, named: str) -> None:
    assert unfound([a, b], ["A", "B"]) is None
    found = check([a, b])
    assert found.outcome == outcome and named in found.reason


def test_a_merge_of_three_checks_every_note() -> None:
    notes = [q("Eli Moss prefers to be contacted via Slack.", "Eli Moss", "contacted via Slack"),
             q("Contact Eli Moss by Slack first.", "Eli Moss", "by Slack first"),
             q("Eli Moss's preferred channel is Slack.", "Eli Moss", "preferred channel is Slack")]
    assert check(notes).holds
    assert check([*notes, q("Eli Ross's preferred channel is Slack.", "Eli Ross", "Slack")]).outcome == UNSHOWN


@pytest.mark.parametrize(("quoted", "problem"), [
    (q("Preferred meeting slot is 9am.", "", "9am"), "quotes no subject"),
    (q("Preferred meeting slot is 9am.", "Preferred slot", "9am"), "not in that note"),  # not one run of its words
    (q("Preferred meeting slot is 9am.", "Preferred meeting slot", "9 am"), "not in that note"),  # "9am" is one token
    (q("Preferred meeting slot is 9am.", "meeting", "10am"), "not in that note"),
    (q("Abrechnungsmodul ist aktiv.", "Abrechnung", "aktiv"), "not in that note"),  # a part of a word is no quote
    (q("Petrova prefers email.", "Petrov", "email"), "not in that note"),
    (q("Preferred meeting slot is 9am.", "Preferred meeting slot", "..."), "quotes no value"),
])
def test_a_quote_missing_or_not_in_its_note_is_unusable(quoted: Quoted, problem: str) -> None:
    other = q("Preferred meeting slot is 4pm.", "Preferred meeting slot", "4pm")
    found = unfound([quoted, other], ["note A", "note B"])
    assert found is not None and problem in found and "note A" in found


def test_a_quote_may_end_where_a_word_meets_punctuation() -> None:
    a, b = q("Ana's travel budget is 5000 EUR.", "Ana", "5000 EUR"), q("Ana's travel budget is 7000 EUR.", "Ana", "7000 EUR")
    assert unfound([a, b], ["A", "B"]) is None and check([a, b]).holds
    # a Japanese or Chinese quote may end at any character
    assert unfound([q("アナはスラックでの連絡を好む。", "アナ", "スラック")], ["A"]) is None


def test_quotes_are_read_after_unicode_normalisation() -> None:
    # full-width letters and digits, another case, other spacing and punctuation
    note = q("Ｐｒｅｆｅｒｒｅｄ  meeting slot:  ９am.", "preferred meeting slot", "9AM")
    assert unfound([note], ["A"]) is None
    assert same_value(note, q("It is 9am.", "it", "９ａｍ"))
    assert not same_value(note, q("It is 4pm.", "it", "4pm"))


def test_the_same_numbers_in_another_order_outside_the_values_are_different_subjects() -> None:
    a, b = "2024年3月5日的对账单有误。", "2024年5月3日的对账单有误。"
    assert check((Quoted(a, "对账单", "有误"), Quoted(b, "对账单", "有误"))).outcome == DIFFERENT
    # the same numbers in the same order are the subject both notes share
    a, b = "Account 17 of project 4 pays 500.", "Account 17 of project 4 pays 700."
    assert check((Quoted(a, "Account 17 of project 4", "500"), Quoted(b, "Account 17 of project 4", "700"))).holds


def test_values_quoted_from_words_both_notes_share_are_not_apart() -> None:
    a, b = "Quarterly review with Globex on 14 June is confirmed.", "Quarterly review with Globex on 14 July is confirmed."
    assert not values_apart(Quoted(a, "on", "is confirmed"), Quoted(b, "on", "is"))
    assert values_apart(Quoted(a, "Quarterly review with Globex", "14 June"), Quoted(b, "Quarterly review with Globex", "14 July"))
    # a negation: the denying side's value holds the word the other lacks
    a, b = "User wants email summaries.", "User no longer wants email summaries."
    assert values_apart(Quoted(a, "User", "wants email summaries"), Quoted(b, "User", "no longer wants email summaries"))
