"""Issue 15: what real OpenAI-compatible servers do, reproduced on tests/llmstub.py.

llama-cpp-python answers `response_format: json_schema` with HTTP 500, serves one request at a
time, drops system messages under some chat templates and trickles long replies; a weak model
copies placeholders and calls nearly every pair a contradiction. Each test plants one of these
and checks what memctl does about it (the real server runs in tests/test_llm_server.py).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from conftest import Db
from factory import NOW, Store, at
from llmstub import LLMStub, Reply, default_responder, notes_from_request, prompt_kind
from memctl import api
from memctl.llm.budget import split_to_fit
from memctl.llm.judge import LLMJudge
from memctl.llm.replies import ContradictionReply
from memctl.verify import verify
from test_llm_client import KEY, make_client, note

LLAMA_CPP_500 = (
    "1 validation error: {'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), "
    "'msg': \"Input should be 'text' or 'json_object'\", 'input': 'json_schema'}"
)
COMPATIBLE = {"verdict": "none", "reason": "Complementary facts.", "confidence": 0.9}
CONTRADICTION = {"verdict": "competing_value", "reason": "Two values for one attribute.", "confidence": 0.95}





def like_llama_cpp(body: dict) -> Any:
    """Answer as llama-cpp-python's server does: HTTP 500 for json_schema, JSON otherwise."""
    if (body.get("response_format") or {}).get("type") == "json_schema":
        return Reply.error(500, LLAMA_CPP_500)
    return COMPATIBLE


def test_a_500_naming_the_response_format_falls_back_to_json_object_with_the_schema_in_the_prompt() -> None:
    with LLMStub(like_llama_cpp) as stub:
        judge = LLMJudge(make_client(stub))
        first = judge.contradiction(note("a", "User likes tea."), note("b", "User likes coffee."))
        second = judge.contradiction(note("a", "User likes tea."), note("c", "User likes cake."))
        assert first.reply == ContradictionReply(**COMPATIBLE) and second.reply is not None
        assert [r.response_format_type for r in stub.chat_requests] == ["json_schema", "json_object", "json_object"]
        # the schema the server could not enforce is written into the prompt
        user = stub.chat_requests[1].message("user")
        assert 'exactly these keys ("subjectA": a string; "valueA": a string; "subjectB": a string; "valueB": a string; ' in user
        assert '"verdict": exactly one of "none", "competing_value", "negation", "temporal_supersession"; ' in user
        assert '"confidence": a number from 0 to 1)' in user and "$defs" not in user
        assert judge.client.counters()["formatFallbacks"] == 1 and judge.client.counters()["retries"] == 0


def test_llm_response_format_setting_starts_at_the_mode_it_names(stub: LLMStub) -> None:
    stub.script(Reply.json(COMPATIBLE))
    client = make_client(stub, response_format="text")
    assert client.complete_json("s", "u", ContradictionReply, "contradiction_reply").reply is not None
    assert "response_format" not in stub.chat_requests[0].body
    assert "JSON object only" in stub.chat_requests[0].message("user")


def test_every_request_carries_max_tokens_sized_to_its_reply(stub: LLMStub) -> None:
    judge = LLMJudge(make_client(stub))
    judge.contradiction(note("a", "User likes tea."), note("b", "User likes coffee."))
    notes = [note(str(i), f"User wants reports as PDF, item {i}. " * 5) for i in range(4)]
    judge.consolidate(notes, "2026-03-20")
    verdict_budget, merge_budget = (r.body["max_tokens"] for r in stub.chat_requests)
    assert verdict_budget == 256
    assert merge_budget > verdict_budget + 4 * 40  # room for every source's facts and ids


def test_the_same_server_error_twice_is_not_retried(stub: LLMStub) -> None:
    stub.script(*[Reply.error(500, "Context size has been exceeded.")] * 4)
    client = make_client(stub)
    result = client.complete_json("s", "u", ContradictionReply, "contradiction_reply")
    assert result.reply is None and result.calls == 2 and len(stub.chat_requests) == 2
    assert "not retried" in result.error and "Context size" in result.error
    assert client.counters()["deterministicErrors"] == 1


