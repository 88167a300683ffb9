"""Measure the configured judge, embedder and prompts on labelled data (`memctl eval`).

An operator runs this before trusting a model or a prompt change: the same corpora, the same
settings (flag > env > config file), figures that can be compared run to run. Nothing touches the
operator's store: each evaluation works in a temporary SQLite store that is deleted afterwards.
With no LLM configured, the offline provider is what is measured.

Consolidation. The shipped corpus (memctl/data/eval_consolidation.jsonl, built from held-out
PersonaChat personas by benchmarks/build_eval_data.py) holds, per persona, its labelled distinct
facts and the notes an agent stored about them: each fact's original sentence, its crowd-written
rephrasing, and 0-2 later re-mentions with a relative date ("Mentioned again yesterday: ...").
Each persona is imported as one partition (one user of one agent) with its created dates and
access counts, and the real consolidate phase runs on it with the operator's judge and embedder,
the clock frozen at the corpus's reference date. Reported:
- reduction: (active notes before - after) / before. SC-001 asks for at least 20% on a corpus
  with known redundancies; `oneNotePerFact` is the reduction if every fact ended as one note.
- fact retention: a fact is retained when one sentence of an active note of its partition states
  its original or its revised wording. "States" is the offline judge's normalisation (contractions
  expanded, articles and auxiliaries dropped, plurals folded, negations kept as tokens) after the
  first person is read as "user" ("i have two dogs" ~ "User has two dogs"), then an ordered
  containment test: every word of the fact, in order, in that sentence, with no extra negation
  inside the matched span. The fact's own relative dates ("visiting tomorrow") are left out of
  the test, since consolidation must rewrite them. A new note that adds context ("Mentioned on
  2025-06-29: i only eat kosher.") keeps the fact; a paraphrase that shares few words ("User
  keeps kosher") does not count, so an LLM that rewrites freely is under-credited: the lost
  facts are listed, with the note that replaced them, for a person to check.
- relative dates: notes holding one before, how many were consolidated, and new notes that still
  hold one (temporal.find_relative; must be 0). Notes no cluster touched keep their wording.
- same-fact note pairs merged into one note (did the embedder and judge find the rephrasings?),
  clusters by verdict with the first reasons a reply was invalid or failed, LLM calls, tokens,
  cache hits and seconds, as the phase reports them.
How much a lexical embedder can reduce depends on the corpus's share of re-mentions, which repeat
the original wording; rephrasings are only found by a semantic embedder. The composition is
fixed in the builder, not tuned to any figure.

Contradictions. memctl/data/eval_contradictions.jsonl holds SICK_test pairs (CONTRADICTION as
positives, NEUTRAL and ENTAILMENT as negatives, 100 each) and held-out PersonaChat pairs (two
distinct facts of one persona, and a fact with its rephrasing: negatives), interleaved so that
`--limit N` takes a balanced prefix. Each pair is asked exactly as the contradictions phase asks
(same question, same reply validation); a pair counts as flagged when the reply says
isContradiction at or above the confidence floor, i.e. when the phase would act. Reported:
precision, recall, F1, confusion counts, flags by contradictionType and by gold label, failed
and low-confidence replies, and, for the configured embedder, how many labelled contradictions
reach the contradiction threshold at all (the phase never asks about a pair below it).
"""

from __future__ import annotations

import io
import json
import re
import tempfile
import time
import uuid
from collections import Counter, defaultdict
from dataclasses import dataclass, field, replace
from datetime import datetime
from importlib import resources
from pathlib import Path
from typing import Any, Iterable, Optional, Sequence

import numpy as np
import sqlalchemy as sa

from memctl.embed.base import Embedder
from memctl.errors import UsageError
from memctl.llm.base import Judge
from memctl.phases.base import NullReporter, Reporter
from memctl.records import NoteRecord
from memctl.settings import Settings, parse_time
from memctl.settings import replace as replace_settings

