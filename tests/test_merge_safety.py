"""Issue 13: never silently wrong.

A merged note states one subject's facts and no conflicting values; consolidation never changes
what the authority rule decides (the same winners and review items whether contradicting notes
share a partition with everything else or sit apart); an LLM outage is a failed phase.
"""

from __future__ import annotations

import json
import shutil
import sys
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any, Optional

import pytest
import sqlalchemy as sa
from conftest import Db, make_db
from factory import NOW, Store, at
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st
from llmstub import LLMStub, Reply, notes_from_request

from memctl import api
from memctl.store import models as m
from memctl.text.decide import NoteText, decide, incompatibility

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks.corpus import CorpusSpec, build  # noqa: E402

TOM = ["Tom wants his reports weekly.", "Tom wants his reports weekly by email.", "Tom wants his reports monthly."]


def dream(db: Db, now: Any = NOW, **changes: Any) -> api.RunReport:
    return api.dream(at(db.settings, now, **changes), force=True, engine=db.engine)


def rows(db: Db, *where: Any) -> list[dict[str, Any]]:
    with db.engine.connect() as conn:
        return [dict(r) for r in conn.execute(sa.select(m.note).where(*where)).mappings()]


def created(db: Db) -> list[dict[str, Any]]:
    return rows(db, m.note.c.DerivedFromNoteIDs.is_not(None))


def llm(stub: LLMStub, **changes: Any) -> dict[str, Any]:
    return {"llm_base_url": stub.base_url, "llm_model": "stub-model", "llm_api_key": "sk-test", "llm_timeout": 5.0, **changes}


# --- one subject, one value ---------------------------------------------------------------------


def test_tom_weekly_weekly_by_email_and_monthly_never_become_one_note(db: Db) -> None:
    """The issue's first example, offline: never one note stating all three values; the authority
    rule settles the conflict instead (issue 24: a pair consolidation keeps apart as a conflicting
    value reaches the rule): monthly is 23 days newer, so both weekly notes are revoked into it."""
    store = Store(db.engine)
    scope = {"AgentID": store.agent(), "UserID": store.user("Tom")}
    ids = [store.note(TOM[0], age_days=30, **scope), store.note(TOM[1], age_days=30, **scope), store.note(TOM[2], age_days=7, **scope)]
    report = dream(db, consolidate_threshold=-1.0)  # every note in one cluster: the code, not the embedder, keeps them apart
    assert report.exit_code == 0
    assert created(db) == []
    assert [store.status(i) for i in ids] == ["Revoked", "Revoked", "Active"]
    assert all(str(store.note_row(i)["ConsolidatedIntoNoteID"]).lower() == ids[2].lower() for i in ids[:2])
    consolidate = next(p for p in report.phases if p.phase == "consolidate")
    assert consolidate.output["notesKeptApart"] >= 1 and "weekly" in json.dumps(consolidate.output["keptApartReasons"])


def test_a_model_decides_and_its_merge_keeps_the_value_the_authority_rule_keeps(db: Db) -> None:
    """LLM path (issue 24): soft rules no longer keep notes out of the model's question; the model
    merges the three notes into the current value, which the synthesis check verifies against the
    authority rule (monthly is 23 days newer)."""
    store = Store(db.engine)
    scope = {"AgentID": store.agent(), "UserID": store.user("Tom")}
    ids = [store.note(TOM[0], age_days=30, **scope), store.note(TOM[1], age_days=30, **scope), store.note(TOM[2], age_days=7, **scope)]

    def responder(body: dict) -> Reply:
        notes = notes_from_request(body)
        if "consolidatedNote" in json.dumps(body):
            return Reply.json({"shouldConsolidate": True, "sourceNoteIds": [n["id"] for n in notes], "reason": "monthly is current",
                               "consolidatedNote": {"type": "Preference", "content": "Tom wants his reports monthly by email.",
                                                    "confidence": 0.9}})
        return Reply.json({"isContradiction": False, "contradictionType": "none", "reason": "compatible", "confidence": 0.9})

    with LLMStub(responder=responder) as stub:
        report = dream(db, consolidate_threshold=-1.0, contradiction_threshold=-1.0, **llm(stub))
        asked = [notes_from_request(r.body) for r in stub.chat_requests]
    assert report.exit_code == 0
    assert sorted(n["id"] for n in asked[0]) == sorted(i.lower() for i in ids)  # one question with all three notes
    [new] = created(db)
    assert new["Note"] == "Tom wants his reports monthly by email." and all(store.status(i) == "Revoked" for i in ids)


