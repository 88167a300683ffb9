"""Wordings of one fact that differ only in punctuation, case, filler or adverbs are one note.

In every partition it plans, the consolidate phase joins such wordings (`wording_key`) whether
or not a cluster of the minimum size forms; a number or ID that differs keeps two notes apart.
"""

from __future__ import annotations

import sqlalchemy as sa
from conftest import Db
from factory import NOW, Store, at

from memctl import api
from memctl.phases.consolidate.copies import SAME_WORDS
from memctl.store import models as m


def test_two_wordings_of_one_fact_become_one_note_in_every_language(db: Db) -> None:
    """Offline (no model), so the wordings decide: one of each fact's two wordings is revoked, the
    accounts that differ in a number are kept."""
    _store_with_wordings(db)
    report = api.dream(at(db.settings, NOW), force=True, engine=db.engine)
    assert report.exit_code == 0, report.message
    with db.engine.connect() as conn:
        revoked = conn.execute(sa.select(m.note.c.Note, m.note.c.Comments).where(m.note.c.Status == "Revoked")).all()
    assert len(revoked) == 3 and not [r for r in revoked if "Account" in r.Note], revoked
    assert all(SAME_WORDS in r.Comments for r in revoked), revoked


def _store_with_wordings(db: Db) -> dict[str, str]:
    """Partitions whose notes state one fact in other words, beside others that do not (languages of tests/test_languages.py)."""
    store = Store(db.engine)
    agent = store.agent()
    ids = {}
    # two wordings and another fact each: the partition is planned, no cluster of the minimum
    # size forms, and the wording keys alone join the two wordings
    facts = [
        ("Ana prefers answers in Spanish.", "Ana always prefers answers in Spanish.", "Her invoices go to the Lisbon office."),
        ("Анна предпочитает ответы на немецком.", "Анна всегда предпочитает ответы на немецком.", "Её счета уходят в офис в Лиссабоне."),
        ("アナはドイツ語での回答を好む。", "アナはいつもドイツ語での回答を好む。", "請求書はリスボン事務所に送られる。"),
        ("Account 1000 uses the billing module.", "Account 1009 uses the billing module.", "Account 1010 uses the export module."),
    ]
    for u, wordings_of in enumerate(facts):
        user = store.user(f"user{u}")
        for i, text in enumerate(wordings_of):
            ids[store.note(text, age_days=12 - i, AccessCount=i, AgentID=agent, UserID=user)] = text
    return ids
