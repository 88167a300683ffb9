"""Tokens and sentences in any script.

This module knows no language, only Unicode. NFKC text is read as tokens: a URL or e-mail address
is one; a number is one in any digit system, in ASCII digits without grouping ("1,000", "١٬٠٠٠" ->
"1000"); letters with inner connectors ("INV-2024-0042", "l'heure") are a word, or an ID when they
mix in digits. Spaceless scripts are cut per character (each Han or hiragana, a katakana run): a
segmenter would guess word boundaries, and a misplaced one makes two wordings of a fact differ.
Tokens keep their text as written (casing matters for names) and a casefolded comparison form.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache

__all__ = ["Token", "normal", "same_text_key", "sentences", "tokens", "ascii_digits", "is_spaceless", "NUMBER", "ID", "WORD", "CHAR", "EMAIL", "URL"]

# token kinds
WORD = "word"
CHAR = "char"  # one character of a script written without spaces (or a katakana run)
NUMBER = "number"
ID = "id"
EMAIL = "email"
URL = "url"
#: kinds that identify something by themselves: a different one names a different subject or value
HARD_KINDS = frozenset({NUMBER, ID, EMAIL, URL})

_HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002fa1f"
_HIRAGANA = "\u3040-\u309f"
_KATAKANA = "\u30a0-\u30ff\u31f0-\u31ff"
#: marks that belong to the letter before them (Python's \w does not match most of them)
_MARKS = (
    "\u0300-\u036f\u0483-\u0489\u0591-\u05c7\u0610-\u061a\u064b-\u065f\u0670\u06d6-\u06ed\u0711\u0730-\u074a"
    "\u0900-\u0903\u093a-\u094f\u0951-\u0957\u0962\u0963\u0981-\u0983\u09bc-\u09d7\u0a01-\u0a83\u0abc-\u0acd"
    "\u0b01-\u0b03\u0b3c-\u0b57\u0b82-\u0bd7\u0c00-\u0c04\u0c3e-\u0c56\u0c81-\u0c83\u0cbc-\u0cd6\u0d00-\u0d03"
    "\u0d3b-\u0d57\u0e31\u0e34-\u0e3a\u0e47-\u0e4e\u0eb1\u0eb4-\u0ebc\u0ec8-\u0ecd\u1037-\u103e\u17b4-\u17d3"
    "\u200c\u200d"
)
_LETTERS_RUN = rf"(?:[^\W_{_HAN}{_HIRAGANA}{_KATAKANA}\u30fc]+|[{_MARKS}]+)+"
_CONNECTOR = r"[-'’./:+_#@&]"
_WORD_RE = rf"{_LETTERS_RUN}(?:{_CONNECTOR}{_LETTERS_RUN})*"
#: a number with a thousands grouping ("1,000", "1.000.000", "1 000"), or any run of digits with
#: one decimal part; the grouping separators are dropped in the comparison form
_GROUPED = r"(?P<int>\d{1,3}(?P<sep>[,.\u066c\u2009\u202f ])\d{3}(?:(?P=sep)\d{3})*)(?:[.,\u066b]\d+)?(?!\d)"
_TOKEN = re.compile(
    r"(?P<url>(?:https?://|www\.)[^\s<>\"'。、，！？]+[^\s<>\"'。、，！？.,;:!?)\]])"
    r"|(?P<email>[\w.%+-]+@[\w-]+(?:\.[\w-]+)+)"  # an address's letters and digits may be any script's (RFC 6531)
    rf"|(?P<grouped>{_GROUPED})"
    r"|(?P<decimal>\d+,\d+(?![\d,]))"
    rf"|(?P<han>[{_HAN}])"
    rf"|(?P<kana>[{_HIRAGANA}])"
    rf"|(?P<kata>[{_KATAKANA}\u30fc]+)"
    rf"|(?P<word>[#@]?{_WORD_RE})"
)
_DIGIT = re.compile(r"\d")
_LETTERS = re.compile(r"[^\W\d_]")
_SPACELESS = re.compile(rf"[{_HAN}{_HIRAGANA}{_KATAKANA}]")


#: a digit of any script that is not ASCII, and the Arabic decimal and thousands separators
_FOREIGN_DIGIT = re.compile(r"[^\x00-\x7f]")
_ARABIC_SEPARATORS = str.maketrans({"\u066b": ".", "\u066c": ","})


def _ascii_digit(match: re.Match[str]) -> str:
    char = match.group(0)
    return str(unicodedata.decimal(char)) if char.isdecimal() else char


def ascii_digits(text: str) -> str:
    if text.isascii():
        return text
    return _FOREIGN_DIGIT.sub(_ascii_digit, text.translate(_ARABIC_SEPARATORS))


@lru_cache(maxsize=65536)
def normal(text: str) -> str:
    """Return `text` in NFKC form with one space between words and no space at either end."""
    return " ".join(unicodedata.normalize("NFKC", text).split())


@dataclass(frozen=True)
class Token:
    """One token: as written, its comparison form and its kind."""

    text: str
    norm: str
    kind: str
    #: starts with a capital letter of a script that has case (a name, or the first word of a sentence)
    capital: bool = False
    #: where it starts in the normalised text (`normal(ascii_digits(text))`)
    start: int = 0

    @property
    def hard(self) -> bool:
        return self.kind in HARD_KINDS


#: inner characters that make a word an identifier: a host name, a handle, a path ("store.zahra.ae", "a.hassan", "acme/billing-api")
_ID_CONNECTOR = re.compile(r"[^\W\d_][._/@:#+&][^\W_]|[^\W_][_][^\W_]")


def _kind_of_word(text: str) -> str:
    if text.isalpha():  # most words: no digit, no connector, no # or @
        return WORD
    if text.startswith(("#", "@")) and len(text) > 1:
        return ID
    if _DIGIT.search(text):
        return ID if _LETTERS.search(text) else NUMBER
    if _ID_CONNECTOR.search(text):
        return ID
    return WORD


#: Arabic diacritics (harakat), the tatweel, and the spellings of one letter that writers mix
_ARABIC_MARKS = re.compile("[\u064b-\u065f\u0670\u0640]")
_ARABIC_LETTERS = str.maketrans({"أ": "ا", "إ": "ا", "آ": "ا", "ى": "ي", "ة": "ه"})
_ARABIC = re.compile("[\u0600-\u06ff]")
#: the definite article and the prepositions written onto it ("الحساب", "بالحساب", "وال...")
_ARABIC_ARTICLE = re.compile("^(?:وال|بال|كال|فال|لل|ال)(?=..)")


def _arabic(norm: str) -> str:
    """Return an Arabic word without diacritics, with one spelling of alef, ya and ta marbuta, and no article."""
    if norm.isascii() or not _ARABIC.search(norm):
        return norm
    return _ARABIC_ARTICLE.sub("", _ARABIC_MARKS.sub("", norm).translate(_ARABIC_LETTERS))


@lru_cache(maxsize=65536)
def tokens(text: str) -> tuple[Token, ...]:
    out: list[Token] = []
    for match in _TOKEN.finditer(normal(ascii_digits(text))):
        group = match.lastgroup
        raw = match.group(0)
        at = match.start()
        if group == "url":
            out.append(Token(raw, raw.lower().rstrip("/"), URL, start=at))
        elif group == "email":
            out.append(Token(raw, raw.casefold(), EMAIL, start=at))
        elif group == "grouped":
            sep = match.group("sep")
            digits = match.group("int").replace(sep, "")
            tail = raw[len(match.group("int")):]
            out.append(Token(raw, digits + ("." + tail[1:] if tail else ""), NUMBER, start=at))
        elif group == "decimal":
            out.append(Token(raw, raw.replace(",", "."), NUMBER, start=at))
        elif group in ("han", "kana", "kata"):
            out.append(Token(raw, raw, CHAR, start=at))
        else:
            kind = _kind_of_word(raw)
            norm = _arabic(raw.casefold().replace("’", "'").replace("ё", "е"))
            if kind == NUMBER:
                norm = norm.rstrip(".:")
            elif kind == ID and raw[:1] == "#" and raw[1:].isdigit():
                kind, norm = NUMBER, raw[1:]  # "Account #4411" and "Account 4411" name one number
            first = raw.lstrip("#")[:1]
            out.append(Token(raw, norm, kind, capital=kind == WORD and first != first.lower(), start=at))
    return tuple(out)


#: letters of scripts that have no capitals (Arabic, Hebrew, Indic scripts, Hangul, Thai): names are invisible there
_CASELESS = re.compile("[\u0590-\u08ff\u0900-\u0dff\u0e00-\u0eff\uac00-\ud7af]")


def is_caseless(text: str) -> bool:
    """Say whether `text` is written in a script without capitals (Arabic, Hebrew, Devanagari, Hangul...)."""
    return _CASELESS.search(text) is not None


def is_spaceless(text: str) -> bool:
    """Say whether `text` holds characters of a script written without spaces (Han, kana)."""
    return _SPACELESS.search(text) is not None


#: sentence-final punctuation: ASCII, the ellipsis, CJK full stops and their full-width forms
SENTENCE_END = ".!?\u2026\u3002\uff01\uff1f\uff0e\uff61"


def same_text_key(text: str) -> str:
    """Return the key under which two note texts count as the same text.

    NFKC, case-folded, sentence-final punctuation dropped where it ends a word, whitespace
    collapsed. Punctuation inside a word or number is kept: "3.5" and "35" stay two texts.
    """
    folded = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text).casefold())
    return " ".join(word for word in (w.rstrip(SENTENCE_END) for w in folded.split()) if word)


#: a sentence ends after . ! ? followed by a space or a spaceless-script character, after 。,
#: the Arabic question mark and the Devanagari dandas, and at line breaks
_SENTENCE_END = re.compile(
    rf"(?<=[.!?])\s+|(?<=[.!?])(?=[{_HAN}{_HIRAGANA}{_KATAKANA}])|(?<=[。])\s*|(?<=[؟।॥])\s*|\s*\n+\s*"
)
#: a piece with nothing to say (only punctuation, symbols and space)
_EMPTY = re.compile(r"^[\W_]*$")


#: a full stop after these does not end a sentence ("M. Dupuis", "Dr. Lee", "e.g. this")
_ABBREVIATION = re.compile(
    r"(?:^|\s)(?:[^\W\d_]|mr|mrs|ms|dr|prof|st|mme|mlle|hr|fr|sr|sra|srta|dott|sig|vs|etc|e\.g|i\.e|z\.b|bzw|usw|ca|approx|no|nr|inc|ltd|co|corp)\.$",
    re.IGNORECASE,
)


@lru_cache(maxsize=65536)
def sentences(text: str) -> tuple[str, ...]:
    """Split `text` into its sentences, each stripped; pieces with no letter or digit are dropped."""
    pieces: list[str] = []
    for piece in _SENTENCE_END.split(unicodedata.normalize("NFKC", text)):
        if pieces and _ABBREVIATION.search(pieces[-1]):
            pieces[-1] = f"{pieces[-1]} {piece}"
        else:
            pieces.append(piece)
    return tuple(piece.strip() for piece in pieces if piece and not _EMPTY.match(piece))
