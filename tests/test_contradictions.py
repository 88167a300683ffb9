"""Seed User Story 2: contradiction detection and resolution (DESIGN 4.2, FR-020..024, US5-2).

The offline rules judge answers by default; tests of the LLM path run the real `openai` client
against tests/llmstub.py and count the requests it receives.
"""

from __future__ import annotations

import io
import json
from collections import Counter
from dataclasses import replace
from typing import Any, Callable

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st
import sqlalchemy as sa
from typer.testing import CliRunner

from conftest import Db
from factory import NOW, Store, at, days
from llmstub import LLMStub, Reply, notes_from_request, prompt_kind
from memctl import api
from memctl.cli import app
from memctl.phases.base import Overlay
from memctl.phases.contradictions import ContradictionPhase, authority
from memctl.records import NoteRecord
from memctl.store import models as m
from memctl.transfer import export_records
from memctl.verify import verify

CONTRADICTION = {
    "isContradiction": True,
    "contradictionType": "competing_value",
    "reason": "Two values for one attribute.",
    "confidence": 0.9,
}
COMPATIBLE = {"isContradiction": False, "contradictionType": "none", "reason": "Complementary facts.", "confidence": 0.9}



def with_llm(db: Db, stub: LLMStub, **changes: Any) -> Any:
    return at(db.settings, NOW, llm_base_url=stub.base_url, llm_model="stub-model", llm_api_key="sk-test", llm_max_retries=0, **changes)


def detect(db: Db, settings: Any = None, dry_run: bool = False, **changes: Any) -> api.RunReport:
    settings = settings or at(db.settings, NOW, **changes)
    return api.run_phase(settings, "contradictions", api.RunOptions(dry_run=dry_run), engine=db.engine)


def answer_with(verdict: Callable[[list[dict]], dict]) -> Callable[[dict], dict]:
    """Return a stub responder answering contradiction questions with verdict(notes)."""

    def respond(body: dict) -> dict:
        assert prompt_kind(body) == "contradiction"
        return verdict(notes_from_request(body))

    return respond


def asked_pairs(stub: LLMStub) -> list[frozenset[str]]:
    return [frozenset(n["id"] for n in notes_from_request(r.body)) for r in stub.chat_requests]


def reviews(db: Db) -> list[dict]:
    with db.engine.connect() as conn:
        return [dict(r) for r in conn.execute(sa.select(m.review)).mappings()]


def same(a: Any, b: str) -> bool:
    """Compare IDs as the backends return them (SQLite may drop the dashes)."""
    return str(a).replace("-", "").lower() == b.replace("-", "").lower()


def changes_of(db: Db, run_id: str) -> list[dict]:
    with db.engine.connect() as conn:
        return [dict(r) for r in conn.execute(sa.select(m.change).where(m.change.c.RunID == run_id)).mappings()]


def cli_args(db: Db) -> list[str]:
    return [
        "--db-url",
        db.settings.db_url,
        *(["--db-schema", db.settings.db_schema] if db.settings.db_schema else []),
        "--now",
        NOW.isoformat(),
    ]


def pair(store: Store, a: str, b: str, **kw: Any) -> tuple[str, str]:
    """Insert two notes of one user of one agent; per-note options as a_* / b_* keywords."""
    scope = {"AgentID": kw.pop("agent", None) or store.agent(), "UserID": kw.pop("user", None) or store.user()}
    first = {k[2:]: v for k, v in kw.items() if k.startswith("a_")}
    second = {k[2:]: v for k, v in kw.items() if k.startswith("b_")}
    return store.note(a, **scope, **first), store.note(b, **scope, **second)


# --- US2 acceptance scenarios -------------------------------------------------------------------


def test_us2_1_the_less_authoritative_note_is_revoked_with_an_explanation(db: Db) -> None:
    store = Store(db.engine)
    old, new = pair(
        store,
        "Customer uses metric units.",
        "Customer uses imperial units.",
        a_age_days=20,
        a_AccessCount=30,
        a_Comments="from chat 4",
        b_age_days=6,
    )
    report = detect(db)
    assert report.exit_code == 0, report.phases[0].error
    loser, winner = store.note_row(old), store.note_row(new)
    assert loser["Status"] == "Revoked" and same(loser["ConsolidatedIntoNoteID"], new)
    assert loser["Comments"].startswith("from chat 4\n[memctl ")  # appended, never overwritten
    assert f"Contradicted by note {new}: " in loser["Comments"] and '"metric" vs "imperial"' in loser["Comments"]
    assert "newer note (created 14 days later)" in loser["Comments"]
    assert winner["Status"] == "Active" and winner["Comments"] is None and winner["__mj_UpdatedAt"] == store.now - days(6)
    logged = changes_of(db, report.run_id)
    assert len(logged) == 1 and same(logged[0]["RecordID"], old) and logged[0]["Action"] == "revoke"
    assert verify(db.engine) == []


