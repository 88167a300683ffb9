"""The absorption search: one product per group of user partitions, deciding as a search per partition does.

Each user note is compared with every live note of its broader partitions, so at a million notes
this product is the one cost that grows with an agent's size squared. The user partitions that
share their broader partitions (a company's users) are searched in one product; a row's best
match does not depend on it.
"""

from __future__ import annotations

import numpy as np

from memctl.phases.consolidate.absorption import best_cover, best_of


def unit_rows(rng: np.random.Generator, n: int, dim: int = 64) -> np.ndarray:
    rows = rng.standard_normal((n, dim)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def test_the_best_match_over_several_partitions_is_the_one_a_search_of_all_their_rows_in_rank_order_finds() -> None:
    """Each broader partition's matrix is searched in place; the most similar row wins and, of
    equal ones (the same vector in two partitions), the lower rank, as over all rows at once."""
    rng = np.random.default_rng(3)
    every = unit_rows(rng, 900)
    every[600:650] = every[100:150]  # copies: equally similar, ranked after the originals
    every[10:20] = every[700:710]  # and copies ranked before them
    ranks = rng.permutation(len(every))  # the partitions interleave in rank order
    # each partition's rows in rank order, as `side` lists a partition's notes
    parts = [part[np.argsort(ranks[part])] for part in np.array_split(np.argsort(rng.random(len(every))), 3)]
    expiries = np.where(rng.random(len(every)) < 0.1, 1_000.0, np.inf)
    a = every[rng.integers(0, len(every), size=200)] + 0.01 * unit_rows(rng, 200)
    a /= np.linalg.norm(a, axis=1, keepdims=True)
    a_expiry = np.full(len(a), 2_000.0)
    in_rank_order = np.argsort(ranks)
    best, sims = best_cover(a, every[in_rank_order], 0.8, a_expiry, expiries[in_rank_order])
    got, got_sims = best_of(a, [(ranks[p], every[p], expiries[p]) for p in parts], 0.8, a_expiry)
    assert (best >= 0).sum() > 150
    assert np.array_equal(got, np.where(best >= 0, best, -1))
    np.testing.assert_allclose(got_sims[best >= 0], sims[best >= 0], rtol=1e-6)


def test_a_company_s_users_searched_in_one_product_find_what_each_finds_alone() -> None:
    rng = np.random.default_rng(9)
    b = unit_rows(rng, 3000)
    users = [unit_rows(rng, int(rng.integers(1, 60))) for _ in range(25)]
    for a in users:
        a[:3] = b[rng.integers(0, len(b), size=len(a[:3]))] + 0.02 * unit_rows(rng, len(a[:3]))
        a /= np.linalg.norm(a, axis=1, keepdims=True)
    never = np.full(len(b), np.inf)
    alone = [best_cover(a, b, 0.8, np.full(len(a), np.inf), never) for a in users]
    stacked = np.vstack(users)
    best, sims = best_cover(stacked, b, 0.8, np.full(len(stacked), np.inf), never)
    assert np.array_equal(best, np.concatenate([found for found, _ in alone]))
    assert (best >= 0).sum() >= 25
    np.testing.assert_allclose(sims, np.concatenate([s for _, s in alone]), rtol=1e-6)
