"""The figures of one `memctl eval`: per-section results, the report, its JSON and its tables."""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field, replace
from typing import Any, Optional, Sequence

from memctl.evaluation.corpus import LabelledPair

#: SC-001: consolidation must cut active notes by at least this much on a redundant corpus
TARGET_REDUCTION = 0.20
EXAMPLES = 5


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
            **_cost(self),
        }


def _cost(result: "ConsolidationResult | ContradictionResult") -> dict[str, Any]:
    return {
        "llmCalls": result.llm_calls,
        "promptTokens": result.prompt_tokens,
        "completionTokens": result.completion_tokens,
        "tokens": result.prompt_tokens + result.completion_tokens,
        "cacheHits": result.cache_hits,
        "seconds": round(result.seconds, 3),
        "error": result.error,
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
            **_cost(self),
        }


@dataclass
class EvalReport:
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
        return 1 if any(section is not None and section.error for section in (self.consolidation, self.contradictions)) else 0

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
