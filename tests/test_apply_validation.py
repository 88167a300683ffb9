"""`memctl apply` validates what a plan asks, not only its guards (issue 14, items 2 and 12).

Each test takes a real consolidation plan (`--dry-run --plan-out`), edits it as an attacker
would, and checks that `memctl apply` refuses it whole with exit 2 naming the action, and that
the store is exactly as before (not even a run record).
"""

from __future__ import annotations

import io
import json
import uuid
from pathlib import Path
from typing import Any, Callable

import pytest
import sqlalchemy as sa
from typer.testing import CliRunner

from conftest import Db
from factory import NOW, Store, at
from memctl import api
from memctl.cli import app
from memctl.demo import did, seed
from memctl.plan import guard_of
from memctl.store import models as m
from memctl.transfer import export_records


def cli(db: Db, *args: str) -> Any:
    base = ["--db-url", db.settings.db_url, *(["--db-schema", db.settings.db_schema] if db.settings.db_schema else []), "--now", NOW.isoformat()]
    return CliRunner().invoke(app, [*base, *args])


def snapshot(db: Db) -> tuple[str, int, int]:
    buffer = io.StringIO()
    export_records(db.engine, buffer)
    with db.engine.connect() as conn:
        changes = conn.execute(sa.select(sa.func.count()).select_from(m.change)).scalar_one()
        runs = conn.execute(sa.select(sa.func.count()).select_from(m.run)).scalar_one()
    return buffer.getvalue(), changes, runs


def note_guard(db: Db, note_id: str) -> dict[str, Any]:
    with db.engine.connect() as conn:
        row = conn.execute(sa.select(m.note).where(m.note.c.ID == note_id)).mappings().one()
    return guard_of("AIAgentNote", row)


def planned(db: Db, tmp_path: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """Seed the demo, save a consolidation plan; return (plan, the cluster unit merging Alice's notes)."""
    seed(db.engine, NOW)
    plan_file = tmp_path / "plan.json"
    api.run_phase(at(db.settings, NOW), "consolidate", api.RunOptions(dry_run=True, plan_out=str(plan_file)), engine=db.engine)
    plan = json.loads(plan_file.read_text())
    [unit] = [u for u in plan["phases"][0]["units"] if u["kind"] == "cluster" and u["mutations"][0]["values"]["UserID"] == did("user:alice")]
    return plan, unit


def refused(db: Db, tmp_path: Path, plan: dict[str, Any], *expected: str) -> None:
    before = snapshot(db)
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(plan))
    result = cli(db, "apply", str(path))
    assert result.exit_code == 2, result.output
    assert "plan refused, nothing applied" in result.output
    for text in expected:
        assert text in result.output, result.output
    assert snapshot(db) == before


def insert_of(unit: dict[str, Any]) -> dict[str, Any]:
    [insert] = [mu for mu in unit["mutations"] if mu["action"] == "insert"]
    return insert


def test_an_edited_plan_widening_a_merged_notes_scope_is_refused(db: Db, tmp_path: Path) -> None:
    plan, unit = planned(db, tmp_path)
    insert_of(unit)["values"]["UserID"] = None  # one user's facts made visible to the whole company
    refused(db, tmp_path, plan, "'insert'", "scope")


def test_an_edited_plan_revoking_another_users_note_into_a_merged_note_is_refused(db: Db, tmp_path: Path) -> None:
    plan, unit = planned(db, tmp_path)
    bob = did("note:bob-email-1")
    insert = insert_of(unit)
    unit["mutations"].append({
        "table": "AIAgentNote", "record_id": bob, "action": "revoke",
        "values": {"Status": "Revoked", "ConsolidatedIntoNoteID": insert["record_id"]},
        "comment": "Consolidated", "guard": note_guard(db, bob),
    })
    refused(db, tmp_path, plan, "'insert'", "scope")


def test_an_edited_plan_absorbing_a_users_note_into_another_users_note_is_refused(db: Db, tmp_path: Path) -> None:
    plan, _ = planned(db, tmp_path)
    bob, alice = did("note:bob-email-1"), did("note:alice-units-new")
    plan["phases"][0]["units"].append({
        "kind": "absorb", "key": f"absorb:{bob}", "reason": "absorbed", "atomic": True, "detail": {},
        "mutations": [
            {"table": "AIAgentNote", "record_id": bob, "action": "revoke", "values": {"Status": "Revoked", "ConsolidatedIntoNoteID": alice},
             "comment": "Absorbed", "guard": note_guard(db, bob)},
            {"table": "AIAgentNote", "record_id": alice, "action": "check", "values": {}, "comment": None, "guard": note_guard(db, alice)},
        ],
    })
    refused(db, tmp_path, plan, "'revoke'", bob, "broader one its audience can see")


