"""A merged fact stays one note: new wordings join it instead of replacing it (issue 29, DESIGN 4.1).

A store dreamed every night must converge. A synthesis that states what one of its sources
already states leaves that source standing (the others are revoked into it); Active notes of
one partition with the same text are one note whatever the cluster minimum; neither ever joins
notes of two partitions. The LLM is the stub server, answering as a correct model would: a
cluster of wordings of one fact becomes the fact's canonical text.
"""

from __future__ import annotations

import io
import json
from collections import Counter, defaultdict
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from typer.testing import CliRunner

from conftest import Db
from factory import NOW, Store, at
from llmstub import LLMStub, notes_from_request, prompt_kind
from memctl import api
from memctl.cli import app
from memctl.records import note_record
from memctl.similarity import partition_key
from memctl.store import models as m
from memctl.text.tokens import same_text_key
from memctl.transfer import export_records
from memctl.verify import verify

DATE = "The Account Assistant's date format is European."
TONE = "The Support Bot's tone of voice is formal."
SPANISH = "Ana prefers answers in Spanish."
#: canonical text -> wordings a user's conversations produce of it (none adds or changes a fact)
WORDINGS = {
    DATE: [
        "The Account Assistant's date format is the European one.",
        "The date format of the Account Assistant is European.",
        "For the Account Assistant the date format is European.",
        "The Account Assistant's date format is European style.",
        "The Account Assistant uses the European date format.",
    ],
    TONE: [
        "The Support Bot's tone of voice is a formal one.",
        "The tone of voice of the Support Bot is formal.",
        "For the Support Bot the tone of voice is formal.",
        "The Support Bot's tone of voice is formal in style.",
        "The Support Bot uses a formal tone of voice.",
    ],
    SPANISH: [
        "Ana prefers her answers in Spanish.",
        "Ana prefers to get answers in Spanish.",
        "Ana prefers getting answers in Spanish.",
        "Ana prefers all answers in Spanish.",
    ],
}
FACT_OF = {same_text_key(text): fact for fact, texts in WORDINGS.items() for text in (fact, *texts)}
START = datetime(2026, 3, 1, 2, 0, tzinfo=timezone.utc)


def correct_model(body: dict) -> dict:
    """Answer as a correct model: a cluster's wordings of one fact become that fact's canonical text."""
    kind, data = prompt_kind(body), notes_from_request(body)
    if kind == "contradiction":
        return {"isContradiction": False, "contradictionType": "none", "reason": "the same fact", "confidence": 0.9}
    if kind == "absorb":
        broader, narrower = (FACT_OF.get(same_text_key(data[k]["content"])) for k in ("broader", "narrower"))
        if broader is not None and broader == narrower:
            return {"isCovered": True, "reason": "another wording of the same fact", "confidence": 0.9}
        return {"isCovered": False, "reason": "another fact", "confidence": 0.9}
    facts = {n["id"]: FACT_OF.get(same_text_key(n["content"])) for n in data}
    counted = Counter(f for f in facts.values() if f)
    fact, _ = counted.most_common(1)[0] if counted else (None, 0)
    ids = [i for i, f in facts.items() if f == fact]
    if fact is None or len(ids) < 2:
        return {"shouldConsolidate": False, "consolidatedNote": None, "sourceNoteIds": [], "reason": "different facts"}
    return {
        "shouldConsolidate": True, "consolidatedNote": {"type": "Preference", "content": fact, "confidence": 0.9},
        "sourceNoteIds": ids, "reason": f"{len(ids)} wordings of one fact",
    }


def llm(stub: LLMStub) -> dict[str, Any]:
    return {"llm_base_url": stub.base_url, "llm_model": "stub-model", "llm_api_key": "sk-test", "llm_timeout": 5.0}


def rows(db: Db, *where: Any) -> list[dict[str, Any]]:
    with db.engine.connect() as conn:
        return [dict(r) for r in conn.execute(sa.select(m.note).where(*where)).mappings()]


def scope(row: dict[str, Any]) -> tuple:
    return partition_key(note_record(row, with_vector=False))


def export(db: Db) -> str:
    buffer = io.StringIO()
    export_records(db.engine, buffer, ["note"])
    return buffer.getvalue()


