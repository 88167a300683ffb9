"""Vectors for notes: stored ones when their model is trusted, cached ones, or computed now.

A partition's vectors always come from one model (DESIGN 7): a partition whose notes all carry
a valid stored vector of the trusted EmbeddingModelID uses those; any other partition is
embedded, whole, by the compute embedder. Computed vectors are cached in memctl_embedding as
float32 bytes keyed by (note, model) with the content hash, so an unchanged note is embedded
once. A dry-run reads the cache but never writes it.

Stored vectors are JSON text, and decoding them is most of the cost of a large store: each
note's text is decoded once per run (both LLM phases share the work), all at once with a helper
process on a large store (`decode_many`), and the usual all-floats array is checked in numpy
rather than element by element.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Container, Iterable, Optional, Sequence

import numpy as np
import sqlalchemy as sa

from memctl.context import PhaseContext
from memctl.embed import stored as stored_texts
from memctl.embed import thresholds_for
from memctl.embed.base import Embedder
from memctl.embed.stored import Decoding, content_hash, decode_many, decode_stored
from memctl.records import NoteRecord, PartitionKey
from memctl.similarity import unit_rows
from memctl.store import models as m
from memctl.store.engine import read, write

CHUNK = 500
#: ctx.services key of the decoding `decode_ahead` started: (text keys, Decoding)
AHEAD = "vectors-ahead"
#: the helper's share of the texts decoded ahead: it starts while the phase still groups the
#: notes and digests them for its settled marks (3.4 to 3.7 s at 100k notes), so it can take
#: more than half. Measured with json (before orjson): at 0.6 this process decoded its 40 % in 6
#: to 7 s, then waited 1.5 to 3 s for the helper (~200 us a text there, ~160 here). With orjson
#: this process's part and the wait took 2.7 s in one 100k dream.
AHEAD_SHARE = 0.55


@dataclass
class PartitionVectors:
    """One partition's notes and their unit vectors (rows in the same order), and the model."""

    notes: list[NoteRecord]
    vectors: np.ndarray
    model: str


@dataclass(frozen=True)
class VectorStats:
    stored: int = 0
    cached: int = 0
    computed: int = 0


