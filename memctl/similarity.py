"""Partitions, blocked cosine similarity, consolidation clusters and contradiction pairs.

Rows are compared one block at a time (memory: block x N floats), pairs and clusters on the upper
triangle only. Comparisons are float32 against float32(threshold), inclusive; a similarity may
differ in its last bit between block sizes (never within one call).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from memctl.records import NoteRecord, PartitionKey

__all__ = [
    "Neighbours",
    "PartitionKey",
    "clusters",
    "neighbours",
    "normalise_scopes",
    "pairs",
    "partition_key",
    "stable_hash",
    "unit_rows",
]


def normalise_id(value: str | None) -> str | None:
    """Return an ID as partition keys compare it: case-insensitive (SQL Server returns uppercase GUIDs)."""
    return None if value is None else value.strip().lower()


#: a GUID in its usual spelling, either case; the one pattern memctl reads GUIDs by
GUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.I)


def _normalise_record_id(value: str | None) -> str | None:
    # another system's record keys may be case-sensitive: only a GUID is compared ignoring case
    return value.lower() if value is not None and GUID.fullmatch(value) else value


def normalise_scopes(raw: str | None) -> str | None:
    """Canonicalise a SecondaryScopes JSON text: sorted keys, compact; empty or null -> None.

    Text that is not JSON is kept as its stripped self, so it only ever matches itself.
    """
    if raw is None or not raw.strip():
        return None
    try:
        value = json.loads(raw)
    except ValueError:
        return raw.strip()
    if value is None or value == {} or value == []:
        return None
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def partition_key(note: NoteRecord) -> PartitionKey:
    """Return the exact scope tuple a note may be merged or compared within.

    IDs are lowercased (PrimaryScopeRecordID only when it is a GUID). "" stays distinct from
    NULL, which means "broader". Build a consolidated note's scope from a member row, not from
    this key, so stored IDs keep their original spelling.
    """
    return (
        normalise_id(note.agent_id),
        normalise_id(note.company_id),
        normalise_id(note.user_id),
        normalise_id(note.primary_scope_entity_id),
        _normalise_record_id(note.primary_scope_record_id),
        normalise_scopes(note.secondary_scopes),
    )


def stable_hash(key: Sequence[Any]) -> int:
    """Return a 64-bit hash of a partition key that is the same in every process (for sharding)."""
    canonical = json.dumps(list(key), separators=(",", ":"), ensure_ascii=False, default=str)
    return int.from_bytes(hashlib.blake2b(canonical.encode("utf-8"), digest_size=8).digest(), "big")


def unit_rows(m: np.ndarray) -> np.ndarray:
    """Return a float32 copy of m with each row scaled to unit length (zero rows stay zero)."""
    rows = np.array(m, dtype=np.float32, copy=True, ndmin=2)
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    np.divide(rows, norms, out=rows, where=norms > 0)
    return rows


@dataclass(frozen=True)
class Neighbours:
    """Neighbour lists in CSR form: row i's neighbours are indices[indptr[i]:indptr[i+1]].

    Each row's neighbours are sorted by similarity, highest first, ties by index.
    """

    indptr: np.ndarray
    indices: np.ndarray
    sims: np.ndarray

    def __len__(self) -> int:
        return len(self.indptr) - 1

    def row(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        """Return (neighbour indices, similarities) of row i."""
        lo, hi = self.indptr[i], self.indptr[i + 1]
        return self.indices[lo:hi], self.sims[lo:hi]


def _top(sims: np.ndarray, cap: int) -> tuple[np.ndarray, np.ndarray]:
    """Return (local row, col) of each row's cap best entries: highest similarity, then lowest col."""
    # One int64 key per entry orders by similarity (float32 bits made monotonic), then column.
    bits = (sims + np.float32(0.0)).view(np.int32).astype(np.int64)  # + 0.0 turns -0.0 into 0.0
    ordered = np.where(bits >= 0, bits, bits ^ 0x7FFFFFFF)
    ncols = sims.shape[1]
    key = (ordered << 32) | (ncols - 1 - np.arange(ncols, dtype=np.int64))
    cols = np.argpartition(key, ncols - cap, axis=1)[:, ncols - cap :]
    return np.repeat(np.arange(len(sims)), cap), cols.ravel()


def _hits(
    v: np.ndarray, threshold: float, block: int, upper: bool, cap: int | None = None
) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
    """Yield (rows, cols, sims, capped rows) of the pairs >= threshold, one row block at a time.

    upper=True compares each block with itself and the rows after it (col > row only);
    upper=False compares each block with every row (col != row). With a cap, a row with more
    hits than cap keeps only its cap best (similarity desc, then col) and is listed as capped.
    """
    if block < 1:
        raise ValueError(f"block must be at least 1, got {block}")
    t = np.float32(threshold)
    n = len(v)
    for start in range(0, n, block):
        stop = min(start + block, n)
        first = start if upper else 0
        sims = v[start:stop] @ v[first:].T
        local = np.arange(stop - start)
        if upper:
            sims[:, : stop - start][np.tri(stop - start, dtype=bool)] = -np.inf
        else:
            sims[local, local + start] = -np.inf
        mask = sims >= t
        if cap is None:
            capped = np.zeros(0, dtype=np.int64)
            # Most rows have no hit at all: find the rows that do before listing their hits.
            hit_rows = np.flatnonzero(mask.any(axis=1))
        else:
            counts = np.count_nonzero(mask, axis=1)
            capped = np.flatnonzero(counts > cap)
            hit_rows = np.flatnonzero((counts > 0) & (counts <= cap))
        r, c = np.nonzero(mask[hit_rows])
        r = hit_rows[r]
        # Rows over the cap are reduced a slice at a time, so the int64 keys stay small.
        for lo in range(0, len(capped), 128):
            rows = capped[lo : lo + 128]
            top_r, top_c = _top(sims[rows], cap)
            r = np.concatenate((r, rows[top_r]))
            c = np.concatenate((c, top_c))
        yield r + start, c + first, sims[r, c], capped + start