def test_us2_2_recency_wins_whatever_the_access_counts(db: Db, stub: LLMStub) -> None:
    stub.responder = answer_with(lambda notes: CONTRADICTION)
    store = Store(db.engine)
    old, new = pair(
        store, "User's home city is Paris.", "User's home city is Lyon.", a_age_days=16, a_AccessCount=50, b_age_days=2, b_AccessCount=1
    )
    report = detect(db, with_llm(db, stub))
    assert report.phases[0].output["llmCalls"] == 1
    assert store.status(old) == "Revoked" and store.status(new) == "Active"
    assert same(store.note_row(old)["ConsolidatedIntoNoteID"], new)


def test_us2_3_on_the_same_day_the_higher_access_count_wins(db: Db) -> None:
    store = Store(db.engine)
    formal, casual = pair(
        store, "Bob prefers a formal tone.", "Bob prefers a casual tone.", a_age_days=10, a_AccessCount=25, b_age_days=10.1, b_AccessCount=2
    )
    detect(db)
    assert store.status(formal) == "Active" and store.status(casual) == "Revoked"
    assert "accessed 25 times vs 2" in store.note_row(casual)["Comments"]


def test_us2_4_a_complementary_pair_is_kept_and_asked_again_only_after_a_change(db: Db, stub: LLMStub) -> None:
    stub.responder = answer_with(lambda notes: COMPATIBLE)
    store = Store(db.engine)
    coffee, tea = pair(store, "Bob likes coffee in the morning.", "Bob likes tea in the morning.")
    settings = with_llm(db, stub)
    first = detect(db, settings)
    assert len(stub.chat_requests) == 1 and first.phases[0].output["cached"] == 0
    assert store.status(coffee) == store.status(tea) == "Active"

    second = detect(db, settings)  # unchanged: the partition is settled, not even paired again
    assert len(stub.chat_requests) == 1
    assert second.phases[0].input["partitionsSettled"] == 1 and second.phases[0].output["llmCalls"] == 0
    replanned = detect(db, with_llm(db, stub, replan=True))  # paired again: answered from the verdict cache
    assert len(stub.chat_requests) == 1
    assert replanned.phases[0].output["cached"] == 1 and replanned.phases[0].output["llmCalls"] == 0

    with db.engine.begin() as conn:  # the application edits one of the notes
        conn.execute(m.note.update().where(m.note.c.ID == tea).values(Note="Bob likes green tea in the morning.", __mj_UpdatedAt=NOW))
    detect(db, settings)
    assert len(stub.chat_requests) == 2 and asked_pairs(stub)[1] == {coffee.lower(), tea.lower()}
    assert store.status(coffee) == store.status(tea) == "Active"


# --- authority edge cases -------------------------------------------------------------------


def test_same_day_same_access_count_keeps_both_and_flags_the_pair(db: Db) -> None:
    store = Store(db.engine)
    cet, pst = pair(
        store, "Carol's timezone is CET.", "Carol's timezone is PST.", a_age_days=4, a_AccessCount=3, b_age_days=4.1, b_AccessCount=3
    )
    report = detect(db)
    assert store.status(cet) == store.status(pst) == "Active"
    assert store.note_row(cet)["Comments"] is None and store.note_row(pst)["Comments"] is None
    [row] = reviews(db)
    low, high = sorted((cet.lower(), pst.lower()))
    assert same(row["NoteAID"], low) and same(row["NoteBID"], high) and row["Status"] == "Open"
    assert same(row["RunID"], report.run_id) and "neither note has authority" in row["Reason"] and '"CET"' in row["Reason"]
    assert report.phases[0].output["contradictionsFlagged"] == 1 and report.phases[0].output["contradictionsResolved"] == 0
    assert [c["Action"] for c in changes_of(db, report.run_id)] == ["flag"]

    listing = CliRunner().invoke(app, [*cli_args(db), "review"])
    assert listing.exit_code == 0, listing.output
    assert "Carol's timezone is CET." in listing.output and "Carol's timezone is PST." in listing.output
    assert str(row["ID"]) in listing.output and "accessed 3x" in listing.output

    again = detect(db)  # a pair already flagged is not flagged (nor asked) twice
    assert len(reviews(db)) == 1 and again.phases[0].input["pairsUnderReview"] == 1 and again.phases[0].outcome == "no items"