SECTIONS = ("consolidation", "contradictions")
CONSOLIDATION_FILE = "eval_consolidation.jsonl"
CONTRADICTIONS_FILE = "eval_contradictions.jsonl"
#: SC-001: consolidation must cut active notes by at least this much on a redundant corpus
TARGET_REDUCTION = 0.20
#: namespace of the IDs of the rows an evaluation imports (stable, so verdicts and vectors are comparable)
ID_NAMESPACE = uuid.UUID("3c1e9d2a-6b57-4f0e-8a44-6d656d657661")
EXAMPLES = 5

_FIRST_PERSON = re.compile(r"\b(?:i|me|myself|my|mine)\b", re.I)
_NOT = "<not>"


# --- the shipped corpora ----------------------------------------------------------------------


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
    """Return the path of a shipped corpus file (inside the installed package)."""
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
    """Return the IDs of the two notes a labelled pair is asked as."""
    return stable_id("pair", pair.id, "a"), stable_id("pair", pair.id, "b")


# --- fact retention -------------------------------------------------------------------------


def statement(text: str) -> tuple[str, ...]:
    """Return a sentence as the retention test compares it: normalised words, negations as tokens."""
    from memctl.text.statement import analyse

    words = analyse(_FIRST_PERSON.sub(lambda m: "user's" if m.group(0).lower() in ("my", "mine") else "user", text)).signed
    return tuple("have" if w == "has" else w for w in words)


def states(sentence: Sequence[str], fact: Sequence[str]) -> bool:
    """Say whether `sentence` states `fact`: its words in order, no extra negation inside the span."""
    if not fact:
        return False
    positions, start = [], 0
    for word in fact:
        found = next((i for i in range(start, len(sentence)) if sentence[i] == word), None)
        if found is None:
            return False
        positions.append(found)
        start = found + 1
    matched = set(positions)
    return not any(sentence[i] == _NOT and i not in matched for i in range(positions[0], positions[-1] + 1))


def sentences_of(texts: Iterable[str]) -> list[tuple[str, ...]]:
    """Return every sentence of `texts`, normalised for the retention test."""
    from memctl.text.statement import split_sentences

    return [statement(piece) for text in texts for piece in split_sentences(text)]


def without_relative_dates(text: str) -> str:
    """Return `text` without its relative time expressions (consolidation must rewrite them)."""
    from memctl.temporal import find_relative

    for expression in find_relative(text):
        text = text.replace(expression, " ", 1)
    return text


def retained(fact: Fact, sentences: Sequence[Sequence[str]]) -> bool:
    """Say whether one of `sentences` states the fact's original or revised wording.

    The fact's own relative dates ("my mom is visiting tomorrow") are left out of the test: a
    consolidated note must rewrite them, and whether the date it wrote is right is not measured.
    """
    forms = [statement(without_relative_dates(fact.original)), statement(without_relative_dates(fact.revised))]
    return any(states(sentence, form) for form in forms for sentence in sentences)


# --- results ---------------------------------------------------------------------------------


def _ratio(numerator: int, denominator: int) -> Optional[float]:
    return numerator / denominator if denominator else None


