"""Odd rows read safely (issue 14, items 6-9): each written the way another application or an
unlucky operator leaves them, then every phase and export run over them."""

from __future__ import annotations

import io
import json
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import sqlalchemy as sa
from typer.testing import CliRunner

from conftest import Db, make_db
from factory import NOW, Store, at
from memctl import api
from memctl.cli import app
from memctl.demo import did, seed
from memctl.store import models as m
from memctl.transfer import export_records, import_records


def cli(db: Db, *args: str) -> object:
    base = ["--db-url", db.settings.db_url, *(["--db-schema", db.settings.db_schema] if db.settings.db_schema else []), "--now", NOW.isoformat()]
    return CliRunner().invoke(app, [*base, *args])


def export(db: Db) -> str:
    buffer = io.StringIO()
    export_records(db.engine, buffer)
    return buffer.getvalue()


def dream_ok(db: Db) -> api.RunReport:
    report = api.dream(at(db.settings, NOW, replan=True), force=True, engine=db.engine)
    assert [p.error for p in report.phases] == [None] * 4, report.message
    return report


def test_a_new_vector_dimension_invalidates_the_cached_vectors(db: Db) -> None:
    seed(db.engine, NOW)
    dream_ok(db)
    with db.engine.connect() as conn:
        cached = conn.execute(sa.select(m.embedding.c.NoteID, m.embedding.c.Model, m.embedding.c.Vector)).all()
    assert len(cached) > 10
    dim = len(cached[0].Vector) // 4
    with db.engine.begin() as conn:  # the model kept its name; half the cache holds its old, shorter vectors
        for note_id, model, blob in cached[::2]:
            old = np.frombuffer(blob, dtype=np.float32)[:64].tobytes()
            conn.execute(m.embedding.update().where(m.embedding.c.NoteID == note_id, m.embedding.c.Model == model).values(Vector=old, Dim=64))
    dream_ok(db)
    assert active_dims(db) == {dim}

    result = cli(db, "cache", "clear")
    assert result.exit_code == 0 and "cached vectors removed" in result.output
    with db.engine.connect() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(m.embedding)).scalar_one() == 0
    dream_ok(db)


def test_every_cached_vector_of_another_dimension_is_reembedded(db: Db) -> None:
    seed(db.engine, NOW)
    dream_ok(db)
    with db.engine.begin() as conn:  # the whole cache is the old model's
        rows = conn.execute(sa.select(m.embedding.c.NoteID, m.embedding.c.Model, m.embedding.c.Vector)).all()
        for note_id, model, blob in rows:
            conn.execute(m.embedding.update().where(m.embedding.c.NoteID == note_id, m.embedding.c.Model == model).values(Vector=blob[:256], Dim=64))
    dream_ok(db)
    assert 64 not in active_dims(db)


def active_dims(db: Db) -> set[int]:
    """Return the dimensions of the cached vectors of Active notes (the ones the phases read)."""
    e, n = m.embedding, m.note
    with db.engine.connect() as conn:
        return set(conn.execute(sa.select(e.c.Dim).select_from(e.join(n, n.c.ID == e.c.NoteID)).where(n.c.Status == "Active")).scalars())


def far_dates(db: Db) -> dict[str, str]:
    """Give three notes far dates (year 9999 and year 1) on any backend."""
    far_future = datetime(9999, 12, 31, 23, 59, 59, tzinfo=timezone.utc)
    far_past = datetime(1, 1, 2, tzinfo=timezone.utc)
    notes = {"alice": did("note:alice-email-1"), "bob": did("note:bob-tone-a"), "carol": did("note:carol-tz-a")}
    with db.engine.begin() as conn:
        conn.execute(m.note.update().where(m.note.c.ID == notes["alice"]).values(ExpiresAt=far_future))
        conn.execute(m.note.update().where(m.note.c.ID == notes["bob"]).values(LastAccessedAt=far_past))
        conn.execute(m.note.update().where(m.note.c.ID == notes["carol"]).values(ExpiresAt=far_past))
    return notes


def test_far_dates_read_safely_in_every_phase_and_export(db: Db, tmp_path: Path) -> None:
    seed(db.engine, NOW)
    notes = far_dates(db)
    dream_ok(db)
    assert Store(db.engine).status(notes["carol"]) == "Archived"  # expired in year 1
    assert_export_imports(db, tmp_path)


def assert_export_imports(db: Db, tmp_path: Path) -> None:
    text = export(db)
    twin = make_db("sqlite", tmp_path / "twin")
    try:
        import_records(twin.engine, io.StringIO(text), NOW)
    finally:
        twin.engine.dispose()


