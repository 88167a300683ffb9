"""Measure the decision layer per language on labelled sets its rules were not written from (issue 24).

The sets (benchmarks/heldout/set_a.jsonl, set_b.jsonl; see benchmarks/heldout/README.md) hold,
per language (en, de, es, fr, zh, ja, ru, ar), items of four kinds: `same_fact` (two or three
wordings of one fact), `value_change` (one slot's value changed; the older note first),
`different_subject` (one template, another account / person / ID), `complementary` (two facts
that hold at once). They were written by two authors who did not see memctl's rules, after
memctl/text/lexicon.py was frozen. The rules are asked exactly as the phases ask them:

- consolidation, offline: the item's notes are one cluster, split by `compatible_groups` (the
  rules the offline judge merges with); an item is merged when its notes stay one group.
  merge precision = merged items that are same_fact or complementary (a merge that keeps both
  facts) / merged items; `strict` counts same_fact only. merge recall = same_fact items merged.
- with a model, no word rule splits a cluster or vetoes a verdict: the model quotes its
  evidence and the quote checks decide. Those figures, for a correct and a wrong judge in one run
  through the real phases, are benchmarks/eval_judges.py's.
- contradictions, offline: the offline judge's verdict (`OfflineJudge.contradiction`) and the
  phase's guard (`verdict_guard`), as the phase applies them. conflict recall = value_change items
  the phase resolves (the newer kept, by the authority rule on the items' ages) or sends to
  review / value_change items. contradiction precision = items called contradictions that are
  value_change / items called contradictions. `wrong revocations` = pairs where a revocation would
  remove a fact: a note of a complementary or different_subject pair, or the newer value of a
  value_change (must be 0); a wording of a same_fact item revoked into another wording loses
  nothing and is counted apart (`paraphrases revoked`).
- a wrong offline verdict: every pair called a contradiction; `unsafe` = different_subject pairs
  the offline guard (`verdict_guard`) lets the authority rule settle.

    python benchmarks/eval_decisions.py [--sets a,b] [--json PATH] [--show N]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from datetime import datetime, timedelta, timezone
from itertools import combinations
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from memctl.authority import authority  # noqa: E402
from memctl.llm.offline import OfflineJudge  # noqa: E402
from memctl.llm.offline_merge import note_text  # noqa: E402
from memctl.llm.replies import ContradictionReply  # noqa: E402
from memctl.records import NoteRecord  # noqa: E402
from memctl.text.decide import compatible_groups, verdict_guard  # noqa: E402

HELDOUT = ROOT / "benchmarks" / "heldout"
LANGS = ("en", "de", "es", "fr", "zh", "ja", "ru", "ar")
NOW = datetime(2026, 6, 1, 12, tzinfo=timezone.utc)


def records(item: dict[str, Any]) -> list[NoteRecord]:
    out = []
    for k, n in enumerate(item["notes"]):
        created = NOW - timedelta(days=float(n.get("age_days", 1)))
        out.append(NoteRecord(
            id=f"{item['id']}-{k}", agent_id="agent", company_id=None, user_id="user", primary_scope_entity_id=None,
            primary_scope_record_id=None, secondary_scopes=None, type="Preference", note=n["text"], is_auto_generated=True,
            status="Active", protection_tier="Standard", access_count=int(n.get("access_count", 0)), last_accessed_at=None,
            created_at=created, updated_at=created,
        ))
    return out


def measure(items: list[dict[str, Any]]) -> dict[str, Any]:
    judge = OfflineJudge()
    tally: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    misses: dict[str, list[str]] = defaultdict(list)
    for item in items:
        lang, kind = item["lang"], item["category"]
        t = tally[lang]
        notes = records(item)
        texts = [note_text(n) for n in notes]
        t[f"items_{kind}"] += 1
        # consolidation, offline
        groups, _ = compatible_groups(list(range(len(notes))), lambda i: texts[i])
        merged = len(groups) == 1
        t[f"merged_{kind}"] += merged
        if kind == "same_fact" and not merged:
            misses[f"{lang} merge recall"].append(f"{item['id']}: " + " | ".join(n.note for n in notes))
        if merged and kind in ("value_change", "different_subject"):
            misses[f"{lang} merge precision"].append(f"{item['id']}: " + " | ".join(n.note for n in notes))
        # contradictions: pairs of the item (two notes, except same_fact triples)
        for i, j in combinations(range(len(notes)), 2):
            a, b = notes[i], notes[j]
            reply = judge.contradiction(a, b).reply
            assert isinstance(reply, ContradictionReply)
            guard = verdict_guard(texts[i], texts[j])
            action = "none"
            if reply.isContradiction and guard.action not in ("veto", "duplicate"):
                action = "flag" if guard.action == "flag" or reply.review or authority(a, b) is None else "revoke"
            t[f"pairs_{kind}"] += 1
            t[f"called_{kind}"] += reply.isContradiction
            t[f"{action}_{kind}"] += 1
            if action == "revoke":
                decided = authority(a, b)
                assert decided is not None
                if kind == "same_fact":
                    t["revoked_paraphrase"] += 1  # a wording revoked into another wording: no fact lost
                elif not (kind == "value_change" and decided.loser is notes[0]):
                    t["revoked_wrongly"] += 1
                    misses[f"{lang} wrong revocation"].append(f"{item['id']} ({kind}): {a.note} | {b.note}")
            if kind == "value_change" and action == "none":
                misses[f"{lang} conflict recall"].append(f"{item['id']}: {a.note} | {b.note} -> {reply.reason[:120]}")
            if reply.isContradiction and kind != "value_change" and action != "none":
                misses[f"{lang} contradiction precision"].append(f"{item['id']} ({kind}, {action}): {a.note} | {b.note}")
            # a wrong offline verdict: the guard alone must keep different subjects from the authority rule
            if kind == "different_subject" and guard.action == "apply":
                t["unsafe"] += 1
                misses[f"{lang} unsafe under a wrong judge"].append(f"{item['id']}: {a.note} | {b.note}")
    return {"tally": {lang: dict(v) for lang, v in tally.items()}, "misses": {k: v for k, v in misses.items()}}


def _ratio(num: int, den: int) -> str:
    return f"{num / den:.3f}" if den else "n/a"


def table(result: dict[str, Any], name: str) -> str:
    rows = [f"### {name}", "",
            "| lang | merge precision (strict) | merge recall | conflict recall "
            "(resolved / review) | contradiction precision | wrong revocations (paraphrases revoked) | unsafe under a wrong verdict |",
            "|---|---|---|---|---|---|---|"]
    for lang in LANGS:
        t = defaultdict(int, result["tally"].get(lang, {}))
        merged = sum(t[f"merged_{k}"] for k in ("same_fact", "value_change", "different_subject", "complementary"))
        precise = t["merged_same_fact"] + t["merged_complementary"]
        called = sum(t[f"revoke_{k}"] + t[f"flag_{k}"] for k in ("same_fact", "value_change", "different_subject", "complementary"))
        found = t["revoke_value_change"] + t["flag_value_change"]
        rows.append(
            f"| {lang} | {_ratio(precise, merged)} ({_ratio(t['merged_same_fact'], merged)}) | "
            f"{_ratio(t['merged_same_fact'], t['items_same_fact'])} | "
            f"{_ratio(found, t['pairs_value_change'])} ({t['revoke_value_change']} / {t['flag_value_change']}) | "
            f"{_ratio(t['revoke_value_change'] + t['flag_value_change'], called)} | {t['revoked_wrongly']} ({t['revoked_paraphrase']}) | "
            f"{t['unsafe']} |"
        )
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", default="a,b,c", help="which held-out sets, comma-separated (a, b, c)")
    parser.add_argument("--json", type=Path, help="write the tallies and misses here")
    parser.add_argument("--show", type=int, default=0, help="print up to N misses of each kind")
    args = parser.parse_args()
    out: dict[str, Any] = {}
    for name in args.sets.split(","):
        path = HELDOUT / f"set_{name.strip()}.jsonl"
        items = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        result = measure(items)
        out[name] = result
        print(table(result, f"set {name} ({len(items)} items)"))
        print()
        if args.show:
            for key, lines in sorted(result["misses"].items()):
                print(f"-- {key}: {len(lines)}")
                for line in lines[: args.show]:
                    print("   ", line)
            print()
    if args.json:
        args.json.write_text(json.dumps(out, ensure_ascii=False, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
