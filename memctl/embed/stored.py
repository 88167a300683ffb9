"""Vectors as the store keeps them: AIAgentNote.EmbeddingVector is a JSON array of floats.

Rows are written by other systems, so decoding is defensive: anything but a non-empty array of
finite numbers reads as "no vector", and the note is embedded by the configured embedder instead.
"""

from __future__ import annotations

import hashlib
import json
import math
import sys
import time
from typing import Any, Optional, Sequence

import numpy as np

from memctl.helper import Helper, read_items, serve_code
from memctl.helper import cpus as _cpus  # module names the tests patch
from memctl.helper import runnable_python as _runnable_python

try:  # parses a stored vector's JSON much faster than json
    import orjson as _orjson
except ImportError:  # pragma: no cover - a dependency; json alone gives the same vectors, slower
    _orjson = None  # type: ignore[assignment]


def decode_vector(text: str | None) -> np.ndarray | None:
    """Parse an EmbeddingVector column into float32, or None when empty, invalid or non-finite."""
    if text is None or not text.strip():
        return None
    try:
        values = json.loads(text)
    except (ValueError, RecursionError):  # RecursionError: arrays nested thousands deep
        return None
    if not isinstance(values, list) or not values:
        return None
    if not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in values):
        return None
    try:
        if not all(math.isfinite(x) for x in values):
            return None
        with np.errstate(over="ignore"):
            vector = np.asarray(values, dtype=np.float32)
    except OverflowError:  # an integer beyond any float
        return None
    # a finite float64 can still overflow float32
    if not np.isfinite(vector).all():
        return None
    return vector


def encode_vector(vector: np.ndarray) -> str:
    """Render a vector as compact JSON (shortest float32 round-trip digits)."""
    v = np.asarray(vector, dtype=np.float32).reshape(-1)
    if not np.isfinite(v).all():
        raise ValueError("cannot encode a vector with NaN or infinite components")
    return "[" + ",".join(str(x) for x in v) + "]"


def content_hash(text: str) -> str:
    """Return the sha256 hex digest of a note's text: the content part of an embedding-cache key."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def decode_stored(text: Optional[str]) -> Optional[np.ndarray]:
    """Return `decode_vector(text)`, faster (orjson and numpy) when the text is a JSON array of floats;
    anything else is left to decode_vector itself."""
    if text is None:
        return None
    try:
        values = _loads(text)
    except (ValueError, RecursionError):
        return None
    if type(values) is not list or not values or set(map(type, values)) != {float}:
        return decode_vector(text)
    array = np.array(values, dtype=np.float64)
    if not np.isfinite(array).all():
        return None
    with np.errstate(over="ignore"):
        vector = array.astype(np.float32)  # a finite float64 can still overflow float32
    return vector if np.isfinite(vector).all() else None


def _loads(text: str) -> Any:
    """json.loads(text), by orjson where it reads the text; what orjson refuses (NaN, Infinity, lone
    surrogates, deep nesting) is left to json. Both give the same float32 for huge integers."""
    if _orjson is not None and type(text) is str:  # the column's type; anything else as json reads it
        try:
            return _orjson.loads(text)
        except _orjson.JSONDecodeError:
            pass
    return json.loads(text)


#: decode at least this many texts (of 384 floats) before a helper process is worth its start
PARALLEL_DECODE_MIN = 20_000 if _orjson is not None else 8_000
#: the helper's share of the texts (less than half: it starts later)
HELPER_SHARE = 0.45
#: texts per pickle written to the helper (it decodes each as it arrives)
FEED_TEXTS = 2_000
#: once this process's part is decoded, wait for the helper's at most twice as long, and at least this (s)
HELPER_GRACE_MIN = 10.0


def decode_many(texts: Sequence[str]) -> list[Optional[np.ndarray]]:
    """Return `decode_stored` of every text, in order (`Decoding` started and collected at once)."""
    return Decoding(texts).result()


class Decoding:
    """Stored vector texts being decoded: `decode_stored` of each, in order, from `result()`.

    Decoding holds the GIL, so with a second CPU a large batch is split: a helper process (`_serve`)
    decodes the first `share` of the texts and `result()` the rest. A helper that fails, hangs or
    answers anything but its part's vectors leaves its part to this process. Its reply is plain
    lengths and floats, never unpickled.
    """

    def __init__(self, texts: Sequence[str], share: float = HELPER_SHARE) -> None:
        self.texts = list(texts)
        self.cut = 0  # the texts before it are the helper's
        self.helper: Optional[Helper] = None
        if len(self.texts) < PARALLEL_DECODE_MIN or _cpus() < 2 or not _runnable_python():
            return
        cut = int(len(self.texts) * share)
        helper = Helper(HELPER_CODE, self.texts[:cut], FEED_TEXTS, "memctl-decode-feed")
        if helper.running:
            self.helper, self.cut = helper, cut

    def result(self) -> list[Optional[np.ndarray]]:
        """Decode this process's part, collect the helper's (or decode it here), end the helper."""
        helped: Optional[list[Optional[np.ndarray]]] = None
        try:
            began = time.monotonic()
            rest = [decode_stored(t) for t in self.texts[self.cut :]]
            if self.helper is not None:
                reply = self.helper.reply(time.monotonic() + max(HELPER_GRACE_MIN, 2 * (time.monotonic() - began)))
                helped = None if reply is None else _unpack(reply, self.cut)
        finally:
            self.close()
        if helped is None:
            return [decode_stored(t) for t in self.texts[: self.cut]] + rest
        return helped + rest

    def close(self) -> None:
        """End the helper, if any (a stop while waiting, a helper that lingers, a caller that gives up)."""
        helper, self.helper = self.helper, None
        if helper is not None:
            helper.close()


#: what the helper process runs (memctl/helper.py)
HELPER_CODE = serve_code("memctl.embed.stored")


def _serve() -> None:
    """The helper process: decode the lists of texts pickled on stdin; write the vectors (`_pack`) out."""
    vectors: list[Optional[np.ndarray]] = []
    for texts in read_items(sys.stdin.buffer):
        vectors.extend(decode_stored(t) for t in texts)
    out = sys.stdout.buffer
    out.write(_pack(vectors))
    out.flush()


def _pack(vectors: Sequence[Optional[np.ndarray]]) -> bytes:
    """Each vector's length (-1: no vector) as int64, then every vector's float32 values."""
    lengths = np.array([-1 if v is None else len(v) for v in vectors], dtype="<i8")
    present = [np.asarray(v, dtype="<f4") for v in vectors if v is not None]
    return lengths.tobytes() + (np.concatenate(present).tobytes() if present else b"")


def _unpack(reply: bytes, count: int) -> Optional[list[Optional[np.ndarray]]]:
    """Return the `count` vectors of a `_pack` reply, or None when the reply is anything else."""
    head = 8 * count
    if len(reply) < head or (len(reply) - head) % 4:
        return None
    lengths = np.frombuffer(reply, dtype="<i8", count=count)
    if ((lengths < 1) & (lengths != -1)).any():
        return None
    values = np.frombuffer(reply, dtype="<f4", offset=head)
    if (lengths > len(values)).any() or int(lengths[lengths > 0].sum()) != len(values):  # no sum that wraps
        return None
    out: list[Optional[np.ndarray]] = []
    start = 0
    for n in lengths.tolist():
        if n < 0:
            out.append(None)
        else:
            out.append(values[start : start + n].astype(np.float32))  # an owned copy in native order
            start += n
    return out