@dataclass
class ConsolidationResult:
    """What consolidating the labelled corpus did."""

    personas: int = 0
    notes_before: int = 0
    notes_after: int = 0
    facts: int = 0
    facts_retained: int = 0
    facts_touched: int = 0
    relative_before: int = 0
    relative_consolidated: int = 0
    relative_in_new_notes: int = 0
    relative_after: int = 0
    same_fact_pairs: int = 0
    same_fact_pairs_merged: int = 0
    cross_fact_merges: int = 0
    clusters: dict[str, int] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    notes_created: int = 0
    notes_revoked: int = 0
    copies_absorbed: int = 0
    llm_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cache_hits: int = 0
    embedder: Optional[str] = None
    threshold: Any = None
    seconds: float = 0.0
    lost: list[dict[str, Any]] = field(default_factory=list)
    error: Optional[str] = None

    @property
    def reduction(self) -> Optional[float]:
        return _ratio(self.notes_before - self.notes_after, self.notes_before)

    @property
    def one_note_per_fact(self) -> Optional[float]:
        return _ratio(self.notes_before - self.facts, self.notes_before)

    def checks(self) -> dict[str, bool]:
        return {
            "reductionAtLeast20Percent": (self.reduction or 0.0) >= TARGET_REDUCTION,
            "everyFactRetained": self.facts_retained == self.facts,
            "noRelativeDatesInNewNotes": self.relative_in_new_notes == 0,
        }

    def to_dict(self) -> dict[str, Any]:
        return {
            "personas": self.personas,
            "activeNotesBefore": self.notes_before,
            "activeNotesAfter": self.notes_after,
            "reduction": self.reduction,
            "oneNotePerFact": self.one_note_per_fact,
            "facts": {"total": self.facts, "retained": self.facts_retained, "retention": _ratio(self.facts_retained, self.facts),
                      "touched": self.facts_touched, "lost": self.lost},
            "relativeDates": {"notesBefore": self.relative_before, "consolidated": self.relative_consolidated,
                              "inNewNotes": self.relative_in_new_notes, "activeNotesAfter": self.relative_after},
            "sameFactPairs": {"total": self.same_fact_pairs, "merged": self.same_fact_pairs_merged,
                              "rate": _ratio(self.same_fact_pairs_merged, self.same_fact_pairs)},
            "crossFactMerges": self.cross_fact_merges,
            "clusters": self.clusters,
            "clusterProblems": self.problems,
            "notesCreated": self.notes_created,
            "notesRevoked": self.notes_revoked,
            "copiesAbsorbed": self.copies_absorbed,
            "checks": self.checks(),
            "embedder": self.embedder,
            "threshold": self.threshold,
            "llmCalls": self.llm_calls,
            "promptTokens": self.prompt_tokens,
            "completionTokens": self.completion_tokens,
            "tokens": self.prompt_tokens + self.completion_tokens,
            "cacheHits": self.cache_hits,
            "seconds": round(self.seconds, 3),
            "error": self.error,
        }


@dataclass
class Verdict:
    """The judge's answer to one labelled pair, as the contradictions phase would read it."""

    pair: LabelledPair
    flagged: bool
    kind: str = "none"
    confidence: Optional[float] = None
    reason: str = ""
    error: Optional[str] = None
    low_confidence: bool = False
    similarity: Optional[float] = None


