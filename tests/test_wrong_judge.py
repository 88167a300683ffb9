"""Issues 28 and 36: a plausible but wrong judge can neither revoke nor merge a note about another subject.

The judge is the scripted stub behind the real `openai` client. It calls notes about different
accounts (numbers in ASCII and Arabic-Indic digits, IDs, e-mails) "competing_value"
contradictions at confidence 0.9 on about 80% of the pairs it is asked, and merges every
cluster, and it quotes its evidence the way a careless model would: the words the two notes
share as the subject, a word in which they differ as the value. The number, ID or e-mail that
tells the accounts apart lies outside both quotes, so memctl never acts on the verdict. On
37f1651 one dream revoked several accounts' notes as losers to other accounts' notes.
"""

from __future__ import annotations

import json
import re
import zlib
from typing import Any

import pytest
import sqlalchemy as sa
from conftest import Db
from factory import NOW, Store, at
from judges import covered, merge, responder, verdict
from llmstub import LLMStub, Reply, common_quotes

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


#: what the careless judge leaves out of its value quotes: anything with a digit, an "@" or a "-"
HARD = re.compile(r"[\d@-]")


def _words(text: str) -> list[str]:
    return [w.strip(".,;:") for w in text.split()]


def careless(text: str, others: list[str]) -> tuple[str, str]:
    """Quote the words `text` shares with `others` as its subject and a word only it has (no number or ID) as its value."""
    shared = common_quotes([text, *others])
    subject = shared[0] if shared else _words(text)[0]
    rest = {w for o in others for w in _words(o)}
    own = [w for w in _words(text) if w not in rest and not HARD.search(w)]
    return subject, (own[0] if own else _words(text)[-1])


def _clash(*notes: dict) -> bool:
    """Four pairs in five, deterministically by the notes' IDs."""
    return zlib.crc32("".join(sorted(n["id"] for n in notes)).encode()) % 5 != 0


def _contradiction(a: dict, b: dict) -> dict:
    if not _clash(a, b):
        return verdict(None, None)
    return verdict(careless(a["content"], [b["content"]]), careless(b["content"], [a["content"]]))


def _consolidate(notes: list[dict]) -> dict:
    texts = [n["content"] for n in notes]
    quotes = [careless(t, texts[:k] + texts[k + 1:]) for k, t in enumerate(texts)]
    return merge(notes, quotes, " ".join(texts), "same module")


def _absorb(broader: dict, narrower: dict) -> dict:
    return covered(careless(broader["content"], [narrower["content"]]), careless(narrower["content"], [broader["content"]]))


wrong_judge = responder(_contradiction, _consolidate, _absorb)


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
    assert contradictions.output["contradictionsResolved"] == 0
    if lang != "ids":  # the tickets' and mails' value quotes are one shared word: "the same value", not a veto
        assert contradictions.output["verdictsVetoed"] > 0
        assert "no single subject" in json.dumps(contradictions.output["vetoReasons"])
    assert verify(db.engine) == []


def test_a_changed_number_the_model_quotes_as_the_value_is_applied_by_the_authority_rule(db: Db) -> None:
    """Two budgets of one user differ in a number, the model quotes the budget as the subject
    and the amounts as the values: the older note (28 days older) is revoked into the newer one, not flagged."""
    store = Store(db.engine)
    scope: dict[str, Any] = {"AgentID": store.agent(), "UserID": store.user("Ana")}
    old = store.note("Ana's travel budget is 5000 EUR.", age_days=30, AccessCount=9, **scope)
    new = store.note("Ana's travel budget is 7000 EUR.", age_days=2, **scope)
    quoted = verdict(("Ana's travel budget", "5000 EUR"), ("Ana's travel budget", "7000 EUR"))

    with LLMStub(responder=lambda body: Reply.json(quoted)) as stub:
        settings = at(db.settings, NOW, llm_base_url=stub.base_url, llm_model="stub-model", llm_api_key="sk-test",
                      llm_max_retries=0, contradiction_threshold=-1.0)
        report = api.run_phase(settings, "contradictions", engine=db.engine)
    assert report.exit_code == 0
    assert (store.status(old), store.status(new)) == ("Revoked", "Active")
    assert store.note_row(old)["ConsolidatedIntoNoteID"] == new
    with db.engine.connect() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(m.review)).scalar_one() == 0
    assert report.phases[0].output["contradictionsResolved"] == 1
    assert verify(db.engine) == []
