"""Several questions per request (questions_per_call, issue 16), against the real stub HTTP server.

Each answer of a batched reply is validated on its own: a bad, missing or duplicated one
invalidates only its question, which is asked again alone; the others are applied. Verdicts are
cached one per question under the single question's key, a request that would not fit the
context window is made smaller, and every phase reports its prompt and completion tokens in the
step output, `--json` and the metrics file.
"""

from __future__ import annotations

import json
import random
import sys
import threading
import uuid
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from typer.testing import CliRunner

from conftest import Db
from factory import NOW, Store, at
from llmstub import LLMStub, Reply, answer_question, default_responder, prompt_kind, questions_from_request
from memctl import api
from memctl.cli import app
from memctl.llm.budget import VERDICT_REPLY_TOKENS, estimate_tokens
from memctl.llm.judge import ITEM_REPLY_TOKENS
from memctl.settings import replace
from memctl.store import models as m
from test_consolidate import TOPIC, consolidate, created_notes, llm, steps, topic, without_run_tags
from test_contradictions import CONTRADICTION, detect, pair
from test_metrics import samples

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks.corpus import MODEL_ID, CorpusSpec, build  # noqa: E402
from benchmarks.corpus import NOW as CORPUS_NOW  # noqa: E402

OLD, NEW = 16, 2  # ages in days: the newer note wins (FR-022)


def with_llm(db: Db, stub: LLMStub, **changes: Any) -> Any:
    settings = {"llm_base_url": stub.base_url, "llm_model": "stub-model", "llm_api_key": "sk-test", "llm_max_retries": 0, **changes}
    return at(db.settings, NOW, **settings)


def plant_pairs(store: Store, count: int) -> list[tuple[str, str]]:
    """`count` contradicting pairs, each in its own user partition: (older, newer)."""
    return [
        pair(store, f"User's home city is Paris, office {k}.", f"User's home city is Lyon, office {k}.", a_age_days=OLD, b_age_days=NEW)
        for k in range(count)
    ]


def ids_of(data: Any) -> set[str]:
    """The note IDs of one question's data (a pair, a cluster, or broader/narrower)."""
    notes = data.values() if isinstance(data, dict) else data
    return {n["id"] for n in notes}


class Batches:
    """A responder that reads batched requests itself and spoils the answers of chosen questions."""

    answers_batches = True

    def __init__(self, spoil: Any = None, bad: frozenset[str] = frozenset()) -> None:
        self.spoil = spoil
        self.bad = bad
        self.sizes: list[int] = []
        self.spoiled_last = False

    def __call__(self, body: dict) -> Any:
        kind = prompt_kind(body)
        questions = questions_from_request(body)
        if questions is None:  # asked alone: a good answer
            self.sizes.append(1)
            from llmstub import notes_from_request

            return self.good(kind, notes_from_request(body))
        self.sizes.append(len(questions))
        entries: list[Any] = []
        for position, q in enumerate(questions):
            entry = {"item": q["item"], **self.good(kind, q["data"])}
            if ids_of(q["data"]) & self.bad:
                self.spoiled_last = position == len(questions) - 1
                entries.extend(self.spoil(entry, q))
            else:
                entries.append(entry)
        return {"answers": entries}

    @staticmethod
    def good(kind: str, data: Any) -> dict:
        return dict(CONTRADICTION) if kind == "contradiction" else answer_question(kind, data)


SPOILED = {
    "invalid-verdict": lambda entry, q: [{**entry, "verdict": "maybe", "isContradiction": None}],
    "missing": lambda entry, q: [],
    "duplicated": lambda entry, q: [entry, entry],
    "no-item-number": lambda entry, q: [{k: v for k, v in entry.items() if k != "item"}],
    "names-another-note": lambda entry, q: [{**entry, "reason": f"Note {uuid.uuid4()} says otherwise."}],
    "confidence-out-of-range": lambda entry, q: [{**entry, "confidence": 7}],
}


def verdict_rows(db: Db, kind: str) -> list[dict]:
    with db.engine.connect() as conn:
        return [dict(r) for r in conn.execute(sa.select(m.verdict).where(m.verdict.c.Kind == kind)).mappings()]


