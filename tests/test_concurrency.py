"""Adaptive concurrency (issue 25): `llm_concurrency = auto` on real dreams against the stub under load.

The stub is a real HTTP server (tests/llmstub.py): `slots=1` serialises chat requests as a
one-slot local server does (a request's latency grows with the requests ahead of it), a flat
`latency` answers any number at once, `Throttle` answers a window of requests with 429 and a
Retry-After. Every dream under `auto` must get every answer (a retried 429 is no failure), make
the same decisions as a dream with one request at a time, and report in its steps the highest
bound it reached (`llmConcurrencyPeak`) and the bound it ended with (`llmConcurrencyEnd`),
within the cap.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any, Iterator

import pytest
import sqlalchemy as sa
from typer.testing import CliRunner

from conftest import PG_URL, Db, make_db
from factory import NOW, Store, at
from llmstub import LLMStub, Throttle
from memctl import api
from memctl.cli import app
from memctl.llm.calls import AdaptiveLimiter
from memctl.settings import CONCURRENCY_MAX
from memctl.store import models as m
from test_batching import plant_pairs

#: contradicting pairs, one per user partition: one question each (questions_per_call = 1)
PAIRS = 60
OLD_FIXED = 8  # the fixed bound before issue 25
LATENCY = 0.2  # the throttled stub's seconds per reply


def llm(stub: LLMStub, **changes: Any) -> dict[str, Any]:
    return {
        "llm_base_url": stub.base_url, "llm_model": "stub-model", "llm_api_key": "sk-test", "llm_timeout": 20.0,
        "llm_max_retries": 6, "max_pairs": PAIRS, **changes,
    }  # fmt: skip


def dream(db: Db, **changes: Any) -> api.RunReport:
    return api.dream(at(db.settings, NOW, **changes), force=True, engine=db.engine)


@pytest.fixture
def twin(db: Db, tmp_path: Path) -> Iterator[Db]:
    """A second empty store on the same backend as `db`: the one-request-at-a-time reference."""
    if db.backend == "sqlite":
        other = make_db("sqlite", tmp_path / "twin")
        yield other
        other.engine.dispose()
        return
    schema = "t_" + uuid.uuid4().hex[:12]
    other = make_db("postgresql", tmp_path / "twin", schema=schema)
    try:
        yield other
    finally:
        other.engine.dispose()
        engine = sa.create_engine(PG_URL)
        with engine.begin() as conn:
            conn.exec_driver_sql(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
        engine.dispose()


def outcome(db: Db) -> list[tuple[Any, ...]]:
    """Every note by its text: status, the text of the note it went into, whether memctl made it (IDs differ per store)."""
    with db.engine.connect() as conn:
        rows = [dict(r) for r in conn.execute(sa.select(m.note)).mappings()]
    text = {str(r["ID"]).lower(): r["Note"] for r in rows}
    return sorted(
        (r["Note"], r["Status"], text.get(str(r["ConsolidatedIntoNoteID"] or "").lower()), r["DerivedFromNoteIDs"] is not None)
        for r in rows
    )


def asking_steps(report: api.RunReport) -> list[dict[str, Any]]:
    return [p.output for p in report.phases if p.output and p.output.get("questionsAsked")]


def reference(twin: Db) -> list[tuple[Any, ...]]:
    """The same store dreamt one request at a time against a stub without load."""
    plant_pairs(Store(twin.engine), PAIRS)
    with LLMStub() as stub:
        report = dream(twin, **llm(stub, llm_concurrency=1))
        assert stub.max_in_flight == 1
    assert report.exit_code == 0
    steps = asking_steps(report)
    assert sum(s["questionsAsked"] for s in steps) >= PAIRS and all(s["failedReplies"] == 0 for s in steps)
    assert all(s["llmConcurrencyPeak"] == s["llmConcurrencyEnd"] == 1 for s in steps)  # pinned: one
    return outcome(twin)


def run_auto(db: Db, stub: LLMStub) -> tuple[api.RunReport, list[dict[str, Any]]]:
    plant_pairs(Store(db.engine), PAIRS)
    report = dream(db, **llm(stub))  # llm_concurrency: the default, auto
    assert report.exit_code == 0, [p.error for p in report.phases]
    steps = asking_steps(report)
    assert sum(s["questionsAsked"] for s in steps) >= PAIRS
    for step in steps:  # every call got its answer, within the cap
        assert step["failedReplies"] == 0 and step["unusableReplies"] == 0, step
        assert 1 <= step["llmConcurrencyEnd"] <= step["llmConcurrencyPeak"] <= CONCURRENCY_MAX, step
    assert stub.max_in_flight <= CONCURRENCY_MAX
    return report, steps


def test_auto_settles_near_one_on_a_one_slot_server(db: Db, twin: Db) -> None:
    expected = reference(twin)
    with LLMStub(latency=0.15, slots=1) as stub:
        _, steps = run_auto(db, stub)
    contradictions = max(steps, key=lambda s: s["questionsAsked"])
    # queueing is seen as latency, before any call fails: no timeout, no retry, no 429/503 back-off
    assert contradictions["llmTimeouts"] == contradictions["llmRetries"] == contradictions["llmConcurrencyBackoffs"] == 0
    assert contradictions["llmConcurrencyPeak"] <= 2 * AdaptiveLimiter.START  # one doubling at most before the queue shows
    assert contradictions["llmConcurrencyEnd"] <= 2
    assert outcome(db) == expected


def test_auto_grows_past_the_old_fixed_eight_when_latency_stays_flat(db: Db, twin: Db) -> None:
    expected = reference(twin)
    with LLMStub(latency=0.5) as stub:
        _, steps = run_auto(db, stub)
        in_flight = stub.max_in_flight
    contradictions = max(steps, key=lambda s: s["questionsAsked"])
    assert contradictions["llmConcurrencyPeak"] > OLD_FIXED and in_flight > OLD_FIXED
    assert contradictions["llmRetries"] == contradictions["llmConcurrencyBackoffs"] == 0
    assert outcome(db) == expected


def test_auto_backs_off_on_429_honours_retry_after_and_loses_no_answer(db: Db, twin: Db) -> None:
    expected = reference(twin)
    # a Retry-After longer than the client's own first back-off (0.5 to 1 s): honoured, it shows
    window = Throttle(after=12, count=6, retry_after=1.2)
    with LLMStub(latency=LATENCY, throttle=window) as stub:
        _, steps = run_auto(db, stub)
        requests = stub.chat_requests
        throttled = stub.throttled
    assert throttled == window.count
    assert sum(s["llmRetries"] for s in steps) == window.count  # each 429 retried once, then answered
    assert sum(s["llmConcurrencyBackoffs"] for s in steps) >= 1
    # Retry-After honoured: each throttled request is asked again no sooner than its 429 said
    chat = [r for r in requests if r.path.endswith("/chat/completions")]
    for k in range(window.after, window.after + window.count):
        again = next(r for r in chat[k + 1 :] if r.raw == chat[k].raw)
        assert again.received_at - chat[k].received_at >= LATENCY + window.retry_after
    assert outcome(db) == expected


def test_a_pinned_number_is_the_ceiling_and_the_cap_bounds_auto(sqlite_db: Db) -> None:
    db = sqlite_db
    plant_pairs(Store(db.engine), 20)
    with LLMStub(latency=0.2) as stub:
        report = dream(db, **llm(stub, llm_concurrency=3))
        pinned = stub.max_in_flight
        steps = asking_steps(report)
        assert pinned == 3 and all(s["llmConcurrencyPeak"] == s["llmConcurrencyEnd"] == 3 for s in steps)
    twin = make_db("sqlite", db.path / "capped")
    plant_pairs(Store(twin.engine), 20)
    with LLMStub(latency=0.2) as stub:
        report = dream(twin, **llm(stub, llm_concurrency_max=2))
        capped = stub.max_in_flight
    twin.engine.dispose()
    assert capped == 2 and all(s["llmConcurrencyPeak"] == 2 for s in asking_steps(report))


def test_dream_json_reports_the_concurrency_reached(sqlite_db: Db) -> None:
    db = sqlite_db
    plant_pairs(Store(db.engine), 4)
    with LLMStub() as stub:
        args = ["--db-url", db.url, "--now", NOW.isoformat(), "--llm-base-url", stub.base_url, "--llm-model", "stub-model",
                "dream", "--force", "--json"]  # fmt: skip
        result = CliRunner().invoke(app, args, env={"MEMCTL_LLM_API_KEY": "sk-test", "MEMCTL_LLM_CONCURRENCY": "auto"})
    assert result.exit_code == 0, result.output
    phases = {p["phase"]: p["output"] for p in json.loads(result.stdout)["phases"]}
    out = phases["contradictions"]
    assert out["llmConcurrencyPeak"] >= out["llmConcurrencyEnd"] >= 1
    assert out["llmConcurrencyPeak"] <= AdaptiveLimiter.START  # four questions: nothing to grow on


@pytest.mark.parametrize("value", ["0", "-1", "many", "2.5", ""])
def test_a_bad_concurrency_is_a_clear_error(sqlite_db: Db, value: str) -> None:
    result = CliRunner().invoke(app, ["--db-url", sqlite_db.url, "dream", "--dry-run"], env={"MEMCTL_LLM_CONCURRENCY": value})
    assert result.exit_code == 2, result.output
    assert "llm_concurrency" in result.output and "auto or an integer of at least 1" in result.output


class Clock:
    """memctl.llm.calls' time.monotonic, moved by the test: the limiter's rules without timing."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def one_round(limiter: Any, clock: Clock, latency: float) -> int:
    """Fill every slot at once, answer all after `latency`; return the bound after the round."""
    started = [limiter.acquire() for _ in range(limiter.limit)]
    clock.now += latency
    for when in started:
        limiter.release(False, when, "contradiction")
    clock.now += 0.01
    return limiter.limit


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    import memctl.llm.calls as calls

    fake = Clock()
    monkeypatch.setattr(calls.time, "monotonic", fake)
    return fake