@pytest.mark.parametrize("loser_kind", ["Protected", "Immutable", "manual"])
def test_a_loser_memctl_must_not_revoke_is_flagged_instead(db: Db, loser_kind: str) -> None:
    store = Store(db.engine)
    protected = {"a_IsAutoGenerated": False} if loser_kind == "manual" else {"a_ProtectionTier": loser_kind}
    german, english = pair(
        store, "Carol's preferred language is German.", "Carol's preferred language is English.", a_age_days=25, b_age_days=3, **protected
    )
    report = detect(db)
    assert store.status(german) == store.status(english) == "Active"
    [row] = reviews(db)
    assert row["Status"] == "Open" and english in row["Reason"] and f"is {loser_kind}" in row["Reason"]
    assert report.phases[0].output["contradictionsFlagged"] == 1
    assert verify(db.engine) == []


def test_a_protected_or_immutable_note_can_win(db: Db) -> None:
    store = Store(db.engine)
    old, new = pair(
        store, "Customer uses metric units.", "Customer uses imperial units.", a_age_days=30, b_age_days=2, b_ProtectionTier="Immutable"
    )
    detect(db)
    assert store.status(old) == "Revoked" and store.status(new) == "Active"
    assert store.note_row(new)["Comments"] is None  # the winner is only checked, never written
    assert verify(db.engine) == []


def test_a_note_revoked_by_an_earlier_pair_neither_loses_nor_wins_again(db: Db) -> None:
    store = Store(db.engine)
    agent, user = store.agent(), store.user()
    paris = store.note("User lives in Paris.", age_days=40, AgentID=agent, UserID=user)
    berlin = store.note("User lives in Berlin.", age_days=20, AgentID=agent, UserID=user)
    rome = store.note("User lives in Rome.", age_days=2, AgentID=agent, UserID=user)
    report = detect(db)
    out = report.phases[0].output
    assert out["contradictionsFound"] == 3 and out["contradictionsResolved"] == 2 and out["skippedNoteAlreadyRevoked"] == 1
    assert store.status(rome) == "Active" and store.status(paris) == store.status(berlin) == "Revoked"
    targets = [store.note_row(n)["ConsolidatedIntoNoteID"] for n in (paris, berlin)]
    assert same(targets[1], rome) and (same(targets[0], berlin) or same(targets[0], rome))
    assert verify(db.engine) == []


def test_authority_rule_boundaries() -> None:
    a = NoteRecord(
        id="a",
        agent_id=None,
        company_id=None,
        user_id=None,
        primary_scope_entity_id=None,
        primary_scope_record_id=None,
        secondary_scopes=None,
        type="Preference",
        note="x",
        is_auto_generated=True,
        status="Active",
        protection_tier="Standard",
        access_count=0,
        last_accessed_at=None,
        created_at=NOW,
        updated_at=NOW,
    )
    b = replace(a, id="b", note="y")
    assert authority(a, replace(b, created_at=NOW + days(7))) is None  # exactly 7 days apart is not "more than 7"
    later, used = replace(b, created_at=NOW + days(7.01)), replace(a, access_count=99)
    assert authority(used, later).winner is later  # recency beats access counts
    assert authority(used, b).winner is used  # within the week: the access count


# --- candidate pairs ---------------------------------------------------------------------------


def test_pairs_are_unordered_unique_and_never_self(db: Db, stub: LLMStub) -> None:
    stub.responder = answer_with(lambda notes: COMPATIBLE)
    store = Store(db.engine)
    agent, user = store.agent(), store.user()
    ids = [store.note(f"User likes {food} for lunch.", AgentID=agent, UserID=user) for food in ("pizza", "sushi", "pasta")]
    report = detect(db, with_llm(db, stub))
    pairs = asked_pairs(stub)
    assert all(len(p) == 2 for p in pairs)  # no self-pair
    assert Counter(pairs) == Counter({frozenset({x.lower(), y.lower()}) for x in ids for y in ids if x < y})  # each once, never A-B and B-A
    assert report.phases[0].input["candidatePairs"] == 3