def assert_converged(db: Db) -> None:
    """No merged note replaced by a copy of itself, no chain of merges, no two Active notes of one text in a partition."""
    notes = {str(r["ID"]).lower(): r for r in rows(db)}
    for note in notes.values():
        into = note["ConsolidatedIntoNoteID"]
        target = notes[str(into).lower()] if into is not None else None
        if target is not None and str(note["ID"]).lower() in json.loads(target["DerivedFromNoteIDs"] or "[]"):  # a note written from it
            assert same_text_key(note["Note"]) != same_text_key(target["Note"]), f"{note['Note']!r} was replaced by a copy of itself"
        if note["ConsolidationCount"]:  # a merged note: never merged again (each fact's value never changed)
            assert note["ConsolidationCount"] == 1 and note["Status"] == "Active", (note["Note"], note["ConsolidationCount"], note["Status"])
    active: dict[tuple, list[str]] = defaultdict(list)
    for note in notes.values():
        if note["Status"] == "Active":
            active[(scope(note), same_text_key(note["Note"]))].append(note["Note"])
    assert [texts for texts in active.values() if len(texts) > 1] == []
    assert verify(db.engine) == []


def test_a_month_of_nightly_dreams_keeps_each_fact_one_note(db: Db) -> None:
    store = Store(db.engine)
    agent, ana, bo = store.agent("Account Assistant"), store.user("Ana"), store.user("Bo")
    arrivals: dict[int, list[tuple[str, str]]] = {
        1: [(ana, t) for t in WORDINGS[DATE][:3]] + [(bo, t) for t in WORDINGS[TONE][:3]],
        3: [(ana, t) for t in WORDINGS[SPANISH][:3]],
        7: [(ana, WORDINGS[DATE][3]), (ana, WORDINGS[DATE][4]), (bo, WORDINGS[TONE][3])],
        8: [(bo, WORDINGS[TONE][4])],
        10: [(ana, "the account assistant's date format is european")],  # a copy, in another case, no full stop
        14: [(bo, WORDINGS[TONE][0]), (bo, WORDINGS[TONE][1]), (ana, WORDINGS[SPANISH][3])],
        18: [(ana, WORDINGS[SPANISH][0])],
        21: [(ana, WORDINGS[DATE][1]), (ana, WORDINGS[DATE][4]), (bo, "The Support Bot's tone of voice is formal!")],
        22: [(ana, WORDINGS[DATE][2])],
        24: [(ana, WORDINGS[DATE][0]), (ana, WORDINGS[DATE][3])],
        28: [(bo, WORDINGS[TONE][2]), (bo, WORDINGS[TONE][4]), (bo, DATE)],  # Bo's own note of Ana's fact: another partition
        30: [(bo, WORDINGS[TONE][1]), (bo, WORDINGS[TONE][3]), (ana, DATE)],
    }
    with LLMStub(responder=correct_model) as stub:
        for night in range(1, 32):  # night 31: the first quiet night after the month
            now = START + timedelta(days=night - 1)
            for number, (user, text) in enumerate(arrivals.get(night, [])):
                Store(db.engine, now=now).note(text, age_days=(8 - number) / 24, AgentID=agent, UserID=user)
            with db.engine.begin() as conn:  # the application reads Ana's Active notes every day
                t = m.note
                conn.execute(t.update().where(t.c.Status == "Active", t.c.UserID == ana).values(AccessCount=t.c.AccessCount + 1, LastAccessedAt=now - timedelta(hours=3)))
            report = api.dream(at(db.settings, now, **llm(stub)), force=True, engine=db.engine)
            assert report.exit_code == 0, (night, report.message)
            assert_converged(db)
            # issue 24: after every night, one Active note per fact and user, however its wordings
            # arrived (three at once, or one or two at a time: a merged note absorbs those)
            per_fact = Counter((str(r["UserID"]).lower(), FACT_OF[same_text_key(r["Note"])]) for r in rows(db, m.note.c.Status == "Active"))
            assert [k for k, n in per_fact.items() if n > 1] == [], night
    active = {(str(r["UserID"]).lower(), same_text_key(r["Note"])): r for r in rows(db, m.note.c.Status == "Active")}
    assert sorted(active) == sorted((user.lower(), same_text_key(fact)) for user, fact in ((ana, DATE), (ana, SPANISH), (bo, TONE), (bo, DATE)))
    spanish = rows(db, m.note.c.Note.in_(WORDINGS[SPANISH]))
    assert spanish and all(r["Status"] == "Revoked" for r in spanish)
    assert all(str(r["ConsolidatedIntoNoteID"]).lower() == str(active[(ana.lower(), same_text_key(SPANISH))]["ID"]).lower()
               for r in spanish if r["__mj_CreatedAt"] > START + timedelta(days=4))  # the later wordings joined the merged note
    date_note = active[(ana.lower(), same_text_key(DATE))]
    # the fact merged on night 1 is the one note it stays: every later wording of it points at it
    assert date_note["ConsolidationCount"] == 1 and date_note["__mj_CreatedAt"] < START + timedelta(days=1)
    joined = rows(db, m.note.c.ConsolidatedIntoNoteID == date_note["ID"])
    assert {FACT_OF[same_text_key(r["Note"])] for r in joined} == {DATE} and len(joined) == 3 + 2 + 1 + 2 + 1 + 2 + 1
    # its AccessCount is the reads of every note revoked into it plus its own (nights 2 to 31)
    assert date_note["AccessCount"] == sum(r["AccessCount"] for r in joined) + 30


