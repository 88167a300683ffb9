"""Vectors for notes: stored ones when their model is trusted, cached ones, or computed now.

A partition's vectors always come from one model (DESIGN 7): the trusted EmbeddingModelID's
stored vectors when every note has a valid one, else the compute embedder for the whole partition.
Computed vectors are cached in memctl_embedding by (note, model) with the content hash; a dry-run
never writes the cache. Stored JSON vectors are decoded once per run into a temporary file
(`StoredVectors`) and read back per partition, so memory follows the largest partition, not the store.
"""

from __future__ import annotations

import os
import tempfile
import threading
import weakref
from array import array
from collections import OrderedDict
from dataclasses import dataclass
from functools import partial
from typing import Any, Callable, Iterable, Iterator, Optional, Sequence

import numpy as np
import sqlalchemy as sa

from memctl.context import PhaseContext
from memctl.embed import thresholds_for
from memctl.embed.base import Embedder
from memctl.embed.stored import content_hash, decode_many
from memctl.llm.factory import make_compute_embedder
from memctl.records import NoteRecord, PartitionKey
from memctl.similarity import unit_rows
from memctl.store import models as m
from memctl.store.engine import read, write
from memctl.store.ids import chunks


class PartitionVectors:
    """One partition's notes and their unit vectors (rows in the same order), and the model.

    A stored-vector partition reads its matrix from the run's `StoredVectors` when asked and keeps
    it only while recently used (`Recent`), so a phase holds about one partition's matrix at a time.
    """

    def __init__(
        self,
        notes: list[NoteRecord],
        vectors: Optional[np.ndarray],
        model: str,
        load: Optional[Callable[[], np.ndarray]] = None,
        recent: Optional[Recent] = None,
    ) -> None:
        self.notes = notes
        self.model = model
        self._matrix = vectors
        self._load = load
        self._recent = recent

    @property
    def vectors(self) -> np.ndarray:
        matrix = self._matrix
        if matrix is None:
            assert self._load is not None
            matrix = self._matrix = self._load()
        if self._recent is not None:
            self._recent.used(self)
        return matrix

    def release(self) -> None:
        """Drop the matrix of a partition that can read it again (`vectors` reads it when asked)."""
        if self._load is not None:
            self._matrix = None


#: bytes of partition matrices kept after use (`Recent`): a few large partitions, or the one a
#: caller is working on plus the broader ones it compares with
RECENT_BYTES = 96 << 20


