"""The data a prompt shows for one question: notes as JSON objects, relative dates made absolute.

Apart from memctl/llm/judge.py so that the phases can build questions without importing `openai`.
"""

from __future__ import annotations

from typing import Any, Sequence

from memctl import temporal
from memctl.records import NoteRecord


def note_data(note: NoteRecord) -> dict[str, Any]:
    """Return the JSON object a prompt shows for `note`, its content with relative dates made absolute."""
    created = temporal.utc(note.created_at).date()
    return {
        "id": note.id,
        "type": note.type,
        "content": temporal.normalise(note.note, created),
        "createdAt": created.isoformat(),
        "accessCount": note.access_count,
    }


def pair_data(note: NoteRecord) -> dict[str, Any]:
    """Return what the contradiction prompt shows for `note`: its ImportanceScore, no access count.

    Authority is decided in code; leaving AccessCount out keeps a cached verdict valid while agents
    keep reading the notes.
    """
    data = note_data(note)
    del data["accessCount"]
    data["importanceScore"] = note.importance_score
    return data


def question_data(kind: str, notes: Sequence[NoteRecord]) -> Any:
    """Return the data a prompt of `kind` shows for `notes`: a cluster, a pair (a, b) or (broader, narrower)."""
    if kind == "consolidate":
        return [note_data(n) for n in notes]
    if kind == "contradiction":
        return [pair_data(n) for n in notes]
    if kind == "absorb":
        broader, narrower = notes
        return {"broader": note_data(broader), "narrower": note_data(narrower)}
    raise ValueError(f"unknown judge kind {kind!r}; expected one of consolidate, contradiction, absorb")