# --- per-item validation ---------------------------------------------------------------------


@pytest.mark.parametrize("case", list(SPOILED))
def test_a_bad_answer_in_a_batch_is_asked_again_alone_and_the_others_are_applied(db: Db, case: str) -> None:
    store = Store(db.engine)
    pairs = plant_pairs(store, 5)
    bad = pairs[2]
    responder = Batches(SPOILED[case], frozenset(i.lower() for i in bad))
    with LLMStub(responder) as stub:
        report = detect(db, with_llm(db, stub, questions_per_call=5))
        requests = stub.chat_requests
    assert report.exit_code == 0, report.phases[0].error
    out = report.phases[0].output
    # one request of five questions, then the spoiled one alone; a missing last answer looks like
    # answers renumbered after a skipped one, so then all five are asked again alone
    alone = 5 if case in ("missing", "no-item-number") and responder.spoiled_last else 1
    assert responder.sizes == [5] + [1] * alone and len(requests) == 1 + alone
    assert out["llmCalls"] == 1 + alone and out["questionsAsked"] == 5 and out["failedReplies"] == 0
    assert out["questionsBatched"] == 5 and out["batchRequests"] == 1 and out["askedAgainAlone"] == alone
    assert requests[0].body["max_tokens"] == ITEM_REPLY_TOKENS + 5 * (VERDICT_REPLY_TOKENS + ITEM_REPLY_TOKENS)
    assert requests[0].body["response_format"]["json_schema"]["name"] == "contradiction_batch"
    assert requests[1].body["max_tokens"] == VERDICT_REPLY_TOKENS
    assert requests[1].body["response_format"]["json_schema"]["name"] == "contradiction_reply"
    # in the database: every older note revoked into its newer one, the re-asked pair's too
    for older, newer in pairs:
        assert store.status(older) == "Revoked" and store.status(newer) == "Active"
        assert str(store.note_row(older)["ConsolidatedIntoNoteID"]).replace("-", "").lower() == newer.replace("-", "").lower()
    assert out["contradictionsResolved"] == 5
    assert len(verdict_rows(db, "contradiction")) == 5  # one cached verdict per question


def test_an_outage_fails_the_batch_questions_without_asking_them_alone(db: Db) -> None:
    store = Store(db.engine)
    pairs = plant_pairs(store, 3)
    with LLMStub() as stub:
        stub.script(*[Reply.error(503)] * 2)
        report = detect(db, with_llm(db, stub, questions_per_call=3, llm_max_retries=1))
        assert len(stub.chat_requests) == 2  # the batch and its one retry; nobody asked alone
    out = report.phases[0].output
    assert out["failedReplies"] == out["questionsAsked"] == 3 and report.phases[0].outcome == "failed"
    assert all(store.status(a) == "Active" and store.status(b) == "Active" for a, b in pairs)
    assert verdict_rows(db, "contradiction") == []


# three topics of one user: clusters share a request only within one partition
TOPICS = (
    TOPIC[:3],
    ["The customer uses the Berlin data centre for backups.", "The customer uses the Berlin data centre for all backups.",
     "The customer uses the Berlin data centre for its backups."],
    ["Meetings with the customer happen on Tuesday mornings.", "Meetings with the customer happen on Tuesday mornings only.",
     "Meetings with the customer always happen on Tuesday mornings."],
)


def test_a_bad_cluster_answer_in_a_batch_is_asked_again_alone(db: Db) -> None:
    store = Store(db.engine)
    agent, user = store.agent(), store.user()
    clusters = [topic(store, texts, AgentID=agent, UserID=user) for texts in TOPICS]
    bad = frozenset(i.lower() for i in clusters[1])
    outside = lambda entry, q: [{**entry, "sourceNoteIds": [*entry["sourceNoteIds"], str(uuid.uuid4())]}]  # noqa: E731
    responder = Batches(outside, bad)
    with LLMStub(responder) as stub:
        report = consolidate(db, **llm(stub), questions_per_call=3)
        requests = stub.chat_requests
    assert report.exit_code == 0
    assert responder.sizes == [3, 1]
    assert "Today is" in requests[0].body["messages"][1]["content"]  # the reference date travels with a batch too
    out = report.phases[0].output
    assert out["clustersConsolidated"] == 3 and out["llmCalls"] == 2 and out["askedAgainAlone"] == 1
    created = created_notes(db)
    assert len(created) == 3
    for sources in clusters:
        assert all(store.status(s) == "Revoked" for s in sources)
    assert len(verdict_rows(db, "consolidate")) == 3
    children = steps(db, report.run_id, child=True)
    assert sum(c["output"]["llmCalls"] for c in children) == 2  # the batch's call counted once, on its first cluster
    assert sum(c["output"]["tokens"] for c in children) == out["tokens"]