def test_a_merge_that_keeps_the_superseded_value_is_refused(db: Db) -> None:
    store = Store(db.engine)
    scope = {"AgentID": store.agent(), "UserID": store.user("Tom")}
    ids = [store.note(TOM[0], age_days=30, **scope), store.note(TOM[1], age_days=30, **scope), store.note(TOM[2], age_days=7, **scope)]

    def responder(body: dict) -> Reply:
        notes = notes_from_request(body)
        return Reply.json({"shouldConsolidate": True, "sourceNoteIds": [n["id"] for n in notes], "reason": "weekly",
                           "consolidatedNote": {"type": "Preference", "content": "Tom wants his reports weekly by email.", "confidence": 0.9}})

    with LLMStub(responder=responder) as stub:
        report = api.run_phase(at(db.settings, NOW, consolidate_threshold=-1.0, **llm(stub)), "consolidate", engine=db.engine)
    assert created(db) == [] and all(store.status(i) == "Active" for i in ids)
    assert report.phases[0].output["clustersInvalid"] == 1
    with db.engine.connect() as conn:
        [child] = conn.execute(sa.select(m.run_step.c.OutputData).where(m.run_step.c.StepName == "Process Consolidation Cluster")).scalars()
    assert "superseded value" in json.loads(child)["reason"]


@pytest.mark.parametrize(
    "content,why",
    [
        ("Tom wants his reports weekly. Tom wants his reports monthly.", "conflicting values"),
        ("Account 17 uses the billing module. Account 18 uses the reports module.", "17, 18, which no source states"),
        ("User lives in Paris. User lives in Berlin.", "conflicting values"),
    ],
)
def test_a_synthesis_that_states_two_values_or_joins_subjects_is_refused(db: Db, content: str, why: str) -> None:
    store = Store(db.engine)
    agent = store.agent()
    sources = [store.note(t, age_days=5 - i, AgentID=agent) for i, t in enumerate(
        ["User likes short replies.", "User likes short replies a lot.", "Confirmed: user likes short replies."])]

    def responder(body: dict) -> Reply:
        notes = notes_from_request(body)
        return Reply.json({"shouldConsolidate": True, "sourceNoteIds": [n["id"] for n in notes], "reason": "merged",
                           "consolidatedNote": {"type": "Preference", "content": content, "confidence": 0.9}})

    with LLMStub(responder=responder) as stub:
        report = api.run_phase(at(db.settings, NOW, consolidate_threshold=-1.0, **llm(stub)), "consolidate", engine=db.engine)
    assert created(db) == [] and all(store.status(s) == "Active" for s in sources)
    # the only question got an unusable reply: counted, the cluster left as it is, no outage (issue 28)
    out = report.phases[0].output
    assert out["clustersInvalid"] == out["unusableReplies"] == 1 and report.exit_code == 0
    assert why in report.plan.phases[0].children[0].output["reason"]


def test_account_17_and_account_18_are_never_merged(db: Db) -> None:
    """Templated notes about different subjects; only one subject's own duplicates may merge."""
    store = Store(db.engine)
    agent = store.agent()
    others = [
        store.note(f"Account {n} uses the {module} module.", age_days=10, AgentID=agent)
        for n, module in ((18, "reports"), (19, "exports"), (20, "billing"), (21, "billing"))
    ]
    seventeen = [
        store.note(text, age_days=5 + i, AgentID=agent)
        for i, text in enumerate(["Account 17 uses the billing module.", "Confirmed: Account 17 uses the billing module.",
                                  "Account 17 uses the billing module by default."])
    ]
    assert dream(db, consolidate_threshold=-1.0).exit_code == 0
    [new] = created(db)
    assert sorted(json.loads(new["DerivedFromNoteIDs"])) == sorted(s.lower() for s in seventeen)
    assert all(store.status(o) == "Active" for o in others)
    assert "17" in new["Note"] and not any(f" {n} " in new["Note"] for n in (18, 19, 20, 21))