def test_notes_in_different_partitions_are_never_paired(db: Db, stub: LLMStub) -> None:
    stub.responder = answer_with(lambda notes: CONTRADICTION)
    store = Store(db.engine)
    agent, company = store.agent(), store.company()
    alice, bob = store.user("Alice"), store.user("Bob")
    store.note("The user's timezone is CET.", AgentID=agent, CompanyID=company, UserID=alice)
    store.note("The user's timezone is PST.", AgentID=agent, CompanyID=company, UserID=bob)
    store.note("The user's timezone is UTC.", AgentID=agent, CompanyID=company)  # company-wide: a broader scope
    store.note("The user's timezone is EST.", AgentID=store.agent("Other"), CompanyID=company, UserID=alice)
    report = detect(db, with_llm(db, stub))
    assert stub.chat_requests == [] and report.phases[0].outcome == "no items"
    assert store.count(m.note, m.note.c.Status == "Active") == 4


def test_pairs_of_two_notes_this_runs_consolidation_created_are_judged_when_the_rule_settles_them(db: Db) -> None:
    """Issue 13: created notes carry their facts' date, so the rule can settle a pair of them the same night."""
    store = Store(db.engine)
    a, b = pair(store, "Customer uses metric units.", "Customer uses imperial units.", a_age_days=20, b_age_days=2)
    ctx = api.context(at(db.settings, NOW), db.engine, api.RunOptions())
    both = ContradictionPhase().plan(ctx, Overlay(created_by_run={a.lower(), b.lower()}))
    assert both.input["pairsBothCreatedThisRun"] == 0 and both.output["contradictionsResolved"] == 1
    one = ContradictionPhase().plan(ctx, Overlay(created_by_run={a.lower()}))
    assert one.output["contradictionsResolved"] == 1


def test_pairs_of_two_notes_this_runs_consolidation_created_are_skipped_when_the_rule_cannot_settle_them(db: Db) -> None:
    store = Store(db.engine)
    a, b = pair(store, "Customer uses metric units.", "Customer uses imperial units.", a_age_days=3, b_age_days=2)
    ctx = api.context(at(db.settings, NOW), db.engine, api.RunOptions())
    both = ContradictionPhase().plan(ctx, Overlay(created_by_run={a.lower(), b.lower()}))
    assert both.outcome == "no items" and both.input["pairsBothCreatedThisRun"] == 1


def test_the_cap_is_respected_and_the_remaining_pairs_are_asked_next_run(db: Db, stub: LLMStub) -> None:
    stub.responder = answer_with(lambda notes: COMPATIBLE)
    store = Store(db.engine)
    agent, user = store.agent(), store.user()
    for food in ("pizza", "sushi", "pasta", "ramen"):  # 4 similar notes: 6 pairs
        store.note(f"User likes {food} for lunch.", AgentID=agent, UserID=user)
    settings = with_llm(db, stub, max_pairs=2)
    seen: list[set[frozenset[str]]] = []
    for expected_left in (4, 2, 0):
        before = len(stub.chat_requests)
        report = detect(db, settings)
        out = report.phases[0].output
        assert out["questionsAsked"] == 2 and out["pairsLeftForNextRun"] == expected_left
        seen.append(set(asked_pairs(stub)[before:]))
    assert len(set().union(*seen)) == 6  # every night asks pairs not asked before
    final = detect(db, with_llm(db, stub, max_pairs=2, replan=True))
    assert final.phases[0].output["questionsAsked"] == 0 and final.phases[0].output["cached"] == 6
    settled = detect(db, settings)  # every pair answered and nothing to do: the partition is left alone
    assert settled.phases[0].input["partitionsSettled"] == 1 and settled.phases[0].output["llmCalls"] == 0
    assert len(stub.chat_requests) == 6


def test_pairs_touching_new_notes_are_asked_first(db: Db, stub: LLMStub) -> None:
    stub.responder = answer_with(lambda notes: COMPATIBLE)
    store = Store(db.engine)
    agent, user = store.agent(), store.user()
    with db.engine.begin() as conn:  # a maintenance run completed two days ago
        conn.execute(
            m.run.insert().values(
                ID="00000000-0000-4000-8000-0000000000aa",
                AgentID=m.MEMCTL_AGENT_ID,
                RunName="memctl dream",
                Status="Completed",
                StartedAt=NOW - days(2),
                CompletedAt=NOW - days(2),
                Success=True,
            )
        )
    twins = [store.note("User likes pizza for lunch on Fridays.", age_days=10, AgentID=agent, UserID=user) for _ in range(2)]
    fresh = store.note("User likes sushi for dinner.", age_days=1, AgentID=agent, UserID=user)
    stub_pairs_settings = with_llm(db, stub, max_pairs=1, contradiction_threshold=0.1)
    report = detect(db, stub_pairs_settings)
    assert report.phases[0].input["newPairs"] == 2 and report.phases[0].input["candidatePairs"] == 3
    [first] = asked_pairs(stub)
    assert fresh.lower() in first  # the identical old twins are more similar, but not new
    assert frozenset(t.lower() for t in twins) != first