def test_clusters_of_different_partitions_never_share_a_request(db: Db) -> None:
    """A model that mixes up its items could write one user's fact into another user's merged
    note: clusters are batched only within their partition (one audience)."""
    store = Store(db.engine)
    agent = store.agent()
    clusters = [topic(store, TOPIC[:3], AgentID=agent, UserID=store.user(f"U{k}")) for k in range(3)]
    responder = Batches(lambda entry, q: [entry], frozenset())
    with LLMStub(responder) as stub:
        report = consolidate(db, **llm(stub), questions_per_call=3)
    assert report.exit_code == 0 and responder.sizes == [1, 1, 1]
    assert report.phases[0].output["clustersConsolidated"] == 3
    assert all(store.status(s) == "Revoked" for sources in clusters for s in sources)


class Renumbered(Batches):
    """Answers every batched question by its own pair, but numbers the answers from 0 or as
    "²": used as numbered, each would land on its neighbour's question."""

    def __init__(self, first: Any, none_for: frozenset[str]) -> None:
        super().__init__(lambda entry, q: [entry], frozenset())
        self.first, self.none_for = first, none_for

    def __call__(self, body: dict) -> Any:
        questions = questions_from_request(body)
        if questions is None:
            self.sizes.append(1)
            from llmstub import notes_from_request

            return self.answer(notes_from_request(body))
        self.sizes.append(len(questions))
        return {"answers": [{"item": self.first if k == 0 else k + (0 if self.first == 0 else 1), **self.answer(q["data"])}
                            for k, q in enumerate(questions)]}

    def answer(self, data: Any) -> dict:
        if ids_of(data) & self.none_for:
            return {"verdict": "none", "reason": "Two different facts.", "confidence": 0.9}
        return dict(CONTRADICTION)


@pytest.mark.parametrize("first", [0, "²"], ids=["from-zero", "superscript"])
def test_answers_numbered_off_by_one_are_all_asked_again_alone(db: Db, first: Any) -> None:
    store = Store(db.engine)
    pairs = plant_pairs(store, 4)
    keep = frozenset(i.lower() for p in pairs[1::2] for i in p)  # the judge says "no contradiction" for these
    responder = Renumbered(first, keep)
    with LLMStub(responder) as stub:
        report = detect(db, with_llm(db, stub, questions_per_call=4))
    assert report.exit_code == 0, report.phases[0].error
    assert responder.sizes[0] == 4 and sorted(responder.sizes[1:]) == ([1, 1, 1, 1] if first == 0 else [1])
    for k, (older, newer) in enumerate(pairs):
        assert store.status(older) == ("Active" if k % 2 else "Revoked"), k
        assert store.status(newer) == "Active"


# --- the verdict cache -----------------------------------------------------------------------


def test_a_batched_answer_is_reused_by_a_single_ask_and_the_other_way_round(db: Db) -> None:
    store = Store(db.engine)
    pairs = plant_pairs(store, 4)
    compatible = {"verdict": "none", "reason": "Complementary.", "confidence": 0.9}
    with LLMStub(lambda body: compatible) as stub:
        # two pairs asked alone first (the other two are over the cap and wait)
        first = detect(db, with_llm(db, stub, questions_per_call=1, max_pairs=2))
        assert len(stub.chat_requests) == 2 and first.phases[0].output["pairsLeftForNextRun"] == 2
        # the next run asks only the two others, in one request, and reuses the two cached verdicts
        second = detect(db, with_llm(db, stub, questions_per_call=4, replan=True))
        assert len(stub.chat_requests) == 3
        assert len(questions_from_request(stub.chat_requests[2].body) or []) == 2
        assert second.phases[0].output["cached"] == 2 and second.phases[0].output["questionsAsked"] == 2
        # and a run asking one question per request finds all four in the cache
        third = detect(db, with_llm(db, stub, questions_per_call=1, replan=True))
        assert len(stub.chat_requests) == 3 and third.phases[0].output["cached"] == 4
    assert len(verdict_rows(db, "contradiction")) == 4
    assert all(store.status(a) == "Active" and store.status(b) == "Active" for a, b in pairs)


