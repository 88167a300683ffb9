"""`memctl review`: list flagged contradictions, resolve one (keep a note) or dismiss it; undo."""

from __future__ import annotations

import json
from typing import Any

import pytest
import sqlalchemy as sa
from typer.testing import CliRunner

from conftest import Db
from factory import NOW, Store, at
from memctl import api
from memctl.cli import app
from memctl.store import models as m
from memctl.verify import verify


def cli(db: Db, *args: str) -> Any:
    base = [
        "--db-url",
        db.settings.db_url,
        *(["--db-schema", db.settings.db_schema] if db.settings.db_schema else []),
        "--now",
        NOW.isoformat(),
    ]
    return CliRunner().invoke(app, [*base, *args])


def same(a: Any, b: str) -> bool:
    return str(a).replace("-", "").lower() == b.replace("-", "").lower()


def review_row(db: Db) -> dict:
    with db.engine.connect() as conn:
        [row] = conn.execute(sa.select(m.review)).mappings().all()
    return dict(row)


def flagged(db: Db, **first: Any) -> tuple[Store, str, str, str]:
    """Plant a contradiction with no authority (same day, same access count), flag it; return (store, pair, a, b)."""
    store = Store(db.engine)
    agent, user = store.agent(), store.user()
    cet = store.note("Carol's timezone is CET.", age_days=4, AccessCount=3, AgentID=agent, UserID=user, **first)
    pst = store.note("Carol's timezone is PST.", age_days=4.1, AccessCount=3, AgentID=agent, UserID=user)
    report = api.run_phase(at(db.settings, NOW), "contradictions", engine=db.engine)
    assert report.phases[0].output["contradictionsFlagged"] == 1, report.phases[0].message
    return store, str(review_row(db)["ID"]), cet, pst


def test_review_lists_open_pairs_with_texts_dates_counts_and_reason(db: Db) -> None:
    _, pair, cet, pst = flagged(db, ProtectionTier="Protected")
    text = cli(db, "review")
    assert text.exit_code == 0, text.output
    for expected in (
        pair,
        cet,
        pst,
        "Carol's timezone is CET.",
        "Carol's timezone is PST.",
        "accessed 3x",
        "2026-06-11",
        "[Protected]",
        "neither note has authority",
    ):
        assert expected in text.output, expected
    data = json.loads(cli(db, "review", "--json").stdout)
    [item] = data
    assert item["id"] == pair and item["status"] == "Open" and "neither note has authority" in item["reason"]
    assert {item["noteA"]["note"], item["noteB"]["note"]} == {"Carol's timezone is CET.", "Carol's timezone is PST."}
    assert item["noteA"]["accessCount"] == 3 and item["noteA"]["createdAt"].startswith("2026-06-1")
    assert json.loads(cli(db, "review", "--json").stdout) == data and api.review_list(at(db.settings, NOW), engine=db.engine)[0].id == pair


def test_resolve_keeps_one_note_revokes_the_other_and_is_undoable(db: Db) -> None:
    store, pair, cet, pst = flagged(db)
    result = cli(db, "review", "resolve", pair, "--keep", cet, "--json")
    assert result.exit_code == 0, result.output
    run_id = json.loads(result.stdout)["runId"]
    other = store.note_row(pst)
    assert other["Status"] == "Revoked" and same(other["ConsolidatedIntoNoteID"], cet)
    assert f"Contradicted by note {cet}: resolved by an operator (review {pair})" in other["Comments"]
    assert store.status(cet) == "Active" and store.note_row(cet)["Comments"] is None
    row = review_row(db)
    assert row["Status"] == "Resolved" and same(row["KeptNoteID"], cet) and row["ResolvedAt"] == NOW
    with db.engine.connect() as conn:
        run = conn.execute(sa.select(m.run).where(m.run.c.ID == run_id)).mappings().one()
        actions = sorted(conn.execute(sa.select(m.change.c.Action).where(m.change.c.RunID == run_id)).scalars())
    assert run["RunName"] == "memctl review resolve" and run["Status"] == "Completed"
    assert actions == ["resolve", "review"]
    assert cli(db, "review", "--json").stdout.strip() == "[]"
    assert verify(db.engine) == []

    undone = api.undo(at(db.settings, NOW), run_id, engine=db.engine)
    assert undone.exit_code == 0, undone.phases[0].error
    assert store.status(pst) == "Active" and store.note_row(pst)["ConsolidatedIntoNoteID"] is None
    row = review_row(db)
    assert row["Status"] == "Open" and row["KeptNoteID"] is None and row["ResolvedAt"] is None


