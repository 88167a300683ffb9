"""Build the labelled corpora `memctl eval` ships (memctl/data/) from the public data in ../shared/data.

Both corpora come from the held-out halves only: the PersonaChat personas that
benchmarks/eval_similarity.py keeps for testing (its `split_of` hash), and SICK_test_annotated.txt.
Embedder thresholds were fitted on the other halves (the tune personas and SICK_train), and the
offline contradiction rules were written from SICK_train, so no figure `memctl eval` reports comes
from data anything was tuned on. Tune prompts and thresholds on the other halves too.

eval_consolidation.jsonl: one persona per line, as one partition of an agent's notes about a user.
  A persona's labelled distinct facts are its deduplicated (original, revised) sentence pairs
  (PersonaChat's crowd-written rephrasing of one persona line states the same fact). Its notes
  record how an agent's memory accumulates one fact over several conversations:
  - the original sentence, noted first (60 to 120 days before the reference date);
  - the revised sentence, the same fact in other words, noted 1 to 30 days later;
  - 0, 1 or 2 later re-mentions (equally likely): the original sentence again, inside a context
    phrase with a relative date ("Mentioned again yesterday: ..."), so temporal normalisation is
    exercised. The phrase adds when it was said, never another fact.
  Access counts are random (original 0-15, revised 0-8, re-mentions 0-4). Every choice is drawn
  from a seeded RNG, so a rebuild reproduces the files byte for byte.

eval_contradictions.jsonl: labelled pairs, in round-robin order over their strata, so that the
  first N pairs (`memctl eval --limit N`) stay balanced:
  - SICK_test: 100 CONTRADICTION (positives), 100 NEUTRAL and 100 ENTAILMENT (negatives), drawn
    per label with a seeded RNG. Equal strata make recall rest on 100 positives; precision at
    this 1:2 base rate is higher than it would be at SICK's natural 15% CONTRADICTION.
  - PersonaChat (held-out personas not in the consolidation corpus): 50 pairs of two distinct
    facts of one persona (complementary facts, FR-024: negatives) and 50 (original, revised)
    paraphrase pairs (the same fact: negatives). Personas were written to be consistent, so
    neither kind contradicts. No positives are constructed from PersonaChat: a made-up
    "competing value" would be labelled by the rule that made it, not by a person.

    python benchmarks/build_eval_data.py [--data ../shared/data] [--out memctl/data] [--check]
"""

from __future__ import annotations

import argparse
import csv
import json
import random
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Optional

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.eval_similarity import DATA, distinct_facts, split_of  # noqa: E402

OUT = ROOT / "memctl" / "data"
VERSION = 1
SEED = 20250630
REFERENCE = datetime(2025, 6, 30, 12, 0, tzinfo=timezone.utc)
CONSOLIDATION_PERSONAS = 100
SICK_PER_LABEL = 100
PERSONA_PAIRS_PER_KIND = 50

#: context phrases of a re-mention; each holds one relative date that memctl.temporal resolves
MENTIONS = (
    "Mentioned again yesterday: {s}",
    "Said last week: {s}",
    "Repeated 3 days ago: {s}",
    "Confirmed this morning: {s}",
    "Brought up two weeks ago: {s}",
    "Said again last month: {s}",
    "Mentioned the day before yesterday: {s}",
    "Said in passing 5 days ago: {s}",
)


def load_personas(path: Path) -> dict[str, list[tuple[str, str]]]:
    """Read the rephrase file into {persona: [(original, revised), ...]} for the held-out half only."""
    personas: dict[str, list[tuple[str, str]]] = {}
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            if split_of(row["persona"]) == "test":
                personas.setdefault(row["persona"], []).append((row["original"].strip(), row["revised"].strip()))
    return {persona: distinct_facts(facts) for persona, facts in sorted(personas.items())}


def _iso(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).isoformat().replace("+00:00", "Z")


def _moment(days_before: float) -> datetime:
    return (REFERENCE - timedelta(days=days_before)).replace(second=0, microsecond=0)


def persona_notes(rng: random.Random, persona: str, facts: list[tuple[str, str]]) -> dict[str, Any]:
    """Return one persona's facts and the notes an agent would have stored about them."""
    notes: list[dict[str, Any]] = []
    for index, (original, revised) in enumerate(facts):
        first = rng.uniform(60, 120)
        notes.append({"fact": index, "form": "original", "text": original, "createdAt": _iso(_moment(first)), "accessCount": rng.randint(0, 15)})
        second = first - rng.uniform(1, 30)
        notes.append({"fact": index, "form": "revised", "text": revised, "createdAt": _iso(_moment(second)), "accessCount": rng.randint(0, 8)})
        for _ in range(rng.choice((0, 1, 2))):
            later = rng.uniform(0.1, second - 0.1)
            text = rng.choice(MENTIONS).format(s=original)
            notes.append({"fact": index, "form": "mention", "text": text, "createdAt": _iso(_moment(later)), "accessCount": rng.randint(0, 4)})
    notes.sort(key=lambda n: (n["createdAt"], n["text"]))
    return {"persona": persona, "facts": [{"original": o, "revised": r} for o, r in facts], "notes": notes}