def test_max_pairs_option_maps_to_the_setting(db: Db, monkeypatch: pytest.MonkeyPatch) -> None:
    store = Store(db.engine)
    agent, user = store.agent(), store.user()
    for food in ("pizza", "sushi", "pasta"):
        store.note(f"User likes {food} for lunch.", AgentID=agent, UserID=user)
    with LLMStub() as stub:
        monkeypatch.setenv("MEMCTL_LLM_API_KEY", "sk-test")
        llm = ["--llm-base-url", stub.base_url, "--llm-model", "stub-model"]
        result = CliRunner().invoke(app, [*cli_args(db), *llm, "contradictions", "--max-pairs", "1", "--json"])
        assert result.exit_code == 0, result.output
        phase = json.loads(result.stdout)["phases"][0]
        assert phase["input"]["pairsToAnalyse"] == 1 and phase["output"]["pairsLeftForNextRun"] == 2
        assert len(stub.chat_requests) == 1
        dream = CliRunner().invoke(app, [*cli_args(db), *llm, "dream", "--max-pairs", "0", "--json"])
    contradictions = next(p for p in json.loads(dream.stdout)["phases"] if p["phase"] == "contradictions")
    assert contradictions["input"]["maxPairs"] == 0


def test_a_pair_budget_reads_the_verdict_cache_and_the_pauses_once(db: Db) -> None:
    store = Store(db.engine)
    agent, user = store.agent(), store.user()
    for food in ("pizza", "sushi", "pasta"):
        store.note(f"User likes {food} for lunch.", AgentID=agent, UserID=user)
    reads: list[tuple[str, int]] = []  # (table, how many keys), of the question keys' reads

    def statement(conn: Any, cursor: Any, text: str, parameters: Any, *rest: Any) -> None:
        if text.lstrip().upper().startswith("SELECT") and ('"Reply"' in text or "memctl_pause" in text):
            reads.append(("pause" if "memctl_pause" in text else "verdict", len(parameters)))

    with LLMStub(responder=answer_with(lambda notes: COMPATIBLE)) as stub:
        detect(db, with_llm(db, stub, max_pairs=1))  # one verdict cached, two pairs left
        sa.event.listen(db.engine, "before_cursor_execute", statement)
        try:
            report = detect(db, with_llm(db, stub, max_pairs=1))
        finally:
            sa.event.remove(db.engine, "before_cursor_execute", statement)
    phase = report.phases[0]
    assert phase.output["cached"] == 1 and phase.output["questionsAsked"] == 1 and phase.output["pairsLeftForNextRun"] == 1
    # the three questions' keys are looked up once; the other verdict reads are the settled marks' (one key each)
    assert [r for r in reads if r[0] == "pause"] == [("pause", 2)] and [r for r in reads if r[1] > 1] == [("verdict", 3), ("pause", 2)]


def test_the_offline_judge_is_bounded_by_offline_max_pairs_not_by_llm_calls(db: Db) -> None:
    store = Store(db.engine)
    agent, user = store.agent(), store.user()
    for food in ("pizza", "sushi", "pasta"):
        store.note(f"User likes {food} for lunch.", AgentID=agent, UserID=user)
    report = detect(db, at(db.settings, NOW, max_pairs=1))
    assert report.phases[0].input["pairsToAnalyse"] == 3 and report.phases[0].output["llmCalls"] == 0
    capped = detect(db, at(db.settings, NOW + days(1), offline_max_pairs=0))
    assert capped.phases[0].output["pairsLeftForNextRun"] == 0  # all three verdicts are cached now


# --- replies that must change nothing -------------------------------------------------------------


