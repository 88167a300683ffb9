"""Vectors as the store keeps them: AIAgentNote.EmbeddingVector is a JSON array of floats.

Rows are written by other systems, so decoding is defensive: anything that is not a non-empty
array of finite numbers reads as "no vector", and the note is embedded by the configured embedder
instead of poisoning a partition with NaNs.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import sys
from multiprocessing import get_context
from typing import Any, Optional, Sequence

import numpy as np


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
    """Return `decode_vector(text)`, computed faster when the text is a JSON array of floats.

    decode_vector checks every element in Python (~150 us for 384 floats); here the checks of
    that common case run in numpy. Anything else (ints, bools, strings, nesting, blank or invalid
    text) is left to decode_vector itself, so every input decodes exactly as it would there.
    """
    if text is None:
        return None
    try:
        values = json.loads(text)
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


#: decode at least this many texts before a helper process is worth its start (about 0.5 s)
PARALLEL_DECODE_MIN = 20_000
#: the helper's share of the texts (less than half: it starts later)
HELPER_SHARE = 0.45


def decode_many(texts: Sequence[str]) -> list[Optional[np.ndarray]]:
    """Return `decode_stored` of every text, in order.

    Decoding JSON floats is CPU-bound and holds the GIL (about 150 us per 384 floats, most of a
    100k-note load), so a large batch is split with one helper process when this process may
    use a second CPU: the helper decodes the first part while this process decodes the rest.
    The helper runs the same function, so the result is the same array for every text. A
    helper that cannot start or dies leaves its part to this process; a stop (a signal, the
    run's deadline) while waiting for it ends it at once. Not in a frozen executable, whose
    spawned helper would start the program again.
    """
    texts = list(texts)
    if len(texts) < PARALLEL_DECODE_MIN or _cpus() < 2 or getattr(sys, "frozen", False):
        return [decode_stored(t) for t in texts]
    cut = int(len(texts) * HELPER_SHARE)
    spawn = get_context("spawn")
    receiver, sender = spawn.Pipe(duplex=False)
    helper = spawn.Process(target=_helper, args=(texts[:cut], sender), name="memctl-decode", daemon=True)
    try:
        helper.start()
    except OSError:
        return [decode_stored(t) for t in texts]
    packed: Optional[list[Optional[bytes]]] = None
    try:
        sender.close()  # this process's copy: the helper's end closing then reads as EOF
        rest = [decode_stored(t) for t in texts[cut:]]
        while packed is None and (helper.is_alive() or receiver.poll()):
            if receiver.poll(0.2):
                try:
                    packed = receiver.recv()
                except (EOFError, OSError):
                    break
    finally:
        if helper.is_alive():
            helper.terminate()  # a stop while waiting, or a reply already taken
        helper.join(5)
        receiver.close()
    if not isinstance(packed, list) or len(packed) != cut:
        return [decode_stored(t) for t in texts[:cut]] + rest
    return [None if b is None else np.frombuffer(b, dtype=np.float32).copy() for b in packed] + rest


def _helper(texts: Sequence[str], sender: Any) -> None:
    """The helper process: send each text's float32 bytes (None: no vector)."""
    try:
        sender.send(_decode_packed(texts))
    finally:
        sender.close()


def _decode_packed(texts: Sequence[str]) -> list[Optional[bytes]]:
    """Run in the helper process: each text's float32 bytes (None: no vector)."""
    out: list[Optional[bytes]] = []
    for text in texts:
        vector = decode_stored(text)
        out.append(None if vector is None else vector.tobytes())
    return out


def _cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1