@dataclass
class ContradictionResult:
    """How the judge classified the labelled pairs."""

    verdicts: list[Verdict] = field(default_factory=list)
    confidence_floor: float = 0.0
    llm_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cache_hits: int = 0
    embedder: Optional[str] = None
    threshold: Optional[float] = None
    pairing_error: Optional[str] = None
    seconds: float = 0.0
    error: Optional[str] = None

    def confusion(self, verdicts: Optional[Sequence[Verdict]] = None) -> dict[str, int]:
        verdicts = self.verdicts if verdicts is None else verdicts
        counts = Counter((v.pair.contradiction, v.flagged) for v in verdicts)
        return {"tp": counts[True, True], "fp": counts[False, True], "fn": counts[True, False], "tn": counts[False, False]}

    @staticmethod
    def scores(confusion: dict[str, int]) -> dict[str, Optional[float]]:
        """Precision (None when nothing was flagged), recall (None without positives) and F1."""
        tp, fp, fn = confusion["tp"], confusion["fp"], confusion["fn"]
        precision, recall = _ratio(tp, tp + fp), _ratio(tp, tp + fn)
        if recall is None:
            f1 = None
        elif tp == 0:
            f1 = 0.0
        else:
            f1 = 2 * precision * recall / (precision + recall)  # type: ignore[operator]
        return {"precision": precision, "recall": recall, "f1": f1}

    def by_type(self) -> dict[str, dict[str, Any]]:
        groups: dict[str, list[Verdict]] = defaultdict(list)
        for v in self.verdicts:
            if v.flagged:
                groups[v.kind].append(v)
        out = {}
        for kind, flagged in sorted(groups.items()):
            tp = sum(v.pair.contradiction for v in flagged)
            out[kind] = {"flagged": len(flagged), "tp": tp, "fp": len(flagged) - tp, "precision": _ratio(tp, len(flagged))}
        return out

    def by_label(self) -> dict[str, dict[str, Any]]:
        groups: dict[str, list[Verdict]] = defaultdict(list)
        for v in self.verdicts:
            groups[f"{v.pair.source}:{v.pair.label}"].append(v)
        return {
            label: {"pairs": len(vs), "flagged": sum(v.flagged for v in vs), "rate": _ratio(sum(v.flagged for v in vs), len(vs)),
                    "contradiction": vs[0].pair.contradiction}
            for label, vs in sorted(groups.items())
        }

    def pairing(self) -> Optional[dict[str, Any]]:
        """Score what reaches the phase at all: pairs at or above the embedder's contradiction threshold."""
        if self.pairing_error:
            return {"embedder": self.embedder, "error": self.pairing_error}
        if self.threshold is None or any(v.similarity is None for v in self.verdicts):
            return None
        positives = [v for v in self.verdicts if v.pair.contradiction]
        negatives = [v for v in self.verdicts if not v.pair.contradiction]
        reach = [replace(v, flagged=v.flagged and v.similarity >= self.threshold) for v in self.verdicts]  # type: ignore[operator]
        end_to_end = self.confusion(reach)
        return {
            "embedder": self.embedder,
            "threshold": self.threshold,
            "contradictionsPaired": _ratio(sum(v.similarity >= self.threshold for v in positives), len(positives)),  # type: ignore[operator]
            "othersPaired": _ratio(sum(v.similarity >= self.threshold for v in negatives), len(negatives)),  # type: ignore[operator]
            "endToEnd": {**end_to_end, **self.scores(end_to_end)},
        }

    def examples(self, wrong: str) -> list[dict[str, Any]]:
        """Return the first few false positives ("fp") or false negatives ("fn")."""
        gold = wrong == "fn"
        picked = [v for v in self.verdicts if v.pair.contradiction == gold and v.flagged != gold][:EXAMPLES]
        return [{"id": v.pair.id, "label": v.pair.label, "a": v.pair.a, "b": v.pair.b, "type": v.kind,
                 "confidence": v.confidence, "reason": v.error or v.reason} for v in picked]

    def to_dict(self) -> dict[str, Any]:
        confusion = self.confusion()
        return {
            "pairs": len(self.verdicts),
            "positives": sum(v.pair.contradiction for v in self.verdicts),
            "negatives": sum(not v.pair.contradiction for v in self.verdicts),
            "confidenceFloor": self.confidence_floor,
            "confusion": confusion,
            **self.scores(confusion),
            "byType": self.by_type(),
            "byLabel": self.by_label(),
            "failedReplies": sum(v.error is not None for v in self.verdicts),
            "lowConfidence": sum(v.low_confidence for v in self.verdicts),
            "pairing": self.pairing(),
            "falsePositives": self.examples("fp"),
            "falseNegatives": self.examples("fn"),
            "llmCalls": self.llm_calls,
            "promptTokens": self.prompt_tokens,
            "completionTokens": self.completion_tokens,
            "tokens": self.prompt_tokens + self.completion_tokens,
            "cacheHits": self.cache_hits,
            "seconds": round(self.seconds, 3),
            "error": self.error,
        }