def consolidation_corpus(personas: dict[str, list[tuple[str, str]]]) -> tuple[list[dict[str, Any]], list[str]]:
    """Return the consolidation corpus lines and the personas it used."""
    rng = random.Random(SEED)
    eligible = [p for p, facts in personas.items() if len(facts) >= 3]
    chosen = sorted(rng.sample(eligible, CONSOLIDATION_PERSONAS))
    return [persona_notes(rng, p, personas[p]) for p in chosen], chosen


def load_sick(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8-sig", newline="") as handle:
        return list(csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE))


def contradiction_corpus(sick_rows: list[dict[str, str]], personas: dict[str, list[tuple[str, str]]], used: set[str]) -> list[dict[str, Any]]:
    """Return the labelled pairs, interleaved over their strata."""
    rng = random.Random(SEED + 1)
    strata: list[list[dict[str, Any]]] = []
    for label in ("CONTRADICTION", "NEUTRAL", "ENTAILMENT"):
        rows = sorted((r for r in sick_rows if r["entailment_judgment"].strip() == label), key=lambda r: int(r["pair_ID"]))
        picked = sorted(rng.sample(rows, SICK_PER_LABEL), key=lambda r: int(r["pair_ID"]))
        strata.append([
            {"id": f"sick-{r['pair_ID']}", "source": "sick", "label": label, "contradiction": label == "CONTRADICTION",
             "a": r["sentence_A"].strip(), "b": r["sentence_B"].strip()}
            for r in picked
        ])
    rest = [p for p, facts in personas.items() if p not in used and len(facts) >= 2]
    distinct, paraphrase = [], []
    for persona in rng.sample(rest, PERSONA_PAIRS_PER_KIND):
        facts = personas[persona]
        i, j = sorted(rng.sample(range(len(facts)), 2))
        a, b = facts[i][rng.randint(0, 1)], facts[j][rng.randint(0, 1)]
        distinct.append({"id": f"persona-{persona}-{i}-{j}", "source": "persona", "label": "DISTINCT_FACTS", "contradiction": False, "a": a, "b": b})
    for persona in rng.sample(rest, PERSONA_PAIRS_PER_KIND):
        facts = personas[persona]
        k = rng.randrange(len(facts))
        paraphrase.append({"id": f"persona-{persona}-{k}", "source": "persona", "label": "PARAPHRASE", "contradiction": False, "a": facts[k][0], "b": facts[k][1]})
    strata += [distinct, paraphrase]
    interleaved = []
    for position in range(max(len(s) for s in strata)):
        interleaved += [s[position] for s in strata if position < len(s)]
    return interleaved


def render(meta: dict[str, Any], lines: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(obj, ensure_ascii=False, separators=(",", ":")) + "\n" for obj in [{"meta": meta}, *lines])


def build(data: Path) -> dict[str, str]:
    """Return {file name: content} of both corpora."""
    personas = load_personas(data / "persona_rephrase_pairs.jsonl")
    consolidation, used = consolidation_corpus(personas)
    pairs = contradiction_corpus(load_sick(data / "sick2014" / "SICK_test_annotated.txt"), personas, set(used))
    source = "PersonaChat (ConvAI2 validation, original and revised personas), held-out half"
    return {
        "eval_consolidation.jsonl": render(
            {"version": VERSION, "referenceDate": _iso(REFERENCE), "source": source, "builder": "benchmarks/build_eval_data.py",
             "personas": len(consolidation), "notes": sum(len(p["notes"]) for p in consolidation),
             "facts": sum(len(p["facts"]) for p in consolidation)},
            consolidation,
        ),
        "eval_contradictions.jsonl": render(
            {"version": VERSION, "referenceDate": _iso(REFERENCE), "builder": "benchmarks/build_eval_data.py",
             "source": "SICK 2014 SICK_test_annotated.txt (CC BY-NC-SA 3.0) and " + source, "pairs": len(pairs)},
            pairs,
        ),
    }


def main(argv: Optional[list[str]] = None) -> int:
    """Write (or, with --check, verify) the shipped evaluation corpora."""
    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--data", type=Path, default=DATA, help="the shared data directory (persona_rephrase_pairs.jsonl, sick2014/)")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--check", action="store_true", help="exit 1 if the files in --out differ from a fresh build")
    args = parser.parse_args(argv)
    built = build(args.data)
    if args.check:
        stale = [name for name, text in built.items() if not (args.out / name).is_file() or (args.out / name).read_text(encoding="utf-8") != text]
        for name in stale:
            print(f"{args.out / name} is out of date: run benchmarks/build_eval_data.py")
        return 1 if stale else 0
    args.out.mkdir(parents=True, exist_ok=True)
    for name, text in built.items():
        (args.out / name).write_text(text, encoding="utf-8")
        print(f"wrote {args.out / name} ({len(text.encode()):,} bytes, {text.count(chr(10)) - 1} records)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
