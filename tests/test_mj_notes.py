"""Issue 12, deliverable 4: notes memctl creates carry what MemberJunction reads.

SourceAIAgentRunID = the run that applied the unit; AuthorType 'MemoryManager' and
EmbeddingVectorBinary (MJ's float32 little-endian form of EmbeddingVector) where the table has
those columns; ImportanceScore inherited from the sources (the highest).
"""

from __future__ import annotations

import json
import struct
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import sqlalchemy as sa
from conftest import Db, MjDb
from factory import NOW, Store, at
from test_consolidate import TOPIC, consolidate, created_notes, topic

from memctl import api
from memctl.embed.stored import decode_vector
from memctl.llm.factory import make_compute_embedder
from memctl.plancheck import PlanRefused
from memctl.store import models as m
from memctl.store.created import binary_vector, vector_from_binary
from memctl.store.live import live_table, translated_schema


def add_mj_v62_columns(db: Db) -> None:
    """Give the store's AIAgentNote MJ v6.2's AuthorType and EmbeddingVectorBinary columns."""
    binary = "BYTEA" if db.backend == "postgresql" else "BLOB"
    with db.engine.begin() as conn:
        schema = translated_schema(conn)
        table = f'"{schema}"."AIAgentNote"' if schema else '"AIAgentNote"'
        conn.exec_driver_sql(f"ALTER TABLE {table} ADD COLUMN \"AuthorType\" VARCHAR(20) NOT NULL DEFAULT 'Agent'")
        conn.exec_driver_sql(f'ALTER TABLE {table} ADD COLUMN "EmbeddingVectorBinary" {binary}')


def raw_note(db: Db, note_id: Any) -> dict[str, Any]:
    """Return every column of a note as the database has it (modelled or not)."""
    with db.engine.connect() as conn:
        table = live_table(conn, m.note)
        return dict(conn.execute(sa.select(table).where(table.c.ID == note_id)).mappings().one())


def test_binary_vector_is_float32_little_endian_without_header() -> None:
    blob = binary_vector("[1.0, -0.5, 0.25]")
    assert blob == struct.pack("<3f", 1.0, -0.5, 0.25)
    assert vector_from_binary(blob) == [1.0, -0.5, 0.25]


def test_a_consolidated_note_names_the_run_that_made_it(db: Db) -> None:
    store = Store(db.engine)
    topic(store, TOPIC[:3], AgentID=store.agent())
    report = consolidate(db)
    [new] = created_notes(db)
    assert str(new["SourceAIAgentRunID"]).lower() == report.run_id


def test_a_consolidated_note_keeps_the_highest_importance_of_its_sources(db: Db) -> None:
    store = Store(db.engine)
    agent = store.agent()
    ids = topic(store, TOPIC[:3], AgentID=agent)
    with db.engine.begin() as conn:
        for note_id, score in zip(ids, (2.5, 7.25, None)):
            conn.execute(m.note.update().where(m.note.c.ID == note_id).values(ImportanceScore=score))
    topic(store, TOPIC[:3], AgentID=store.agent("Other"))
    consolidate(db)
    scores = {json.loads(n["DerivedFromNoteIDs"])[0]: n["ImportanceScore"] for n in created_notes(db)}
    assert float(scores[ids[0]]) == 7.25
    assert [s for k, s in scores.items() if k != ids[0]] == [None]  # no source had one: none, as MJ creates it


def test_a_saved_plan_is_linked_to_the_run_that_applies_it(db: Db, tmp_path: Path) -> None:
    store = Store(db.engine)
    topic(store, TOPIC[:3], AgentID=store.agent())
    plan = tmp_path / "plan.json"
    consolidate(db, api.RunOptions(dry_run=True, plan_out=str(plan)))
    [insert] = [mu for p in json.loads(plan.read_text())["phases"] for u in p["units"] for mu in u["mutations"] if mu["action"] == "insert"]
    assert "SourceAIAgentRunID" not in insert["values"] or insert["values"]["SourceAIAgentRunID"] is None
    applied = api.apply_plan(at(db.settings, NOW), str(plan), engine=db.engine)
    [new] = created_notes(db)
    assert str(new["SourceAIAgentRunID"]).lower() == applied.run_id


def test_a_plan_cannot_name_another_run_as_the_source(db: Db, tmp_path: Path) -> None:
    store = Store(db.engine)
    topic(store, TOPIC[:3], AgentID=store.agent())
    plan = tmp_path / "plan.json"
    consolidate(db, api.RunOptions(dry_run=True, plan_out=str(plan)))
    data = json.loads(plan.read_text())
    for p in data["phases"]:
        for u in p["units"]:
            for mu in u["mutations"]:
                if mu["action"] == "insert":
                    mu["values"]["SourceAIAgentRunID"] = str(uuid.uuid4())
    plan.write_text(json.dumps(data))
    applied = api.apply_plan(at(db.settings, NOW), str(plan), engine=db.engine)
    [new] = created_notes(db)
    assert str(new["SourceAIAgentRunID"]).lower() == applied.run_id


def test_author_type_and_binary_vector_are_written_where_the_table_has_them(db: Db) -> None:
    add_mj_v62_columns(db)
    store = Store(db.engine)
    topic(store, TOPIC[:3], AgentID=store.agent())
    model_id = str(uuid.uuid4())
    report = consolidate(db, embed_model_id=model_id)
    [new] = created_notes(db)
    row = raw_note(db, new["ID"])
    assert row["AuthorType"] == "MemoryManager"
    assert str(row["EmbeddingModelID"]).lower() == model_id
    vector = decode_vector(row["EmbeddingVector"])
    assert vector is not None
    assert bytes(row["EmbeddingVectorBinary"]) == vector.astype("<f4").tobytes()
    assert str(row["SourceAIAgentRunID"]).lower() == report.run_id