@dataclass
class EvalReport:
    """The figures of one `memctl eval`."""

    judge: str
    provider: str  # llm | offline
    prompts: dict[str, str]
    limit: Optional[int]
    consolidation: Optional[ConsolidationResult] = None
    contradictions: Optional[ContradictionResult] = None
    seconds: float = 0.0

    @property
    def exit_code(self) -> int:
        """0 when every section produced figures, 1 when one could not (a failed phase, no usable reply)."""
        failed = any(section is not None and section.error for section in (self.consolidation, self.contradictions))
        return 1 if failed else 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "judge": self.judge,
            "provider": self.provider,
            "prompts": self.prompts,
            "limit": self.limit,
            "consolidation": self.consolidation.to_dict() if self.consolidation else None,
            "contradictions": self.contradictions.to_dict() if self.contradictions else None,
            "success": self.exit_code == 0,
            "seconds": round(self.seconds, 3),
        }

    def tables(self) -> list[tuple[str, list[tuple[str, str]]]]:
        """Return the figures as (title, [(metric, value)]) for a human-readable rendering."""
        out = []
        if self.consolidation is not None:
            c = self.consolidation.to_dict()
            checks = c["checks"]
            rows = [
                ("corpus", f"{c['personas']} personas, {c['activeNotesBefore']} notes, {c['facts']['total']} facts"),
                ("active notes", f"{c['activeNotesBefore']} -> {c['activeNotesAfter']}"),
                ("reduction", f"{_pct(c['reduction'])} {_mark(checks['reductionAtLeast20Percent'])} (SC-001: >= 20%; one note per fact would be {_pct(c['oneNotePerFact'])})"),
                ("facts retained", f"{c['facts']['retained']}/{c['facts']['total']} {_mark(checks['everyFactRetained'])} ({c['facts']['touched']} facts had a note consolidated)"),
                ("relative dates", f"{c['relativeDates']['notesBefore']} notes held one, {c['relativeDates']['consolidated']} consolidated, "
                                   f"{c['relativeDates']['inNewNotes']} left in new notes {_mark(checks['noRelativeDatesInNewNotes'])}"),
                ("same-fact pairs merged", f"{c['sameFactPairs']['merged']}/{c['sameFactPairs']['total']} ({_pct(c['sameFactPairs']['rate'])}); "
                                           f"{c['crossFactMerges']} new notes combine several facts"),
                ("clusters", ", ".join(f"{k} {v}" for k, v in c["clusters"].items()) or "none"),
                ("notes created / revoked", f"{c['notesCreated']} / {c['notesRevoked']} ({c['copiesAbsorbed']} copies in the same words absorbed without a model)"),
                ("embedder", f"{c['embedder']} (consolidate threshold {c['threshold']})"),
                ("LLM calls / tokens / cache hits", f"{c['llmCalls']} / {c['tokens']} / {c['cacheHits']}"),
                ("seconds", f"{c['seconds']:.1f}"),
            ]
            rows += [("cluster left as is", problem) for problem in c["clusterProblems"]]
            rows += [(f"lost fact ({lost['persona']})", f"{lost['original']!r} / {lost['revised']!r}") for lost in c["facts"]["lost"][:EXAMPLES]]
            if c["error"]:
                rows.append(("ERROR", c["error"]))
            out.append(("consolidation", rows))
        if self.contradictions is not None:
            d = self.contradictions.to_dict()
            m = d["confusion"]
            rows = [
                ("pairs", f"{d['pairs']} ({d['positives']} contradictions, {d['negatives']} not)"),
                ("precision", _pct(d["precision"], "undefined (nothing flagged)")),
                ("recall", _pct(d["recall"])),
                ("F1", "n/a" if d["f1"] is None else f"{d['f1']:.3f}"),
                ("TP / FP / FN / TN", f"{m['tp']} / {m['fp']} / {m['fn']} / {m['tn']}"),
                ("confidence floor", f"{d['confidenceFloor']:g} ({d['lowConfidence']} contradictions below it, {d['failedReplies']} failed replies)"),
            ]
            rows += [(f"flagged as {kind}", f"{s['flagged']} (TP {s['tp']}, FP {s['fp']}, precision {_pct(s['precision'])})") for kind, s in d["byType"].items()]
            rows += [(f"gold {label}", f"{s['flagged']}/{s['pairs']} flagged ({_pct(s['rate'])})") for label, s in d["byLabel"].items()]
            pairing = d["pairing"]
            if pairing and pairing.get("error"):
                rows.append((f"paired by {pairing['embedder']}", f"not measured: {pairing['error']}"))
            elif pairing:
                e2e = pairing["endToEnd"]
                rows.append((f"paired by {pairing['embedder']}", f"{_pct(pairing['contradictionsPaired'])} of contradictions, {_pct(pairing['othersPaired'])} of others reach cosine >= {pairing['threshold']:g}"))
                rows.append(("end to end (paired and flagged)", f"precision {_pct(e2e['precision'], 'undefined')}, recall {_pct(e2e['recall'])}"))
            rows += [
                ("LLM calls / tokens / cache hits", f"{d['llmCalls']} / {d['tokens']} / {d['cacheHits']}"),
                ("seconds", f"{d['seconds']:.1f}"),
            ]
            if d["error"]:
                rows.append(("ERROR", d["error"]))
            out.append(("contradictions", rows))
        return out