# --- the context budget ----------------------------------------------------------------------


def test_a_batch_that_would_not_fit_the_context_window_is_made_smaller(db: Db) -> None:
    store = Store(db.engine)
    pairs = plant_pairs(store, 4)
    with LLMStub(Batches()) as stub:
        # measure the request of four once, unbounded, to pick a window between the sizes of two and four
        detect(db, with_llm(db, stub, questions_per_call=4), dry_run=True)
        [whole] = stub.chat_requests
        stub.clear()

        def needed(request: Any) -> int:
            text = "".join(msg["content"] for msg in request.body["messages"])
            return estimate_tokens(text) + request.body["max_tokens"]

        four = needed(whole)
        window = four - 300  # four do not fit; two (about half the data, the same instructions) do
        report = detect(db, with_llm(db, stub, questions_per_call=4, llm_context_tokens=window))
        requests = stub.chat_requests
    assert report.exit_code == 0
    assert [len(questions_from_request(r.body) or []) for r in requests] == [2, 2]
    assert all(needed(r) <= window for r in requests)
    assert all(r.body["max_tokens"] == ITEM_REPLY_TOKENS + 2 * (VERDICT_REPLY_TOKENS + ITEM_REPLY_TOKENS) for r in requests)
    assert report.phases[0].output["contradictionsResolved"] == 4
    for older, newer in pairs:
        assert store.status(older) == "Revoked" and store.status(newer) == "Active"


# --- tokens in the step output, --json and the metrics file --------------------------------------


def test_every_phase_reports_prompt_and_completion_tokens(sqlite_db: Db, tmp_path: Path) -> None:
    db = sqlite_db
    store = Store(db.engine)
    agent = store.agent()
    topic(store, TOPIC[:3], AgentID=agent, UserID=store.user("T"))
    plant_pairs(store, 2)
    store.note("stale", age_days=200, accessed_days_ago=150)
    metrics = tmp_path / "memctl.prom"
    with LLMStub() as stub:
        args = [
            "--db-url", db.url, "--now", NOW.isoformat(), "--llm-base-url", stub.base_url, "--llm-model", "stub-model",
            "dream", "--force", "--json", "--metrics-file", str(metrics),
        ]  # fmt: skip
        result = CliRunner().invoke(app, args, env={"MEMCTL_QUESTIONS_PER_CALL": "10", "MEMCTL_LLM_API_KEY": "sk-test"})
        requests = stub.chat_requests
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    phases = {p["phase"]: p for p in report["phases"]}
    assert set(phases) == {"consolidate", "contradictions", "prune", "archive"}
    for name, phase in phases.items():
        out = phase["output"]
        for key in ("llmCalls", "promptTokens", "completionTokens", "tokens"):
            assert isinstance(out[key], int), (name, key)
        assert out["tokens"] == out["promptTokens"] + out["completionTokens"]
        if name in ("prune", "archive"):
            assert out["llmCalls"] == out["tokens"] == 0
    assert any(questions_from_request(r.body) for r in requests)  # MEMCTL_QUESTIONS_PER_CALL: the two pairs in one request
    asked = phases["consolidate"]["output"]["llmCalls"] + phases["contradictions"]["output"]["llmCalls"]
    assert asked == len(requests) and phases["consolidate"]["output"]["promptTokens"] > 0 and phases["contradictions"]["output"]["completionTokens"] > 0
    # the run steps in the database hold the same figures
    with db.engine.connect() as conn:
        rows = conn.execute(sa.select(m.run_step.c.StepName, m.run_step.c.OutputData)).all()
    by_step = {name: json.loads(data) for name, data in rows if data}
    for phase in phases.values():
        stored = by_step[phase["step"]]
        for key in ("llmCalls", "promptTokens", "completionTokens", "tokens"):
            assert stored[key] == phase["output"][key], (phase["phase"], key)
    # and so does the metrics file
    found = samples(metrics)
    for name, phase in phases.items():
        labels = frozenset({("command", "dream"), ("phase", name)})
        assert found[("memctl_llm_prompt_tokens", labels)] == phase["output"]["promptTokens"]
        assert found[("memctl_llm_completion_tokens", labels)] == phase["output"]["completionTokens"]
        assert found[("memctl_llm_tokens", labels)] == phase["output"]["tokens"]