def test_an_operator_may_revoke_a_protected_note_never_an_immutable_one(db: Db) -> None:
    store, pair, cet, pst = flagged(db, ProtectionTier="Protected")
    assert cli(db, "review", "resolve", pair, "--keep", pst).exit_code == 0
    assert store.status(cet) == "Revoked" and verify(db.engine) == []

    with db.engine.begin() as conn:
        conn.execute(m.note.update().values(Status="Active", ConsolidatedIntoNoteID=None, ProtectionTier="Standard"))
        conn.execute(m.note.update().where(m.note.c.ID == cet).values(ProtectionTier="Immutable"))
        conn.execute(m.review.update().values(Status="Open", KeptNoteID=None, ResolvedAt=None))
    refused = cli(db, "review", "resolve", pair, "--keep", pst)
    assert refused.exit_code == 2 and "Immutable" in refused.output
    assert store.status(cet) == "Active" and review_row(db)["Status"] == "Open"


def test_dismiss_keeps_both_and_the_pair_is_not_flagged_again(db: Db) -> None:
    store, pair, cet, pst = flagged(db)
    result = cli(db, "review", "resolve", pair[:8], "--dismiss")
    assert result.exit_code == 0, result.output
    row = review_row(db)
    assert row["Status"] == "Dismissed" and row["KeptNoteID"] is None and row["ResolvedAt"] == NOW
    assert store.status(cet) == store.status(pst) == "Active"
    again = api.run_phase(at(db.settings, NOW), "contradictions", engine=db.engine)
    assert again.phases[0].input["pairsUnderReview"] == 1 and review_row(db)["Status"] == "Dismissed"


def test_dry_run_resolve_writes_nothing(db: Db) -> None:
    store, pair, cet, pst = flagged(db)
    with db.engine.connect() as conn:
        runs = conn.execute(sa.select(sa.func.count()).select_from(m.run)).scalar_one()
    result = cli(db, "review", "resolve", pair, "--keep", cet, "--dry-run")
    assert result.exit_code == 0 and "resolve" in result.output
    assert store.status(pst) == "Active" and review_row(db)["Status"] == "Open"
    with db.engine.connect() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(m.run)).scalar_one() == runs


@pytest.mark.parametrize(
    "args, message",
    [
        (["review", "resolve", "00000000-0000-4000-8000-000000000000", "--keep", "{cet}"], "no flagged pair"),
        (["review", "resolve", "{pair}", "--keep", "00000000-0000-4000-8000-000000000000"], "not one of pair"),
        (["review", "resolve", "{pair}"], "exactly one of --keep"),
        (["review", "resolve", "{pair}", "--keep", "{cet}", "--dismiss"], "exactly one of --keep"),
        (["review", "resolve", "ab", "--dismiss"], "too short"),
    ],
)
def test_a_wrong_pair_or_note_exits_2_with_a_clear_message(db: Db, args: list[str], message: str) -> None:
    store, pair, cet, pst = flagged(db)
    result = cli(db, *[a.format(pair=pair, cet=cet) for a in args])
    assert result.exit_code == 2 and message in result.output
    assert store.status(cet) == store.status(pst) == "Active" and review_row(db)["Status"] == "Open"


def test_a_settled_pair_cannot_be_settled_again(db: Db) -> None:
    store, pair, cet, pst = flagged(db)
    assert cli(db, "review", "resolve", pair, "--keep", cet).exit_code == 0
    again = cli(db, "review", "resolve", pair, "--keep", pst)
    assert again.exit_code == 2 and "already Resolved" in again.output
    assert store.status(cet) == "Active" and store.status(pst) == "Revoked"


def test_resolve_refuses_when_the_other_note_is_gone(db: Db) -> None:
    _, pair, cet, pst = flagged(db)
    with db.engine.begin() as conn:
        conn.execute(m.note.update().where(m.note.c.ID == pst).values(Status="Archived"))
    result = cli(db, "review", "resolve", pair, "--keep", cet)
    assert result.exit_code == 2 and "--dismiss" in result.output and "Archived" in result.output
    assert cli(db, "review", "resolve", pair, "--dismiss").exit_code == 0
