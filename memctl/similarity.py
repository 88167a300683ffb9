"""Partitions, blocked cosine similarity, consolidation clusters and contradiction pairs.

Pure numpy, no database. Vectors are compared by dot product of unit rows, one block of rows
against the others at a time, so memory stays at block x N floats however large a partition is.
Pairs and clusters only need each unordered pair once, so they compute the upper triangle
(row block against the rows after it): half the multiply work, and every pair's similarity is
one number, never two values that differ in the last bit depending on which side computed it.

Comparisons are in float32 against float32(threshold), inclusive: a pair whose returned
similarity equals the threshold is in.

Clustering is a deterministic greedy pass (see `clusters`): the rows are first put in the
caller's order-key order, so the computation, bit for bit, does not depend on input row order.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any, Iterator, Optional, Sequence

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


def _normalise_id(value: Optional[str]) -> Optional[str]:
    return None if value is None else value.strip().lower()


def normalise_scopes(raw: Optional[str]) -> Optional[str]:
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

    IDs are compared case-insensitively (SQL Server returns uppercase GUIDs, Postgres lowercase),
    so they are lowercased. An empty string is kept distinct from NULL: NULL means "broader", and
    treating "" as NULL could widen a note's visibility. Build a consolidated note's scope from a
    member row, not from this key, so the stored IDs keep their original spelling.
    """
    return (
        _normalise_id(note.agent_id),
        _normalise_id(note.company_id),
        _normalise_id(note.user_id),
        _normalise_id(note.primary_scope_entity_id),
        _normalise_id(note.primary_scope_record_id),
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


def _check_block(block: int) -> None:
    if block < 1:
        raise ValueError(f"block must be at least 1, got {block}")


def _hits(
    v: np.ndarray, threshold: float, block: int, upper: bool
) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Yield (rows, cols, sims) of the pairs >= threshold, one row block at a time.

    upper=True compares each block with itself and the rows after it and keeps col > row;
    upper=False compares each block with every row and keeps col != row.
    """
    _check_block(block)
    t = np.float32(threshold)
    n = len(v)
    for start in range(0, n, block):
        stop = min(start + block, n)
        first = start if upper else 0
        sims = v[start:stop] @ v[first:].T
        mask = sims >= t
        # Most rows have no hit at all: find the rows that do before listing their hits.
        hit_rows = np.flatnonzero(mask.any(axis=1))
        r, c = np.nonzero(mask[hit_rows])
        r = hit_rows[r]
        s = sims[r, c]
        r += start
        c += first
        keep = c > r if upper else c != r
        yield r[keep], c[keep], s[keep]


def _sorted_rows(
    n: int, rows: np.ndarray, cols: np.ndarray, sims: np.ndarray, cap: Optional[int]
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Sort hits by (row, sim desc, col), keep at most cap per row; return CSR plus per-row totals."""
    order = np.lexsort((cols, -sims, rows))
    rows, cols, sims = rows[order], cols[order], sims[order]
    totals = np.bincount(rows, minlength=n)
    if cap is not None:
        starts = np.concatenate(([0], np.cumsum(totals)[:-1]))
        keep = np.arange(len(rows)) - starts[rows] < cap
        rows, cols, sims = rows[keep], cols[keep], sims[keep]
    indptr = np.concatenate(([0], np.cumsum(np.bincount(rows, minlength=n))))
    return indptr, cols, sims, totals


def neighbours(
    vectors: np.ndarray, threshold: float, block: int = 1024, max_per_row: Optional[int] = None
) -> Neighbours:
    """Find, for every row, the other rows with cosine >= threshold (best first, capped if asked)."""
    v = unit_rows(vectors)
    n = len(v)
    parts_i, parts_j, parts_s = [np.empty(0, np.int64)], [np.empty(0, np.int64)], [np.empty(0, np.float32)]
    for r, c, s in _hits(v, threshold, block, upper=False):
        if max_per_row is not None:
            # cap inside the block: a block holds whole rows, so this is exact and keeps memory bounded
            indptr, c, s, _ = _sorted_rows(n, r, c, s, max_per_row)
            r = np.repeat(np.arange(n), np.diff(indptr))
        parts_i.append(r)
        parts_j.append(c)
        parts_s.append(s)
    indptr, cols, sims, _ = _sorted_rows(
        n, np.concatenate(parts_i), np.concatenate(parts_j), np.concatenate(parts_s), None
    )
    return Neighbours(indptr=indptr, indices=cols, sims=sims)


def _pair_arrays(v: np.ndarray, threshold: float, block: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    parts = list(_hits(v, threshold, block, upper=True))
    i = np.concatenate([np.empty(0, np.int64)] + [p[0] for p in parts])
    j = np.concatenate([np.empty(0, np.int64)] + [p[1] for p in parts])
    s = np.concatenate([np.empty(0, np.float32)] + [p[2] for p in parts])
    order = np.lexsort((j, i, -s))
    return i[order], j[order], s[order]


def pairs(vectors: np.ndarray, threshold: float, block: int = 1024) -> list[tuple[int, int, float]]:
    """List unordered pairs (i, j, cosine), i < j, with cosine >= threshold; best first, ties by (i, j)."""
    i, j, s = _pair_arrays(unit_rows(vectors), threshold, block)
    return list(zip(i.tolist(), j.tolist(), s.tolist()))


def clusters(
    vectors: np.ndarray,
    order_keys: Sequence[Any],
    threshold: float,
    min_size: int = 3,
    max_size: int = 7,
    block: int = 1024,
) -> list[list[int]]:
    """Group rows into consolidation clusters; each list is [seed, members best first].

    Deterministic greedy pass: seeds are taken in order_keys order (pass unique keys such as
    (created_at, id); ties would fall back to input order). A seed's cluster is the seed plus
    the not-yet-clustered rows with cosine >= threshold to the seed, best first (ties by order
    key), capped at max_size, so a larger group is split and its leftovers seed or join later
    clusters. When a seed gathers fewer than min_size rows, no cluster is formed and its
    candidates stay free: they, and the seed itself, may still join a later seed's cluster.
    Every member is >= threshold to its seed; clusters are returned in seed order.
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
    parts_r, parts_c, parts_s = [np.empty(0, np.int64)], [np.empty(0, np.int64)], [np.empty(0, np.float32)]
    truncated = np.zeros(n, dtype=bool)
    for r, c, s in _hits(v, threshold, block, upper=True):
        indptr, c_kept, s_kept, totals = _sorted_rows(n, r, c, s, cap)
        truncated |= totals > cap
        parts_r.append(np.repeat(np.arange(n), np.diff(indptr)))
        parts_c.append(c_kept)
        parts_s.append(s_kept)
    indptr, up_cols, up_sims, _ = _sorted_rows(
        n, np.concatenate(parts_r), np.concatenate(parts_c), np.concatenate(parts_s), None
    )

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
            rest = np.flatnonzero(~assigned[seed + 1 :]) + seed + 1
            row = v[rest] @ v[seed]
            hit = row >= t
            cols, sims = rest[hit], row[hit]
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
            # No cluster: every candidate is known here (fewer than min_size - 1), so the
            # later ones learn that this free seed is a candidate of theirs.
            for c, s in zip(cols.tolist(), sims):
                if c > seed:
                    earlier.setdefault(c, []).append((seed, s))
    return [[order[k] for k in cluster] for cluster in found]