def _pct(value: Optional[float], missing: str = "n/a") -> str:
    return missing if value is None else f"{100 * value:.1f}%"


def _mark(ok: bool) -> str:
    return "ok" if ok else "MISSED"


# --- running ---------------------------------------------------------------------------------


def evaluate(settings: Settings, only: Optional[str] = None, limit: Optional[int] = None, reporter: Optional[Reporter] = None) -> EvalReport:
    """Measure the configured judge and embedder on the shipped labelled corpora."""
    from memctl.llm.factory import make_compute_embedder, make_judge
    from memctl.llm.offline import OfflineJudge

    if only is not None and only not in SECTIONS:
        raise UsageError(f"--only must be one of {', '.join(SECTIONS)} (got {only!r})")
    if limit is not None and limit < 1:
        raise UsageError(f"--limit must be at least 1 (got {limit})")
    reporter = reporter or NullReporter()
    started = time.monotonic()
    # Build both providers first: a configuration error is exit 2, before any work is done.
    judge = make_judge(settings)
    embedder = make_compute_embedder(settings)
    prompts = {kind: judge.template_hash(kind)[:12] for kind in ("consolidate", "contradiction")}
    report = EvalReport(judge.model, "offline" if isinstance(judge, OfflineJudge) else "llm", prompts, limit)
    with tempfile.TemporaryDirectory(prefix="memctl-eval-") as directory:
        if only in (None, "consolidation"):
            reporter.log(f"eval: consolidation with {judge.model} and {embedder.name}")
            report.consolidation = evaluate_consolidation(settings, Path(directory) / "consolidation.db", limit, reporter)
        if only in (None, "contradictions"):
            reporter.log(f"eval: contradictions with {judge.model}")
            report.contradictions = evaluate_contradictions(settings, judge, embedder, Path(directory) / "contradictions.db", limit, reporter)
    report.seconds = time.monotonic() - started
    return report


def _scratch_settings(settings: Settings, path: Path, now: str) -> Settings:
    """Return the operator's settings pointed at a scratch SQLite store, the clock frozen at `now`."""
    return replace_settings(settings, db_url=f"sqlite:///{path.as_posix()}", db_schema=None, now=now)


def import_lines(personas: Sequence[Persona]) -> list[dict[str, Any]]:
    """Return the import records (MJ field names) of the corpus: one agent, one user per persona, the notes."""
    agent = stable_id("agent")
    lines: list[dict[str, Any]] = [{"kind": "agent", "ID": agent, "Name": "memctl eval", "Status": "Active"}]
    for p in personas:
        user = stable_id("user", p.persona)
        first = min(n.created_at for n in p.notes).isoformat()
        lines.append({"kind": "user", "ID": user, "Name": f"persona {p.persona}", "IsActive": True, "__mj_CreatedAt": first, "__mj_UpdatedAt": first})
        for index, n in enumerate(p.notes):
            created = n.created_at.isoformat()
            lines.append({
                "kind": "note", "ID": stable_id("note", p.persona, str(index)), "AgentID": agent, "UserID": user, "Note": n.text,
                "Type": "Context", "IsAutoGenerated": True, "Status": "Active", "ProtectionTier": "Standard",
                "AccessCount": n.access_count, "LastAccessedAt": created if n.access_count else None,
                "__mj_CreatedAt": created, "__mj_UpdatedAt": created,
            })
    return lines


