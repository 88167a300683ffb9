"""Replies that copy instead of answering (DESIGN 4): unusable, never a verdict.

A weak model may answer with the prompt's example reply or with an input note instead of a
synthesis. Such a reply may pass the schema, but it is never cached and its question is paused
(memctl/store/pauses.py). Examples are read from the template in use; a text the question's own
notes contain is never a copy.
"""

from __future__ import annotations

import json
import re
import unicodedata
from functools import lru_cache
from typing import Any, Callable, Iterator, Mapping, Optional, Sequence

from memctl.llm.base import Judge
from memctl.similarity import GUID

#: a JSON object written on one line of a template (the example replies)
_ONE_LINE_OBJECT = re.compile(r"\{.*\}")
#: a quoted sentence of a template's prose: "User prefers a formal tone."
_QUOTED_SENTENCE = re.compile(r'"([^\W\d_][^"\n]{4,}[.!?])"')
#: the reply fields that carry the judge's own words
_OWN_WORDS = ("reason", "content")
#: the field names memctl shows the judge for each note (besides "id", "type" and "content",
#: which are ordinary words too): a synthesis holding them copies its input's data
NOTE_FIELDS = ("createdAt", "accessCount")
#: an example text shorter than this many words ("none", a note type) is no sign of copying
MIN_WORDS = 3


def normal(text: str) -> str:
    """Return `text` compared as a copy: NFKC, case-folded, whitespace collapsed, outer quotes and stops removed."""
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split()).strip(" .!?\"'")


def strings(data: Any, keys: Optional[tuple[str, ...]] = None) -> Iterator[str]:
    """Yield every string in JSON-like `data` (values of objects, items of lists); with `keys`, only
    the string values of those keys (at any depth)."""
    if isinstance(data, str):
        if keys is None:
            yield data
    elif isinstance(data, Mapping):
        for key, value in data.items():
            if keys is not None and key in keys and isinstance(value, str):
                yield value
            else:
                yield from strings(value, keys)
    elif isinstance(data, (list, tuple)):
        for value in data:
            yield from strings(value, keys)


@lru_cache(maxsize=16)
def example_texts(template: str) -> frozenset[str]:
    """Return the normalised example texts of a prompt template (its example replies and quoted sentences)."""
    found: list[str] = []
    for match in _ONE_LINE_OBJECT.finditer(template):
        try:
            found.extend(strings(json.loads(match.group())))
        except ValueError:
            continue
    found.extend(_QUOTED_SENTENCE.findall(template))
    return frozenset(text for text in map(normal, found) if len(text.split()) >= MIN_WORDS)


def examples_for(judge: Judge, kind: str) -> frozenset[str]:
    """Return the example texts of the template `judge` asks `kind` questions with (none for a judge without prompts)."""
    template = judge.prompt(kind)
    if template is None:
        return frozenset()
    return example_texts(f"{template.system}\n{template.user_template}")


def copied_example(examples: frozenset[str], reply: Any, inputs: Any) -> Optional[str]:
    """Return why `reply` (JSON data) copies the prompt's example instead of answering, or None.

    Only the judge's own words (reasons, a synthesis's content) are compared, and a text the
    question's `inputs` contain is not a copy.
    """
    if not examples:
        return None
    own: Optional[set[str]] = None
    for text in strings(reply, _OWN_WORDS):
        key = normal(text)
        if key in examples:
            own = {normal(s) for s in strings(inputs)} if own is None else own
            if key not in own:
                return f"the reply copies the prompt's example instead of answering: {' '.join(text.split())[:200]!r}"
    return None


def ids_outside(raw: Optional[str], notes: Sequence[tuple[str, str]]) -> set[str]:
    """Return the UUIDs a reply's text names that are neither the question's notes (id, text) nor quoted from their texts."""
    if not raw:
        return set()
    allowed = {note_id.lower() for note_id, _ in notes}
    for _, text in notes:
        allowed.update(found.lower() for found in GUID.findall(text))
    return {found.lower() for found in GUID.findall(raw)} - allowed


def outside_vet(notes: Sequence[tuple[str, str]], question: str) -> Callable[[Optional[str]], Optional[str]]:
    """Return a question's `vet`: a reply naming notes outside the `question` ("cluster", "pair") is about others."""

    def vet(raw: Optional[str]) -> Optional[str]:
        named = ids_outside(raw, notes)
        return f"the reply names notes outside the {question}: " + ", ".join(sorted(named)) if named else None

    return vet


def copied_note(content: str, notes: Sequence[Mapping[str, Any]]) -> Optional[str]:
    """Return why a synthesis copies its input notes' data instead of answering, or None.

    `notes` are as the judge was shown them. A copy holds a note's id or the field names memctl
    shows, or is itself JSON data, unless the notes' own contents hold the same.
    """
    texts = "\n".join(str(n.get("content", "")) for n in notes)
    lowered, found = texts.lower(), content.lower()
    for note in notes:
        note_id = str(note.get("id", "")).lower()
        if note_id and note_id in found and note_id not in lowered:
            return f"the synthesis copies input note {note_id}'s data (its id) instead of answering"
    for name in NOTE_FIELDS:
        if name.lower() in found and name.lower() not in lowered:
            return f"the synthesis copies the input's fields ({name}) instead of answering"
    stripped = content.strip()
    if stripped[:1] in ("{", "[") and stripped not in texts:
        try:
            data = json.loads(stripped)
        except ValueError:
            return None
        if isinstance(data, (dict, list)):
            return "the synthesis is JSON data (a copy of the input), not a note"
    return None