def test_subject_and_slot_checks() -> None:
    def apart(a: str, b: str) -> Optional[str]:
        return incompatibility(NoteText(a), NoteText(b))

    assert decide(NoteText("Account 17 uses billing."), NoteText("Account 18 uses billing.")).evidence == "hard"
    assert decide(NoteText("Tom's timezone is CET."), NoteText("Ana's timezone is CET.")).relation == "different_subject"
    assert apart("Account 17 uses billing.", "Account 18 uses billing.") is not None
    assert apart(TOM[1], TOM[2]) is not None
    assert apart(TOM[0], TOM[1]) is None  # an elaboration, not another value
    assert apart("Asked about webhooks during ticket 4821.", "Asked about SSO during ticket 5512.") is not None
    assert apart("User likes short replies.", "Confirmed: user likes short replies a lot.") is None
    # words that moved are a paraphrase; a value that changed while words moved is not
    moved, friday, monday = ("Every Friday Alice wants a short summary by email.",
                             "Alice wants a short email summary every Friday.", "Alice wants a short email summary every Monday.")
    assert apart(friday, moved) is None and apart(moved, friday) is None
    assert apart(monday, moved) is not None and apart(moved, monday) is not None
    # swapped roles are different values
    for left, right in (("The kangaroo is picking up the woman.", "The woman is picking up the kangaroo."),
                        ("A cheetah is quickly running behind its prey.", "A prey is quickly running behind the cheetah.")):
        assert apart(left, right) is not None, (left, right)
    assert apart("Alice gets a summary every Friday.", "Every Friday Alice gets a summary.") is None


def test_an_mj_like_300_note_store_merges_only_one_subject_per_note(sqlite_db: Db) -> None:
    """The issue's 300-note store shaped like an MJ deployment (benchmarks/corpus.py, text only, offline)."""
    manifest = build(sqlite_db.engine, CorpusSpec(notes=300, agents=3, dim=0, seed=7))
    before = len(rows(sqlite_db, m.note.c.Status == "Active"))
    report = api.run_phase(at(sqlite_db.settings, NOW), "consolidate", engine=sqlite_db.engine)
    assert report.exit_code == 0
    group_of = {i.lower(): g for g, ids in enumerate(manifest.duplicate_groups) for i in ids}
    new = created(sqlite_db)
    assert new, "the planted duplicate groups are merged"
    for note in new:
        sources = json.loads(note["DerivedFromNoteIDs"])
        assert len({group_of.get(s) for s in sources}) == 1 and group_of.get(sources[0]) is not None, note["Note"]
    revoked = len(rows(sqlite_db, m.note.c.Status == "Revoked"))
    assert before == 300 and revoked <= sum(len(g) for g in manifest.duplicate_groups) + len(manifest.absorptions)


# --- consolidation never changes what the authority rule decides ----------------------------------


@dataclass(frozen=True)
class Planted:
    """One contradicting pair: texts, ages (days), access counts and how each side is kept."""

    a: str
    b: str
    age_a: float
    age_b: float
    access_a: int = 0
    access_b: int = 0
    keep_a: str = "Standard"  # Standard | Protected | Immutable | manual
    keep_b: str = "Standard"


ATTRIBUTES = [
    ("User's timezone is CET.", "User's timezone is PST."),
    ("User's currency is EUR.", "User's currency is USD."),
    ("User lives in Paris.", "User lives in Berlin."),
    ("User works at Acme.", "User works at Globex."),
    ("User reports to Dana.", "User reports to Lee."),
    ("User is married to Sam.", "User is married to Alex."),
    ("User's phone number is 555-0101.", "User's phone number is 555-0199."),
    ("User's birthday is 1990-04-02.", "User's birthday is 1991-07-09."),
    ("User's job title is Engineer.", "User's job title is Designer."),
    ("User's native language is Dutch.", "User's native language is Polish."),
    ("User's budget is 5000 dollars.", "User's budget is 9000 dollars."),
    ("User's home country is Spain.", "User's home country is Chile."),
]
FILLERS = [
    ["User likes green tea.", "User likes green tea a lot.", "Confirmed: user likes green tea."],
    ["User plays chess on weekends.", "User plays chess on weekends with friends.", "Noted again: user plays chess on weekends."],
    ["User reads science fiction.", "User reads science fiction novels.", "Restated: user reads science fiction."],
]