@pytest.mark.postgres
def test_postgres_infinite_expiry_reads_safely_in_every_phase_and_export(pg_schema: str, tmp_path: Path) -> None:
    db = make_db("postgresql", tmp_path, schema=pg_schema)
    try:
        seed(db.engine, NOW)
        far_dates(db)
        infinite = [did("note:alice-email-2"), did("note:bob-coffee"), did("note:expired-1")]
        with db.engine.begin() as conn:
            for note_id, value in zip(infinite, ("infinity", "infinity", "-infinity"), strict=True):
                conn.exec_driver_sql(f'UPDATE "{pg_schema}"."AIAgentNote" SET "ExpiresAt" = %(v)s WHERE "ID" = %(id)s', {"v": value, "id": note_id})
        report = dream_ok(db)
        assert report.exit_code == 0
        store = Store(db.engine)
        assert store.status(infinite[1]) == "Active" and store.status(infinite[2]) == "Archived"
        assert store.note_row(infinite[1])["ExpiresAt"] == datetime.max.replace(tzinfo=timezone.utc)
        assert cli(db, "export", str(tmp_path / "out.jsonl")).exit_code == 0
        assert cli(db, "orient").exit_code == 0 and cli(db, "verify").exit_code == 0
        assert_export_imports(db, tmp_path)
    finally:
        db.engine.dispose()


def test_a_negative_access_count_is_counted_as_zero_never_made_worse_and_exports(db: Db, tmp_path: Path) -> None:
    seed(db.engine, NOW)
    cluster = [did(f"note:alice-email-{i}") for i in range(1, 6)]
    with db.engine.begin() as conn:  # another application wrote -100 into every note of a cluster
        conn.execute(m.note.update().where(m.note.c.ID.in_(cluster)).values(AccessCount=-100))
    report = dream_ok(db)
    with db.engine.connect() as conn:
        counts = list(conn.execute(sa.select(m.note.c.AccessCount)).scalars())
        merged = conn.execute(sa.select(m.note.c.AccessCount).where(m.note.c.DerivedFromNoteIDs.contains(cluster[0]))).scalars().all()
    assert merged and all(c == 0 for c in merged)  # never -500: the sum of counts read as 0
    assert min(counts) == -100  # the sources keep what the other application wrote
    assert report.exit_code == 0
    assert_export_imports(db, tmp_path)


def test_an_access_count_of_minus_100_round_trips_through_export_and_import(sqlite_db: Db, tmp_path: Path) -> None:
    store = Store(sqlite_db.engine)
    note = store.note("x", AccessCount=-100)
    twin = make_db("sqlite", tmp_path / "again")
    try:
        import_records(twin.engine, io.StringIO(export(sqlite_db)), NOW)
        assert Store(twin.engine).note_row(note)["AccessCount"] == -100
    finally:
        twin.engine.dispose()


def raw_rows(db: Db, note_id: str) -> list[tuple[str, str]]:
    """Return (stored ID text, Status) of every row whose ID is `note_id` in any spelling."""
    with db.engine.connect() as conn:
        query = 'SELECT "ID", "Status" FROM "AIAgentNote" WHERE lower(replace("ID", \'-\', \'\')) = ? ORDER BY "ID"'
        return [tuple(r) for r in conn.exec_driver_sql(query, (uuid.UUID(note_id).hex,)).all()]


def test_sqlite_ids_differing_only_in_case_are_one_record(sqlite_db: Db) -> None:
    db = sqlite_db
    seed(db.engine, NOW)
    source = did("note:alice-email-2")
    with db.engine.begin() as conn:  # another application inserted the same note again, ID upper-cased
        row = dict(conn.exec_driver_sql('SELECT * FROM "AIAgentNote" WHERE "ID" = ?', (uuid.UUID(source).hex,)).mappings().one())
        row["ID"] = row["ID"].upper()
        conn.exec_driver_sql(f'INSERT INTO "AIAgentNote" ({", ".join(chr(34) + k + chr(34) for k in row)}) VALUES ({", ".join("?" for _ in row)})', tuple(row.values()))
    report = dream_ok(db)
    assert report.exit_code == 0
    assert sorted(raw_rows(db, source)) == [(uuid.UUID(source).hex.upper(), "Active"), (uuid.UUID(source).hex, "Revoked")]


