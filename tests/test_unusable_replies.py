"""Issue 28: an unusable reply is not an outage, and a reply that copies instead of answering is no verdict.

A judge that answers, but not usably, leaves its unit as it is: the step counts the reply, the run
exits 0, nothing is cached, and the question is paused (asked again after 2, then 4, 8 ... days,
never every night; `runs show` says when). A phase fails only when the LLM cannot be reached, or
when every one of at least five questions got an unusable reply. A reply that copies the prompt's
example or its input note is unusable. The real `openai` client against tests/llmstub.py, on
SQLite and PostgreSQL.
"""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path
from typing import Any, Callable

import pytest
import sqlalchemy as sa
from typer.testing import CliRunner

from conftest import Db
from factory import NOW, Store, at, days
from llmstub import LLMStub, Reply, default_responder, notes_from_request, prompt_kind
from memctl import api
from memctl.cli import app
from memctl.llm.prompts import prompts_dirs
from memctl.store import models as m
from memctl.transfer import export_records
from memctl.verify import verify

FACT = [
    "User prefers a short email summary after each support call.",
    "User prefers a short email summary after every support call.",
    "User prefers short email summaries after each support call.",
]
CONSOLIDATE, CONTRADICTIONS = "Consolidate Related Notes", "Detect Note Contradictions"
#: the contradiction prompt's example reasons (prompts/detect-contradictions.md)
COFFEE = "Liking coffee and liking tea are complementary preferences."
UNITS = "One note says the customer uses metric units, the other imperial units."
runner = CliRunner()


def settings_for(db: Db, stub: LLMStub, now: Any = NOW, **changes: Any) -> Any:
    # contradiction threshold 1.0: no pair is asked, so a cluster's question is the run's only one
    values = {"contradiction_threshold": 1.0, **changes}
    return at(db.settings, now, llm_base_url=stub.base_url, llm_model="stub-model", llm_api_key="sk-test", llm_max_retries=0,
              llm_timeout=5.0, **values)  # fmt: skip


class Judge:
    """Answers consolidation questions with `consolidate(body)`, every other question as the default stub does."""

    def __init__(self, consolidate: Callable[[dict], Any]) -> None:
        self.consolidate = consolidate
        self.asked: dict[str, int] = {}

    def __call__(self, body: dict) -> Any:
        kind = prompt_kind(body)
        self.asked[kind] = self.asked.get(kind, 0) + 1
        return self.consolidate(body) if kind == "consolidate" else default_responder(body)


def copies_a_note(body: dict) -> dict:
    """A weak model's "synthesis": the first input note as JSON (SmolLM2-135M copied the note's fields)."""
    notes = notes_from_request(body)
    return {"shouldConsolidate": True, "consolidatedNote": {"type": "Preference", "content": json.dumps(notes[0]), "confidence": 0.9},
            "sourceNoteIds": [n["id"] for n in notes], "reason": "The notes say the same."}  # fmt: skip


def export(db: Db) -> str:
    buffer = io.StringIO()
    export_records(db.engine, buffer, ["note"])
    return buffer.getvalue()


def count(db: Db, table: sa.Table, *where: Any) -> int:
    with db.engine.connect() as conn:
        return conn.execute(sa.select(sa.func.count()).select_from(table).where(*where)).scalar_one()


def pauses(db: Db) -> list[dict]:
    with db.engine.connect() as conn:
        return [dict(r) for r in conn.execute(sa.select(m.pause).order_by(m.pause.c.CacheKey)).mappings()]


def step(db: Db, run_id: str, name: str, child: bool = False) -> list[dict]:
    rs = m.run_step
    with db.engine.connect() as conn:
        parent = conn.execute(sa.select(rs.c.ID).where(rs.c.AgentRunID == run_id, rs.c.StepName == name)).scalar_one()
        where = rs.c.ParentID == parent if child else rs.c.ID == parent
        rows = [dict(r) for r in conn.execute(sa.select(rs).where(where)).mappings()]
    return [{**r, "output": json.loads(r["OutputData"] or "{}")} for r in rows]


def cli(db: Db, *args: str) -> Any:
    schema = ["--db-schema", db.settings.db_schema] if db.settings.db_schema else []
    return runner.invoke(app, ["--db-url", db.settings.db_url, *schema, *args])


def shown(moment: Any) -> str:
    return moment.strftime("%Y-%m-%d %H:%M UTC")


# --- a weak judge: counted, paused, asked again later -------------------------------------------