def test_a_judge_that_never_answers_batches_is_asked_one_question_per_request_after_two_tries(db: Db) -> None:
    """SmolLM2-135M answered requests of ten pairs with one reply object; memctl stops batching for the run."""
    store = Store(db.engine)
    pairs = plant_pairs(store, 12)  # fewer than uniform_min_pairs: all-contradiction verdicts are believed

    def one_reply_whatever_is_asked(body: dict) -> dict:
        return dict(CONTRADICTION)

    one_reply_whatever_is_asked.answers_batches = True  # type: ignore[attr-defined] - it reads nothing, answers one object
    with LLMStub(one_reply_whatever_is_asked) as stub:
        report = detect(db, with_llm(db, stub, questions_per_call=3, llm_concurrency=1))
        sizes = [len(questions_from_request(r.body) or [None]) for r in stub.chat_requests]
    out = report.phases[0].output
    # two requests of three refused; the other six questions asked alone directly, then the refused six alone
    assert sizes == [3, 3] + [1] * 12
    assert out["llmCalls"] == 14 and out["batchesRefused"] == 2 and out["askedAgainAlone"] == 6
    assert out["failedReplies"] == 0 and out["contradictionsResolved"] == 12
    assert all(store.status(a) == "Revoked" and store.status(b) == "Active" for a, b in pairs)


def test_answers_turned_down_by_memctl_checks_do_not_stop_batching(db: Db) -> None:
    """A judge that answers every question of a batch in the reply's shape does answer batches,
    even when memctl's checks turn those answers down: it is not demoted to one question per
    request (found by issue 25's benchmark: two batches of syntheses refused for stating their
    fact twice put every later question of the run in a request of its own, ten times the calls)."""
    store = Store(db.engine)
    pairs = plant_pairs(store, 9)
    bad = frozenset(n for pair_ids in pairs for n in pair_ids)
    responder = Batches(SPOILED["names-another-note"], bad)
    with LLMStub(responder) as stub:
        report = detect(db, with_llm(db, stub, questions_per_call=3, llm_concurrency=1))
    out = report.phases[0].output
    # every request of three answered in shape and turned down, each question then asked alone
    assert responder.sizes == [3, 3, 3] + [1] * 9
    assert "batchesRefused" not in out and out["askedAgainAlone"] == 9 and out["llmCalls"] == 12
    assert out["contradictionsResolved"] == 9
    assert all(store.status(a) == "Revoked" and store.status(b) == "Active" for a, b in pairs)


class RandomDelays:
    """The stub's default answers, each request held for a random time: replies arrive in any order."""

    answers_batches = True

    def __init__(self, seed: int, most: float) -> None:
        self.rng = random.Random(seed)
        self.most = most
        self.lock = threading.Lock()

    def __call__(self, body: dict) -> Reply:
        with self.lock:
            delay = self.rng.uniform(0, self.most)
        return Reply(content=default_responder(body), delay=delay)


def dry_run_plan(db: Db, stub: LLMStub, plan_file: Path, **changes: Any) -> dict[str, Any]:
    settings = replace(
        db.settings, now=CORPUS_NOW.isoformat(), llm_base_url=stub.base_url, llm_model="stub-model", llm_api_key="sk-test",
        embed_provider="stored", embed_model=MODEL_ID, max_pairs=100_000, prune_cap=100_000, questions_per_call=10, **changes,
    )  # fmt: skip
    report = api.dream(settings, api.RunOptions(dry_run=True, plan_out=str(plan_file)), force=True, engine=db.engine)
    assert report.status == "dry-run" and report.exit_code == 0, report.message
    return json.loads(plan_file.read_text())