class VectorIndex:
    """Resolve vectors for many notes at once: one cache read, one embedding batch, one cache write."""

    def __init__(self, ctx: PhaseContext, compute: Embedder) -> None:
        self.ctx = ctx
        self.compute = compute
        self.trusted = ctx.settings.stored_model_id
        self.stats = VectorStats()
        # (note id, length and hash of its EmbeddingVector text) -> the decoded vector (None:
        # unusable), for this run: both LLM phases share the decoding. Python caches a string's
        # hash in the string, so each text is hashed once; a different text of the same note and
        # length with the same 64-bit hash (within one run) is the only way to get a wrong one.
        self._decoded: dict[tuple[str, int, int], Optional[np.ndarray]] = {}
        # note id -> (content hash, unit vector) of notes memctl created in a stored-vector partition
        self._derived: dict[str, tuple[str, np.ndarray]] = {}
        self._probed: Optional[int] = None  # the compute embedder's dimension, when it had to be measured

    def thresholds(self, model: str) -> tuple[float, float]:
        """Return (consolidate, contradiction) thresholds for vectors of `model`."""
        default = thresholds_for(model) if model == self.compute.name else thresholds_for("stored")
        settings = self.ctx.settings
        return (
            settings.consolidate_threshold if settings.consolidate_threshold is not None else default[0],
            settings.contradiction_threshold if settings.contradiction_threshold is not None else default[1],
        )

    def partitions(self, groups: dict[PartitionKey, list[NoteRecord]]) -> dict[PartitionKey, PartitionVectors]:
        """Return vectors for every partition of `groups`."""
        stored: dict[PartitionKey, np.ndarray] = {}
        to_compute: list[NoteRecord] = []
        self._load_derived([n for notes in groups.values() for n in notes if not self._has_trusted_vector(n)])
        self._decode_stored_texts(groups)
        for key, notes in groups.items():
            matrix = self._stored_matrix(notes)
            if matrix is not None:
                stored[key] = matrix
            else:
                to_compute.extend(notes)
        computed = self.embed(to_compute)
        out: dict[PartitionKey, PartitionVectors] = {}
        for key, notes in groups.items():
            if key in stored:
                out[key] = PartitionVectors(notes, stored[key], self.trusted or "stored")
            else:
                out[key] = PartitionVectors(notes, np.vstack([computed[n.id] for n in notes]) if notes else np.zeros((0, 0), np.float32), self.compute.name)
        self.stats = VectorStats(self.stats.stored + sum(len(groups[k]) for k in stored), self.stats.cached, self.stats.computed)
        return out

    def _stored_matrix(self, notes: Sequence[NoteRecord]) -> Optional[np.ndarray]:
        if not self.trusted or not notes:
            return None
        vectors = []
        for note in notes:
            vector = self.vector_of(note)
            if vector is None or (vectors and vector.shape != vectors[0].shape):
                return None
            vectors.append(vector)
        return unit_rows(np.vstack(vectors))

    def _has_trusted_vector(self, note: NoteRecord) -> bool:
        return bool(self.trusted) and (note.embedding_model_id or "").lower() == (self.trusted or "").lower() and note.embedding_vector is not None

    def vector_of(self, note: NoteRecord) -> Optional[np.ndarray]:
        """Return a note's vector of the trusted stored model: its own, or the one memctl derived for it."""
        if not self.trusted:
            return None
        if (note.embedding_model_id or "").lower() == self.trusted.lower():
            return self._decode(note.id, note.embedding_vector)
        derived = self._derived.get(note.id)
        if derived is not None and derived[0] == content_hash(note.note):
            return derived[1]
        return None

    def derive(self, note_id: str, content: str, sources: Sequence[NoteRecord]) -> Optional[np.ndarray]:
        """Give a note memctl creates from `sources` a vector of the trusted stored model.

        memctl cannot run the store's model, and a note without a vector of it would push its
        whole partition onto the compute embedder (another model, other thresholds) from then
        on. The new note states its sources' facts, so it gets the normalised mean of their
        vectors, kept in memctl's embedding cache (never written to the note row: DESIGN 7).
        """
        vectors = [self.vector_of(n) for n in sources]
        if not vectors or any(v is None for v in vectors) or len({v.shape for v in vectors}) != 1:  # type: ignore[union-attr]
            return None
        vector = unit_rows(np.mean(np.vstack(vectors), axis=0, keepdims=True))[0]
        digest = content_hash(content)
        self._derived[note_id] = (digest, vector)
        if not self.ctx.dry_run and self.trusted:
            self._write(self.trusted, [(note_id, digest, vector)])
        return vector

    def _load_derived(self, notes: Sequence[NoteRecord]) -> None:
        if not self.trusted or not notes:
            return
        ids = sorted({n.id for n in notes} - set(self._derived))
        with read(self.ctx.engine) as conn:
            for start in range(0, len(ids), CHUNK):
                query = sa.select(m.embedding.c.NoteID, m.embedding.c.ContentHash, m.embedding.c.Vector).where(
                    m.embedding.c.Model == self.trusted, m.embedding.c.NoteID.in_(ids[start : start + CHUNK])
                )
                for note_id, digest, blob in conn.execute(query):
                    self._derived[str(note_id).lower()] = (digest, np.frombuffer(blob, dtype=np.float32))

    def _decode_stored_texts(self, groups: dict[PartitionKey, list[NoteRecord]]) -> None:
        """Decode every trusted vector text of `groups` not decoded yet, at once (`decode_many`),
        after collecting what `decode_ahead` started."""
        ahead = self.ctx.services.pop(AHEAD, None)
        if ahead is not None:
            keys, decoding = ahead
            for key, vector in zip(keys, decoding.result(), strict=True):
                self._decoded.setdefault(key, vector)
        todo = trusted_texts((n for notes in groups.values() for n in notes), self.trusted, known=self._decoded)
        if todo:
            self._decoded.update(zip(todo, decode_many(list(todo.values()))))

    def _decode(self, note_id: str, text: Optional[str]) -> Optional[np.ndarray]:
        if text is None:
            return None
        key = _text_key(note_id, text)
        if key not in self._decoded:
            self._decoded[key] = decode_stored(text)
        return self._decoded[key]

    def embed(self, notes: Iterable[NoteRecord]) -> dict[str, np.ndarray]:
        """Return unit vectors of `notes` by the compute embedder, from the cache where possible."""
        notes = list(notes)
        if not notes:
            return {}
        model = self.compute.name
        hashes = {n.id: content_hash(n.note) for n in notes}
        found: dict[str, np.ndarray] = {}
        with read(self.ctx.engine) as conn:
            ids = sorted(hashes)
            for start in range(0, len(ids), CHUNK):
                query = sa.select(m.embedding.c.NoteID, m.embedding.c.ContentHash, m.embedding.c.Vector).where(
                    m.embedding.c.Model == model, m.embedding.c.NoteID.in_(ids[start : start + CHUNK])
                )
                for note_id, digest, blob in conn.execute(query):
                    note_id = str(note_id).lower()
                    if hashes.get(note_id) == digest and len(blob) % 4 == 0:
                        found[note_id] = np.frombuffer(blob, dtype=np.float32)
        missing = [n for n in notes if n.id not in found]
        fresh = unit_rows(self.compute.embed([n.note for n in missing])) if missing else None
        stale = self._stale_dimension(found, notes, fresh)
        if stale:
            self.ctx.reporter.log(
                f"{len(stale)} cached vector(s) of {model} have another dimension than the model gives now: re-embedded "
                "(`memctl cache clear` drops the whole cache)"
            )
            for note_id in stale:
                del found[note_id]
            redo = [n for n in notes if n.id in stale]
            vectors = unit_rows(self.compute.embed([n.note for n in redo]))
            missing, fresh = missing + redo, vectors if fresh is None else np.vstack([fresh, vectors])
        if missing:
            assert fresh is not None
            for note, vector in zip(missing, fresh):
                found[note.id] = vector
            self._store(missing, fresh, hashes)
        self.stats = VectorStats(self.stats.stored, self.stats.cached + len(notes) - len(missing), self.stats.computed + len(missing))
        return found

    def _stale_dimension(self, found: dict[str, np.ndarray], notes: Sequence[NoteRecord], fresh: Optional[np.ndarray]) -> set[str]:
        """Return the cached vectors whose dimension is not the one the embedder gives now.

        A model may keep its name and change its dimension (another checkpoint behind the same
        name, a changed `dimensions` setting): its cached vectors are then of no use. The
        dimension comes from the embedder (`dim`), from the vectors just computed, or, when every
        note was cached with vectors of several dimensions, from embedding one note again (once
        per run; never when the cache agrees with itself, so a fully cached run asks nothing).
        """
        if not found:
            return set()
        dims = {v.shape[0] for v in found.values()}
        current = getattr(self.compute, "dim", None)
        if current is None and fresh is not None and len(fresh):
            current = fresh.shape[1]
        if current is None and len(dims) == 1:
            return set()
        if current is None:
            if self._probed is None:
                probe = next(n for n in notes if n.id in found)
                self._probed = int(unit_rows(self.compute.embed([probe.note])).shape[1])
            current = self._probed
        if dims == {current}:
            return set()
        return {note_id for note_id, v in found.items() if v.shape[0] != current}

    def _store(self, notes: Sequence[NoteRecord], vectors: np.ndarray, hashes: dict[str, str]) -> None:
        if self.ctx.dry_run:
            return
        self._write(self.compute.name, [(n.id, hashes[n.id], v) for n, v in zip(notes, vectors)])

    def _write(self, model: str, entries: Sequence[tuple[str, str, np.ndarray]]) -> None:
        now = self.ctx.settings.current_time()
        rows = [
            {"NoteID": note_id, "Model": model, "ContentHash": digest, "Dim": int(v.shape[0]), "Vector": np.asarray(v, np.float32).tobytes(), "CreatedAt": now}
            for note_id, digest, v in entries
        ]
        with write(self.ctx.engine) as conn:
            ids = [r["NoteID"] for r in rows]
            for start in range(0, len(ids), CHUNK):
                conn.execute(m.embedding.delete().where(m.embedding.c.Model == model, m.embedding.c.NoteID.in_(ids[start : start + CHUNK])))
            for start in range(0, len(rows), 1000):
                conn.execute(m.embedding.insert(), rows[start : start + 1000])