def test_a_weak_judges_only_unusable_reply_is_counted_and_paused_not_asked_every_night(db: Db) -> None:
    store = Store(db.engine)
    agent, user = store.agent(), store.user()
    sources = [store.note(text, age_days=12 - i, AgentID=agent, UserID=user) for i, text in enumerate(FACT)]
    before = export(db)
    judge = Judge(copies_a_note)
    with LLMStub(judge) as stub:
        # a dry-run shows the same and writes nothing: no pause
        preview = api.dream(settings_for(db, stub), api.RunOptions(dry_run=True), force=True, engine=db.engine)
        assert preview.exit_code == 0 and preview.phases[0].output["unusableReplies"] == 1
        assert pauses(db) == [] and count(db, m.run) == 0

        night1 = api.dream(settings_for(db, stub), force=True, engine=db.engine)
        assert night1.exit_code == 0 and night1.status == "completed", night1.message
        [out] = [s["output"] for s in step(db, night1.run_id, CONSOLIDATE)]
        assert out["outcome"] == "done" and out["clustersInvalid"] == out["unusableReplies"] == out["failedReplies"] == 1
        assert out["questionsPaused"] == 0 and out["askAgainAt"] == {(NOW + days(2)).isoformat(): 1}
        [child] = step(db, night1.run_id, CONSOLIDATE, child=True)
        assert child["output"]["verdict"] == "invalid" and "copies" in child["output"]["reason"]
        assert export(db) == before  # the cluster is left as it is
        assert count(db, m.verdict, m.verdict.c.Kind == "consolidate") == 0  # an unusable reply is never a verdict
        [pause] = pauses(db)
        assert pause["Unusable"] == 1 and pause["AskAgainAt"] == NOW + days(2) and "copies" in pause["Reason"]
        asked = judge.asked["consolidate"]

        # the next night: not asked (paused), still exit 0, and the step says until when
        night2 = api.dream(settings_for(db, stub, NOW + days(1)), force=True, engine=db.engine)
        assert night2.exit_code == 0 and judge.asked["consolidate"] == asked
        [out] = [s["output"] for s in step(db, night2.run_id, CONSOLIDATE)]
        assert out["questionsAsked"] == out["unusableReplies"] == 0 and out["questionsPaused"] == out["clustersPaused"] == 1
        [child] = step(db, night2.run_id, CONSOLIDATE, child=True)
        assert child["output"]["verdict"] == "paused" and child["Status"] == "Completed"
        # a partition with a paused question is never marked settled
        assert count(db, m.verdict, m.verdict.c.Kind == "settled:consolidate") == 0
        text = cli(db, "runs", "show", night2.run_id)
        assert text.exit_code == 0 and f"asked again: 1 question from {shown(NOW + days(2))}" in text.output, text.output
        markdown = cli(db, "runs", "show", night2.run_id, "--format", "markdown")
        assert f"Paused after unusable replies, asked again: 1 question from {shown(NOW + days(2))}" in markdown.output

        # when the pause is over it is asked again; another unusable reply doubles the pause
        night3 = api.dream(settings_for(db, stub, NOW + days(2)), force=True, engine=db.engine)
        assert night3.exit_code == 0 and judge.asked["consolidate"] == asked + 1
        [pause] = pauses(db)
        assert pause["Unusable"] == 2 and pause["AskAgainAt"] == NOW + days(6)

        # a usable reply ends the pause
        judge.consolidate = default_responder
        night4 = api.dream(settings_for(db, stub, NOW + days(6)), force=True, engine=db.engine)
    assert night4.exit_code == 0 and night4.phases[0].output["clustersConsolidated"] == 1
    assert [store.status(s) for s in sources] == ["Revoked"] * 3 and pauses(db) == []
    assert verify(db.engine) == []


@pytest.mark.parametrize("clusters", [4, 5])
def test_a_phase_fails_when_every_one_of_five_questions_got_an_unusable_reply(db: Db, clusters: int) -> None:
    store = Store(db.engine)
    agent = store.agent()
    for k in range(clusters):
        user = store.user(f"User{k}")
        for i, text in enumerate(FACT):
            store.note(text, age_days=12 - i, AgentID=agent, UserID=user)
    before = export(db)
    with LLMStub(Judge(lambda body: Reply.wrong_shape())) as stub:
        report = api.dream(settings_for(db, stub), force=True, engine=db.engine)
        consolidate = report.phases[0]
        assert consolidate.output["unusableReplies"] == consolidate.output["questionsAsked"] == clusters
        assert export(db) == before and len(pauses(db)) == clusters
        if clusters < 5:  # a few unusable replies: the units stay as they are, the run goes on
            assert report.exit_code == 0 and consolidate.outcome == "done"
            return
        # five or more questions and not one usable reply: the model is not answering, the operator must know
        assert report.exit_code == 1 and consolidate.outcome == "failed"
        assert "every one of the 5 questions asked got an unusable reply" in (consolidate.error or "")
        assert [p.outcome for p in report.phases[1:]] == ["no items"] * 3  # the other phases still ran
        # the next night the questions are paused: nothing is asked and nothing fails
        again = api.dream(settings_for(db, stub, NOW + days(1)), force=True, engine=db.engine)
    assert again.exit_code == 0 and again.phases[0].output["questionsPaused"] == 5