class Recent:
    """The partition matrices used last, up to RECENT_BYTES (at least the last one): older ones
    are released. Held by weak reference: a partition its phase no longer holds goes, matrix and all."""

    def __init__(self, limit: int = RECENT_BYTES) -> None:
        self.limit = limit
        self._held: OrderedDict[int, tuple[weakref.ref[PartitionVectors], int]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()  # partitions may be planned on several threads

    def used(self, pv: PartitionVectors) -> None:
        key = id(pv)
        with self._lock:
            held = self._held.get(key)
            if held is not None and held[0]() is pv:
                self._held.move_to_end(key)
                return
            if held is not None:  # a partition gone, whose id was reused
                self._bytes -= held[1]
            size = pv._matrix.nbytes if pv._matrix is not None else 0
            self._held[key] = (weakref.ref(pv), size)
            self._bytes += size
            while self._bytes > self.limit and len(self._held) > 1:
                _, (ref, size) = self._held.popitem(last=False)
                self._bytes -= size
                old = ref()
                if old is not None:
                    old.release()


#: texts a `Feed` decodes together (~75 MB of 384-float JSON)
FEED_BATCH = 20_000


class StoredVectors:
    """The trusted model's stored vectors this run has read, each decoded once, kept on disk.

    Texts are decoded as read (`feed`) and dropped; float32 values go to an unnamed temporary file.
    Each entry is the vector of a note *as this run last read its row*: a changed text replaces it,
    and a read without the vector column (`forget`) makes it unusable until the text is read again,
    so nothing is planned on a vector older than its note record.
    """

    def __init__(self, trusted: Optional[str]) -> None:
        self.trusted = (trusted or "").lower()
        self._file: Optional[int] = None  # descriptor of the unnamed temporary file
        self._closer: Optional[weakref.finalize] = None
        self._end = 0  # bytes written
        self._slot: dict[str, int] = {}  # note id -> its entry
        self._length = array("q")  # entry -> text length
        self._hash = array("q")  # entry -> hash of the text
        self._offset = array("q")  # entry -> byte offset of its float32 values
        self._dim = array("q")  # entry -> dimension, -1: the text is no usable vector
        self._current = bytearray()  # entry -> 1 while it matches the note's last read

    def __len__(self) -> int:
        return len(self._slot)

    def trusts(self, model_id: Optional[str]) -> bool:
        """Return whether a row's EmbeddingModelID is the trusted stored model (no model: never)."""
        return bool(self.trusted) and (model_id or "").lower() == self.trusted

    def has(self, note_id: str) -> bool:
        """Return whether the note's last read had a vector text of the trusted model (usable or not)."""
        slot = self._slot.get(note_id)
        return slot is not None and self._current[slot] == 1

    def dim(self, note_id: str) -> int:
        """Return the note's vector dimension; -1 when it has none usable (or no current entry)."""
        slot = self._slot.get(note_id)
        return -1 if slot is None or not self._current[slot] else self._dim[slot]

    def forget(self, note_ids: Optional[Iterable[str]] = None) -> None:
        """Mark the entries of these notes (all without `note_ids`) as out of date: the note was
        read again without its vector text."""
        if note_ids is None:
            self._current = bytearray(len(self._current))
            return
        for note_id in note_ids:
            self.stale(note_id)

    def stale(self, note_id: str) -> None:
        """`forget` of one note (a note read again: called once per row of a load)."""
        slot = self._slot.get(note_id)
        if slot is not None:
            self._current[slot] = 0

    def get(self, note_id: str) -> Optional[np.ndarray]:
        """Return the note's vector (float32), or None."""
        slot = self._slot.get(note_id)
        if slot is None or not self._current[slot] or self._dim[slot] < 0:
            return None
        return self.matrix([note_id])[0]

    def matrix(self, note_ids: Sequence[str]) -> np.ndarray:
        """Return the vectors of notes that all have one of the same dimension, as rows (float32)."""
        slots = [self._slot[i] for i in note_ids]
        if not slots:
            return np.empty((0, 0), dtype=np.float32)
        dim = self._dim[slots[0]]
        out = np.empty((len(slots), dim), dtype=np.float32)
        buffer = memoryview(out.reshape(-1).view(np.uint8))
        size = 4 * dim
        assert self._file is not None
        order = sorted(range(len(slots)), key=lambda r: self._offset[slots[r]])
        start = 0
        while start < len(order):
            end = start + 1
            first = self._offset[slots[order[start]]]
            while end < len(order) and order[end] == order[end - 1] + 1 and self._offset[slots[order[end]]] == first + (end - start) * size:
                end += 1
            row = order[start]
            want = (end - start) * size
            got = os.preadv(self._file, [buffer[row * size : row * size + want]], first)
            if got != want:
                raise OSError(f"short read of the run's vector file ({got} of {want} bytes)")
            start = end
        return out

    def feed(self) -> Feed:
        return Feed(self)

    def _changed(self, note_id: str, length: int, digest: int) -> bool:
        """Return whether a freshly read text differs from the entry's (an unchanged one is current again)."""
        slot = self._slot.get(note_id)
        if slot is None or self._length[slot] != length or self._hash[slot] != digest:
            return True
        self._current[slot] = 1
        return False

    def _put(self, entries: Sequence[tuple[str, int, int]], vectors: Sequence[Optional[np.ndarray]]) -> None:
        """Store decoded vectors: `entries` are (note id, text length, text hash), in order."""
        chunks = []
        offset = self._end
        for (note_id, length, digest), vector in zip(entries, vectors, strict=True):
            slot = self._slot.get(note_id)
            if slot is None:
                slot = self._slot[note_id] = len(self._length)
                for column in (self._length, self._hash, self._offset, self._dim):
                    column.append(0)
                self._current.append(0)
            self._length[slot], self._hash[slot], self._current[slot] = length, digest, 1
            if vector is None:
                self._dim[slot], self._offset[slot] = -1, 0
                continue
            data = np.ascontiguousarray(vector, dtype=np.float32).tobytes()
            self._dim[slot], self._offset[slot] = len(vector), offset
            chunks.append(data)
            offset += len(data)
        if chunks:
            if self._file is None:
                handle, name = tempfile.mkstemp(prefix="memctl-vectors-")
                os.unlink(name)  # gone with the descriptor, even if this process is killed
                self._file = handle
                self._closer = weakref.finalize(self, os.close, handle)  # a store dropped unclosed
            data = b"".join(chunks)
            view = memoryview(data)
            position = self._end
            while view:
                written = os.pwrite(self._file, view, position)
                view, position = view[written:], position + written
            self._end = offset

    def close(self) -> None:
        """Close (and so delete) the file; the entries are gone."""
        if self._file is not None:
            assert self._closer is not None
            self._closer()  # closes the descriptor, once
            self._file = None
        self._slot.clear()
        self._current = bytearray()
        self._length, self._hash, self._offset, self._dim = array("q"), array("q"), array("q"), array("q")
        self._end = 0


class Feed:
    """Decode stored vector texts into a `StoredVectors` as they are read: `add` each, then `finish`.

    Texts are decoded FEED_BATCH at a time, so a scan holds at most one batch of JSON texts.
    """

    def __init__(self, store: StoredVectors) -> None:
        self.store = store
        self._entries: list[tuple[str, int, int]] = []
        self._texts: list[str] = []

    def add(self, note_id: str, text: str, again: bool = False) -> None:
        """Decode the note's text into the store, unless it is the text the store has for the note
        (`again`: decode it anyway, it replaces a text given before in this feed)."""
        key = (len(text), hash(text))
        if not again and not self.store._changed(note_id, *key):
            return
        self._entries.append((note_id, *key))
        self._texts.append(text)
        if len(self._texts) >= FEED_BATCH:
            self.finish()

    def finish(self) -> None:
        entries, texts, self._entries, self._texts = self._entries, self._texts, [], []
        if texts:
            self.store._put(entries, decode_many(texts))

    def close(self) -> None:
        self._entries, self._texts = [], []

    def __enter__(self) -> Feed:
        return self

    def __exit__(self, kind: Optional[type], error: Optional[BaseException], trace: Any) -> None:
        """`finish` when the block ends, `close` when it raises (nothing half-read is kept)."""
        if kind is None:
            self.finish()
        else:
            self.close()


def stored_vectors(ctx: PhaseContext) -> StoredVectors:
    """Return the run's `StoredVectors` (one per run: both LLM phases share it)."""
    if ctx.services.stored is None:
        ctx.services.stored = StoredVectors(ctx.settings.stored_model_id)
    return ctx.services.stored


def vector_index(ctx: PhaseContext) -> VectorIndex:
    """Return the run's `VectorIndex` (one per run: both LLM phases share it), built on first use."""
    if ctx.services.index is None:
        ctx.services.index = VectorIndex(ctx, make_compute_embedder(ctx.settings))
    return ctx.services.index


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
        self.recent = Recent()
        # note id -> (content hash, unit vector) of notes memctl created in a stored-vector partition
        self._derived: dict[str, tuple[str, np.ndarray]] = {}
        self._probed: Optional[int] = None  # the compute embedder's dimension, when it had to be measured

    @property
    def stored(self) -> StoredVectors:
        """The run's decoded stored vectors (looked up each time: a phase that failed closes them)."""
        return stored_vectors(self.ctx)

    def thresholds(self, model: str) -> tuple[float, float]:
        """Return (consolidate, contradiction) thresholds for vectors of `model`."""
        default = thresholds_for(model) if model == self.compute.name else thresholds_for("stored")
        settings = self.ctx.settings
        return (
            settings.consolidate_threshold if settings.consolidate_threshold is not None else default[0],
            settings.contradiction_threshold if settings.contradiction_threshold is not None else default[1],
        )

    def partitions(self, groups: dict[PartitionKey, list[NoteRecord]]) -> dict[PartitionKey, PartitionVectors]:
        stored: dict[PartitionKey, np.ndarray] = {}
        to_compute: list[NoteRecord] = []
        self._load_derived([n for notes in groups.values() for n in notes if not self._has_trusted_vector(n)])
        self._decode_stored_texts(groups)
        for key, notes in groups.items():
            if self._stored_dim(notes) > 0:
                stored[key] = notes
            else:
                to_compute.extend(notes)
        computed = self.embed(to_compute)
        out: dict[PartitionKey, PartitionVectors] = {}
        for key, notes in groups.items():
            if key in stored:
                out[key] = PartitionVectors(notes, None, self.trusted or "stored", partial(self._stored_matrix, notes), self.recent)
            else:
                out[key] = PartitionVectors(notes, np.vstack([computed[n.id] for n in notes]) if notes else np.zeros((0, 0), np.float32), self.compute.name)
        self.stats = VectorStats(self.stats.stored + sum(len(groups[k]) for k in stored), self.stats.cached, self.stats.computed)
        return out

    def _stored_dim(self, notes: Sequence[NoteRecord]) -> int:
        """Return the dimension of the trusted model's vectors of `notes` when all have one, the same;
        else -1 (the compute embedder embeds the partition)."""
        if not self.trusted or not notes:
            return -1
        store = self.stored
        dims = set()
        for note in notes:
            if store.trusts(note.embedding_model_id):
                dims.add(store.dim(note.id))
            else:
                derived = self._derived.get(note.id)
                dims.add(len(derived[1]) if derived is not None and derived[0] == content_hash(note.note) else -1)
            if len(dims) > 1:
                return -1
        return dims.pop()

    def _stored_matrix(self, notes: Sequence[NoteRecord]) -> np.ndarray:
        """Return the unit rows of a stored-vector partition (`_stored_dim` > 0), read from the run's file."""
        own = [n.id for n in notes if self.stored.trusts(n.embedding_model_id)]
        if len(own) == len(notes):
            return unit_rows(self.stored.matrix(own))
        rows = self.stored.matrix(own)
        # every note memctl created (its vector derived from its sources'): the dimension is theirs
        dim = rows.shape[1] if own else len(self._derived[notes[0].id][1])
        matrix = np.empty((len(notes), dim), dtype=np.float32)
        place = 0
        for i, note in enumerate(notes):
            if self.stored.trusts(note.embedding_model_id):
                matrix[i] = rows[place]
                place += 1
            else:
                matrix[i] = self._derived[note.id][1]
        return unit_rows(matrix)

    def _has_trusted_vector(self, note: NoteRecord) -> bool:
        if not self.stored.trusts(note.embedding_model_id):
            return False
        return note.embedding_vector is not None or self.stored.has(note.id)

    def vector_of(self, note: NoteRecord) -> Optional[np.ndarray]:
        """Return a note's vector of the trusted stored model: its own, or the one memctl derived for it."""
        if not self.trusted:
            return None
        if self.stored.trusts(note.embedding_model_id):
            if note.embedding_vector is not None:  # a record read with its text
                with self.stored.feed() as feed:
                    feed.add(note.id, note.embedding_vector)
            return self.stored.get(note.id)
        derived = self._derived.get(note.id)
        if derived is not None and derived[0] == content_hash(note.note):
            return derived[1]
        return None

    def derive(self, note_id: str, content: str, sources: Sequence[NoteRecord]) -> Optional[np.ndarray]:
        """Give a note memctl creates from `sources` a vector of the trusted stored model.

        memctl cannot run the store's model, and a note without one would push its partition onto
        the compute embedder. So it gets the normalised mean of its sources' vectors, kept in
        memctl's cache (never written to the note row: DESIGN 7).
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
        for note_id, digest, blob in self._cached(self.trusted, sorted({n.id for n in notes} - set(self._derived))):
            self._derived[note_id] = (digest, np.frombuffer(blob, dtype=np.float32))

    def _cached(self, model: str, ids: Sequence[str]) -> Iterator[tuple[str, str, bytes]]:
        """Yield (note id, content hash, vector bytes) of the cache rows of `model` for `ids`."""
        with read(self.ctx.engine) as conn:
            for chunk in chunks(ids):
                query = sa.select(m.embedding.c.NoteID, m.embedding.c.ContentHash, m.embedding.c.Vector).where(
                    m.embedding.c.Model == model, m.embedding.c.NoteID.in_(chunk)
                )
                for note_id, digest, blob in conn.execute(query):
                    yield str(note_id).lower(), digest, blob

    def _decode_stored_texts(self, groups: dict[PartitionKey, list[NoteRecord]]) -> None:
        """Decode the trusted vector texts records of `groups` carry (`load_notes` keeps none) into the
        run's StoredVectors, each text once."""
        todo = trusted_texts((n for notes in groups.values() for n in notes), self.trusted)
        if todo:
            with self.stored.feed() as feed:
                for (note_id, _, _), text in todo.items():
                    feed.add(note_id, text)

    def embed(self, notes: Iterable[NoteRecord]) -> dict[str, np.ndarray]:
        """Return unit vectors of `notes` by the compute embedder, from the cache where possible."""
        notes = list(notes)
        if not notes:
            return {}
        model = self.compute.name
        hashes = {n.id: content_hash(n.note) for n in notes}
        found = {
            note_id: np.frombuffer(blob, dtype=np.float32)
            for note_id, digest, blob in self._cached(model, sorted(hashes))
            if hashes.get(note_id) == digest and len(blob) % 4 == 0
        }
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

        A model may keep its name and change its dimension. The current dimension comes from the
        embedder's `dim`, the vectors just computed, or (only when the cache disagrees with itself)
        from embedding one note again, once per run.
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
            for chunk in chunks([r["NoteID"] for r in rows]):
                conn.execute(m.embedding.delete().where(m.embedding.c.Model == model, m.embedding.c.NoteID.in_(chunk)))
            for batch in chunks(rows, 1000):
                conn.execute(m.embedding.insert(), batch)


def close_vectors(ctx: PhaseContext) -> None:
    """Close the run's StoredVectors (their file): the run ends or stops, or a phase failed (the
    next one reads the notes again)."""
    stored, ctx.services.stored = ctx.services.stored, None
    if stored is not None:
        stored.close()


def trusted_texts(notes: Iterable[NoteRecord], trusted: Optional[str]) -> dict[tuple[str, int, int], str]:
    """Return the stored vector texts of `notes` made by the `trusted` model (none without one),
    by text key (`_text_key`)."""
    model = (trusted or "").lower()
    texts: dict[tuple[str, int, int], str] = {}
    if not model:
        return texts
    for note in notes:
        text = note.embedding_vector
        if text is not None and (note.embedding_model_id or "").lower() == model:
            texts.setdefault(_text_key(note.id, text), text)
    return texts


def _text_key(note_id: str, text: str) -> tuple[str, int, int]:
    return (note_id, len(text), hash(text))