def _sorted_rows(n: int, rows: np.ndarray, cols: np.ndarray, sims: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sort hits by (row, sim desc, col) into CSR (indptr, cols, sims)."""
    order = np.lexsort((cols, -sims, rows))
    indptr = np.concatenate(([0], np.cumsum(np.bincount(rows, minlength=n))))
    return indptr, cols[order], sims[order]


def _concat(parts: list[tuple[np.ndarray, ...]], index: int, dtype: type) -> np.ndarray:
    return np.concatenate([np.empty(0, dtype)] + [p[index].astype(dtype, copy=False) for p in parts])


def neighbours(vectors: np.ndarray, threshold: float, block: int = 1024, max_per_row: int | None = None) -> Neighbours:
    """Find, for every row, the other rows with cosine >= threshold (best first, capped if asked)."""
    if max_per_row is not None and max_per_row < 1:
        raise ValueError(f"max_per_row must be at least 1, got {max_per_row}")
    v = unit_rows(vectors)
    # A block holds whole rows, so capping inside it is exact and keeps memory bounded.
    parts = list(_hits(v, threshold, block, upper=False, cap=max_per_row))
    indptr, cols, sims = _sorted_rows(len(v), _concat(parts, 0, np.int64), _concat(parts, 1, np.int64), _concat(parts, 2, np.float32))
    return Neighbours(indptr=indptr, indices=cols, sims=sims)


def pairs(vectors: np.ndarray, threshold: float, block: int = 1024) -> list[tuple[int, int, float]]:
    """List unordered pairs (i, j, cosine), i < j, with cosine >= threshold; best first, ties by (i, j)."""
    parts = list(_hits(unit_rows(vectors), threshold, block, upper=True))
    i, j, s = _concat(parts, 0, np.int64), _concat(parts, 1, np.int64), _concat(parts, 2, np.float32)
    order = np.lexsort((j, i, -s))
    return list(zip(i[order].tolist(), j[order].tolist(), s[order].tolist()))


def clusters(
    vectors: np.ndarray,
    order_keys: Sequence[Any],
    threshold: float,
    min_size: int = 3,
    max_size: int = 7,
    block: int = 1024,
) -> list[list[int]]:
    """Group rows into consolidation clusters; each list is [seed, members best first].

    A greedy pass over seeds in order_keys order (pass unique keys): a cluster is the seed plus the
    unclustered rows with cosine >= threshold to it, best first, capped at max_size. A seed with
    fewer than min_size rows forms none, and it and its candidates stay free for later clusters.
    """
    if not 2 <= min_size <= max_size:
        raise ValueError(f"need 2 <= min_size <= max_size, got min_size={min_size}, max_size={max_size}")
    n = len(order_keys)
    if len(vectors) != n:
        raise ValueError(f"{len(vectors)} vectors but {n} order keys")
    order = sorted(range(n), key=order_keys.__getitem__)
    # Work in rank space: row k of v is the k-th note in order-key order.
    v = unit_rows(np.asarray(vectors)[order]) if n else np.zeros((0, 0), np.float32)
    t = np.float32(threshold)
    take = max_size - 1
    cap = max(32, 4 * take)

    # Each row's neighbours after it (upper triangle), best first, capped at `cap` per row.
    parts = list(_hits(v, threshold, block, upper=True, cap=cap))
    truncated = np.zeros(n, dtype=bool)
    truncated[_concat(parts, 3, np.int64)] = True
    indptr, up_cols, up_sims = _sorted_rows(n, _concat(parts, 0, np.int64), _concat(parts, 1, np.int64), _concat(parts, 2, np.float32))

    assigned = np.zeros(n, dtype=bool)
    # Candidates before a seed: earlier seeds that failed to form a cluster and listed it.
    earlier: dict[int, list[tuple[int, np.float32]]] = {}
    found: list[list[int]] = []
    for seed in range(n):
        if assigned[seed]:
            continue
        lo, hi = indptr[seed], indptr[seed + 1]
        before = earlier.pop(seed, [])
        if lo == hi and not before:
            continue
        cols, sims = up_cols[lo:hi], up_sims[lo:hi]
        free = ~assigned[cols]
        cols, sims = cols[free], sims[free]
        if truncated[seed] and len(cols) < take:
            # The capped list ran dry: recompute this seed's row against the free rows after it.
            row = v[seed + 1 :] @ v[seed]
            hit = np.flatnonzero((row >= t) & ~assigned[seed + 1 :])
            cols, sims = hit + seed + 1, row[hit]
        before = [(r, s) for r, s in before if not assigned[r]]
        if before:
            cols = np.concatenate((cols, np.array([r for r, _ in before], dtype=np.int64)))
            sims = np.concatenate((sims, np.array([s for _, s in before], dtype=np.float32)))
        rank = np.lexsort((cols, -sims))
        cols, sims = cols[rank], sims[rank]
        if 1 + min(len(cols), take) >= min_size:
            members = cols[:take]
            assigned[seed] = True
            assigned[members] = True
            found.append([seed, *members.tolist()])
        else:
            # No cluster: tell the later candidates that this free seed is a candidate of theirs.
            for c, s in zip(cols.tolist(), sims):
                if c > seed:
                    earlier.setdefault(c, []).append((seed, s))
    return [[order[k] for k in cluster] for cluster in found]
