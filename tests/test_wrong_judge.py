"""Issue 28: a plausible but wrong judge can neither revoke nor merge a note about another subject.

The judge is the scripted stub behind the real `openai` client. It calls notes about different
accounts (numbers in ASCII and Arabic-Indic digits, IDs, e-mails) "competing_value"
contradictions at confidence 0.9, on about 80% of the pairs it is asked: under the uniformity
guard's 90%, so only the hard-evidence check stands between it and the store. On 37f1651 one
dream revoked several accounts' notes as losers to other accounts' notes.
"""

from __future__ import annotations

import json
import zlib
from typing import Any

import pytest
import sqlalchemy as sa
from conftest import Db
from factory import NOW, Store, at
from llmstub import LLMStub, Reply, notes_from_request

from memctl import api
from memctl.store import models as m
from memctl.verify import verify

STORES = {
    "en": [f"Account {n} uses the {module} module." for n, module in
           ((1000, "billing"), (1009, "reporting"), (1010, "billing"), (1011, "export"), (1012, "reporting"), (1013, "billing"))],
    "de": [f"Konto {n} nutzt das {module}." for n, module in
           ((1000, "Abrechnungsmodul"), (1009, "Berichtsmodul"), (1010, "Abrechnungsmodul"), (1011, "Exportmodul"),
            (1012, "Berichtsmodul"), (1013, "Abrechnungsmodul"))],
    "ar": [f"الحساب {n} يستخدم وحدة {module}." for n, module in
           (("١٠٠٠", "الفوترة"), ("١٠٠٩", "التقارير"), ("١٠١٠", "الفوترة"), ("١٠١١", "التصدير"), ("١٠١٢", "التقارير"), ("١٠١٣", "الفوترة"))],
    "ids": ["Ticket INV-2024-0042 is about SSO.", "Ticket INV-2024-0057 is about SSO.", "Ticket INV-2024-0061 is about webhooks.",
            "Mail ana@example.com gets the weekly digest.", "Mail bob@example.com gets the weekly digest.",
            "Mail eve@example.com gets the weekly digest."],
}


def wrong_judge(body: dict) -> Reply:
    """Call four pairs in five contradictions (deterministically), whatever the notes say; merge whatever is asked."""
    notes = notes_from_request(body)
    if "consolidatedNote" in json.dumps(body):
        return Reply.json({"shouldConsolidate": True, "sourceNoteIds": [n["id"] for n in notes], "reason": "same module",
                           "consolidatedNote": {"type": "Context", "content": " ".join(n["content"] for n in notes), "confidence": 0.9}})
    key = zlib.crc32("".join(sorted(n["id"] for n in notes)).encode()) % 5
    clash = key != 0
    return Reply.json({"isContradiction": clash, "contradictionType": "competing_value" if clash else "none",
                       "reason": "Two values of the account's module." if clash else "compatible", "confidence": 0.9})


@pytest.mark.parametrize("lang", sorted(STORES))
def test_a_wrong_judge_revokes_and_merges_no_other_subjects_note(db: Db, lang: str) -> None:
    store = Store(db.engine)
    scope = {"AgentID": store.agent()}
    ids = [store.note(text, age_days=40 - 5 * i, AccessCount=i, **scope) for i, text in enumerate(STORES[lang])]
    with LLMStub(responder=wrong_judge) as stub:
        settings = at(db.settings, NOW, llm_base_url=stub.base_url, llm_model="stub-model", llm_api_key="sk-test",
                      llm_max_retries=0, consolidate_threshold=-1.0, contradiction_threshold=-1.0)
        report = api.dream(settings, force=True, engine=db.engine)
        asked = len(stub.chat_requests)
    assert report.exit_code == 0, report.message
    assert asked > 0
    assert all(store.status(i) == "Active" for i in ids), [store.note_row(i)["Comments"] for i in ids if store.status(i) != "Active"]
    with db.engine.connect() as conn:
        created = conn.execute(sa.select(sa.func.count()).select_from(m.note).where(m.note.c.DerivedFromNoteIDs.is_not(None))).scalar_one()
    assert created == 0
    contradictions = next(p for p in report.phases if p.phase == "contradictions")
    assert contradictions.output["verdictsVetoed"] > 0 and contradictions.output["contradictionsResolved"] == 0
    assert "different subjects" in json.dumps(contradictions.output["vetoReasons"])
    assert verify(db.engine) == []


def test_the_guard_flags_a_number_in_a_value_slot_instead_of_applying_it(db: Db) -> None:
    """Two budgets of one user differ in a number: a judge's contradiction is sent to review, not applied."""
    store = Store(db.engine)
    scope: dict[str, Any] = {"AgentID": store.agent(), "UserID": store.user("Ana")}
    old = store.note("Ana's travel budget is 5000 EUR.", age_days=30, **scope)
    new = store.note("Ana's travel budget is 7000 EUR.", age_days=2, **scope)

    def responder(body: dict) -> Reply:
        return Reply.json({"isContradiction": True, "contradictionType": "competing_value", "reason": "Two budgets.", "confidence": 0.9})

    with LLMStub(responder=responder) as stub:
        settings = at(db.settings, NOW, llm_base_url=stub.base_url, llm_model="stub-model", llm_api_key="sk-test",
                      llm_max_retries=0, contradiction_threshold=-1.0)
        report = api.run_phase(settings, "contradictions", engine=db.engine)
    assert report.exit_code == 0
    assert store.status(old) == store.status(new) == "Active"
    with db.engine.connect() as conn:
        flagged = conn.execute(sa.select(m.review.c.NoteAID, m.review.c.NoteBID)).all()
    assert len(flagged) == 1
    assert report.phases[0].output["contradictionsFlagged"] == 1