def test_no_binary_vector_without_a_vector_of_the_stores_model(db: Db) -> None:
    add_mj_v62_columns(db)
    store = Store(db.engine)
    topic(store, TOPIC[:3], AgentID=store.agent())
    consolidate(db)
    [new] = created_notes(db)
    row = raw_note(db, new["ID"])
    assert row["AuthorType"] == "MemoryManager"
    assert row["EmbeddingVector"] is None and row["EmbeddingVectorBinary"] is None


@pytest.mark.parametrize("column", ["AuthorType", "EmbeddingVectorBinary"])
def test_a_plan_naming_a_column_memctl_fills_itself_is_refused(sqlite_db: Db, tmp_path: Path, column: str) -> None:
    add_mj_v62_columns(sqlite_db)
    store = Store(sqlite_db.engine)
    topic(store, TOPIC[:3], AgentID=store.agent())
    plan = tmp_path / "plan.json"
    consolidate(sqlite_db, api.RunOptions(dry_run=True, plan_out=str(plan)))
    data = json.loads(plan.read_text())
    for p in data["phases"]:
        for u in p["units"]:
            for mu in u["mutations"]:
                if mu["action"] == "insert":
                    mu["values"][column] = "User"
    plan.write_text(json.dumps(data))
    with pytest.raises(PlanRefused, match=f"unknown columns \\['{column}'\\]"):
        api.apply_plan(at(sqlite_db.settings, NOW), str(plan), engine=sqlite_db.engine)
    assert created_notes(sqlite_db) == []


def test_the_author_column_of_mjs_sql_server_schema_is_filled_too(sqlite_db: Db) -> None:
    with sqlite_db.engine.begin() as conn:
        conn.exec_driver_sql("ALTER TABLE \"AIAgentNote\" ADD COLUMN \"AuthoredBy\" VARCHAR(20) NOT NULL DEFAULT 'Agent'")
    store = Store(sqlite_db.engine)
    topic(store, TOPIC[:3], AgentID=store.agent())
    consolidate(sqlite_db)
    [new] = created_notes(sqlite_db)
    assert raw_note(sqlite_db, new["ID"])["AuthoredBy"] == "MemoryManager"


# --- on the MJ fixture (tests/mj_fixture.py: MJ's own tables, newest and older, PostgreSQL) ------


def seed_mj(db: MjDb) -> dict[str, Any]:
    """Insert an agent and a user the way MJ does, and a cluster of near-duplicate notes with importance scores."""
    s = db.settings.db_schema
    ids: dict[str, Any] = {"agent": str(uuid.uuid4()), "user": str(uuid.uuid4())}
    with db.engine.begin() as conn:
        conn.exec_driver_sql(f"""INSERT INTO "{s}"."AIAgent" ("ID", "Name", "Status") VALUES ('{ids["agent"]}', 'Sage', 'Active')""")
        conn.exec_driver_sql(f"""INSERT INTO "{s}"."User" ("ID", "Name", "Email", "Type", "IsActive") VALUES ('{ids["user"]}', 'Ann', 'ann@example.com', 'User', true)""")
    store = Store(db.engine)
    ids["sources"] = topic(store, TOPIC[:3], AgentID=ids["agent"], UserID=ids["user"])
    with db.engine.begin() as conn:
        for note_id, score in zip(ids["sources"], (3.5, 8.25, 6.0)):
            conn.execute(m.note.update().where(m.note.c.ID == note_id).values(ImportanceScore=score))
    return ids


def mj_reads_vector(row: dict[str, Any]) -> np.ndarray:
    """Read a note's vector as MJ v6.2's readers do: the binary column first, else the JSON text."""
    blob = row.get("EmbeddingVectorBinary")
    if blob is not None:
        return np.frombuffer(bytes(blob), dtype="<f4")
    return np.asarray(json.loads(row["EmbeddingVector"]), dtype=np.float32)


@pytest.mark.postgres
def test_a_dream_on_mj_creates_notes_mj_can_use(mj_db: MjDb) -> None:
    ids = seed_mj(mj_db)
    model_id = str(uuid.uuid4())
    settings = at(mj_db.settings, NOW, embed_model_id=model_id)
    report = api.dream(settings, force=True, engine=mj_db.engine)
    assert report.exit_code == 0, report.message
    [new] = created_notes(mj_db)
    row = raw_note(mj_db, new["ID"])
    assert str(row["SourceAIAgentRunID"]).lower() == report.run_id  # MJ's FK to AIAgentRun holds
    assert str(row["EmbeddingModelID"]).lower() == model_id
    assert float(row["ImportanceScore"]) == 8.25
    assert (row["Status"], row["IsAutoGenerated"], str(row["AgentID"]).lower(), str(row["UserID"]).lower()) == ("Active", True, ids["agent"], ids["user"])
    vector = decode_vector(row["EmbeddingVector"])
    assert vector is not None
    if mj_db.mj_version == "newest":
        assert row["AuthorType"] == "MemoryManager"
        assert bytes(row["EmbeddingVectorBinary"]) == vector.astype("<f4").tobytes()
    else:  # MJ before v6.2 has neither column, and memctl adds neither
        assert "AuthorType" not in row and "EmbeddingVectorBinary" not in row
    # MJ's relevance-based injection finds it: the vector it reads is the store model's, close to the topic
    query = make_compute_embedder(settings).embed([TOPIC[0]])[0]
    found = mj_reads_vector(row)
    assert float(found @ query / (np.linalg.norm(found) * np.linalg.norm(query))) > 0.6
