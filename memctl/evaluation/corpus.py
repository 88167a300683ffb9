"""The shipped labelled corpora of `memctl eval`, and the IDs their rows get in a scratch store.

eval_consolidation.jsonl holds per persona its distinct facts and the notes stored about them;
eval_contradictions.jsonl holds SICK_test and PersonaChat pairs, interleaved so that `--limit N`
takes a balanced prefix. Labels come from the data, never the product.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from datetime import datetime
from importlib import resources
from pathlib import Path
from typing import Any, Optional

from memctl.errors import UsageError
from memctl.settings import Settings, parse_time
from memctl.settings import replace as replace_settings

SECTIONS = ("consolidation", "contradictions")
CONSOLIDATION_FILE = "eval_consolidation.jsonl"
CONTRADICTIONS_FILE = "eval_contradictions.jsonl"
#: namespace of the IDs of the rows an evaluation imports (stable, so verdicts and vectors are comparable)
ID_NAMESPACE = uuid.UUID("3c1e9d2a-6b57-4f0e-8a44-6d656d657661")


@dataclass(frozen=True)
class Fact:
    """One labelled distinct fact: a persona sentence and its rephrasing."""

    original: str
    revised: str


@dataclass(frozen=True)
class CorpusNote:
    fact: int
    form: str  # original | revised | mention
    text: str
    created_at: datetime
    access_count: int


@dataclass(frozen=True)
class Persona:
    """One partition of the consolidation corpus."""

    persona: str
    facts: tuple[Fact, ...]
    notes: tuple[CorpusNote, ...]


@dataclass(frozen=True)
class LabelledPair:
    """Two statements and whether they contradict (the gold label)."""

    id: str
    source: str  # sick | persona
    label: str  # CONTRADICTION | NEUTRAL | ENTAILMENT | DISTINCT_FACTS | PARAPHRASE
    contradiction: bool
    a: str
    b: str


def data_file(name: str) -> Path:
    path = Path(str(resources.files("memctl") / "data" / name))
    if not path.is_file():
        raise UsageError(f"the evaluation corpus {name} is missing from this memctl installation ({path})")
    return path


def _read_jsonl(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    with path.open(encoding="utf-8") as handle:
        lines = [json.loads(line) for line in handle if line.strip()]
    if not lines or "meta" not in lines[0]:
        raise UsageError(f"{path} does not start with a meta line")
    return lines[0]["meta"], lines[1:]


def load_consolidation_corpus(limit: Optional[int] = None) -> tuple[dict[str, Any], list[Persona]]:
    """Return the consolidation corpus's meta data and its first `limit` personas (all by default)."""
    meta, rows = _read_jsonl(data_file(CONSOLIDATION_FILE))
    personas = [
        Persona(
            row["persona"],
            tuple(Fact(f["original"], f["revised"]) for f in row["facts"]),
            tuple(CorpusNote(n["fact"], n["form"], n["text"], parse_time(n["createdAt"]), n["accessCount"]) for n in row["notes"]),
        )
        for row in rows[:limit]
    ]
    return meta, personas


def load_contradiction_pairs(limit: Optional[int] = None) -> tuple[dict[str, Any], list[LabelledPair]]:
    """Return the contradiction corpus's meta data and its first `limit` pairs (a balanced prefix)."""
    meta, rows = _read_jsonl(data_file(CONTRADICTIONS_FILE))
    return meta, [LabelledPair(r["id"], r["source"], r["label"], bool(r["contradiction"]), r["a"], r["b"]) for r in rows[:limit]]


def stable_id(*parts: str) -> str:
    """Return the ID an evaluation gives a row (the same corpus always gets the same IDs)."""
    return str(uuid.uuid5(ID_NAMESPACE, ":".join(parts)))


def pair_note_ids(pair: LabelledPair) -> tuple[str, str]:
    return stable_id("pair", pair.id, "a"), stable_id("pair", pair.id, "b")


def scratch_settings(settings: Settings, path: Path, now: str) -> Settings:
    """Return the operator's settings pointed at a scratch SQLite store, the clock frozen at `now`."""
    return replace_settings(settings, db_url=f"sqlite:///{path.as_posix()}", db_schema=None, now=now)