# --- exact copies -------------------------------------------------------------------------------


def cli(db: Db, *args: str, now: datetime = NOW) -> Any:
    base = ["--db-url", db.settings.db_url, *(["--db-schema", db.settings.db_schema] if db.settings.db_schema else []), "--now", now.isoformat()]
    return CliRunner().invoke(app, [*base, *args])


def consolidate(db: Db, **changes: Any) -> api.RunReport:
    return api.run_phase(at(db.settings, NOW, **changes), "consolidate", engine=db.engine)


def test_two_copies_in_one_users_partition_become_one_and_other_users_copies_are_never_joined(db: Db) -> None:
    store = Store(db.engine)
    agent, alice, bob, carol = store.agent(), store.user("Alice"), store.user("Bob"), store.user("Carol")
    text = "Ana prefers answers in Spanish."
    older = store.note(text, age_days=9, AgentID=agent, UserID=alice, AccessCount=2, accessed_days_ago=8)
    newer = store.note("ana prefers answers in spanish!", age_days=2, AgentID=agent, UserID=alice, AccessCount=2, accessed_days_ago=1)
    bobs = [store.note(text, age_days=5 - i, AgentID=agent, UserID=bob) for i in range(2)]
    carols = store.note(text, AgentID=agent, UserID=carol)  # alone in its partition: nothing to join
    with LLMStub(responder=correct_model) as stub:
        report = consolidate(db, **llm(stub))
        assert stub.chat_requests == []  # two notes are below the cluster minimum: no synthesis, no model
    out = report.phases[0].output
    assert report.exit_code == 0 and out["copyGroups"] == 2 and out["copiesAbsorbed"] == 2 and out["notesCreated"] == 0
    kept, gone = store.note_row(older), store.note_row(newer)  # equally accessed: the oldest stays
    assert kept["Status"] == "Active" and gone["Status"] == "Revoked" and str(gone["ConsolidatedIntoNoteID"]).lower() == older.lower()
    assert kept["AccessCount"] == 4 and kept["LastAccessedAt"] == NOW - timedelta(days=1)
    # it now stands for its fact (ConsolidationCount 1), so a later wording is asked about as an absorption into it
    assert kept["Note"] == text and kept["__mj_CreatedAt"] == NOW - timedelta(days=9) and kept["ConsolidationCount"] == 1
    assert f"Absorbed 1 exact copy of this note ({newer.lower()})" in kept["Comments"]
    assert f"Consolidated into note {older.lower()}: an exact copy of it" in gone["Comments"]
    assert [store.status(n) for n in bobs] == ["Active", "Revoked"]  # Bob's copies joined, into Bob's older one
    assert str(store.note_row(bobs[1])["ConsolidatedIntoNoteID"]).lower() == bobs[0].lower()
    assert store.status(carols) == "Active" and store.note_row(carols)["Comments"] is None
    for row in rows(db, m.note.c.ConsolidatedIntoNoteID.is_not(None)):  # never across partitions
        assert scope(row) == scope(store.note_row(str(row["ConsolidatedIntoNoteID"])))
    assert verify(db.engine) == []