def test_a_trickling_reply_ends_at_the_call_deadline(stub: LLMStub) -> None:
    # one byte every 0.2 s: the whole body would take about a minute; each read is quick
    stub.script(Reply(content=COMPATIBLE, trickle=0.2))
    client = make_client(stub, timeout=1, max_retries=0)
    result = client.complete_json("s", "u", ContradictionReply, "contradiction_reply")
    assert result.reply is None and "timed out after 1s" in result.error
    assert client.counters()["timeouts"] == 1


def test_timeouts_lower_the_concurrency_and_successes_raise_it_again() -> None:
    with LLMStub(lambda body: COMPATIBLE) as stub:
        stub.script(Reply.slow(2.0, COMPATIBLE))
        client = make_client(stub, timeout=0.5, concurrency=4, max_retries=2)
        client.complete_json("s", "u", ContradictionReply, "contradiction_reply")
        assert client.concurrency_now == 2 and client.counters()["concurrencyBackoffs"] == 1
        for _ in range(4):
            client.complete_json("s", "u", ContradictionReply, "contradiction_reply")
        assert client.concurrency_now == 3


def test_a_question_that_would_not_fit_the_context_is_never_sent(stub: LLMStub) -> None:
    judge = LLMJudge(make_client(stub), context_tokens=600)
    result = judge.contradiction(note("a", "User likes tea. " * 50), note("b", "User likes coffee."))
    assert result.reply is None and "not sent" in result.error and "llm_context_tokens = 600" in result.error
    assert stub.chat_requests == []


def test_a_cluster_too_big_for_the_context_is_split_into_parts_that_fit(stub: LLMStub) -> None:
    notes = [note(f"{i:02d}", f"User wants report number {i} sent as a PDF attachment every Monday morning. " * 4) for i in range(7)]
    judge = LLMJudge(make_client(stub), context_tokens=3500)
    assert not judge.consolidation_fits(notes, "2026-03-20")
    parts = split_to_fit(notes, lambda part: judge.consolidation_fits(part, "2026-03-20"), 3)
    assert parts and all(len(p) >= 3 and judge.consolidation_fits(p, "2026-03-20") for p in parts)
    assert [n.id for p in parts for n in p] == [n.id for n in notes][: sum(len(p) for p in parts)]
    assert split_to_fit(notes, lambda part: False, 3) is None


def test_the_system_message_goes_into_the_user_message_when_a_probe_shows_the_server_drops_it(caplog: pytest.LogCaptureFixture) -> None:
    def drops_system(body: dict) -> Reply:
        # prompt tokens counted as a template without system messages would: the user part only
        tokens = sum(len(m["content"]) for m in body["messages"] if m["role"] != "system") // 4
        answer = "OK" if notes_from_request(body) is None and "Say OK" in json.dumps(body) else COMPATIBLE
        return Reply.json(answer, prompt_tokens=tokens)

    with LLMStub(drops_system) as stub:
        client = make_client(stub, system_role="auto")
        with caplog.at_level("WARNING"):
            result = client.complete_json("Be strict.", "Compare.", ContradictionReply, "contradiction_reply")
        assert result.reply is not None and client.system_role == "user"
        asked = stub.chat_requests[-1].body["messages"]
        assert [m["role"] for m in asked] == ["user"] and asked[0]["content"].startswith("Be strict.")
        assert "drops the system message" in caplog.text


def test_log_llm_writes_every_request_and_reply_with_secrets_scrubbed(stub: LLMStub, tmp_path: Path) -> None:
    stub.script(Reply.error(503, f"overloaded for key {KEY}"), Reply.json(COMPATIBLE))
    path = tmp_path / "llm.jsonl"
    client = make_client(stub, log_path=path)
    client.complete_json("s", f"the key is {KEY}", ContradictionReply, "contradiction_reply")
    client.close()
    text = path.read_text()
    records = [json.loads(line) for line in text.splitlines()]
    assert len(records) == 2 == len(stub.chat_requests)
    assert "HTTP 503" in records[0]["error"] and records[1]["reply"]["choices"][0]["message"]["content"]
    assert records[1]["maxTokens"] is None and records[1]["messages"][1]["content"] == "the key is ***"
    assert KEY not in text