def evaluate_consolidation(settings: Settings, path: Path, limit: Optional[int], reporter: Reporter) -> ConsolidationResult:
    """Import the consolidation corpus into a scratch store, run the consolidate phase, measure."""
    from memctl import api
    from memctl.store import models as m
    from memctl.transfer import import_records

    meta, personas = load_consolidation_corpus(limit)
    scratch = _scratch_settings(settings, path, meta["referenceDate"])
    engine = api.open_store(scratch)
    result = ConsolidationResult(personas=len(personas))
    try:
        text = "".join(json.dumps(line) + "\n" for line in import_lines(personas))
        import_records(engine, io.StringIO(text), scratch.current_time())
        started = time.monotonic()
        run = api.run_phase(scratch, "consolidate", reporter=reporter, engine=engine)
        result.seconds = time.monotonic() - started
        phase = run.phases[0]
        out = phase.output
        kinds = ("found", "consolidated", "intoStanding", "declined", "invalid", "failed")
        result.clusters = {k: out.get(f"clusters{k[0].upper()}{k[1:]}", 0) for k in kinds}
        result.notes_created, result.notes_revoked = out.get("notesCreated", 0), out.get("notesRevoked", 0)
        result.copies_absorbed = out.get("copiesAbsorbed", 0)
        result.llm_calls, result.cache_hits = out.get("llmCalls", 0), out.get("cacheHits", 0)
        result.prompt_tokens, result.completion_tokens = out.get("promptTokens", 0), out.get("completionTokens", 0)
        result.embedder = phase.input.get("embedder")
        thresholds = phase.input.get("thresholds") or {}
        result.threshold = next(iter(thresholds.values())) if len(thresholds) == 1 else (thresholds or None)
        children = [c for p in (run.plan.phases if run.plan else []) for c in p.children]
        result.problems = [str(c.output.get("reason")) for c in children if c.output.get("verdict") in ("invalid", "failed")][:EXAMPLES]
        if phase.outcome == "failed":
            result.error = f"no usable judge answer: the consolidate phase failed: {phase.error}"
        elif result.clusters["found"] and not any(result.clusters[k] for k in ("consolidated", "intoStanding", "declined")):
            # every cluster failed or got a reply memctl rejected: no usable answer at all
            first = result.problems[0] if result.problems else "no reason recorded"
            result.error = f"no usable judge answer ({result.clusters['failed']} clusters failed, {result.clusters['invalid']} invalid); first: {first}"
        t = m.note
        with engine.connect() as conn:
            rows = [dict(r) for r in conn.execute(sa.select(t.c.ID, t.c.UserID, t.c.Note, t.c.Status, t.c.ConsolidatedIntoNoteID, t.c.DerivedFromNoteIDs)).mappings()]
    finally:
        engine.dispose()
    _measure_consolidation(result, personas, rows)
    return result


def _measure_consolidation(result: ConsolidationResult, personas: Sequence[Persona], rows: list[dict[str, Any]]) -> None:
    from memctl.temporal import find_relative

    by_id = {str(r["ID"]).lower(): r for r in rows}
    active_by_user: dict[str, list[str]] = defaultdict(list)
    for r in rows:
        if r["Status"] == "Active":
            active_by_user[str(r["UserID"]).lower()].append(r["Note"])
    new_notes = [r for r in rows if r["DerivedFromNoteIDs"]]
    result.notes_after = sum(len(v) for v in active_by_user.values())
    result.relative_in_new_notes = sum(bool(find_relative(r["Note"])) for r in new_notes if r["Status"] == "Active")
    result.relative_after = sum(bool(find_relative(r["Note"])) for r in rows if r["Status"] == "Active")
    for p in personas:
        user = stable_id("user", p.persona)
        sentences = sentences_of(active_by_user.get(user, []))
        into = [by_id[stable_id("note", p.persona, str(i))]["ConsolidatedIntoNoteID"] for i in range(len(p.notes))]
        into = [str(x).lower() if x else None for x in into]
        result.notes_before += len(p.notes)
        result.facts += len(p.facts)
        for i, n in enumerate(p.notes):
            if find_relative(n.text):
                result.relative_before += 1
                result.relative_consolidated += into[i] is not None and into[i] in by_id and bool(by_id[into[i]]["DerivedFromNoteIDs"])
        for k, fact in enumerate(p.facts):
            members = [i for i, n in enumerate(p.notes) if n.fact == k]
            result.facts_touched += any(into[i] is not None for i in members)
            for x, i in enumerate(members):
                for j in members[x + 1 :]:
                    result.same_fact_pairs += 1
                    result.same_fact_pairs_merged += into[i] is not None and into[i] == into[j]
            if retained(fact, sentences):
                result.facts_retained += 1
            else:
                targets = sorted({into[i] for i in members if into[i]})
                result.lost.append({"persona": p.persona, "original": fact.original, "revised": fact.revised,
                                    "replacedBy": [by_id[t]["Note"] for t in targets if t in by_id]})
        merged: dict[str, set[int]] = defaultdict(set)
        for i, target in enumerate(into):
            if target is not None:
                merged[target].add(p.notes[i].fact)
        result.cross_fact_merges += sum(len(facts) > 1 for facts in merged.values())


