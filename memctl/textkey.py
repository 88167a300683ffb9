"""When two notes say the same thing in the very same words: `same_text_key`.

Consolidation keeps one note per fact (DESIGN 4.1): a synthesis that repeats one of its sources
leaves that source standing, and exact copies in one partition are absorbed into one. "The
same text" must not depend on what a writer cannot see or did not mean: Unicode compatibility
forms (full-width letters and digits, ligatures), letter case, runs of whitespace, and the
punctuation that closes a sentence. It must depend on everything else, so "3.5" and "35" stay
different notes.

Standard library only: this module is meant to move into a shared text package unchanged.
"""

from __future__ import annotations

import unicodedata

#: sentence-final punctuation: ASCII, the ellipsis, CJK full stops and their full-width forms
#: (NFKC folds most full-width forms to ASCII first; they are listed for clarity)
SENTENCE_END = ".!?\u2026\u3002\uff01\uff1f\uff0e\uff61"


def same_text_key(text: str) -> str:
    """Return the key under which two note texts count as the same text.

    NFKC, case-folded, sentence-final punctuation removed where it ends a sentence (before
    whitespace or at the end), whitespace collapsed to single spaces and stripped. Punctuation
    inside a word or number ("3.5", "e-mail", "a.m") is kept.
    """
    folded = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text).casefold())
    # split/rstrip/join: about half the time of two regular expressions, and a dream keys every Active note
    return " ".join(word for word in (w.rstrip(SENTENCE_END) for w in folded.split()) if word)
