"""A run's stored vectors (issue 25, bounded memory): decoded as they are read, kept in a file of
the run, read back per partition; the records never carry the vector text."""

from __future__ import annotations

import json

import numpy as np
import sqlalchemy as sa
from conftest import Db
from factory import NOW, Store

from memctl.context import PhaseContext
from memctl.embed.hashing import HashingEmbedder
from memctl.embed.stored import decode_stored
from memctl.phases.base import Overlay
from memctl.phases.notes import by_partition, load_notes, with_vectors
from memctl.settings import replace
from memctl.similarity import unit_rows
from memctl.store import models as m
from memctl.vectors import PartitionVectors, Recent, VectorIndex, close_vectors, stored_vectors

MODEL = "11111111-2222-4333-8444-555555555555"


def _store(db: Db) -> tuple[PhaseContext, dict[str, str]]:
    store = Store(db.engine)
    agent = store.agent()
    rng = np.random.default_rng(7)
    texts: dict[str, str] = {}
    for user in (store.user("Alice"), store.user("Bob")):
        for i in range(3):
            text = json.dumps([float(x) for x in rng.normal(size=8)])
            note_id = store.note(f"fact {i}", AgentID=agent, UserID=user, EmbeddingModelID=MODEL, EmbeddingVector=text)
            texts[note_id.lower()] = text
    store.note("no vector", AgentID=agent, EmbeddingModelID=MODEL)
    store.note("another model", AgentID=agent, EmbeddingModelID="99999999-2222-4333-8444-555555555555", EmbeddingVector="[1.0, 0.0]")
    settings = replace(db.settings, embed_provider="stored", embed_model=MODEL)
    return PhaseContext(db.engine, settings, NOW), texts


def test_loaded_records_carry_no_vector_text_and_partitions_read_the_decoded_vectors(db: Db) -> None:
    ctx, texts = _store(db)
    notes = load_notes(ctx, Overlay())
    assert len(notes) == 8 and all(n.embedding_vector is None for n in notes)
    store = stored_vectors(ctx)
    assert len(store) == 6  # the trusted model's texts only; none for a NULL text
    index = VectorIndex(ctx, HashingEmbedder(dim=16))
    groups = {k: v for k, v in by_partition(notes).items() if len(v) == 3}
    out = index.partitions(groups)
    assert len(out) == 2
    for pv in out.values():
        assert pv.model == MODEL and pv._matrix is None  # read when asked, not before
        expected = unit_rows(np.vstack([decode_stored(texts[n.id]) for n in pv.notes]))
        assert np.array_equal(pv.vectors, expected) and pv.vectors.dtype == np.float32
    close_vectors(ctx)  # the run ends: the file is closed and the entries gone
    assert ctx.services.stored is None and len(store) == 0
    ctx.engine.dispose()


def test_a_reload_without_vectors_makes_entries_unusable_until_read_again_and_only_changed_texts_are_decoded(db: Db, monkeypatch) -> None:
    from memctl.embed import stored as stored_module

    ctx, texts = _store(db)
    decoded: list[str] = []
    real = stored_module.decode_stored
    monkeypatch.setattr(stored_module, "decode_stored", lambda text: decoded.append(text) or real(text))
    load_notes(ctx, Overlay())
    assert len(decoded) == 6
    changed = min(texts)
    new_text = json.dumps([0.5] * 8)
    with db.engine.begin() as conn:
        assert conn.execute(sa.update(m.note).where(m.note.c.ID == changed).values(EmbeddingVector=new_text)).rowcount == 1
    notes = load_notes(ctx, Overlay(), vectors=False)
    store = stored_vectors(ctx)
    assert not any(store.has(n.id) for n in notes)  # out of date: read without its text
    assert store.get(changed) is None
    with_vectors(ctx, by_partition(notes))
    assert len(decoded) == 7 and decoded[-1] == new_text  # the unchanged texts are not decoded again
    assert np.array_equal(store.get(changed), real(new_text))
    assert all(np.array_equal(store.get(i), real(t)) for i, t in texts.items() if i != changed)
    ctx.engine.dispose()


def test_recent_partition_matrices_are_released_beyond_the_limit_and_read_again() -> None:
    reads: list[int] = []

    def loader(i: int):
        return lambda: reads.append(i) or np.full((4, 4), float(i), dtype=np.float32)

    recent = Recent(limit=2 * 64)  # two 4x4 float32 matrices
    parts = [PartitionVectors([], None, "m", loader(i), recent) for i in range(3)]
    for pv in parts:
        assert pv.vectors[0, 0] == parts.index(pv)
    assert reads == [0, 1, 2] and parts[0]._matrix is None and parts[2]._matrix is not None
    assert parts[0].vectors[0, 0] == 0 and reads == [0, 1, 2, 0]  # read again when asked


def test_a_partition_of_notes_memctl_created_reads_their_derived_vectors(db: Db) -> None:
    """A note memctl wrote (no EmbeddingModelID, a vector derived from its sources') alone in its partition."""
    ctx, texts = _store(db)
    store = Store(db.engine)
    created = store.note("merged fact", AgentID=store.agent(), UserID=store.user("Carol"))
    notes = load_notes(ctx, Overlay())
    index = VectorIndex(ctx, HashingEmbedder(dim=16))
    sources = [n for n in notes if n.id in texts][:2]
    derived = index.derive(created.lower(), "merged fact", sources)
    assert derived is not None
    mine = [n for n in notes if n.id == created.lower()]
    out = index.partitions({("k",): mine})
    assert np.allclose(out[("k",)].vectors, unit_rows(derived[None, :]))
    ctx.engine.dispose()