def test_auto_doubles_until_two_queueing_windows_then_lands_on_the_servers_slots(clock: Clock) -> None:
    from memctl.llm.calls import AdaptiveLimiter

    limiter = AdaptiveLimiter(32)
    assert limiter.limit == 1  # the first request alone
    bounds = [one_round(limiter, clock, 1.0) for _ in range(4)]
    assert bounds == [4, 8, 16, 32]  # START, then doubling while latency holds
    assert one_round(limiter, clock, 4.0) == 32  # one queueing window: hold
    assert one_round(limiter, clock, 4.0) == 8  # two in a row: 32 / 4, the slots that give that queue
    # after a back-off a step up needs two calm windows, and then it is one step, not a doubling
    assert [one_round(limiter, clock, 1.0) for _ in range(3)] == [8, 9, 9]


def test_auto_halves_once_for_a_round_of_overloads(clock: Clock) -> None:
    from memctl.llm.calls import AdaptiveLimiter

    limiter = AdaptiveLimiter(32)
    for _ in range(3):
        one_round(limiter, clock, 1.0)
    assert limiter.limit == 16
    started = [limiter.acquire() for _ in range(16)]
    clock.now += 1.0
    lowered = [limiter.release(True, when) for when in started]  # every request of the round meets a 429
    assert lowered == [True] + [False] * 15 and limiter.limit == 8
    later = limiter.acquire()  # started after the cut: its overload cuts again
    clock.now += 1.0
    assert limiter.release(True, later) and limiter.limit == 4