def test_the_copy_that_stays_is_a_merged_one_then_the_most_accessed_then_the_oldest(db: Db) -> None:
    store = Store(db.engine)
    agent = store.agent()
    text = "Invoices go to the finance team."
    users = [store.user(f"u{i}") for i in range(3)]
    plain = store.note(text, age_days=30, AgentID=agent, UserID=users[0], AccessCount=9)
    merged = store.note(text, age_days=2, AgentID=agent, UserID=users[0], ConsolidationCount=1, DerivedFromNoteIDs="[]")
    used = store.note(text, age_days=2, AgentID=agent, UserID=users[1], AccessCount=3)
    old = store.note(text, age_days=20, AgentID=agent, UserID=users[1], AccessCount=1)
    first = store.note(text, age_days=20, AgentID=agent, UserID=users[2])
    second = store.note(text, age_days=10, AgentID=agent, UserID=users[2])
    consolidate(db)
    assert [store.status(n) for n in (merged, plain, used, old, first, second)] == ["Active", "Revoked", "Active", "Revoked", "Active", "Revoked"]
    assert store.note_row(merged)["AccessCount"] == 9 and store.note_row(used)["AccessCount"] == 4


def test_a_copy_memctl_may_not_revoke_stays_and_is_written_only_as_far_as_its_protection_allows(db: Db) -> None:
    store = Store(db.engine)
    agent = store.agent()
    text = "Bo's invoices are sent in euros."
    pairs = {}
    for kind, values in (("manual", {"IsAutoGenerated": False}), ("Protected", {"ProtectionTier": "Protected"}), ("Immutable", {"ProtectionTier": "Immutable"})):
        user = store.user(kind)
        kept = store.note(text, age_days=1, AgentID=agent, UserID=user, AccessCount=2, Comments="by hand", **values)
        copy = store.note(text, age_days=30, AgentID=agent, UserID=user, AccessCount=5, accessed_days_ago=3)  # older, more used: would stay if revocable
        pairs[kind] = (kept, copy, store.note_row(kept))
    manual_user = store.user("two manual")
    two_manual = [store.note(text, AgentID=agent, UserID=manual_user, IsAutoGenerated=False) for _ in range(2)]
    consolidate(db)
    for kind, (kept, copy, before) in pairs.items():
        row = store.note_row(kept)
        assert row["Status"] == "Active" and store.status(copy) == "Revoked", kind
        assert str(store.note_row(copy)["ConsolidatedIntoNoteID"]).lower() == kept.lower(), kind
    manual, protected, immutable = (store.note_row(pairs[k][0]) for k in ("manual", "Protected", "Immutable"))
    assert manual["AccessCount"] == 7 and manual["LastAccessedAt"] == NOW - timedelta(days=3) and "exact copy" in manual["Comments"]
    assert protected["AccessCount"] == 2 and protected["LastAccessedAt"] is None  # memctl only annotates a Protected note
    assert protected["Comments"].startswith("by hand\n[memctl ") and "exact copy" in protected["Comments"]
    assert immutable == pairs["Immutable"][2]  # never written at all
    assert [store.status(n) for n in two_manual] == ["Active", "Active"]
    assert all(store.note_row(n)["Comments"] is None for n in two_manual)
    assert verify(db.engine) == []