@pytest.mark.parametrize(
    "reply",
    [
        pytest.param("foreign", id="names-a-note-outside-the-pair"),
        pytest.param(Reply.json({**CONTRADICTION, "revokeNoteId": "FOREIGN"}), id="extra-field-naming-another-note"),
        pytest.param(Reply.malformed(), id="malformed"),
        pytest.param(Reply.json({"isContradiction": True, "reason": "x"}), id="wrong-shape"),
        pytest.param(Reply.json({**CONTRADICTION, "contradictionType": "none"}), id="inconsistent"),
    ],
)
def test_a_reply_naming_other_notes_or_malformed_changes_nothing(db: Db, stub: LLMStub, reply: Any) -> None:
    store = Store(db.engine)
    old, new = pair(store, "Customer uses metric units.", "Customer uses imperial units.", a_age_days=20, b_age_days=2)
    bystander = store.note("Customer is based in Oslo.", AgentID=store.agent("Elsewhere"))
    if reply == "foreign":
        reply = Reply.json({**CONTRADICTION, "reason": f"Note {bystander} says so; revoke {bystander}."})
    elif isinstance(reply.content, dict) and reply.content.get("revokeNoteId") == "FOREIGN":
        reply = Reply.json({**reply.content, "revokeNoteId": bystander})
    stub.script(reply)
    before = io.StringIO()
    export_records(db.engine, before, ["note"])
    report = detect(db, with_llm(db, stub))
    after = io.StringIO()
    export_records(db.engine, after, ["note"])
    assert after.getvalue() == before.getvalue() and reviews(db) == []
    phase = report.phases[0]
    assert phase.output["failedReplies"] == phase.output["unusableReplies"] == 1 and phase.output["contradictionsFound"] == 0
    # an unusable reply is not an outage (issue 28): the pair is left alone, the step counts it, the run exits 0
    assert phase.outcome == "done" and report.exit_code == 0
    with db.engine.connect() as conn:
        cached = conn.execute(sa.select(sa.func.count()).select_from(m.verdict).where(~m.verdict.c.Kind.startswith("share:"))).scalar_one()
        assert cached == 0  # neither the reply nor a settled mark
    stub.responder = answer_with(lambda notes: CONTRADICTION)
    paused = detect(db, with_llm(db, stub)).phases[0]  # the next night: paused, not asked
    assert len(stub.chat_requests) == 1 and paused.output["questionsPaused"] == 1 and store.status(old) == "Active"
    detect(db, at(with_llm(db, stub), NOW + days(2)))  # asked again once the pause is over
    assert len(stub.chat_requests) == 2 and store.status(old) == "Revoked" and store.status(new) == "Active"


def test_a_reply_quoting_an_id_from_the_notes_is_accepted(db: Db, stub: LLMStub) -> None:
    store = Store(db.engine)
    account = "5b0e3d1c-7a1e-4c1b-9d55-3c9b2f1a0e42"
    old, new = pair(
        store,
        f"Customer account is {account} on the EU cluster.",
        f"Customer account is {account} on the US cluster.",
        a_age_days=20,
        b_age_days=2,
    )
    stub.script(
        Reply.json({**CONTRADICTION, "reason": f"Account {account} is on the EU cluster in one note and the US cluster in the other."})
    )
    detect(db, with_llm(db, stub))
    assert store.status(old) == "Revoked" and store.status(new) == "Active"


def test_a_confidence_below_the_floor_changes_nothing(db: Db, stub: LLMStub) -> None:
    stub.responder = answer_with(lambda notes: {**CONTRADICTION, "confidence": 0.5})
    store = Store(db.engine)
    old, new = pair(store, "Customer uses metric units.", "Customer uses imperial units.", a_age_days=20, b_age_days=2)
    report = detect(db, with_llm(db, stub))
    assert store.status(old) == store.status(new) == "Active" and reviews(db) == []
    assert report.phases[0].output["lowConfidence"] == 1 and report.phases[0].output["contradictionsFound"] == 0
    lower_floor = detect(db, with_llm(db, stub, confidence_floor=0.4))  # cached verdict, another floor
    assert lower_floor.phases[0].output["cached"] == 1 and store.status(old) == "Revoked"


# --- dry-run, plans, undo, observability ------------------------------------------------------------


def memctl_counts(db: Db) -> dict[str, int]:
    with db.engine.connect() as conn:
        tables = (m.change, m.run, m.run_step, m.verdict, m.embedding, m.review, m.lease)
        return {t.name: conn.execute(sa.select(sa.func.count()).select_from(t)).scalar_one() for t in tables}


def planted(store: Store) -> dict[str, str]:
    agent, user = store.agent(), store.user()
    notes = {
        "metric": store.note("Customer uses metric units.", age_days=20, AgentID=agent, UserID=user),
        "imperial": store.note("Customer uses imperial units.", age_days=2, AgentID=agent, UserID=user),
        "cet": store.note("Customer's timezone is CET.", age_days=4, AccessCount=3, AgentID=agent, UserID=user),
        "pst": store.note("Customer's timezone is PST.", age_days=4, AccessCount=3, AgentID=agent, UserID=user),
    }
    return notes