@pytest.mark.parametrize("spell", [str.upper, lambda h: str(uuid.UUID(h)), lambda h: str(uuid.UUID(h)).upper()])
def test_sqlite_apply_looks_up_one_spelling_only_while_no_row_has_another(sqlite_db: Db, spell: Any) -> None:
    from memctl.store.changes import plain_ids

    seed(sqlite_db.engine, NOW)
    with sqlite_db.engine.begin() as conn:
        assert plain_ids(conn, m.note) and plain_ids(conn, m.example)
        hexed = conn.exec_driver_sql('SELECT "ID" FROM "AIAgentNote" LIMIT 1').scalar_one()
        conn.exec_driver_sql('UPDATE "AIAgentNote" SET "ID" = ? WHERE "ID" = ?', (spell(hexed), hexed))
        assert not plain_ids(conn, m.note) and plain_ids(conn, m.example)


def test_sqlite_an_id_stored_upper_case_with_dashes_is_found_and_its_changes_applied(sqlite_db: Db) -> None:
    db = sqlite_db
    seed(db.engine, NOW)
    keys = {"source": "note:alice-email-2", "loser": "note:alice-units-old", "winner": "note:alice-units-new", "orphan": "note:legacy-1"}
    notes = {k: did(v) for k, v in keys.items()}
    with db.engine.begin() as conn:
        for note_id in notes.values():
            conn.exec_driver_sql('UPDATE "AIAgentNote" SET "ID" = ? WHERE "ID" = ?', (note_id.upper(), uuid.UUID(note_id).hex))
    report = dream_ok(db)
    assert not [s for p in report.phases for s in p.skipped]
    status = {k: raw_rows(db, v) for k, v in notes.items()}
    assert status["source"] == [(notes["source"].upper(), "Revoked")]
    assert status["loser"] == [(notes["loser"].upper(), "Revoked")] and status["winner"] == [(notes["winner"].upper(), "Active")]
    assert status["orphan"] == [(notes["orphan"].upper(), "Archived")]
    undone = api.undo(at(db.settings, NOW), report.run_id, engine=db.engine)
    assert undone.exit_code == 0, undone.phases[0].error
    assert all(raw_rows(db, v)[0][1] == "Active" for v in notes.values())


def test_a_tier_spelled_in_lower_case_is_read_as_its_tier() -> None:
    """SQL Server's case-insensitive collation lets MJ's check accept 'protected' (no SQL Server
    here, and SQLite's and PostgreSQL's checks refuse it, so the rules are called directly)."""
    from memctl.phases.notes import consolidatable
    from memctl.records import note_record
    from memctl.store.changes import policy_refusal

    row = {"ID": "00000000-0000-4000-8000-000000000001", "ProtectionTier": "protected", "IsAutoGenerated": True, "Status": "Active"}
    assert note_record(row, with_vector=False).protection_tier == "Protected"
    assert not consolidatable(note_record(row, with_vector=False))
    assert policy_refusal("revoke", "AIAgentNote", row) == "the note is Protected"
    assert policy_refusal("archive", "AIAgentNote", {**row, "ProtectionTier": "IMMUTABLE"}) == "the note is Immutable"


SQL_SERVER_SPELLING = lambda guid: str(uuid.UUID(guid)).upper()  # noqa: E731 - how SQL Server and .NET write a GUID


def respell(db: Db, table: str, guid: str, spell: Any = SQL_SERVER_SPELLING) -> None:
    """Store `guid` as another application would have written it into SQLite (SQLAlchemy writes 32 lower-case hex digits)."""
    with db.engine.begin() as conn:
        conn.exec_driver_sql(f'UPDATE "{table}" SET "ID" = ? WHERE "ID" = ?', (spell(uuid.UUID(guid).hex), uuid.UUID(guid).hex))


def test_sqlite_notes_of_an_agent_user_company_and_conversation_stored_in_sql_servers_spelling_are_no_orphans(sqlite_db: Db) -> None:
    """Such a row was looked up in one spelling only: every note of it was archived as pointing at something gone."""
    db = sqlite_db
    store = Store(db.engine)
    agent, user, company = store.agent(), store.user(), store.company()
    conversation = store.conversation(user)
    kept = [store.note(f"fact {i}", AgentID=agent, UserID=user, CompanyID=company, SourceConversationID=conversation) for i in range(3)]
    gone_user = store.user("Bob")
    orphan = store.note("fact of a user deleted since", AgentID=agent, UserID=gone_user, CompanyID=company)
    for table, guid in (("AIAgent", agent), ("User", user), ("Company", company), ("Conversation", conversation)):
        respell(db, table, guid)
    with db.engine.begin() as conn:
        conn.execute(sa.delete(m.user).where(sa.type_coerce(m.user.c.ID, sa.String) == uuid.UUID(gone_user).hex))
    report = api.run_phase(at(db.settings, NOW), "prune", api.RunOptions(), engine=db.engine)
    assert report.exit_code == 0, report.phases[0].error
    assert report.phases[0].output["orphansFound"] == 1 and report.phases[0].output["orphanedUsers"] == 1
    assert [store.status(n) for n in kept] == ["Active"] * 3
    assert store.status(orphan) == "Archived"