def test_copies_a_note_contradicts_are_joined_into_the_newest(db: Db) -> None:
    """The contradiction rule reads dates: the fact's latest statement stays, as a merged note would carry it."""
    store = Store(db.engine)
    agent, user = store.agent(), store.user()
    old = store.note("Alice uses metric units.", age_days=30, AgentID=agent, UserID=user, AccessCount=9)
    store.note("Alice uses imperial units.", age_days=20, AgentID=agent, UserID=user)
    new = store.note("Alice uses metric units.", age_days=2, AgentID=agent, UserID=user)
    report = api.dream(at(db.settings, NOW), force=True, engine=db.engine)
    assert report.exit_code == 0
    assert store.status(old) == "Revoked" and str(store.note_row(old)["ConsolidatedIntoNoteID"]).lower() == new.lower()
    assert store.status(new) == "Active" and store.note_row(new)["AccessCount"] == 9  # and it won the contradiction (newer)
    assert verify(db.engine) == []


# --- a synthesis that one source already states ---------------------------------------------------


def test_the_offline_merge_that_repeats_a_source_leaves_that_source_standing(db: Db) -> None:
    store = Store(db.engine)
    agent, acme = store.agent(), store.company()
    full = "Acme Corp is billed monthly on the first business day. Invoices go to the finance team."
    sources = [
        store.note("Acme Corp is billed monthly on the first business day.", age_days=40, AgentID=agent, CompanyID=acme, AccessCount=6),
        store.note("Acme Corp is billed monthly, on the first business day.", age_days=25, AgentID=agent, CompanyID=acme, AccessCount=2),
        store.note(full, age_days=9, AgentID=agent, CompanyID=acme, AccessCount=3, accessed_days_ago=4),
    ]
    before = store.note_row(sources[2])
    report = consolidate(db)
    out = report.phases[0].output
    assert out["clustersIntoStanding"] == 1 and out["notesAbsorbedIntoStanding"] == 2 and out["notesCreated"] == 0
    assert rows(db, m.note.c.DerivedFromNoteIDs.is_not(None)) == []
    stay = store.note_row(sources[2])
    assert stay["Status"] == "Active" and stay["AccessCount"] == 11 and stay["LastAccessedAt"] == before["LastAccessedAt"]
    for column in ("ID", "Note", "__mj_CreatedAt", "EmbeddingVector", "ExpiresAt", "ProtectionTier"):
        assert stay[column] == before[column], column  # its ID, dates and embedding stay
    assert before["ConsolidationCount"] == 0 and stay["ConsolidationCount"] == 1  # it now stands for its fact
    for source in sources[:2]:
        row = store.note_row(source)
        assert row["Status"] == "Revoked" and str(row["ConsolidatedIntoNoteID"]).lower() == sources[2].lower()
        assert f"Consolidated into note {sources[2].lower()}, which states the same: " in row["Comments"]
    assert "Absorbed 2 notes of the same fact" in stay["Comments"]
    [child] = [s for s in report.plan.phases[0].children]
    assert child.output["verdict"] == "standing" and child.output["standingNoteId"] == sources[2].lower() and child.output["newNoteId"] is None


def test_a_source_that_expires_sooner_than_another_is_not_the_one_that_stays(db: Db) -> None:
    """A merge never shortens a fact's life: the synthesis is written as a new note instead."""
    store = Store(db.engine)
    agent = store.agent()
    wordings = [store.note(t, age_days=3 - i / 10, AgentID=agent) for i, t in enumerate(WORDINGS[DATE][:2])]
    short_lived = store.note(DATE, age_days=3, AgentID=agent, ExpiresAt=NOW + timedelta(days=5))
    with LLMStub(responder=correct_model) as stub:
        report = consolidate(db, **llm(stub))
    out = report.phases[0].output
    assert out["clustersConsolidated"] == 1 and out["clustersIntoStanding"] == 0
    [new] = rows(db, m.note.c.DerivedFromNoteIDs.is_not(None))
    assert new["Note"] == DATE and new["ExpiresAt"] is None
    assert [store.status(n) for n in (*wordings, short_lived)] == ["Revoked"] * 3


# --- undo, plans, hostile plans -------------------------------------------------------------------