def restore_unit(record: str, values: dict[str, Any], guard: dict[str, Any]) -> dict[str, Any]:
    return {
        "kind": "undo", "key": f"undo:{record}", "reason": "restore", "atomic": True, "detail": {},
        "mutations": [{"table": "AIAgentNote", "record_id": record, "action": "restore", "values": values, "comment": None, "guard": guard}],
    }


def test_an_edited_plan_restoring_a_protected_note_to_revoked_is_refused(db: Db, tmp_path: Path) -> None:
    plan, _ = planned(db, tmp_path)
    protected = did("note:protected-old")
    plan["phases"][0]["units"].append(restore_unit(protected, {"Status": "Revoked"}, note_guard(db, protected)))
    refused(db, tmp_path, plan, "'restore'", protected)


def test_an_edited_plan_revoking_a_protected_note_is_refused(db: Db, tmp_path: Path) -> None:
    plan, unit = planned(db, tmp_path)
    protected = did("note:protected-old")
    unit["mutations"].append({
        "table": "AIAgentNote", "record_id": protected, "action": "revoke",
        "values": {"Status": "Revoked", "ConsolidatedIntoNoteID": insert_of(unit)["record_id"]},
        "comment": "Consolidated", "guard": note_guard(db, protected),
    })
    refused(db, tmp_path, plan, "'revoke'", protected, "Protected")


def test_an_edited_plan_restoring_a_manual_note_to_archived_with_comments_cleared_is_refused(db: Db, tmp_path: Path) -> None:
    plan, _ = planned(db, tmp_path)
    manual = did("note:manual-old")
    plan["phases"][0]["units"].append(restore_unit(manual, {"Status": "Archived", "Comments": ""}, note_guard(db, manual)))
    refused(db, tmp_path, plan, "'restore'", manual)


def test_an_edited_plan_inserting_with_a_record_id_other_than_values_id_is_refused(db: Db, tmp_path: Path) -> None:
    plan, unit = planned(db, tmp_path)
    insert_of(unit)["record_id"] = did("note:elsewhere")
    refused(db, tmp_path, plan, "'insert'", "values.ID")


@pytest.mark.parametrize(
    "edit",
    [
        pytest.param(lambda insert: insert["values"].update(Note="Alice prefers\x00 email."), id="nul-in-note"),
        pytest.param(lambda insert: insert.update(comment="Consolidated\x00"), id="nul-in-comment"),
        pytest.param(lambda insert: insert["values"].update(Note="x" * 5_000_000), id="5mb-note"),
        pytest.param(lambda insert: insert.update(comment="y" * 5_000_000), id="5mb-comment"),
        pytest.param(lambda insert: insert["values"].update(AccessCount=-400), id="negative-count"),
        pytest.param(lambda insert: insert["values"].update(ExpiresAt="next tuesday"), id="bad-date"),
        pytest.param(lambda insert: insert["values"].update(Type="Secret"), id="bad-type"),
    ],
)
def test_an_edited_plan_with_a_bad_value_is_refused_before_the_driver_sees_it(db: Db, tmp_path: Path, edit: Callable[[dict[str, Any]], None]) -> None:
    plan, unit = planned(db, tmp_path)
    insert = insert_of(unit)
    note_text = insert["values"]["Note"]
    edit(insert)
    refused(db, tmp_path, plan, "'insert'")
    result = cli(db, "apply", str(tmp_path / "edited.json"))
    assert note_text not in result.output and "xxxxxxxxxx" not in result.output


def test_an_unedited_plan_still_applies(db: Db, tmp_path: Path) -> None:
    plan, _ = planned(db, tmp_path)
    path = tmp_path / "same.json"
    path.write_text(json.dumps(plan))
    result = cli(db, "apply", str(path))
    assert result.exit_code == 0, result.output


def test_a_bad_value_in_a_phase_plan_is_refused_before_the_driver_sees_it(db: Db) -> None:
    from memctl.plan import Mutation, Unit
    from memctl.store.changes import ApplyContext, apply_unit

    store = Store(db.engine)
    source = store.note("Alice likes tea.")
    new = str(uuid.uuid4())
    secret = "Alice's door code is 4411\x00"
    unit = Unit("cluster", "cluster:x", "merged", (
        Mutation("AIAgentNote", new, "insert", {"ID": new, "Note": secret, "Status": "Active", "IsAutoGenerated": True}, "Consolidated"),
        Mutation("AIAgentNote", source, "revoke", {"Status": "Revoked", "ConsolidatedIntoNoteID": new}, "Consolidated into", note_guard(db, source)),
    ))
    outcome = apply_unit(ApplyContext(db.engine, str(uuid.uuid4()), None, NOW), unit)
    assert not outcome.applied and outcome.skipped
    reasons = " ".join(why for _, why in outcome.skipped)
    assert "Note: holds a NUL byte" in reasons and "door code" not in reasons
    assert store.status(source) == "Active"


