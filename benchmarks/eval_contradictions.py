"""Measure the offline judge's contradiction rules on SICK 2014, a human-labelled corpus.

SICK pairs are labelled ENTAILMENT, NEUTRAL or CONTRADICTION. The judge is scored as a detector of
CONTRADICTION (positive) against the other two labels: precision is what matters for memctl (a
false positive revokes a note), recall is whatever honest rules give. The rules were developed by
reading SICK_train.txt only; SICK_test_annotated.txt is held out and reported as the result.

With `--embedder hashing` (needs memctl.embed), the script also reports how many CONTRADICTION
pairs reach the embedder's contradiction cosine threshold, i.e. would be paired and asked at all
by the contradictions phase, and the end-to-end recall (paired and caught by the rules).

    python benchmarks/eval_contradictions.py [--data DIR] [--split train|test|both]
        [--embedder none|hashing] [--examples 10] [--json PATH]
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
import time
from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Optional

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from memctl.llm.offline import OfflineJudge  # noqa: E402
from memctl.records import NoteRecord  # noqa: E402

DEFAULT_DATA = Path("/work/shared/data/sick2014")
SPLITS = {"train": "SICK_train.txt", "test": "SICK_test_annotated.txt"}
LABELS = ("CONTRADICTION", "NEUTRAL", "ENTAILMENT")
VERDICTS = ("negation", "competing_value", "temporal_supersession", "none")
#: the contradictionTypes the offline rules can give
RULE_TYPES = ("negation", "competing_value")
CREATED = datetime(2025, 1, 15, tzinfo=timezone.utc)


@dataclass(frozen=True)
class Pair:
    pair_id: str
    sentence_a: str
    sentence_b: str
    label: str


@dataclass(frozen=True)
class Scored:
    pair: Pair
    verdict: str  # the judge's contradictionType, "none" when not a contradiction
    reason: str


def load_pairs(path: Path) -> list[Pair]:
    """Read a SICK file (tab-separated, with a header row)."""
    with path.open(encoding="utf-8-sig", newline="") as handle:
        rows = csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE)
        return [
            Pair(row["pair_ID"], row["sentence_A"].strip(), row["sentence_B"].strip(), row["entailment_judgment"].strip())
            for row in rows
        ]


def as_note(note_id: str, text: str) -> NoteRecord:
    return NoteRecord(
        id=note_id, agent_id="bench", company_id=None, user_id=None, primary_scope_entity_id=None,
        primary_scope_record_id=None, secondary_scopes=None, type="Context", note=text, is_auto_generated=True,
        status="Active", protection_tier="Standard", access_count=0, last_accessed_at=None,
        created_at=CREATED, updated_at=CREATED,
    )


def judge_pairs(judge: OfflineJudge, pairs: list[Pair]) -> list[Scored]:
    """Ask the judge about every pair; a reply that is not a contradiction scores as "none"."""
    scored = []
    for pair in pairs:
        reply = judge.contradiction(as_note(f"{pair.pair_id}a", pair.sentence_a), as_note(f"{pair.pair_id}b", pair.sentence_b)).reply
        verdict = reply.contradictionType if reply.isContradiction else "none"
        scored.append(Scored(pair, verdict, reply.reason))
    return scored


def _ratio(numerator: int, denominator: int) -> Optional[float]:
    return numerator / denominator if denominator else None


def metrics(scored: list[Scored]) -> dict:
    """Precision / recall on CONTRADICTION, overall and per contradictionType, with confusion counts."""
    positives = sum(s.pair.label == "CONTRADICTION" for s in scored)
    confusion = {label: Counter() for label in LABELS}
    for s in scored:
        confusion[s.pair.label][s.verdict] += 1

    def score(predicted: list[Scored]) -> dict:
        tp = sum(s.pair.label == "CONTRADICTION" for s in predicted)
        fp = len(predicted) - tp
        return {
            "predicted": len(predicted), "tp": tp, "fp": fp, "fn": positives - tp,
            "precision": _ratio(tp, tp + fp), "recall": _ratio(tp, positives),
        }

    flagged = [s for s in scored if s.verdict != "none"]
    overall = score(flagged)
    overall["tn"] = len(scored) - positives - overall["fp"]
    precision, recall = overall["precision"] or 0.0, overall["recall"] or 0.0
    overall["f1"] = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    by_type = {kind: score([s for s in flagged if s.verdict == kind]) for kind in RULE_TYPES}
    return {
        "pairs": len(scored),
        "labels": dict(Counter(s.pair.label for s in scored)),
        "overall": overall,
        "by_type": by_type,
        "confusion": {label: {v: confusion[label][v] for v in VERDICTS} for label in LABELS},
    }


def false_positives(scored: list[Scored], limit: int) -> list[dict]:
    return [
        {"pair_ID": s.pair.pair_id, "label": s.pair.label, "verdict": s.verdict,
         "sentence_A": s.pair.sentence_a, "sentence_B": s.pair.sentence_b, "reason": s.reason}
        for s in scored if s.verdict != "none" and s.pair.label != "CONTRADICTION"
    ][:limit]


def embedder_reach(scored: list[Scored], provider: str) -> Optional[dict]:
    """Return how many CONTRADICTION pairs the embedder pairs up (cosine >= its threshold), or None."""
    try:
        from memctl.embed import make_embedder, thresholds_for
    except ImportError:
        return None
    import numpy as np

    embedder = make_embedder(provider)
    threshold = thresholds_for(embedder.name)[1]
    contradictions = [s for s in scored if s.pair.label == "CONTRADICTION"]
    vectors_a = embedder.embed([s.pair.sentence_a for s in contradictions])
    vectors_b = embedder.embed([s.pair.sentence_b for s in contradictions])
    cosines = np.einsum("ij,ij->i", vectors_a, vectors_b)
    paired = cosines >= threshold
    caught = np.array([s.verdict != "none" for s in contradictions])
    return {
        "embedder": embedder.name,
        "contradiction_threshold": threshold,
        "contradiction_pairs": len(contradictions),
        "paired": int(paired.sum()),
        "paired_fraction": _ratio(int(paired.sum()), len(contradictions)),
        "rules_recall_among_paired": _ratio(int((paired & caught).sum()), int(paired.sum())),
        "end_to_end_recall": _ratio(int((paired & caught).sum()), len(contradictions)),
        "median_cosine": float(np.median(cosines)) if len(cosines) else None,
    }


def _pct(value: Optional[float]) -> str:
    return "   n/a" if value is None else f"{100 * value:5.1f}%"


def render(name: str, result: dict) -> str:
    m = result["metrics"]
    o = m["overall"]
    lines = [
        f"== SICK {name} ({m['pairs']} pairs: " + ", ".join(f"{k} {v}" for k, v in sorted(m["labels"].items())) + ")",
        f"{'verdict':<16}{'flagged':>8}{'TP':>6}{'FP':>6}{'precision':>11}{'recall':>9}",
        f"{'all rules':<16}{o['predicted']:>8}{o['tp']:>6}{o['fp']:>6}{_pct(o['precision']):>11}{_pct(o['recall']):>9}",
    ]
    for kind, s in m["by_type"].items():
        lines.append(f"{kind:<16}{s['predicted']:>8}{s['tp']:>6}{s['fp']:>6}{_pct(s['precision']):>11}{_pct(s['recall']):>9}")
    lines.append(f"F1 {o['f1']:.3f}   FN {o['fn']}   TN {o['tn']}   {result['seconds']:.2f}s")
    lines.append(f"{'gold / verdict':<16}" + "".join(f"{v:>23}" for v in VERDICTS))
    for label, row in m["confusion"].items():
        lines.append(f"{label:<16}" + "".join(f"{row[v]:>23}" for v in VERDICTS))
    reach = result.get("embedder")
    if reach:
        lines.append(
            f"embedder {reach['embedder']}: {reach['paired']}/{reach['contradiction_pairs']} CONTRADICTION pairs "
            f"({_pct(reach['paired_fraction']).strip()}) reach cosine >= {reach['contradiction_threshold']}; "
            f"rules recall among them {_pct(reach['rules_recall_among_paired']).strip()}; "
            f"end-to-end recall {_pct(reach['end_to_end_recall']).strip()}"
        )
    if result["false_positives"]:
        lines.append("false positives:")
        for fp in result["false_positives"]:
            lines.append(f"  [{fp['pair_ID']} {fp['label']} -> {fp['verdict']}] {fp['sentence_A']} || {fp['sentence_B']}")
    return "\n".join(lines)


def evaluate(path: Path, embedder: str, examples: int) -> dict:
    judge = OfflineJudge()
    pairs = load_pairs(path)
    started = time.perf_counter()
    scored = judge_pairs(judge, pairs)
    result = {
        "file": path.name,
        "seconds": time.perf_counter() - started,
        "metrics": metrics(scored),
        "false_positives": false_positives(scored, examples),
    }
    if embedder != "none":
        result["embedder"] = embedder_reach(scored, embedder)
    return result


def main(argv: Optional[list[str]] = None) -> int:
    """Score the offline contradiction rules on SICK and print (and optionally save) the figures."""
    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="directory holding the SICK files")
    parser.add_argument("--split", choices=("train", "test", "both"), default="both")
    parser.add_argument("--embedder", choices=("none", "hashing"), default="none")
    parser.add_argument("--examples", type=int, default=10, help="false positives to print per split")
    parser.add_argument("--json", type=Path, help="write the figures as JSON to this path")
    args = parser.parse_args(argv)

    judge = OfflineJudge()
    report = {"judge": judge.model, "contradiction_rules": judge.template_hash("contradiction"), "splits": {}}
    for name in ("train", "test") if args.split == "both" else (args.split,):
        result = evaluate(args.data / SPLITS[name], args.embedder, args.examples)
        report["splits"][name] = result
        print(render(name, result), end="\n\n")
    if args.embedder != "none" and any(r.get("embedder") is None for r in report["splits"].values()):
        print("memctl.embed is not available: embedder reach skipped")
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