def test_undo_of_a_night_that_absorbed_into_a_standing_note_restores_every_row_exactly(db: Db) -> None:
    store = Store(db.engine)
    agent, ana, bo = store.agent(), store.user("Ana"), store.user("Bo")
    standing = store.note(DATE, age_days=20, AgentID=agent, UserID=ana, AccessCount=4, accessed_days_ago=6, ConsolidationCount=1,
                          DerivedFromNoteIDs="[]", Comments="merged before")
    for i, text in enumerate(WORDINGS[DATE][:2]):
        store.note(text, age_days=2 - i, AgentID=agent, UserID=ana, AccessCount=i + 1, accessed_days_ago=1 - i / 2)
    tone = store.note(TONE, age_days=8, AgentID=agent, UserID=bo, AccessCount=3)
    store.note(TONE.lower().rstrip("."), age_days=3, AgentID=agent, UserID=bo, AccessCount=2, accessed_days_ago=2)
    before = export(db)
    with LLMStub(responder=correct_model) as stub:
        night = api.dream(at(db.settings, NOW, **llm(stub)), force=True, engine=db.engine)
    out = night.phases[0].output
    assert night.exit_code == 0 and out["notesAbsorbedIntoStanding"] == 2 and out["copiesAbsorbed"] == 1
    row = store.note_row(standing)
    assert row["AccessCount"] == 4 + 1 + 2 and row["LastAccessedAt"] == NOW - timedelta(days=0.5)
    assert row["Comments"].startswith("merged before\n[memctl ") and store.note_row(tone)["AccessCount"] == 5
    with db.engine.connect() as conn:
        credits = conn.execute(sa.select(m.change.c.RecordID).where(m.change.c.RunID == night.run_id, m.change.c.Action == "credit")).scalars().all()
    assert sorted(str(c).lower() for c in credits) == sorted([standing.lower(), tone.lower()])
    result = cli(db, "undo", night.run_id)
    assert result.exit_code == 0, result.output
    assert export(db) == before  # every column of every note, AccessCount, LastAccessedAt and Comments included
    assert verify(db.engine) == []


def standing_store(db: Db) -> dict[str, str]:
    """Two copies of Bo's fact and a note that contradicts them: the newer copy stays (the contradiction rule reads its date)."""
    store = Store(db.engine)
    agent, ana, bo = store.agent(), store.user("Ana"), store.user("Bo")
    return {
        "agent": agent, "ana": ana, "bo": bo,
        "copy": store.note("Bo uses the billing module.", age_days=12, AgentID=agent, UserID=bo, AccessCount=5),
        "kept": store.note("bo uses the billing module", age_days=11, AgentID=agent, UserID=bo, AccessCount=1),
        "negation": store.note("Bo does not use the billing module.", age_days=10, AgentID=agent, UserID=bo, AccessCount=5),
        "anas": store.note("Ana uses the billing module.", age_days=4, AgentID=agent, UserID=ana),
    }


def test_a_saved_dry_run_plan_applies_as_previewed(db: Db, tmp_path: Path) -> None:
    made = standing_store(db)
    store = Store(db.engine)
    plan_file = tmp_path / "plan.json"
    with LLMStub() as stub:
        preview = api.dream(at(db.settings, NOW, **llm(stub)), api.RunOptions(dry_run=True, plan_out=str(plan_file)), force=True, engine=db.engine)
    planned = {p.phase: p for p in preview.phases}
    assert planned["consolidate"].output["copiesAbsorbed"] == 1
    # the contradiction phase planned on the standing note as the copies leave it: credited, 6 accesses to
    # 5 (1 to 5 before: the copies together win, as a note consolidated from them would)
    [pair] = [u for u in json.loads(plan_file.read_text())["phases"][1]["units"] if u["kind"] == "contradiction"]
    guards = {mu["record_id"]: mu["guard"] for mu in pair["mutations"]}
    assert guards[made["kept"].lower()]["AccessCount"] == 6
    assert {mu["action"] for mu in pair["mutations"] if mu["record_id"] == made["negation"].lower()} == {"revoke"}
    result = cli(db, "apply", str(plan_file))
    assert result.exit_code == 0, result.output
    with db.engine.connect() as conn:
        actions = Counter(conn.execute(sa.select(m.change.c.Action)).scalars())
    assert actions == {"credit": 1, "revoke": 2}  # the copy into the kept note, the negation into it: nothing skipped
    assert store.status(made["kept"]) == "Active" and store.note_row(made["kept"])["AccessCount"] == 6
    assert str(store.note_row(made["negation"])["ConsolidatedIntoNoteID"]).lower() == made["kept"].lower()
    assert verify(db.engine) == []