#: every branch of the authority rule, and Protected / manual / Immutable losers
TWELVE = [
    Planted(*ATTRIBUTES[0], age_a=30, age_b=22),  # 8 days newer wins
    Planted(*ATTRIBUTES[1], age_a=22, age_b=30, access_b=9),  # newer wins whatever the access counts
    Planted(*ATTRIBUTES[2], age_a=10, age_b=8, access_a=5, access_b=1),  # same week: more accessed wins
    Planted(*ATTRIBUTES[3], age_a=10, age_b=10, access_a=2, access_b=2),  # a tie: review
    Planted(*ATTRIBUTES[4], age_a=12, age_b=6, access_a=3, access_b=3),  # 6 days, same access: review
    Planted(*ATTRIBUTES[5], age_a=30, age_b=5, keep_a="Protected"),  # Protected loser: review
    Planted(*ATTRIBUTES[6], age_a=30, age_b=5, keep_a="manual"),  # manual loser: review
    Planted(*ATTRIBUTES[7], age_a=30, age_b=5, keep_a="Immutable"),  # Immutable loser: review
    Planted(*ATTRIBUTES[8], age_a=5, age_b=30, keep_a="Protected"),  # a Protected note can win
    Planted(*ATTRIBUTES[9], age_a=17, age_b=10, access_a=4, access_b=1),  # exactly 7 days: access decides
    Planted(*ATTRIBUTES[10], age_a=20, age_b=11.5, access_a=0, access_b=7),  # 8.5 days newer and more accessed
    Planted(*ATTRIBUTES[11], age_a=3, age_b=3, access_a=0, access_b=0, keep_b="manual"),  # tie with a manual note: review
]


def _tier(keep: str) -> dict[str, Any]:
    if keep == "manual":
        return {"IsAutoGenerated": False, "ProtectionTier": "Standard"}
    return {"IsAutoGenerated": True, "ProtectionTier": keep}


def _plant(db: Db, planted: list[Planted], fillers: list[list[str]], together: bool) -> dict[str, tuple[int, str]]:
    """Insert the pairs and filler groups; return {note id: (pair index, side)} for the planted notes."""
    store = Store(db.engine)
    agent = store.agent()
    shared = store.user("Shared")
    names: dict[str, tuple[int, str]] = {}
    for index, p in enumerate(planted):
        user = shared if together else store.user(f"Pair {index}")
        for side, text, age, access, keep in (("a", p.a, p.age_a, p.access_a, p.keep_a), ("b", p.b, p.age_b, p.access_b, p.keep_b)):
            note = store.note(text, age_days=age, AccessCount=access, AgentID=agent, UserID=user, **_tier(keep))
            names[note.lower()] = (index, side)
    filler_user = shared if together else store.user("Fillers")
    for group in fillers:
        for i, text in enumerate(group):
            store.note(text, age_days=4 + i, AccessCount=i, AgentID=agent, UserID=filler_user)
    return names


def _outcome(db: Db, names: dict[str, tuple[int, str]]) -> tuple[dict[tuple[int, str], str], set[tuple[tuple[int, str], ...]]]:
    """Return the status of each planted note's fact and the planted pairs under review, in layout-free names.

    A note consolidated into another lives on there: its fact's status is that of the note it was
    merged into (followed along the chain), which must state it word for word (the offline merge).
    """
    by_id = {str(r["ID"]).lower(): r for r in rows(db)}
    status = {}
    for note_id, name in names.items():
        row = by_id[note_id]
        while row["Status"] == "Revoked" and row["ConsolidatedIntoNoteID"] is not None:
            into = by_id[str(row["ConsolidatedIntoNoteID"]).lower()]
            if str(row["ID"]).lower() not in [s.lower() for s in json.loads(into["DerivedFromNoteIDs"] or "[]")]:
                break  # revoked by a contradiction: the fact lost
            row = into
        if row["Status"] == "Active":
            assert by_id[note_id]["Note"].rstrip(".") in row["Note"]
        status[name] = row["Status"]
    with db.engine.connect() as conn:
        review = conn.execute(sa.select(m.review.c.NoteAID, m.review.c.NoteBID)).all()
    flagged = set()
    for a, b in review:
        a_name, b_name = names.get(str(a).lower()), names.get(str(b).lower())
        assert a_name is not None and b_name is not None, "a review item involves a note that is not one of the planted ones"
        flagged.add(tuple(sorted((a_name, b_name))))
    return status, flagged


def _two_nights(db: Db, planted: list[Planted], fillers: list[list[str]], together: bool) -> tuple[Any, Any]:
    names = _plant(db, planted, fillers, together)
    for night in range(2):
        report = dream(db, NOW + timedelta(days=night), consolidate_threshold=-1.0)
        assert report.exit_code == 0, report.message
    return _outcome(db, names)


