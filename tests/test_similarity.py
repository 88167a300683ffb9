"""Similarity engine: partitions, blocked cosine, contradiction pairs, consolidation clusters."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memctl.records import NoteRecord
from memctl.similarity import (
    clusters,
    neighbours,
    normalise_scopes,
    pairs,
    partition_key,
    stable_hash,
    unit_rows,
)

ROOT = Path(__file__).resolve().parent.parent
NOW = datetime(2026, 1, 1, tzinfo=UTC)


def exact_vectors(signs: np.ndarray) -> np.ndarray:
    """Turn +-1 sign rows of width 16 into unit rows whose dot products are exact multiples of 1/8.

    Every product and partial sum is a small dyadic number, so float32 results do not depend on
    summation order: ties are real ties, and tests can compare with a brute-force reference.
    """
    return (np.asarray(signs, dtype=np.float32) * 0.25).reshape(len(signs), 16)


def random_signs(rng: np.random.Generator, n: int, patterns: int) -> np.ndarray:
    """Rows drawn from a few base patterns, each with up to 3 flipped signs (clusters at 5/8+)."""
    base = rng.choice([-1.0, 1.0], size=(patterns, 16))
    rows = base[rng.integers(0, patterns, size=n)].copy()
    for row in rows:
        row[rng.choice(16, size=rng.integers(0, 4), replace=False)] *= -1
    return rows


def reference_clusters(v: np.ndarray, keys: list, threshold: float, min_size: int, max_size: int) -> list[list[int]]:
    """Brute-force the documented greedy rule (exact arithmetic on exact_vectors input)."""
    sims = v.astype(np.float64) @ v.astype(np.float64).T
    order = sorted(range(len(keys)), key=keys.__getitem__)
    rank = {row: k for k, row in enumerate(order)}
    assigned: set[int] = set()
    out = []
    for seed in order:
        if seed in assigned:
            continue
        candidates = [j for j in range(len(keys)) if j != seed and j not in assigned and sims[seed, j] >= threshold]
        candidates.sort(key=lambda j: (-sims[seed, j], rank[j]))
        members = candidates[: max_size - 1]
        if 1 + len(members) >= min_size:
            out.append([seed, *members])
            assigned.update([seed, *members])
    return out


def brute_pairs(v: np.ndarray, threshold: float) -> list[tuple[int, int, float]]:
    sims = v.astype(np.float64) @ v.astype(np.float64).T
    found = [(i, j, sims[i, j]) for i in range(len(v)) for j in range(i + 1, len(v)) if sims[i, j] >= threshold]
    return sorted(found, key=lambda p: (-p[2], p[0], p[1]))


def note(**changes: object) -> NoteRecord:
    base = NoteRecord(
        id="n1",
        agent_id="A1",
        company_id="C1",
        user_id="U1",
        primary_scope_entity_id=None,
        primary_scope_record_id=None,
        secondary_scopes=None,
        type="Preference",
        note="x",
        is_auto_generated=True,
        status="Active",
        protection_tier="Standard",
        access_count=0,
        last_accessed_at=None,
        created_at=NOW,
        updated_at=NOW,
    )
    return replace(base, **changes)


# ---------------------------------------------------------------- partitions


def test_partition_key_normalises_secondary_scope_key_order() -> None:
    a = note(secondary_scopes='{"b": 2, "a": {"y": 1, "x": [1, 2]}}')
    b = note(secondary_scopes='{ "a": {"x": [1,2], "y": 1},\n "b": 2 }')
    assert partition_key(a) == partition_key(b)
    assert partition_key(a)[5] == '{"a":{"x":[1,2],"y":1},"b":2}'
    assert partition_key(note(secondary_scopes='{"b": 3, "a": 1}')) != partition_key(a)


@pytest.mark.parametrize("raw", [None, "", "  ", "{}", "null", " { } ", "[]"])
def test_empty_secondary_scopes_mean_none(raw: str | None) -> None:
    assert normalise_scopes(raw) is None


def test_unparseable_secondary_scopes_only_match_themselves() -> None:
    assert normalise_scopes("  not json {  ") == "not json {"
    assert partition_key(note(secondary_scopes="oops")) != partition_key(note(secondary_scopes=None))


def test_partition_key_ids_are_case_insensitive_but_null_is_not_empty() -> None:
    guid = "7A1F8B8E-0000-4000-8000-00000000000A"
    upper = note(agent_id="ABC-1", user_id="DEF-2 ", primary_scope_record_id=guid)
    lower = note(agent_id="abc-1", user_id="def-2", primary_scope_record_id=guid.lower())
    assert partition_key(upper) == partition_key(lower)
    # another system's record keys may be case-sensitive: only GUIDs are compared ignoring case
    assert partition_key(note(primary_scope_record_id="Rec-9")) != partition_key(note(primary_scope_record_id="rec-9"))
    assert partition_key(note(user_id=None)) != partition_key(note(user_id=""))
    assert partition_key(note(user_id=None)) != partition_key(note(user_id="U1"))
    assert partition_key(note(company_id=None))[1] is None


def test_stable_hash_is_the_same_in_another_process() -> None:
    key = partition_key(note(secondary_scopes='{"team": "x"}'))
    script = f"from memctl.similarity import stable_hash\nprint(stable_hash({key!r}))\n"
    out = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        env={"PYTHONHASHSEED": "99", "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=True,
    )
    assert int(out.stdout) == stable_hash(key)
    assert 0 <= stable_hash(key) < 2**64
    assert stable_hash(key) != stable_hash(partition_key(note()))


# ---------------------------------------------------------------- unit rows, neighbours, pairs


def test_unit_rows_keeps_zero_rows_zero() -> None:
    rows = unit_rows(np.array([[3.0, 4.0], [0.0, 0.0]]))
    assert rows.dtype == np.float32
    np.testing.assert_allclose(rows, [[0.6, 0.8], [0.0, 0.0]], rtol=1e-6)


def test_pairs_exclude_self_pairs_and_are_unique() -> None:
    v = exact_vectors(np.tile(np.ones(16), (4, 1)))  # four identical rows
    found = pairs(v, 0.5)
    assert [(i, j) for i, j, _ in found] == [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)]
    assert all(s == 1.0 for _, _, s in found)


def test_pairs_sorted_by_similarity_then_index() -> None:
    rng = np.random.default_rng(3)
    v = exact_vectors(random_signs(rng, 40, 4))
    found = pairs(v, 0.25)
    assert found == [(i, j, pytest.approx(s)) for i, j, s in brute_pairs(v, 0.25)]
    assert all(i < j for i, j, _ in found)


def test_threshold_is_inclusive() -> None:
    rng = np.random.default_rng(11)
    v = unit_rows(rng.standard_normal((30, 12)))
    i, j, sim = pairs(v, -1.0)[5]
    at = pairs(v, sim)
    assert (i, j, sim) in at
    above = pairs(v, float(np.nextafter(np.float32(sim), np.float32(2))))
    assert (i, j, sim) not in above


def test_zero_rows_and_empty_input() -> None:
    assert pairs(np.zeros((3, 4), np.float32), 0.0) == [(0, 1, 0.0), (0, 2, 0.0), (1, 2, 0.0)]
    assert pairs(np.zeros((3, 4), np.float32), 0.1) == []
    assert pairs(np.zeros((0, 4), np.float32), 0.5) == []
    assert clusters(np.zeros((0, 4), np.float32), [], 0.5) == []
    assert len(neighbours(np.zeros((0, 4), np.float32), 0.5)) == 0


def test_neighbours_are_symmetric_sorted_and_capped() -> None:
    rng = np.random.default_rng(5)
    v = exact_vectors(random_signs(rng, 60, 5))
    sims = v.astype(np.float64) @ v.T.astype(np.float64)
    full = neighbours(v, 0.5)
    for i in range(60):
        idx, s = full.row(i)
        expected = sorted((j for j in range(60) if j != i and sims[i, j] >= 0.5), key=lambda j: (-sims[i, j], j))
        assert idx.tolist() == expected
        np.testing.assert_array_equal(s, sims[i, expected].astype(np.float32))
    capped = neighbours(v, 0.5, max_per_row=3)
    for i in range(60):
        assert capped.row(i)[0].tolist() == full.row(i)[0][:3].tolist()


def test_block_size_does_not_change_results() -> None:
    rng = np.random.default_rng(8)
    centres = rng.standard_normal((25, 24))
    v = unit_rows(centres[rng.integers(0, 25, size=200)] + 0.45 * rng.standard_normal((200, 24)))
    keys = [(i * 37 % 200, i) for i in range(200)]
    # BLAS may round a product differently in another tile shape: the last bit of a similarity
    # can move (and so the order of two near-equal pairs), the pairs and clusters do not.
    small_pairs, big_pairs = sorted(pairs(v, 0.6, block=7)), sorted(pairs(v, 0.6, block=1024))
    assert [p[:2] for p in small_pairs] == [p[:2] for p in big_pairs]
    np.testing.assert_allclose([p[2] for p in small_pairs], [p[2] for p in big_pairs], rtol=0, atol=1e-6)
    small, big = neighbours(v, 0.6, block=7), neighbours(v, 0.6, block=1024)
    np.testing.assert_array_equal(small.indptr, big.indptr)
    for i in range(200):
        assert sorted(small.row(i)[0].tolist()) == sorted(big.row(i)[0].tolist())
    found = clusters(v, keys, 0.6, block=7)
    assert found == clusters(v, keys, 0.6, block=1024)
    assert len(found) > 3
    # on exactly representable vectors even the similarities and their order are identical
    e = exact_vectors(random_signs(np.random.default_rng(9), 150, 5))
    assert pairs(e, 0.5, block=7) == pairs(e, 0.5, block=1024)
    small, big = neighbours(e, 0.5, block=7), neighbours(e, 0.5, block=1024)
    for field in ("indptr", "indices", "sims"):
        np.testing.assert_array_equal(getattr(small, field), getattr(big, field))


def test_block_must_be_positive() -> None:
    with pytest.raises(ValueError):
        pairs(np.eye(3), 0.5, block=0)


# ---------------------------------------------------------------- clusters


def test_cluster_is_seed_then_members_best_first() -> None:
    # The seed (earliest key) has cosine 1 to row 3 and 7/8 to rows 1 and 2: the tie goes to
    # the earlier order key, row 2.
    base = np.ones(16)
    rows = [base.copy() for _ in range(4)]
    rows[1][0] = -1
    rows[2][1] = -1
    keys = [("2026-01-01", "a"), ("2026-01-03", "c"), ("2026-01-02", "b"), ("2026-01-04", "d")]
    assert clusters(exact_vectors(np.array(rows)), keys, 0.7) == [[0, 3, 2, 1]]


def test_size_cap_splits_and_leftovers_form_their_own_cluster() -> None:
    v = exact_vectors(np.tile(np.ones(16), (10, 1)))
    keys = list(range(10))
    assert clusters(v, keys, 0.9, min_size=3, max_size=7) == [[0, 1, 2, 3, 4, 5, 6], [7, 8, 9]]


def test_fragments_below_min_size_are_dropped() -> None:
    v = exact_vectors(np.tile(np.ones(16), (9, 1)))
    assert clusters(v, list(range(9)), 0.9, min_size=3, max_size=7) == [[0, 1, 2, 3, 4, 5, 6]]
    assert clusters(v[:2], [0, 1], 0.9) == []


def test_failed_seed_can_join_a_later_cluster() -> None:
    # 0 is close to 1 only; 1, 2, 3 are close to each other: seed 0 fails, then 1 takes 0 along.
    a = np.ones(16)
    b = a.copy()
    b[:4] = -1  # cos(a, b) = 0.5
    c = b.copy()
    c[4:6] = -1  # cos(b, c) = 0.75, cos(a, c) = 0.25
    v = exact_vectors(np.array([a, b, c, c]))
    assert clusters(v, [0, 1, 2, 3], 0.5, min_size=3) == [[1, 2, 3, 0]]


def test_clusters_follow_order_keys_not_row_order() -> None:
    rng = np.random.default_rng(21)
    v = exact_vectors(random_signs(rng, 80, 6))
    keys = [(f"2026-01-{1 + i % 28:02d}", f"id-{i:03d}") for i in range(80)]
    expected = clusters(v, keys, 0.5)
    assert expected == reference_clusters(v, keys, 0.5, 3, 7)
    for seed in range(3):
        perm = np.random.default_rng(seed).permutation(80)
        got = clusters(v[perm], [keys[p] for p in perm], 0.5)
        assert [[int(perm[k]) for k in cluster] for cluster in got] == expected


def test_truncated_neighbour_lists_still_match_the_reference() -> None:
    # 120 rows from 3 patterns: every row has ~40 equal neighbours, more than the per-row cap,
    # so the greedy pass exhausts capped lists and recomputes rows.
    rng = np.random.default_rng(2)
    patterns = rng.choice([-1.0, 1.0], size=(3, 16))
    v = exact_vectors(patterns[rng.integers(0, 3, size=120)])
    keys = [(int(k), i) for i, k in enumerate(rng.permutation(120))]
    for min_size, max_size in ((2, 3), (3, 7), (5, 5)):
        got = clusters(v, keys, 0.9, min_size=min_size, max_size=max_size)
        assert got == reference_clusters(v, keys, 0.9, min_size, max_size)


def test_cluster_arguments_are_checked() -> None:
    v = exact_vectors(np.ones((3, 16)))
    with pytest.raises(ValueError):
        clusters(v, [0, 1, 2], 0.5, min_size=1)
    with pytest.raises(ValueError):
        clusters(v, [0, 1, 2], 0.5, min_size=5, max_size=4)
    with pytest.raises(ValueError):
        clusters(v, [0, 1], 0.5)


# ---------------------------------------------------------------- properties

sign_rows = st.integers(min_value=0, max_value=60).flatmap(
    lambda n: st.lists(st.lists(st.sampled_from([-1.0, 1.0]), min_size=16, max_size=16), min_size=n, max_size=n)
)


@settings(max_examples=60, deadline=None)
@given(
    rows=sign_rows,
    threshold=st.sampled_from([-0.25, 0.0, 0.25, 0.5, 0.75, 1.0]),
    sizes=st.sampled_from([(2, 2), (2, 4), (3, 7), (4, 5)]),
    block=st.integers(min_value=1, max_value=70),
    duplicate=st.integers(min_value=0, max_value=20),
    seed=st.integers(min_value=0, max_value=2**16),
)
def test_cluster_invariants(rows, threshold, sizes, block, duplicate, seed) -> None:
    signs = np.array(rows, dtype=np.float64).reshape(len(rows), 16)
    if len(signs):
        signs = np.vstack([signs, np.repeat(signs[:1], duplicate, axis=0)])  # exact ties
    v = exact_vectors(signs)
    n = len(v)
    keys = [(int(k), f"id{i}") for i, k in enumerate(np.random.default_rng(seed).integers(0, 5, size=n))]
    min_size, max_size = sizes
    found = clusters(v, keys, threshold, min_size=min_size, max_size=max_size, block=block)

    assert found == reference_clusters(v, keys, threshold, min_size, max_size)
    members = [i for cluster in found for i in cluster]
    assert len(members) == len(set(members))
    for cluster in found:
        assert min_size <= len(cluster) <= max_size
        seed_row = v[cluster[0]].astype(np.float64)
        assert all(seed_row @ v[m].astype(np.float64) >= threshold for m in cluster[1:])
    assert [keys[c[0]] for c in found] == sorted(keys[c[0]] for c in found)

    perm = np.random.default_rng(seed + 1).permutation(n)
    permuted = clusters(v[perm], [keys[p] for p in perm], threshold, min_size, max_size, block)
    assert [[int(perm[k]) for k in c] for c in permuted] == found


@settings(max_examples=60, deadline=None)
@given(rows=sign_rows, threshold=st.sampled_from([-1.0, 0.0, 0.125, 0.5, 0.875, 1.0]), block=st.integers(1, 70))
def test_pairs_match_brute_force(rows, threshold, block) -> None:
    v = exact_vectors(np.array(rows, dtype=np.float64).reshape(len(rows), 16))
    found = pairs(v, threshold, block=block)
    assert found == brute_pairs(v, threshold)
    assert len({(i, j) for i, j, _ in found}) == len(found)