def copies_unit(plan: dict[str, Any]) -> dict[str, Any]:
    [unit] = [u for u in plan["phases"][0]["units"] if u["kind"] == "copies"]
    return unit


def guard(db: Db, note_id: str) -> dict[str, Any]:
    from memctl.plan import guard_of

    with db.engine.connect() as conn:
        return guard_of("AIAgentNote", conn.execute(sa.select(m.note).where(m.note.c.ID == note_id)).mappings().one())


def refused(db: Db, tmp_path: Path, plan: dict[str, Any], *expected: str) -> None:
    before = export(db)
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(plan))
    result = cli(db, "apply", str(path))
    assert result.exit_code == 2, result.output
    assert "plan refused, nothing applied" in result.output
    for text in expected:
        assert text in result.output, result.output
    assert export(db) == before
    with db.engine.connect() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(m.run)).scalar_one() == 0


def saved_plan(db: Db, tmp_path: Path) -> dict[str, Any]:
    plan_file = tmp_path / "plan.json"
    api.run_phase(at(db.settings, NOW), "consolidate", api.RunOptions(dry_run=True, plan_out=str(plan_file)), engine=db.engine)
    return json.loads(plan_file.read_text())


def test_an_edited_plan_revoking_another_users_note_into_a_standing_note_is_refused(db: Db, tmp_path: Path) -> None:
    made = standing_store(db)
    plan = saved_plan(db, tmp_path)
    unit = copies_unit(plan)
    anas = made["anas"].lower()
    unit["mutations"].append({
        "table": "AIAgentNote", "record_id": anas, "action": "revoke", "values": {"Status": "Revoked", "ConsolidatedIntoNoteID": made["kept"].lower()},
        "comment": "Consolidated into note: an exact copy of it", "guard": guard(db, anas),
    })
    refused(db, tmp_path, plan, "'revoke'", anas, "standing note of its own scope")


def test_a_hand_made_copies_unit_absorbing_into_another_users_note_is_refused(db: Db, tmp_path: Path) -> None:
    made = standing_store(db)
    plan = saved_plan(db, tmp_path)
    bobs, anas = made["copy"].lower(), made["anas"].lower()
    plan["phases"][0]["units"] = [{
        "kind": "copies", "key": f"copies:{anas}", "reason": "Absorbed 1 exact copy", "atomic": True, "detail": {},
        "mutations": [
            # the credit adds up (as memctl would plan it): only the scopes are wrong
            {"table": "AIAgentNote", "record_id": anas, "action": "credit", "values": {"AccessCount": 5, "LastAccessedAt": None, "ConsolidationCount": 1},
             "comment": "Absorbed 1 exact copy", "guard": guard(db, anas)},
            {"table": "AIAgentNote", "record_id": bobs, "action": "revoke", "values": {"Status": "Revoked", "ConsolidatedIntoNoteID": anas},
             "comment": "Consolidated into note", "guard": guard(db, bobs)},
        ],
    }]
    refused(db, tmp_path, plan, "'revoke'", bobs, "standing note of its own scope")


def test_an_edited_credit_is_refused(db: Db, tmp_path: Path) -> None:
    made = standing_store(db)
    plan = saved_plan(db, tmp_path)
    credit = copies_unit(plan)["mutations"][0]
    assert credit["action"] == "credit" and credit["record_id"] == made["kept"].lower()
    credit["values"]["AccessCount"] = 10_000  # a note made to look much used, so it wins every contradiction
    refused(db, tmp_path, plan, "'credit'", "AccessCount 10000")
    credit["values"]["AccessCount"] = 6
    credit["values"]["LastAccessedAt"] = NOW.isoformat()  # a note made to look fresh, so it is never archived as stale
    refused(db, tmp_path, plan, "'credit'", "LastAccessedAt")
    credit["values"]["LastAccessedAt"] = None
    credit["guard"]["ProtectionTier"] = "Protected"
    refused(db, tmp_path, plan, "'credit'", "Protected")
    credit["guard"]["ProtectionTier"] = "Standard"
    copies_unit(plan)["mutations"] = [credit]  # a credit with nothing absorbed into it
    refused(db, tmp_path, plan, "'credit'", "no note of the unit is absorbed")