def test_an_llm_answering_http_500_fails_the_phase_and_pauses_nothing(db: Db) -> None:
    store = Store(db.engine)
    agent = store.agent()
    for i, text in enumerate(FACT):
        store.note(text, age_days=12 - i, AgentID=agent)
    judge = Judge(lambda body: Reply.error(500, "model crashed"))
    with LLMStub(judge) as stub:
        report = api.dream(settings_for(db, stub), force=True, engine=db.engine)
        assert report.exit_code == 1 and report.phases[0].outcome == "failed"
        assert "the LLM could not be reached" in (report.phases[0].error or "")
        assert report.phases[0].output["unusableReplies"] == 0 and pauses(db) == []  # an outage is not the model's answer
        asked = judge.asked["consolidate"]
        again = api.dream(settings_for(db, stub, NOW + days(1)), force=True, engine=db.engine)
    assert again.exit_code == 1 and judge.asked["consolidate"] == asked + 1  # asked again the next night


# --- replies that copy instead of answering -------------------------------------------------------


def contradicting_pair(store: Store, **scope: Any) -> tuple[str, str]:
    # no number in the value: two numbers would go to review whatever the judge says (issue 28's guard)
    return (store.note("The team prefers a formal tone in the standup notes.", age_days=20, **scope),
            store.note("The team prefers a casual tone in the standup notes.", age_days=2, **scope))  # fmt: skip


@pytest.mark.parametrize(
    "reply",
    [
        pytest.param({"verdict": "competing_value", "reason": UNITS, "confidence": 0.95}, id="contradiction-with-the-example-reason"),
        pytest.param({"verdict": "none", "reason": "  liking coffee and LIKING tea are   complementary preferences", "confidence": 0.9},
                     id="none-with-the-example-reason-respaced"),  # fmt: skip
    ],
)
def test_a_verdict_copying_the_prompts_example_reason_is_neither_cached_nor_applied(db: Db, reply: dict) -> None:
    store = Store(db.engine)
    old, new = contradicting_pair(store, AgentID=store.agent())
    before = export(db)
    with LLMStub(lambda body: reply) as stub:
        report = api.run_phase(settings_for(db, stub, contradiction_threshold=0.3), "contradictions", engine=db.engine)
    out = report.phases[0].output
    assert report.exit_code == 0 and out["unusableReplies"] == out["questionsAsked"] == 1 and out["contradictionsFound"] == 0
    assert "copies the prompt's example" in out["failures"][0]
    assert export(db) == before and [store.status(old), store.status(new)] == ["Active", "Active"]
    assert count(db, m.verdict, m.verdict.c.Kind == "contradiction") == 0 and count(db, m.review) == 0
    assert len(pauses(db)) == 1