def test_twelve_pairs_end_the_same_in_one_partition_as_apart(tmp_path: Path) -> None:
    """The issue's twelve pairs: same winners and review items after two nights, shared or apart."""
    apart = _two_nights(make_db("sqlite", tmp_path / "apart"), TWELVE, FILLERS, together=False)
    together_db = make_db("sqlite", tmp_path / "together")
    together = _two_nights(together_db, TWELVE, FILLERS, together=True)
    assert together == apart
    status, flagged = apart
    revoked = {name for name, s in status.items() if s == "Revoked"}
    assert revoked == {(0, "a"), (1, "b"), (2, "b"), (8, "b"), (9, "b")}
    # two budgets (5000 / 9000 dollars) differ in a number: only a person settles them (DESIGN 4)
    assert flagged == {((i, "a"), (i, "b")) for i in (3, 4, 5, 6, 7, 10, 11)}
    assert created(together_db), "the fillers were consolidated in the shared partition"


@pytest.fixture(scope="module")
def template_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A migrated, empty SQLite file, copied for every example of the property below."""
    folder = tmp_path_factory.mktemp("template")
    make_db("sqlite", folder).engine.dispose()
    return folder / "memctl.db"


def _copy(template: Path, folder: Path) -> Db:
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(template, folder / "memctl.db")
    return make_db("sqlite", folder, migrate=False)


planted_pairs = st.lists(
    st.builds(
        lambda index, ages, access, keep, swap: (index, Planted(*(ATTRIBUTES[index][::-1] if swap else ATTRIBUTES[index]),
                                                               age_a=ages[0], age_b=ages[1], access_a=access[0], access_b=access[1],
                                                               keep_a=keep[0], keep_b=keep[1])),
        st.integers(0, len(ATTRIBUTES) - 1),
        st.tuples(st.sampled_from([1, 3, 5, 8, 12, 16, 20, 30]), st.sampled_from([1, 3, 5, 8, 12, 16, 20, 30])),
        st.tuples(st.integers(0, 3), st.integers(0, 3)),
        st.tuples(*[st.sampled_from(["Standard", "Standard", "Protected", "Immutable", "manual"])] * 2),
        st.booleans(),
    ),
    min_size=1,
    max_size=5,
    unique_by=lambda item: item[0],
)


@hsettings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(pairs=planted_pairs, filler_count=st.integers(0, len(FILLERS)))
def test_consolidation_never_changes_what_the_authority_rule_decides(template_db: Path, tmp_path: Path, pairs: list, filler_count: int) -> None:
    """Property: for random stores with planted conflicts, two nights end with the same winners
    and review items whether the conflicting notes share one partition or sit apart."""
    planted = [p for _, p in pairs]
    fillers = FILLERS[:filler_count]
    run = tmp_path / f"ex{abs(hash((tuple(planted), filler_count)))}"
    shutil.rmtree(run, ignore_errors=True)
    apart = _two_nights(_copy(template_db, run / "apart"), planted, fillers, together=False)
    together = _two_nights(_copy(template_db, run / "together"), planted, fillers, together=True)
    assert together == apart


# --- an outage is a failure -----------------------------------------------------------------------


def _unreachable() -> str:
    stub = LLMStub().start()
    url = stub.base_url
    stub.stop()
    return url


@pytest.mark.parametrize("outage", ["unreachable", "auth", "server-error"])
def test_an_llm_outage_fails_both_llm_phases(db: Db, outage: str) -> None:
    """No reply arrives at all: both LLM phases fail (a reply that arrives unusable is no outage: test_unusable_replies)."""
    store = Store(db.engine)
    agent = store.agent()
    for i, text in enumerate(["User likes short replies.", "User likes short replies a lot.", "Confirmed: user likes short replies."]):
        store.note(text, age_days=5 - i, AgentID=agent)
    responders = {"auth": lambda body: Reply.error(401, "invalid api key"), "server-error": lambda body: Reply.error(500, "model crashed")}
    stub: Optional[LLMStub] = None
    if outage == "unreachable":
        url = _unreachable()
    else:
        stub = LLMStub(responder=responders[outage]).start()
        url = stub.base_url
    try:
        settings = at(db.settings, NOW, llm_base_url=url, llm_model="stub-model", llm_api_key="sk-test", llm_max_retries=0, llm_timeout=5.0)
        report = api.dream(settings, force=True, engine=db.engine)
    finally:
        if stub is not None:
            stub.stop()
    by_phase = {p.phase: p for p in report.phases}
    assert report.exit_code == 1
    assert by_phase["consolidate"].outcome == "failed" and by_phase["contradictions"].outcome == "failed"
    assert by_phase["consolidate"].output["failedReplies"] == by_phase["consolidate"].output["questionsAsked"] == 1
    assert created(db) == [] and all(r["Status"] == "Active" for r in rows(db))