# --- a merged note absorbs later wordings of its fact (issue 24) ---------------------------------


def yes_to_every_absorption(body: dict) -> dict:
    """A plausible but wrong judge: every note is covered by every other."""
    if prompt_kind(body) == "absorb":
        return {"isCovered": True, "reason": "the same kind of note", "confidence": 0.95}
    return {"shouldConsolidate": False, "consolidatedNote": None, "sourceNoteIds": [], "reason": "no", "isContradiction": False,
            "contradictionType": "none", "confidence": 0.9}


def test_a_merged_note_absorbs_one_later_wording_below_the_cluster_minimum_offline(db: Db) -> None:
    store = Store(db.engine)
    agent, ana = store.agent(), store.user("Ana")
    merged = store.note(SPANISH, age_days=20, AgentID=agent, UserID=ana, ConsolidationCount=1, AccessCount=5, accessed_days_ago=3)
    wording = store.note("Ana prefers all her answers in Spanish.", age_days=2, AgentID=agent, UserID=ana, AccessCount=2, accessed_days_ago=1)
    other = store.note("Ana works night shifts at the depot.", age_days=2, AgentID=agent, UserID=ana)
    report = consolidate(db)
    out = report.phases[0].output
    assert report.exit_code == 0 and out["notesAbsorbed"] == 1 and out["notesCreated"] == 0 and out["absorptionsChecked"] >= 1
    gone, kept = store.note_row(wording), store.note_row(merged)
    assert gone["Status"] == "Revoked" and str(gone["ConsolidatedIntoNoteID"]).lower() == merged.lower()
    assert f"Absorbed into the merged note {merged.lower()}" in gone["Comments"]
    # the merged note stays as it was written, credited with the reads of the wording it absorbed
    assert kept["Status"] == "Active" and kept["Note"] == SPANISH and kept["AccessCount"] == 7
    assert kept["LastAccessedAt"] == NOW - timedelta(days=1) and "Absorbed 1 later wording of this note" in kept["Comments"]
    assert store.status(other) == "Active"
    assert consolidate(db).phases[0].outcome == "no items"  # nothing left to do: the partition is settled


def test_a_wrong_judges_yes_never_absorbs_a_note_with_another_number_or_subject(db: Db) -> None:
    store = Store(db.engine)
    agent, acme, ana, bo = store.agent(), store.company(), store.user("Ana"), store.user("Bo")
    merged = store.note("Invoices for account 4471 are sent on the 1st.", age_days=20, AgentID=agent, UserID=ana, ConsolidationCount=1)
    other_account = store.note("Invoices for account 4472 are sent on the 1st.", age_days=2, AgentID=agent, UserID=ana)
    # (each user's two notes are below the cluster minimum: with a third they would be one cluster question)
    store.note("Invoices for account 4471 are sent on the 1st.", age_days=20, AgentID=agent, UserID=bo, ConsolidationCount=1)
    arabic_digits = store.note("Invoices for account ٤٤٧٣ are sent on the 1st.", age_days=2, AgentID=agent, UserID=bo)
    # across scopes too: the company's note names another account than the user's
    company = store.note("Refunds for account 9001 go to the finance team.", age_days=30, AgentID=agent, CompanyID=acme)
    user_note = store.note("Refunds for account 9002 go to the finance team.", age_days=3, AgentID=agent, CompanyID=acme, UserID=ana)
    with LLMStub(responder=yes_to_every_absorption) as stub:
        report = consolidate(db, **llm(stub))
    out = report.phases[0].output
    assert report.exit_code == 0 and out["notesAbsorbed"] == 0 and out["absorptionsVetoed"] == out["absorptionsChecked"] == 3
    reasons = out["absorptionVetoReasons"]
    assert len(reasons) == 3 and all(any(n in r for n in ("4472", "4473", "٤٤٧٣", "9002")) for r in reasons), reasons
    assert [store.status(n) for n in (merged, other_account, arabic_digits, company, user_note)] == ["Active"] * 5