def decode_ahead(ctx: PhaseContext, notes: Sequence[NoteRecord]) -> None:
    """Start decoding the stored vectors of `notes` (those of the trusted model) with a helper
    process, while the caller goes on; the run's VectorIndex collects them when it first needs
    vectors, and this process decodes its share of all of them then. Only when a helper runs
    (a batch large enough, a second CPU: `Decoding`), and for a run that plans nearly every
    partition (consolidate's AHEAD_BELOW): the two LLM phases then need nearly every vector
    (pairs in each partition, each user note against the broader notes). `close_ahead` ends
    one that is never collected.
    """
    if AHEAD in ctx.services:
        return
    todo = trusted_texts(notes, ctx.settings.stored_model_id)
    if len(todo) < stored_texts.PARALLEL_DECODE_MIN:  # read now: tests lower it
        return
    decoding = Decoding(list(todo.values()), AHEAD_SHARE)
    if decoding.helper is not None:  # else nothing runs ahead: each phase decodes what it needs, when it does
        ctx.services[AHEAD] = (list(todo), decoding)


def close_ahead(ctx: PhaseContext) -> None:
    """End the helper of a `decode_ahead` nothing collected (the run ends or stops)."""
    ahead = ctx.services.pop(AHEAD, None)
    if ahead is not None:
        ahead[1].close()


def trusted_texts(notes: Iterable[NoteRecord], trusted: Optional[str], known: Container[tuple[str, int, int]] = ()) -> dict[tuple[str, int, int], str]:
    """Return the stored vector texts of `notes` made by the `trusted` model (none without one),
    by text key (`_text_key`), leaving out the keys in `known`."""
    model = (trusted or "").lower()
    texts: dict[tuple[str, int, int], str] = {}
    if not model:
        return texts
    for note in notes:
        text = note.embedding_vector
        if text is not None and (note.embedding_model_id or "").lower() == model:
            key = _text_key(note.id, text)
            if key not in known:
                texts.setdefault(key, text)
    return texts


def _text_key(note_id: str, text: str) -> tuple[str, int, int]:
    """Return the key of a note's stored vector text in a run's decoded vectors."""
    return (note_id, len(text), hash(text))