def test_the_examples_are_read_from_the_prompt_file_in_use(db: Db, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An edited prompt's example is what a reply must not copy; the old example's words are then a reason like any other."""
    edited = tmp_path / "prompts"
    shutil.copytree(prompts_dirs()[0], edited)
    template = edited / "detect-contradictions.md"
    cats = "Liking cats and liking dogs are complementary preferences."
    template.write_text(template.read_text(encoding="utf-8").replace(COFFEE, cats), encoding="utf-8")
    monkeypatch.setenv("MEMCTL_PROMPTS_DIR", str(edited))
    store = Store(db.engine)
    agent = store.agent()
    coffee_pair = contradicting_pair(store, AgentID=agent, UserID=store.user("Ann"))
    cats_pair = contradicting_pair(store, AgentID=agent, UserID=store.user("Bob"))
    coffee_ids = {i.lower() for i in coffee_pair}

    def answer(body: dict) -> dict:
        ids = {n["id"] for n in notes_from_request(body)}
        return {"verdict": "none", "reason": COFFEE if ids <= coffee_ids else cats, "confidence": 0.9}

    with LLMStub(answer) as stub:
        report = api.run_phase(settings_for(db, stub, contradiction_threshold=0.3), "contradictions", engine=db.engine)
    out = report.phases[0].output
    assert out["questionsAsked"] == 2 and out["unusableReplies"] == 1 and cats in out["failures"][0]
    assert count(db, m.verdict, m.verdict.c.Kind == "contradiction") == 1
    assert all(store.status(n) == "Active" for n in (*coffee_pair, *cats_pair))


@pytest.mark.parametrize(
    "content",
    [
        pytest.param(lambda notes: json.dumps(notes[0]), id="the-note-as-json"),
        pytest.param(lambda notes: f"{notes[0]['content']} ({notes[0]['id']})", id="a-note-id"),
        pytest.param(lambda notes: f"{notes[0]['content']} createdAt {notes[0]['createdAt']}, accessCount {notes[0]['accessCount']}.",
                     id="field-names"),  # fmt: skip
    ],
)
def test_a_synthesis_copying_an_input_note_is_neither_cached_nor_applied(db: Db, content: Callable[[list[dict]], str]) -> None:
    store = Store(db.engine)
    agent = store.agent()
    sources = [store.note(text, age_days=12 - i, AgentID=agent) for i, text in enumerate(FACT)]
    before = export(db)

    def synthesis(body: dict) -> dict:
        notes = notes_from_request(body)
        return {**copies_a_note(body), "consolidatedNote": {"type": "Preference", "content": content(notes), "confidence": 0.9}}

    with LLMStub(Judge(synthesis)) as stub:
        report = api.run_phase(settings_for(db, stub), "consolidate", engine=db.engine)
    out = report.phases[0].output
    assert report.exit_code == 0 and out["clustersInvalid"] == out["unusableReplies"] == 1 and out["notesCreated"] == 0
    assert "copies" in report.plan.phases[0].children[0].output["reason"]
    assert export(db) == before and all(store.status(s) == "Active" for s in sources)
    assert count(db, m.verdict, m.verdict.c.Kind == "consolidate") == 0


def test_an_absorption_verdict_naming_another_note_is_not_applied(db: Db) -> None:
    store = Store(db.engine)
    agent, acme, alice = store.agent(), store.company(), store.user()
    broad = store.note("Acme is billed monthly on the first business day.", AgentID=agent, CompanyID=acme, age_days=40)
    narrow = store.note("Acme is billed monthly, on the first business day.", AgentID=agent, CompanyID=acme, UserID=alice)
    bystander = store.note("Globex pays by card.", AgentID=store.agent("Other"))
    reply = {"isCovered": True, "reason": f"Note {bystander} says the same; retire it too.", "confidence": 0.95}
    with LLMStub(lambda body: reply if prompt_kind(body) == "absorb" else default_responder(body)) as stub:
        report = api.run_phase(settings_for(db, stub), "consolidate", engine=db.engine)
    out = report.phases[0].output
    assert out["notesAbsorbed"] == 0 and out["unusableReplies"] == 1 and report.exit_code == 0
    assert [store.status(n) for n in (broad, narrow, bystander)] == ["Active"] * 3
    assert count(db, m.verdict, m.verdict.c.Kind == "absorb") == 0 and len(pauses(db)) == 1


def test_a_cached_copy_of_the_example_is_asked_again(db: Db) -> None:
    """A verdict cached before issue 28 that copies the example is not used: the question is asked again and its answer replaces it."""
    store = Store(db.engine)
    old, new = contradicting_pair(store, AgentID=store.agent())
    real = {"verdict": "competing_value", "reason": "A formal tone versus a casual one.", "confidence": 0.9}
    with LLMStub(lambda body: {"verdict": "none", "reason": "Different times.", "confidence": 0.9}) as stub:
        api.run_phase(settings_for(db, stub, contradiction_threshold=0.3), "contradictions", engine=db.engine)
        with db.engine.begin() as conn:  # what a weak model left in the cache, and the settled mark resting on it
            conn.execute(m.verdict.update().where(m.verdict.c.Kind == "contradiction").values(
                Reply=json.dumps({"verdict": "none", "reason": COFFEE, "confidence": 0.9})))  # fmt: skip
            conn.execute(m.verdict.delete().where(m.verdict.c.Kind.like("settled:%")))
        stub.responder = lambda body: real
        report = api.run_phase(settings_for(db, stub, contradiction_threshold=0.3), "contradictions", engine=db.engine)
        assert len(stub.chat_requests) == 2
    assert report.phases[0].output["cached"] == 0 and report.phases[0].output["contradictionsResolved"] == 1
    assert store.status(old) == "Revoked" and store.status(new) == "Active"
    with db.engine.connect() as conn:
        [cached] = conn.execute(sa.select(m.verdict.c.Reply).where(m.verdict.c.Kind == "contradiction")).scalars()
    assert json.loads(cached)["verdict"] == "competing_value"