def test_dry_run_writes_nothing_and_its_saved_plan_applies_as_previewed(db: Db, tmp_path: Any) -> None:
    store = Store(db.engine)
    notes = planted(store)
    before, counts = io.StringIO(), memctl_counts(db)
    export_records(db.engine, before)
    plan_file = tmp_path / "plan.json"
    preview = api.run_phase(at(db.settings, NOW), "contradictions", api.RunOptions(dry_run=True, plan_out=str(plan_file)), engine=db.engine)
    after = io.StringIO()
    export_records(db.engine, after)
    assert after.getvalue() == before.getvalue() and memctl_counts(db) == counts
    assert sorted(action for _, _, action, _ in preview.phases[0].rows) == ["flag", "revoke"]

    applied = api.apply_plan(at(db.settings, NOW), str(plan_file), engine=db.engine)
    assert applied.phases[0].applied == 2
    assert store.status(notes["metric"]) == "Revoked" and [r["Status"] for r in reviews(db)] == ["Open"]
    again = api.apply_plan(at(db.settings, NOW), str(plan_file), engine=db.engine)  # stale now: skipped, not doubled
    assert again.phases[0].applied == 0 and len(reviews(db)) == 1


def test_undo_puts_the_notes_back_and_removes_the_flags(db: Db) -> None:
    store = Store(db.engine)
    notes = planted(store)
    report = detect(db)
    assert store.status(notes["metric"]) == "Revoked" and len(reviews(db)) == 1
    undone = api.undo(at(db.settings, NOW), report.run_id, engine=db.engine)
    assert undone.exit_code == 0, undone.phases[0].error
    assert store.status(notes["metric"]) == "Active" and store.note_row(notes["metric"])["ConsolidatedIntoNoteID"] is None
    assert reviews(db) == []
    redone = api.undo(at(db.settings, NOW), undone.run_id, engine=db.engine)  # an undo is undoable too
    assert redone.exit_code == 0 and store.status(notes["metric"]) == "Revoked" and [r["Status"] for r in reviews(db)] == ["Open"]
    assert verify(db.engine) == []


def test_us5_2_the_step_records_pairs_analysed_and_contradictions_resolved(db: Db) -> None:
    store = Store(db.engine)
    planted(store)
    report = detect(db)
    with db.engine.connect() as conn:
        step = (
            conn.execute(
                sa.select(m.run_step).where(m.run_step.c.AgentRunID == report.run_id, m.run_step.c.StepName == "Detect Note Contradictions")
            )
            .mappings()
            .one()
        )
    assert step["StepType"] == "Decision" and step["Status"] == "Completed"
    given, output = json.loads(step["InputData"]), json.loads(step["OutputData"])
    assert given["candidatePairs"] >= 2 and given["pairsToAnalyse"] == given["candidatePairs"]
    assert given["embedder"] == "memctl-hashing-v2" and given["threshold"] == 0.34
    assert output["pairsAnalysed"] == given["pairsToAnalyse"]
    assert output["contradictionsFound"] == 2 and output["contradictionsResolved"] == 1 and output["contradictionsFlagged"] == 1
    for key in ("cached", "llmCalls", "tokens", "lowConfidence", "failedReplies", "pairsLeftForNextRun"):
        assert output[key] == 0, key


def test_us5_3_no_candidate_pairs_is_no_items(db: Db) -> None:
    Store(db.engine).note("A lone note.")
    report = detect(db)
    assert report.phases[0].outcome == "no items"
    with db.engine.connect() as conn:
        output = json.loads(conn.execute(sa.select(m.run_step.c.OutputData).where(m.run_step.c.AgentRunID == report.run_id)).scalar_one())
    assert output["outcome"] == "no items" and output["contradictionsResolved"] == 0