def test_sqlite_stored_vectors_of_notes_whose_ids_are_respelled_are_read_by_id_as_by_scan(sqlite_db: Db) -> None:
    """The read by ID (few notes, most partitions settled) found only SQLAlchemy's spelling: the
    others' partitions lost their stored vectors and were compared by the fallback embedder."""
    import json

    from memctl.context import PhaseContext
    from memctl.phases.base import Overlay
    from memctl.phases.notes import by_partition, load_notes, with_vectors
    from memctl.settings import replace
    from memctl.vectors import stored_vectors

    db = sqlite_db
    model = "11111111-2222-4333-8444-555555555555"
    store = Store(db.engine)
    agent = store.agent()
    ids = [store.note(f"fact {i}", AgentID=agent, EmbeddingModelID=model, EmbeddingVector=json.dumps([1.0, 0.1 * i, 0.0, 0.0])) for i in range(4)]
    for guid, spell in zip(ids[:3], [str.upper, lambda h: str(uuid.UUID(h)), SQL_SERVER_SPELLING]):
        respell(db, "AIAgentNote", guid, spell)
    settings = replace(db.settings, embed_provider="stored", embed_model=model)
    found = {}
    for lazy in (True, False):
        ctx = PhaseContext(db.engine, settings, NOW)
        notes = load_notes(ctx, Overlay(), vectors=not lazy)
        if lazy:
            with_vectors(ctx, by_partition(notes))
        vectors = stored_vectors(ctx)
        found[lazy] = {n.id: vectors.has(n.id) for n in notes}
    assert found[True] == found[False] == {i: True for i in ids}


def test_sqlite_an_agent_run_sees_the_agent_s_notes_in_every_spelling_of_its_id(sqlite_db: Db) -> None:
    """`--agent X` compared AgentID in SQLAlchemy's spelling only: a partition was planned with
    some of its notes left out (here the third wording of a fact, so only two were merged)."""
    from test_consolidate import TOPIC, created_notes, topic

    db = sqlite_db
    store = Store(db.engine)
    agent = store.agent()
    sources = topic(store, TOPIC[:3], AgentID=agent)
    with db.engine.begin() as conn:
        conn.execute(
            sa.update(m.note).where(sa.type_coerce(m.note.c.ID, sa.String) == uuid.UUID(sources[2]).hex)
            .values({sa.type_coerce(m.note.c.AgentID, sa.String): SQL_SERVER_SPELLING(agent)})
        )
    report = api.run_phase(at(db.settings, NOW), "consolidate", api.RunOptions(agent=agent), engine=db.engine)
    assert report.exit_code == 0, report.phases[0].error
    [new] = created_notes(db)
    assert sorted(json.loads(new["DerivedFromNoteIDs"])) == sorted(sources)
    assert [store.status(n) for n in sources] == ["Revoked"] * 3


def test_sqlite_naming_an_agent_row_stored_in_sql_servers_spelling_says_so(sqlite_db: Db) -> None:
    """Its runs cannot be recorded under it (SQLite compares the foreign key as text): the error says why, not "not in the table"."""
    from memctl.errors import ConfigError

    db = sqlite_db
    manager = Store(db.engine).agent("Memory Manager")
    respell(db, "AIAgent", manager)
    with pytest.raises(ConfigError, match="stored as '" + SQL_SERVER_SPELLING(manager)):
        api.dream(at(db.settings, NOW, agent_id=manager), force=True, engine=db.engine)
    with db.engine.connect() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(m.run)).scalar() == 0


def test_sqlite_a_run_s_report_shows_the_text_of_a_note_whose_id_is_stored_in_sql_servers_spelling(sqlite_db: Db) -> None:
    db = sqlite_db
    store = Store(db.engine)
    note = store.note("Prefers the old invoice address.", AgentID=store.agent(), ExpiresAt=NOW - timedelta(days=3))
    respell(db, "AIAgentNote", note)
    report = api.dream(at(db.settings, NOW), force=True, engine=db.engine)
    assert report.exit_code == 0, report.message
    # the report of the recorded run reads the texts back by ID
    from memctl.preview import run_entries

    texts = {r.id.lower(): r.text for entries in run_entries(db.engine, report.run_id).values() for e in entries for r in e.records}
    assert texts.get(note.lower()) == "Prefers the old invoice address."
