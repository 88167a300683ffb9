"""Issue 24: stores in eight languages, no model configured, two nights each.

Every phase exits 0 both nights; three wordings of one fact end as one Active note; of two
conflicting values the newer is left Active (the older revoked into it) or the pair is under
review; no Active note states two accounts' facts; `verify` finds nothing. The texts were
written for this test (the held-out sets in benchmarks/heldout/ measure the rules instead).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import pytest
import sqlalchemy as sa
from conftest import Db
from factory import NOW, Store, at

from memctl import api
from memctl.store import models as m
from memctl.text.tokens import tokens
from memctl.verify import verify


@dataclass(frozen=True)
class Language:
    code: str
    wordings: tuple[str, str, str]
    old: str
    new: str
    accounts: tuple[str, ...]


LANGUAGES = [
    Language("en", ("Ana prefers answers in Spanish.", "Ana prefers answers in Spanish!", "Ana always prefers answers in Spanish."),
             "Tom wants his reports weekly.", "Tom wants his reports monthly.",
             ("Account 1000 uses the billing module.", "Account 1009 uses the reporting module.",
              "Account 1010 uses the billing module.", "Account 1011 uses the export module.")),
    Language("de", ("Ana bevorzugt Antworten auf Spanisch.", "Ana bevorzugt Antworten auf Spanisch!",
                    "Ana bevorzugt immer Antworten auf Spanisch."),
             "Tom möchte seine Berichte wöchentlich.", "Tom möchte seine Berichte monatlich.",
             ("Konto 1000 nutzt das Abrechnungsmodul.", "Konto 1009 nutzt das Berichtsmodul.",
              "Konto 1010 nutzt das Abrechnungsmodul.", "Konto 1011 nutzt das Exportmodul.")),
    Language("es", ("Ana prefiere respuestas en alemán.", "¡Ana prefiere respuestas en alemán!", "Ana siempre prefiere respuestas en alemán."),
             "Tom quiere sus informes cada semana.", "Tom quiere sus informes cada mes.",
             ("La cuenta 1000 usa el módulo de facturación.", "La cuenta 1009 usa el módulo de informes.",
              "La cuenta 1010 usa el módulo de facturación.", "La cuenta 1011 usa el módulo de exportación.")),
    Language("fr", ("Ana préfère les réponses en allemand.", "Ana préfère les réponses en allemand !",
                    "Ana préfère vraiment les réponses en allemand."),
             "Tom veut ses rapports chaque semaine.", "Tom veut ses rapports chaque mois.",
             ("Le compte 1000 utilise le module de facturation.", "Le compte 1009 utilise le module de rapports.",
              "Le compte 1010 utilise le module de facturation.", "Le compte 1011 utilise le module d'export.")),
    Language("zh", ("安娜喜欢用德语回答。", "安娜喜欢用德语回答！", "安娜总是喜欢用德语回答。"),
             "汤姆希望每周收到报告。", "汤姆希望每月收到报告。",
             ("账户1000使用计费模块。", "账户1009使用报表模块。", "账户１０１０使用计费模块。", "账户1011使用导出模块。")),
    Language("ja", ("アナはドイツ語での回答を好む。", "アナはドイツ語での回答を好む！", "アナはいつもドイツ語での回答を好む。"),
             "トムはレポートを毎週受け取りたい。", "トムはレポートを毎月受け取りたい。",
             ("アカウント1000は請求モジュールを使う。", "アカウント1009はレポートモジュールを使う。",
              "アカウント１０１０は請求モジュールを使う。", "アカウント1011はエクスポートモジュールを使う。")),
    Language("ru", ("Анна предпочитает ответы на немецком.", "Анна предпочитает ответы на немецком!",
                    "Анна всегда предпочитает ответы на немецком."),
             "Том хочет получать отчёты еженедельно.", "Том хочет получать отчёты ежемесячно.",
             ("Аккаунт 1000 использует модуль биллинга.", "Аккаунт 1009 использует модуль отчётов.",
              "Аккаунт 1010 использует модуль биллинга.", "Аккаунт 1011 использует модуль экспорта.")),
    Language("ar", ("تفضل آنا الإجابات باللغة الألمانية.", "تفضل آنا الإجابات باللغة الألمانية!", "تفضل آنا دائما الإجابات باللغة الألمانية."),
             "يريد توم تقاريره أسبوعيا.", "يريد توم تقاريره شهريا.",
             ("الحساب ١٠٠٠ يستخدم وحدة الفوترة.", "الحساب ١٠٠٩ يستخدم وحدة التقارير.",
              "الحساب ١٠١٠ يستخدم وحدة الفوترة.", "الحساب ١٠١١ يستخدم وحدة التصدير.")),
]


def active(db: Db) -> list[dict[str, Any]]:
    with db.engine.connect() as conn:
        return [dict(r) for r in conn.execute(sa.select(m.note).where(m.note.c.Status == "Active")).mappings()]


def numbers(text: str) -> set[str]:
    return {t.norm for t in tokens(text) if t.kind != "word" and any(c.isdigit() for c in t.norm)}


@pytest.mark.parametrize("lang", LANGUAGES, ids=[lang.code for lang in LANGUAGES])
def test_two_nights_offline_in_every_language(db: Db, lang: Language) -> None:
    store = Store(db.engine)
    scope = {"AgentID": store.agent(), "UserID": store.user("Ana")}
    wordings = [store.note(text, age_days=12 - i, AccessCount=i, **scope) for i, text in enumerate(lang.wordings)]
    old = store.note(lang.old, age_days=30, **scope)
    new = store.note(lang.new, age_days=3, **scope)
    accounts = [store.note(text, age_days=20, **scope) for text in lang.accounts]

    for night in range(2):
        report = api.dream(at(db.settings, NOW + timedelta(days=night)), force=True, engine=db.engine)
        assert report.exit_code == 0, report.message
        assert all(p.outcome != "failed" for p in report.phases), report.message

    live = active(db)
    texts = {str(n["ID"]).lower(): n["Note"] for n in live}
    # the three wordings are one Active note, which states the fact
    stating = [t for t in texts.values() if any(t.rstrip("。.!！ ") in w or w.rstrip("。.!！ ") in t for w in lang.wordings)]
    assert len(stating) == 1, stating
    assert sum(store.status(w) == "Active" for w in wordings) <= 1
    # the newer value is Active; the older one revoked into it (or the pair is under review)
    assert store.status(new) == "Active"
    with db.engine.connect() as conn:
        reviewed = conn.execute(sa.select(sa.func.count()).select_from(m.review)).scalar_one()
    assert store.status(old) == "Revoked" or reviewed, "the older value is neither revoked nor under review"
    if store.status(old) == "Revoked":
        assert str(store.note_row(old)["ConsolidatedIntoNoteID"]).lower() == new.lower()
    # no note states two accounts' facts, and every account's note is still there
    assert all(store.status(a) == "Active" for a in accounts)
    assert all(len(numbers(t)) <= 1 for t in texts.values()), texts
    assert verify(db.engine) == []
