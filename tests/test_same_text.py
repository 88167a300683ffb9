"""`same_text_key`: what counts as the same text for copies and standing notes (issue 29)."""

from __future__ import annotations

import pytest

from memctl.text.tokens import same_text_key


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("Ana prefers answers in Spanish.", "ana prefers answers in Spanish!"),
        ("  Ana   prefers\tanswers in Spanish ", "Ana prefers answers in Spanish."),
        ("Ｔｈｅ ｐｒｉｃｅ ｉｓ ３．５．", "The price is 3.5"),  # full-width letters, digits and full stop
        ("安娜喜欢西班牙语。", "安娜喜欢西班牙语"),
        ("安娜喜欢西班牙语！", "安娜喜欢西班牙语？"),
        ("Wait… really?! Yes.", "wait really yes"),
        ("Die Straße ist gesperrt.", "DIE STRASSE IST GESPERRT"),
        ("Ship it. Then tell Ana.", "Ship it Then tell Ana"),
    ],
)
def test_the_same_text_in_another_case_spacing_or_closing_punctuation_has_one_key(a: str, b: str) -> None:
    assert same_text_key(a) == same_text_key(b)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("The limit is 3.5", "The limit is 35"),
        ("Meet at 10.30 am", "Meet at 1030 am"),
        ("Ana prefers Spanish.", "Ana prefers Spanish, mostly."),
        ("Use e-mail", "Use email"),
        ("A。B", "AB"),  # a full stop between CJK sentences is not at a sentence end by this rule
        ("Ana does not prefer Spanish.", "Ana prefers Spanish."),
    ],
)
def test_different_texts_keep_different_keys(a: str, b: str) -> None:
    assert same_text_key(a) != same_text_key(b)


def test_the_key_is_stable_and_idempotent() -> None:
    text = "Ｍｉｘｅｄ  Case…  and ÉTÉ."
    assert same_text_key(same_text_key(text)) == same_text_key(text) == "mixed case and été"
    assert same_text_key("") == same_text_key(" .!? ") == ""