def without_levels(data: Any) -> Any:
    """Drop the concurrency each step reports reaching (llmConcurrencyPeak / End): it differs by design."""
    if isinstance(data, dict):
        return {k: without_levels(v) for k, v in data.items() if k not in ("llmConcurrencyPeak", "llmConcurrencyEnd")}
    if isinstance(data, list):
        return [without_levels(v) for v in data]
    return data


def test_the_plan_is_the_same_whatever_the_concurrency_and_the_order_replies_arrive_in(db: Db, tmp_path: Path) -> None:
    """Questions go out partition by partition while the next partitions are planned (issue 25):
    with one request at a time, eight, or `auto`, and replies arriving in random order, the plan
    is the same, unit for unit and in the same order, and so are the requests made."""
    build(db.engine, CorpusSpec(notes=700, agents=3, dim=384, seed=29, contradiction_share=0.04))
    plans, questions = [], []
    for concurrency, seed in ((1, 1), (8, 2), ("auto", 3)):
        with LLMStub(RandomDelays(seed, 0.04)) as stub:
            plan = dry_run_plan(db, stub, tmp_path / f"plan-{concurrency}-{seed}.json", llm_concurrency=concurrency)
            requests = stub.chat_requests
        # what was asked, whatever the order the requests were sent in: one entry per request
        questions.append(sorted(json.dumps(questions_from_request(r.body) or r.body["messages"][1:], sort_keys=True) for r in requests))
        plans.append(without_run_tags(json.dumps(without_levels(plan["phases"]), sort_keys=True)))
    consolidation = json.loads(plans[0])[0]
    assert consolidation["phase"] == "consolidate" and sum(u["kind"] == "cluster" for u in consolidation["units"]) >= 5
    assert len({u["detail"]["partition"] for u in consolidation["units"] if u["kind"] == "cluster"}) >= 3, "clusters of several partitions"
    # a judge found to refuse batches is asked alone from then on, at a moment that depends on timing
    assert "batchesRefused" not in consolidation["output"], "the requests made are comparable only while no batch is refused"
    assert consolidation["output"]["batchRequests"] >= 1, "clusters of one partition share requests"
    assert plans[1] == plans[0] and plans[2] == plans[0]
    assert questions[1] == questions[0] and questions[2] == questions[0]


def test_no_cluster_question_waits_while_the_wordings_are_read(db: Db, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Questions held while every thread had a request waiting go out once the clusters are all
    found, not after the wordings of the planned partitions are read (issue 25): when the first
    wordings are read, nothing is held any longer."""
    from memctl.phases import asking
    from memctl.phases.consolidate import copies

    build(db.engine, CorpusSpec(notes=700, agents=3, dim=384, seed=29, contradiction_share=0.04))
    made: list[Any] = []
    real_init = asking.Asking.__init__

    def recording(self: Any, *args: Any, **kwargs: Any) -> None:
        real_init(self, *args, **kwargs)
        made.append(self)

    held_then: list[int] = []
    real_groups = copies.copy_groups

    def reading(notes: Any, key_of: Any = None, **kwargs: Any) -> Any:
        if key_of is not None and made and not held_then:  # the wordings, not the exact copies
            held_then.append(made[0].held_questions)
        return real_groups(notes, key_of) if key_of is not None else real_groups(notes)

    held_ever: list[int] = []
    real_submit = asking.Asking.submit

    def submitting(self: Any, questions: Any) -> None:
        real_submit(self, questions)
        held_ever.append(self.held_questions)

    monkeypatch.setattr(asking.Asking, "__init__", recording)
    monkeypatch.setattr(asking.Asking, "submit", submitting)
    monkeypatch.setattr("memctl.phases.consolidate.copy_groups", reading)
    with LLMStub(RandomDelays(5, 0.2)) as stub:  # slow replies: every thread busy, later partitions' questions held
        dry_run_plan(db, stub, tmp_path / "plan.json", llm_concurrency=2)
    assert max(held_ever) > 0, "no question was ever held: the test shows nothing"
    assert held_then == [0]