def test_dream_detects_contradictions_on_the_post_consolidation_state(db: Db) -> None:
    from memctl.demo import did, seed

    seed(db.engine, NOW)
    report = api.dream(at(db.settings, NOW), engine=db.engine)
    phase = next(p for p in report.phases if p.phase == "contradictions")
    assert phase.outcome == "done", phase.error
    store = Store(db.engine)

    def status(key: str) -> str:
        return store.status(did("note:" + key))

    assert (status("alice-units-old"), status("alice-units-new")) == ("Revoked", "Active")  # recency
    assert (status("bob-tone-a"), status("bob-tone-b")) == ("Active", "Revoked")  # access count
    assert status("carol-tz-a") == status("carol-tz-b") == "Active"  # tie: flagged
    assert status("carol-lang-old") == status("carol-lang-new") == "Active"  # Protected loser: flagged
    assert status("bob-coffee") == status("bob-tea") == "Active"  # complementary
    flagged = {frozenset(str(r[c]).replace("-", "") for c in ("NoteAID", "NoteBID")) for r in reviews(db)}
    expected = [("carol-tz-a", "carol-tz-b"), ("carol-lang-old", "carol-lang-new")]
    assert flagged == {frozenset(did("note:" + k).replace("-", "") for k in keys) for keys in expected}
    assert verify(db.engine) == []


# --- invariants ---------------------------------------------------------------------------------

CITIES = ("Paris", "Berlin", "Rome", "Oslo")
PROPERTY = hsettings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
planted_notes = st.lists(
    st.tuples(
        st.sampled_from(CITIES),
        st.floats(min_value=0.5, max_value=40),
        st.integers(min_value=0, max_value=3),
        st.sampled_from(["Standard", "Standard", "Protected", "Immutable", "manual"]),
        st.booleans(),
    ),
    min_size=2,
    max_size=5,
)


@PROPERTY
@given(notes=planted_notes)
def test_every_revocation_follows_the_authority_rule_and_protected_notes_survive(db: Db, notes: list) -> None:
    with db.engine.begin() as conn:
        for table in reversed(m.metadata.sorted_tables):
            if table.name != "memctl_alembic_version":
                conn.execute(table.delete())
    store = Store(db.engine)
    agents, user = [store.agent("A"), store.agent("B")], store.user()
    ids = {}
    for city, age, access, tier, other_agent in notes:
        kind = {"IsAutoGenerated": False} if tier == "manual" else {"ProtectionTier": tier}
        note = store.note(f"User lives in {city}.", age_days=age, AccessCount=access, AgentID=agents[other_agent], UserID=user, **kind)
        ids[note] = (city, age, access, tier, other_agent)
    report = detect(db)
    assert report.exit_code == 0, report.phases[0].error
    rows = {i: store.note_row(i) for i in ids}
    for note, row in rows.items():
        if row["Status"] != "Revoked":
            continue
        city, age, access, tier, agent = ids[note]
        assert tier == "Standard"  # never a Protected, Immutable or manual note
        winner = next(i for i in ids if same(row["ConsolidatedIntoNoteID"], i))
        w_city, w_age, w_access, _, w_agent = ids[winner]
        assert w_agent == agent and w_city != city  # same partition, and a real conflict
        assert age - w_age > 7 or (abs(age - w_age) <= 7 and w_access > access)  # FR-022
    for row in reviews(db):
        a, b = (next(i for i in ids if same(row[c], i)) for c in ("NoteAID", "NoteBID"))
        assert same(row["NoteAID"], min(a.lower(), b.lower())) and ids[a][4] == ids[b][4]
        assert rows[a]["Status"] == rows[b]["Status"] == "Active"
    assert verify(db.engine) == []


def test_a_run_stopped_while_pairs_are_in_flight_keeps_the_answers_it_had(db: Db) -> None:
    """The run deadline passes while one question waits on a slow server: the verdicts that came
    back before are cached, so the next run asks only the pairs that had no answer."""
    store = Store(db.engine)
    for name in ("Ann", "Ben", "Cal", "Dee"):
        pair(store, f"{name} likes coffee in the morning.", f"{name} likes tea in the morning.", user=store.user(name))
    served: list[int] = []

    def respond(body: dict) -> Any:
        served.append(len(served))
        return COMPATIBLE if len(served) <= 2 else Reply.slow(30.0, COMPATIBLE)

    with LLMStub(responder=respond) as stub:
        first = detect(db, with_llm(db, stub, llm_concurrency=1, run_deadline_seconds=2, llm_timeout=60))
    assert first.status == "failed" and first.stopped is not None, first.message
    with LLMStub(responder=answer_with(lambda notes: COMPATIBLE)) as stub:
        second = detect(db, with_llm(db, stub, llm_concurrency=1))
        assert second.status == "completed", second.message
        out = second.phases[0].output
        assert (out["cached"], out["questionsAsked"], len(stub.chat_requests)) == (2, 2, 2)