# --- a weak judge cannot do harm ----------------------------------------------------------------


def with_llm(db: Db, stub: LLMStub, **changes: Any) -> Any:
    options = {"llm_max_retries": 0, **changes}
    return at(db.settings, NOW, llm_base_url=stub.base_url, llm_model="stub-model", llm_api_key="sk-test", **options)


def detect(db: Db, settings: Any) -> api.RunReport:
    return api.run_phase(settings, "contradictions", engine=db.engine)


def test_a_loser_that_says_more_than_the_conflict_is_flagged_not_revoked(db: Db, stub: LLMStub) -> None:
    stub.responder = lambda body: CONTRADICTION
    store = Store(db.engine)
    scope = {"AgentID": store.agent(), "UserID": store.user()}
    longer = store.note("Alice prefers a short email summary. Summaries should be sent the same day.", age_days=30, **scope)
    shorter = store.note("Alice prefers a short email summary.", age_days=2, **scope)
    report = detect(db, with_llm(db, stub, contradiction_threshold=0.3))
    out = report.phases[0].output
    assert store.status(longer) == "Active" and store.status(shorter) == "Active"
    # the exact duplicate part aside, "same day" would have been lost: never revoked
    assert out["contradictionsResolved"] == 0 and (out["contradictionsFlagged"] + out["duplicatesNotContradictions"]) == 1
    assert verify(db.engine) == []


def test_a_one_statement_loser_is_still_revoked_and_duplicates_never_are(db: Db, stub: LLMStub) -> None:
    stub.responder = lambda body: CONTRADICTION
    store = Store(db.engine)
    scope = {"AgentID": store.agent(), "UserID": store.user()}
    old = store.note("User's home city is Paris.", age_days=20, **scope)
    new = store.note("User's home city is Lyon.", age_days=2, **scope)
    other = {"AgentID": scope["AgentID"], "UserID": store.user()}
    twin_a = store.note("Ships via DHL.", age_days=20, **other)
    twin_b = store.note("Ships via DHL.", age_days=2, **other)
    report = detect(db, with_llm(db, stub, contradiction_threshold=0.3))
    out = report.phases[0].output
    assert store.status(old) == "Revoked" and store.status(new) == "Active"
    assert store.status(twin_a) == store.status(twin_b) == "Active" and out["duplicatesNotContradictions"] == 1


def test_a_judge_calling_nearly_every_pair_a_contradiction_applies_none(db: Db, stub: LLMStub) -> None:
    stub.responder = lambda body: CONTRADICTION
    store = Store(db.engine)
    agent = store.agent()
    olds = []
    for i in range(6):
        scope = {"AgentID": agent, "UserID": store.user()}
        olds.append(store.note(f"User's home city is Paris number {i}.", age_days=20, **scope))
        store.note(f"User's home city is Lyon number {i}.", age_days=2, **scope)
    report = detect(db, with_llm(db, stub, contradiction_threshold=0.3, uniform_min_pairs=5))
    phase = report.phases[0]
    assert all(store.status(n) == "Active" for n in olds)
    assert phase.output["verdictsDistrusted"] == 6 and phase.output["contradictionsResolved"] == 0
    assert "NOT APPLIED" in phase.message and "6 of 6 pairs" in phase.output["distrustReason"]
    # with the bound above the run's size, the same verdicts are applied
    report = detect(db, with_llm(db, stub, contradiction_threshold=0.3, uniform_min_pairs=50))
    assert all(store.status(n) == "Revoked" for n in olds)