def _pair_note(note_id: str, text: str, created: datetime) -> NoteRecord:
    return NoteRecord(
        id=note_id, agent_id=stable_id("agent"), company_id=None, user_id=None, primary_scope_entity_id=None,
        primary_scope_record_id=None, secondary_scopes=None, type="Context", note=text, is_auto_generated=True,
        status="Active", protection_tier="Standard", access_count=0, last_accessed_at=None, created_at=created, updated_at=created,
    )


def evaluate_contradictions(settings: Settings, judge: Judge, embedder: Embedder, path: Path, limit: Optional[int], reporter: Reporter) -> ContradictionResult:
    """Ask the judge about every labelled pair exactly as the contradictions phase would, and score it."""
    from memctl import api
    from memctl.embed import thresholds_for
    from memctl.llm.replies import ContradictionReply
    from memctl.phases.asking import ask_all
    from memctl.phases.contradictions import Candidate, question_for, reply_problem
    from memctl.store.engine import scrub

    meta, pairs = load_contradiction_pairs(limit)
    scratch = _scratch_settings(settings, path, meta["referenceDate"])
    created = scratch.current_time()
    result = ContradictionResult(confidence_floor=settings.confidence_floor)
    engine = api.open_store(scratch)
    try:
        ctx = api.context(scratch, engine, api.RunOptions(), reporter)
        notes = [(_pair_note(ia, p.a, created), _pair_note(ib, p.b, created)) for p, (ia, ib) in ((p, pair_note_ids(p)) for p in pairs)]
        questions = [question_for(judge, Candidate(a, b, 1.0, True)) for a, b in notes]
        started = time.monotonic()
        answers, stats = ask_all(ctx, judge, questions, ContradictionReply, valid=reply_problem)
        result.seconds = time.monotonic() - started
    finally:
        engine.dispose()
    result.llm_calls, result.cache_hits = stats.calls, stats.cached
    result.prompt_tokens, result.completion_tokens = stats.usage.prompt_tokens, stats.usage.completion_tokens
    for pair, answer in zip(pairs, answers, strict=True):
        reply = answer.reply
        if not isinstance(reply, ContradictionReply):
            result.verdicts.append(Verdict(pair, False, error=answer.error or "no reply"))
            continue
        positive = reply.isContradiction and reply.confidence >= settings.confidence_floor
        result.verdicts.append(Verdict(
            pair, positive, reply.contradictionType if reply.isContradiction else "none", reply.confidence, reply.reason,
            low_confidence=reply.isContradiction and not positive,
        ))
    if pairs and all(v.error for v in result.verdicts):
        result.error = f"no usable judge answer ({len(pairs)} pairs failed or were rejected); first: {result.verdicts[0].error}"
    if pairs:
        result.embedder = embedder.name
        result.threshold = settings.contradiction_threshold if settings.contradiction_threshold is not None else thresholds_for(embedder.name)[1]
        try:
            cosines = _cosines(embedder, pairs)
        except Exception as exc:  # noqa: BLE001 - the judge's figures stand without the embedder's
            result.pairing_error = scrub(f"{type(exc).__name__}: {exc}", settings)
        else:
            for verdict, similarity in zip(result.verdicts, cosines, strict=True):
                verdict.similarity = similarity
    return result


def _cosines(embedder: Embedder, pairs: Sequence[LabelledPair]) -> list[float]:
    from memctl.similarity import unit_rows

    texts = list(dict.fromkeys([p.a for p in pairs] + [p.b for p in pairs]))
    where = {t: i for i, t in enumerate(texts)}
    vectors = unit_rows(np.asarray(embedder.embed(texts), dtype=np.float32))
    a = vectors[[where[p.a] for p in pairs]]
    b = vectors[[where[p.b] for p in pairs]]
    return [round(float(x), 6) for x in np.einsum("ij,ij->i", a, b)]