# --- found by review after the issue-14 merge: edits the first plan check let through ---------


def test_an_edited_plan_making_a_merge_unit_non_atomic_is_refused(db: Db, tmp_path: Path) -> None:
    """A non-atomic merge would commit its revocations even when its insert is skipped (an ID that
    exists already, another user's note): the revoked notes would point at that note."""
    plan, unit = planned(db, tmp_path)
    unit["atomic"] = False
    insert_of(unit)["record_id"] = insert_of(unit)["values"]["ID"] = did("note:bob-email-1")
    for mu in unit["mutations"]:
        if mu["action"] == "revoke":
            mu["values"]["ConsolidatedIntoNoteID"] = did("note:bob-email-1")
    refused(db, tmp_path, plan, "all-or-nothing")


def test_an_edited_plan_with_two_actions_on_one_record_is_refused(db: Db, tmp_path: Path) -> None:
    """revoke A->B and revoke B->A in one unit: both guards match before any write, so both would go."""
    plan, _ = planned(db, tmp_path)
    a, b = did("note:alice-units-old"), did("note:alice-units-new")
    guard_a, guard_b = note_guard(db, a), note_guard(db, b)
    phase = {**plan["phases"][0], "phase": "contradictions", "step_name": "Detect Contradictions"}
    phase["units"] = [{
        "kind": "contradiction", "key": f"pair:{a}:{b}", "reason": "edited", "atomic": True, "detail": {},
        "mutations": [
            {"table": "AIAgentNote", "record_id": a, "action": "revoke", "values": {"Status": "Revoked", "ConsolidatedIntoNoteID": b}, "comment": "x", "guard": guard_a},
            {"table": "AIAgentNote", "record_id": b, "action": "revoke", "values": {"Status": "Revoked", "ConsolidatedIntoNoteID": a}, "comment": "x", "guard": guard_b},
            {"table": "AIAgentNote", "record_id": a, "action": "check", "values": {}, "comment": None, "guard": guard_a},
            {"table": "AIAgentNote", "record_id": b, "action": "check", "values": {}, "comment": None, "guard": guard_b},
        ],
    }]
    plan["phases"] = [phase]
    refused(db, tmp_path, plan, "two actions on AIAgentNote")


def test_an_edited_plan_revoking_a_contradiction_loser_into_a_broader_note_is_refused(db: Db, tmp_path: Path) -> None:
    """Absorption may revoke into a broader note; a contradiction only within one scope (DESIGN 3)."""
    plan, _ = planned(db, tmp_path)
    loser, winner = did("note:alice-units-old"), did("note:acme-billing-1")  # alice's note, an agent-and-company note
    phase = {**plan["phases"][0], "phase": "contradictions", "step_name": "Detect Contradictions"}
    phase["units"] = [{
        "kind": "contradiction", "key": f"pair:{loser}:{winner}", "reason": "edited", "atomic": True, "detail": {},
        "mutations": [
            {"table": "AIAgentNote", "record_id": loser, "action": "revoke", "values": {"Status": "Revoked", "ConsolidatedIntoNoteID": winner},
             "comment": "x", "guard": note_guard(db, loser)},
            {"table": "AIAgentNote", "record_id": winner, "action": "check", "values": {}, "comment": None, "guard": note_guard(db, winner)},
        ],
    }]
    plan["phases"] = [phase]
    refused(db, tmp_path, plan, "'revoke'", loser, "own scope")


@pytest.mark.parametrize(
    "edit, expected",
    [
        pytest.param(lambda v: v.update(AccessCount=10_000), "AccessCount", id="inflated-access-count"),
        pytest.param(lambda v: v.update(ExpiresAt="2026-06-20T00:00:00+00:00"), "ExpiresAt", id="expiry-no-source-had"),
        pytest.param(lambda v: v.update(LastAccessedAt="2099-01-01T00:00:00+00:00"), "LastAccessedAt", id="later-access"),
        pytest.param(lambda v: v.update(__mj_CreatedAt="2099-01-01T00:00:00+00:00"), "fact date", id="future-fact-date"),
        pytest.param(lambda v: v.update(ProtectionTier="Immutable"), "ProtectionTier", id="stronger-tier"),
        pytest.param(lambda v: v.update(EmbeddingVector="abc"), "EmbeddingVector", id="bad-vector"),
    ],
)
def test_an_edited_plan_changing_what_a_merged_note_inherits_is_refused(db: Db, tmp_path: Path, edit: Callable[[dict[str, Any]], None], expected: str) -> None:
    """The values the authority and retention rules read are what its sources give it, nothing more."""
    plan, unit = planned(db, tmp_path)
    edit(insert_of(unit)["values"])
    refused(db, tmp_path, plan, "'insert'", expected)