def test_prompts_hold_no_placeholder_a_model_could_copy() -> None:
    prompts = Path(__file__).resolve().parents[1] / "prompts"
    for path in prompts.glob("*.md"):
        text = path.read_text().split("---system---", 1)[1].replace("<notes_json>", "").replace("</notes_json>", "")
        assert "<" not in text and ">" not in text.replace("->", ""), path.name


# --- embeddings from real servers -----------------------------------------------------------------


def test_per_token_embeddings_fail_with_an_error_that_names_pooling(stub: LLMStub) -> None:
    from memctl.embed.openai import OpenAIEmbedder

    per_token = {"object": "list", "model": "m", "data": [{"object": "embedding", "index": 0, "embedding": [[0.1, 0.2], [0.3, 0.4]]}]}
    stub.script_embeddings(Reply(body=per_token))
    embedder = OpenAIEmbedder("nomic-embed-text", base_url=stub.base_url, api_key="x", max_retries=0)
    with pytest.raises(RuntimeError, match="pooling"):
        embedder.embed(["hello"])


def test_an_embedding_model_without_measured_thresholds_gets_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    from memctl.embed import make_embedder

    with caplog.at_level("WARNING"):
        make_embedder("openai", "nomic-embed-text-v1.5", base_url="http://127.0.0.1:9/v1", api_key="x")
    assert "no measured similarity thresholds" in caplog.text and "memctl eval" in caplog.text
    caplog.clear()
    with caplog.at_level("WARNING"):
        make_embedder("openai", "text-embedding-3-small", base_url="http://127.0.0.1:9/v1", api_key="x")
    assert "no measured" not in caplog.text


def test_a_merge_that_drops_a_sentence_is_rejected_when_every_sentence_must_be_kept(db: Db, stub: LLMStub) -> None:
    def drops_one(body: dict) -> dict:
        notes = notes_from_request(body)
        return {"shouldConsolidate": True, "consolidatedNote": {"type": "Preference", "content": "Alice wants a short email summary.", "confidence": 0.9},
                "sourceNoteIds": [n["id"] for n in notes], "reason": "same topic"}  # fmt: skip

    stub.responder = drops_one
    store = Store(db.engine)
    scope = {"AgentID": store.agent(), "UserID": store.user()}
    ids = [store.note(text, age_days=5, **scope) for text in (
        "Alice wants a short email summary.", "Alice wants a short email summary. Send it the same day.", "Alice wants the short email summary.")]
    settings = with_llm(db, stub, consolidate_threshold=0.3, consolidate_keep_every_sentence=True)
    report = api.run_phase(settings, "consolidate", engine=db.engine)
    out = report.phases[0].output
    assert out["clustersInvalid"] == 1 and out["notesCreated"] == 0
    assert all(store.status(i) == "Active" for i in ids)
    children = [c for p in report.plan.phases for c in p.children]
    assert "drops 1 sentence of its sources" in children[0].output["reason"] and "same day" in children[0].output["reason"]


def test_the_step_output_counts_fallbacks_retries_and_timeouts(db: Db) -> None:
    def answer(body: dict) -> Any:
        if (body.get("response_format") or {}).get("type") == "json_schema":
            return Reply.error(500, LLAMA_CPP_500)
        return COMPATIBLE if prompt_kind(body) == "contradiction" else default_responder(body)

    with LLMStub(answer) as stub:
        stub.script(Reply.error(503, "busy"))
        store = Store(db.engine)
        scope = {"AgentID": store.agent(), "UserID": store.user()}
        store.note("User's home city is Paris.", age_days=20, **scope)
        store.note("User's home city is Lyon.", age_days=2, **scope)
        settings = with_llm(db, stub, contradiction_threshold=0.3, llm_max_retries=2)
        out = detect(db, settings).phases[0].output
    assert out["pairsAnalysed"] == 1 and out["llmFormatFallbacks"] == 1 and out["llmRetries"] == 1
    assert out["llmTimeouts"] == 0 and out["llmDeterministicErrors"] == 0 and out["llmCalls"] == 3