def test_a_saved_plan_merging_ephemeral_notes_applies_and_keeps_the_tier(db: Db, tmp_path: Path) -> None:
    seed(db.engine, NOW)
    with db.engine.begin() as conn:
        conn.execute(m.note.update().where(m.note.c.UserID == did("user:alice")).values(ProtectionTier="Ephemeral"))
    plan_file = tmp_path / "plan.json"
    api.run_phase(at(db.settings, NOW), "consolidate", api.RunOptions(dry_run=True, plan_out=str(plan_file)), engine=db.engine)
    plan = json.loads(plan_file.read_text())
    [unit] = [u for u in plan["phases"][0]["units"] if u["kind"] == "cluster" and u["mutations"][0]["values"]["UserID"] == did("user:alice")]
    assert insert_of(unit)["values"]["ProtectionTier"] == "Ephemeral"
    result = cli(db, "apply", str(plan_file))
    assert result.exit_code == 0, result.output
    assert Store(db.engine).row(m.note, insert_of(unit)["record_id"])["ProtectionTier"] == "Ephemeral"


# --- several units per transaction (issue 25) -----------------------------------------------------


def test_units_touching_one_record_go_to_separate_transactions_and_the_later_sees_the_earlier(db: Db) -> None:
    """Two units revoking one note, planned on the same state: `batches` puts them in two
    transactions, and the second finds the note changed and is skipped, as it would be applied
    after the first alone; a unit touching another record shares the second's transaction."""
    from memctl.plan import Mutation, Unit
    from memctl.store.changes import ApplyContext, apply_batch, batches

    store = Store(db.engine)
    shared, other = store.note("Alice likes tea."), store.note("Alice likes green tea.")
    winners = [store.note("Alice prefers coffee."), store.note("Alice drinks coffee.")]
    units = [
        Unit("contradiction", f"pair:{k}", "contradicted", (
            Mutation("AIAgentNote", shared, "revoke", {"Status": "Revoked", "ConsolidatedIntoNoteID": winner}, "Contradicted", note_guard(db, shared)),
        ))
        for k, winner in enumerate(winners)
    ] + [Unit("contradiction", "pair:other", "contradicted", (
        Mutation("AIAgentNote", other, "revoke", {"Status": "Revoked", "ConsolidatedIntoNoteID": winners[0]}, "Contradicted", note_guard(db, other)),
    ))]
    cut = batches(units)
    assert [[u.key for u in batch] for batch in cut] == [["pair:0"], ["pair:1", "pair:other"]]
    ctx = ApplyContext(db.engine, str(uuid.uuid4()), None, NOW)
    outcomes = [o for batch in cut for o in apply_batch(ctx, batch)]
    assert [bool(o.applied) for o in outcomes] == [True, False, True]
    assert "changed since planning" in outcomes[1].skipped[0][1]
    with db.engine.connect() as conn:
        into = conn.execute(sa.select(m.note.c.ConsolidatedIntoNoteID).where(m.note.c.ID == shared)).scalar_one()
        logged = conn.execute(sa.select(sa.func.count()).select_from(m.change).where(m.change.c.RunID == ctx.run_id)).scalar_one()
    assert str(into).lower() == winners[0].lower() and store.status(other) == "Revoked"
    assert logged == 2


def test_a_batch_holds_at_most_batch_units_units_and_batch_mutations_changes() -> None:
    from memctl.plan import Mutation, Unit
    from memctl.store.changes import BATCH_MUTATIONS, BATCH_UNITS, batches

    def unit(key: str, changes: int) -> Unit:
        return Unit("archive", key, "expired", tuple(Mutation("AIAgentNote", f"{key}-{i}", "archive", {"Status": "Archived"}) for i in range(changes)))

    small = [unit(f"u{k}", 1) for k in range(BATCH_UNITS + 1)]
    assert [len(b) for b in batches(small)] == [BATCH_UNITS, 1]
    half = BATCH_MUTATIONS // 2 + 1  # two such units exceed the cap together
    large = [unit("a", half), unit("b", half), unit("c", 1)]
    assert [[u.key for u in b] for b in batches(large)] == [["a"], ["b", "c"]]
